#!/usr/bin/env bash
# This project beside PyTorch on one NVIDIA GPU, same machine, same run:
#  a. resnet_v1_50 training, batch 256, 224x224 synthetic images, channels-last
#     (data_format=NHWC), AMP fp16 and bf16: images/sec of STEPS timed steps
#     after WARMUP untimed ones, and peak GPU memory. Ours: dataset mock, as
#     bench/resnet50_vs_pytorch.sh, twice: through the input pipeline, and
#     with synthetic_device_inputs (one batch made on the GPU and reused, as
#     the peer's: the step alone). Peer: bench/gpu_peer_resnet50.py (eager
#     PyTorch, channels_last, autocast, SGD momentum 0.9, images already on the
#     GPU, cudnn.benchmark on as ours with --cudnn_benchmark=True, and the
#     same under torch.compile (PEER_VARIANTS); TF32 at
#     PyTorch's defaults in both: matmuls off, cuDNN on). Peak memory of both: nvidia-smi's
#     used_memory of the process, polled every 0.2 s; the peer's
#     torch.cuda.max_memory_allocated() is an extra column.
#  b. lenet on Fashion-MNIST from TFRecords, configs/fashion_mnist_lenet.cfg
#     (the >= 0.915 recipe) on the GPU: wall time of training + evaluation and
#     the test accuracy, vs ../shared/bench/peer_pytorch.py fmnist, which has
#     no device option and runs on the CPU as it is.
#  p. (PARTS=profile, not in the default) where a step's GPU time goes: ours
#     with synthetic_device_inputs under FASTNN_PROFILE_STEPS, the peer under
#     torch.profiler (--profile-steps), PROFILE_STEPS (5) steps after WARMUP
#     + 10; the two tables (CUDA kernels by total time per step) go to
#     bench/results/gpu_profile_<UTC time>.txt.
#  c. NCCL all-reduce bus bandwidth over every GPU of the machine (one
#     process each; none on a one-GPU machine) through the trainer's collective
#     (allreduce_bench's cuda mode) vs torch.distributed's NCCL all-reduce,
#     1 MiB and 100 MB (about resnet_v1_50's gradients).
# Prints a markdown table (metric, ours, PyTorch, ratio ours/peer) with the GPU
# and driver, and writes it to bench/results/gpu_<UTC time>.md.
#
# Build first: scripts/gpu_check.sh (builds build-gpu/).
# Usage: bench/gpu_vs_pytorch.sh [STEPS=50]
# Environment: WARMUP (10), BATCH (256), PARTS (resnet,fmnist,allreduce),
#   OURS_ARGS (extra trainer flags for ours, e.g. --num_preprocessing_threads=14),
#   PRECISIONS ("fp16 bf16"), ROUNDS (1: interleaved rounds of the resnet
#   part, medians reported), INPUTS ("pipeline device": ours through the
#   input pipeline and/or with synthetic_device_inputs), PEER_VARIANTS
#   ("eager compile": the peer as it is, and its model under torch.compile,
#   inductor's default mode, its cache one per precision and kept across the
#   rounds: the first round compiles, the next ones mostly read it back;
#   "compile:max-autotune" names a mode; each row is against each variant,
#   the fastest by median marked the strongest),
#   BUILD_DIR (build-gpu), PYTHON (python3), PEER (../shared/bench/peer_pytorch.py,
#   else shared/bench/peer_pytorch.py), PEER_FMNIST_EPOCHS (12: the peer's net
#   reaches ~0.92 there), PEER_THREADS (nproc), FMNIST_RAW (the IDX files;
#   default /usr/share/datasets/fashion-mnist, else BUILD_DIR/prefix/...).
# Exits 1 when a measurement failed (its cell says so); the others still run.
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-50}
WARMUP=${WARMUP:-10}
BATCH=${BATCH:-256}
PARTS=${PARTS:-resnet,fmnist,allreduce}
ROUNDS=${ROUNDS:-1}
INPUTS=${INPUTS:-pipeline device}
PEER_VARIANTS=${PEER_VARIANTS:-eager compile}
# Our log line every LOG_EVERY steps (WARMUP and STEPS multiples of it).
LOG_EVERY=${LOG_EVERY:-10}
if ((WARMUP % LOG_EVERY || STEPS % LOG_EVERY)); then
  echo "bench: WARMUP ($WARMUP) and STEPS ($STEPS) must be multiples of LOG_EVERY ($LOG_EVERY)" >&2
  exit 2
