# Sourced by the benchmarks that run a PyTorch peer, from the repository's
# root: sets PEER_PYTHON, the Python the peer runs on. PEER_PYTHON=debian
# (the default) is Debian's /usr/bin/python3 with python3-torch 1.13;
# PEER_PYTHON=pypi the newest PyTorch from PyPI (bench/peer_env.sh: made on
# first use, about 5 GB once); anything else is taken as a Python to run.
case ${PEER_PYTHON:-debian} in
  debian) PEER_PYTHON=/usr/bin/python3 ;;
  pypi) PEER_PYTHON=$(bench/peer_env.sh) ;;
esac
