// classify_image --config FILE | --model_name=NAME  --checkpoint_path=PATH
//                [--num_classes=N] [--labels_file=FILE] [--top_k=5]
//                [--KEY=VALUE ...] IMAGE... | --image_list=FILE
//
// Classifies image files (PNG or JPEG) with a trained network: the
// network's evaluation preprocessing (preprocessing_name, eval_image_size,
// use_grayscale as in eval_image_classifier), the checkpoint's moving
// averages when it has them, and one JSON object per image on stdout:
//   {"file", "class", "label", "probability", "top_k": [{"class", "label",
//    "probability"}...], "logits": [...]}
// "class" is the logits' index plus labels_offset, as a dataset numbers
// it. num_classes defaults to the checkpoint's. Labels come from
// --labels_file (TF-slim's labels.txt: "id:name" lines), else from the
// configured dataset's labels.txt, else for a network of TF-slim's 1001
// ImageNet classes (or 1000 with labels_offset=1) ImageNet's names, else
// none (""). Options take the
// --KEY=VALUE form (or --config FILE); every other argument is an image.
//
// Exit: 0 every image classified; 3 an image could not be read or decoded
// (named on stderr; the others are still classified) or no checkpoint;
// 2 bad arguments.
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "datasets/dataset_factory.h"
#include "fastnn/errors.h"
#include "models/model_factory.h"
#include "preprocessing/preprocessing_factory.h"
#include "src/config/value_parse.h"
#include "src/io/atomic_file.h"
#include "src/log/log.h"
#include "src/tools/tool_main.h"
#include "src/train/builder.h"
#include "src/train/inference_model.h"

