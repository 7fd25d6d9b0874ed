#include "models/overfeat.h"

namespace fastnn::models {
namespace {

const ConvFcLayout kLayout{"overfeat",
                           {{{64, 11, 4, Padding::kValid, 0.0},
                             {256, 5, 1, Padding::kValid, 0.0},
                             {512, 3, 1, Padding::kSame, 0.0},
                             {1024, 3, 1, Padding::kSame, 0.0},
                             {1024, 3, 1, Padding::kSame, 0.0},
                             {3072, 6, 1, Padding::kValid, 0.1},
                             {4096, 1, 1, Padding::kSame, 0.1}}},
                           /*fc8_bias=*/0.0,
                           /*pool_kernel=*/2,
                           /*image_size=*/231};

}  // namespace

OverFeatImpl::OverFeatImpl(const ModelOptions& options) : ConvFcNetImpl(kLayout, options) {}

}  // namespace fastnn::models
