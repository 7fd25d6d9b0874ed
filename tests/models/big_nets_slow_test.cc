// The expensive checks of the big TF-slim networks (label "slow"): one
// training step and a save/load round trip for overfeat, the VGGs and the
// ResNets deeper than 50 layers. Their shapes, parameter counts and names
// are checked in the unit tests.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/models/net_checks.h"

namespace fastnn::models {
namespace {

TEST(OverFeatSlow, OneTrainingStepLowersTheLoss) {
  testing::expect_sgd_step_lowers_loss("overfeat", 231, 2);
}

TEST(OverFeatSlow, SaveLoadRoundTrip) { testing::expect_round_trip("overfeat", 231); }

const char* const kVggs[] = {"vgg_a", "vgg_16", "vgg_19"};

TEST(VggSlow, OneTrainingStepLowersTheLoss) {
  for (const char* name : kVggs) {
    testing::expect_sgd_step_lowers_loss(name, 224, 1);
  }
}

TEST(VggSlow, SaveLoadRoundTrip) {
  for (const char* name : kVggs) testing::expect_round_trip(name, 224, 1);
}

const char* const kDeepResNets[] = {"resnet_v1_101", "resnet_v1_152", "resnet_v1_200",
                                    "resnet_v2_101", "resnet_v2_152", "resnet_v2_200"};

TEST(ResNetSlow, OneTrainingStepLowersTheLoss) {
  // float64 and a tiny step: see testing::sgd_step.
  for (const char* name : kDeepResNets) {
    testing::expect_sgd_step_lowers_loss(name, 64, 2, torch::kFloat64, 1e-5);
  }
}

TEST(ResNetSlow, SaveLoadRoundTrip) {
  for (const char* name : kDeepResNets) testing::expect_round_trip(name, 64);
}

}  // namespace
}  // namespace fastnn::models
