"""TensorFlow as the oracle for this port's networks.

For each network PyPI's tf-slim ships, TensorFlow builds it (eval mode),
initializes it with a fixed seed, randomizes every BatchNorm statistic,
gamma, beta and bias, saves a real checkpoint (V2; V1 for some) and the
logits of a fixed input batch. This port's tf_oracle_forward restores that
checkpoint and computes the logits in NCHW and NHWC; the maximum absolute
difference must stay within 1e-4 x max(1, largest |logit|).

Run by scripts/tf_oracle.sh (its virtual environment's python):
  python nets.py BIN_DIR WORK_DIR [--large | --all | NET ...]
With no NET, the 12 networks of CI; --large: the other 4 (ResNet v1/v2 152
and 200: the same blocks as the 50 and 101 layers checked by default, and
2 to 3 minutes each on the slowest CPU seen), by hand after a change to
the ResNets; --all: all 16.
"""
import json
import os
import shutil
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_slim as slim  # noqa: E402
from tf_slim.nets import alexnet, inception, overfeat, resnet_v1, resnet_v2, vgg  # noqa: E402

import verdict  # noqa: E402

tf.compat.v1.disable_eager_execution()

# name: (network function, its arg_scope, image size, checkpoint format)
NETS = {
    "alexnet_v2": (alexnet.alexnet_v2, alexnet.alexnet_v2_arg_scope, 224, "V2"),
    "inception_v1": (inception.inception_v1, inception.inception_v1_arg_scope, 224, "V1"),
    "inception_v2": (inception.inception_v2, inception.inception_v2_arg_scope, 224, "V2"),
    "inception_v3": (inception.inception_v3, inception.inception_v3_arg_scope, 299, "V2"),
    "overfeat": (overfeat.overfeat, overfeat.overfeat_arg_scope, 231, "V2"),
    "vgg_a": (vgg.vgg_a, vgg.vgg_arg_scope, 224, "V2"),
    "vgg_16": (vgg.vgg_16, vgg.vgg_arg_scope, 224, "V1"),
    "vgg_19": (vgg.vgg_19, vgg.vgg_arg_scope, 224, "V2"),
    "resnet_v1_50": (resnet_v1.resnet_v1_50, resnet_v1.resnet_arg_scope, 224, "V2"),
    "resnet_v1_101": (resnet_v1.resnet_v1_101, resnet_v1.resnet_arg_scope, 224, "V2"),
    "resnet_v1_152": (resnet_v1.resnet_v1_152, resnet_v1.resnet_arg_scope, 224, "V2"),
    "resnet_v1_200": (resnet_v1.resnet_v1_200, resnet_v1.resnet_arg_scope, 224, "V2"),
    "resnet_v2_50": (resnet_v2.resnet_v2_50, resnet_v2.resnet_arg_scope, 224, "V1"),
    "resnet_v2_101": (resnet_v2.resnet_v2_101, resnet_v2.resnet_arg_scope, 224, "V2"),
    "resnet_v2_152": (resnet_v2.resnet_v2_152, resnet_v2.resnet_arg_scope, 224, "V2"),
    "resnet_v2_200": (resnet_v2.resnet_v2_200, resnet_v2.resnet_arg_scope, 224, "V2"),
}
NUM_CLASSES = 10
BATCH = 2
TOLERANCE = 1e-4


def tf_logits(name, work):
    """Builds, randomizes and saves a tf-slim net; returns (prefix, input, logits)."""
    fn, arg_scope, size, fmt = NETS[name]
    return build_and_save(name, work, fn, arg_scope, size, fmt, BATCH, 3)


