// data_format=NHWC (channels-last) computes what NCHW computes: same
// logits, same gradients, same checkpoint bytes.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "fastnn/hparams.h"
#include "models/model_factory.h"
#include "src/train/builder.h"

namespace fastnn::train {
namespace {

TEST(DataFormat, ChannelsLastMatchesNchwForwardAndBackward) {
  const std::pair<const char*, int64_t> nets[] = {
      {"resnet_v1_50", 64}, {"inception_v3", 107}, {"cifarnet", 32}};
  for (const auto& [name, size] : nets) {
    models::ModelOptions o;
    o.num_classes = 10;
    o.dropout_keep_prob = 1.0;
    o.image_size = size;
    torch::manual_seed(0);
    auto a = models::find_model(name).create(o);
    torch::manual_seed(0);
    auto b = models::find_model(name).create(o);
    // float64: the layouts' kernels sum in different orders, and through
    // ~50 train-mode BatchNorm layers float32 rounding alone reaches 1e-2.
    a->to(torch::kFloat64);
    b->to(torch::kFloat64);
    HParams hp;
    hp.data_format = "NHWC";
    apply_data_format(hp, *b);
    bool converted = false;
    for (const auto& p : b->parameters()) {
      if (p.dim() == 4) {
        converted = p.is_contiguous(at::MemoryFormat::ChannelsLast);
        EXPECT_TRUE(converted) << name;
        break;
      }
    }
    EXPECT_TRUE(converted) << name;
    auto x = torch::randn({4, 3, size, size}, torch::kFloat64);
    auto ya = a->forward(x).logits;
    auto yb = b->forward(to_data_format(hp, x)).logits;
    const double scale = ya.abs().max().item<double>();
    EXPECT_TRUE(torch::allclose(ya, yb, 1e-9, 1e-9 * scale))
        << name << " max diff " << (ya - yb).abs().max().item<double>() << " of max "
        << ya.abs().max().item<double>();
    ya.sum().backward();
    yb.sum().backward();
    auto pa = a->parameters(), pb = b->parameters();
    ASSERT_EQ(pa.size(), pb.size());
    for (size_t i = 0; i < pa.size(); ++i) {
      // The aux head gets no gradient from the logits alone.
      ASSERT_EQ(pa[i].grad().defined(), pb[i].grad().defined()) << name << " " << i;
      if (!pa[i].grad().defined()) continue;
      const auto ga = pa[i].grad(), gb = pb[i].grad().contiguous();
      const double gscale = ga.abs().max().item<double>();
      EXPECT_TRUE(torch::allclose(ga, gb, 1e-7, 1e-7 * gscale))
          << name << " parameter " << i << " max diff " << (ga - gb).abs().max().item<double>()
          << " of max " << gscale;
      // The values (what checkpoints store) are untouched by the layout.
      EXPECT_TRUE(torch::equal(pa[i], pb[i].contiguous())) << name << " " << i;
    }
  }
}

}  // namespace
}  // namespace fastnn::train
