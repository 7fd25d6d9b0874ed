"""TensorFlow reads our TensorFlow checkpoints as its own.

For each network, this port trains it for two steps (mock data, momentum,
moving averages) in NCHW and in NHWC, and export_tf_checkpoint writes the
result as a V2 checkpoint. Then:
  - tf.train.load_checkpoint reads every tensor, and each holds the value of
    our own checkpoint (read here from its bytes) in TensorFlow's layout,
    exactly; the optimizer slots and moving averages are there under TF1's
    names;
  - TF-slim's own network function, built in eval mode, restores its
    variables from the file with tf.compat.v1.train.Saver and gives the
    logits this port gives from its own checkpoint (tf_oracle_forward), within
    nets.TOLERANCE x max(1, largest |logit|).
resnet_v1_50 and inception_v3 come from PyPI's tf-slim. lenet and
mobilenet_v1 exist only in tensorflow/models' research/slim: their logits
are compared when --slim_dir names that directory (as slim_models_once.py
takes it); without it their tensors are still checked.

Run by scripts/tf_oracle.sh (its virtual environment's python):
  python tf_export.py BIN_DIR WORK_DIR [--slim_dir DIR] [NET ...]
"""
import functools
import importlib
import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys
import time
import types

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_slim as slim  # noqa: E402

_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("tf_oracle_nets", os.path.join(_here, "nets.py"))
oracle = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(oracle)
import verdict  # noqa: E402

tf.compat.v1.disable_eager_execution()

# name: (image size, channels, where TF-slim's network function comes from)
NETS = {
    "lenet": (28, 1, "research/slim"),
    "mobilenet_v1": (224, 3, "research/slim"),
    "inception_v3": (299, 3, "tf_slim"),
    "resnet_v1_50": (224, 3, "tf_slim"),
}
NUM_CLASSES = 10
# Our checkpoint format's dtype codes (src/train/checkpoint_format.h) as numpy types.
DTYPES = {0: np.float32, 1: np.float64, 2: np.int64, 3: np.uint8, 4: np.int32, 5: np.uint16,
          6: np.float16}


def read_ours(path):
    """Our FNNCKPT1 file: name -> numpy array (bfloat16 as its uint16 bits)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"FNNCKPT1", path
    (count,) = struct.unpack_from("<I", data, 8)
    at, out = 12, {}
    for _ in range(count):
        (n,) = struct.unpack_from("<I", data, at)
        name = data[at + 4:at + 4 + n].decode()
        at += 4 + n
        code, ndim = data[at], data[at + 1]
        dims = struct.unpack_from("<%dq" % ndim, data, at + 2)
        at += 2 + 8 * ndim
        (size,) = struct.unpack_from("<Q", data, at)
        at += 8
        out[name] = np.frombuffer(data[at:at + size], DTYPES[code]).reshape(dims)
        at += size
    return out


def tf_layout(name, value):
    """Our layout of a floating tensor in TensorFlow's (what the export does)."""
    if value.dtype.kind != "f":
        return value
    if value.ndim == 4 and "/depthwise_weights" in name:
        return value.transpose(2, 3, 0, 1)
    if value.ndim == 4:
        return value.transpose(2, 3, 1, 0)
    if value.ndim == 2:
        return value.T
    return value


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s exited %d: %s" % (" ".join(cmd), r.returncode,
                                                 (r.stdout + r.stderr)[-2000:]))
    return r.stdout


def train_and_export(bin_dir, work, name, data_format):
    size, channels, _ = NETS[name]
    train_dir = os.path.join(work, "%s_%s" % (name, data_format))
    shutil.rmtree(train_dir, ignore_errors=True)
    run([os.path.join(bin_dir, "train_image_classifier"), "--dataset_name=mock",
         "--model_name=" + name, "--num_classes=%d" % NUM_CLASSES,
         "--train_image_size=%d" % size, "--use_grayscale=%s" % (channels == 1),
         "--data_format=" + data_format, "--batch_size=2", "--stop_at_step=2",
         "--optimizer=momentum", "--learning_rate=0.01", "--moving_average_decay=0.99",
         "--dropout_keep_prob=1.0", "--num_preprocessing_threads=1",
         "--train_dir=" + train_dir])
    ours = os.path.join(train_dir, "model.ckpt-2")
    prefix = os.path.join(train_dir, "tf", "model.ckpt-2")
    run([os.path.join(bin_dir, "export_tf_checkpoint"), "--checkpoint_path=" + ours,
         "--output_prefix=" + prefix])
    return train_dir, ours, prefix


def check_tensors(ours_path, prefix):
    """Every exported tensor as TensorFlow reads it against ours; returns
    (tensor count, slot count, shadow count, differing names)."""
    ours = read_ours(ours_path)
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    differ, slots, shadows = [], 0, 0
    expected = {}
    for key, value in ours.items():
        if key.startswith("model/"):
            expected[key[6:]] = tf_layout(key[6:], value)
        elif key.startswith("optimizer/"):
            expected[key[10:]] = tf_layout(key[10:], value)
        elif key == "global_step":
            expected[key] = value
    for name, want in expected.items():
        if name not in shapes:
            differ.append(name + " (missing)")
            continue
        got = reader.get_tensor(name)
        if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
            differ.append(name)
        slots += name.endswith("/Momentum")
        shadows += name.endswith("/ExponentialMovingAverage")
    differ += [n + " (unexpected)" for n in shapes if n not in expected]
    return len(expected), slots, shadows, differ


