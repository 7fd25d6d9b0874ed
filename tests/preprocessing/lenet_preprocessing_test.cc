#include "preprocessing/lenet_preprocessing.h"

#include <gtest/gtest.h>

#include "fastnn/errors.h"

namespace fastnn::preprocessing {
namespace {

io::Image gray(int h, int w, uint8_t v) {
  io::Image img;
  img.height = h;
  img.width = w;
  img.channels = 1;
  img.pixels.assign(size_t(h) * w, v);
  return img;
}

TEST(LenetPreprocessing, ScalesToMinusOneOne) {
  auto img = gray(28, 28, 0);
  img.pixels[1] = 255;
  img.pixels[2] = 128;
  std::vector<float> out(28 * 28);
  lenet_preprocess(img, {1, 28, 28}, out.data());
  EXPECT_FLOAT_EQ(out[0], -1.0f);
  EXPECT_FLOAT_EQ(out[1], 127.0f / 128.0f);
  EXPECT_FLOAT_EQ(out[2], 0.0f);
}

TEST(LenetPreprocessing, CropsCentreAndPadsWithZeroPixels) {
  // 30x30 -> 28x28 crops one pixel off each side.
  auto big = gray(30, 30, 200);
  big.pixels[1 * 30 + 1] = 0;  // becomes output (0, 0)
  std::vector<float> out(28 * 28);
  lenet_preprocess(big, {1, 28, 28}, out.data());
  EXPECT_FLOAT_EQ(out[0], -1.0f);
  EXPECT_FLOAT_EQ(out[1], (200 - 128) / 128.0f);
  // 26x26 -> 28x28 pads one zero pixel on each side.
  auto small = gray(26, 26, 128);
  lenet_preprocess(small, {1, 28, 28}, out.data());
  EXPECT_FLOAT_EQ(out[0], -1.0f);
  EXPECT_FLOAT_EQ(out[28 + 1], 0.0f);
  EXPECT_FLOAT_EQ(out[27 * 28 + 27], -1.0f);
}

TEST(LenetPreprocessing, ChannelMismatchIsADataError) {
  auto img = gray(28, 28, 1);
  std::vector<float> out(3 * 28 * 28);
  EXPECT_THROW(lenet_preprocess(img, {3, 28, 28}, out.data()), DataError);
}

TEST(PreprocessingFactory, UnknownNameListsValidOnes) {
  try {
    get_preprocessing("lenett", {1, 28, 28}, true);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("lenet"), std::string::npos);
  }
}

}  // namespace
}  // namespace fastnn::preprocessing
