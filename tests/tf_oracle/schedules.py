"""TensorFlow as the oracle for this port's learning-rate schedules.

Each case sets FastNN's/TF-slim's keys, has this port's tf_oracle_optimizer
print the learning rate of every step of a 1000-step run (the trainer's
schedule_from_hparams + learning_rate_at), and compares it with TensorFlow:
- TF-slim's schedules (num_epochs_per_decay set), and cosine, with
  tf.compat.v1.train.exponential_decay / polynomial_decay / cosine_decay;
- FastNN's (decay_scheme luong5/luong10/luong234/'' counted from
  stop_at_step, t2t warmup), which TensorFlow lacks, with FastNN's own formula
  (utils/optimizer_utils.configure_learning_rate, from TF-NMT) written in TF
  ops around the same tf.compat.v1.train.*_decay;
- the linear warmup (ours, Goyal et al.), the TF decay times (s + 1) / W.
TensorFlow evaluates every step at once, its constants made in the run's
dtype (a Python float would be cast through float32) (tf.where where FastNN has tf.cond:
the same value per step). In float64, where the formula alone decides, the
difference must be within 1e-6 relative; float32, in which TF-slim and FastNN
compute their learning rate, is reported beside it (the t2t warmup's
exp(ln(0.01)/W)^(W-s) loses up to (W-s) float32 roundings there, the
polynomial's and the cosine's ends cancel). TF 2.12's CosineDecay writes pi as
a float32 constant, which float64 cannot multiply: float64_pi() gives it a
float64 pi for the float64 run, nothing else changed.

Run by scripts/tf_oracle.sh: python schedules.py BIN_DIR
"""
import contextlib
import json
import math
import os
import subprocess
import sys
import types

import numpy as np
import tensorflow as tf
from tensorflow.python.keras.optimizer_v2 import learning_rate_schedule

import verdict

tf.compat.v1.disable_eager_execution()
TOLERANCE = 1e-6
LR, END_LR, FACTOR = 0.1, 0.002, 0.8
STOP, BATCH, SAMPLES = 1000, 32, 5000     # TF-slim: decay_steps = int(5000 * epochs / 32)
W = 100                                   # warmup steps
BASE_KEYS = {"learning_rate": LR, "end_learning_rate": END_LR,
             "learning_rate_decay_factor": FACTOR, "stop_at_step": STOP,
             "batch_size": BATCH, "warmup_steps": 0}


def slim_decay_steps(epochs):
    """TF-slim's _configure_learning_rate."""
    return int(SAMPLES * epochs / BATCH)


def const(x, dtype):
    return tf.constant(x, dtype)


def linear_warmup(lr, s, warmup_steps, dtype):
    """Ours: the schedule's value times (s + 1) / W during the first W steps."""
    w = const(warmup_steps, dtype)
    return tf.where(s < w, lr * (s + 1) / w, lr)


def t2t_warmup(s, warmup_steps, dtype):
    """FastNN's (TF-NMT's) _get_learning_rate_warmup: lr * 0.01^((W - s) / W)."""
    lr = const(LR, dtype)
    if warmup_steps == 0:
        return lr                  # tf.cond(s < 0, ...) never takes the warmup
    w = const(warmup_steps, dtype)
    warmup_factor = tf.exp(tf.math.log(const(0.01, dtype)) / w)
    inv_decay = warmup_factor ** (w - s)
    return tf.where(s < w, inv_decay * lr, lr)


def luong(scheme):
    """FastNN's _get_decay_info: (start_decay_step, decay_steps)."""
    if scheme in ("luong5", "luong10"):
        start = int(STOP / 2)
        return start, int((STOP - start) / (5 if scheme == "luong5" else 10))
    if scheme == "luong234":
        start = int(STOP * 2 / 3)
        return start, int((STOP - start) / 4)
    return STOP, 0


def fastnn(kind, scheme, warmup_steps):
    """FastNN's configure_learning_rate in TF ops."""
    def build(s, dtype):
        base = t2t_warmup(s, warmup_steps, dtype)
        start, steps = luong(scheme)
        since = s - const(start, dtype)
        if kind == "exponential":
            decayed = tf.compat.v1.train.exponential_decay(
                base, since, steps, const(FACTOR, dtype), staircase=True)
        else:
            decayed = tf.compat.v1.train.polynomial_decay(
                base, since, steps, const(END_LR, dtype), power=1.0)
        return tf.where(s < const(start, dtype), base, decayed)
    return build


def slim(kind, epochs, warmup=None):
    """TF-slim's schedule, times our linear warmup when `warmup` steps."""
    def build(s, dtype):
        lr = const(LR, dtype)
        if kind == "exponential":
            out = tf.compat.v1.train.exponential_decay(
                lr, s, slim_decay_steps(epochs), const(FACTOR, dtype), staircase=True)
        else:
            out = tf.compat.v1.train.polynomial_decay(
                lr, s, slim_decay_steps(epochs), const(END_LR, dtype), power=1.0, cycle=False)
        return linear_warmup(out, s, warmup, dtype) if warmup else out
    return build


@contextlib.contextmanager
def float64_pi(dtype):
    """CosineDecay's constant_op.constant(math.pi), made in `dtype`."""
    real = learning_rate_schedule.constant_op
    if dtype == tf.float64:
        learning_rate_schedule.constant_op = types.SimpleNamespace(
            constant=lambda v: tf.constant(v, tf.float64) if v == math.pi else real.constant(v))
    try:
        yield
    finally:
        learning_rate_schedule.constant_op = real


