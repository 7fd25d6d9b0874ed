// The preprocessing name table (TF-slim's preprocessing_factory). A
// preprocessing function turns one decoded image into the network's input:
// float, CHW, written straight into the batch tensor's memory.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "fastnn/image.h"

namespace fastnn::preprocessing {

/// Output geometry of a preprocessing function.
struct OutputShape {
  int channels = 3;
  int height = 224;
  int width = 224;
  int64_t numel() const {
    return int64_t{channels} * height * width;
  }
};

/// Writes shape.numel() floats (CHW) to `out`. `rng` drives the random
/// transforms of training; eval variants ignore it.
using PreprocessFn =
    std::function<void(const io::Image& in, std::mt19937_64& rng, float* out)>;

/// The function named `name` for `shape`, train or eval variant. Throws
/// ConfigError listing the valid names.
PreprocessFn get_preprocessing(const std::string& name,
                               const OutputShape& shape,
                               bool is_training);

/// Registered names, in table order.
std::vector<std::string> preprocessing_names();

}  // namespace fastnn::preprocessing