def build_and_save(name, work, fn, arg_scope, size, fmt, batch, channels):
    """TensorFlow's side for any network function: builds it in eval mode
    with its arg_scope, randomizes it, saves a checkpoint in `fmt` and
    returns (prefix, input, logits) of a fixed [batch,size,size,channels]
    input (slim_models_once.py calls it for research/slim's networks)."""
    rng = np.random.default_rng(0)
    images = rng.uniform(-1.0, 1.0, (batch, size, size, channels)).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(0)
        x = tf.compat.v1.placeholder(tf.float32, images.shape)
        with slim.arg_scope(arg_scope()):
            logits, _ = fn(x, num_classes=NUM_CLASSES, is_training=False)
        logits = tf.reshape(logits, [batch, NUM_CLASSES])
        # BatchNorm statistics, gamma, beta and biases start as constants:
        # make them random so that a mix-up of any of them shows. Each
        # BatchNorm scales by gamma / sqrt(variance) in [0.35, 1], so that
        # 200 layers do not grow the activations past float32's digits.
        # One assign per variable, fed together in one run: Variable.load
        # adds its own op to the graph at each call, and the session then
        # re-reads the grown graph, which for resnet_v1_101 would take most
        # of the TensorFlow side's time.
        feed, assigns = {}, []
        for v in tf.compat.v1.global_variables():
            n = v.op.name
            shape = v.shape.as_list()
            if n.endswith("moving_variance"):
                value = rng.uniform(1.0, 2.0, shape)
            elif n.endswith("gamma"):
                value = rng.uniform(0.5, 1.0, shape)
            elif n.endswith(("moving_mean", "beta", "biases")):
                value = rng.normal(0.0, 0.1, shape)
            else:
                continue
            fed = tf.compat.v1.placeholder(tf.float32, shape)
            feed[fed] = value.astype(np.float32)
            assigns.append(tf.compat.v1.assign(v, fed))
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(assigns, feed)
            version = (tf.compat.v1.train.SaverDef.V1 if fmt == "V1"
                       else tf.compat.v1.train.SaverDef.V2)
            saver = tf.compat.v1.train.Saver(write_version=version)
            prefix = os.path.join(work, name, "model.ckpt")
            os.makedirs(os.path.dirname(prefix), exist_ok=True)
            saved = saver.save(sess, prefix, write_meta_graph=False)
            out = sess.run(logits, {x: images})
    return saved, images, out


def ours(bin_dir, name, prefix, images, work):
    """This port's logits in NCHW and in NHWC, from one restore of prefix."""
    inp = os.path.join(work, name, "input.npy")
    out = {f: os.path.join(work, name, "ours_%s.npy" % f) for f in ("NCHW", "NHWC")}
    np.save(inp, images)
    cmd = [os.path.join(bin_dir, "tf_oracle_forward"), "--model_name=" + name,
           "--num_classes=%d" % NUM_CLASSES, "--checkpoint_path=" + prefix,
           "--data_format=NCHW", "--input=" + inp, "--output=" + out["NCHW"],
           "--output_nhwc=" + out["NHWC"]]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s exited %d: %s" % (" ".join(cmd), r.returncode,
                                                 (r.stdout + r.stderr)[-2000:]))
    return {f: np.load(path) for f, path in out.items()}


def check_nets(bin_dir, work, names, tf_logits_of, describe):
    """For each name: TensorFlow's logits (tf_logits_of(name, work) returns
    (checkpoint prefix, images, logits)) against this port's in NCHW and NHWC.
    Prints and returns one row per net (describe(name, images) adds its own
    fields) and the names that differed or failed. A passing net's files
    (its checkpoint: up to 570 MB, 4 GB for all 16) are removed; a failing
    one's are kept for inspection."""
    rows, failed = [], []
    for name in names:
        t0 = time.time()
        try:
            prefix, images, want = tf_logits_of(name, work)
            largest = float(np.abs(want).max())
            scale = max(1.0, largest)
            got = ours(bin_dir, name, prefix, images, work)
            diffs = {f: float(np.abs(logits - want).max()) for f, logits in got.items()}
            ok = all(d <= TOLERANCE * scale for d in diffs.values())
            rows.append(dict({"net": name}, **describe(name, images),
                             max_abs_logit=largest, max_diff_nchw=diffs["NCHW"],
                             max_diff_nhwc=diffs["NHWC"], ok=ok,
                             seconds=round(time.time() - t0, 1)))
        except Exception as e:  # reported, and the run fails
            rows.append({"net": name, "error": str(e)[-3000:], "ok": False,
                         "seconds": round(time.time() - t0, 1)})
            ok = False
        print(json.dumps(rows[-1]), flush=True)
        if ok:
            shutil.rmtree(os.path.join(work, name), ignore_errors=True)
        else:
            failed.append(name)
    return rows, failed


LARGE = ["resnet_v1_152", "resnet_v1_200", "resnet_v2_152", "resnet_v2_200"]


def main():
    bin_dir, work = sys.argv[1], sys.argv[2]
    args = sys.argv[3:]
    if args == ["--large"]:
        names = LARGE
    elif args == ["--all"]:
        names = list(NETS)
    else:
        names = args or [n for n in NETS if n not in LARGE]
    rows, failed = check_nets(bin_dir, work, names, tf_logits,
                              lambda name, images: {"checkpoint": NETS[name][3]})
    with open(os.path.join(work, "nets.json"), "w") as f:
        json.dump(rows, f, indent=1)
    verdict.conclude("nets", len(names), failed, "within %.0e x max(1, |logit|)" % TOLERANCE)


if __name__ == "__main__":
    main()
