#!/usr/bin/env bash
# A project-local, pinned Python environment made by uv (itself pinned,
# pip-installed into .cache/uv-VERSION), reused while the requirements file
# is unchanged: .cache/NAME/venv-<hash of REQUIREMENTS>. From uv's cache
# (hard links) a fresh clone's environment takes seconds. The interpreter is
# $PYTHON's (default python3), never one uv would download.
# Usage (repo root): scripts/uv_venv.sh NAME REQUIREMENTS [WHAT]
#   WHAT: a few words for the line printed while it is made.
# Prints the environment's directory on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
name=$1 req=$2 what=${3:-$2}
PYTHON=${PYTHON:-python3}
key=$(sha256sum "$req" | cut -c1-12)
venv=.cache/$name/venv-$key
uv_version=0.13.9
uv=.cache/uv-$uv_version/bin/uv
if [ ! -x "$uv" ]; then
  rm -rf .cache/uv-*
  "$PYTHON" -m pip install -q --disable-pip-version-check --target ".cache/uv-$uv_version" \
    "uv==$uv_version"
fi
if [ ! -x "$venv/bin/python" ]; then
  echo "uv_venv: making $venv ($what)" >&2
  rm -rf ".cache/$name"
  mkdir -p ".cache/$name"
  UV_PYTHON_DOWNLOADS=never "$uv" venv -q --relocatable --python "$PYTHON" "$venv.tmp" >&2
  VIRTUAL_ENV=$venv.tmp "$uv" pip install -q -r "$req" >&2
  mv "$venv.tmp" "$venv"
fi
echo "$venv"
