# shellcheck shell=bash
# Sourced by the fault-injection scripts of tests/faults (after their
# `set -uo pipefail` and `bin=...`): helpers for driving the built binaries
# in $bin on a tiny dataset. Only defines functions; they use the scripts'
# globals bin (the BIN_DIR), work (the work directory), dir (the train_dir)
# and trainer_pid (the trainer running in the background, if any).
# A script may define its own cleanup or fail after sourcing this file.

# require_bins NAME...: exit 1 unless every NAME is an executable in $bin.
require_bins() {
  local b
  for b in "$@"; do
    [ -x "$bin/$b" ] || { echo "FAIL: $bin/$b is missing"; exit 1; }
  done
}

# require_shim: exit 1 unless $shim (fault_shim.c built, the scripts'
# second argument) exists.
require_shim() {
  [ -f "$shim" ] || { echo "FAIL: $shim (the fault shim) is missing"; exit 1; }
}

# Makes the work directory $work, with no trainer yet; on exit `cleanup`
# runs, INT and TERM exit 1.
make_work() {
  work=$(mktemp -d)
  trainer_pid=
  trap cleanup EXIT
  trap 'exit 1' INT TERM
}

# SIGKILLs the background trainer, if it still runs, and reaps it.
kill_trainer() {
  if [ -n "$trainer_pid" ] && kill -0 "$trainer_pid" 2>/dev/null; then
    kill -KILL "$trainer_pid" 2>/dev/null
    { wait "$trainer_pid"; } 2>/dev/null
  fi
}

# start_test [--shim] NAME...: the start of a test (after its bin=, and
# shim= with --shim): exit 1 unless every NAME is an executable in $bin
# (and, with --shim, the shim exists); then make_work.
start_test() {
  local with_shim=0
  if [ "${1:-}" = --shim ]; then
    with_shim=1
    shift
  fi
  require_bins "$@"
  if ((with_shim)); then require_shim; fi
  make_work
}

# The exit trap: no trainer left behind, the work directory removed.
cleanup() {
  kill_trainer
  rm -rf "$work"
}

# fail MESSAGE...: prints FAIL and the message, the tails of the three
# newest logs (without eval's per-class lines) and the train_dir; exit 1.
fail() {
  echo "FAIL: $*"
  ls -t "$work"/*.log "$work"/*.out 2>/dev/null | head -n 3 | while read -r f; do
    echo "--- tail of ${f##*/}"
    grep -v '^  class ' "$f" | tail -n 8
  done
  [ -d "${dir:-}" ] && echo "--- train_dir: $(ls -A "$dir" | tr '\n' ' ')"
  exit 1
}

# be32 N: N as 4 bytes, big-endian, on stdout.
be32() {
  local v=$1
  printf "\\$(printf %03o $(((v >> 24) & 255)))\\$(printf %03o $(((v >> 16) & 255)))"
  printf "\\$(printf %03o $(((v >> 8) & 255)))\\$(printf %03o $((v & 255)))"
}
# make_idx DIR STEM COUNT: MNIST-format IDX files of COUNT random 28x28
# images and their labels 0-9 in turn (COUNT a multiple of 10).
make_idx() {
  local i
  { printf '\000\000\010\003'; be32 "$3"; be32 28; be32 28
    head -c $(($3 * 784)) /dev/urandom; } >"$1/$2-images-idx3-ubyte"
  { printf '\000\000\010\001'; be32 "$3"
    for ((i = 0; i < $3 / 10; i++)); do printf '\000\001\002\003\004\005\006\007\010\011'; done
  } >"$1/$2-labels-idx1-ubyte"
}
# A tiny MNIST-format dataset of random 28x28 images (320 train, 100 test)
# in $work/raw, converted to TFRecords in $work/data (log: convert.log):
# LeNet trains and evaluates on it in well under a second of compute.
make_dataset() {
  mkdir -p "$work/raw"
  make_idx "$work/raw" train 320
  make_idx "$work/raw" t10k 100
  "$bin/convert_dataset" --dataset_name mnist --input "$work/raw" --dataset_dir "$work/data" \
    --num_threads 1 --quiet >"$work/convert.log" 2>&1 || fail "convert_dataset exited $?"
}