namespace {
using namespace fastnn;

// The class names: --labels_file, else the dataset's labels.txt, else
// TF-slim's ImageNet names for a 1001-class network; none otherwise.
std::vector<std::string> class_labels(const LoadResult& args, int64_t classes) {
  const HParams& hp = args.hp;
  const auto labels_file = args.extras.find("labels_file");
  if (labels_file == args.extras.end()) {
    if (!hp.dataset_dir.empty()) return datasets::read_labels_file(hp.dataset_dir + "/labels.txt");
    if (classes == 1001) return datasets::imagenet_class_names();  // TF-slim's ImageNet numbering
    return {};
  }
  if (std::error_code ec; !std::filesystem::exists(labels_file->second, ec)) {
    throw DataError("labels_file: cannot read '" + labels_file->second + "'");
  }
  int64_t skipped = 0;
  auto labels = datasets::read_labels_file(labels_file->second, &skipped);
  const int64_t named = static_cast<int64_t>(
      std::count_if(labels.begin(), labels.end(), [](const auto& l) { return !l.empty(); }));
  if (skipped > 0 || named != classes) {
    log::warning() << "labels_file " << config::quote_value(labels_file->second) << ": " << named
                   << " names for the network's " << classes << " classes"
                   << (skipped > 0 ? ", " + std::to_string(skipped) +
                                         " line(s) not of the form id:name skipped"
                                   : std::string())
                   << "; a class without a name is shown without a label";
  }
  return labels;
}

int64_t top_k_of(const LoadResult& args, int64_t num_classes) {
  int64_t top_k = 5;
  if (auto top_k_arg = args.extras.find("top_k"); top_k_arg != args.extras.end()) {
    if (config::parse_int(top_k_arg->second, &top_k) != config::NumberStatus::kOk || top_k < 1) {
      throw ConfigError("top_k: '" + top_k_arg->second + "' is not an integer >= 1");
    }
  }
  return std::min(top_k, num_classes);
}

// One image's JSON line from its logits.
nlohmann::json image_result(const std::string& file, const at::Tensor& logits, int64_t top_k,
                            int64_t labels_offset, const std::vector<std::string>& labels) {
  auto label_of = [&](int64_t class_id) {
    return class_id >= 0 && class_id < static_cast<int64_t>(labels.size())
               ? labels[static_cast<size_t>(class_id)]
               : std::string();
  };
  const auto probs = torch::softmax(logits, 0);
  const auto [top_probs, idx] = probs.topk(top_k);
  nlohmann::json top = nlohmann::json::array();
  for (int64_t i = 0; i < top_k; ++i) {
    const int64_t class_id = idx[i].item<int64_t>() + labels_offset;
    top.push_back({{"class", class_id},
                   {"label", label_of(class_id)},
                   {"probability", top_probs[i].item<double>()}});
  }
  const auto flat_logits = logits.contiguous();
  const std::vector<float> values(flat_logits.data_ptr<float>(),
                                  flat_logits.data_ptr<float>() + flat_logits.numel());
  return {{"file", file},
          {"class", top[0]["class"]},
          {"label", top[0]["label"]},
          {"probability", top[0]["probability"]},
          {"top_k", top},
          {"logits", values}};
}

int classify(LoadResult& args, const std::vector<std::string>& images) {
  const HParams& hp = args.hp;
  if (images.empty()) throw ConfigError("no image: name image files, or --image_list=FILE");
  const train::InferenceModel loaded = train::load_inference_model(train::inference_options(hp));
  const models::ModelOptions& model_options = loaded.options;
  torch::NoGradGuard no_grad;
  const auto labels = class_labels(args, model_options.num_classes + hp.labels_offset);
  const int64_t top_k = top_k_of(args, model_options.num_classes);
  const std::string prep_name =
      hp.preprocessing_name.empty() ? loaded.spec->preprocessing : hp.preprocessing_name;
  const preprocessing::OutputShape shape{static_cast<int>(model_options.in_channels),
                                         static_cast<int>(model_options.image_size),
                                         static_cast<int>(model_options.image_size)};
  const auto prep = preprocessing::get_preprocessing(prep_name, shape, false);
  std::mt19937_64 rng(0);
  int failed = 0;
  for (const std::string& file : images) {
    auto input = torch::empty({1, shape.channels, shape.height, shape.width});
    try {
      const std::string bytes = io::read_file(file);
      prep(preprocessing::EncodedImage{bytes, shape.channels}, rng, input.data_ptr<float>());
    } catch (const DataError& e) {
      std::fprintf(stderr, "classify_image: %s: %s\n", file.c_str(), e.what());
      ++failed;
      continue;
    }
    const auto logits = loaded.model->forward(input).logits.reshape({-1});
    const auto out = image_result(file, logits, top_k, hp.labels_offset, labels);
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    std::cout.flush();
  }
  if (failed) {
    std::fprintf(stderr, "classify_image: %d of %zu images could not be classified\n", failed,
                 images.size());
    return kExitData;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Images are the arguments that are not options: an argument that does
  // not start with '-', unless it is --config's file.
  std::vector<const char*> options{argv[0]};
  std::vector<std::string> images;
  bool after_dashes = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!after_dashes && arg == "--") {
      after_dashes = true;
    } else if (!after_dashes && arg.rfind("-", 0) == 0) {
      options.push_back(argv[i]);
      if (arg == "--config" && i + 1 < argc) options.push_back(argv[++i]);
    } else {
      images.push_back(arg);
    }
  }
  return fastnn::train::tool_main(
      static_cast<int>(options.size()), const_cast<char**>(options.data()), "classify_image",
      "--config FILE | --model_name=NAME --checkpoint_path=PATH [--num_classes=N] "
      "[--labels_file=FILE] [--top_k=5] [--KEY=VALUE ...] IMAGE... | --image_list=FILE",
      [&images](fastnn::LoadResult& args) {
        if (auto list = args.extras.find("image_list"); list != args.extras.end()) {
          std::istringstream in(fastnn::io::read_file(list->second, size_t{64} << 20));
          std::string line;
          while (std::getline(in, line)) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (!line.empty()) images.push_back(line);
          }
        }
        return classify(args, images);
      },
      {"image_list", "labels_file", "top_k"});
}
