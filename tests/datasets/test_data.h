// Small generated datasets for the dataset and pipeline tests: PNG images
// whose pixels all equal a record id, TF-slim Examples, TFRecord files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "fastnn/pipeline.h"

namespace fastnn::testing {

/// FASTNN_TEST_TMP/name, emptied.
std::filesystem::path fresh_dir(const std::string& name);

/// PNG of an h x w x c image whose every byte is `value`.
std::string png_of(int h, int w, int c, uint8_t value);

/// A serialized Example with TF-slim's keys holding `encoded` and `label`.
std::string example_of(const std::string& encoded, int64_t label);

/// Writes `records` to a TFRecord file at path and returns path.
std::string write_records(const std::filesystem::path& path,
                          const std::vector<std::string>& records);

/// Writes n records of ids first..first+n-1: 28x28x1 PNGs of value id,
/// label id % 10.
std::string write_id_file(const std::filesystem::path& path, int first, int n);

/// Evaluation-mode options over `files`: batch 4, two threads, `channels`
/// x size x size images with lenet (1 channel) or cifarnet (3) eval
/// preprocessing, 10 classes.
datasets::PipelineOptions eval_options(std::vector<std::string> files, int channels = 1,
                                       int size = 28);

}  // namespace fastnn::testing
