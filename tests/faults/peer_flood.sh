#!/usr/bin/env bash
# A flood on the coordinator's port must neither stop nor unduly slow a job.
#
# Injects: the same short 2-worker training on localhost (LeNet on mock data,
# torchrun-style WORLD_SIZE/RANK/MASTER_ADDR/MASTER_PORT, worker_timeout_secs
# 30) is run twice on one fixed MASTER_PORT: first alone (the baseline), then
# with flood_coordinator.py aimed at rank 0's coordinator from the moment the
# port listens until both workers have exited: random bytes, 200 hoarded idle
# connections, malformed HTTP/2 frames, wrong-token and token-less gRPC calls
# to every Coordinator method (Stop and Finish included), unauthenticated
# calls whose message declares 100 MiB, and 2000 open streams per connection.
#
# Asserts:
#   - both runs exit 0 on both ranks and stop at the same final step
#     (FLOOD_STEPS, from each rank's log and from metrics.json), with the
#     same final weights (the checksum each rank logs);
#   - flooded wall time <= FLOOD_RATIO_BOUND x baseline (default 10). The
#     flooder runs on the same machine and keeps about one core busy, which
#     alone can double the time of a 2-core job that needs both; the rest is
#     the coordinator's own work on the junk (rank 0 spends more CPU time
#     than rank 1 under the flood). Given a whole fast core, the flooder
#     holds over 10,000 connections open and the ratio differs severalfold
#     between runs of the same commit: the bound is 10x, so the test checks
#     survival and equal results, not the flooder's speed.
#     The ratio is printed;
#   - rank 0's peak memory (VmHWM, sampled from /proc during the run) grows
#     by at most FLOOD_MEM_BOUND_MIB (default 2048). The growth is the
#     garbage connections' buffers (thousands of descriptors open at once
#     while rank 0 is busy training), which the 256 MiB resource quota does
#     not cap: past 1 GiB when the flooder holds over 10,000 descriptors
#     open, hence 2048 MiB; docs/reliability.md;
#   - rank 0 runs at most FLOOD_THREADS_BOUND (default 300) more threads than
#     in the baseline (about 20 there): the coordinator serves with at most
#     256 + 8 x world size threads;
#   - the flood really reached the server: every mode made connections, the
#     wrong-token calls were answered (grpc-status 16, UNAUTHENTICATED), so
#     the test cannot pass vacuously;
#   - no wrong-token call was ever answered OK;
#   - only when set (reported otherwise; docs/reliability.md says why):
#     no unauthenticated call had more than FLOOD_HUGE_BOUND_MIB of its
#     message taken in (gRPC 1.51 takes in up to its flow-control window,
#     about 8 MiB, before refusing the 4 MiB-limit breach), and the
#     server kept at most FLOOD_STREAMS_BOUND of 2000 wrong-token streams
#     open on one connection (it advertises 64; what the flooder sees as
#     held includes streams the server refused without a reply).
# Prints baseline and flooded seconds, the ratio, both peaks, rank 0's
# descriptors and threads, and the flooder's counts per mode.
#
# Usage: tests/faults/peer_flood.sh BIN_DIR
# Environment (defaults in brackets): FLOOD_PORT [29613; another free port
# if that one is taken], FLOOD_STEPS [150], FLOOD_RATIO_BOUND [10],
# FLOOD_MEM_BOUND_MIB [2048], FLOOD_THREADS_BOUND [300], FLOOD_HUGE_BOUND_MIB
# [unset], FLOOD_STREAMS_BOUND [unset], FLOOD_MODES [all; a comma-separated subset
# of the flooder's modes, to see which one does harm], FLOOD_NOFILE [ulimit -n
# for the workers; inherited], FLOOD_JOB_DEADLINE [240 s per run],
# FLOOD_KEEP=1 keeps the work directory (it is kept anyway on failure).
# Exit: 0 passed, 1 an assertion failed, 2 usage, 77 python3 missing.
set -u

