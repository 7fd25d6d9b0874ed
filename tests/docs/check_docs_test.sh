#!/usr/bin/env bash
# scripts/check_docs.py on a small tree of its own (not a git checkout: the
# checker then reads every file, as on a machine without git): it must name
# a broken link, a missing section, a missing path and an unknown binary,
# and pass the same tree once they are fixed.
# Usage: check_docs_test.sh SOURCE_DIR SCRATCH_DIR
set -euo pipefail
src=$1
tmp=$2/check_docs
rm -rf "$tmp"
mkdir -p "$tmp/docs" "$tmp/scripts"
cd "$tmp"
printf '#!/bin/sh\n' > scripts/setup.sh
printf 'add_executable(train_image_classifier main.cc)\n' > CMakeLists.txt
printf '# Guide\n\n## Setting up\n\n**Bold lead** text.\n' > docs/guide.md
cat > README.md <<'MD'
See [the guide](docs/guide.md#setting-up) and [gone](docs/gone.md).
Also docs/guide.md, "No such section" and `scripts/missing.sh`.
Run `build/bin/no_such_tool`.
MD
check() { /usr/bin/python3 "$src/scripts/check_docs.py" --root "$tmp"; }
if out=$(check); then
  echo "FAIL: broken references passed: $out"
  exit 1
fi
for want in 'link to docs/gone.md: docs/gone.md does not exist' 'no section "No such section"' \
  '`scripts/missing.sh` does not exist' 'build/bin/no_such_tool: no such binary' \
  '4 broken references'; do
  grep -qF "$want" <<<"$out" || { echo "FAIL: no \"$want\" in: $out"; exit 1; }
done
cat > README.md <<'MD'
See [the guide](docs/guide.md#setting-up) and docs/guide.md, "Bold lead".
Run `build/bin/train_image_classifier`.
MD
out=$(check) || { echo "FAIL: a clean tree failed: $out"; exit 1; }
echo "check_docs_test: ok"
