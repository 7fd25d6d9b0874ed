#!/usr/bin/env bash
# datasets_use_caching: training images/s with the decoded
# cache off and on, same config, interleaved rounds (the order alternates),
# so that both see the machine's drift. The cache pays from the second epoch
# on: EPOCHS >= 2.
# Usage: bench/input_cache.sh [EPOCHS=3]
#   ROUNDS=2; CONFIG=configs/fashion_mnist_lenet.cfg; FLAGS="--key=value ..."
#   adds flags to both (e.g. --intra_op_parallelism_threads=1).
set -euo pipefail
cd "$(dirname "$0")/.."
EPOCHS=${1:-3}
ROUNDS=${ROUNDS:-2}
CONFIG=${CONFIG:-configs/fashion_mnist_lenet.cfg}
FMNIST_PEER=0 source bench/fmnist_common.sh
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1);" \
  "$(grep -m1 -o -w -E 'avx512_bf16|avx512f|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')" \
  "$(nproc) cores"
steps=$((EPOCHS * 60000 / 128))
run() {  # NAME ROUND CACHE
  local dir=$OUT/$1-$2
  "$BIN/train_image_classifier" --config "$CONFIG" --dataset_dir="$DATA" --train_dir="$dir" \
    --stop_at_step="$steps" --save_checkpoints_steps=0 --log_loss_every_n_iters=0 \
    --eval_every_n_iters=0 --stop_at_accuracy=None \
    --result_format=none --datasets_use_caching="$3" ${FLAGS:-} >"$dir.log" 2>&1
  python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
ips, wait, wall = m["images_per_sec"], m["data_wait_secs"], m["wall_secs"]
print(f"{sys.argv[2]} round {sys.argv[3]}: {ips:.1f} images/s, data wait {100 * wait / wall:.2f} %,"
      f" {wall:.1f} s")
' "$dir/metrics.json" "$1" "$2" | tee -a "$OUT/results"
}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $EPOCHS epochs ($steps steps) each"
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then run off "$r" False; run on "$r" True
  else run on "$r" True; run off "$r" False; fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$OUT/results" <<'PY'
import re, statistics, sys
ips = {"off": [], "on": []}
for line in open(sys.argv[1]):
    m = re.match(r"(\w+) round \d+: ([\d.]+) images/s", line)
    ips[m.group(1)].append(float(m.group(2)))
off, on = statistics.median(ips["off"]), statistics.median(ips["on"])
print(f"median images/s: cache off {off:.1f}, on {on:.1f}; on/off = {on / off:.3f}")
PY