fi
BUILD_DIR=${BUILD_DIR:-build-gpu}
BIN=$BUILD_DIR/bin
PYTHON=${PYTHON:-python3}
PEER=${PEER:-../shared/bench/peer_pytorch.py}
if [ ! -f "$PEER" ] && [ -f shared/bench/peer_pytorch.py ]; then PEER=shared/bench/peer_pytorch.py; fi
PEER_FMNIST_EPOCHS=${PEER_FMNIST_EPOCHS:-12}
PEER_THREADS=${PEER_THREADS:-$(nproc)}
DATA=data/fashion_mnist
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

command -v nvidia-smi >/dev/null || { echo "bench: nvidia-smi not found" >&2; exit 2; }
[ -x "$BIN/train_image_classifier" ] || {
  echo "bench: $BIN/train_image_classifier missing: run scripts/gpu_check.sh first" >&2; exit 2; }

# Libraries unpacked by gpu_check.sh (--debs): our binaries need them at run
# time; the peers do not get them.
OURS_LD=${LD_LIBRARY_PATH:-}
for d in "$BUILD_DIR"/prefix/usr/lib/*-linux-gnu "$BUILD_DIR/prefix/usr/lib"; do
  if [ -d "$d" ]; then OURS_LD="$PWD/$d${OURS_LD:+:$OURS_LD}"; fi
done
OURS_ENV=(env)
if [ -n "$OURS_LD" ]; then OURS_ENV+=("LD_LIBRARY_PATH=$OURS_LD"); fi

gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed -n 1p)
torch_info=$("$PYTHON" -c 'import torch; print(f"PyTorch {torch.__version__}, CUDA {torch.version.cuda}")' \
  2>/dev/null || echo "PyTorch not importable")
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
stamp=$(date -u +%Y-%m-%dT%H%MZ)
failures=0

gpu_used_mib() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | sed -n 1p; }

# Appends nvidia-smi samples to FILE every 0.2 s while PID runs: a line
# "sample <whole-GPU MiB>", then one "pid, MiB" line per compute process.
poll_gpu_memory() {
  local pid=$1 file=$2
  while kill -0 "$pid" 2>/dev/null; do
    {
      echo "sample $(gpu_used_mib)"
      nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits
    } >>"$file" 2>/dev/null || true
    sleep 0.2
  done
}

# Peak MiB of PID in FILE. Where nvidia-smi lists no such pid (a container's
# pid namespace), the whole GPU's peak minus BASE (its reading before the
# run), marked with '*'; the benchmark is then the only GPU user.
peak_mib() {
  awk -F', *' -v pid="$1" -v base="$3" '
    /^sample / { split($0, a, " "); if (a[2] + 0 > tot) tot = a[2] + 0; next }
    $1 == pid && $2 ~ /^[0-9]+$/ { found = 1; if ($2 + 0 > m) m = $2 + 0 }
    END { if (found) print m; else if (tot > 0) printf "%d*\n", tot - base; else print "n/a" }' "$2"
}

# measure LOG CMD...: runs CMD with its output in LOG, polling its GPU memory.
# Sets rc, wall (seconds) and peak (MiB). CMD must exec (a binary, python3 or
# env), so that $! is the process nvidia-smi lists.
measure() {
  local log=$1 base samples pid poller t0
  shift
  base=$(gpu_used_mib || true)
  samples=$log.mem
  : >"$samples"
  t0=$(date +%s.%N)
  "$@" >"$log" 2>&1 &
  pid=$!
  poll_gpu_memory "$pid" "$samples" &
  poller=$!
  rc=0
  wait "$pid" || rc=$?
  wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  wait "$poller" || true
  peak=$(peak_mib "$pid" "$samples" "$base")
  if [ "$rc" -ne 0 ]; then
    failures=$((failures + 1))
    echo "bench: '$*' exited $rc; its last lines:" >&2
    tail -n 20 "$log" >&2
  fi
}

# The median of its arguments when all are numbers (a trailing '*' kept),
# else the first one that is not.
median() {
  local v
  for v in "$@"; do [[ $v =~ ^[0-9.]+\*?$ ]] || { echo "$v"; return; }; done
  printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $0 } END {
    if (NR == 0) { print "n/a"; exit }
    m = (NR % 2) ? a[(NR + 1) / 2] : sprintf("%.2f", (a[NR / 2] + a[NR / 2 + 1]) / 2); print m }'
}

ratio() {  # A B -> A/B, or "-" when either is not a number
  awk -v a="$1" -v b="$2" 'BEGIN {
    if (a !~ /^[0-9.]+\*?$/ || b !~ /^[0-9.]+\*?$/ || b + 0 == 0) print "-";
    else printf "%.2f", (a + 0) / (b + 0) }'
}

rows=()
row() {  # METRIC OURS PEER [PEER_MAX_MEMORY_ALLOCATED]
  rows+=("| $1 | $2 | $3 | $(ratio "$2" "$3") | ${4:-} |")
}
notes=()

# --- a. resnet_v1_50, AMP, channels-last ---------------------------------------
if [[ ,$PARTS, == *,resnet,* ]]; then
  # use_fp16 turns autocast on; mixed_precision picks its half type on CUDA.
  # ROUNDS interleaved rounds (peer, then ours for each of INPUTS); each
  # row is the median over the rounds, its label lists every round.
  for prec in ${PRECISIONS:-fp16 bf16}; do
    declare -A got=()
    for ((round = 1; round <= ROUNDS; round++)); do
      # Each peer variant (PEER_VARIANTS): eager, and compile (the model
      # under torch.compile; its first step compiles, never timed).
      for variant in $PEER_VARIANTS; do
        echo "== resnet_v1_50 $prec round $round: peer ($variant)" >&2
        vargs=()
        case $variant in
          eager) ;;
          compile) vargs=(--compile) ;;
          compile:*) vargs=(--compile "${variant#compile:}") ;;
          *) echo "bench: unknown PEER_VARIANTS entry '$variant'" >&2; exit 2 ;;
        esac
        plog=$TMP/peer_${prec}_${variant//[^a-z0-9]/_}.log
        # Inductor's cache, one per precision: PyTorch 2.11's FX graph cache
        # hands a bf16 run the graph compiled for fp16 (fp16 kernels) when
        # both share the default one.
        measure "$plog" env TORCHINDUCTOR_CACHE_DIR="$TMP/inductor_$prec" \
          "$PYTHON" bench/gpu_peer_resnet50.py --precision "$prec" \
          --batch-size "$BATCH" --steps "$STEPS" --warmup "$WARMUP" "${vargs[@]}"
        ips=$(sed -n 's/.*images_per_sec=\([0-9.]*\).*/\1/p' "$plog")
        alloc=$(sed -n 's/.*max_memory_allocated_mib=\([0-9]*\).*/\1/p' "$plog")
        csecs=$(sed -n 's/.*compile_secs=\([0-9.]*\).*/\1/p' "$plog")
        peer_model=$(sed -n 's/.* model=\([a-z]*\).*/\1/p' "$plog")
        [ "$rc" -eq 0 ] || ips="failed(exit_$rc)"
        # The figures go to the progress output as they come (a run cut
        # short by a time bound keeps them).
        echo "   peer $variant $prec round $round: images/s ${ips:-n/a}, peak $peak MiB," \
          "max_memory_allocated ${alloc:-n/a} MiB, compile ${csecs:-n/a} s" >&2
        got[peer_${variant}_ips]+="${ips:-n/a} " got[peer_${variant}_peak]+="$peak "
        got[peer_${variant}_alloc]=${alloc:-n/a} got[peer_${variant}_csecs]+="${csecs:-n/a} "
      done

      # Ours: the mock images through the input pipeline (made on the CPU,
      # copied each step), and/or synthetic_device_inputs (one batch made on
      # the GPU and reused, as the peer's): the step alone.
      for input in $INPUTS; do
        extra=()
        [ "$input" = device ] && extra=(--synthetic_device_inputs=True)
        echo "== resnet_v1_50 $prec round $round: ours ($input input)" >&2
        # 16 batches prepared ahead (pageable memory, 2.5 GB): a batch of mock
        # images takes one core a large part of a second, so 4 ahead would
        # cap the input below the GPU's step rate (docs/performance.md, "GPU").
        log=$TMP/ours_${prec}_$input.log
        measure "$log" "${OURS_ENV[@]}" "$BIN/train_image_classifier" \
          --dataset_name=mock --model_name=resnet_v1_50 --num_classes=1000 \
          --batch_size="$BATCH" --optimizer=momentum --momentum=0.9 --learning_rate=0.01 \
          --weight_decay=0.00004 --stop_at_step=$((WARMUP + STEPS)) --log_loss_every_n_iters="$LOG_EVERY" \
          --data_format=NHWC --device=cuda --use_fp16=True --mixed_precision="$prec" \
          --cudnn_benchmark=True --nproc_per_node=1 --prefetch_buffer_size=16 "${extra[@]}" ${OURS_ARGS:-}
        # The last log lines (time per step, the share of it spent waiting for
        # input) go to the progress output.
        grep -E 'secs/step|Stopped at' "$log" | tail -n 3 >&2 || true
        # Seconds of the timed steps (global_step WARMUP+1 .. WARMUP+STEPS), from
        # the log lines "[S secs/step, ...] ... global_step = N", S being the mean
        # over the steps since the previous line (one every LOG_EVERY steps, so
        # that the steps between them read nothing on the host, as in training).
        secs=$(awk -v w="$WARMUP" '/global_step = / {
            match($0, /global_step = [0-9]+/); n = substr($0, RSTART + 14, RLENGTH - 14) + 0
            match($0, /\[[0-9.]+ secs\/step/); t = substr($0, RSTART + 1, RLENGTH - 11) + 0
            if (n > w && prev >= w) s += t * (n - prev); prev = n } END { print s + 0 }' "$log")
        ips=$(awk -v s="$secs" -v b="$BATCH" -v n="$STEPS" 'BEGIN {
            if (s > 0) printf "%.2f", b * n / s; else print "n/a" }')
        [ "$rc" -eq 0 ] || { ips="failed(exit_$rc)"; peak="failed"; }
        echo "   ours $input $prec round $round: images/s $ips, peak $peak MiB" >&2
        got[${input}_ips]+="$ips " got[${input}_peak]+="$peak "
      done
    done
    # The peer of the rows: the variant with the highest median images/s.
    best="" best_ips=""
    for variant in $PEER_VARIANTS; do
      m=$(median ${got[peer_${variant}_ips]})
      [[ $m =~ ^[0-9.]+$ ]] || continue
      if [ -z "$best" ] || awk -v a="$m" -v b="$best_ips" 'BEGIN { exit !(a > b) }'; then
        best=$variant best_ips=$m
      fi
    done
    best=${best:-${PEER_VARIANTS%% *}}
    for input in $INPUTS; do
      label="$prec NHWC b$BATCH"
      [ "$input" = device ] && label="$label, synthetic_device_inputs"
      for variant in $PEER_VARIANTS; do
        rounds=""
        if [ "$ROUNDS" -gt 1 ]; then
          rounds=", median of $ROUNDS rounds (ours: ${got[${input}_ips]% }; peer: ${got[peer_${variant}_ips]% })"
        fi
        tag="peer $variant"
        [ "$variant" = "$best" ] && [ "${PEER_VARIANTS// /}" != "$PEER_VARIANTS" ] && tag="$tag, **the strongest**"
        row "resnet_v1_50 $label: images/s, $tag$rounds (higher is better)" \
          "$(median ${got[${input}_ips]})" "$(median ${got[peer_${variant}_ips]})"
        row "resnet_v1_50 $label: peak GPU memory, nvidia-smi MiB, $tag (lower is better)" \
          "$(median ${got[${input}_peak]})" "$(median ${got[peer_${variant}_peak]})" \
          "${got[peer_${variant}_alloc]:-n/a}"
      done
    done
    for variant in $PEER_VARIANTS; do
      case $variant in compile*)
        notes+=("peer $variant, $prec: compile seconds (its first step, untimed) per round: ${got[peer_${variant}_csecs]% }") ;;
      esac
    done
    unset got
  done
  notes+=("resnet: $STEPS timed steps after $WARMUP warm-up steps; ours: dataset_name=mock\
 (images made on the CPU by the input pipeline and copied each step; with synthetic_device_inputs\
 one batch made on the GPU and reused, as the peer's), use_fp16=True with mixed_precision=fp16 / bf16,\
 one process (nproc_per_node=1), cudnn_benchmark=True; peer: ${peer_model:-?} resnet50, images on the GPU,\
 cudnn.benchmark on; TF32 as PyTorch's defaults in both (matmul off, cuDNN on).")
  notes+=("peak memory '*': nvidia-smi listed no per-process figure; whole-GPU memory.used minus its idle reading.")
