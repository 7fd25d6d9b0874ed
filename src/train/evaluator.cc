#include "src/train/evaluator.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <chrono>

#include "src/train/builder.h"
#include "src/train/checkpoint.h"

namespace fastnn::train {

EvalResult evaluate(const HParams& hp, const std::string& checkpoint_path) {
  const auto t0 = std::chrono::steady_clock::now();
  configure_threads(hp);
  EvalResult r;
  r.split = hp.eval_split_name;
  r.checkpoint = resolve_checkpoint(checkpoint_path);
  Built b = build(hp, hp.eval_split_name);
  const TensorMap ckpt = load_tensors(r.checkpoint);
  RestoreOptions ro;
  for (const auto& [key, t] : ckpt) {
    if (key.size() > 25 && key.compare(key.size() - 25, 25, "/ExponentialMovingAverage") == 0) {
      ro.use_moving_averages = true;
    }
  }
  r.moving_averages = ro.use_moving_averages;
  restore_model(*b.model, ckpt, r.checkpoint, ro);
  if (auto it = ckpt.find("global_step"); it != ckpt.end()) {
    r.global_step = it->second.item<int64_t>();
  }
  b.model->eval();
  datasets::Pipeline pipeline(pipeline_options(hp, b, false));
  torch::NoGradGuard no_grad;
  double loss_sum = 0;
  const int64_t k = std::min<int64_t>(5, b.num_classes);
  while (auto batch = pipeline.next()) {
    auto logits = b.model->forward(batch->images).logits;
    loss_sum += torch::nn::functional::cross_entropy(
                    logits, batch->labels,
                    torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
    auto topk = std::get<1>(logits.topk(k, 1));
    auto hits = topk.eq(batch->labels.unsqueeze(1));
    r.top1_correct += hits.select(1, 0).sum().item<int64_t>();
    r.top5_correct += hits.any(1).sum().item<int64_t>();
    r.samples += batch->labels.size(0);
  }
  if (r.samples > 0) {
    r.top1 = static_cast<double>(r.top1_correct) / r.samples;
    r.top5 = static_cast<double>(r.top5_correct) / r.samples;
    r.loss = loss_sum / r.samples;
  }
  r.wall_secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::string eval_result_json(const EvalResult& r) {
  nlohmann::json j = {{"checkpoint", r.checkpoint},   {"split", r.split},
                      {"global_step", r.global_step}, {"samples", r.samples},
                      {"moving_averages", r.moving_averages},
                      {"top1_correct", r.top1_correct},
                      {"top5_correct", r.top5_correct},
                      {"accuracy", r.top1},           {"recall_5", r.top5},
                      {"loss", r.loss},               {"wall_secs", r.wall_secs}};
  return j.dump();
}

}  // namespace fastnn::train
