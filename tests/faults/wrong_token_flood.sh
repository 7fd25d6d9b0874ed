#!/usr/bin/env bash
# Many wrong-token fastnn_job calls against a running job's coordinator.
#
# Injects: while a short 2-worker training runs on localhost (LeNet on mock
# data, torchrun-style environment, one fixed MASTER_PORT), four loops call
# `fastnn_job status` and `fastnn_job stop` back to back with tokens that are
# almost right: the real one with its last character changed (same length),
# the real one with a character appended, its first half, an unrelated one,
# and a wrong one read from --token_file. Midway, one call with the right
# token (`status`) and one token-less `health` check.
#
# Asserts:
#   - every wrong-token call is refused with the documented exit code 5 and
#     says "refused" (README.md, "Exit codes" and "Distributed"); none
#     exits 0; only calls made around the job's end (at most two per loop)
#     may instead fail as "unreachable" or be cancelled by the coordinator's
#     shutdown (still exit 5);
#   - at least WRONG_TOKEN_MIN_CALLS (default 20) were refused, so the test
#     cannot pass vacuously;
#   - the right-token status call still works under the flood (exit 0, "job
#     RUNNING") and health answers SERVING;
#   - the job ignores the wrong-token stops: both workers exit 0 at
#     stop_at_step (WRONG_TOKEN_STEPS, default 150) with the stop reason
#     "reached stop_at_step", not "graceful stop requested".
#
# Usage: tests/faults/wrong_token_flood.sh BIN_DIR
# Environment: WRONG_TOKEN_PORT (default 29617; another free port if taken),
# WRONG_TOKEN_STEPS, WRONG_TOKEN_MIN_CALLS, WRONG_TOKEN_DEADLINE (240 s),
# WRONG_TOKEN_KEEP=1 keeps the work directory.
# Exit: 0 passed, 1 an assertion failed, 2 usage, 77 python3 missing (used
# only to check the port is free).
set -u

source "$(dirname "$0")/flood_common.sh"
use_bin_dir "${1:-}" train_image_classifier fastnn_job
STEPS=${WRONG_TOKEN_STEPS:-150}
MIN_CALLS=${WRONG_TOKEN_MIN_CALLS:-20}
DEADLINE=${WRONG_TOKEN_DEADLINE:-240}
TOKEN="wrong-token-flood-$$-$RANDOM$RANDOM"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/wrong_token_flood.XXXXXX")

PORT=${WRONG_TOKEN_PORT:-29617}
if ! python3 -c 'import socket,sys; socket.socket().bind(("127.0.0.1", int(sys.argv[1])))' "$PORT" 2>/dev/null; then
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  echo "wrong_token_flood: port ${WRONG_TOKEN_PORT:-29617} is taken, using $PORT"
fi
ADDR=127.0.0.1:$PORT

FAILED=0
FLOOD_NAME=wrong_token_flood
KEEP_LOGS=${WRONG_TOKEN_KEEP:-0}
trap flood_cleanup EXIT

echo "wrong_token_flood: 2 workers, lenet on mock data, $STEPS steps, coordinator $ADDR"
WPIDS=()
for r in 0 1; do
  env WORLD_SIZE=2 RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT="$PORT" \
    FASTNN_JOB_TOKEN="$TOKEN" "$BIN/train_image_classifier" \
    --model_name=lenet --dataset_name=mock --num_classes=10 --batch_size=8 \
    --num_sample_per_epoch=100000 --use_fp16=False --stop_at_step="$STEPS" \
    --log_loss_every_n_iters=50 --save_checkpoints_steps=100000 \
    --num_preprocessing_threads=1 --intra_op_parallelism_threads=1 \
    --worker_timeout_secs=30 --train_dir="$WORK/train" >"$WORK/rank$r.log" 2>&1 &
  WPIDS+=($!)
done

t0=$SECONDS
until listening; do
  if ! running "${WPIDS[0]}" || ((SECONDS - t0 > 120)); then
    fail "the coordinator never listened on $PORT"
    break
  fi
  sleep 0.1
done

# One loop: wrong-token calls until $WORK/done exists; one line per call:
# "<exit code> <refused|unreachable|other> <subcommand> <variant>".
wrong_file=$WORK/wrong.token
echo "not-$TOKEN" >"$wrong_file"
call_loop() {
  local id=$1 i=0 variant tok sub out rc kind
  local variants=(same_length appended prefix unrelated token_file)
  while [[ ! -e $WORK/done ]]; do
    variant=${variants[$(((i + id) % 5))]}
    sub=$([[ $(((i / 5 + id) % 2)) == 0 ]] && echo status || echo stop)
    i=$((i + 1))
    case $variant in
      same_length) tok="${TOKEN%?}"; tok="${tok}$([[ ${TOKEN: -1} == x ]] && echo y || echo x)" ;;
      appended) tok="${TOKEN}0" ;;
      prefix) tok="${TOKEN:0:$((${#TOKEN} / 2))}" ;;
      unrelated) tok="0123456789abcdef0123456789abcdef" ;;
      token_file) tok="" ;;
    esac
    if [[ $variant == token_file ]]; then
      out=$(env -u FASTNN_JOB_TOKEN timeout 120 "$BIN/fastnn_job" "$sub" --coordinator "$ADDR" \
        --token_file "$wrong_file" --timeout_secs 30 2>&1)
    else
      out=$(env FASTNN_JOB_TOKEN="$tok" timeout 120 "$BIN/fastnn_job" "$sub" --coordinator "$ADDR" \
        --timeout_secs 30 2>&1)
    fi
    rc=$?
    kind=other
    if [[ $out == *refused* ]]; then
      kind=refused
    elif [[ $out == *nreachable* || $out == *UNAVAILABLE* || $out == *"failed to connect"* ||
            $out == *CANCELLED* ]]; then
      # The coordinator went away mid-call: at the job's end its shutdown
      # cancels the calls in flight (likeliest under load, as in fault_soak.sh).
      kind=unreachable
    fi
    echo "$rc $kind $sub $variant" >>"$WORK/calls.$id"
    [[ $kind == refused && ! -e $WORK/example ]] && echo "$out" >"$WORK/example"
    [[ $kind == other ]] && echo "--- $sub $variant rc=$rc: $out" >>"$WORK/other.$id"
  done
}

