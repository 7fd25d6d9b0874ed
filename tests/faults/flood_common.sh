# Sourced by peer_flood.sh and wrong_token_flood.sh: what both floods need
# besides their own traffic. The sourcing script sets FLOOD_NAME (for its
# messages), WORK (its log folder), KEEP_LOGS (1: keep WORK) and PORT (the
# coordinator's).

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
