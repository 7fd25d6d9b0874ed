#!/usr/bin/env bash
# Formats every C++ file git tracks with clang-format 14 and the repository's
# .clang-format (Google's style at 100 columns; docs/design/build.md, "Code style").
# Usage: scripts/format.sh           rewrite the files in place
#        scripts/format.sh --check   change nothing; list the files that
#                                    differ and exit 1 if any does (a leg of
#                                    .ci/run)
# clang-format-14 is installed from Debian when it is missing: another
# version formats some constructs differently, so the check pins this one.
set -euo pipefail
cd "$(dirname "$0")/.."
CHECK=0
case ${1:-} in
  --check) CHECK=1 ;;
  "") ;;
  *) echo "format: unknown argument $1 (usage: scripts/format.sh [--check])" >&2; exit 2 ;;
esac
FORMAT=${CLANG_FORMAT:-clang-format-14}
if ! command -v "$FORMAT" >/dev/null; then scripts/apt_install.sh format clang-format-14; fi
mapfile -t FILES < <(git ls-files '*.cc' '*.h' '*.cpp' '*.hpp' '*.cu' '*.cuh')
if ((CHECK == 0)); then
  printf '%s\0' "${FILES[@]}" | xargs -0 "$FORMAT" -i
  echo "format: ${#FILES[@]} files formatted"
  exit 0
fi
differ=()
for f in "${FILES[@]}"; do
  if ! "$FORMAT" "$f" | cmp -s - "$f"; then differ+=("$f"); fi
done
if ((${#differ[@]})); then
  echo "format: ${#differ[@]} of ${#FILES[@]} files differ from .clang-format (run scripts/format.sh):" >&2
  printf '  %s\n' "${differ[@]}" >&2
  exit 1
fi
echo "format: all ${#FILES[@]} files match .clang-format"
