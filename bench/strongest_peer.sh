#!/usr/bin/env bash
# This project beside the strongest PyTorch peer a user could run instead,
# same machine, same run: Debian's PyTorch 1.13 and PyPI's newest
# (bench/peer_env.sh), each eager and with what a performance-minded user
# adds — torch.compile, channels_last, bf16 autocast where the CPU has
# AVX512_BF16 — beside our binaries. ROUNDS interleaved rounds (every entry
# once per round, in the same order); the medians are compared, and "the
# peer" of a workload is its fastest peer entry by median.
#
#  lenet:  Fashion-MNIST, EPOCHS epochs, batch 128, THREADS threads: the peer
#          is ../shared/bench/peer_pytorch.py's fmnist net and loop
#          (bench/peer_strong.py fmnist, tensors preloaded); ours is
#          bench/fmnist_vs_pytorch.sh's run (TFRecords through the whole
#          decode pipeline), fp32, and use_fp16=True where the CPU has
#          AVX512_BF16.
#  resnet: resnet_v1_50 training on synthetic 224x224 images, batch 32, 2
#          warm-up steps then RESNET_STEPS timed steps, THREADS threads: the
#          peer is peer_strong.py train RESNET_PEER_MODEL (TF-slim's topology
#          from ../shared/bench/slim_nets.py by default); ours as
#          bench/resnet50_vs_pytorch.sh, NCHW and NHWC. Both sides' multiply-add
#          counts are printed (ours: model_flops), and a peer whose count
#          differs from ours by more than 1 % gets no ratio.
# Ours runs once per build: BUILD_DIR's (LibTorch 1.13 from Debian, the
# default) and, when WHEEL_BUILD_DIR has one, the build against PyPI's
# LibTorch (scripts/setup.sh --torch-pypi, build-pypi/).
#
# Usage: bench/strongest_peer.sh [ROUNDS=3]
# Environment: PARTS (lenet,resnet), EPOCHS (1), RESNET_STEPS (5), THREADS (2),
#   LENET_VARIANTS (eager channels_last compile channels_last+compile bf16),
#   RESNET_VARIANTS (eager channels_last channels_last+compile bf16): the
#   PyPI peer's variants; DEBIAN_RESNET_VARIANTS (eager): the Debian peer's;
#   RESNET_PEER_MODEL (slim_resnet_v1_50; resnet50 is torchvision's heavier v1.5),
#   BUILD_DIR (build), WHEEL_BUILD_DIR (build-pypi; "" for none), PYPI_PYTHON (default: bench/peer_env.sh's, made on
#   first use: ~5 GB once; "" for no PyPI peer, a reduced comparison), DEBIAN_PYTHON (/usr/bin/python3; needs
#   python3-torch python3-torchvision).
# Prints a markdown table per workload and writes them to
# bench/results/strongest_peer_<UTC time>.md. Exits 1 when an entry failed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
PARTS=${PARTS:-lenet,resnet}
EPOCHS=${EPOCHS:-1}
RESNET_STEPS=${RESNET_STEPS:-5}
THREADS=${THREADS:-2}
LENET_VARIANTS=${LENET_VARIANTS:-eager channels_last compile channels_last+compile bf16}
RESNET_VARIANTS=${RESNET_VARIANTS:-eager channels_last channels_last+compile bf16}
DEBIAN_RESNET_VARIANTS=${DEBIAN_RESNET_VARIANTS:-eager}
RESNET_PEER_MODEL=${RESNET_PEER_MODEL:-slim_resnet_v1_50}
BIN=${BUILD_DIR:-build}/bin
WHEEL_BIN=${WHEEL_BUILD_DIR-build-pypi}/bin
[ -n "${WHEEL_BUILD_DIR-build-pypi}" ] && [ -x "$WHEEL_BIN/train_image_classifier" ] || WHEEL_BIN=""
DEBIAN_PYTHON=${DEBIAN_PYTHON:-/usr/bin/python3}
PYPI_PYTHON=${PYPI_PYTHON-$(bench/peer_env.sh)}
DATA=data/fashion_mnist
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for b in train_image_classifier convert_dataset; do
  [ -x "$BIN/$b" ] || { echo "strongest_peer: $BIN/$b missing: scripts/setup.sh first" >&2; exit 2; }
done
"$DEBIAN_PYTHON" -c 'import torch, torchvision' 2>/dev/null || {
  echo "strongest_peer: $DEBIAN_PYTHON lacks torch/torchvision: apt-get install python3-torch python3-torchvision" >&2
  exit 2
}
grep -qw avx512_bf16 /proc/cpuinfo && BF16=1 || BF16=0
stamp=$(date -u +%Y-%m-%dT%H%MZ)
failures=0

