// onnx_oracle_reference: the C++ side of the ONNX Runtime oracle
// (scripts/onnx_oracle.sh). For one network it writes, into OUT_DIR:
//   model.ckpt-0   this project's checkpoint of the network initialized with
//                  --seed, every BatchNorm gamma, beta and bias randomized,
//                  and the BatchNorm statistics those of the input batch
//                  (one training-mode pass), then perturbed: so no
//                  BatchNorm is the identity, yet the logits stay of order
//                  1 instead of growing with depth (1e12 for resnet_v1_152
//                  with statistics drawn at random);
//   input.f32      --batch images [N, C, S, S], uniform in [-1, 1), raw
//                  little-endian float32;
//   logits.f32     this port's eval-mode logits of them [N, classes].
//
//   onnx_oracle_reference --model_name=NAME --num_classes=N --out_dir=DIR
//                         [--batch=2] [--seed=1]
#include <torch/torch.h>

#include <filesystem>

#include "fastnn/errors.h"
#include "models/layers.h"
#include "models/model_factory.h"
#include "src/config/value_parse.h"
#include "src/io/atomic_file.h"
#include "src/tools/tool_main.h"
#include "src/train/checkpoint.h"
#include "src/train/train_state.h"

namespace {
using namespace fastnn;

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

void write_floats(const std::string& path, const torch::Tensor& t) {
  const torch::Tensor c = t.contiguous();
  io::AtomicFileWriter out(path);
  out.append({reinterpret_cast<const char*>(c.data_ptr<float>()), c.nbytes()});
  out.commit();
}

// Sets every BatchNorm's moving statistics to those of `images` in one
// training-mode pass, perturbed (mean +- 0.1 sd, variance x [0.5, 1.5)).
// A training step moves them by 1 - decay from where they were (the decay
// is the layer's own), so two passes from 0 and from 1 give both the
// momentum and the batch's statistics.
void calibrate_batch_norms(models::ClassifierImpl& model, const torch::Tensor& images) {
  std::vector<std::pair<torch::Tensor, torch::Tensor>> stats;
  for (const auto& m : model.modules(/*include_self=*/false)) {
    if (dynamic_cast<models::TfBatchNormImpl*>(m.get()) == nullptr) continue;
    const auto buffers = m->named_buffers(/*recurse=*/false);
    stats.emplace_back(buffers["moving_mean"], buffers["moving_variance"]);
  }
  auto pass = [&](double from) {
    for (auto& [mean, var] : stats) {
      mean.fill_(from);
      var.fill_(from);
    }
    model.train();
    torch::manual_seed(7);  // the same drop-path draws (NASNet) both times
    model.forward(images);
    std::vector<torch::Tensor> after;
    for (auto& [mean, var] : stats) {
      after.push_back(mean.clone());
      after.push_back(var.clone());
    }
    return after;
  };
  const auto from_one = pass(1.0);
  const auto from_zero = pass(0.0);
  for (size_t i = 0; i < stats.size(); ++i) {
    const torch::Tensor momentum = 1.0 - (from_one[2 * i] - from_zero[2 * i]);
    const torch::Tensor mean = from_zero[2 * i] / momentum;
    const torch::Tensor var = (from_zero[2 * i + 1] / momentum).clamp_min(0.0);
    stats[i].first.copy_(mean + 0.1 * var.sqrt() * torch::randn_like(mean));
    stats[i].second.copy_(var * (torch::rand_like(var) + 0.5));
  }
  model.eval();
}

int64_t int_extra(const LoadResult& args, const std::string& key, int64_t fallback) {
  auto it = args.extras.find(key);
  if (it == args.extras.end()) return fallback;
  int64_t v = 0;
  if (config::parse_int(it->second, &v) != config::NumberStatus::kOk || v < 1) {
    throw ConfigError(key + ": '" + it->second + "' is not an integer >= 1");
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  return train::tool_main(
      argc, argv, "onnx_oracle_reference",
      "--model_name=NAME --num_classes=N --out_dir=DIR [--batch=2] [--seed=1]",
      [](LoadResult& args) {
        const HParams& hp = args.hp;
        if (!hp.num_classes || !args.extras.count("out_dir")) {
          throw ConfigError("--num_classes and --out_dir are required");
        }
        const std::string dir = args.extras.at("out_dir");
        std::filesystem::create_directories(dir);
        torch::manual_seed(int_extra(args, "seed", 1));
        const models::ModelSpec& spec = models::find_model(hp.model_name);
        models::ModelOptions o;
        o.num_classes = *hp.num_classes;
        o.image_size = spec.default_image_size;
        o.dropout_keep_prob = 1.0;
        auto model = spec.create(o);
        torch::NoGradGuard no_grad;
        for (auto& v : models::model_variables(*model)) {
          const auto n = v.tensor.numel();
          if (ends_with(v.name, "/beta") || ends_with(v.name, "/biases")) {
            v.tensor.copy_(0.1 * torch::randn({n}).view_as(v.tensor));
          } else if (ends_with(v.name, "/gamma")) {
            v.tensor.copy_(torch::rand({n}).view_as(v.tensor) + 0.5);
          }
        }
        const int64_t batch = int_extra(args, "batch", 2);
        const auto images = torch::rand({batch, 3, o.image_size, o.image_size}) * 2 - 1;
        calibrate_batch_norms(*model, images);
        train::TensorMap ckpt;
        for (const auto& v : models::model_variables(*model)) {
          ckpt[train::model_key(v.name)] = v.tensor.clone();
        }
        train::save_tensors(dir + "/model.ckpt-0", ckpt);
        model->eval();
        write_floats(dir + "/input.f32", images);
        write_floats(dir + "/logits.f32", model->forward(images).logits.reshape({batch, -1}));
        return 0;
      },
      {"out_dir", "batch", "seed"});
}
