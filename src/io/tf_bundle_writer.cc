#include "src/io/tf_bundle_writer.h"

#include <leveldb/env.h>
#include <leveldb/options.h>
#include <leveldb/table_builder.h>

#include <cstdio>
#include <stdexcept>

#include "fastnn/errors.h"
#include "fastnn/tf_checkpoint.pb.h"
#include "src/io/atomic_file.h"
#include "src/io/crc32c.h"

namespace fastnn::io {
namespace {

// The table builder's output, kept in memory until it is whole.
class StringFile : public leveldb::WritableFile {
 public:
  leveldb::Status Append(const leveldb::Slice& data) override {
    bytes.append(data.data(), data.size());
    return leveldb::Status::OK();
  }
  leveldb::Status Close() override { return leveldb::Status::OK(); }
  leveldb::Status Flush() override { return leveldb::Status::OK(); }
  leveldb::Status Sync() override { return leveldb::Status::OK(); }
  std::string bytes;
};

void check_tensor(const std::string& name, const TfTensor& t) {
  const size_t element = tf_dtype_bytes(t.dtype);
  if (element == 0) {
    throw std::invalid_argument("TF checkpoint writer: tensor '" + name + "' has type " +
                                tf_dtype_name(t.dtype) + ", which it does not write");
  }
  size_t elements = 1;
  for (int64_t d : t.shape) {
    if (d < 0) throw std::invalid_argument("TF checkpoint writer: '" + name + "': negative dim");
    elements *= static_cast<size_t>(d);
  }
  if (elements * element != t.bytes.size()) {
    throw std::invalid_argument("TF checkpoint writer: '" + name +
                                "': " + std::to_string(t.bytes.size()) + " bytes for " +
                                std::to_string(elements) + " elements");
  }
}

tfckpt::BundleEntryProto entry_of(const TfTensor& t, int64_t offset) {
  tfckpt::BundleEntryProto entry;
  entry.set_dtype(t.dtype);
  for (int64_t d : t.shape) entry.mutable_shape()->add_dim()->set_size(d);
  entry.set_shard_id(0);
  entry.set_offset(offset);
  entry.set_size(static_cast<int64_t>(t.bytes.size()));
  entry.set_crc32c(mask_crc(crc32c(t.bytes.data(), t.bytes.size())));
  return entry;
}

std::string header_bytes() {
  tfckpt::BundleHeaderProto header;
  header.set_num_shards(1);
  header.set_endianness(tfckpt::BundleHeaderProto::LITTLE);
  header.mutable_version()->set_producer(1);  // TensorFlow's kTensorBundleVersion
  return header.SerializeAsString();
}

}  // namespace

void write_tf_bundle(const std::string& prefix, const std::map<std::string, TfTensor>& tensors) {
  for (const auto& [name, t] : tensors) {
    if (name.empty()) throw std::invalid_argument("TF checkpoint writer: a tensor without a name");
    check_tensor(name, t);
  }
  leveldb::Options options;
  options.compression = leveldb::kNoCompression;
  options.block_size = 256 * 1024;
  StringFile index;
  leveldb::TableBuilder table(options, &index);
  table.Add("", header_bytes());  // "" sorts first: the header entry
  AtomicFileWriter data(prefix + ".data-00000-of-00001");
  try {
    int64_t offset = 0;
    for (const auto& [name, t] : tensors) {  // std::map: bytewise name order
      data.append(t.bytes);
      table.Add(name, entry_of(t, offset).SerializeAsString());
      offset += static_cast<int64_t>(t.bytes.size());
    }
  } catch (...) {
    table.Abandon();
    throw;
  }
  if (const leveldb::Status s = table.Finish(); !s.ok()) {
    throw DataError("cannot build '" + prefix + ".index': " + s.ToString());
  }
  data.commit();
  write_file_atomic(prefix + ".index", index.bytes);
}

namespace {

// A string in protobuf text format's quotes and escapes.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char octal[5];
      std::snprintf(octal, sizeof octal, "\\%03o", c);
      out += octal;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace

std::string tf_checkpoint_state_text(const std::string& latest,
                                     const std::vector<std::string>& all) {
  std::string text = "model_checkpoint_path: " + quoted(latest) + "\n";
  for (const auto& path : all) text += "all_model_checkpoint_paths: " + quoted(path) + "\n";
  return text;
}

}  // namespace fastnn::io