fi

# --- b. lenet on Fashion-MNIST to >= 0.915 --------------------------------------
if [[ ,$PARTS, == *,fmnist,* ]]; then
  cfg=configs/fashion_mnist_lenet.cfg
  FMNIST_RAW=${FMNIST_RAW:-/usr/share/datasets/fashion-mnist}
  if [ ! -d "$FMNIST_RAW" ] && [ -d "$BUILD_DIR/prefix/usr/share/datasets/fashion-mnist" ]; then
    FMNIST_RAW=$BUILD_DIR/prefix/usr/share/datasets/fashion-mnist
  fi
  # convert_dataset refuses to overwrite: convert once (as fmnist_vs_pytorch.sh).
  if [ -f "$DATA/labels.txt" ] || "${OURS_ENV[@]}" "$BIN/convert_dataset" --dataset_name fashion_mnist \
      --input "$FMNIST_RAW" --dataset_dir "$DATA" >/dev/null; then
    echo "== fmnist: ours" >&2
    measure "$TMP/ours_fmnist.log" "${OURS_ENV[@]}" "$BIN/train_image_classifier" \
      --config "$cfg" --dataset_dir="$DATA" --train_dir="$TMP/fmnist" --device=cuda \
      --nproc_per_node=1
  else
    rc=$? wall=0
    failures=$((failures + 1))
    echo "bench: convert_dataset failed on $FMNIST_RAW" >&2
  fi
  train_rc=$rc train_wall=$wall
  if [ "$train_rc" -eq 0 ]; then
    measure "$TMP/ours_fmnist_eval.log" "${OURS_ENV[@]}" "$BIN/eval_image_classifier" \
      --config "$cfg" --dataset_dir="$DATA" --checkpoint_path="$TMP/fmnist" --device=cuda
  fi
  if [ "$train_rc" -eq 0 ] && [ "$rc" -eq 0 ]; then
    ours_wall=$(awk -v a="$train_wall" -v b="$wall" 'BEGIN { printf "%.1f", a + b }')
    ours_acc=$(sed -n 's/^Accuracy = \([0-9.]*\).*/\1/p' "$TMP/ours_fmnist_eval.log")
    ours_ips=$(sed -n 's/.*"images_per_sec": \([0-9.]*\).*/\1/p' "$TMP/fmnist/metrics.json" |
      awk '{ printf "%.1f", $1 }')
  else
    ours_wall="failed (exit $((train_rc ? train_rc : rc)))" ours_acc="-" ours_ips="-"
  fi

  # peer_pytorch.py has no device option (its fmnist() never moves the model
  # or the tensors): it runs as it is, on the CPU with PEER_THREADS threads,
  # reading /usr/share/datasets/fashion-mnist (not configurable) and needing
  # torchvision and numpy.
  echo "== fmnist: peer ($PEER_FMNIST_EPOCHS epochs, CPU)" >&2
  if [ -f "$PEER" ] && [ -d /usr/share/datasets/fashion-mnist ]; then
    measure "$TMP/peer_fmnist.log" "$PYTHON" "$PEER" fmnist "$PEER_FMNIST_EPOCHS" "$PEER_THREADS"
    peer_line=$(tail -n 1 "$TMP/peer_fmnist.log")
    peer_wall=$wall
    peer_acc=$(sed -n 's/.*test_acc=\([0-9.]*\).*/\1/p' <<<"$peer_line")
    peer_ips=$(sed -n 's/.*images_per_sec=\([0-9.]*\).*/\1/p' <<<"$peer_line")
    [ "$rc" -eq 0 ] || { peer_wall="failed (exit $rc)" peer_acc="-" peer_ips="-"; }
  else
    peer_wall="not measured (needs $PEER and /usr/share/datasets/fashion-mnist)" peer_acc="-" peer_ips="-"
  fi
  row "lenet Fashion-MNIST: wall time train + test, s (lower is better)" "$ours_wall" "$peer_wall"
  row "lenet Fashion-MNIST: test accuracy (target >= 0.915)" "${ours_acc:-n/a}" "${peer_acc:-n/a}"
  row "lenet Fashion-MNIST: training images/s (higher is better)" "${ours_ips:-n/a}" "${peer_ips:-n/a}"
  notes+=("fmnist: ours $cfg (24 epochs, batch 128) with --device=cuda, TFRecords through the\
 full decode pipeline; peer: $PEER fmnist $PEER_FMNIST_EPOCHS $PEER_THREADS on the CPU\
 (the script has no device option), tensors preloaded; wall time is whole processes.")
