#!/usr/bin/env bash
# Trains a few steps with summaries on and has the independent Python reader
# check the event file.  usage: events_test.sh BIN_DIR TMP_DIR SOURCE_DIR
set -euo pipefail
bin=$1 tmp=$2/events src=$3
rm -rf "$tmp" && mkdir -p "$tmp"
"$bin/convert_dataset" --dataset_name fashion_mnist \
  --input "${FASTNN_FMNIST_DIR:-/usr/share/datasets/fashion-mnist}" \
  --dataset_dir "$tmp/data" --max_examples 1000 >/dev/null
"$bin/train_image_classifier" --model_name=lenet --dataset_name=fashion_mnist \
  --dataset_dir="$tmp/data" --train_dir="$tmp/run" --stop_at_step=40 \
  --batch_size=16 --use_fp16=False --optimizer=momentum \
  --save_summaries_secs=1 --log_loss_every_n_iters=0 --num_preprocessing_threads=1 >/dev/null
/usr/bin/python3 "$src/tests/train/read_events.py" "$tmp/run"
