// The TensorFlow checkpoint reader (src/io/tf_checkpoint.h): any bytes as a
// V2 .index or a V1 file (LevelDB's table format, then the protos). Every
// listed tensor is read: a V1 file's values come from the table itself; a
// V2 index's data file does not exist, so its reads must fail cleanly. Only
// DataError may come out, and what is returned must agree with the index.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fastnn/errors.h"
#include "src/io/tf_checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fastnn::io;
  try {
    const TfCheckpoint c = TfCheckpoint::parse_table(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz-nonexistent.index");
    for (const TfTensorInfo& info : c.tensors()) {
      try {
        const TfTensor t = c.read(info.name);
        const auto n = static_cast<uint64_t>(info.num_elements);
        if (t.dtype == kTfString ? t.strings.size() != n
                                 : t.bytes.size() != n * tf_dtype_bytes(t.dtype)) {
          std::abort();
        }
      } catch (const fastnn::DataError&) {
      }
    }
  } catch (const fastnn::DataError&) {
  }
  return 0;
}