def research_slim_module(module):
    """research/slim's nets.<module>. A copy written for TensorFlow 1
    (tf.contrib.slim, tf.variable_scope at the top level) is imported against
    tf.compat.v1, with tf_slim standing in for tf.contrib.slim (and the two
    tf.contrib.layers functions they call)."""
    try:
        return importlib.import_module("nets." + module)
    except AttributeError:
        v1 = tf.compat.v1
        layers = types.SimpleNamespace(softmax=slim.softmax, l2_regularizer=slim.l2_regularizer)
        v1.contrib = types.SimpleNamespace(slim=slim, layers=layers)
        saved = sys.modules["tensorflow"]
        sys.modules["tensorflow"] = v1
        try:
            sys.modules.pop("nets." + module, None)
            return importlib.import_module("nets." + module)
        finally:
            sys.modules["tensorflow"] = saved


def network_function(name, slim_dir):
    """(network function, arg_scope function) of TF-slim's own code, or
    None when research/slim is needed and not given."""
    if NETS[name][2] == "tf_slim":
        return oracle.NETS[name][:2]
    if not slim_dir:
        return None
    if slim_dir not in sys.path:
        sys.path.insert(0, slim_dir)
    spec = importlib.util.spec_from_file_location(
        "slim_models_once", os.path.join(_here, "slim_models_once.py"))
    once = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(once)
    module, fn, scope, scope_kwargs = once.SLIM_NETS[name][:4]
    m = research_slim_module(module)
    return getattr(m, fn), functools.partial(getattr(m, scope), **scope_kwargs)


def tf_restored_logits(fn, arg_scope, prefix, images):
    """TF-slim's network in eval mode, restored from prefix by a Saver of
    its own variables, on images (NHWC)."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, images.shape)
        with slim.arg_scope(arg_scope()):
            logits, _ = fn(x, num_classes=NUM_CLASSES, is_training=False)
        logits = tf.reshape(logits, [images.shape[0], NUM_CLASSES])
        saver = tf.compat.v1.train.Saver(tf.compat.v1.global_variables())
        with tf.compat.v1.Session() as sess:
            saver.restore(sess, prefix)
            return sess.run(logits, {x: images})


def check(bin_dir, work, name, data_format, slim_dir):
    size, channels, origin = NETS[name]
    train_dir, ours_path, prefix = train_and_export(bin_dir, work, name, data_format)
    count, slots, shadows, differ = check_tensors(ours_path, prefix)
    row = {"net": name, "trained": data_format, "tensors": count, "momentum_slots": slots,
           "moving_averages": shadows, "tensors_differ": differ[:10]}
    net = network_function(name, slim_dir)
    ok = not differ and slots > 0 and shadows > 0
    if net is None:
        row["logits"] = "not compared: TF-slim's %s is in research/slim (--slim_dir)" % name
    else:
        rng = np.random.default_rng(0)
        images = rng.uniform(-1.0, 1.0, (2, size, size, channels)).astype(np.float32)
        want = tf_restored_logits(net[0], net[1], prefix, images)
        inp = os.path.join(train_dir, "input.npy")
        out = os.path.join(train_dir, "ours.npy")
        np.save(inp, images)
        run([os.path.join(bin_dir, "tf_oracle_forward"), "--model_name=" + name,
             "--num_classes=%d" % NUM_CLASSES, "--checkpoint_path=" + ours_path,
             "--data_format=" + data_format, "--input=" + inp, "--output=" + out])
        got = np.load(out)
        largest = float(np.abs(want).max())
        row.update(max_abs_logit=largest, max_diff=float(np.abs(got - want).max()))
        ok = ok and row["max_diff"] <= oracle.TOLERANCE * max(1.0, largest)
    row["ok"] = ok
    if ok:
        shutil.rmtree(train_dir, ignore_errors=True)
    return row


def main():
    bin_dir, work = sys.argv[1], sys.argv[2]
    args = sys.argv[3:]
    slim_dir = None
    if args[:1] == ["--slim_dir"]:
        slim_dir, args = os.path.abspath(args[1]), args[2:]
    names = args or list(NETS)
    os.makedirs(work, exist_ok=True)
    rows, failed = [], []
    for name in names:
        for data_format in ("NCHW", "NHWC"):
            t0 = time.time()
            try:
                row = check(bin_dir, work, name, data_format, slim_dir)
            except Exception as e:  # reported, and the run fails
                row = {"net": name, "trained": data_format, "error": str(e)[-3000:], "ok": False}
            row["seconds"] = round(time.time() - t0, 1)
            print(json.dumps(row), flush=True)
            rows.append(row)
            if not row["ok"]:
                failed.append("%s/%s" % (name, data_format))
    with open(os.path.join(work, "tf_export.json"), "w") as f:
        json.dump(rows, f, indent=1)
    verdict.conclude("checkpoints written for TensorFlow", 2 * len(names), failed,
                     "read by TensorFlow with our values (logits within %.0e x max(1, |logit|) "
                     "where TF-slim's network is at hand)" % oracle.TOLERANCE)


if __name__ == "__main__":
    main()
