#!/usr/bin/env bash
# TensorFlow as the oracle: checks this port against real
# TensorFlow and tf-slim in a project-local virtual environment with pinned
# versions (tests/tf_oracle/requirements.txt, made on first use under
# .cache/tf_oracle/ by scripts/uv_venv.sh and reused while the pins are
# unchanged): from uv's cache a fresh clone's environment takes seconds,
# far less than pip takes from its own cache (docs/performance.md).
# Not part of a user's first run: .ci/run calls it.
# Usage: scripts/tf_oracle.sh [--large | --all | NET ...]
#   (no argument: 12 of the 16 tf-slim nets; --large: the ResNets v1/v2 of
#   152 and 200 layers, the same blocks as the 50 and 101 checked by default
#   and minutes each on a slow CPU; --all: all 16)
# Prints one JSON line per net (writes build/tf_oracle/nets.json), then per
# optimizer (tests/tf_oracle/optimizers.py), per learning-rate schedule
# (tests/tf_oracle/schedules.py), per preprocessing function
# (tests/tf_oracle/preprocessing.py), per exported checkpoint
# (tests/tf_oracle/tf_export.py), then the file checks (tests/tf_oracle/files.py).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$(PYTHON=${FASTNN_ORACLE_PYTHON:-python3} scripts/uv_venv.sh tf_oracle \
  tests/tf_oracle/requirements.txt "TensorFlow, tf-slim: about 1.6 GB")
# The C++ side: the binaries tests/tf_oracle/*.py run.
scripts/setup.sh --tests tf_oracle_forward tf_oracle_optimizer train_image_classifier eval_image_classifier \
  convert_dataset export_tf_checkpoint >/dev/null
work=${BUILD_DIR:-build}/tf_oracle
rm -rf "$work"
mkdir -p "$work"
export TF_CPP_MIN_LOG_LEVEL=2
rc=0
"$venv/bin/python" -W ignore tests/tf_oracle/nets.py "${BUILD_DIR:-build}/bin" "$work" "$@" || rc=1
"$venv/bin/python" -W ignore tests/tf_oracle/optimizers.py "${BUILD_DIR:-build}/bin" \
  "$work/optimizers" || rc=1
"$venv/bin/python" -W ignore tests/tf_oracle/schedules.py "${BUILD_DIR:-build}/bin" || rc=1
"$venv/bin/python" -W ignore tests/tf_oracle/preprocessing.py "${BUILD_DIR:-build}/bin" \
  "$work/preprocessing" || rc=1
# Our TensorFlow checkpoints (export_tf_checkpoint) read by TensorFlow and
# restored into TF-slim's networks; FASTNN_SLIM_DIR (research/slim) adds
# lenet's and mobilenet_v1's logits.
"$venv/bin/python" -W ignore tests/tf_oracle/tf_export.py "${BUILD_DIR:-build}/bin" \
  "$work/tf_export" ${FASTNN_SLIM_DIR:+--slim_dir "$FASTNN_SLIM_DIR"} || rc=1
# The files (TFRecords, Examples, event files) both ways, on the quickstart's data set.
"$venv/bin/python" -W ignore tests/tf_oracle/files.py "${BUILD_DIR:-build}/bin" "$work/files" \
  "${FASTNN_FMNIST_DIR:-/usr/share/datasets/fashion-mnist}" || rc=1
exit $rc
