// The input pipeline on small generated TFRecords: order, counts, shuffling,
// determinism across thread counts, resume position, bad-data policies.
#include "fastnn/pipeline.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "datasets/convert_mnist.h"
#include "fastnn/errors.h"
#include "fastnn/example.h"
#include "fastnn/tfrecord.h"
#include "preprocessing/preprocessing_factory.h"
#include "src/io/image.h"
#include "tests/datasets/test_data.h"
#include "tests/test_paths.h"

namespace fastnn::datasets {
namespace {
namespace fs = std::filesystem;

constexpr int kRecords = 96;

fs::path tmp_dir(const std::string& name) {
  fs::path d = fs::path(FASTNN_TEST_TMP) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Record i: a 28x28 gray image filled with value i, label i % 10.
std::string make_record(int i, int64_t label) {
  io::Image img;
  img.height = img.width = 28;
  img.channels = 1;
  img.pixels.assign(28 * 28, static_cast<uint8_t>(i));
  io::ImageRecord r;
  r.encoded = io::encode_png(img);
  r.format = "png";
  r.label = label;
  r.height = r.width = 28;
  return io::encode_image_example(r);
}

std::string write_file(const fs::path& dir, int n, int bad_label_at = -1) {
  const auto path = (dir / "mnist_train.tfrecord").string();
  io::TFRecordWriter w(path);
  for (int i = 0; i < n; ++i) w.write(make_record(i, i == bad_label_at ? 42 : i % 10));
  w.close();
  return path;
}

PipelineOptions base_options(const std::string& file) {
  PipelineOptions o;
  o.files = {file};
  o.batch_size = 8;
  o.channels = 1;
  o.num_classes = 10;
  o.shape = {1, 28, 28};
  o.preprocess = preprocessing::get_preprocessing("lenet", o.shape, true);
  o.num_threads = 2;
  return o;
}

// The record id of each image in a batch (inverse of lenet scaling).
std::vector<int> ids(const Batch& b) {
  std::vector<int> out;
  auto first = b.images.select(1, 0).select(1, 0).select(1, 0);
  for (int64_t i = 0; i < first.size(0); ++i) {
    out.push_back(static_cast<int>(std::lround(first[i].item<float>() * 128 + 128)));
  }
  return out;
}

std::vector<std::vector<int>> drain(Pipeline& p) {
  std::vector<std::vector<int>> out;
  while (auto b = p.next()) out.push_back(ids(*b));
  return out;
}

TEST(Pipeline, EvalReadsEveryRecordInOrderWithPartialLastBatch) {
  auto dir = tmp_dir("pipe_eval");
  auto o = base_options(write_file(dir, 21));
  o.is_training = false;
  Pipeline p(o);
  std::vector<int> seen;
  std::vector<int64_t> sizes;
  while (auto b = p.next()) {
    sizes.push_back(b->labels.size(0));
    for (int i : ids(*b)) seen.push_back(i);
    for (int64_t k = 0; k < b->labels.size(0); ++k) {
      EXPECT_EQ(b->labels[k].item<int64_t>(), ids(*b)[k] % 10);
    }
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{8, 8, 5}));
  std::vector<int> expected(21);
  for (int i = 0; i < 21; ++i) expected[i] = i;
  EXPECT_EQ(seen, expected);
}

TEST(Pipeline, TrainingShufflesRepeatsAndCoversEveryRecord) {
  auto dir = tmp_dir("pipe_train");
  auto o = base_options(write_file(dir, kRecords));
  o.num_epochs = 2;
  o.shuffle_buffer_size = 32;
  Pipeline p(o);
  auto batches = drain(p);
  ASSERT_EQ(batches.size(), 2u * kRecords / 8);
  std::map<int, int> count;
  std::vector<int> order;
  for (const auto& b : batches) {
    EXPECT_EQ(b.size(), 8u);
    for (int i : b) {
      ++count[i];
      order.push_back(i);
    }
  }
  for (int i = 0; i < kRecords; ++i) EXPECT_EQ(count[i], 2) << i;
  std::vector<int> sorted_first(order.begin(), order.begin() + kRecords);
  std::vector<int> identity(kRecords);
  for (int i = 0; i < kRecords; ++i) identity[i] = i;
  EXPECT_NE(sorted_first, identity) << "no shuffling happened";
}

TEST(Pipeline, SameSeedSameBatchesWhateverTheThreadCount) {
  auto dir = tmp_dir("pipe_det");
  auto file = write_file(dir, kRecords);
  auto o = base_options(file);
  o.num_epochs = 2;
  o.seed = 7;
  o.num_threads = 1;
  Pipeline a(o);
  o.num_threads = 3;
  o.num_parallel_batches = 2;
  o.prefetch_batches = 1;
  Pipeline b(o);
  EXPECT_EQ(drain(a), drain(b));
  o.seed = 8;
  Pipeline c(o);
  o.seed = 7;
  Pipeline d(o);
  EXPECT_NE(drain(c), drain(d));
}

TEST(Pipeline, EachEpochIsShuffledAfresh) {
  auto dir = tmp_dir("pipe_reshuffle");
  auto o = base_options(write_file(dir, kRecords));
  o.num_epochs = 3;
  o.shuffle_buffer_size = kRecords;
  Pipeline p(o);
  std::vector<int> order;
  for (const auto& b : drain(p)) order.insert(order.end(), b.begin(), b.end());
  ASSERT_EQ(order.size(), 3u * kRecords);
  std::vector<int> first(order.begin(), order.begin() + kRecords);
  std::vector<int> second(order.begin() + kRecords, order.begin() + 2 * kRecords);
  EXPECT_NE(first, second) << "the second epoch repeats the first one's order";
}

TEST(Pipeline, CacheReadsTheFilesOnceAndChangesNoBatch) {
  auto dir = tmp_dir("pipe_cache");
  auto o = base_options(write_file(dir, kRecords));
  o.num_epochs = 3;
  o.seed = 3;
  Pipeline uncached(o);
  auto expected = drain(uncached);
  EXPECT_EQ(uncached.stats().records_read, 3 * kRecords);
  o.cache = true;
  Pipeline cached(o);
  EXPECT_EQ(drain(cached), expected);
  EXPECT_EQ(cached.stats().records_read, kRecords);
  EXPECT_EQ(cached.stats().epochs_started, 3);
}

// Every batch's images and labels, whole.
std::vector<std::pair<torch::Tensor, torch::Tensor>> drain_tensors(Pipeline& p) {
  std::vector<std::pair<torch::Tensor, torch::Tensor>> out;
  while (auto b = p.next()) out.emplace_back(b->images, b->labels);
  return out;
}

void expect_same_batches(const std::vector<std::pair<torch::Tensor, torch::Tensor>>& a,
                         const std::vector<std::pair<torch::Tensor, torch::Tensor>>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::equal(a[i].first, b[i].first)) << "batch " << i;
    EXPECT_TRUE(torch::equal(a[i].second, b[i].second)) << "batch " << i;
  }
}

