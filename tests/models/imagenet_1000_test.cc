// Parameter counts at num_classes = 1000 for the networks whose family
// tests state their golden at 1001 classes (TF-slim's ImageNet checkpoints
// for these nets carry a background class). Each 1000-class golden is the
// family test's 1001-class golden — itself summed there from TF-slim's
// layer shapes — minus (fan_in + 1) for every classification head (one
// logits row of fan_in weights and one bias): the logits, and the
// auxiliary head's FC where the net has one.
#include <gtest/gtest.h>

#include "tests/models/net_checks.h"

namespace fastnn::models::testing {
namespace {

struct Row {
  const char* name;
  int64_t golden_1001;  // from the family test named in the comment
  int64_t heads_1001;   // sum over heads of (fan_in + 1)
};

// clang-format off
const Row kRows[] = {
    // mobilenet_test.cc: logits 1x1 conv from 1024 / 768 / 512 / 256.
    {"mobilenet_v1",      4233001, 1024 + 1},
    {"mobilenet_v1_075",  2586329,  768 + 1},
    {"mobilenet_v1_050",  1332105,  512 + 1},
    {"mobilenet_v1_025",   470329,  256 + 1},
    // mobilenet_test.cc: logits from 1280 / 1792 / 1280 (0.35 keeps 1280).
    {"mobilenet_v2",      3506153, 1280 + 1},
    {"mobilenet_v2_140",  6110569, 1792 + 1},
    {"mobilenet_v2_035",  1678409, 1280 + 1},
    // resnet_test.cc: logits 1x1 conv from 2048.
    {"resnet_v2_50",     25570409, 2048 + 1},
    {"resnet_v2_101",    44579945, 2048 + 1},
    {"resnet_v2_152",    60238953, 2048 + 1},
    {"resnet_v2_200",    64728169, 2048 + 1},
    // inception_v4_test.cc / inception_resnet_v2_test.cc: AuxLogits FC
    // from 768, Logits FC from 1536.
    {"inception_v4",        46009106, (768 + 1) + (1536 + 1)},
    {"inception_resnet_v2", 59182258, (768 + 1) + (1536 + 1)},
    // nasnet_test.cc: kMobileParams + kMobileAuxParams; final FC from 1056,
    // aux FC from 768.
    {"nasnet_mobile",  5291035 + 2412009, (1056 + 1) + (768 + 1)},
    // pnasnet_test.cc: the training-graph count; final FC from 1080, aux
    // FC from 768.
    {"pnasnet_mobile", 7479113, (1080 + 1) + (768 + 1)},
};

const Row kLargeRows[] = {
    // nasnet_test.cc: kLargeParams + kLargeAuxParams; final FC from 4032.
    {"nasnet_large",  88757183 + 4568553, (4032 + 1) + (768 + 1)},
    // pnasnet_test.cc: final FC from 4320.
    {"pnasnet_large", 90648974, (4320 + 1) + (768 + 1)},
};
// clang-format on

void expect_1000_classes(const Row& r) {
  auto m = create(r.name, 1000);
  EXPECT_EQ(trainable_parameters(*m), r.golden_1001 - r.heads_1001) << r.name;
}

TEST(ImageNet1000Classes, ParameterCounts) {
  for (const auto& r : kRows) expect_1000_classes(r);
}

TEST(ImageNet1000ClassesSlow, ParameterCountsOfTheLargeNets) {
  for (const auto& r : kLargeRows) expect_1000_classes(r);
}

// The 1000-class forms of the anchors the issue quotes.
TEST(ImageNet1000Classes, PublishedAnchors) {
  // nasnet_mobile without its aux head: ~5.3M (Keras' NASNetMobile has the
  // same trainable shapes: 5,289,978).
  auto nas = create("nasnet_mobile", 1000);
  int64_t without_aux = 0;
  for (const auto& v : model_variables(*nas)) {
    if (v.trainable && v.name.find("aux_") == std::string::npos) {
      without_aux += v.tensor.numel();
    }
  }
  EXPECT_EQ(without_aux, 5289978);
  // mobilenet_v2 1.0: 3,504,872, the published trainable count.
  EXPECT_EQ(trainable_parameters(*create("mobilenet_v2", 1000)), 3504872);
}

}  // namespace
}  // namespace fastnn::models::testing
