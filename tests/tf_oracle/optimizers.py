"""TensorFlow as the oracle for this port's optimizers.

The 7 optimizers TensorFlow 1 has, with FastNN's keys set away from their
defaults, over 20 steps of the same random gradients (some steps zero, some
large) on one variable: tf.compat.v1.train.*Optimizer against this port's
tf_oracle_optimizer. FastNN's adamweightdecay, which TensorFlow lacks, against
BERT's AdamWeightDecayOptimizer written in TF ops (BertAdamWeightDecay below),
once on a variable it decays and once on a "biases" one it does not. The
variable after every step, and every slot after the last, must agree within
1e-6 relative (1e-6 x max(1, |value|)).

Run by scripts/tf_oracle.sh: python optimizers.py BIN_DIR WORK_DIR
"""
import json
import os
import re
import subprocess
import sys

import numpy as np
import tensorflow as tf

import verdict

tf.compat.v1.disable_eager_execution()
K, T, LR = 16, 20, 0.05
TOLERANCE = 1e-6
# Known and stated (docs/design/tf_checks.md, "Checked against TensorFlow"): FTRL's
# linear slot, where sigma = (n_new^0.6 - n^0.6) / lr cancels, differs by
# 1.9e-6 relative (the variable itself by 6e-8); not traced further.
SLOT_TOLERANCE = {("ftrl", "linear"): 5e-6}



class BertAdamWeightDecay:
    """BERT's AdamWeightDecayOptimizer (google-research/bert, optimization.py),
    which FastNN copies with weight_decay_rate fixed at 0.01: Adam's moments
    without bias correction, and the decay added to the update, not to the
    gradient, of every variable whose name matches none of the exclusions."""

    EXCLUDE = ["LayerNorm", "layer_norm", "bias"]

    def __init__(self, learning_rate, beta_1, beta_2, epsilon, weight_decay_rate=0.01):
        self.lr, self.b1, self.b2, self.eps = learning_rate, beta_1, beta_2, epsilon
        self.rate = weight_decay_rate
        self.slots = {}

    def _do_use_weight_decay(self, name):
        return bool(self.rate) and not any(re.search(r, name) for r in self.EXCLUDE)

    def apply_gradients(self, grads_and_vars):
        ops = []
        for grad, param in grads_and_vars:
            name = re.match("^(.*):\\d+$", param.name).group(1)
            m = tf.compat.v1.get_variable(name + "/adam_m", param.shape, tf.float32,
                                          trainable=False,
                                          initializer=tf.compat.v1.zeros_initializer())
            v = tf.compat.v1.get_variable(name + "/adam_v", param.shape, tf.float32,
                                          trainable=False,
                                          initializer=tf.compat.v1.zeros_initializer())
            self.slots[(param.name, "adam_m")], self.slots[(param.name, "adam_v")] = m, v
            next_m = tf.multiply(self.b1, m) + tf.multiply(1.0 - self.b1, grad)
            next_v = tf.multiply(self.b2, v) + tf.multiply(1.0 - self.b2, tf.square(grad))
            update = next_m / (tf.sqrt(next_v) + self.eps)
            if self._do_use_weight_decay(name):
                update += self.rate * param
            ops += [param.assign(param - self.lr * update), m.assign(next_m), v.assign(next_v)]
        return tf.group(*ops)

    def get_slot(self, var, name):
        return self.slots[(var.name, name)]


# name: (our keys, TF's optimizer, TF slot names in our slots() order[, our
# optimizer, the variable's name]); the optimizer is the case's name unless given.
AWD_KEYS = {"adam_beta1": 0.8, "adam_beta2": 0.95, "opt_epsilon": 0.01}
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
    "adamweightdecay": (AWD_KEYS, lambda: BertAdamWeightDecay(LR, 0.8, 0.95, 0.01),
                        ["adam_m", "adam_v"]),
    "adamweightdecay_on_biases": (AWD_KEYS, lambda: BertAdamWeightDecay(LR, 0.8, 0.95, 0.01),
                                  ["adam_m", "adam_v"], "adamweightdecay", "logits/biases"),
}


def tensorflow_run(make, v0, grads, slot_names, var_name):
    graph = tf.Graph()
    with graph.as_default():
        var = tf.compat.v1.Variable(v0, dtype=tf.float32, name=var_name)
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
    for name, (keys, make, slot_names, *ours) in CASES.items():
        optimizer, var_name = ours if ours else (name, "v")
        want, want_slots, want_powers = tensorflow_run(make, v0, grads, slot_names, var_name)
        out = os.path.join(work, name + ".npy")
        slots_out = os.path.join(work, name + "_slots.npy")
        cmd = [os.path.join(bin_dir, "tf_oracle_optimizer"), "--optimizer=" + optimizer,
               "--variable_name=" + var_name,
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
    verdict.conclude("optimizers", len(CASES), failed, "within %.0e relative" % TOLERANCE)


if __name__ == "__main__":
    main()