def cosine(alpha, warmup_scheme=None, warmup_steps=0):
    """tf.compat.v1.train.cosine_decay from the end of the warmup to stop_at_step."""
    def build(s, dtype):
        w = const(warmup_steps, dtype)
        with float64_pi(dtype):
            out = tf.compat.v1.train.cosine_decay(const(LR, dtype), tf.maximum(s - w, 0.0),
                                                  STOP - warmup_steps, alpha=const(alpha, dtype))
        if warmup_scheme == "linear":
            return linear_warmup(out, s, warmup_steps, dtype)
        if warmup_scheme == "t2t":
            return tf.where(s < w, t2t_warmup(s, warmup_steps, dtype), out)
        return out
    return build


# name: (our keys beyond BASE_KEYS, TensorFlow's schedule as build(steps, dtype))
CASES = {
    "fixed (warmup ignored)": ({"learning_rate_decay_type": "fixed", "warmup_steps": W},
                               lambda s, dtype: tf.ones_like(s) * LR),
    "exponential, num_epochs_per_decay 2": (
        {"learning_rate_decay_type": "exponential", "num_epochs_per_decay": 2.0},
        slim("exponential", 2.0)),
    "polynomial, num_epochs_per_decay 3.5": (
        {"learning_rate_decay_type": "polynomial", "num_epochs_per_decay": 3.5},
        slim("polynomial", 3.5)),
    "exponential, num_epochs_per_decay 1, linear warmup 0.5 epoch": (
        {"learning_rate_decay_type": "exponential", "num_epochs_per_decay": 1.0,
         "warmup_scheme": "linear", "warmup_epochs": 0.5},
        slim("exponential", 1.0, warmup=slim_decay_steps(0.5))),
    "polynomial, num_epochs_per_decay 2, linear warmup 100": (
        {"learning_rate_decay_type": "polynomial", "num_epochs_per_decay": 2.0,
         "warmup_scheme": "linear", "warmup_steps": W},
        slim("polynomial", 2.0, warmup=W)),
    "cosine, min_lr_ratio 0.1": (
        {"learning_rate_decay_type": "cosine", "min_lr_ratio": 0.1}, cosine(0.1)),
    "cosine, linear warmup 100": (
        {"learning_rate_decay_type": "cosine", "warmup_scheme": "linear", "warmup_steps": W},
        cosine(0.0, "linear", W)),
    "cosine, min_lr_ratio 0.05, t2t warmup 100": (
        {"learning_rate_decay_type": "cosine", "min_lr_ratio": 0.05, "warmup_scheme": "t2t",
         "warmup_steps": W},
        cosine(0.05, "t2t", W)),
    "exponential, luong5, t2t warmup 100": (
        {"learning_rate_decay_type": "exponential", "decay_scheme": "luong5",
         "warmup_scheme": "t2t", "warmup_steps": W},
        fastnn("exponential", "luong5", W)),
    "exponential, luong234": (
        {"learning_rate_decay_type": "exponential", "decay_scheme": "luong234"},
        fastnn("exponential", "luong234", 0)),
    "polynomial, luong10, t2t warmup 100": (
        {"learning_rate_decay_type": "polynomial", "decay_scheme": "luong10",
         "warmup_scheme": "t2t", "warmup_steps": W},
        fastnn("polynomial", "luong10", W)),
    "exponential, no decay_scheme, t2t warmup 100 (FastNN's default)": (
        {"learning_rate_decay_type": "exponential", "warmup_scheme": "t2t", "warmup_steps": W},
        fastnn("exponential", "", W)),
}


def tensorflow_schedule(build, dtype):
    graph = tf.Graph()
    with graph.as_default():
        steps = tf.constant(np.arange(STOP), dtype)
        lr = build(steps, dtype)
        with tf.compat.v1.Session() as sess:
            return sess.run(lr).astype(np.float64)


def main():
    bin_dir = sys.argv[1]
    failed = []
    for name, (keys, build) in CASES.items():
        cmd = [os.path.join(bin_dir, "tf_oracle_optimizer"), "--schedule_steps=%d" % STOP,
               "--samples_per_epoch=%d" % SAMPLES]
        cmd += ["--%s=%r" % (k, v) if not isinstance(v, str) else "--%s=%s" % (k, v)
                for k, v in {**BASE_KEYS, **keys}.items()]
        r = subprocess.run(cmd, capture_output=True, text=True)
        row = {"schedule": name}
        if r.returncode != 0:
            row["error"] = (r.stdout + r.stderr)[-1500:]
        else:
            ours = np.array([float(x) for x in r.stdout.split()])
            for dtype, label in ((tf.float64, "float64"), (tf.float32, "float32")):
                want = tensorflow_schedule(build, dtype)
                row["max_rel_diff_" + label] = float((np.abs(ours - want) / np.abs(want)).max())
            row["lr_range"] = [float(ours.min()), float(ours.max())]
            row["distinct_values"] = len(set(ours.tolist()))
        row["ok"] = "error" not in row and row["max_rel_diff_float64"] <= TOLERANCE
        if not row["ok"]:
            failed.append(name)
        print(json.dumps(row), flush=True)
    verdict.conclude("schedules", len(CASES), failed, "within %.0e relative (float64)" % TOLERANCE)


if __name__ == "__main__":
    main()