// datasets_use_caching with the decoded form: later epochs preprocess the
// kept pixels, the batches stay bit for bit, random draws included.
TEST(Pipeline, DecodedCacheDecodesEachImageOnceAndChangesNoBatch) {
  auto dir = tmp_dir("pipe_decoded_cache");
  auto o = base_options(write_file(dir, kRecords));
  o.num_epochs = 3;
  o.seed = 5;
  preprocessing::PreprocessOptions po;
  po.augment.policy = "trivialaugment";
  po.augment.random_erasing_prob = 0.5;
  o.preprocess = preprocessing::get_preprocessing("lenet", o.shape, true, po);
  Pipeline uncached(o);
  const auto expected = drain_tensors(uncached);
  EXPECT_EQ(uncached.stats().images_from_cache, 0);
  o.cache = true;
  o.preprocess_decoded = preprocessing::get_decoded_preprocessing("lenet", o.shape, true, po);
  Pipeline cached(o);
  expect_same_batches(drain_tensors(cached), expected);
  const auto st = cached.stats();
  EXPECT_EQ(st.records_read, kRecords);
  EXPECT_EQ(st.images_decoded, 3 * kRecords);
  EXPECT_EQ(st.images_from_cache, 2 * kRecords);
  EXPECT_EQ(st.cache_bytes, kRecords * 28 * 28);
  EXPECT_GE(st.cache_estimate_bytes, kRecords * 28 * 28);
  EXPECT_LE(st.cache_estimate_bytes, kRecords * (28 * 28 + 1024));
}