# write_train_cfg OPTIMIZER [KEY=VALUE...]: $work/train.cfg, LeNet on the
# tiny dataset with OPTIMIZER, one thread each; the KEY=VALUE lines last.
write_train_cfg() {
  local optimizer=$1
  shift
  {
    cat <<EOF
model_name=lenet
dataset_name=mnist
dataset_dir=$work/data
optimizer=$optimizer
learning_rate=0.01
batch_size=8
use_fp16=False
enable_paisoar=False
intra_op_parallelism_threads=1
num_preprocessing_threads=1
shuffle_buffer_size=64
eval_batch_size=50
num_epochs=100000
log_loss_every_n_iters=10
EOF
    [ $# = 0 ] || printf '%s\n' "$@"
  } >"$work/train.cfg"
}

# nap_open, then nap SECONDS: a sleep without a fork, a read that times out
# on a pipe nobody writes to.
nap_open() { exec {nap_fd}<> <(:); }
nap() { read -r -t "$1" -u "$nap_fd" _; true; }
# random_sleep MAX_MS: naps a random 0-MAX_MS ms; sets slept_ms.
random_sleep() {
  local t
  slept_ms=$((RANDOM % ($1 + 1)))
  printf -v t '%d.%03d' $((slept_ms / 1000)) $((slept_ms % 1000))
  nap "$t"
}
# The time in milliseconds.
now_ms() { date +%s%3N; }

# wait_trainer SECONDS MESSAGE: waits for the trainer to exit, polling
# without a fork; fails with MESSAGE if it still runs after SECONDS. Sets rc
# to its exit status.
wait_trainer() {
  local deadline=$((SECONDS + $1))
  while kill -0 "$trainer_pid" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || fail "$2"
    nap 0.05
  done
  wait "$trainer_pid"
  rc=$?
  trainer_pid=
}

# Fork-free (the polls must not steal the trainer's CPU): sets `newest` to
# the highest step of a model.ckpt-<step> file in the train_dir, 0 if none.
scan_newest() {
  local f n
  newest=0
  for f in "$dir"/model.ckpt-*; do
    n=${f##*/model.ckpt-}
    [[ $n =~ ^[0-9]+$ ]] && ((10#$n > newest)) && newest=$((10#$n))
  done
}
# True when the train_dir holds a temporary file (<name>.tmp-<pid>).
has_temporary() {
  local f
  for f in "$dir"/*.tmp-*; do
    [[ -e $f && ${f##*.tmp-} =~ ^[0-9]+$ ]] && return 0
  done
  return 1
}
# The names of the train_dir's temporary files, one a line.
temporaries() { ls -A "$dir" 2>/dev/null | grep -E '\.tmp-[0-9]+$'; }
# Processes whose command line names this test's directory (builtins only).
procs_of_test() {
  local p args
  for p in /proc/[0-9]*; do
    mapfile -d '' args 2>/dev/null <"$p/cmdline" || continue
    [[ "${args[*]}" == *"$work"* ]] && echo "${p#/proc/}: ${args[*]}"
  done
}

# evaluate NAME [TIMEOUT_S]: eval_image_classifier on the train_dir's newest
# readable checkpoint (log: NAME.log; with TIMEOUT_S, a run still going
# after that long fails as a hang); it must exit 0 and pass over no file.
# Sets eval_step.
evaluate() {
  local log=$work/$1.log rc
  if [ -n "${2:-}" ]; then
    timeout -k 10 "$2" "$bin/eval_image_classifier" --config "$work/train.cfg" \
      --checkpoint_path="$dir" >"$log" 2>&1
    rc=$?
    [ $rc != 124 ] || fail "$1: eval_image_classifier still ran after $2 s (a hang)"
  else
    "$bin/eval_image_classifier" --config "$work/train.cfg" --checkpoint_path="$dir" >"$log" 2>&1
    rc=$?
  fi
  [ $rc = 0 ] || fail "$1: eval_image_classifier on the train_dir exited $rc"
  eval_step=$(sed -n 's/^eval_result .*"global_step":\([0-9][0-9]*\).*/\1/p' "$log")
  [ -n "$eval_step" ] || fail "$1: no eval_result with a global_step"
  if grep -q "passed over" "$log"; then
    fail "$1: a model.ckpt-* file is unreadable: $(grep -m1 'passed over' "$log")"
  fi
}