LOOPS=4
LPIDS=()
if [[ $FAILED == 0 ]]; then
  for ((l = 0; l < LOOPS; l++)); do
    call_loop "$l" &
    LPIDS+=($!)
  done
  # Midway: the right token and the token-less health check still work.
  sleep 3
  good=$(env FASTNN_JOB_TOKEN="$TOKEN" timeout 120 "$BIN/fastnn_job" status --coordinator "$ADDR" --timeout_secs 30 2>&1)
  good_rc=$?
  health=$(env -u FASTNN_JOB_TOKEN timeout 120 "$BIN/fastnn_job" health --coordinator "$ADDR" --timeout_secs 30 2>&1)
  health_rc=$?
  echo "wrong_token_flood: under the flood, the right token's status exited $good_rc" \
    "($(grep -o 'job [A-Z]*: [0-9]* workers' <<<"$good" | head -n 1)), health exited $health_rc ($(tr '\n' ' ' <<<"$health" | head -c 80))"
  if [[ $good_rc != 0 || $good != *"job RUNNING"* ]]; then
    fail "the right token's status call under the flood: exit $good_rc: $good"
  fi
  if [[ $health_rc != 0 || $health != *SERVING* ]]; then
    fail "health under the flood: exit $health_rc: $health"
  fi
fi

t0=$SECONDS
while running "${WPIDS[0]}" || running "${WPIDS[1]}"; do
  if ((SECONDS - t0 > DEADLINE)); then
    fail "the job ran past $DEADLINE s; killing it"
    kill -KILL "${WPIDS[@]}" 2>/dev/null
    break
  fi
  sleep 0.25
done
touch "$WORK/done"
wait "${WPIDS[0]}"; rc0=$?
wait "${WPIDS[1]}"; rc1=$?
for p in "${LPIDS[@]}"; do
  wait "$p"
done

cat "$WORK"/calls.* 2>/dev/null >"$WORK/calls"
total=$(wc -l <"$WORK/calls")
refused=$(awk '$1 == 5 && $2 == "refused"' "$WORK/calls" | wc -l)
unreachable=$(awk '$1 == 5 && $2 == "unreachable"' "$WORK/calls" | wc -l)
zero=$(awk '$1 == 0' "$WORK/calls" | wc -l)
others=$((total - refused - unreachable))
echo "wrong_token_flood: $total wrong-token calls in $((SECONDS - t0)) s: $refused refused (exit 5)," \
  "$unreachable unreachable at the end, $others otherwise, $zero exited 0"
awk '{n[$1 " " $2 " " $3 " " $4]++} END {for (k in n) print "  " n[k], k}' "$WORK/calls" | sort -k3
[[ -s $WORK/example ]] && echo "wrong_token_flood: a refusal reads: $(head -c 300 "$WORK/example")"

if ((zero > 0)); then
  fail "$zero wrong-token calls exited 0"
fi
if ((others > 0)); then
  fail "$others wrong-token calls ended otherwise than refused with exit 5:"
  cat "$WORK"/other.* 2>/dev/null | head -n 20
fi
if ((unreachable > 2 * LOOPS)); then
  fail "$unreachable calls found the coordinator unreachable (at most $((2 * LOOPS)) may: two per loop around the job's end)"
fi
if ((refused < MIN_CALLS)); then
  fail "only $refused wrong-token calls were refused (want at least $MIN_CALLS)"
fi

step0=$(grep -o 'Stopped at global_step [0-9]*: [a-z_ ]*' "$WORK/rank0.log" | tail -n 1)
step1=$(grep -o 'Stopped at global_step [0-9]*: [a-z_ ]*' "$WORK/rank1.log" | tail -n 1)
echo "wrong_token_flood: exit codes $rc0/$rc1; rank 0: ${step0:-no stop line}; rank 1: ${step1:-no stop line}"
if [[ $rc0 != 0 || $rc1 != 0 ]]; then
  fail "the job's exit codes were $rc0/$rc1, want 0/0"
  tail -n 15 "$WORK/rank0.log" "$WORK/rank1.log"
fi
for s in "$step0" "$step1"; do
  if [[ $s != "Stopped at global_step $STEPS: reached stop_at_step"* ]]; then
    fail "a worker did not run to stop_at_step=$STEPS: '${s}'"
  fi
done

if [[ $FAILED == 1 ]]; then
  echo "wrong_token_flood: FAILED"
  exit 1
fi
echo "wrong_token_flood: passed"
exit 0
