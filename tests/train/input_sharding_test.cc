// The training input's sharding: record i of each epoch goes to worker
// i mod W, and every worker reads the same count (the remainder dropped).
#include <gtest/gtest.h>

#include "fastnn/errors.h"
#include "fastnn/pipeline.h"

namespace fastnn::datasets {
namespace {

int64_t batches(int shard, int shards, int64_t samples, int64_t epochs) {
  PipelineOptions o;
  o.synthetic_samples = samples;
  o.batch_size = 1;
  o.num_epochs = epochs;
  o.shuffle_buffer_size = 1;
  o.num_threads = 1;
  o.shape = {1, 2, 2};
  o.shard_index = shard;
  o.num_shards = shards;
  Pipeline p(std::move(o));
  int64_t n = 0;
  while (p.next()) ++n;
  return n;
}

TEST(InputShardingTest, EveryWorkerReadsTheSameCountPerEpoch) {
  EXPECT_EQ(batches(0, 1, 11, 2), 22);
  for (int shard = 0; shard < 3; ++shard) {
    EXPECT_EQ(batches(shard, 3, 11, 2), 6) << shard;  // 3 of 11 per epoch
  }
  EXPECT_EQ(batches(1, 2, 4, 1), 2);
}

TEST(InputShardingTest, ShardOutsideTheWorldIsAConfigError) {
  EXPECT_THROW(batches(2, 2, 4, 1), ConfigError);
  EXPECT_THROW(batches(0, 0, 4, 1), ConfigError);
}

}  // namespace
}  // namespace fastnn::datasets
