"""TensorFlow's own research/slim models as the oracle, once.

nets.py checks the 16 networks PyPI's tf-slim ships. This script does the
same check for the networks this port has that tf-slim does not ship, built
from a checkout of tensorflow/models' research/slim (not part of this
repository; pass its path): MobileNet v1 (and its depth multipliers),
MobileNet v2, NASNet, PNASNet, Inception v4, Inception-ResNet v2, CifarNet
and LeNet. Each is built in eval mode with its own arg_scope, randomized and
saved exactly as nets.tf_logits does (nets.build_and_save), and compared with this
port's tf_oracle_forward in NCHW and NHWC (nets.ours) within
nets.TOLERANCE x max(1, largest |logit|). NASNet and PNASNet build their
auxiliary heads only when training: their variables are added to the
checkpoint by a training-mode copy sharing the eval network's variables
(this port's models always have the head); the main logits are compared.

A one-time check, not a CI leg:
  python slim_models_once.py BIN_DIR WORK_DIR SLIM_DIR [NET ...]
with the oracle's virtual environment (.cache/tf_oracle/venv-*/bin/python)
and SLIM_DIR the research/slim directory (the one holding nets/).
"""
import functools
import importlib
import importlib.util
import json
import os
import sys
import types

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

# tests/tf_oracle/nets.py under another name: research/slim's package is
# `nets` too.
_spec = importlib.util.spec_from_file_location(
    "tf_oracle_nets", os.path.join(os.path.dirname(os.path.abspath(__file__)), "nets.py"))
oracle = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(oracle)

# name: (module under nets., network function, arg_scope function, arg_scope
#        keyword arguments, image size, channels, batch)
SLIM_NETS = {
    "lenet": ("lenet", "lenet", "lenet_arg_scope", {}, 28, 1, 2),
    "cifarnet": ("cifarnet", "cifarnet", "cifarnet_arg_scope", {}, 32, 3, 2),
    "mobilenet_v1": ("mobilenet_v1", "mobilenet_v1", "mobilenet_v1_arg_scope",
                     {"is_training": False}, 224, 3, 2),
    "mobilenet_v1_075": ("mobilenet_v1", "mobilenet_v1_075",
                         "mobilenet_v1_arg_scope", {"is_training": False},
                         224, 3, 2),
    "mobilenet_v1_050": ("mobilenet_v1", "mobilenet_v1_050",
                         "mobilenet_v1_arg_scope", {"is_training": False},
                         224, 3, 2),
    "mobilenet_v1_025": ("mobilenet_v1", "mobilenet_v1_025",
                         "mobilenet_v1_arg_scope", {"is_training": False},
                         224, 3, 2),
    "mobilenet_v2": ("mobilenet.mobilenet_v2", "mobilenet", "training_scope",
                     {"is_training": False}, 224, 3, 2),
    "mobilenet_v2_140": ("mobilenet.mobilenet_v2", "mobilenet_v2_140",
                         "training_scope", {"is_training": False}, 224, 3, 2),
    "mobilenet_v2_035": ("mobilenet.mobilenet_v2", "mobilenet_v2_035",
                         "training_scope", {"is_training": False}, 224, 3, 2),
    "nasnet_cifar": ("nasnet.nasnet", "build_nasnet_cifar",
                     "nasnet_cifar_arg_scope", {}, 32, 3, 2),
    "nasnet_mobile": ("nasnet.nasnet", "build_nasnet_mobile",
                      "nasnet_mobile_arg_scope", {}, 224, 3, 2),
    "nasnet_large": ("nasnet.nasnet", "build_nasnet_large",
                     "nasnet_large_arg_scope", {}, 331, 3, 1),
    "pnasnet_mobile": ("nasnet.pnasnet", "build_pnasnet_mobile",
                       "pnasnet_mobile_arg_scope", {}, 224, 3, 2),
    "pnasnet_large": ("nasnet.pnasnet", "build_pnasnet_large",
                      "pnasnet_large_arg_scope", {}, 331, 3, 1),
    "inception_v4": ("inception_v4", "inception_v4", "inception_v4_arg_scope",
                     {}, 299, 3, 2),
    "inception_resnet_v2": ("inception_resnet_v2", "inception_resnet_v2",
                            "inception_resnet_v2_arg_scope", {}, 299, 3, 2),
}


def contrib_training_shim():
    """research/slim's nasnet.py and pnasnet.py take HParams from
    tensorflow.contrib.training, which TensorFlow 2 does not have: a minimal
    stand-in (keyword attributes, set_hparam), put in sys.modules."""
    try:
        from tensorflow.contrib import training  # noqa: F401
        return
    except ImportError:
        pass

    class HParams(object):
        def __init__(self, **kwargs):
            self.__dict__.update(kwargs)

        def set_hparam(self, name, value):
            if name not in self.__dict__:
                raise ValueError("unknown hparam %s" % name)
            setattr(self, name, value)

    contrib = types.ModuleType("tensorflow.contrib")
    training = types.ModuleType("tensorflow.contrib.training")
    training.HParams = HParams
    contrib.training = training
    sys.modules["tensorflow.contrib"] = contrib
    sys.modules["tensorflow.contrib.training"] = training


def with_aux_head_variables(fn):
    """NASNet and PNASNet build their auxiliary head only when training, but
    this port's models always have it (and want its variables in the
    checkpoint). The eval-mode network gives the logits; a training-mode copy
    sharing its variables (AUTO_REUSE) then adds just the auxiliary head's
    variables (and the global step of drop path) to the checkpoint."""
    def build(images, num_classes, is_training=False):
        logits, end_points = fn(images, num_classes, is_training=is_training)
        with tf.compat.v1.variable_scope(tf.compat.v1.get_variable_scope(),
                                         reuse=tf.compat.v1.AUTO_REUSE):
            fn(images, num_classes, is_training=True)
        return logits, end_points
    return build


def network(name):
    """(network function, arg_scope function) from research/slim's nets."""
    module, fn, scope, scope_kwargs = SLIM_NETS[name][:4]
    m = importlib.import_module("nets." + module)
    fn = getattr(m, fn)
    if module.startswith("nasnet."):
        fn = with_aux_head_variables(fn)
    return fn, functools.partial(getattr(m, scope), **scope_kwargs)


def tf_logits(name, work):
    """nets.build_and_save on research/slim's network."""
    fn, arg_scope = network(name)
    size, channels, batch = SLIM_NETS[name][4:]
    return oracle.build_and_save(name, work, fn, arg_scope, size, "V2", batch, channels)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    bin_dir, work, slim_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    sys.path.insert(0, os.path.abspath(slim_dir))
    contrib_training_shim()
    names = sys.argv[4:] or list(SLIM_NETS)
    os.makedirs(work, exist_ok=True)
    rows, failed = oracle.check_nets(
        bin_dir, work, names, tf_logits,
        lambda name, images: {"batch": int(images.shape[0]), "input": list(images.shape[1:])})
    with open(os.path.join(work, "slim_models.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print("tf_oracle research/slim nets: %d of %d within %.0e x max(1, |logit|)%s" % (
        len(names) - len(failed), len(names), oracle.TOLERANCE,
        "; differ: " + ", ".join(failed) if failed else ""))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
