#!/usr/bin/env bash
# report.html in a real browser: a small sweep (three lenet trials on mock
# data, one diverging), then Debian's Chromium, headless and offline, renders
# its report to a PNG. Exits 77 (CTest: skipped) where chromium is missing.
# usage: report_render.sh BIN_DIR WORK_DIR [SCREENSHOT_OUT]
set -uo pipefail
bin=${1:?usage: report_render.sh BIN_DIR WORK_DIR [SCREENSHOT_OUT]}
work=${2:?usage: report_render.sh BIN_DIR WORK_DIR [SCREENSHOT_OUT]}
shot=${3:-$work/report.png}
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "chromium not installed: skipped"
  exit 77
fi
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work"
printf 'learning_rate,optimizer\n0.05,momentum\n1e12,sgd\n0.01,sgd\n0.02,momentum\n0.1,momentum\n' \
  >"$work/trials.csv"
"$bin/sweep" --trials="$work/trials.csv" --parallel=2 --cores=2 --out="$work/sweep" \
  --metric=train_accuracy -- --model_name=lenet --dataset_name=mock --num_classes=10 \
  --batch_size=16 --num_sample_per_epoch=100000 --use_fp16=False --stop_at_step=150 \
  --log_loss_every_n_iters=25 --save_summaries_secs=1 --result_format=none >"$work/sweep.log" 2>&1 || { cat "$work/sweep.log"; fail "sweep"; }
report=$work/sweep/report.html
[ -f "$report" ] || fail "no report.html"
grep -q "http" "$report" && fail "report.html refers to the network"
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless --disable-gpu --disable-quic --no-first-run --disable-background-networking
       --disable-component-update --disable-sync --hide-scrollbars "--user-data-dir=$profile")
if [ "$(id -u)" -eq 0 ]; then flags+=(--no-sandbox); fi
# The DOM after rendering: the charts are there as SVG.
timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$report" >"$work/dom.html" 2>"$work/chromium.log" ||
  { tail -5 "$work/chromium.log"; fail "chromium --dump-dom"; }
svgs=$(grep -o "<svg" "$work/dom.html" | wc -l)
[ "$svgs" -ge 5 ] || fail "only $svgs charts rendered"
timeout 120 "$browser" "${flags[@]}" --window-size=1000,1500 "--screenshot=$shot" \
  "file://$report" >>"$work/chromium.log" 2>&1 || { tail -5 "$work/chromium.log"; fail "screenshot"; }
size=$(stat -c %s "$shot" 2>/dev/null || echo 0)
[ "$size" -gt 20000 ] || fail "screenshot of $size bytes"
echo "PASS: report.html rendered offline ($svgs charts), screenshot $shot ($size bytes)"
