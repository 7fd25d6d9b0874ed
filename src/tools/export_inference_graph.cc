// export_inference_graph --model_name=NAME --checkpoint_path=PATH
//                        --output_file=FILE.onnx [--batch_size=N|dynamic]
//                        [--image_size=N] [--num_classes=N] [--labels_offset=N]
//                        [--use_grayscale] [--config FILE] [--KEY=VALUE ...]
//
// TF-slim's tool of that name, writing ONNX (opset 13) instead of a frozen
// GraphDef: the evaluation network (eval mode, dropout off, the
// checkpoint's moving averages when it has them), restored from a
// checkpoint of this project or TensorFlow's as classify_image reads it.
// Input "images": float32 NCHW [N, C, S, S], already preprocessed (the
// network's eval preprocessing, docs/io.md "ONNX export"); output "logits"
// float32 [N, num_classes]. --batch_size=N (or --batch_size N): only from the
// command line; default dynamic (TF-slim's None), the batch dimension then
// named "N".
// S: --image_size, else eval_image_size, else the network's default.
// Without --checkpoint_path (TF-slim's tool writes the graph alone) the
// network's initial weights are written, seeded by `seed`; --num_classes is
// then required. A .pb output name gets a warning: the file is ONNX.
// The model's metadata_props record model_name, num_classes,
// labels_offset, image_size, preprocessing and moving_averages.
//
// Exit: 0 written; 2 bad arguments, unknown network, or an op of the
// network's trace with no ONNX mapping (named); 3 no checkpoint, unreadable
// or corrupt checkpoint, or the output cannot be written. Nothing is
// written unless the whole model was converted and passed onnx::checker.
#include <torch/torch.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "fastnn/errors.h"
#include "src/config/value_parse.h"
#include "src/export/onnx_export.h"
#include "src/io/atomic_file.h"
#include "src/log/log.h"
#include "src/tools/tool_main.h"
#include "src/train/builder.h"
#include "src/train/inference_model.h"

namespace {
using namespace fastnn;

int64_t positive(const std::string& key, const std::string& value) {
  int64_t n = 0;
  if (config::parse_int(value, &n) != config::NumberStatus::kOk || n < 1) {
    throw ConfigError(key + ": '" + value + "' is not an integer >= 1" +
                      (key == "batch_size" ? " or 'dynamic'" : ""));
  }
  return n;
}

// The export's shape and the metadata written into the model.
exporter::OnnxExportOptions export_options_of(const HParams& hp,
                                              const train::InferenceModel& loaded, int64_t batch,
                                              bool initial) {
  exporter::OnnxExportOptions export_options;
  export_options.batch_size = batch;
  export_options.channels = loaded.options.in_channels;
  export_options.image_size = loaded.options.image_size;
  export_options.model_name = hp.model_name;
  export_options.metadata = {
      {"model_name", hp.model_name},
      {"num_classes", std::to_string(loaded.options.num_classes)},
      {"labels_offset", std::to_string(hp.labels_offset)},
      {"image_size", std::to_string(export_options.image_size)},
      {"preprocessing",
       hp.preprocessing_name.empty() ? loaded.spec->preprocessing : hp.preprocessing_name},
      {"moving_averages", loaded.moving_averages ? "true" : "false"},
      {"weights", initial ? "initial" : "checkpoint"},
  };
  return export_options;
}

int export_graph(LoadResult& args, const std::string& batch_size) {
  const HParams& hp = args.hp;
  const auto output = args.extras.find("output_file");
  if (output == args.extras.end() || output->second.empty()) {
    throw ConfigError("output_file: not set (the .onnx file to write)");
  }
  const int64_t batch = batch_size == "dynamic" ? 0 : positive("batch_size", batch_size);
  int64_t image_size = 0;
  if (auto given = args.extras.find("image_size"); given != args.extras.end()) {
    image_size = positive("image_size", given->second);
  }
  // Without a checkpoint, TF-slim's tool writes the graph alone; here the
  // network's initial weights go with it.
  const bool initial = hp.checkpoint_path.empty();
  const train::InferenceModel loaded =
      initial ? train::initial_inference_model(train::inference_options(hp), image_size, hp.seed)
              : train::load_inference_model(train::inference_options(hp), image_size);
  if (initial) {
    log::warning() << "no checkpoint_path: the graph holds " << hp.model_name
                   << "'s initial weights (seed " << hp.seed << "), as TF-slim's "
                   << "export_inference_graph writes a graph without a checkpoint";
  }
  const std::string& file = output->second;
  if (file.size() >= 3 && file.compare(file.size() - 3, 3, ".pb") == 0) {
    log::warning() << "'" << file << "' will hold an ONNX model (opset 13), not the TensorFlow "
                   << "GraphDef TF-slim's tool writes; .onnx is its usual name";
  }
  const exporter::OnnxExportOptions export_options = export_options_of(hp, loaded, batch, initial);
  const std::string bytes = exporter::export_onnx(*loaded.model, export_options);
  io::AtomicFileWriter out(output->second);
  out.append(bytes);
  out.commit();
  std::printf(
      "export_inference_graph: wrote %s (%s, %s images [%s, %lld, %lld, %lld], %lld "
      "classes, %.1f MB%s)\n",
      output->second.c_str(), hp.model_name.c_str(), batch ? "fixed batch" : "dynamic batch",
      batch ? std::to_string(batch).c_str() : "N", static_cast<long long>(export_options.channels),
      static_cast<long long>(export_options.image_size),
      static_cast<long long>(export_options.image_size),
      static_cast<long long>(loaded.options.num_classes), bytes.size() / 1e6,
      loaded.moving_averages ? ", moving-average weights" : "");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // --batch_size is the export's own (a config's training batch_size does
  // not count), and may be "dynamic": taken out before the hparams parse.
  std::vector<char*> rest{argv[0]};
  std::string batch_size = "dynamic";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--batch_size=", 13) == 0) {
      batch_size = argv[i] + 13;
    } else if (std::strcmp(argv[i], "--batch_size") == 0 && i + 1 < argc) {
      batch_size = argv[++i];
    } else {
      rest.push_back(argv[i]);
    }
  }
  return fastnn::train::tool_main(
      static_cast<int>(rest.size()), rest.data(), "export_inference_graph",
      "--model_name=NAME --checkpoint_path=PATH --output_file=FILE.onnx "
      "[--batch_size=N|dynamic] [--image_size=N] [--num_classes=N] [--labels_offset=N] "
      "[--KEY=VALUE ...]",
      [&batch_size](fastnn::LoadResult& args) { return export_graph(args, batch_size); },
      {"output_file", "image_size"});
}
