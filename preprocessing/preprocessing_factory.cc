#include "preprocessing/preprocessing_factory.h"

#include "fastnn/errors.h"
#include "preprocessing/lenet_preprocessing.h"
#include "preprocessing/slim_preprocessing.h"
#include "src/config/value_parse.h"

namespace fastnn::preprocessing {
namespace {

/// A preprocessing in both forms: from encoded bytes and from an image
/// decoded whole.
struct Functions {
  PreprocessFn encoded;
  DecodedPreprocessFn decoded;
};

struct Row {
  const char* name;
  Functions (*make)(const OutputShape& shape, bool is_training, const PreprocessOptions& options);
};

// Functions whose encoded form decodes the whole image, then runs the
// decoded form.
Functions decoding_whole(DecodedPreprocessFn decoded) {
  return {[decoded](const EncodedImage& in, std::mt19937_64& rng, float* out) {
            decoded(io::decode_image(in.bytes, in.channels), rng, out);
          },
          decoded};
}

// LeNet has no random crop or flip: a policy runs on (a copy of) the
// decoded image, before the crop-or-pad.
Functions make_lenet(const OutputShape& shape, bool is_training, const PreprocessOptions& options) {
  AugmentFn augment = is_training ? make_augment(options.augment) : AugmentFn{};
  if (augment) {
    return decoding_whole([shape, augment](const io::Image& in, std::mt19937_64& rng, float* out) {
      io::Image img = in;
      augment_hwc(img.pixels.data(), img.channels, img.height, img.width, augment, rng);
      lenet_preprocess(img, shape, out);
    });
  }
  return decoding_whole([shape](const io::Image& in, std::mt19937_64&, float* out) {
    lenet_preprocess(in, shape, out);
  });
}

// The TF-slim function on the whole decoded image.
template <void (*Train)(const io::Image&, const OutputShape&, std::mt19937_64&, float*,
                        const AugmentFn&),
          void (*Eval)(const io::Image&, const OutputShape&, float*)>
Functions make_slim(const OutputShape& shape, bool is_training, const PreprocessOptions& options) {
  if (is_training) {
    AugmentFn augment = make_augment(options.augment);
    return decoding_whole([shape, augment](const io::Image& in, std::mt19937_64& rng, float* out) {
      Train(in, shape, rng, out, augment);
    });
  }
  return decoding_whole(
      [shape](const io::Image& in, std::mt19937_64&, float* out) { Eval(in, shape, out); });
}

// Inception decodes inside: only the crop, possibly DCT-downscaled. Its
// decoded form is the whole image's (fast_jpeg_decode off).
Functions make_inception(const OutputShape& shape, bool is_training,
                         const PreprocessOptions& options) {
  const bool fast = options.fast_jpeg_decode;
  if (is_training) {
    AugmentFn augment = make_augment(options.augment);
    return {[shape, fast, augment](const EncodedImage& in, std::mt19937_64& rng, float* out) {
              inception_train(in, shape, fast, rng, out, augment);
            },
            [shape, augment](const io::Image& in, std::mt19937_64& rng, float* out) {
              inception_train(in, shape, rng, out, augment);
            }};
  }
  return {[shape, fast](const EncodedImage& in, std::mt19937_64&, float* out) {
            inception_eval(in, shape, fast, out);
          },
          [shape](const io::Image& in, std::mt19937_64&, float* out) {
            inception_eval(in, shape, out);
          }};
}

const Row kTable[] = {
    {"inception", make_inception},
    {"vgg", make_slim<vgg_train, vgg_eval>},
    {"cifarnet", make_slim<cifarnet_train, cifarnet_eval>},
    {"lenet", make_lenet},
};

// The row's functions, with random erasing on the finished (normalized)
// input in training, as torchvision's recipes apply it after Normalize.
Functions make_functions(const std::string& name, const OutputShape& shape, bool is_training,
                         const PreprocessOptions& options) {
  for (const auto& r : kTable) {
    if (name != r.name) continue;
    Functions f = r.make(shape, is_training, options);
    const double p = options.augment.random_erasing_prob;
    make_augment(options.augment);  // checks the options in eval too
    if (!is_training || p == 0.0) return f;
    return {[fn = f.encoded, shape, p](const EncodedImage& in, std::mt19937_64& rng, float* out) {
              fn(in, rng, out);
              random_erase(out, shape, p, rng);
            },
            [fn = f.decoded, shape, p](const io::Image& in, std::mt19937_64& rng, float* out) {
              fn(in, rng, out);
              random_erase(out, shape, p, rng);
            }};
  }
  throw ConfigError(
      "preprocessing_name: '" + name +
      "' is not an available preprocessing; available: " + join_list(preprocessing_names()));
}

}  // namespace

std::vector<std::string> preprocessing_names() { return names_of(kTable); }

PreprocessFn get_preprocessing(const std::string& name, const OutputShape& shape, bool is_training,
                               const PreprocessOptions& options) {
  return make_functions(name, shape, is_training, options).encoded;
}

DecodedPreprocessFn get_decoded_preprocessing(const std::string& name, const OutputShape& shape,
                                              bool is_training, const PreprocessOptions& options) {
  return make_functions(name, shape, is_training, options).decoded;
}

}  // namespace fastnn::preprocessing