// The TF-slim functions' decoded forms: vgg's random crop and flip on RGB
// PNGs, and inception on JPEGs as with fast_jpeg_decode off.
TEST(Pipeline, DecodedCacheGivesTheSlimFunctionsOutput) {
  auto dir = tmp_dir("pipe_decoded_cache_slim");
  for (const std::string name : {"vgg", "inception"}) {
    const auto path = (dir / (name + ".tfrecord")).string();
    {
      io::TFRecordWriter w(path);
      for (int i = 0; i < 40; ++i) {
        io::Image img;
        img.height = 40 + i % 7;
        img.width = 48 - i % 5;
        img.channels = 3;
        img.pixels.resize(size_t(img.height) * img.width * 3);
        for (size_t k = 0; k < img.pixels.size(); ++k) img.pixels[k] = uint8_t(k * 7 + i * 13);
        io::ImageRecord r;
        r.encoded = name == "vgg" ? io::encode_png(img) : io::encode_jpeg(img);
        r.label = i % 10;
        w.write(io::encode_image_example(r));
      }
      w.close();
    }
    PipelineOptions o;
    o.files = {path};
    o.batch_size = 8;
    o.channels = 3;
    o.num_classes = 10;
    o.shape = {3, 32, 32};
    o.num_epochs = 3;
    o.shuffle_buffer_size = 16;
    o.num_threads = 2;
    o.seed = 11;
    preprocessing::PreprocessOptions po;
    po.fast_jpeg_decode = false;
    o.preprocess = preprocessing::get_preprocessing(name, o.shape, true, po);
    Pipeline uncached(o);
    const auto expected = drain_tensors(uncached);
    o.cache = true;
    po.fast_jpeg_decode = true;  // the decoded form decodes whole anyway
    o.preprocess = preprocessing::get_preprocessing(name, o.shape, true, po);
    o.preprocess_decoded = preprocessing::get_decoded_preprocessing(name, o.shape, true, po);
    Pipeline cached(o);
    SCOPED_TRACE(name);
    expect_same_batches(drain_tensors(cached), expected);
    EXPECT_EQ(cached.stats().records_read, 40);
    // Two copies decoding at once: the second waits for the first's pixels.
    EXPECT_EQ(cached.stats().images_from_cache, 2 * 40);
  }
}

// A cache that would not fit is refused before anything is read, naming
// its size; the records as read count their bytes instead.
TEST(Pipeline, CacheOverItsBudgetIsRefusedWithItsSize) {
  auto dir = tmp_dir("pipe_cache_budget");
  auto o = base_options(write_file(dir, kRecords));
  o.num_epochs = 2;
  o.cache = true;
  o.preprocess_decoded = preprocessing::get_decoded_preprocessing("lenet", o.shape, true);
  o.cache_budget_bytes = kRecords * 28 * 28;  // the pixels alone, no bookkeeping
  try {
    Pipeline p(o);
    FAIL() << "a cache over its budget was accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("datasets_use_caching: the decoded images of 96 records"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("cache_budget_bytes"), std::string::npos) << what;
    EXPECT_NE(what.find("datasets_use_caching=False"), std::string::npos) << what;
  }
  o.cache_budget_bytes = kRecords * (28 * 28 + 1024);
  Pipeline fits(o);
  EXPECT_EQ(drain(fits).size(), 2u * kRecords / 8);
  // Records as read: their bytes (a PNG of one grey value is far smaller
  // than its pixels).
  o.preprocess_decoded = nullptr;
  o.cache_budget_bytes = kRecords * (28 * 28);
  Pipeline raw(o);
  EXPECT_GT(raw.stats().cache_estimate_bytes, 0);
  EXPECT_LT(raw.stats().cache_estimate_bytes, kRecords * 28 * 28);
}

