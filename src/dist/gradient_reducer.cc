#include "src/dist/gradient_reducer.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <functional>

#include "fastnn/errors.h"

namespace fastnn::dist {
namespace {

// Runs after a leaf's AccumulateGrad: the parameter's .grad is final.
class AfterAccumulate : public torch::autograd::FunctionPostHook {
 public:
  explicit AfterAccumulate(std::function<void()> fn) : fn_(std::move(fn)) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    fn_();
    return outputs;
  }

 private:
  std::function<void()> fn_;
};

}  // namespace

GradientReducer::GradientReducer(Collective& comm, std::vector<torch::Tensor> params,
                                 int64_t bucket_cap_bytes)
    : comm_(comm), params_(std::move(params)), inv_world_(1.0 / comm.world_size()) {
  where_.resize(params_.size());
  filled_.assign(params_.size(), false);
  int64_t bytes = 0;
  for (size_t k = params_.size(); k-- > 0;) {
    const auto& param = params_[k];
    TORCH_CHECK(param.requires_grad(), "GradientReducer: parameter ", k, " does not require grad");
    const int64_t size = param.numel() * static_cast<int64_t>(param.element_size());
    const bool fits = !buckets_.empty() && bytes + size <= bucket_cap_bytes &&
                      buckets_.back().flat.scalar_type() == param.scalar_type();
    if (!fits) {
      buckets_.emplace_back();
      buckets_.back().flat = torch::empty({0}, param.options().requires_grad(false));
      bytes = 0;
    }
    Bucket& bucket = buckets_.back();
    where_[k] = {buckets_.size() - 1, bucket.params.size()};
    bucket.offsets.push_back(bucket.flat.numel());
    bucket.params.push_back(k);
    bucket.flat = torch::empty({bucket.flat.numel() + param.numel()}, bucket.flat.options());
    bytes += size;
  }
  torch::NoGradGuard no_grad;
  views_.resize(params_.size());
  for (size_t k = 0; k < params_.size(); ++k) {
    const auto [bi, pos] = where_[k];
    auto& param = params_[k];
    // The parameter's own strides (channels-last convolution weights
    // included, as DDP's bucket views): .grad keeps its parameter's layout
    // and backward's result lands in the bucket without a transpose.
    auto slice = buckets_[bi].flat.narrow(0, buckets_[bi].offsets[pos], param.numel());
    views_[k] = param.is_non_overlapping_and_dense()
                    ? slice.as_strided(param.sizes(), param.strides())
                    : slice.view(param.sizes());
    if (param.grad().defined()) {
      views_[k].copy_(param.grad());
    } else {
      views_[k].zero_();
    }
    param.mutable_grad() = views_[k];
    accumulators_.push_back(torch::autograd::impl::grad_accumulator(param));
    hook_keys_.push_back(accumulators_.back()->add_post_hook(
        std::make_unique<AfterAccumulate>([this, k] { on_gradient(k); })));
  }
}

GradientReducer::~GradientReducer() {
  for (size_t k = 0; k < accumulators_.size(); ++k) {
    accumulators_[k]->del_post_hook(hook_keys_[k]);
  }
}

std::vector<std::vector<size_t>> GradientReducer::buckets() const {
  std::vector<std::vector<size_t>> out;
  for (const auto& b : buckets_) out.push_back(b.params);
  return out;
}

void GradientReducer::prepare() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& b : buckets_) {
    b.pending = b.params.size();
    b.work.reset();
  }
  filled_.assign(params_.size(), false);
  next_launch_ = 0;
  launched_early_ = 0;
  armed_ = true;
}

// One pass over the gradient: its share of the average, g / W, lands in
// the bucket, and .grad becomes the bucket's view. A .grad set to none
// before backward was stolen by autograd from backward's own result (no
// zeroing, no accumulation); a .grad that already was the view (zeroed in
// place, or kept to accumulate) is scaled where it is.
void GradientReducer::take_share(size_t k) {
  torch::NoGradGuard no_grad;
  auto& p = params_[k];
  if (!p.grad().defined()) {
    views_[k].zero_();
  } else if (p.grad().is_same(views_[k])) {
    views_[k].mul_(inv_world_);
    return;
  } else {
    at::mul_out(views_[k], p.grad(), inv_world_);
  }
  p.mutable_grad() = views_[k];
}

void GradientReducer::on_gradient(size_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!armed_ || filled_[index]) return;
  Bucket& b = buckets_[where_[index].first];
  take_share(index);
  filled_[index] = true;
  --b.pending;
  if (b.pending == 0) {
    const size_t before = next_launch_;
    launch_ready_locked();
    launched_early_ += static_cast<int>(next_launch_ - before);
  }
}

// Launches complete buckets strictly in index order: c10d matches
// collectives by issue order, which must be the same on every rank.
void GradientReducer::launch_ready_locked() {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
    Bucket& b = buckets_[next_launch_];
    b.work = comm_.all_reduce_async(b.flat);
    ++next_launch_;
  }
}

void GradientReducer::finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = false;
    // A parameter backward did not reach contributes zero (or what its
    // .grad held before backward).
    for (size_t k = 0; k < params_.size(); ++k) {
      if (filled_[k]) continue;
      take_share(k);
      --buckets_[where_[k].first].pending;
    }
    launch_ready_locked();
  }
  for (size_t bi = 0; bi < buckets_.size(); ++bi) {
    Bucket& b = buckets_[bi];
    b.work->wait("gradient all-reduce (bucket " + std::to_string(bi) + " of " +
                 std::to_string(buckets_.size()) + ")");
    b.work.reset();
  }
}

}  // namespace fastnn::dist
