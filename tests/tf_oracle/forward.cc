// tf_oracle_forward: this port's eval-mode forward pass of a network
// restored from a checkpoint (TensorFlow's or ours), on a batch given as a
// .npy file, for the TensorFlow oracle (tests/tf_oracle/, scripts/tf_oracle.sh).
//
//   tf_oracle_forward --model_name=NAME --num_classes=N --checkpoint_path=P
//                     --input=IN.npy --output=OUT.npy [--data_format=NHWC]
// IN.npy: float32 [N,H,W,C] (TensorFlow's layout); OUT.npy: float32 logits
// [N, num_classes]. Exit codes as the other tools.
#include <torch/torch.h>

#include <cstring>
#include <fstream>
#include <regex>

#include "fastnn/errors.h"
#include "models/model_factory.h"
#include "src/io/atomic_file.h"
#include "src/train/builder.h"
#include "src/train/checkpoint.h"
#include "src/train/tool_main.h"
#include "src/train/train_state.h"
#include "tests/tf_oracle/npy.h"

namespace {
using namespace fastnn;

}  // namespace

int main(int argc, char** argv) {
  return train::tool_main(
      argc, argv, "tf_oracle_forward",
      "--model_name=NAME --num_classes=N --checkpoint_path=P --input=IN.npy --output=OUT.npy",
      [](LoadResult& args) {
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
        const auto images = train::to_data_format(hp, nhwc.permute({0, 3, 1, 2}).contiguous());
        test_npy::write(args.extras.at("output"), model->forward(images).logits.reshape({nhwc.size(0), -1}));
        return 0;
      },
      {"input", "output"});
}
