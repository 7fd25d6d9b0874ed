#include "preprocessing/preprocessing_factory.h"

#include "fastnn/errors.h"
#include "fastnn/hparams.h"
#include "preprocessing/lenet_preprocessing.h"

namespace fastnn::preprocessing {
namespace {

struct Row {
  const char* name;
  PreprocessFn (*make)(const OutputShape& shape, bool is_training);
};

PreprocessFn make_lenet(const OutputShape& shape, bool) {
  return [shape](const io::Image& in, std::mt19937_64&, float* out) {
    lenet_preprocess(in, shape, out);
  };
}

const Row kTable[] = {
    {"lenet", make_lenet},
};

}  // namespace

std::vector<std::string> preprocessing_names() {
  std::vector<std::string> out;
  for (const auto& r : kTable) out.push_back(r.name);
  return out;
}

PreprocessFn get_preprocessing(const std::string& name,
                               const OutputShape& shape,
                               bool is_training) {
  for (const auto& r : kTable) {
    if (name == r.name) return r.make(shape, is_training);
  }
  throw ConfigError("preprocessing_name: '" + name +
                    "' is not an available preprocessing; available: " +
                    join_list(preprocessing_names()));
}

}  // namespace fastnn::preprocessing
