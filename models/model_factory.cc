#include "models/model_factory.h"

#include <torch/torch.h>

#include <sstream>

#include "fastnn/errors.h"
#include "fastnn/hparams.h"
#include "models/lenet.h"
// zoo-A includes
// zoo-B includes
// zoo-C includes

namespace fastnn::models {
namespace {

template <typename Impl>
std::shared_ptr<ClassifierImpl> make(const ModelOptions& o) {
  return std::make_shared<Impl>(o);
}

const std::vector<ModelSpec>& table() {
  static const std::vector<ModelSpec> kModels = {
      {"lenet", 28, "lenet", make<LeNetImpl>},
      // zoo-A rows
      // zoo-B rows
      // zoo-C rows
  };
  return kModels;
}

}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& m : table()) names.push_back(m.name);
  return names;
}

const ModelSpec& find_model(const std::string& name) {
  for (const auto& m : table()) {
    if (m.name == name) return m;
  }
  throw ConfigError("model_name: '" + name +
                    "' is not an available model; available: " +
                    join_list(model_names()));
}

std::string describe_model(ClassifierImpl& model) {
  int64_t params = 0, tensors = 0;
  for (const auto& p : model.parameters()) {
    params += p.numel();
    ++tensors;
  }
  std::ostringstream os;
  os << model.scope() << ": " << tensors << " parameter tensors, " << params
     << " parameters (" << params * 4 / (1024.0 * 1024.0) << " MiB fp32)";
  return os.str();
}

}  // namespace fastnn::models
