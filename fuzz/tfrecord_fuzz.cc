// TFRecord framing: any bytes as a file, under both corruption policies.
// Every record returned must fit in the input, and the reader must end.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fastnn/byte_source.h"
#include "fastnn/errors.h"
#include "fastnn/tfrecord.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  for (bool skip : {false, true}) {
    fastnn::io::TFRecordReaderOptions o;
    o.skip_corrupt = skip;
    o.max_skipped_share = 1;
    try {
      fastnn::io::TFRecordReader reader(fastnn::io::memory_source(bytes, "fuzz"), o);
      std::string record;
      size_t total = 0;
      while (reader.next(&record)) {
        total += record.size();
        if (record.size() > size || total > size) std::abort();
      }
    } catch (const fastnn::DataError&) {
    }
  }
  return 0;
}