TEST(Pipeline, SkipBatchesResumesAtTheSamePosition) {
  auto dir = tmp_dir("pipe_skip");
  auto o = base_options(write_file(dir, kRecords));
  o.num_epochs = 3;
  o.cache = true;
  Pipeline full(o);
  auto all = drain(full);
  o.skip_batches = 13;
  Pipeline resumed(o);
  auto rest = drain(resumed);
  ASSERT_EQ(rest.size(), all.size() - 13);
  EXPECT_TRUE(std::equal(rest.begin(), rest.end(), all.begin() + 13));
}

// With skip_corrupt_records the one bad record of the 16 is skipped and
// counted, and the other 15 arrive.
void expect_one_of_16_skipped(PipelineOptions o) {
  o.skip_corrupt = true;
  Pipeline p(o);
  int n = 0;
  for (const auto& b : drain(p)) n += static_cast<int>(b.size());
  EXPECT_EQ(n, 15);
  EXPECT_EQ(p.stats().records_skipped, 1);
}

TEST(Pipeline, BadLabelFailsWithLocationOrIsSkipped) {
  auto dir = tmp_dir("pipe_label");
  auto file = write_file(dir, 16, /*bad_label_at=*/5);
  auto o = base_options(file);
  o.is_training = false;
  {
    Pipeline p(o);
    try {
      drain(p);
      FAIL() << "expected DataError";
    } catch (const DataError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("mnist_train.tfrecord"), std::string::npos) << msg;
      EXPECT_NE(msg.find("record 5"), std::string::npos) << msg;
      EXPECT_NE(msg.find("label 42"), std::string::npos) << msg;
    }
  }
  expect_one_of_16_skipped(o);
}

TEST(Pipeline, CorruptRecordFailsOrIsCounted) {
  auto dir = tmp_dir("pipe_crc");
  auto file = write_file(dir, 16);
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);  // inside record 0's data
    char c;
    f.seekg(40);
    f.get(c);
    f.seekp(40);
    f.put(static_cast<char>(c ^ 0x1));
  }
  auto o = base_options(file);
  o.is_training = false;
  {
    Pipeline p(o);
    EXPECT_THROW(drain(p), DataError);
  }
  expect_one_of_16_skipped(o);
}

TEST(Pipeline, MissingFileIsADataError) {
  auto o = base_options((fs::path(FASTNN_TEST_TMP) / "nope.tfrecord").string());
  Pipeline p(o);
  EXPECT_THROW(p.next(), DataError);
}

