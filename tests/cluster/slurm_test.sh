#!/usr/bin/env bash
# A real Slurm on this one host: a private munged, slurmctld and slurmd
# (configuration, key, state, sockets and logs all in one temporary
# directory; nothing under /etc is read or written), then two jobs of
# deploy/slurm/train.sbatch with 2 tasks each, on CPUs:
#   1. lenet on mock data to step 30: the job completes with exit code 0,
#      both tasks join as Slurm's ranks, rank 0 writes model.ckpt-30 and
#      both end with the same weights;
#   2. the same to step 100000, cancelled with a plain `scancel` once it
#      has trained 20 steps: both workers stop after the same step, rank 0
#      checkpoints that step and both exit 143.
# Exits 77 (CTest: skipped) without the daemons (scripts/setup.sh installs
# slurm-wlm and munge), when not root (slurmd starts the tasks as their
# user) or when this host's name does not resolve. Every wait is bounded:
# the test ends within about 4.5 minutes whatever happens, every process it
# started gone.
# usage: slurm_test.sh BIN_DIR
set -uo pipefail

# Kills what is left of a run that used WORK and removes WORK: processes
# marked with FASTNN_SLURM_TEST=WORK (the daemons, the jobs' tasks) and the
# job step daemons (slurmstepd starts with an empty environment) that write
# to the run's slurmd log.
sweep() {  # WORK
  local pid d fd
  for pid in $(env -u FASTNN_SLURM_TEST grep -lzx "FASTNN_SLURM_TEST=$1" \
                 /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); do
    [ "$pid" != $$ ] && kill -KILL "$pid" 2>/dev/null
  done
  for d in /proc/[0-9]*; do
    [ "$(cat "$d/comm" 2>/dev/null)" = slurmstepd ] || continue
    for fd in "$d"/fd/*; do
      case $(readlink "$fd" 2>/dev/null) in
        "$1"/*) kill -KILL "${d#/proc/}" 2>/dev/null; break ;;
      esac
    done
  done
  rm -rf "$1"
}
# Internal: `slurm_test.sh --reap WORK PID`, started detached by the test,
# sweeps once PID (the test) is gone, even when it was killed outright.
if [ "${1:-}" = --reap ]; then
  case ${2:-} in /*/*) ;; *) exit 2 ;; esac
  while kill -0 "$3" 2>/dev/null; do sleep 1; done
  sweep "$2"
  exit 0
fi

