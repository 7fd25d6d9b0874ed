// ONNX export of a network's evaluation forward pass (export_inference_graph).
//
// LibTorch's C++ API has no ONNX exporter (PyTorch's lives in Python), so
// the network is traced with torch::jit's tracer, the trace is inlined and
// constant-folded, and each ATen op left is written as ONNX nodes (opset
// kOnnxOpset) with ONNX's own protobufs; parameters and BatchNorm
// statistics become initializers named after their TF-slim variables. The
// table of mapped ops is in onnx_export.cc; docs/io.md lists it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "models/classifier.h"

namespace fastnn::exporter {

/// The ONNX operator set the exported models import (ONNX Runtime runs
/// every opset from 7 on; 13 has every op used here in its final form for
/// this purpose, e.g. Squeeze/Unsqueeze/Pad/Clip with tensor inputs).
constexpr int64_t kOnnxOpset = 13;

struct OnnxExportOptions {
  /// Images per batch; 0: dynamic, the batch dimension is named "N".
  int64_t batch_size = 0;
  /// Channels and side of the square input images. REQUIRES: >= 1.
  int64_t channels = 3;
  int64_t image_size = 224;
  /// Named in error messages (the network that has an unmapped op).
  std::string model_name;
  /// Written as the model's metadata_props (e.g. labels_offset).
  std::map<std::string, std::string> metadata;
};

/// The serialized ONNX ModelProto of `model`'s forward pass in eval mode:
/// input "images" float32 [N, channels, image_size, image_size], output
/// "logits" float32 [N, num_classes], checked with onnx::checker. Throws
/// ConfigError naming the op and the network when an op of the trace has
/// no ONNX mapping; std::runtime_error when the checker rejects the result
/// (a bug). The model is put in eval mode.
std::string export_onnx(models::ClassifierImpl& model, const OnnxExportOptions& options);

}  // namespace fastnn::exporter