# entry NAME COMMAND...: one run; its images/s (or "unavailable: why", or
# "failed") appended to the entry's results.
declare -A results=() notes=()
order=()
entry() {
  local name=$1 log out rc=0
  shift
  [[ " ${order[*]} " == *" $name "* ]] || order+=("$name")
  log=$TMP/run.log
  echo "== $name" >&2
  "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" -eq 3 ] && grep -q '^unavailable=' "$log"; then
    out="unavailable"
    notes[$name]=$(sed -n 's/^unavailable=\([^ ]*\).*/\1/p' "$log" | tr '_' ' ')
  elif [ "$rc" -ne 0 ]; then
    out="failed"
    failures=$((failures + 1))
    tail -n 15 "$log" >&2
  else
    out=$(sed -n 's/.*images_per_sec[=":]* *\([0-9.]*\).*/\1/p' "$log" | tail -n 1)
    [ -n "$out" ] || out=$(ours_ips "$log")
    if [[ $out =~ ^[0-9]+(\.[0-9]+)?$ ]]; then out=$(printf '%.2f' "$out"); fi
    local extra
    extra=$(grep -o 'test_acc=[0-9.]*\|compile_secs=[0-9.]*\|torch=[^ ]*\|macs_g=[0-9.]*' "$log" |
      tr '\n' ' ' || true)
    [ -n "$extra" ] && notes[$name]=$extra
  fi
  echo "   $out" >&2
  results[$name]+="$out "
}

# Our resnet's images/s from its log lines (the steps after the 2 warm-up ones).
ours_ips() {
  awk -F'[[ ]' -v n="$RESNET_STEPS" '/global_step = / { match($0, /global_step = [0-9]+/);
      k = substr($0, RSTART + 14, RLENGTH - 14) + 0; if (k > 2) s += $2 }
      END { if (s > 0) printf "%.2f\n", 32 * n / s }' "$1"
}

median() {
  local v
  for v in "$@"; do [[ $v =~ ^[0-9.]+$ ]] || { echo "$v"; return; }; done
  printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $0 } END {
    m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.2f\n", m }'
}

# The LibTorch a build links, for the entries' names.
libtorch_of() {
  "$1/train_image_classifier" --version 2>/dev/null | sed -n 's/.*LibTorch \([0-9.]*\).*/\1/p' | head -1
}

ours_lenet() {  # BIN FP16
  local bin=$1
  shift
  rm -rf "$TMP/run_lenet"
  "$bin/train_image_classifier" --config configs/fashion_mnist_momentum.cfg --dataset_dir="$DATA" \
    --train_dir="$TMP/run_lenet" --batch_size=128 --learning_rate=0.02 --use_fp16="$1" \
    --num_epochs_per_decay=1 --stop_at_step=$((60000 / 128 * EPOCHS)) --log_loss_every_n_iters=0 \
    --intra_op_parallelism_threads="$THREADS" &&
    sed -n 's/.*"images_per_sec": \([0-9.]*\).*/images_per_sec=\1/p' "$TMP/run_lenet/metrics.json"
}

ours_resnet() {  # BIN LAYOUT
  local bin=$1
  shift
  "$bin/train_image_classifier" --dataset_name=mock --model_name=resnet_v1_50 --num_classes=1000 \
    --batch_size=32 --optimizer=momentum --learning_rate=0.01 --weight_decay=0.00004 \
    --stop_at_step=$((RESNET_STEPS + 2)) --log_loss_every_n_iters=1 --use_fp16=False \
    --data_format="$1" --intra_op_parallelism_threads="$THREADS" --num_preprocessing_threads=1 \
    --prefetch_buffer_size=2 --num_parallel_batches=1
}

# A resnet peer entry whose multiply-adds differ from ours by more than 1 %.
other_network() {
  local peer
  peer=$(sed -n 's/.*macs_g=\([0-9.]*\).*/\1/p' <<<"${notes[$1]:-}")
  [[ $1 == "resnet: peer"* && -n $ours_macs && -n $peer ]] &&
    awk -v a="$peer" -v b="$ours_macs" 'BEGIN { d = a / b - 1; exit !(d > 0.01 || d < -0.01) }'
}

machine() {
  echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), family $(lscpu | sed -n 's/^CPU family: *//p'),"\
    "model $(lscpu | sed -n 's/^Model: *//p'); flags: $(grep -o -w 'avx2\|avx512f\|avx512_bf16\|amx_bf16\|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ');"\
    "$(nproc) cores; Debian peer: torch $("$DEBIAN_PYTHON" -c 'import torch; print(torch.__version__)');"\
    "PyPI peer: ${PYPI_PYTHON:+torch $("$PYPI_PYTHON" -c 'import torch; print(torch.__version__)')}${PYPI_PYTHON:-none}"
}

