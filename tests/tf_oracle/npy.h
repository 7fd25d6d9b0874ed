// Float32 .npy files for the TensorFlow oracle's C++ side.
#pragma once

#include <torch/torch.h>

#include <cstring>
#include <regex>
#include <sstream>
#include <string>

#include "fastnn/errors.h"
#include "src/io/atomic_file.h"

namespace fastnn::test_npy {

// A float32, C-ordered .npy file (format versions 1-3).
inline torch::Tensor read(const std::string& path) {
  const std::string bytes = ::fastnn::io::read_file(path);
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    throw ::fastnn::DataError("'" + path + "' is not a .npy file");
  }
  const int major = static_cast<uint8_t>(bytes[6]);
  const size_t len_bytes = major == 1 ? 2 : 4;
  size_t header_len = 0;
  for (size_t i = 0; i < len_bytes; ++i) {
    header_len |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
  }
  const size_t data_at = 8 + len_bytes + header_len;
  if (data_at > bytes.size()) throw ::fastnn::DataError("'" + path + "': truncated header");
  const std::string header = bytes.substr(8 + len_bytes, header_len);
  if (header.find("'descr': '<f4'") == std::string::npos ||
      header.find("'fortran_order': False") == std::string::npos) {
    throw ::fastnn::DataError("'" + path + "': not a C-ordered float32 array: " + header);
  }
  std::smatch m;
  static const std::regex shape_re(R"('shape': \(([0-9, ]*)\))");
  if (!std::regex_search(header, m, shape_re))
    throw ::fastnn::DataError("'" + path + "': no shape");
  std::vector<int64_t> shape;
  std::stringstream dims(m[1].str());
  std::string d;
  while (std::getline(dims, d, ',')) {
    if (d.find_first_not_of(' ') != std::string::npos) shape.push_back(std::stoll(d));
  }
  auto t = torch::empty(shape);
  if (static_cast<size_t>(t.numel()) * 4 != bytes.size() - data_at) {
    throw ::fastnn::DataError("'" + path + "': the data does not match the shape");
  }
  std::memcpy(t.data_ptr(), bytes.data() + data_at, bytes.size() - data_at);
  return t;
}

inline void write(const std::string& path, const torch::Tensor& t) {
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
  ::fastnn::io::write_file_atomic(path, out);
}

}  // namespace fastnn::test_npy
