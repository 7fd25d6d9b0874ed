// The dataset name table on small generated files of each layout: file
// names, split sizes, classes, labels_offset, image_folder's split, and the
// errors for missing or empty file sets.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <set>

#include "datasets/dataset_factory.h"
#include "datasets/image_folder.h"
#include "datasets/manifest.h"
#include "fastnn/errors.h"
#include "fastnn/hparams.h"
#include "fastnn/pipeline.h"
#include "src/train/builder.h"
#include "tests/datasets/test_data.h"
#include "tests/error_of.h"

namespace fastnn::datasets {
namespace {
namespace fs = std::filesystem;
using testing::example_of;
using testing::fresh_dir;
using testing::png_of;
using testing::write_records;

// The dataset as the trainer resolves it: the keys through the builder's
// conversion (train::dataset_options, which keeps where each was set).
DatasetInfo get_dataset(const HParams& hp, const std::string& split) {
  return datasets::get_dataset(train::dataset_options(hp), split);
}
bool has_split(const HParams& hp, const std::string& split) {
  return datasets::has_split(train::dataset_options(hp), split);
}

HParams hparams(const std::string& name, const fs::path& dir) {
  HParams hp;
  hp.dataset_name = name;
  hp.dataset_dir = dir.string();
  return hp;
}

std::vector<std::string> rgb_records(int n, int64_t first_label = 0) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(example_of(png_of(32, 32, 3, 7), first_label + i));
  return out;
}

std::vector<int64_t> values(const at::Tensor& t) {
  auto c = t.contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

std::string message_of(const std::function<void()>& f) {
  return ::fastnn::testing::error_of<std::exception>(f, "(no exception)");
}

TEST(DatasetTable, ListsEveryDataset) {
  const auto names = dataset_names();
  for (const char* n : {"mock", "mnist", "fashion_mnist", "cifar10", "flowers", "imagenet",
                        "tfrecord", "image_folder"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
  EXPECT_THROW(find_dataset("cifar100"), ConfigError);
}

TEST(DatasetTable, Cifar10SingleFilePerSplit) {
  auto dir = fresh_dir("ds_cifar10");
  write_records(dir / "cifar10_train.tfrecord", rgb_records(3));
  write_records(dir / "cifar10_test.tfrecord", rgb_records(2));
  std::ofstream(dir / "labels.txt") << "0:airplane\n1:automobile\n";
  auto hp = hparams("cifar10", dir);
  auto train = get_dataset(hp, "train");
  ASSERT_EQ(train.files.size(), 1u);
  EXPECT_EQ(fs::path(train.files[0]).filename(), "cifar10_train.tfrecord");
  EXPECT_EQ(train.num_samples, 50000);
  EXPECT_EQ(train.num_classes, 10);
  EXPECT_EQ(train.channels, 3);
  EXPECT_EQ(train.labels, (std::vector<std::string>{"airplane", "automobile"}));
  EXPECT_EQ(get_dataset(hp, "test").num_samples, 10000);
  EXPECT_THROW(get_dataset(hp, "validation"), ConfigError);
}

TEST(DatasetTable, FlowersFiveShards) {
  auto dir = fresh_dir("ds_flowers");
  for (int i = 4; i >= 0; --i) {
    write_records(dir / ("flowers_train_0000" + std::to_string(i) + "-of-00005.tfrecord"),
                  rgb_records(2));
  }
  write_records(dir / "flowers_validation_00000-of-00005.tfrecord", rgb_records(1));
  auto hp = hparams("flowers", dir);
  auto train = get_dataset(hp, "train");
  ASSERT_EQ(train.files.size(), 5u);
  EXPECT_EQ(fs::path(train.files[0]).filename(), "flowers_train_00000-of-00005.tfrecord");
  EXPECT_EQ(fs::path(train.files[4]).filename(), "flowers_train_00004-of-00005.tfrecord");
  EXPECT_EQ(train.num_samples, 3320);
  EXPECT_EQ(train.num_classes, 5);
  auto val = get_dataset(hp, "validation");
  EXPECT_EQ(val.files.size(), 1u);
  EXPECT_EQ(val.num_samples, 350);
}

TEST(DatasetTable, ImagenetLayoutAndLabelsOffset) {
  auto dir = fresh_dir("ds_imagenet");
  // Labels 1..4: TF-slim's ImageNet has 0 = background, 1..1000 the classes.
  write_records(dir / "train-00000-of-01024", rgb_records(2, 1));
  write_records(dir / "train-00001-of-01024", rgb_records(2, 3));
  write_records(dir / "validation-00000-of-00128", rgb_records(1, 1));
  auto hp = hparams("imagenet", dir);
  auto train = get_dataset(hp, "train");
  EXPECT_EQ(train.files.size(), 2u);
  EXPECT_EQ(train.num_samples, 1281167);
  EXPECT_EQ(train.num_classes, 1001);
  EXPECT_EQ(get_dataset(hp, "validation").num_samples, 50000);

  auto o = testing::eval_options(train.files, 3, 32);
  o.num_classes = 1000;
  o.labels_offset = 1;
  Pipeline p(o);
  auto b = p.next();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->images.sizes(), (std::vector<int64_t>{4, 3, 32, 32}));
  EXPECT_EQ(values(b->labels), (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(DatasetTable, MissingOrEmptyFilesAreDataErrorsNamingThePattern) {
  auto dir = fresh_dir("ds_missing");
  auto hp = hparams("cifar10", dir);
  auto msg = message_of([&] { get_dataset(hp, "train"); });
  EXPECT_NE(msg.find("cifar10_train.tfrecord"), std::string::npos) << msg;
  EXPECT_THROW(get_dataset(hp, "train"), DataError);

  write_records(dir / "cifar10_train.tfrecord", {});
  msg = message_of([&] { get_dataset(hp, "train"); });
  EXPECT_NE(msg.find("empty"), std::string::npos) << msg;
  EXPECT_THROW(get_dataset(hp, "train"), DataError);

  auto in = hparams("imagenet", dir);
  msg = message_of([&] { get_dataset(in, "validation"); });
  EXPECT_NE(msg.find("validation-[0-9]"), std::string::npos) << msg;

  hp.train_files = "nothing_*.tfrecord";
  msg = message_of([&] { get_dataset(hp, "train"); });
  EXPECT_NE(msg.find("nothing_*.tfrecord"), std::string::npos) << msg;
  EXPECT_THROW(get_dataset(hp, "train"), DataError);
}

TEST(DatasetTable, GenericTfrecordCountsRecordsAndNeedsNumClasses) {
  auto dir = fresh_dir("ds_generic");
  write_records(dir / "part" / "a.tfrecord", rgb_records(3));
  write_records(dir / "part" / "b.tfrecord", rgb_records(4));
  write_records(dir / "val.tfrecord", rgb_records(2));
  std::ofstream(dir / "labels.txt") << "0:x\n1:y\n2:z\n3:w\n";
  auto hp = hparams("tfrecord", dir);
  hp.train_files = "part/*.tfrecord";
  EXPECT_THROW(get_dataset(hp, "train"), ConfigError);  // num_classes missing
  hp.num_classes = 4;
  auto train = get_dataset(hp, "train");
  EXPECT_EQ(train.files.size(), 2u);
  EXPECT_EQ(train.records_per_file, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(train.num_samples, 7);
  EXPECT_EQ(train.num_classes, 4);
  EXPECT_EQ(train.labels.size(), 4u);
  EXPECT_THROW(get_dataset(hp, "test"), ConfigError);  // no eval_files
  hp.eval_files = "val.tfrecord";
  EXPECT_EQ(get_dataset(hp, "test").num_samples, 2);
  hp.eval_files = "empty.tfrecord";
  write_records(dir / "empty.tfrecord", {});
  EXPECT_THROW(get_dataset(hp, "test"), DataError);
}

// A converter killed by SIGTERM leaves NAME.tmp-PID beside the shards,
// which train_files=* must not read as data.
TEST(DatasetTable, GlobsNeverMatchTemporaries) {
  auto dir = fresh_dir("ds_temporaries");
  write_records(dir / "cifar10_train.tfrecord", rgb_records(3));
  // Whether the writer is alive (this process) or not, a temporary is no data.
  write_records(dir / ("cifar10_train.tfrecord.tmp-" + std::to_string(getpid())), rgb_records(2));
  write_records(dir / "cifar10_test.tfrecord.tmp-999999999", rgb_records(2));
  auto hp = hparams("tfrecord", dir);
  hp.num_classes = 10;
  for (const char* files : {"*", "cifar10_train*", "*.tfrecord*"}) {
    hp.train_files = files;
    const auto train = get_dataset(hp, "train");
    ASSERT_EQ(train.files.size(), 1u) << files;
    EXPECT_EQ(fs::path(train.files[0]).filename(), "cifar10_train.tfrecord");
    EXPECT_EQ(train.num_samples, 3) << files;
  }
  EXPECT_EQ(expand_file_list("cifar10_*", dir.string()).size(), 1u);
  // A pattern that matches only temporaries matches nothing.
  const std::string msg = message_of([&] { expand_file_list("*.tmp-*", dir.string()); });
  EXPECT_NE(msg.find("no file matches '*.tmp-*'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unfinished"), std::string::npos) << msg;
  EXPECT_THROW(expand_file_list("*.tmp-*", dir.string()), DataError);
}

// The manifest convert_dataset writes decides a split's files,
// not the glob; a half-written, changed or damaged one is a data error
// naming it (the converter's side: faults_kill_during_convert).
TEST(DatasetTable, ConvertedFolderIsReadByItsManifest) {
  auto dir = fresh_dir("ds_manifest");
  auto gray = [](int n) {
    std::vector<std::string> out(n, example_of(png_of(28, 28, 1, 1), 1));
    return out;
  };
  write_records(dir / "mnist_train.tfrecord", gray(3));  // another conversion's
  Manifest m{true, {}};
  for (const char* name :
       {"mnist_train_00000-of-00002.tfrecord", "mnist_train_00001-of-00002.tfrecord"}) {
    write_records(dir / name, gray(2));
    m.files.push_back({"train", name, 2, fs::file_size(dir / name)});
  }
  const std::string path = manifest_path(dir.string(), "mnist");
  write_manifest(path, m);
  auto hp = hparams("mnist", dir);
  const auto info = get_dataset(hp, "train");
  ASSERT_EQ(info.files.size(), 2u);  // the glob finds 3
  EXPECT_EQ(fs::path(info.files[0]).filename(), m.files[0].name);
  std::string msg = message_of([&] { get_dataset(hp, "test"); });
  EXPECT_NE(msg.find("lists no file of split 'test'"), std::string::npos) << msg;

  std::ofstream(dir / m.files[1].name, std::ios::app) << "x";
  msg = message_of([&] { get_dataset(hp, "train"); });
  EXPECT_NE(msg.find(m.files[1].name + "' has "), std::string::npos) << msg;
  EXPECT_NE(msg.find(path), std::string::npos) << msg;

  m.complete = false;
  write_manifest(path, m);
  for (const std::string files : {"", "mnist_train*.tfrecord"}) {
    hp.train_files = files;
    msg = message_of([&] { get_dataset(hp, "train"); });
    EXPECT_NE(msg.find("interrupted"), std::string::npos) << files << ": " << msg;
    EXPECT_THROW(get_dataset(hp, "train"), DataError);
  }
  hp.train_files = "";
  std::ofstream(path) << "junk\n";
  msg = message_of([&] { get_dataset(hp, "train"); });
  EXPECT_NE(msg.find("not a convert_dataset manifest"), std::string::npos) << msg;
  fs::remove(path);
  fs::create_symlink("/dev/zero", path);
  msg = message_of([&] { get_dataset(hp, "train"); });
  EXPECT_NE(msg.find("not a regular file"), std::string::npos) << msg;
  fs::remove(path);
  EXPECT_EQ(get_dataset(hp, "train").files.size(), 3u);  // no manifest: the glob
}

// dir/<class>/<i>.png for 3 classes x 10 images, plus files to ignore.
fs::path make_folder(const std::string& name) {
  auto dir = fresh_dir(name);
  const char* classes[] = {"tulips", "daisy", "roses"};
  for (const char* c : classes) {
    fs::create_directories(dir / c);
    for (int i = 0; i < 10; ++i) {
      std::ofstream(dir / c / (std::to_string(i) + (i % 2 ? ".png" : ".PNG")))
          << png_of(8, 8, 3, static_cast<uint8_t>(i));
    }
    std::ofstream(dir / c / "notes.txt") << "not an image";
  }
  fs::create_directories(dir / ".cache");
  std::ofstream(dir / "LICENSE.txt") << "x";
  return dir;
}

TEST(ImageFolder, SortedClassesAndADeterministicDisjointSplit) {
  auto dir = make_folder("ds_folder");
  auto train = list_image_folder(dir.string(), "train", 0.1, 0);
  auto val = list_image_folder(dir.string(), "validation", 0.1, 0);
  EXPECT_EQ(train.class_names, (std::vector<std::string>{"daisy", "roses", "tulips"}));
  EXPECT_EQ(train.files.size(), 27u);
  EXPECT_EQ(val.files.size(), 3u);
  std::set<std::string> all(train.files.begin(), train.files.end());
  for (const auto& f : val.files) EXPECT_TRUE(all.insert(f).second) << f << " in both";
  EXPECT_EQ(all.size(), 30u);
  for (size_t i = 0; i < train.files.size(); ++i) {
    const auto cls = fs::path(train.files[i]).parent_path().filename().string();
    EXPECT_EQ(train.class_names[train.labels[i]], cls);
  }
  EXPECT_EQ(list_image_folder(dir.string(), "validation", 0.1, 0).files, val.files);
  bool differs = false;
  for (uint64_t seed = 1; seed < 5; ++seed) {
    differs |= list_image_folder(dir.string(), "validation", 0.1, seed).files != val.files;
  }
  EXPECT_TRUE(differs);
  EXPECT_THROW(list_image_folder(dir.string(), "test", 0.1, 0), ConfigError);
  EXPECT_THROW(list_image_folder(dir.string(), "train", 1.0, 0), ConfigError);
  EXPECT_THROW(list_image_folder(dir.string(), "validation", 0.0, 0), DataError);
  EXPECT_THROW(list_image_folder((dir / "nope").string(), "train", 0.1, 0), DataError);
  EXPECT_THROW(list_image_folder(fresh_dir("ds_folder_empty").string(), "train", 0.1, 0),
               DataError);
}

TEST(ImageFolder, DatasetRowFeedsThePipelineFromFiles) {
  auto dir = make_folder("ds_folder_pipe");
  auto hp = hparams("image_folder", dir);
  hp.validation_fraction = 0.2;
  auto info = get_dataset(hp, "train");
  EXPECT_EQ(info.num_samples, 24);
  EXPECT_EQ(info.num_classes, 3);
  EXPECT_EQ(info.file_labels.size(), info.files.size());
  EXPECT_EQ(get_dataset(hp, "validation").num_samples, 6);

  auto o = testing::eval_options(info.files, 3, 8);
  o.file_labels = info.file_labels;
  o.batch_size = 10;
  o.num_classes = 3;
  Pipeline p(o);
  std::vector<int64_t> labels;
  while (auto b = p.next()) {
    EXPECT_EQ(b->images.size(1), 3);
    for (int64_t l : values(b->labels)) labels.push_back(l);
  }
  EXPECT_EQ(labels, info.file_labels);
  EXPECT_EQ(p.stats().images_decoded, 24);
}

// A symbolic link loop among the classes or the images is a data error
// naming it (not std::filesystem's "Too many levels of symbolic links",
// exit 1); a dangling link named like an image is listed, so that reading
// it is a bad image under the data policy: exit 3 naming it, or skipped
// and counted (never skipped silently).
TEST(ImageFolder, LinkLoopsAreDataErrorsAndDanglingLinksBadImages) {
  for (const char* where : {"daisy/loop.png", "loop_class"}) {
    auto dir = make_folder(std::string("ds_folder_loop_") + (where[0] == 'd' ? "img" : "cls"));
    fs::create_symlink(dir / where, dir / where);
    const std::string msg = message_of([&] { list_image_folder(dir.string(), "train", 0.1, 0); });
    EXPECT_NE(msg.find((dir / where).string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("symbolic link"), std::string::npos) << msg;
    EXPECT_THROW(list_image_folder(dir.string(), "train", 0.1, 0), DataError);
  }
  auto classes = make_folder("ds_folder_dangling_class");
  fs::create_symlink(classes / "gone", classes / "lilies");
  const std::string lost =
      message_of([&] { list_image_folder(classes.string(), "train", 0.1, 0); });
  EXPECT_NE(lost.find((classes / "lilies").string() + "': a dangling symbolic link"),
            std::string::npos)
      << lost;
  auto dir = make_folder("ds_folder_dangling");
  fs::create_symlink(dir / "gone.png", dir / "roses" / "dangling.png");
  auto hp = hparams("image_folder", dir);
  hp.validation_fraction = 0.0;
  auto info = get_dataset(hp, "train");
  EXPECT_EQ(info.num_samples, 31);
  auto o = testing::eval_options(info.files, 3, 8);
  o.file_labels = info.file_labels;
  o.num_classes = 3;
  const std::string msg = message_of([&] {
    Pipeline p(o);
    while (p.next()) {
    }
  });
  EXPECT_NE(msg.find((dir / "roses" / "dangling.png").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("dangling symbolic link"), std::string::npos) << msg;
  o.skip_corrupt = true;
  o.max_skipped_share = 1;
  Pipeline p(o);
  int64_t n = 0;
  while (auto b = p.next()) n += b->labels.size(0);
  EXPECT_EQ(n, 30);
  EXPECT_EQ(p.stats().skipped_bad_image, 1);
}

// The labels a pipeline over `info` yields in one evaluation pass.
std::vector<int64_t> labels_read(const DatasetInfo& info) {
  auto o = testing::eval_options(info.files);
  o.records_per_file = info.records_per_file;
  o.holdout_fraction = info.holdout.fraction;
  o.holdout_seed = info.holdout.seed;
  o.holdout_keep = info.holdout.keep;
  o.num_classes = 1000;
  Pipeline p(o);
  std::vector<int64_t> out;
  while (auto b = p.next()) {
    for (int64_t l : values(b->labels)) out.push_back(l);
  }
  return out;
}

// Records labelled 0..n-1, 28x28 gray, in `files` files of a cifar10-style
// layout named for fashion_mnist.
void write_numbered_fmnist(const fs::path& dir, int n_train, int n_test) {
  std::vector<std::string> train, test;
  for (int i = 0; i < n_train; ++i) train.push_back(example_of(png_of(28, 28, 1, 1), i));
  for (int i = 0; i < n_test; ++i) test.push_back(example_of(png_of(28, 28, 1, 2), i));
  write_records(dir / "mnist_train.tfrecord", train);
  write_records(dir / "mnist_test.tfrecord", test);
}

TEST(Holdout, HashSplitIsDeterministicAndNearTheFraction) {
  int held = 0;
  for (int i = 0; i < 20000; ++i) held += is_held_out("a_train.tfrecord", i, 0.1, 0);
  EXPECT_NEAR(held, 2000, 150);  // +-3.5 sigma of a binomial(20000, 0.1)
  EXPECT_FALSE(is_held_out("a_train.tfrecord", 5, 0.0, 0));
  // The same record is decided the same way; another seed or file name
  // makes another split.
  int same_seed = 0, other_seed = 0, other_file = 0;
  for (int i = 0; i < 2000; ++i) {
    const bool h = is_held_out("a_train.tfrecord", i, 0.5, 7);
    same_seed += h == is_held_out("a_train.tfrecord", i, 0.5, 7);
    other_seed += h == is_held_out("a_train.tfrecord", i, 0.5, 8);
    other_file += h == is_held_out("b_train.tfrecord", i, 0.5, 7);
  }
  EXPECT_EQ(same_seed, 2000);
  EXPECT_LT(other_seed, 1200);
  EXPECT_LT(other_file, 1200);
  Holdout train{0.25, 3, false}, val{0.25, 3, true};
  EXPECT_EQ(count_in_split(train, "x", 1000) + count_in_split(val, "x", 1000), 1000);
}

TEST(Holdout, ValidationIsHeldOutOfTheTrainingRecordsDisjointly) {
  auto dir = fresh_dir("ds_holdout");
  write_numbered_fmnist(dir, 200, 30);
  auto hp = hparams("fashion_mnist", dir);
  // Unset: nothing held out, and fashion_mnist has no validation split.
  EXPECT_FALSE(has_split(hp, "validation"));
  EXPECT_THROW(get_dataset(hp, "validation"), ConfigError);
  EXPECT_EQ(get_dataset(hp, "train").num_samples, 60000);

  hp.validation_fraction = 0.2;
  EXPECT_TRUE(has_split(hp, "validation"));
  const auto train = get_dataset(hp, "train");
  const auto val = get_dataset(hp, "validation");
  EXPECT_EQ(val.files, train.files);  // read out of the training file
  EXPECT_EQ(train.num_samples + val.num_samples, 200);
  EXPECT_GT(val.num_samples, 20);
  EXPECT_LT(val.num_samples, 60);
  // What the pipelines read: exactly the counted records, disjoint, and
  // together every training record once.
  const auto a = labels_read(train), b = labels_read(val);
  EXPECT_EQ(static_cast<int64_t>(a.size()), train.num_samples);
  EXPECT_EQ(static_cast<int64_t>(b.size()), val.num_samples);
  std::set<int64_t> all(a.begin(), a.end());
  all.insert(b.begin(), b.end());
  EXPECT_EQ(all.size(), 200u);
  // The same split every time; another validation_split_seed moves it.
  EXPECT_EQ(labels_read(get_dataset(hp, "validation")), b);
  hp.validation_split_seed = 1;
  EXPECT_NE(labels_read(get_dataset(hp, "validation")), b);
  // The test split is untouched.
  EXPECT_EQ(get_dataset(hp, "test").num_samples, 10000);
  EXPECT_EQ(labels_read(get_dataset(hp, "test")).size(), 30u);
  // Training on the validation split is refused.
  hp.dataset_split_name = "validation";
  EXPECT_NE(message_of([&] {
              get_dataset(hp, "validation");
            }).find("dataset_split_name cannot be 'validation'"),
            std::string::npos);
}

TEST(Holdout, DatasetsWithoutATestSplitServeTheirValidationFilesAsTest) {
  auto dir = fresh_dir("ds_holdout_flowers");
  write_records(dir / "flowers_train_00000-of-00001.tfrecord", rgb_records(40));
  write_records(dir / "flowers_validation_00000-of-00001.tfrecord", rgb_records(5));
  auto hp = hparams("flowers", dir);
  EXPECT_FALSE(has_split(hp, "test"));
  hp.validation_fraction = 0.25;
  EXPECT_TRUE(has_split(hp, "test"));
  const auto test = get_dataset(hp, "test");
  ASSERT_EQ(test.files.size(), 1u);
  EXPECT_EQ(fs::path(test.files[0]).filename(), "flowers_validation_00000-of-00001.tfrecord");
  EXPECT_EQ(test.num_samples, 350);
  const auto val = get_dataset(hp, "validation");
  EXPECT_EQ(fs::path(val.files[0]).filename(), "flowers_train_00000-of-00001.tfrecord");
  EXPECT_EQ(val.num_samples + get_dataset(hp, "train").num_samples, 40);
}

TEST(Holdout, GenericTfrecordHoldsOutOfTrainFiles) {
  auto dir = fresh_dir("ds_holdout_generic");
  write_records(dir / "part-0.tfrecord", rgb_records(30));
  write_records(dir / "part-1.tfrecord", rgb_records(30));
  auto hp = hparams("tfrecord", dir);
  hp.train_files = "part-*.tfrecord";
  hp.num_classes = 100;
  hp.validation_fraction = 0.5;
  const auto train = get_dataset(hp, "train");
  const auto val = get_dataset(hp, "validation");
  ASSERT_EQ(train.records_per_file.size(), 2u);
  EXPECT_EQ(train.records_per_file[0] + val.records_per_file[0], 30);
  EXPECT_EQ(train.records_per_file[1] + val.records_per_file[1], 30);
  EXPECT_EQ(train.num_samples + val.num_samples, 60);
}

}  // namespace
}  // namespace fastnn::datasets
