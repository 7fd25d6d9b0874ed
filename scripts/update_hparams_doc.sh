#!/usr/bin/env bash
# Regenerates the key tables at the end of docs/hyperparameters.md (everything
# from the first "### Dataset" heading on) from the key table in the code.
set -euo pipefail
cd "$(dirname "$0")/.."
doc=docs/hyperparameters.md
tool=${BUILD_DIR:-build}/bin/hparams_doc
line=$(grep -n '^### Dataset$' "$doc" | head -1 | cut -d: -f1)
{ head -n $((line - 1)) "$doc"; "$tool"; } > "$doc.new"
mv "$doc.new" "$doc"
