# Sourced by peer_flood.sh and wrong_token_flood.sh: what both floods need
# besides their own traffic. Only defines functions; before calling them the
# sourcing script sets FLOOD_NAME (for its messages), WORK (its log folder),
# KEEP_LOGS (1: keep WORK) and PORT (the coordinator's).

# use_bin_dir BIN_DIR NAME...: sets BIN to BIN_DIR, made absolute; exits 2
# with the usage unless BIN_DIR holds every NAME as an executable, 77
# (skipped) when python3 is missing.
use_bin_dir() {
  local dir=$1 held=$2 n
  shift
  for n in "${@:2}"; do held+=" and $n"; done
  for n in "$@"; do
    if [[ -z "$dir" || ! -x "$dir/$n" ]]; then
      echo "usage: $0 BIN_DIR (holding $held)" >&2
      exit 2
    fi
  done
  BIN=$(cd "$dir" && pwd)
  if ! command -v python3 >/dev/null 2>&1; then
    echo "SKIP: python3 not found" >&2
    exit 77
  fi
}

# The exit trap: kills this shell's children not yet reaped (a pid already
# waited for may belong to someone else by now) and removes WORK unless the
# logs are to be kept or a check failed.
flood_cleanup() {
  local p
  for p in $(jobs -p); do
    kill -KILL "$p" 2>/dev/null
  done
  if [[ "${KEEP_LOGS:-0}" == 1 || "${FAILED:-0}" == 1 ]]; then
    echo "$FLOOD_NAME: logs kept in $WORK"
  else
    rm -rf "$WORK"
  fi
}

# fail MESSAGE...: prints FAIL and the message; the script goes on and exits
# 1 at the end.
fail() {
  echo "FAIL: $*"
  FAILED=1
}

# True while $1 runs (a zombie counts as exited).
running() {
  local stat
  [[ -r /proc/$1/stat ]] || return 1
  read -r stat 2>/dev/null </proc/$1/stat || return 1
  stat=${stat##*) }
  [[ ${stat:0:1} != Z ]]
}

# True once something listens on TCP $PORT (read from /proc; no connection;
# grep, not a shell loop: a flood leaves many TIME_WAIT lines there).
listening() {
  local re
  re=$(printf '^ *[0-9]+: [0-9A-F]+:%04X [0-9A-F]+:[0-9A-F]+ 0A ' "$PORT")
  grep -Eq "$re" /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
