#include "src/train/evaluator.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <chrono>

#include "src/train/builder.h"
#include "src/train/checkpoint.h"

namespace fastnn::train {

EvalResult evaluate_model(const HParams& hp, const Built& b) {
  const auto t0 = std::chrono::steady_clock::now();
  EvalResult r;
  r.split = b.dataset.split;
  r.class_names = b.dataset.labels;
  r.class_correct.assign(b.num_classes, 0);
  r.class_total.assign(b.num_classes, 0);
  const bool was_training = b.model->is_training();
  b.model->eval();
  datasets::Pipeline pipeline(pipeline_options(hp, b, false));
  torch::NoGradGuard no_grad;
  double loss_sum = 0;
  const int64_t k = std::min<int64_t>(5, b.num_classes);
  auto correct = torch::zeros({b.num_classes}, torch::kInt64);
  auto total = torch::zeros({b.num_classes}, torch::kInt64);
  while (auto batch = pipeline.next()) {
    auto logits = b.model->forward(batch->images).logits;
    loss_sum += torch::nn::functional::cross_entropy(
                    logits, batch->labels,
                    torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
    auto topk = std::get<1>(logits.topk(k, 1));
    auto hits = topk.eq(batch->labels.unsqueeze(1));
    auto top1 = hits.select(1, 0);
    r.top1_correct += top1.sum().item<int64_t>();
    r.top5_correct += hits.any(1).sum().item<int64_t>();
    r.samples += batch->labels.size(0);
    total.index_add_(0, batch->labels, torch::ones_like(batch->labels));
    correct.index_add_(0, batch->labels, top1.to(torch::kInt64));
  }
  b.model->train(was_training);
  for (int64_t c = 0; c < b.num_classes; ++c) {
    r.class_correct[c] = correct[c].item<int64_t>();
    r.class_total[c] = total[c].item<int64_t>();
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

EvalResult evaluate(const HParams& hp, const std::string& checkpoint_path) {
  configure_threads(hp);
  const std::string path = resolve_checkpoint(checkpoint_path);
  Built b = build(hp, hp.eval_split_name);
  const TensorMap ckpt = load_tensors(path);
  RestoreOptions ro;
  const std::string suffix = "/ExponentialMovingAverage";
  for (const auto& [key, t] : ckpt) {
    if (key.size() > suffix.size() &&
        key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0) {
      ro.use_moving_averages = true;
    }
  }
  restore_model(*b.model, ckpt, path, ro);
  EvalResult r = evaluate_model(hp, b);
  r.checkpoint = path;
  r.moving_averages = ro.use_moving_averages;
  if (auto it = ckpt.find("global_step"); it != ckpt.end()) {
    r.global_step = it->second.item<int64_t>();
  }
  return r;
}

std::string eval_result_json(const EvalResult& r) {
  nlohmann::json j = {{"checkpoint", r.checkpoint},   {"split", r.split},
                      {"global_step", r.global_step}, {"samples", r.samples},
                      {"moving_averages", r.moving_averages},
                      {"top1_correct", r.top1_correct},
                      {"top5_correct", r.top5_correct},
                      {"accuracy", r.top1},           {"recall_5", r.top5},
                      {"loss", r.loss},               {"wall_secs", r.wall_secs},
                      {"class_correct", r.class_correct},
                      {"class_total", r.class_total}};
  return j.dump();
}

}  // namespace fastnn::train