fi

# --- p. the step's kernels, ours and the peer's ----------------------------------
if [[ ,$PARTS, == *,profile,* ]]; then
  PROFILE_STEPS=${PROFILE_STEPS:-5}
  mkdir -p bench/results
  profile_file=bench/results/gpu_profile_$stamp.txt
  first=$((WARMUP + 11))
  for prec in ${PRECISIONS:-fp16 bf16}; do
    echo "== profile $prec: peer" >&2
    measure "$TMP/peer_profile_$prec.log" "$PYTHON" bench/gpu_peer_resnet50.py --precision "$prec" \
      --batch-size "$BATCH" --steps 10 --warmup "$WARMUP" --profile-steps "$PROFILE_STEPS"
    echo "== profile $prec: ours (synthetic_device_inputs)" >&2
    measure "$TMP/ours_profile_$prec.log" "${OURS_ENV[@]}" FASTNN_PROFILE_STEPS="$first:$((first + PROFILE_STEPS - 1))" \
      "$BIN/train_image_classifier" --dataset_name=mock --model_name=resnet_v1_50 --num_classes=1000 \
      --batch_size="$BATCH" --optimizer=momentum --momentum=0.9 --learning_rate=0.01 \
      --weight_decay=0.00004 --stop_at_step=$((first + PROFILE_STEPS)) --log_loss_every_n_iters="$LOG_EVERY" \
      --data_format=NHWC --device=cuda --use_fp16=True --mixed_precision="$prec" \
      --cudnn_benchmark=True --nproc_per_node=1 --synthetic_device_inputs=True ${OURS_ARGS:-}
    {
      echo "==== resnet_v1_50 $prec NHWC b$BATCH, the peer: $(grep -m1 '^peer_gpu_resnet50' "$TMP/peer_profile_$prec.log")"
      sed -n '/^profile of/,$p' "$TMP/peer_profile_$prec.log"
      echo "==== resnet_v1_50 $prec NHWC b$BATCH, ours (synthetic_device_inputs):"
      sed -n '/profile of global steps/,/^[^ ]/p' "$TMP/ours_profile_$prec.log"
    } >>"$profile_file"
  done
  cat "$profile_file" >&2
  echo "bench: profiles written to $profile_file" >&2