if [[ ,$PARTS, == *,lenet,* ]] && [ ! -f "$DATA/labels.txt" ]; then
  "$BIN/convert_dataset" --dataset_name fashion_mnist --input /usr/share/datasets/fashion-mnist \
    --dataset_dir "$DATA" >/dev/null
fi
declare -A lt=()
for b in "$BIN" $WHEEL_BIN; do lt[$b]=$(libtorch_of "$b"); lt[$b]=${lt[$b]:-?}; done
loads=()
for ((round = 1; round <= ROUNDS; round++)); do
  loads+=("round $round: load $(cut -d' ' -f1-3 /proc/loadavg)")
  echo "== round $round of $ROUNDS (${loads[-1]})" >&2
  if [[ ,$PARTS, == *,lenet,* ]]; then
    for v in $LENET_VARIANTS; do
      if [ "$v" = eager ]; then
        entry "lenet: peer, Debian 1.13, eager" \
          "$DEBIAN_PYTHON" bench/peer_strong.py fmnist "$EPOCHS" "$THREADS" eager
      fi
      [ -z "$PYPI_PYTHON" ] ||
        entry "lenet: peer, PyPI, $v" "$PYPI_PYTHON" bench/peer_strong.py fmnist "$EPOCHS" "$THREADS" "$v"
    done
    for b in "$BIN" $WHEEL_BIN; do
      entry "lenet: ours, LibTorch ${lt[$b]}, fp32" ours_lenet "$b" False
      if [ "$BF16" = 1 ]; then
        entry "lenet: ours, LibTorch ${lt[$b]}, use_fp16 (bf16)" ours_lenet "$b" True
      fi
    done
  fi
  if [[ ,$PARTS, == *,resnet,* ]]; then
    for v in $DEBIAN_RESNET_VARIANTS; do
      entry "resnet: peer, Debian 1.13, $v" "$DEBIAN_PYTHON" bench/peer_strong.py train \
        "$RESNET_PEER_MODEL" 32 "$RESNET_STEPS" "$THREADS" "$v"
    done
    for v in ${PYPI_PYTHON:+$RESNET_VARIANTS}; do
      entry "resnet: peer, PyPI, $v" "$PYPI_PYTHON" bench/peer_strong.py train \
        "$RESNET_PEER_MODEL" 32 "$RESNET_STEPS" "$THREADS" "$v"
    done
    for b in "$BIN" $WHEEL_BIN; do
      entry "resnet: ours, LibTorch ${lt[$b]}, NCHW" ours_resnet "$b" NCHW
      entry "resnet: ours, LibTorch ${lt[$b]}, NHWC" ours_resnet "$b" NHWC
    done
  fi
done

{
  echo "# Beside the strongest peer, $stamp"
  echo
  echo "$(machine); commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown);" \
    "\`bench/strongest_peer.sh $ROUNDS\` (EPOCHS=$EPOCHS RESNET_STEPS=$RESNET_STEPS THREADS=$THREADS);" \
    "${loads[*]}"
  ours_macs=""
  if [[ ,$PARTS, == *,resnet,* ]] && [ -x "$BIN/model_flops" ]; then
    ours_macs=$("$BIN/model_flops" net resnet_v1_50 224 3 1000 | sed -n 's/.*conv_gmac=\([0-9.]*\).*/\1/p')
    echo
    echo "resnet multiply-adds per image: ours (resnet_v1_50, model_flops) $ours_macs G;" \
      "the peer ($RESNET_PEER_MODEL) in its notes (macs_g)"
  fi
  for w in lenet resnet; do
    [[ ,$PARTS, == *,$w,* ]] || continue
    best="" best_v=0
    for n in "${order[@]}"; do
      [[ $n == "$w: peer"* ]] || continue
      other_network "$n" && continue
      m=$(median ${results[$n]})
      if [[ $m =~ ^[0-9.]+$ ]] && awk -v a="$m" -v b="$best_v" 'BEGIN { exit !(a > b) }'; then
        best=$n best_v=$m
      fi
    done
    echo
    echo "| $w: images/s | rounds | median | ratio to the strongest peer | notes |"
    echo "|---|---|---|---|---|"
    for n in "${order[@]}"; do
      [[ $n == "$w:"* ]] || continue
      m=$(median ${results[$n]})
      r=$(awk -v a="$m" -v b="$best_v" 'BEGIN { if (a ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else print "-" }')
      other_network "$n" && r="- (another network)"
      mark=""
      [ "$n" = "$best" ] && mark=" (**the peer**)"
      echo "| ${n#"$w: "}$mark | ${results[$n]% } | $m | $r | ${notes[$n]:-} |"
    done
  done
} >"$TMP/table.md"
mkdir -p bench/results
cp "$TMP/table.md" "bench/results/strongest_peer_$stamp.md"
cat "$TMP/table.md"
[ "$failures" -eq 0 ] || { echo "strongest_peer: $failures run(s) failed" >&2; exit 1; }
