// The checkpoint reader (src/train/checkpoint_format.h): any bytes as a
// checkpoint file. The input is tried as it is and with its last 4 bytes
// replaced by the right CRC, so the fuzzer gets past the checksum to the
// declarations a buggy writer or a forger controls. Only DataError may come
// out, and every tensor returned must lie inside the input with a size that
// matches its shape.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fastnn/errors.h"
#include "src/train/checkpoint_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fastnn::train;
  const std::string as_is(reinterpret_cast<const char*>(data), size);
  std::string fixed = as_is.substr(0, size >= 4 ? size - 4 : 0);
  append_checkpoint_crc(&fixed);
  const std::string* inputs[] = {&as_is, &fixed};
  for (const std::string* bytes : inputs) {
    try {
      for (const CheckpointEntry& e : parse_checkpoint(*bytes, "fuzz")) {
        const char* begin = bytes->data();
        if (e.data.data() < begin || e.data.data() + e.data.size() > begin + bytes->size())
          std::abort();
        uint64_t numel = 1;
        for (int64_t d : e.dims) numel *= static_cast<uint64_t>(d);
        if (numel * element_bytes(static_cast<uint8_t>(e.dtype)) != e.data.size()) std::abort();
      }
    } catch (const fastnn::DataError&) {
    }
  }
  return 0;
}
