// The C++ side of the torchvision parity test (torchvision_parity.py):
// runs the project's augmentation ops and prints its policy tables, for the
// Python side to compare with torchvision's.
//
//   augment_parity ops IMAGE REQUESTS OUT
//     IMAGE: int32 channels, height, width, then the CHW uint8 pixels;
//     REQUESTS: lines "OpName magnitude"; OUT: each result's pixels, in
//     request order.
//   augment_parity space POLICY HEIGHT WIDTH
//     One line per op: "OpName signed m0 m1 ..." (%.9g).
//   augment_parity autoaugment_imagenet
//     One line per sub-policy: "Op p bin Op p bin" (bin -1: none).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "preprocessing/augment.h"

using namespace fastnn::preprocessing;

namespace {

bool op_from_name(const std::string& name, AugmentOp* op) {
  for (int i = 0; i <= static_cast<int>(AugmentOp::kInvert); ++i) {
    if (name == augment_op_name(static_cast<AugmentOp>(i))) {
      *op = static_cast<AugmentOp>(i);
      return true;
    }
  }
  return false;
}

int run_ops(const char* image_path, const char* requests_path, const char* out_path) {
  std::ifstream in(image_path, std::ios::binary);
  int32_t dims[3];
  in.read(reinterpret_cast<char*>(dims), sizeof dims);
  ByteImage img;
  img.channels = dims[0];
  img.height = dims[1];
  img.width = dims[2];
  img.data.resize(size_t(dims[0]) * dims[1] * dims[2]);
  in.read(reinterpret_cast<char*>(img.data.data()), static_cast<std::streamsize>(img.data.size()));
  if (!in) {
    std::cerr << "augment_parity: cannot read " << image_path << "\n";
    return 1;
  }
  std::ifstream requests(requests_path);
  std::ofstream out(out_path, std::ios::binary);
  std::string name;
  double magnitude = 0;
  while (requests >> name >> magnitude) {
    AugmentOp op;
    if (!op_from_name(name, &op)) {
      std::cerr << "augment_parity: unknown op " << name << "\n";
      return 1;
    }
    ByteImage copy = img;
    apply_augment_op(copy, op, magnitude);
    out.write(reinterpret_cast<const char*>(copy.data.data()),
              static_cast<std::streamsize>(copy.data.size()));
  }
  return out ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "ops" && argc == 5) return run_ops(argv[2], argv[3], argv[4]);
  if (mode == "space" && argc == 5) {
    const std::string policy = argv[2];
    const int bins = policy == "autoaugment_imagenet" ? 10 : 31;
    for (const auto& e : augmentation_space(policy, bins, std::stoi(argv[3]), std::stoi(argv[4]))) {
      std::printf("%s %d", augment_op_name(e.op), e.is_signed ? 1 : 0);
      for (double m : e.magnitudes) std::printf(" %.9g", m);
      std::printf("\n");
    }
    return 0;
  }
  if (mode == "autoaugment_imagenet" && argc == 2) {
    for (const auto& [a, b] : autoaugment_imagenet_policy()) {
      std::printf("%s %g %d %s %g %d\n", augment_op_name(a.op), a.probability, a.magnitude_bin,
                  augment_op_name(b.op), b.probability, b.magnitude_bin);
    }
    return 0;
  }
  std::cerr << "usage: augment_parity ops IMAGE REQUESTS OUT | space POLICY HEIGHT WIDTH | "
               "autoaugment_imagenet\n";
  return 2;
}
