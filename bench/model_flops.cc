// Two figures: a network's arithmetic per image and
// the machine's sgemm rate, so that a training throughput can be stated as
// a fraction of what the cores can do.
//
//   model_flops net NAME IMAGE_SIZE CHANNELS CLASSES
//       traces NAME's eval forward pass at batch 1 and counts the
//       multiply-adds of its convolutions and matrix products (the other
//       ops' arithmetic is left out: it is memory-bound and small), then
//       prints the forward GFLOP per image (2 per multiply-add) and the
//       training estimate, 3x forward (the backward pass computes the
//       input and the weight gradients, each as much as the forward).
//   model_flops sgemm N THREADS SECONDS
//       LibTorch's fp32 N x N x N matrix product (this build's BLAS) on
//       THREADS threads (OpenBLAS told so too), repeated for SECONDS: the
//       best GFLOP/s of the runs.
//   model_flops gemm fp32|bf16 N THREADS SECONDS
//       the same in either type: bf16 is the limit of a bfloat16-autocast
//       step (oneDNN's product, fp32 accumulation).
#include <dlfcn.h>
#include <torch/csrc/jit/frontend/tracer.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/model_factory.h"

namespace {

std::vector<int64_t> sizes_of(const torch::jit::Value* v) {
  const auto t = v->type()->cast<c10::TensorType>();
  const auto s = t ? t->sizes().concrete_sizes() : c10::nullopt;
  return s ? *s : std::vector<int64_t>{};
}

int64_t product(const std::vector<int64_t>& s, size_t from = 0) {
  int64_t p = 1;
  for (size_t i = from; i < s.size(); ++i) p *= s[i];
  return p;
}

int net(const std::string& name, int64_t size, int64_t channels, int64_t classes) {
  fastnn::models::ModelOptions o;
  o.num_classes = classes;
  o.in_channels = channels;
  o.image_size = size;
  auto model = fastnn::models::find_model(name).create(o);
  model->eval();
  for (auto& p : model->parameters()) p.requires_grad_(false);
  torch::NoGradGuard no_grad;
  auto traced = torch::jit::tracer::trace(
      {torch::zeros({1, channels, size, size})},
      [&model](torch::jit::Stack in) {
        return torch::jit::Stack{model->forward(in[0].toTensor()).logits};
      },
      [](const torch::autograd::Variable&) { return std::string(); },
      /*strict=*/false);
  auto graph = traced.first->graph;
  torch::jit::Inline(*graph);
  int64_t conv_macs = 0, matmul_macs = 0, unknown = 0;
  for (const torch::jit::Node* n : graph->nodes()) {
    const std::string kind = n->kind().toQualString();
    if (kind == "aten::_convolution" || kind == "aten::conv2d") {
      // output [N, Cout, Ho, Wo] x weight [Cout, Cin/groups, kh, kw] per output.
      const auto out = sizes_of(n->output(0));
      const auto w = sizes_of(n->input(1));
      if (out.size() != 4 || w.size() != 4) {
        ++unknown;
        continue;
      }
      conv_macs += product(out) * product(w, 1);
    } else if (kind == "aten::linear" || kind == "aten::matmul" || kind == "aten::mm" ||
               kind == "aten::addmm") {
      // out [.., M] of an inner dimension K: the first operand's last size.
      const auto out = sizes_of(n->output(0));
      const auto a = sizes_of(n->input(kind == "aten::addmm" ? 1 : 0));
      if (out.empty() || a.empty()) {
        ++unknown;
        continue;
      }
      matmul_macs += product(out) * a.back();
    }
  }
  const double forward = 2.0 * static_cast<double>(conv_macs + matmul_macs) / 1e9;
  std::printf(
      "model_flops net=%s image_size=%lld channels=%lld classes=%lld conv_gmac=%.4f "
      "matmul_gmac=%.4f forward_gflop_per_image=%.4f train_gflop_per_image=%.4f "
      "ops_without_shapes=%lld\n",
      name.c_str(), static_cast<long long>(size), static_cast<long long>(channels),
      static_cast<long long>(classes), conv_macs / 1e9, matmul_macs / 1e9, forward, 3 * forward,
      static_cast<long long>(unknown));
  return unknown == 0 ? 0 : 1;
}

// The best rate of n x n products in `dtype` (fp32: the BLAS's sgemm;
// bf16: oneDNN's bfloat16 product, with fp32 accumulation, where the CPU has
// bfloat16 instructions).
int gemm(const std::string& dtype, int64_t n, int threads, double seconds) {
  if (dtype != "fp32" && dtype != "bf16") {
    throw std::invalid_argument("dtype must be fp32 or bf16, got '" + dtype + "'");
  }
  torch::set_num_threads(threads);
  // OpenBLAS (Debian's pthread build) threads each call by itself and does
  // not follow LibTorch's count: tell it (the trainer tells it 1, builder.cc).
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    set(threads);
  }
  torch::manual_seed(0);
  const auto type = dtype == "bf16" ? torch::kBFloat16 : torch::kFloat32;
  const auto a = torch::randn({n, n}).to(type), b = torch::randn({n, n}).to(type);
  auto c = torch::mm(a, b);  // warm-up: threads, packing buffers
  double best = 0;
  int runs = 0;
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
         seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    torch::mm_out(c, a, b);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 2.0 * static_cast<double>(n) * n * n / dt / 1e9);
    ++runs;
  }
  std::printf("model_flops gemm dtype=%s n=%lld threads=%d runs=%d best_gflops=%.1f\n",
              dtype.c_str(), static_cast<long long>(n), threads, runs, best);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> a(argv + 1, argv + argc);
  try {
    if (a.size() == 5 && a[0] == "net") {
      return net(a[1], std::stoll(a[2]), std::stoll(a[3]), std::stoll(a[4]));
    }
    if (a.size() == 4 && a[0] == "sgemm") {
      return gemm("fp32", std::stoll(a[1]), std::stoi(a[2]), std::stod(a[3]));
    }
    if (a.size() == 5 && a[0] == "gemm") {
      return gemm(a[1], std::stoll(a[2]), std::stoi(a[3]), std::stod(a[4]));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "model_flops: %s\n", e.what());
    return 3;
  }
  std::fprintf(stderr,
               "usage: model_flops net NAME IMAGE_SIZE CHANNELS CLASSES\n"
               "       model_flops sgemm N THREADS SECONDS   (= gemm fp32 ...)\n"
               "       model_flops gemm fp32|bf16 N THREADS SECONDS\n");
  return 2;
}
