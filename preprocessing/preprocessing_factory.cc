#include "preprocessing/preprocessing_factory.h"

#include "fastnn/errors.h"
#include "fastnn/hparams.h"
#include "preprocessing/lenet_preprocessing.h"
#include "preprocessing/slim_preprocessing.h"

namespace fastnn::preprocessing {
namespace {

struct Row {
  const char* name;
  PreprocessFn (*make)(const OutputShape& shape, bool is_training,
                       const PreprocessOptions& options);
};

// LeNet has no random crop or flip: a policy runs on the decoded image,
// before the crop-or-pad.
PreprocessFn make_lenet(const OutputShape& shape, bool is_training,
                        const PreprocessOptions& options) {
  AugmentFn augment = is_training ? make_augment(options.augment) : AugmentFn{};
  if (augment) {
    return [shape, augment](const EncodedImage& in, std::mt19937_64& rng, float* out) {
      io::Image img = io::decode_image(in.bytes, in.channels);
      augment_hwc(img.pixels.data(), img.channels, img.height, img.width, augment, rng);
      lenet_preprocess(img, shape, out);
    };
  }
  return [shape](const EncodedImage& in, std::mt19937_64&, float* out) {
    lenet_preprocess(io::decode_image(in.bytes, in.channels), shape, out);
  };
}

// Decodes the whole image, then runs the TF-slim function on the pixels.
template <void (*Train)(const io::Image&, const OutputShape&, std::mt19937_64&, float*,
                        const AugmentFn&),
          void (*Eval)(const io::Image&, const OutputShape&, float*)>
PreprocessFn make_slim(const OutputShape& shape, bool is_training,
                       const PreprocessOptions& options) {
  if (is_training) {
    AugmentFn augment = make_augment(options.augment);
    return [shape, augment](const EncodedImage& in, std::mt19937_64& rng, float* out) {
      Train(io::decode_image(in.bytes, in.channels), shape, rng, out, augment);
    };
  }
  return [shape](const EncodedImage& in, std::mt19937_64&, float* out) {
    Eval(io::decode_image(in.bytes, in.channels), shape, out);
  };
}

// Inception decodes inside: only the crop, possibly DCT-downscaled.
PreprocessFn make_inception(const OutputShape& shape, bool is_training,
                            const PreprocessOptions& options) {
  const bool fast = options.fast_jpeg_decode;
  if (is_training) {
    AugmentFn augment = make_augment(options.augment);
    return [shape, fast, augment](const EncodedImage& in, std::mt19937_64& rng,
                                  float* out) {
      inception_train(in, shape, fast, rng, out, augment);
    };
  }
  return [shape, fast](const EncodedImage& in, std::mt19937_64&, float* out) {
    inception_eval(in, shape, fast, out);
  };
}

const Row kTable[] = {
    {"inception", make_inception},
    {"vgg", make_slim<vgg_train, vgg_eval>},
    {"cifarnet", make_slim<cifarnet_train, cifarnet_eval>},
    {"lenet", make_lenet},
};

}  // namespace

std::vector<std::string> preprocessing_names() {
  std::vector<std::string> out;
  for (const auto& r : kTable) out.push_back(r.name);
  return out;
}

PreprocessFn get_preprocessing(const std::string& name,
                               const OutputShape& shape,
                               bool is_training,
                               const PreprocessOptions& options) {
  for (const auto& r : kTable) {
    if (name != r.name) continue;
    PreprocessFn fn = r.make(shape, is_training, options);
    const double p = options.augment.random_erasing_prob;
    make_augment(options.augment);  // checks the options in eval too
    if (!is_training || p == 0.0) return fn;
    // Random erasing on the finished (normalized) input, as torchvision's
    // recipes apply it after Normalize.
    return [fn, shape, p](const EncodedImage& in, std::mt19937_64& rng, float* out) {
      fn(in, rng, out);
      random_erase(out, shape, p, rng);
    };
  }
  throw ConfigError("preprocessing_name: '" + name +
                    "' is not an available preprocessing; available: " +
                    join_list(preprocessing_names()));
}

}  // namespace fastnn::preprocessing
