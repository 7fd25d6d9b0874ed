#!/usr/bin/env bash
# A real `mpirun -np 2` on one host, with no environment of ours: Open MPI's
# own variables make the job (rank, world size, and a loopback coordinator
# on a port derived from Open MPI's job id). Both ranks must train to the
# end and agree. Exits 77 (CTest: skipped) where mpirun is not installed
# (scripts/setup.sh installs openmpi-bin).
# usage: mpirun_training.sh BIN_DIR
set -uo pipefail
bin=${1:?usage: mpirun_training.sh BIN_DIR}
if ! command -v mpirun >/dev/null; then
  echo "mpirun not installed: skipped"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpi=(-np 2 --oversubscribe --bind-to none)
if [ "$(id -u)" -eq 0 ]; then mpi+=(--allow-run-as-root); fi
# Whatever the caller's shell has must not help: no torchrun/Slurm/token.
unset MASTER_ADDR MASTER_PORT RANK WORLD_SIZE LOCAL_RANK FASTNN_JOB_TOKEN SLURM_PROCID
timeout 300 mpirun "${mpi[@]}" "$bin/train_image_classifier" \
  --model_name=lenet --dataset_name=mock --num_classes=10 --batch_size=8 \
  --num_sample_per_epoch=10000 --stop_at_step=30 --log_loss_every_n_iters=10 \
  --num_preprocessing_threads=1 --intra_op_parallelism_threads=1 \
  --worker_timeout_secs=30 --use_fp16=False --train_dir="$work/train" >"$work/log" 2>&1
rc=$?
tail -n 6 "$work/log"
fail() { echo "FAIL: $*"; exit 1; }
[ "$rc" -eq 0 ] || fail "mpirun exited $rc"
grep -q "rank 0 of 2 (Open MPI)" "$work/log" || fail "rank 0 did not join as Open MPI's rank 0"
grep -q "rank 1 of 2 (Open MPI)" "$work/log" || fail "rank 1 did not join as Open MPI's rank 1"
[ -f "$work/train/model.ckpt-30" ] || fail "no model.ckpt-30 from rank 0"
sums=$(sed -n 's/.*final weights checksum \(.*\)/\1/p' "$work/log" | sort -u | wc -l)
[ "$sums" -eq 1 ] || fail "the two ranks ended with different weights"
echo "PASS: mpirun -np 2 trained to step 30 with equal replicas"
