"""TensorFlow as the oracle for this port's preprocessing.

TF-slim's preprocessing functions (research/slim/preprocessing; tf-slim's pip
package has none) are written here as the TensorFlow ops they are made of:
inception (and mobilenet_v1, which the model table maps to it), vgg,
cifarnet and lenet, train and eval. Synthetic photographs (smooth fields,
edges and noise; JPEG by tf.io.encode_jpeg at quality 90, 4:2:0, and PNG) of
sizes that reach every branch (crop and pad, up- and downscaling, JPEG DCT
scaling, VGG's half-way sizes) go through this port's tf_oracle_forward,
which prints the random draws of each training image (crop box, flip,
brightness, saturation, contrast, resize side) and writes the output and the
image as it decoded it. Then:
- ops: TF's ops on our decoded pixels with our draws, against our output with
  fast_jpeg_decode=false (whole-image decoding): must be within 1e-5;
- decode: TF's decoder against ours, in 0-255 levels: tf.io.decode_jpeg with
  its default dct_method (INTEGER_FAST, which TF-slim and FastNN use), and
  with INTEGER_ACCURATE (libjpeg's JDCT_ISLOW, ours);
- end to end: TF from the encoded bytes (its decoder, either IDCT, then the
  ops) against our default path (inception: fast_jpeg_decode, which decodes
  only the crop, at a JPEG DCT scale n/8 where the crop is at least twice the
  output size).
Reported (end to end: the largest of the images' max and mean absolute
differences), with the stated bound only on "ops".

Run by scripts/tf_oracle.sh: python preprocessing.py BIN_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

import verdict

TOLERANCE = 1e-5
VGG_MEANS = [123.68, 116.78, 103.94]


# --- TF-slim's functions, as the TensorFlow ops they are made of ---------------

def inception_train(image, size, d):
    image = tf.image.convert_image_dtype(image, tf.float32)
    top, left, h, w = d["crop"]
    image = tf.slice(image, [top, left, 0], [h, w, -1])
    image = tf.compat.v1.image.resize_images(image, [size, size],
                                             tf.compat.v1.image.ResizeMethod.BILINEAR)
    if d["flip"]:
        image = tf.image.flip_left_right(image)
    image = tf.image.adjust_brightness(image, d["brightness"])   # fast_mode: ordering 0
    image = tf.image.adjust_saturation(image, d["saturation"])
    image = tf.clip_by_value(image, 0.0, 1.0)
    return tf.multiply(tf.subtract(image, 0.5), 2.0)


def inception_eval(image, size, _):
    image = tf.image.convert_image_dtype(image, tf.float32)
    image = tf.image.central_crop(image, central_fraction=0.875)
    image = tf.compat.v1.image.resize_bilinear(image[None], [size, size], align_corners=False)[0]
    return tf.multiply(tf.subtract(image, 0.5), 2.0)


def vgg_resize(image, side):
    """_aspect_preserving_resize with _smallest_size_at_least."""
    shape = tf.shape(image)
    height, width = tf.cast(shape[0], tf.float32), tf.cast(shape[1], tf.float32)
    side = tf.cast(tf.convert_to_tensor(side, tf.int32), tf.float32)
    scale = tf.cond(height > width, lambda: side / width, lambda: side / height)
    new_height = tf.cast(tf.math.rint(height * scale), tf.int32)
    new_width = tf.cast(tf.math.rint(width * scale), tf.int32)
    return tf.squeeze(tf.compat.v1.image.resize_bilinear(image[None], [new_height, new_width],
                                                         align_corners=False))


def vgg_train(image, size, d):
    image = vgg_resize(image, d["resize_side"])
    top, left, _, _ = d["crop"]
    image = tf.cast(tf.slice(image, [top, left, 0], [size, size, 3]), tf.float32)
    if d["flip"]:
        image = tf.image.flip_left_right(image)
    return image - VGG_MEANS


def vgg_eval(image, size, _):
    image = vgg_resize(image, 256)
    shape = tf.shape(image)
    top, left = (shape[0] - size) // 2, (shape[1] - size) // 2
    return tf.cast(tf.slice(image, [top, left, 0], [size, size, 3]), tf.float32) - VGG_MEANS


def cifarnet_train(image, size, d):
    image = tf.pad(tf.cast(image, tf.float32), [[4, 4], [4, 4], [0, 0]])
    top, left, _, _ = d["crop"]
    image = tf.slice(image, [top, left, 0], [size, size, 3])     # tf.random_crop's window
    if d["flip"]:
        image = tf.image.flip_left_right(image)
    image = tf.image.adjust_brightness(image, d["brightness"])
    image = tf.image.adjust_contrast(image, d["contrast"])
    return tf.image.per_image_standardization(image)


def cifarnet_eval(image, size, _):
    image = tf.image.resize_with_crop_or_pad(tf.cast(image, tf.float32), size, size)
    return tf.image.per_image_standardization(image)


def lenet(image, size, _):
    image = tf.image.resize_with_crop_or_pad(tf.cast(image, tf.float32), size, size)
    return tf.divide(tf.subtract(image, 128.0), 128.0)


TF_FUNCTIONS = {("inception", True): inception_train, ("inception", False): inception_eval,
                ("vgg", True): vgg_train, ("vgg", False): vgg_eval,
                ("cifarnet", True): cifarnet_train, ("cifarnet", False): cifarnet_eval,
                ("lenet", True): lenet, ("lenet", False): lenet}


# --- Test images --------------------------------------------------------------

def photo(rng, height, width, channels):
    """A smooth colour field with hard-edged rectangles and sensor noise."""
    coarse = rng.uniform(0, 255, (1, 6, 8, channels)).astype(np.float32)
    image = tf.image.resize(coarse, [height, width], "bicubic")[0].numpy()
    for _ in range(6):
        y, x = rng.integers(0, height), rng.integers(0, width)
        image[y:y + rng.integers(2, height // 2 + 3), x:x + rng.integers(2, width // 2 + 3)] = \
            rng.uniform(0, 255, channels)
    image += rng.normal(0, 6, image.shape)
    return np.clip(np.rint(image), 0, 255).astype(np.uint8)


# name (as given to our harness), size, channels, [(height, width, format)]
CASES = [
    ("inception", 224, 3, [(375, 500, "jpg"), (500, 333, "jpg"), (300, 300, "png"),
                           (1200, 900, "jpg"), (97, 131, "jpg")]),
    ("model mobilenet_v1", 224, 3, [(375, 500, "jpg"), (1200, 900, "jpg")]),
    # 512x641: 641 * 256/512 = 320.5, which TF rounds to even (320).
    ("vgg", 224, 3, [(375, 500, "jpg"), (512, 641, "jpg"), (260, 300, "png"), (90, 121, "jpg")]),
    ("cifarnet", 32, 3, [(32, 32, "png"), (36, 30, "jpg"), (26, 30, "png")]),
    ("lenet", 28, 1, [(28, 28, "png"), (32, 24, "png"), (20, 36, "jpg")]),
]


def make_images(work, rng, name, channels, specs):
    paths = []
    for i, (h, w, fmt) in enumerate(specs):
        pixels = photo(rng, h, w, channels)
        data = (tf.io.encode_jpeg(pixels, quality=90) if fmt == "jpg"
                else tf.io.encode_png(pixels)).numpy()
        path = os.path.join(work, "%s_%d_%dx%d.%s" % (name.split()[-1], i, h, w, fmt))
        with open(path, "wb") as f:
            f.write(data)
        paths.append(path)
    return paths


def ours(bin_dir, work, name, size, channels, paths, training, fast, seed):
    tag = "%s_%s_%s" % (name.split()[-1], "train" if training else "eval",
                        "fast" if fast else "whole")
    key = "--model_name=" if name.startswith("model ") else "--preprocessing_name="
    cmd = [os.path.join(bin_dir, "tf_oracle_forward"), key + name.split()[-1],
           "--images=" + ",".join(paths), "--size=%d" % size, "--channels=%d" % channels,
           "--seed=%d" % seed, "--is_training=%s" % str(training).lower(),
           "--fast_jpeg_decode=%s" % str(fast).lower(),
           "--output=" + os.path.join(work, tag + ".npy"),
           "--decoded_prefix=" + os.path.join(work, tag + "_decoded")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s exited %d: %s" % (" ".join(cmd), r.returncode,
                                                 (r.stdout + r.stderr)[-1500:]))
    rows = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    decoded = [np.load(os.path.join(work, "%s_decoded%d.npy" % (tag, i)))
               for i in range(len(paths))]
    return np.load(os.path.join(work, tag + ".npy")), rows, decoded


def main():
    bin_dir, work = sys.argv[1:3]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(24)
    failed, total = [], 0
    for name, size, channels, specs in CASES:
        paths = make_images(work, rng, name, channels, specs)
        for training in (True, False):
            total += 1
            label = "%s %s" % (name.split()[-1], "train" if training else "eval")
            seed = 1000 * total
            whole, rows, decoded = ours(bin_dir, work, name, size, channels, paths, training,
                                        False, seed)
            fast, fast_rows, _ = ours(bin_dir, work, name, size, channels, paths, training,
                                      True, seed)
            prep = rows[0]["preprocessing"]
            fn = TF_FUNCTIONS[(prep, training)]
            ops, decode, decode_accurate, e2e, e2e_accurate = [], [], [], [], []
            for i, path in enumerate(paths):
                d = rows[i]
                assert fast_rows[i] == d, "the draws depend on fast_jpeg_decode: %s" % path
                mine = decoded[i].astype(np.uint8)
                ops.append(float(np.abs(whole[i] - fn(tf.constant(mine), size, d).numpy()).max()))
                with open(path, "rb") as f:
                    data = f.read()
                for method, diffs in (("", e2e), ("INTEGER_ACCURATE", e2e_accurate)):
                    theirs = (tf.io.decode_jpeg(data, channels=channels, dct_method=method)
                              if path.endswith(".jpg")
                              else tf.io.decode_png(data, channels=channels)).numpy()
                    if not method:
                        decode.append(int(np.abs(theirs.astype(int) - mine.astype(int)).max()))
                    else:
                        decode_accurate.append(
                            int(np.abs(theirs.astype(int) - mine.astype(int)).max()))
                    diff = np.abs(fast[i] - fn(tf.constant(theirs), size, d).numpy())
                    diffs.append((float(diff.max()), float(diff.mean())))
            row = {"preprocessing": label, "resolved": prep,
                   "images": [os.path.basename(p) for p in paths],
                   "max_abs_diff_ops": max(ops), "per_image_ops": ops,
                   "max_decode_diff_levels": max(decode),
                   "max_decode_diff_levels_accurate_idct": max(decode_accurate),
                   "max_abs_diff_end_to_end": max(m for m, _ in e2e),
                   "mean_abs_diff_end_to_end": max(a for _, a in e2e),
                   "per_image_end_to_end_max_mean": e2e,
                   "max_abs_diff_end_to_end_accurate_idct": max(m for m, _ in e2e_accurate),
                   "mean_abs_diff_end_to_end_accurate_idct": max(a for _, a in e2e_accurate),
                   "per_image_end_to_end_accurate_idct_max_mean": e2e_accurate,
                   "output_range": [float(whole.min()), float(whole.max())]}
            if training:
                row["draws"] = [{k: v for k, v in r.items() if k not in ("image", "preprocessing")}
                                for r in rows]
            row["ok"] = max(ops) <= TOLERANCE and (
                name.split()[-1] != "mobilenet_v1" or prep == "inception")
            if not row["ok"]:
                failed.append(label)
            print(json.dumps(row), flush=True)
    verdict.conclude("preprocessing", total, failed,
                     "within %.0e of TF's ops on the same pixels and draws" % TOLERANCE)


if __name__ == "__main__":
    main()
