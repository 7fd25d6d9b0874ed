// TensorFlow's V2 checkpoint format ("tensor bundle"), written without
// TensorFlow, as tf.train.Saver and tf.train.Checkpoint write it:
//   PREFIX.data-00000-of-00001  the tensors' bytes, one after another,
//                               row-major, little-endian;
//   PREFIX.index                a LevelDB-format table (no compression),
//                               keys in bytewise order: "" -> the
//                               BundleHeaderProto (one shard, little-endian,
//                               version 1), each tensor's name -> its
//                               BundleEntryProto (type, shape, offset,
//                               size, masked CRC32C of its bytes).
// Both files are written atomically, the data file first, so a reader that
// finds the index finds every byte it names. src/io/tf_checkpoint.h reads
// the result back.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "src/io/tf_checkpoint.h"

namespace fastnn::io {

/// Writes `tensors` (name -> values, numeric types only: tf_dtype_bytes()
/// > 0, bytes.size() == elements * tf_dtype_bytes()) as the V2 checkpoint
/// PREFIX. Throws std::invalid_argument for a string tensor or bytes that
/// disagree with the shape, DataError when a file cannot be written.
void write_tf_bundle(const std::string& prefix, const std::map<std::string, TfTensor>& tensors);

/// The text of a TensorFlow "checkpoint" state file naming `latest` as the
/// latest checkpoint and `all` as every kept one (prefixes relative to the
/// state file's directory), with protobuf text format's string escapes.
std::string tf_checkpoint_state_text(const std::string& latest,
                                     const std::vector<std::string>& all);

}  // namespace fastnn::io
