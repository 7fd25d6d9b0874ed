"""TensorFlow's own research/slim preprocessing as the oracle, once.

preprocessing.py checks, in CI, the TensorFlow ops each TF-slim preprocessing
function is made of. This script runs the functions themselves, from
tensorflow/models' research/slim/preprocessing (not part of this repository;
pass the directory holding preprocessing/), on the same images with the same
draws: preprocess_image(image, size, size, is_training) of
inception_preprocessing (also for mobilenet_v1), vgg_preprocessing,
cifarnet_preprocessing and lenet_preprocessing, each module executed
unchanged with TensorFlow 1's API (tf.compat.v1) for its `tf`, and its random
ops answering this port's draws: sample_distorted_bounding_box gives our box,
random_flip_left_right / random_brightness / random_saturation /
random_contrast apply our flip and factors (after checking the ranges they are
asked for against ours), random_crop slices at our offsets, and random_uniform
gives our resize side and crop offsets in the order vgg asks (a one-case
selector gives 0, as it does anyway). Every draw must be consumed. The output
is compared with ours (fast_jpeg_decode=False, the decoded image whole) and
with preprocessing.py's TF-op version.

A one-time check, not a CI leg:
  python slim_preprocessing_once.py BIN_DIR WORK_DIR SLIM_DIR
with the oracle's virtual environment (.cache/tf_oracle/venv-*/bin/python).
"""
import builtins
import json
import os
import sys
import types

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import preprocessing as oracle  # noqa: E402
import verdict  # noqa: E402

V1 = tf.compat.v1


class Draws:
    """This port's draws for one image, handed out as research/slim asks."""

    def __init__(self, d, height, width):
        self.d, self.height, self.width = d, height, width
        self.uniform = [d["resize_side"], d["crop"][0], d["crop"][1]] if d.get(
            "resize_side") else []
        self.used = set()

    def use(self, what, **expected):
        for k, v in expected.items():
            got = self.d.get(k)
            assert v[0] <= got < v[1] or (k == "resize_side" and got == v[1]), (what, k, got, v)
        self.used.add(what)


class Image:
    """tf.compat.v1.image with the random ops answering the draws."""

    def __init__(self, draws):
        self.draws = draws

    def __getattr__(self, name):
        return getattr(V1.image, name)

    def sample_distorted_bounding_box(self, image_size, bounding_boxes, min_object_covered,
                                      aspect_ratio_range, area_range, max_attempts,
                                      use_image_if_no_bounding_boxes):
        # Ours: slim_preprocessing.cc's sample_distorted_box defaults.
        assert (min_object_covered, tuple(aspect_ratio_range), tuple(area_range),
                max_attempts, use_image_if_no_bounding_boxes) == (
                    0.1, (0.75, 1.33), (0.05, 1.0), 100, True)
        top, left, h, w = self.draws.d["crop"]
        self.draws.use("box")
        box = [[[top / self.draws.height, left / self.draws.width,
                 (top + h) / self.draws.height, (left + w) / self.draws.width]]]
        return (tf.constant([top, left, 0]), tf.constant([h, w, -1]),
                tf.constant(box, tf.float32))

    def random_flip_left_right(self, image):
        self.draws.use("flip")
        return V1.image.flip_left_right(image) if self.draws.d["flip"] else image

    def random_brightness(self, image, max_delta):
        self.draws.use("brightness", brightness=(-max_delta, max_delta))
        return V1.image.adjust_brightness(image, self.draws.d["brightness"])

    def random_saturation(self, image, lower, upper):
        self.draws.use("saturation", saturation=(lower, upper))
        return V1.image.adjust_saturation(image, self.draws.d["saturation"])

    def random_contrast(self, image, lower, upper):
        self.draws.use("contrast", contrast=(lower, upper))
        return V1.image.adjust_contrast(image, self.draws.d["contrast"])


