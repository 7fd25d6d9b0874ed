#!/usr/bin/env bash
# The newest PyTorch from PyPI in a project-local, git-ignored environment
# (scripts/torch-pypi-requirements.txt, pinned; scripts/uv_venv.sh), for the
# benchmarks' strongest peer; scripts/setup.sh --torch-pypi builds against
# the same environment's LibTorch. Prints its python. The first call downloads
# about 5 GB (the CUDA wheel's NVIDIA libraries included); later ones take
# seconds.
# Usage: bench/peer_env.sh
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$(scripts/uv_venv.sh torch_pypi scripts/torch-pypi-requirements.txt \
  "PyPI's newest torch and torchvision: about 5 GB, once")
echo "$PWD/$venv/bin/python"
