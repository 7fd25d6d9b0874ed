#include "models/alexnet.h"

namespace fastnn::models {
namespace {

const ConvFcLayout kLayout{"alexnet_v2",
                           {{{64, 11, 4, Padding::kValid, 0.1},
                             {192, 5, 1, Padding::kSame, 0.1},
                             {384, 3, 1, Padding::kSame, 0.1},
                             {384, 3, 1, Padding::kSame, 0.1},
                             {256, 3, 1, Padding::kSame, 0.1},
                             {4096, 5, 1, Padding::kValid, 0.1},
                             {4096, 1, 1, Padding::kSame, 0.1}}},
                           /*fc8_bias=*/0.0,
                           /*pool_kernel=*/3,
                           /*image_size=*/224};

}  // namespace

AlexNetV2Impl::AlexNetV2Impl(const ModelOptions& options) : ConvFcNetImpl(kLayout, options) {}

}  // namespace fastnn::models
