// tf_oracle_forward: this port's eval-mode forward pass of a network
// restored from a checkpoint (TensorFlow's or ours), on a batch given as a
// .npy file, for the TensorFlow oracle (tests/tf_oracle/, scripts/tf_oracle.sh).
//
//   tf_oracle_forward --model_name=NAME --num_classes=N --checkpoint_path=P
//                     --input=IN.npy --output=OUT.npy [--data_format=NHWC]
//                     [--output_nhwc=OUT2.npy]
// IN.npy: float32 [N,H,W,C] (TensorFlow's layout); OUT.npy: float32 logits
// [N, num_classes] in data_format; OUT2.npy: the same model's logits in NHWC
// as well. Exit codes as the other tools.
//
// The network's input side, for tests/tf_oracle/preprocessing.py:
//   tf_oracle_forward --images=A.jpg,B.png --size=S --channels=C --seed=N
//       --is_training=true|false --output=OUT.npy [--decoded_prefix=P]
//       [--preprocessing_name=NAME | --model_name=NAME] [--fast_jpeg_decode=B]
// runs the preprocessing (preprocessing_name, or the model's as the trainer
// resolves it) on each image with its own std::mt19937_64(seed + i), writes
// OUT.npy float32 [N,S,S,C] (HWC), P<i>.npy the image as decoded whole
// (float32 [H,W,C] of its 0-255 values), and prints one JSON line per image:
// the preprocessing's name and, when training, the random draws it took
// (slim_preprocessing.h's Draws).
#include <torch/torch.h>

#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include "fastnn/errors.h"
#include "models/model_factory.h"
#include "preprocessing/slim_preprocessing.h"
#include "src/io/atomic_file.h"
#include "src/tools/tool_main.h"
#include "src/train/builder.h"
#include "src/train/checkpoint.h"
#include "src/train/train_state.h"
#include "tests/tf_oracle/npy.h"

namespace {
using namespace fastnn;

std::vector<std::string> split_commas(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(item);
  return out;
}

std::string draws_json(const std::string& name, const preprocessing::Draws& d) {
  std::ostringstream o;
  o.precision(9);  // every float32 exactly
  const auto& w = d.crop;
  o << "\"resize_side\": " << d.resize_side << ", \"crop\": [" << w.top << ", " << w.left << ", "
    << w.height << ", " << w.width << "], \"flip\": " << (d.flip ? "true" : "false")
    << ", \"brightness\": " << d.brightness << ", \"saturation\": " << d.saturation
    << ", \"contrast\": " << d.contrast;
  return name == "lenet" ? "" : o.str();
}

int preprocess(LoadResult& args) {
  const HParams& hp = args.hp;
  for (const char* k : {"size", "channels", "output"}) {
    if (!args.extras.count(k)) throw ConfigError(std::string("--") + k + " is required");
  }
  const std::string name = hp.preprocessing_name.empty()
                               ? models::find_model(hp.model_name).preprocessing
                               : hp.preprocessing_name;
  const int size = std::stoi(args.extras.at("size"));
  const preprocessing::OutputShape shape{std::stoi(args.extras.at("channels")), size, size};
  const bool training = args.extras.count("is_training") && args.extras.at("is_training") == "true";
  const uint64_t seed = args.extras.count("seed") ? std::stoull(args.extras.at("seed")) : 0;
  const auto fn = preprocessing::get_preprocessing(name, shape, training, {hp.fast_jpeg_decode});
  const auto files = split_commas(args.extras.at("images"));
  auto out = torch::empty({static_cast<int64_t>(files.size()), shape.channels, size, size});
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string bytes = io::read_file(files[i]);
    const io::Image decoded = io::decode_image(bytes, shape.channels);
    if (args.extras.count("decoded_prefix")) {
      test_npy::write(
          args.extras.at("decoded_prefix") + std::to_string(i) + ".npy",
          torch::from_blob(const_cast<uint8_t*>(decoded.pixels.data()),
                           {decoded.height, decoded.width, decoded.channels}, torch::kUInt8));
    }
    std::mt19937_64 rng(seed + i);
    std::mt19937_64 replay = rng;  // the same draws, taken again to print them
    preprocessing::Draws d;
    const int h = decoded.height, w = decoded.width;
    if (training && name == "inception") d = preprocessing::inception_draws(h, w, replay);
    if (training && name == "vgg") d = preprocessing::vgg_draws(h, w, shape, replay);
    if (training && name == "cifarnet") d = preprocessing::cifarnet_draws(h, w, shape, replay);
    fn({bytes, shape.channels}, rng, out[i].data_ptr<float>());
    const std::string draws = training ? draws_json(name, d) : "";
    std::cout << "{\"image\": " << i << ", \"preprocessing\": \"" << name << "\""
              << (draws.empty() ? "" : ", " + draws) << "}" << std::endl;
  }
  test_npy::write(args.extras.at("output"), out.permute({0, 2, 3, 1}));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return train::tool_main(
      argc, argv, "tf_oracle_forward",
      "--model_name=NAME --num_classes=N --checkpoint_path=P --input=IN.npy --output=OUT.npy | "
      "--images=A,B --size=S --channels=C --seed=N --is_training=B --output=OUT.npy",
      [](LoadResult& args) {
        if (args.extras.count("images")) return preprocess(args);
        const HParams& hp = args.hp;
        if (!hp.num_classes || !args.extras.count("input") || !args.extras.count("output")) {
          throw ConfigError("num_classes, --input and --output are required");
        }
        const torch::Tensor nhwc = test_npy::read(args.extras.at("input"));
        if (nhwc.dim() != 4) throw DataError("--input: expected [N,H,W,C]");
        models::ModelOptions o;
        o.num_classes = *hp.num_classes;
        o.in_channels = nhwc.size(3);
        o.image_size = nhwc.size(1);
        o.dropout_keep_prob = 1.0;
        auto model = models::find_model(hp.model_name).create(o);
        train::apply_data_format(hp, *model);
        const std::string path = train::resolve_checkpoint(hp.checkpoint_path);
        train::restore_model(*model, train::load_tensors(path), path, {});
        model->eval();
        torch::NoGradGuard no_grad;
        const auto nchw = nhwc.permute({0, 3, 1, 2}).contiguous();
        const auto write_logits = [&](const std::string& out, const HParams& layout) {
          test_npy::write(out, model->forward(train::to_data_format(layout, nchw))
                                   .logits.reshape({nhwc.size(0), -1}));
        };
        write_logits(args.extras.at("output"), hp);
        // --output_nhwc: the same restored model again in NHWC (one process
        // and one restore for both layouts: the large nets' checkpoints take
        // seconds to read).
        if (args.extras.count("output_nhwc")) {
          HParams last = hp;
          last.data_format = "NHWC";
          train::apply_data_format(last, *model);
          write_logits(args.extras.at("output_nhwc"), last);
        }
        return 0;
      },
      {"input", "output", "output_nhwc", "images", "size", "channels", "seed", "is_training",
       "decoded_prefix"});
}
