#include "fastnn/example.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <limits>

#include "fastnn/errors.h"

// CMake generates the header under <build>/proto/fastnn/.
#include "fastnn/example.pb.h"

namespace fastnn::io {
namespace {

using tfproto::Example;
using tfproto::Feature;
using FeatureMap = google::protobuf::Map<std::string, Feature>;

const char* kind_name(Feature::KindCase kind) {
  switch (kind) {
    case Feature::kBytesList:
      return "bytes_list";
    case Feature::kFloatList:
      return "float_list";
    case Feature::kInt64List:
      return "int64_list";
    case Feature::KIND_NOT_SET:
      break;
  }
  return "empty (no value list)";
}

// Returns the feature under key checked to hold exactly one value of the
// wanted kind, or nullptr when it is absent and optional.
Feature* find_single(FeatureMap& features, const std::string& key, Feature::KindCase want,
                     bool required) {
  auto it = features.find(key);
  if (it == features.end()) {
    if (required) {
      throw DataError("missing feature '" + key + "'");
    }
    return nullptr;
  }
  Feature& f = it->second;
  if (f.kind_case() != want) {
    throw DataError("feature '" + key + "' is " + kind_name(f.kind_case()) + ", expected " +
                    kind_name(want));
  }
  int n = want == Feature::kBytesList ? f.bytes_list().value_size() : f.int64_list().value_size();
  if (n != 1) {
    throw DataError("feature '" + key + "' has " + std::to_string(n) + " values, expected 1");
  }
  return &f;
}

int64_t get_int64(FeatureMap& features, const std::string& key, bool required) {
  Feature* f = find_single(features, key, Feature::kInt64List, required);
  return f ? f->int64_list().value(0) : 0;
}

void put_bytes(FeatureMap& features, const std::string& key, const std::string& value) {
  features[key].mutable_bytes_list()->add_value(value);
}

void put_int64(FeatureMap& features, const std::string& key, int64_t value) {
  features[key].mutable_int64_list()->add_value(value);
}

}  // namespace

std::string encode_image_example(const ImageRecord& r) {
  const ExampleKeys keys;
  Example example;
  FeatureMap& features = *example.mutable_features()->mutable_feature();
  put_bytes(features, keys.encoded, r.encoded);
  put_bytes(features, keys.format, r.format);
  put_int64(features, keys.label, r.label);
  put_int64(features, keys.height, r.height);
  put_int64(features, keys.width, r.width);

  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    example.SerializeToCodedStream(&coded);
  }
  return out;
}

ImageRecord decode_image_example(std::string_view bytes, const ExampleKeys& keys) {
  Example example;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !example.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    throw DataError("not a tf.train.Example (protobuf parse failed)");
  }
  FeatureMap& features = *example.mutable_features()->mutable_feature();
  ImageRecord r;
  Feature* encoded = find_single(features, keys.encoded, Feature::kBytesList, true);
  r.encoded = std::move(*encoded->mutable_bytes_list()->mutable_value(0));
  if (Feature* format = find_single(features, keys.format, Feature::kBytesList, false)) {
    r.format = std::move(*format->mutable_bytes_list()->mutable_value(0));
  }
  r.label = get_int64(features, keys.label, true);
  r.height = get_int64(features, keys.height, false);
  r.width = get_int64(features, keys.width, false);
  return r;
}

}  // namespace fastnn::io
