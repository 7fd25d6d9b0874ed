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

namespace {
using namespace fastnn;

// A float32, C-ordered .npy file (format versions 1-3).
torch::Tensor read_npy(const std::string& path) {
  const std::string bytes = io::read_file(path);
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    throw DataError("'" + path + "' is not a .npy file");
  }
  const int major = static_cast<uint8_t>(bytes[6]);
  const size_t len_bytes = major == 1 ? 2 : 4;
  size_t header_len = 0;
  for (size_t i = 0; i < len_bytes; ++i) {
    header_len |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
  }
  const size_t data_at = 8 + len_bytes + header_len;
  if (data_at > bytes.size()) throw DataError("'" + path + "': truncated header");
  const std::string header = bytes.substr(8 + len_bytes, header_len);
  if (header.find("'descr': '<f4'") == std::string::npos ||
      header.find("'fortran_order': False") == std::string::npos) {
    throw DataError("'" + path + "': not a C-ordered float32 array: " + header);
  }
  std::smatch m;
  static const std::regex shape_re(R"('shape': \(([0-9, ]*)\))");
  if (!std::regex_search(header, m, shape_re)) throw DataError("'" + path + "': no shape");
  std::vector<int64_t> shape;
  std::stringstream dims(m[1].str());
  std::string d;
  while (std::getline(dims, d, ',')) {
    if (d.find_first_not_of(' ') != std::string::npos) shape.push_back(std::stoll(d));
  }
  auto t = torch::empty(shape);
  if (static_cast<size_t>(t.numel()) * 4 != bytes.size() - data_at) {
    throw DataError("'" + path + "': the data does not match the shape");
  }
  std::memcpy(t.data_ptr(), bytes.data() + data_at, bytes.size() - data_at);
  return t;
}

void write_npy(const std::string& path, const torch::Tensor& t) {
  std::string shape;
  for (int64_t s : t.sizes()) shape += std::to_string(s) + ", ";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape + "), }";
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  const auto c = t.contiguous().to(torch::kFloat32);
  out.append(static_cast<const char*>(c.data_ptr()), c.numel() * 4);
  io::write_file_atomic(path, out);
}

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
        const torch::Tensor nhwc = read_npy(args.extras.at("input"));
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
        write_npy(args.extras.at("output"), model->forward(images).logits.reshape({nhwc.size(0), -1}));
        return 0;
      },
      {"input", "output"});
}
