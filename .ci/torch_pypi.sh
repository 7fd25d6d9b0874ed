#!/usr/bin/env bash
# CI's third LibTorch: the CPU libraries of PyPI's newest torch wheel, the
# option a user who wants speed builds with (scripts/setup.sh --torch-pypi;
# README, docs/performance.md). The wheel (pinned in
# scripts/torch-pypi-requirements.txt) comes into a project-local
# environment (.cache/torch_pypi/, shared with the benchmarks' peer) through
# uv's cache: about 5 GB downloaded on a machine's first run, seconds after.
# It builds what a user of the option builds (build-pypi/, Release, so that
# the compiler cache is shared with a developer's build-pypi) and the unit
# tests of the parts that call LibTorch the most: the trainer and its step
# (train_test), the optimizers, lenet and the layers, the datasets and
# preprocessing, c10d's Gloo collectives and the distributed step; then it
# trains lenet for 200 steps through the whole pipeline and evaluates it.
#
# Usage: .ci/torch_pypi.sh [ctest arguments]   (default: the tests above)
# Environment: BUILD_DIR (build-pypi), JOBS (2).
set -euo pipefail
cd "$(dirname "$0")/.."
export BUILD_DIR=${BUILD_DIR:-build-pypi}
TESTS=(train_test optim_test models_test datasets_test dist_comm_test dist_train_test)
t0=$SECONDS
scripts/setup.sh --tests --torch-pypi "${TESTS[@]}" train_image_classifier eval_image_classifier \
  convert_dataset
echo "torch_pypi: set-up and build took $((SECONDS - t0)) s"
bin=$BUILD_DIR/bin
"$bin/train_image_classifier" --version | grep -q "(LibTorch 2\." || {
  echo "torch_pypi: $bin/train_image_classifier is not built against LibTorch 2.x:" \
    "$("$bin/train_image_classifier" --version)" >&2
  exit 1
}

ctest_args=("$@")
if ((${#ctest_args[@]} == 0)); then
  ctest_args=(-R "^($(IFS='|'; echo "${TESTS[*]}"))\$")
fi
t1=$SECONDS
(cd "$BUILD_DIR" && OMP_NUM_THREADS=1 ctest -j 2 --output-on-failure --timeout 900 "${ctest_args[@]}")
echo "torch_pypi: tests took $((SECONDS - t1)) s"

# The trainer end to end on this LibTorch: 200 steps of the quickstart's
# recipe, then an evaluation on the 10,000 test images, which must beat
# chance (0.1) by far.
t2=$SECONDS
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin/convert_dataset" --dataset_name fashion_mnist --input /usr/share/datasets/fashion-mnist \
  --dataset_dir "$work/data" >/dev/null
"$bin/train_image_classifier" --config configs/quickstart.cfg --dataset_dir="$work/data" \
  --train_dir="$work/run" --stop_at_step=200 --log_loss_every_n_iters=100 2>&1 | grep -E '^Stopped'
acc=$("$bin/eval_image_classifier" --config configs/quickstart.cfg --dataset_dir="$work/data" \
  --checkpoint_path="$work/run" | sed -n 's/^Accuracy = \([0-9.]*\).*/\1/p')
echo "torch_pypi: lenet after 200 steps: test accuracy ${acc:-missing} ($((SECONDS - t2)) s)"
awk -v a="${acc:-0}" 'BEGIN { exit !(a >= 0.6) }' || {
  echo "torch_pypi: test accuracy ${acc:-missing} after 200 steps, expected at least 0.6" >&2
  exit 1
}
