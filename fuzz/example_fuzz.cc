// tf.train.Example parsing into the image record the pipeline reads.
#include <cstdint>
#include <string_view>

#include "fastnn/errors.h"
#include "fastnn/example.h"
#include "quiet_protobuf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fastnn::fuzz::quiet_protobuf_logs();
  try {
    fastnn::io::decode_image_example(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const fastnn::DataError&) {
  }
  return 0;
}