fi

# --- c. NCCL all-reduce over every GPU of the machine ----------------------------
if [[ ,$PARTS, == *,allreduce,* ]]; then
  # Ours: allreduce_bench's cuda mode (the trainer's collective over c10d's
  # NCCL group), one process per GPU. Peer: torch.distributed's NCCL
  # all-reduce, one process per GPU. nccl-tests' bus bandwidth:
  # busbw = algbw * 2(n-1)/n. NCCL refuses two ranks on one GPU, so a
  # one-GPU machine has no figure to give.
  world=$("$PYTHON" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
  if [ "$world" -lt 2 ]; then
    row "NCCL all-reduce busbw GB/s" "n/a: $world GPU(s)" "n/a: $world GPU(s)"
    notes+=("all-reduce: needs at least two GPUs (one rank per GPU); this machine has $world.")
  else
    for bytes in 1048576 102400000; do
      port=$((29500 + RANDOM % 400))
      pids=()
      for ((r = 1; r < world; r++)); do
        "$BIN/allreduce_bench" "$r" "$world" "$port" "$bytes" 50 cuda >/dev/null 2>>"$TMP/ar.err" &
        pids+=($!)
      done
      ours_line=$("$BIN/allreduce_bench" 0 "$world" "$port" "$bytes" 50 cuda 2>>"$TMP/ar.err" || true)
      for p in "${pids[@]}"; do wait "$p" || true; done
      ours_bw=$(sed -n 's/.*busbw_GBps=\([0-9.]*\).*/\1/p' <<<"$ours_line")
      peer_bw=$("$PYTHON" - "$bytes" "$((port + 1))" "$world" <<'PY' 2>"$TMP/ar_peer.err" || true
import sys, time, torch, torch.distributed as dist, torch.multiprocessing as mp
n, port, world = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
def run(rank, q):
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    x = torch.ones(n // 4, device="cuda")
    dist.all_reduce(x); torch.cuda.synchronize(); dist.barrier()
    t0 = time.perf_counter()
    for _ in range(50): dist.all_reduce(x)
    torch.cuda.synchronize()
    secs = (time.perf_counter() - t0) / 50
    if rank == 0: q.put(n / secs / 1e9 * 2 * (world - 1) / world)
    dist.destroy_process_group()
if __name__ == "__main__":
    q = mp.get_context("spawn").SimpleQueue()
    mp.spawn(run, args=(q,), nprocs=world)
    print(f"{q.get():.3f}")
PY
)
      row "NCCL all-reduce, $world GPUs, $bytes bytes: busbw GB/s" \
        "${ours_bw:-failed: $(tail -1 "$TMP/ar.err")}" "${peer_bw:-failed: $(tail -1 "$TMP/ar_peer.err")}"
    done
    notes+=("all-reduce: busbw = algbw * 2(n-1)/n (nccl-tests), one process per GPU, 50 timed all-reduces after one.")
  fi
fi

{
  echo "# GPU benchmark, $stamp"
  echo
  echo "GPU: $gpu (name, driver); $torch_info; $(nproc) CPU cores; commit $commit;" \
    "\`bench/gpu_vs_pytorch.sh $STEPS\` (WARMUP=$WARMUP BATCH=$BATCH)"
  echo
  echo "| metric | ours | PyTorch | ratio ours/peer | PyTorch max_memory_allocated (MiB) |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  for n in "${notes[@]}"; do echo "- $n"; done
} >"$TMP/table.md"
mkdir -p bench/results
cp "$TMP/table.md" "bench/results/gpu_$stamp.md"
cat "$TMP/table.md"
echo "bench: written to bench/results/gpu_$stamp.md" >&2
if [ "$failures" -gt 0 ]; then
  echo "bench: $failures measurement(s) failed" >&2
  exit 1
fi
