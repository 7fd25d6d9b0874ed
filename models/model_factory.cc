#include "models/model_factory.h"

#include <torch/torch.h>

#include <sstream>

#include "fastnn/errors.h"
#include "models/lenet.h"
#include "src/config/value_parse.h"
// Classic CNNs
#include "models/cifarnet.h"
#include "models/conv_fc_net.h"
#include "models/resnet.h"
#include "models/vgg.h"
// Inception v1-v3 and MobileNet v1/v2
#include "models/inception_v1.h"
#include "models/inception_v2.h"
#include "models/inception_v3.h"
#include "models/mobilenet_v1.h"
#include "models/mobilenet_v2.h"
// NASNet and PNASNet
#include "models/nasnet.h"
#include "models/pnasnet.h"
// Inception v4 and Inception-ResNet v2
#include "models/inception_resnet_v2.h"
#include "models/inception_v4.h"

namespace fastnn::models {
namespace {

template <typename Impl>
std::shared_ptr<ClassifierImpl> make(const ModelOptions& o) {
  return std::make_shared<Impl>(o);
}

const std::vector<ModelSpec>& table() {
  static const std::vector<ModelSpec> kModels = {
      {"lenet", 28, "lenet", make<LeNetImpl>, 0.5, /*fixed_image_size=*/true},
      // Classic CNNs
      {"alexnet_v2", 224, "inception", make<AlexNetV2Impl>},
      {"cifarnet", 32, "cifarnet", make<CifarNetImpl>},
      {"overfeat", 231, "inception", make<OverFeatImpl>},
      {"vgg_a", 224, "vgg", make_vgg<11>},
      {"vgg_16", 224, "vgg", make_vgg<16>},
      {"vgg_19", 224, "vgg", make_vgg<19>},
      {"resnet_v1_50", 224, "vgg", make_resnet<1, 50>},
      {"resnet_v1_101", 224, "vgg", make_resnet<1, 101>},
      {"resnet_v1_152", 224, "vgg", make_resnet<1, 152>},
      {"resnet_v1_200", 224, "vgg", make_resnet<1, 200>},
      {"resnet_v2_50", 224, "vgg", make_resnet<2, 50>},
      {"resnet_v2_101", 224, "vgg", make_resnet<2, 101>},
      {"resnet_v2_152", 224, "vgg", make_resnet<2, 152>},
      {"resnet_v2_200", 224, "vgg", make_resnet<2, 200>},
      // Inception v1-v3 and MobileNet v1/v2
      {"inception_v1", 224, "inception", make<InceptionV1Impl>, 0.8},
      {"inception_v2", 224, "inception", make<InceptionV2Impl>, 0.8},
      {"inception_v3", 299, "inception", make<InceptionV3Impl>, 0.8},
      {"mobilenet_v1", 224, "inception",
       [](const ModelOptions& options) { return mobilenet_v1(options, 1.0); }, 0.999},
      {"mobilenet_v1_075", 224, "inception",
       [](const ModelOptions& options) { return mobilenet_v1(options, 0.75); }, 0.999},
      {"mobilenet_v1_050", 224, "inception",
       [](const ModelOptions& options) { return mobilenet_v1(options, 0.5); }, 0.999},
      {"mobilenet_v1_025", 224, "inception",
       [](const ModelOptions& options) { return mobilenet_v1(options, 0.25); }, 0.999},
      {"mobilenet_v2", 224, "inception",
       [](const ModelOptions& options) { return mobilenet_v2(options, 1.0); }, 0.8},
      {"mobilenet_v2_140", 224, "inception",
       [](const ModelOptions& options) { return mobilenet_v2(options, 1.4); }, 0.8},
      {"mobilenet_v2_035", 224, "inception",
       [](const ModelOptions& options) { return mobilenet_v2(options, 0.35, true); }, 0.8},
      // NASNet and PNASNet
      {"nasnet_cifar", 32, "cifarnet",
       [](const ModelOptions& options) { return nasnet(options, "nasnet_cifar"); }, 1.0},
      {"nasnet_mobile", 224, "inception",
       [](const ModelOptions& options) { return nasnet(options, "nasnet_mobile"); }, 0.5},
      {"nasnet_large", 331, "inception",
       [](const ModelOptions& options) { return nasnet(options, "nasnet_large"); }, 0.5},
      {"pnasnet_large", 331, "inception", make_pnasnet_large, 0.5},
      {"pnasnet_mobile", 224, "inception", make_pnasnet_mobile, 0.5},
      // Inception v4 and Inception-ResNet v2
      {"inception_v4", 299, "inception", make<InceptionV4Impl>, 0.8},
      {"inception_resnet_v2", 299, "inception", make<InceptionResnetV2Impl>, 0.8},
  };
  return kModels;
}

}  // namespace

std::vector<std::string> model_names() { return names_of(table()); }

const ModelSpec& find_model(const std::string& name) {
  for (const auto& m : table()) {
    if (m.name == name) return m;
  }
  throw ConfigError("model_name: '" + name +
                    "' is not an available model; available: " + join_list(model_names()));
}

std::string model_statistics_table(ClassifierImpl& model) {
  std::ostringstream os;
  os << "---------\nVariables: name (type shape) [size]\n---------\n";
  int64_t total = 0, bytes = 0;
  for (const auto& v : model_variables(model)) {
    // TF's layouts: conv [kh, kw, in, out], fc [in, out].
    std::vector<int64_t> shape = v.tensor.sizes().vec();
    if (shape.size() == 4) {
      shape = {shape[2], shape[3], shape[1], shape[0]};
    } else if (shape.size() == 2) {
      shape = {shape[1], shape[0]};
    }
    std::string dims;
    for (int64_t d : shape) dims += (dims.empty() ? "" : "x") + std::to_string(d);
    const int64_t n = v.tensor.numel();
    const int64_t b = n * static_cast<int64_t>(v.tensor.element_size());
    os << v.name << ":0 (float32_ref " << dims << ") [" << n << ", bytes: " << b << "]"
       << (v.trainable ? "" : " (not trainable)") << "\n";
    total += n;
    bytes += b;
  }
  os << "Total size of variables: " << total << "\nTotal bytes of variables: " << bytes << "\n";
  return os.str();
}

std::string describe_model(ClassifierImpl& model) {
  int64_t params = 0, tensors = 0;
  for (const auto& p : model.parameters()) {
    params += p.numel();
    ++tensors;
  }
  std::ostringstream os;
  os << (model.scope().empty() ? "(no outer scope)" : model.scope()) << ": " << tensors
     << " parameter tensors, " << params << " parameters (" << params * 4 / (1024.0 * 1024.0)
     << " MiB fp32)";
  return os.str();
}

}  // namespace fastnn::models
