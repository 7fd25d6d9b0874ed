# Sourced by the Fashion-MNIST benchmarks (bench/fmnist_*.sh), from the
# repository's root: BIN, PEER, DATA (converted once), OUT (a temporary
# directory removed on exit), and the check that the peer's PyTorch is there
# (unless FMNIST_PEER=0), with PEER_PYTHON (bench/peer_python.sh).
BIN=${BUILD_DIR:-build}/bin
PEER=${PEER:-../shared/bench/peer_pytorch.py}
DATA=data/fashion_mnist
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# FMNIST_PEER=0: a benchmark of ours alone, no peer to check.
if [ "${FMNIST_PEER:-1}" = 1 ]; then
  # shellcheck source=bench/peer_python.sh
  . bench/peer_python.sh
  "$PEER_PYTHON" -c "import torch" 2>/dev/null || {
    echo "bench: the peer's Python ($PEER_PYTHON) has no PyTorch: apt-get install python3-torch" \
      "(Debian's), or PEER_PYTHON=pypi" >&2
    exit 2
  }
fi
# convert_dataset refuses to overwrite: convert once.
[ -f "$DATA/labels.txt" ] || "$BIN/convert_dataset" --dataset_name fashion_mnist \
  --input /usr/share/datasets/fashion-mnist --dataset_dir "$DATA" >/dev/null

# For the scripts that interleave rounds: the load average, and the median of
# a space-separated list on stdin (0 when empty).
load() { cut -d' ' -f1-3 /proc/loadavg; }
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END {
  if (NR == 0) { print 0; exit } if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