bin=${1:?usage: slurm_test.sh BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
batch_script=$here/../../deploy/slurm/train.sbatch
PATH=$PATH:/usr/sbin:/sbin
for tool in munged slurmctld slurmd sbatch scontrol sinfo squeue scancel; do
  if ! command -v "$tool" >/dev/null; then
    echo "$tool not installed: skipped"
    exit 77
  fi
done
if [ "$(id -u)" -ne 0 ]; then
  echo "not root (slurmd must run as root to start jobs): skipped"
  exit 77
fi
host=$(hostname -s)
if ! getent hosts "$host" >/dev/null; then
  echo "this host's name $host does not resolve (the node's and the coordinator's address): skipped"
  exit 77
fi
bin=$(cd "$bin" && pwd) || { echo "FAIL: no directory $1"; exit 1; }
[ -x "$bin/train_image_classifier" ] || { echo "FAIL: no $bin/train_image_classifier"; exit 1; }
[ -f "$batch_script" ] || { echo "FAIL: no $batch_script"; exit 1; }

start=$SECONDS
# No wait goes past this, so that the cleanup (at most ~60 s) still fits in
# CTest's 300 s. Should this script be killed outright, its reaper (below)
# cleans up, and `timeout` stops the daemons at 290 s anyway.
hard_deadline=$((start + 220))
deadline() {  # secs: now + secs, or the hard deadline if that is sooner
  local d=$((SECONDS + $1))
  ((d > hard_deadline)) && d=$hard_deadline
  echo "$d"
}

work=$(mktemp -d)
# munged wants every directory above its socket searchable by all.
chmod 711 "$work"
mkdir -m 755 "$work/run"
mkdir -m 700 "$work/state" "$work/spool" "$work/log"
conf=$work/slurm.conf
# Every process this test starts, and every process of its jobs, inherits
# this variable: the cleanup finds by it whatever a failure left behind.
export FASTNN_SLURM_TEST=$work
daemons=()
jobs_submitted=()
# Outside this process's tree and without the mark, so that it outlives
# even a SIGKILL of this test (CTest's timeout) and cleans up after it.
(env -u FASTNN_SLURM_TEST setsid "$here/slurm_test.sh" --reap "$work" $$ \
   </dev/null >/dev/null 2>&1 &)

alive() { kill -0 "$1" 2>/dev/null; }
cleanup() {
  trap - EXIT INT TERM HUP
  local pid d q
  if ((${#jobs_submitted[@]})); then
    timeout 8 scancel "${jobs_submitted[@]}" 2>/dev/null
    # Gone after KillWait (30 s) at the latest.
    d=$((SECONDS + 40))
    while ((SECONDS < d)); do
      q=$(timeout 8 squeue -h -o %i 2>/dev/null) && [ -z "$q" ] && break
      sleep 1
    done
  fi
  for pid in "${daemons[@]}"; do alive "$pid" && kill -TERM "$pid"; done
  d=$((SECONDS + 10))
  while ((SECONDS < d)); do
    local left=0
    for pid in "${daemons[@]}"; do alive "$pid" && left=1; done
    ((left)) || break
    sleep 0.5
  done
  for pid in "${daemons[@]}"; do alive "$pid" && kill -KILL "$pid"; done
  sweep "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

show_logs() {
  local f
  for f in "$work"/job*.out "$work"/log/*.log; do
    [ -f "$f" ] || continue
    echo "--- tail of ${f#"$work"/}"
    tail -n 15 "$f"
  done
}
fail() { echo "FAIL: $*"; show_logs; exit 1; }

# A port no socket uses, below Linux's ephemeral ports.
port_free() { [ -z "$(ss -Htan "sport = :$1" 2>/dev/null)" ]; }
free_port() {
  local p
  for _ in $(seq 100); do
    p=$((15000 + RANDOM % 5000))
    port_free "$p" && { echo "$p"; return; }
  done
  return 1
}
ctld_port=$(free_port) || fail "no free port for slurmctld"
slurmd_port=$(free_port) || fail "no free port for slurmd"
[ "$ctld_port" != "$slurmd_port" ] || slurmd_port=$((ctld_port + 1))
# The batch script's coordinator port is 20000 + job id % 10000: the first
# job id is chosen so that both jobs' ports are free.
for _ in $(seq 100); do
  first_job=$((1000 + RANDOM % 8000))
  port_free $((20000 + first_job)) && port_free $((20001 + first_job)) && break
done

# Munge: a fresh key and a daemon of our own on our own socket.
dd if=/dev/urandom of="$work/munge.key" bs=1 count=1024 2>/dev/null
chmod 400 "$work/munge.key"
socket=$work/run/munge.sock
timeout 290 munged --foreground --socket="$socket" --key-file="$work/munge.key" \
  --pid-file="$work/run/munged.pid" --log-file="$work/log/munged.log" \
  --seed-file="$work/state/munged.seed" >"$work/log/munged.out" 2>&1 &
daemons+=($!)
d=$(deadline 10)
while ((SECONDS < d)) && [ ! -S "$socket" ]; do sleep 0.2; done
[ -S "$socket" ] || fail "munged did not create its socket: $(cat "$work/log/munged.out")"

: >"$work/plugstack.conf"
cat >"$conf" <<EOF
ClusterName=fastnntest
SlurmctldHost=$host
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/run/slurmctld.pid
SlurmdPidFile=$work/run/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
PlugStackConfig=$work/plugstack.conf
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
KillWait=30
MinJobAge=300
FirstJobId=$first_job
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
NodeName=$host CPUs=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc) RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$conf
# Nothing of a Slurm job or launcher this test may itself run under reaches
# the jobs: the batch script makes its own token and coordinator port.
for v in $(compgen -e); do
  case $v in
    SLURM_CONF) ;;
    SLURM_* | SBATCH_* | SRUN_* | SALLOC_* | OMPI_* | PMIX_*) unset "$v" ;;
  esac
done
unset MASTER_ADDR MASTER_PORT RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE FASTNN_JOB_TOKEN
timeout 290 slurmctld -D -f "$conf" >"$work/log/slurmctld.out" 2>&1 &
daemons+=($!)
timeout 290 slurmd -D -f "$conf" >"$work/log/slurmd.out" 2>&1 &
daemons+=($!)

state=""
d=$(deadline 60)
while ((SECONDS < d)); do
  state=$(timeout 8 sinfo -h -N -n "$host" -o %t 2>/dev/null)
  [ "$state" = idle ] && break
  sleep 1
done
[ "$state" = idle ] || fail "node $host not idle after 60 s (state '$state')"
echo "slurm up: node $host idle after $((SECONDS - start)) s"

# A field of a job slurmctld still knows (MinJobAge: 5 min), no accounting.
job_field() {
  timeout 8 scontrol -o show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"
}
terminal() {
  case $1 in
    COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | PREEMPTED | \
      BOOT_FAIL | DEADLINE) return 0 ;;
  esac
  return 1
}
wait_done() {  # job secs: the job's final JobState, once every process of it
  local st="" q d  # is gone (no longer COMPLETING)
  d=$(deadline "$2")
  while ((SECONDS < d)); do
    st=$(job_field "$1" JobState)
    if terminal "$st" && q=$(timeout 8 squeue -h -j "$1" -o %i 2>/dev/null) && [ -z "$q" ]; then
      echo "$st"
      return
    fi
    sleep 1
  done
  echo "still ${st:-unknown} after $2 s"
}

export FASTNN_BIN=$bin
# A CPU node: one CPU and no GPU per task, instead of the #SBATCH lines
# for a GPU cluster.
submit=(sbatch --parsable --chdir="$work" --nodes=1 --ntasks=2 --ntasks-per-node=2
        --cpus-per-task=1 --gpus-per-task=0 --time=5)
write_config() {  # file stop_at_step
  cat >"$1" <<EOF
model_name=lenet
dataset_name=mock
num_classes=10
batch_size=8
num_sample_per_epoch=10000
stop_at_step=$2
intra_op_parallelism_threads=1
num_preprocessing_threads=1
use_fp16=False
worker_timeout_secs=30
log_loss_every_n_iters=10
EOF
}
# submit_job N CONFIG STOP_AT_STEP: writes CONFIG (to STOP_AT_STEP), submits
# job N on it (output jobN.out, train_dir trainN) and sets jobN to its id.
submit_job() {
  local id
  write_config "$2" "$3"
  id=$(timeout 8 "${submit[@]}" --output="$work/job$1.out" "$batch_script" \
         "$2" "$work/train$1" 2>"$work/log/sbatch$1.err") ||
    fail "sbatch refused job $1: $(cat "$work/log/sbatch$1.err")"
  id=${id%%;*}
  jobs_submitted+=("$id")
  printf -v "job$1" %s "$id"
}

# Job 1: to step 30.
submit_job 1 "$work/short.cfg" 30
st=$(wait_done "$job1" 120)
code=$(job_field "$job1" ExitCode)
echo "job 1 ($job1): $st, exit code $code, $((SECONDS - start)) s from the start"
tail -n 4 "$work/job1.out"
[ "$st" = COMPLETED ] || fail "job 1 ended $st (exit code $code)"
[ "$code" = 0:0 ] || fail "job 1 exit code $code"
grep -q "rank 0 of 2 (Slurm)" "$work/job1.out" || fail "rank 0 did not join as Slurm's rank 0"
grep -q "rank 1 of 2 (Slurm)" "$work/job1.out" || fail "rank 1 did not join as Slurm's rank 1"
[ -f "$work/train1/model.ckpt-30" ] || fail "no model.ckpt-30 from rank 0"
nsums=$(grep -c "final weights checksum" "$work/job1.out")
[ "$nsums" -eq 2 ] || fail "$nsums final weights checksums, not 2"
sums=$(sed -n 's/.*final weights checksum \(.*\)/\1/p' "$work/job1.out" | sort -u | wc -l)
[ "$sums" -eq 1 ] || fail "the two ranks ended with different weights"
echo "PASS: sbatch train.sbatch: 2 Slurm tasks trained to step 30 with equal replicas"

# Job 2: a long run, cancelled once it has trained 20 steps.
submit_job 2 "$work/long.cfg" 100000
trained=0
d=$(deadline 90)
while ((SECONDS < d)); do
  if grep -q "global_step = 20\b" "$work/job2.out" 2>/dev/null; then trained=1; break; fi
  terminal "$(job_field "$job2" JobState)" && break
  sleep 1
done
((trained)) || fail "job 2 did not reach step 20"
timeout 8 scancel "$job2" || fail "scancel $job2 failed"
st=$(wait_done "$job2" 60)
code=$(job_field "$job2" ExitCode)
echo "job 2 ($job2): $st, exit code $code, $((SECONDS - start)) s from the start"
tail -n 6 "$work/job2.out"
[ "$st" = CANCELLED ] || fail "job 2 ended $st after scancel, not CANCELLED"
stops=$(sed -n 's/.*Stopped at global_step \([0-9]*\): a worker received SIGTERM.*/\1/p' \
          "$work/job2.out")
[ "$(echo "$stops" | grep -c .)" -eq 2 ] || fail "not both workers of job 2 stopped on SIGTERM"
[ "$(echo "$stops" | sort -u | wc -l)" -eq 1 ] || fail "job 2's workers stopped at different steps"
step=$(echo "$stops" | head -n 1)
[ "$step" -gt 0 ] || fail "job 2 stopped before training"
[ -f "$work/train2/model.ckpt-$step" ] || fail "no model.ckpt-$step in job 2's train_dir"
codes=$(sed -n 's/.*Exited with exit code \([0-9]*\).*/\1/p' "$work/job2.out" | sort -u)
[ "$codes" = 143 ] || fail "srun reports job 2's tasks exiting with '${codes//$'\n'/ }', not 143"
sums=$(sed -n 's/.*final weights checksum \(.*\)/\1/p' "$work/job2.out" | sort -u | wc -l)
[ "$sums" -eq 1 ] || fail "job 2's workers stopped with different weights"
echo "PASS: scancel: both tasks of job 2 stopped at step $step, model.ckpt-$step, exit code 143"
echo "slurm test done in $((SECONDS - start)) s"