source "$(dirname "$0")/flood_common.sh"
use_bin_dir "${1:-}" train_image_classifier
HERE=$(cd "$(dirname "$0")" && pwd)
FLOODER=$HERE/flood_coordinator.py
# 150 steps: every mode connects within the flood's first seconds, and the
# checks are of survival and equal results; more steps would only lengthen
# a test that runs alone.
STEPS=${FLOOD_STEPS:-150}
RATIO_BOUND=${FLOOD_RATIO_BOUND:-10}
MEM_BOUND_MIB=${FLOOD_MEM_BOUND_MIB:-2048}
HUGE_BOUND_MIB=${FLOOD_HUGE_BOUND_MIB:-}
STREAMS_BOUND=${FLOOD_STREAMS_BOUND:-}
THREADS_BOUND=${FLOOD_THREADS_BOUND:-300}
NOFILE=${FLOOD_NOFILE:-}
DEADLINE=${FLOOD_JOB_DEADLINE:-240}
MODES=${FLOOD_MODES:-garbage,hoard,h2_bad_frame,h2_bad_token,h2_huge_msg,h2_streams}
TOKEN="peer-flood-$$-$RANDOM$RANDOM"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/peer_flood.XXXXXX")

port_free() {
  python3 - "$1" <<'EOF'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC binds: TIME_WAIT is no obstacle
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
EOF
}
PORT=${FLOOD_PORT:-29613}
if ! port_free "$PORT"; then
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  echo "peer_flood: port ${FLOOD_PORT:-29613} is taken, using $PORT"
fi

FLOOD_NAME=peer_flood
KEEP_LOGS=${FLOOD_KEEP:-0}
trap flood_cleanup EXIT

FAILED=0
now() { echo "$EPOCHREALTIME"; }
TICK=$(getconf CLK_TCK 2>/dev/null || echo 100)
cpu_secs() { awk -v t="$1" -v h="$TICK" 'BEGIN{printf "%.1f", t / h}'; }