class TF1:
    """What research/slim's `tf` is: TensorFlow 1's API, random ops on the draws."""

    def __init__(self, draws):
        self.draws = draws
        self.image = Image(draws)
        self.contrib = types.SimpleNamespace(slim=None)
        self.compat = types.SimpleNamespace(v1=self)

    def __getattr__(self, name):
        return getattr(V1, name)

    def random_uniform(self, shape, minval=0, maxval=None, dtype=tf.float32, **_):
        if isinstance(maxval, int) and maxval == 1 and minval == 0:
            return tf.constant(0, dtype)          # a one-case selector
        value = self.draws.uniform.pop(0)
        if isinstance(maxval, int):
            assert minval <= value < maxval, (minval, value, maxval)
        self.draws.use("uniform %d" % len(self.draws.uniform))
        return tf.constant(value, dtype)

    def random_crop(self, value, size, **_):
        top, left, _, _ = self.draws.d["crop"]
        self.draws.use("random_crop")
        return tf.slice(value, [top, left, 0], size)


def load(slim_dir, module, tf1):
    """research/slim's preprocessing/MODULE.py, executed unchanged, its
    `import tensorflow...` statements answered by tf1."""
    path = os.path.join(slim_dir, "preprocessing", module + ".py")
    with open(path) as f:
        code = compile(f.read(), path, "exec")

    def imports(name, globals=None, locals=None, fromlist=(), level=0):
        if name == "tensorflow":
            return tf1
        if name == "tensorflow.compat.v1":
            return types.SimpleNamespace(compat=tf1.compat)
        if name == "tensorflow.contrib":
            return tf1.contrib
        return builtins.__import__(name, globals, locals, fromlist, level)

    scope = {"__builtins__": dict(vars(builtins), __import__=imports), "__name__": module}
    exec(code, scope)
    return scope


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    bin_dir, work, slim_dir = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(24)        # preprocessing.py's images and seeds
    failed, total = [], 0
    for name, size, channels, specs in oracle.CASES:
        paths = oracle.make_images(work, rng, name, channels, specs)
        for training in (True, False):
            total += 1
            label = "%s %s" % (name.split()[-1], "train" if training else "eval")
            ours, rows, decoded = oracle.ours(bin_dir, work, name, size, channels, paths,
                                              training, False, 1000 * total)
            prep = rows[0]["preprocessing"]
            vs_ours, vs_ops = [], []
            for i, row in enumerate(rows):
                image = decoded[i].astype(np.uint8)
                draws = Draws(row, image.shape[0], image.shape[1])
                graph = tf.Graph()
                with graph.as_default():
                    module = load(slim_dir, prep + "_preprocessing", TF1(draws))
                    out = module["preprocess_image"](tf.constant(image), size, size,
                                                     is_training=training)
                    with V1.Session(graph=graph) as sess:
                        theirs = sess.run(out).reshape(size, size, channels)
                assert not draws.uniform, "draws left: %s" % draws.uniform
                if training and prep != "lenet":
                    want = {"inception": {"box", "flip", "brightness", "saturation"},
                            "vgg": {"uniform 2", "uniform 1", "uniform 0", "flip"},
                            "cifarnet": {"random_crop", "flip", "brightness", "contrast"}}[prep]
                    assert draws.used == want, (prep, draws.used)
                vs_ours.append(float(np.abs(ours[i] - theirs).max()))
                ops = oracle.TF_FUNCTIONS[(prep, training)](tf.constant(image), size, row)
                vs_ops.append(float(np.abs(ops.numpy() - theirs).max()))
            row = {"preprocessing": label, "module": prep + "_preprocessing",
                   "max_abs_diff_vs_ours": max(vs_ours), "per_image": vs_ours,
                   "max_abs_diff_vs_ci_ops": max(vs_ops)}
            row["ok"] = max(vs_ours) <= oracle.TOLERANCE
            if not row["ok"]:
                failed.append(label)
            print(json.dumps(row), flush=True)
    verdict.conclude("research/slim preprocessing", total, failed,
                     "within %.0e of ours" % oracle.TOLERANCE)


if __name__ == "__main__":
    main()