TEST(ConvertMnist, IdxRoundTripAndMalformedInput) {
  auto dir = tmp_dir("convert_idx");
  // 3 images of 2x2 and their labels, written as plain idx files.
  auto put_be32 = [](std::string& s, uint32_t v) {
    for (int i = 3; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  std::string img = {0, 0, 8, 3}, lab = {0, 0, 8, 1};
  put_be32(img, 3);
  put_be32(img, 2);
  put_be32(img, 2);
  for (int i = 0; i < 12; ++i) img.push_back(static_cast<char>(i * 20));
  put_be32(lab, 3);
  lab += std::string("\x01\x02\x03", 3);
  for (const char* stem : {"train", "t10k"}) {
    std::ofstream(dir / (std::string(stem) + "-images-idx3-ubyte"), std::ios::binary) << img;
    std::ofstream(dir / (std::string(stem) + "-labels-idx1-ubyte"), std::ios::binary) << lab;
  }
  ConvertOptions co;
  co.input_dir = dir.string();
  co.output_dir = (dir / "out").string();
  co.class_names = {"a", "b", "c", "d"};
  auto res = convert_mnist(co);
  ASSERT_EQ(res.size(), 2u);
  EXPECT_EQ(res[0].examples, 3);
  io::TFRecordReader r(io::open_file((dir / "out" / "mnist_train.tfrecord").string()));
  std::string rec;
  int n = 0;
  while (r.next(&rec)) {
    auto ex = io::decode_image_example(rec);
    EXPECT_EQ(ex.label, n + 1);
    EXPECT_EQ(ex.format, "png");
    auto im = io::decode_image(ex.encoded);
    EXPECT_EQ(im.height, 2);
    EXPECT_EQ(im.pixels[0], n * 4 * 20);
    ++n;
  }
  EXPECT_EQ(n, 3);
  std::ifstream labels(dir / "out" / "labels.txt");
  std::string line;
  std::getline(labels, line);
  EXPECT_EQ(line, "0:a");
  // Existing outputs are refused unless overwrite is asked for.
  EXPECT_THROW(convert_mnist(co), ConfigError);
  // A truncated payload is a data error naming the file.
  std::ofstream(dir / "train-labels-idx1-ubyte", std::ios::binary) << lab.substr(0, lab.size() - 1);
  co.overwrite = true;
  try {
    convert_mnist(co);
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("train-labels-idx1-ubyte"), std::string::npos);
  }
}

}  // namespace
}  // namespace fastnn::datasets

namespace fastnn::datasets {
namespace {

TEST(Pipeline, SyntheticDataIsDeterministicAndInRange) {
  PipelineOptions o;
  o.synthetic_samples = 64;
  o.batch_size = 16;
  o.num_epochs = 2;
  o.num_classes = 7;
  o.shape = {3, 8, 8};
  o.num_threads = 2;
  Pipeline a(o), b(o);
  int batches = 0;
  while (auto x = a.next()) {
    auto y = b.next();
    ASSERT_TRUE(y.has_value());
    EXPECT_TRUE(torch::equal(x->images, y->images));
    EXPECT_TRUE(torch::equal(x->labels, y->labels));
    EXPECT_LE(x->images.abs().max().item<float>(), 1.0f);
    EXPECT_GE(x->labels.min().item<int64_t>(), 0);
    EXPECT_LT(x->labels.max().item<int64_t>(), 7);
    ++batches;
  }
  EXPECT_EQ(batches, 8);  // 2 epochs of 64 in batches of 16
}

// A stop request ends a wait for a batch that is not coming (the
// workers stuck here as behind a hung file system), within its 100 ms poll.
TEST(Pipeline, StopRequestEndsAWaitForABatch) {
  auto dir = testing::fresh_dir("pipe_stop_request");
  auto o = testing::eval_options({testing::write_id_file(dir / "a.tfrecord", 0, 8)});
  std::atomic<bool> release{false}, stop{false};
  auto decode = o.preprocess;
  o.preprocess = [&release, decode](const preprocessing::EncodedImage& in, std::mt19937_64& rng,
                                    float* out) {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    decode(in, rng, out);
  };
  o.stop_requested = [&stop] { return stop.load(); };
  Pipeline p(o);
  std::thread stopper([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop = true;
  });
  EXPECT_FALSE(p.next().has_value());
  EXPECT_TRUE(stop);
  stopper.join();
  release = true;
  stop = false;
  EXPECT_TRUE(p.next().has_value());  // the wait goes on once asked again
}

}  // namespace
}  // namespace fastnn::datasets
