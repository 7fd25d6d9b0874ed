#!/usr/bin/env bash
# Input-pipeline benchmark (issue 3): decode + preprocess, images/sec per core.
#   (a) photograph-like 500x375 JPEGs (q90, 4:2:0), inception train to 224x224
#   (b) CIFAR-like 32x32 PNGs, cifarnet train
# beside, in the same run: the PIL/torchvision peer on (a)'s files
# (../shared/bench/peer_pytorch.py decode) and libjpeg-turbo's tjbench full-image
# decode of the same files; ours with 1 and 2 threads. Each of ours/tjbench is
# measured REPEAT times, interleaved, and the best is kept (the machine is
# shared; contention only ever slows a run down).
# usage: bench/input_pipeline.sh   (env: BUILD_DIR N_JPEG N_PNG BENCH_SECONDS REPEAT)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BUILD_DIR:-build}/bin
PEER=${PEER:-../shared/bench/peer_pytorch.py}
N_JPEG=${N_JPEG:-200}
N_PNG=${N_PNG:-2000}
SECS=${BENCH_SECONDS:-3}
REPEAT=${REPEAT:-3}
TJ_FILES=${TJ_FILES:-10}

command -v tjbench >/dev/null || {
  echo "bench: tjbench missing: apt-get install libjpeg-turbo-progs" >&2; exit 2; }
[ -x "$BIN/input_bench" ] || { echo "bench: build input_bench first (ninja -C build input_bench)" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
"$BIN/input_bench" make_jpegs "$WORK/jpeg" "$N_JPEG"
"$BIN/input_bench" make_pngs "$WORK/png" "$N_PNG"

rate() { sed -n 's/.*images_per_sec=\([0-9.]*\).*/\1/p'; }
max() { printf '%s\n' "$@" | sort -g | tail -1; }

# tjbench: full-image decode (accurate IDCT, fancy upsampling, as ours) of the
# first TJ_FILES files; images/sec = files / sum of per-file decode times.
tjrate() {
  local sum=0 n=0 f fps
  for f in $(ls "$WORK/jpeg"/*.jpg | head -n "$TJ_FILES"); do
    fps=$(tjbench "$f" -benchtime 1 -warmup 0.2 -rgb 2>/dev/null |
          sed -n 's/.*Decompress.*Frame rate: *\([0-9.]*\).*/\1/p' | head -1)
    sum=$(echo "$sum + 1 / $fps" | bc -l)
    n=$((n + 1))
  done
  echo "$n / $sum" | bc -l
}

declare -a a1 a2 afull tj b1 b2
for r in $(seq "$REPEAT"); do
  a1+=("$("$BIN/input_bench" run "$WORK/jpeg" inception 224 1 "$SECS" | rate)")
  tj+=("$(tjrate)")
  a2+=("$("$BIN/input_bench" run "$WORK/jpeg" inception 224 2 "$SECS" | rate)")
  afull+=("$("$BIN/input_bench" run "$WORK/jpeg" inception 224 1 "$SECS" 0 | rate)")
  b1+=("$("$BIN/input_bench" run "$WORK/png" cifarnet 32 1 "$SECS" | rate)")
  b2+=("$("$BIN/input_bench" run "$WORK/png" cifarnet 32 2 "$SECS" | rate)")
done
peer=$(/usr/bin/python3 "$PEER" decode "$WORK/jpeg" "$N_JPEG" | tail -1)
peer_rate=$(echo "$peer" | sed -n 's/.*images_per_sec_one_core=\([0-9.]*\).*/\1/p')

A1=$(max "${a1[@]}"); A2=$(max "${a2[@]}"); AF=$(max "${afull[@]}")
TJ=$(max "${tj[@]}"); B1=$(max "${b1[@]}"); B2=$(max "${b2[@]}")
r() { printf '%.2f' "$(echo "$1 / $2" | bc -l)"; }
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "(a) 500x375 JPEG, inception train 224 (best of $REPEAT x ${SECS}s):"
printf '  ours 1 thread            %8.1f img/s\n' "$A1"
printf '  ours 2 threads           %8.1f img/s  (%.1f per core, %sx one thread)\n' "$A2" "$(echo "$A2 / 2" | bc -l)" "$(r "$A2" "$A1")"
printf '  ours, fast_jpeg_decode=0 %8.1f img/s\n' "$AF"
printf '  tjbench full decode      %8.1f img/s\n' "$TJ"
printf '  PIL/torchvision peer     %8.1f img/s  (%s)\n' "$peer_rate" "$peer"
echo "  ratios: ours/peer per core $(r "$A1" "$peer_rate") (target >= 4)," \
     "ours/tjbench $(r "$A1" "$TJ") (target >= 0.8), 2 threads/1 thread $(r "$A2" "$A1") (target >= 1.8)"
echo "(b) 32x32 PNG, cifarnet train (best of $REPEAT x ${SECS}s):"
printf '  ours 1 thread            %8.1f img/s\n' "$B1"
printf '  ours 2 threads           %8.1f img/s  (%sx one thread)\n' "$B2" "$(r "$B2" "$B1")"