# sample RANK PID: folds /proc/PID's peak memory (VmHWM), CPU time, threads
# and open descriptors into HWM[RANK], CPU[RANK], THR[RANK], FDS[RANK].
# Builtins only: this loop must not itself load the 2 cores.
sample() {
  local r=$1 pid=$2 k v rest st f
  while read -r k v rest; do
    case $k in
      VmHWM:) ((v > HWM[r])) && HWM[r]=$v ;;
      Threads:) ((v > THR[r])) && THR[r]=$v ;;
    esac
  done 2>/dev/null </proc/$pid/status
  if read -r st 2>/dev/null </proc/$pid/stat; then
    read -r -a st <<<"${st##*) }"
    CPU[r]=$((st[11] + st[12]))
  fi
  f=(/proc/$pid/fd/*)
  ((${#f[@]} > FDS[r])) && FDS[r]=${#f[@]}
}

# run_job NAME FLOOD(0|1): runs the job; sets RUN_SECS, RUN_RC0, RUN_RC1,
# RUN_STEP0, RUN_STEP1, RUN_METRICS_STEP and the samples HWM (KiB), CPU
# (clock ticks), THR, FDS, each indexed by rank.
run_job() {
  local name=$1 flood=$2 dir=$WORK/$1 r
  mkdir -p "$dir"
  local pids=() t0 t1 fpid="" timed_out=0 start=$SECONDS
  HWM=(0 0) CPU=(0 0) THR=(0 0) FDS=(0 0)
  t0=$(now)
  for r in 0 1; do
    (
      [[ -n $NOFILE ]] && ulimit -n "$NOFILE"
      exec env WORLD_SIZE=2 RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT="$PORT" \
        FASTNN_JOB_TOKEN="$TOKEN" "$BIN/train_image_classifier" \
        --model_name=lenet --dataset_name=mock --num_classes=10 --batch_size=8 \
        --num_sample_per_epoch=100000 --use_fp16=False --stop_at_step="$STEPS" \
        --log_loss_every_n_iters=50 --save_checkpoints_steps=100000 \
        --num_preprocessing_threads=1 --intra_op_parallelism_threads=1 \
        --worker_timeout_secs=30 --train_dir="$dir/train" >"$dir/rank$r.log" 2>&1
    ) &
    pids+=($!)
  done
  while running "${pids[0]}" || running "${pids[1]}"; do
    if [[ $flood == 1 && -z $fpid ]] && listening; then
      python3 "$FLOODER" "127.0.0.1:$PORT" --duration "$DEADLINE" --modes "$MODES" >"$dir/flood.txt" 2>&1 &
      fpid=$!
      FLOOD_T0=$(now)
    fi
    for r in 0 1; do
      running "${pids[r]}" && sample "$r" "${pids[r]}"
    done
    if ((SECONDS - start > DEADLINE)); then
      fail "$name: the job ran past $DEADLINE s; killing it"
      kill -KILL "${pids[@]}" 2>/dev/null
      timed_out=1
      break
    fi
    sleep 0.2
  done
  t1=$(now)
  wait "${pids[0]}"; RUN_RC0=$?
  wait "${pids[1]}"; RUN_RC1=$?
  if [[ -n $fpid ]]; then
    kill -TERM "$fpid" 2>/dev/null
    wait "$fpid"
    echo "peer_flood: flood started $(awk -v a="$t0" -v b="$FLOOD_T0" 'BEGIN{printf "%.1f", b-a}') s after the workers"
  fi
  RUN_SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')
  RUN_STEP0=$(grep -o 'Stopped at global_step [0-9]*' "$dir/rank0.log" | tail -n 1 | awk '{print $4}')
  RUN_STEP1=$(grep -o 'Stopped at global_step [0-9]*' "$dir/rank1.log" | tail -n 1 | awk '{print $4}')
  RUN_METRICS_STEP=$(grep -o '"final_step": *[0-9]*' "$dir/train/metrics.json" 2>/dev/null | grep -o '[0-9]*$')
  RUN_SUMS=$(cat "$dir"/rank[01].log | grep -o 'final weights checksum [^ ]*' | awk '{print $4}' | sort -u | tr '\n' ' ' | sed 's/ $//')
  echo "peer_flood: $name: ${RUN_SECS} s, exit codes $RUN_RC0/$RUN_RC1," \
    "final step ${RUN_STEP0:-?}/${RUN_STEP1:-?} (metrics.json ${RUN_METRICS_STEP:-?})," \
    "VmHWM $((HWM[0] / 1024))/$((HWM[1] / 1024)) MiB, CPU $(cpu_secs "${CPU[0]}")/$(cpu_secs "${CPU[1]}") s" \
    "(rank 0/rank 1); rank 0 up to ${FDS[0]} descriptors and ${THR[0]} threads"
  if [[ $RUN_RC0 != 0 || $RUN_RC1 != 0 || $timed_out == 1 ]]; then
    fail "$name: exit codes $RUN_RC0/$RUN_RC1 (want 0/0)"
    for r in 0 1; do
      echo "--- $name rank $r, last lines:"
      tail -n 15 "$dir/rank$r.log"
    done
  fi
  if [[ "$RUN_STEP0" != "$STEPS" || "$RUN_STEP1" != "$STEPS" || "$RUN_METRICS_STEP" != "$STEPS" ]]; then
    fail "$name: final step ${RUN_STEP0:-none}/${RUN_STEP1:-none}/${RUN_METRICS_STEP:-none}, want $STEPS"
  fi
}

echo "peer_flood: 2 workers, lenet on mock data, $STEPS steps, coordinator 127.0.0.1:$PORT"
run_job baseline 0
BASE_SECS=$RUN_SECS B_HWM=("${HWM[@]}") B_CPU=("${CPU[@]}") B_FDS=("${FDS[@]}") B_THR=("${THR[@]}")
BASE_SUMS=$RUN_SUMS
run_job flooded 1
FLOOD_SECS=$RUN_SECS F_HWM=("${HWM[@]}") F_CPU=("${CPU[@]}") F_FDS=("${FDS[@]}") F_THR=("${THR[@]}")
echo "peer_flood: final weights checksums: baseline ${BASE_SUMS:-none}, flooded ${RUN_SUMS:-none}"
if [[ -n $BASE_SUMS && $RUN_SUMS != "$BASE_SUMS" ]]; then
  fail "the flooded run ended with other weights than the baseline"
fi

FLOOD_OUT=$WORK/flooded/flood.txt
echo "peer_flood: flooder's counts:"
sed 's/^/  /' "$FLOOD_OUT" 2>/dev/null

# The flood's figures: value of key $2 on the line of mode $1.
field() {
  awk -v m="mode=$1" -v k="$2" '$2 == m { for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) { print kv[2]; exit } } }' "$FLOOD_OUT"
}

RATIO=$(awk -v a="$BASE_SECS" -v b="$FLOOD_SECS" 'BEGIN{ if (a > 0) printf "%.2f", b / a; else print "inf" }')
# Rank 1 runs the same training without the coordinator: rank 0 minus rank 1
# is printed as a second view of what the coordinator costs.
GROWTH_MIB=$(((F_HWM[0] - B_HWM[0]) / 1024))
B_OVER_MIB=$(((B_HWM[0] - B_HWM[1]) / 1024))
F_OVER_MIB=$(((F_HWM[0] - F_HWM[1]) / 1024))
echo "peer_flood: baseline ${BASE_SECS} s, flooded ${FLOOD_SECS} s, ratio ${RATIO} (bound ${RATIO_BOUND})"
echo "peer_flood: rank 0 VmHWM baseline $((B_HWM[0] / 1024)) MiB, flooded $((F_HWM[0] / 1024)) MiB," \
  "growth ${GROWTH_MIB} MiB (bound ${MEM_BOUND_MIB}); rank 0 - rank 1: ${B_OVER_MIB} -> ${F_OVER_MIB} MiB"
echo "peer_flood: CPU seconds rank 0/rank 1: baseline $(cpu_secs "${B_CPU[0]}")/$(cpu_secs "${B_CPU[1]}")," \
  "flooded $(cpu_secs "${F_CPU[0]}")/$(cpu_secs "${F_CPU[1]}"); rank 0 descriptors ${B_FDS[0]} -> ${F_FDS[0]}," \
  "threads ${B_THR[0]} -> ${F_THR[0]}"

if ! awk -v r="$RATIO" -v b="$RATIO_BOUND" 'BEGIN{exit !(r <= b)}'; then
  fail "flooded run took ${RATIO}x the baseline's time (bound ${RATIO_BOUND}x)"
fi
if ((B_HWM[0] == 0 || F_HWM[0] == 0)); then
  fail "rank 0's memory could not be sampled"
elif ((GROWTH_MIB > MEM_BOUND_MIB)); then
  fail "rank 0's peak memory grew by ${GROWTH_MIB} MiB under the flood (bound ${MEM_BOUND_MIB} MiB)"
fi
if ((F_THR[0] - B_THR[0] > THREADS_BOUND)); then
  fail "rank 0 ran ${F_THR[0]} threads under the flood, ${B_THR[0]} in the baseline (bound +${THREADS_BOUND})"
fi

if [[ ! -s $FLOOD_OUT ]] || ! grep -q '^flood total' "$FLOOD_OUT"; then
  fail "the flooder printed no counts (did it start?)"
else
  for m in ${MODES//,/ }; do
    c=$(field "$m" connections)
    if [[ -z $c || $c -le 0 ]]; then
      fail "flood mode $m made no connection: the test would pass vacuously"
    fi
  done
  answered=$(field h2_bad_token answers | tr ',' '\n' | awk -F: '$1 == "grpc-status_16" {print $2}')
  if [[ ,$MODES, == *,h2_bad_token,* ]] && [[ -z $answered || $answered -le 0 ]]; then
    fail "no wrong-token call was answered UNAUTHENTICATED (answers: $(field h2_bad_token answers))"
  fi
  for m in h2_bad_token h2_huge_msg; do
    acc=$(field "$m" accepted_wrong_token)
    [[ -n $acc ]] && fail "$m: calls with a wrong token were answered OK: $acc"
  done
  held=$(field h2_streams max_streams_held_on_a_connection)
  echo "peer_flood: most wrong-token streams held on one connection: ${held:-?};" \
    "most bytes of a 100 MiB unauthenticated message taken in: $(field h2_huge_msg max_bytes_accepted_on_a_stream)"
  if [[ -n $held && -n $STREAMS_BOUND ]] && ((held > STREAMS_BOUND)); then
    fail "the server kept $held wrong-token streams open on one connection (bound $STREAMS_BOUND)"
  fi
  took=$(field h2_huge_msg max_bytes_accepted_on_a_stream)
  if [[ -n $took && -n $HUGE_BOUND_MIB ]] && ((took > HUGE_BOUND_MIB * 1048576)); then
    fail "an unauthenticated call declaring a 100 MiB message had $took bytes of it taken in" \
      "(bound ${HUGE_BOUND_MIB} MiB; endings: $(field h2_huge_msg ended))"
  fi
fi

if [[ $FAILED == 1 ]]; then
  echo "peer_flood: FAILED"
  exit 1
fi
echo "peer_flood: passed"
exit 0
