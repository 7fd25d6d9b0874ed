#include "preprocessing/preprocessing_factory.h"

#include "fastnn/errors.h"
#include "fastnn/hparams.h"
#include "preprocessing/lenet_preprocessing.h"
#include "preprocessing/slim_preprocessing.h"

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

template <void (*Train)(const io::Image&, const OutputShape&, std::mt19937_64&, float*),
          void (*Eval)(const io::Image&, const OutputShape&, float*)>
PreprocessFn make_slim(const OutputShape& shape, bool is_training) {
  if (is_training) {
    return [shape](const io::Image& in, std::mt19937_64& rng, float* out) {
      Train(in, shape, rng, out);
    };
  }
  return [shape](const io::Image& in, std::mt19937_64&, float* out) {
    Eval(in, shape, out);
  };
}

const Row kTable[] = {
    {"inception", make_slim<inception_train, inception_eval>},
    {"vgg", make_slim<vgg_train, vgg_eval>},
    {"cifarnet", make_slim<cifarnet_train, cifarnet_eval>},
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
