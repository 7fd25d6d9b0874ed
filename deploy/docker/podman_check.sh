#!/usr/bin/env bash
# Builds deploy/docker/Dockerfile with podman and runs the image, with no
# registry: the Debian 12 base is made locally with debootstrap from the
# machine's Debian mirror and imported as localhost/debian:bookworm-slim.
#   1. base image (only when missing): debootstrap --variant=minbase bookworm,
#      apt sources for bookworm, -updates and -security, a slim image's dpkg
#      excludes (no docs, man pages, locales), then podman import;
#   2. which OCI runtime and limits podman can use here (see below), and
#      whether apt inside a container reaches the mirror (default network,
#      then --network=host);
#   3. podman build (niced; the builder stage compiles the whole project);
#   4. the image: --help, a 20-step training on mock data, eval --help,
#      the image size; with --default-job also the image's default job
#      (configs/quickstart.cfg on the Fashion-MNIST inside the image) and
#      its evaluation on the 10,000 test images.
# Not a CTest test (the build alone compiles the whole project, for long).
#
# Usage: deploy/docker/podman_check.sh [--no-build] [--default-job]
#   --no-build     skip step 3 and check an image built before
#   --default-job  also train and evaluate the default job
# Environment:
#   IMAGE             the image to build and run (default fastnn-cpp)
#   BASE_IMAGE        the base (default localhost/debian:bookworm-slim)
#   BASE_DIR          where debootstrap puts the base's tree; outside the
#                     repository (default ${XDG_CACHE_HOME:-~/.cache}/fastnn-podman-base)
#   DEBIAN_MIRROR     default: the first Debian archive URI in /etc/apt's
#                     sources, else http://deb.debian.org/debian
#   DEBIAN_SECURITY   security archive for the base's apt sources (default:
#                     the mirror's host + /debian-security; "none": leave out)
#   NICE              niceness of the build (default 19)
#   JOBS              compile jobs in the builder (default 2)
# Exits 77 when podman or debootstrap is missing (or debootstrap would need
# root), 1 when a step fails (named), 0 when everything ran.
#
# Runtimes and limits: podman's default runtime on Debian 12 is crun; where
# crun cannot start a container (e.g. "cgroups in hybrid mode not
# supported": cgroup v1 with a cgroup2 mount that has controllers) the script
# uses runc when installed. Podman 4.3 gives a rootful container
# nofile=1048576 (and nproc=32768) by default, and nproc=1048576 once
# --ulimit sets nofile alone (podman inspect, HostConfig.Ulimits); without
# CAP_SYS_RESOURCE, raising a hard limit above the caller's fails ("setrlimit
# RLIMIT_NOFILE/RLIMIT_NPROC: Operation not permitted"). So every run and
# build passes both --ulimit values, within this shell's hard limits and
# within podman's own: podman and conmon run with nproc 32768 (their
# /proc/PID/limits), so a container cannot be given more.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD

NO_BUILD=0
DEFAULT_JOB=0
for arg in "$@"; do
  case $arg in
    --no-build) NO_BUILD=1 ;;
    --default-job) DEFAULT_JOB=1 ;;
    -h | --help) sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "podman_check: unknown argument $arg (usage: $0 [--no-build] [--default-job])" >&2
       exit 2 ;;
  esac
done

IMAGE=${IMAGE:-fastnn-cpp}
BASE_IMAGE=${BASE_IMAGE:-localhost/debian:bookworm-slim}
BASE_DIR=${BASE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/fastnn-podman-base}
NICE=${NICE:-19}
JOBS=${JOBS:-2}
LOG_DIR=${LOG_DIR:-$(dirname "$BASE_DIR")}

current=start
step() { current=$1; echo "== podman_check: $1"; }
on_exit() {
  local rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
    echo "podman_check: FAILED in step \"$current\" (exit $rc)" >&2
  fi
}
trap on_exit EXIT
skip() { echo "podman_check: skipped: $*"; exit 77; }

command -v podman >/dev/null || skip "podman not installed (apt-get install podman uidmap slirp4netns netavark fuse-overlayfs runc)"
command -v debootstrap >/dev/null || skip "debootstrap not installed (apt-get install debootstrap)"

# The Debian mirror this machine's apt uses.
if [ -z "${DEBIAN_MIRROR:-}" ]; then
  DEBIAN_MIRROR=$( { cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
      /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } | sed -n -e 's/^URIs:[[:space:]]*\([^[:space:]]*\/debian\)\/\{0,1\}$/\1/p' \
                         -e 's/^deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\([^[:space:]]*\/debian\)\/\{0,1\}[[:space:]].*/\2/p' |
    head -1)
  DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
fi
if [ -z "${DEBIAN_SECURITY:-}" ]; then
  DEBIAN_SECURITY=$(echo "$DEBIAN_MIRROR" | sed -n 's#^\([a-z]*://[^/]*\)/.*#\1/debian-security#p')
fi
echo "podman_check: mirror $DEBIAN_MIRROR, security ${DEBIAN_SECURITY:-none}"

# Limits a container may have here (see the header).
hard_nofile=$(ulimit -Hn)
[ "$hard_nofile" = unlimited ] && hard_nofile=1048576
hard_nproc=$(ulimit -Hu)
{ [ "$hard_nproc" = unlimited ] || [ "$hard_nproc" -gt 32768 ]; } && hard_nproc=32768
ULIMITS=(--ulimit "nofile=$hard_nofile:$hard_nofile" --ulimit "nproc=$hard_nproc:$hard_nproc")

# --- 1. base image ---------------------------------------------------------
step "base image $BASE_IMAGE"
if podman image exists "$BASE_IMAGE"; then
  echo "podman_check: $BASE_IMAGE exists"
else
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || skip "debootstrap needs root (or sudo)"
    SUDO=sudo
  fi
  case "$BASE_DIR/" in
    "$REPO"/*) echo "podman_check: BASE_DIR $BASE_DIR is inside the repository; put it elsewhere" >&2
               exit 1 ;;
  esac
  if [ ! -x "$BASE_DIR/usr/bin/apt-get" ]; then
    $SUDO rm -rf "$BASE_DIR"
    mkdir -p "$(dirname "$BASE_DIR")"
    t0=$SECONDS
    $SUDO debootstrap --variant=minbase bookworm "$BASE_DIR" "$DEBIAN_MIRROR" \
      >"$LOG_DIR/podman-debootstrap.log" 2>&1 ||
      { tail -20 "$LOG_DIR/podman-debootstrap.log"; exit 1; }
    echo "podman_check: debootstrap took $((SECONDS - t0)) s"
    # What a slim Debian image has: deb822 sources with -updates and
    # -security, no docs/man pages/locales, no apt caches.
    $SUDO rm -f "$BASE_DIR/etc/apt/sources.list"
    {
      printf '%s\n' "Types: deb" "URIs: $DEBIAN_MIRROR" "Suites: bookworm bookworm-updates" \
        "Components: main" "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
      if [ -n "$DEBIAN_SECURITY" ] && [ "$DEBIAN_SECURITY" != none ]; then
        printf '%s\n' "" "Types: deb" "URIs: $DEBIAN_SECURITY" "Suites: bookworm-security" \
          "Components: main" "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
      fi
    } | $SUDO tee "$BASE_DIR/etc/apt/sources.list.d/debian.sources" >/dev/null
    printf '%s\n' "path-exclude /usr/share/doc/*" "path-include /usr/share/doc/*/copyright" \
      "path-exclude /usr/share/man/*" "path-exclude /usr/share/info/*" \
      "path-exclude /usr/share/locale/*" "path-include /usr/share/locale/locale.alias" \
      "path-exclude /usr/share/groff/*" "path-exclude /usr/share/lintian/*" \
      "path-exclude /usr/share/linda/*" |
      $SUDO tee "$BASE_DIR/etc/dpkg/dpkg.cfg.d/slim-excludes" >/dev/null
    $SUDO find "$BASE_DIR/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
    $SUDO find "$BASE_DIR/usr/share/doc" -mindepth 1 -type d -empty -delete
    $SUDO rm -rf "$BASE_DIR"/usr/share/{man,info,groff,lintian,linda}/*
    $SUDO find "$BASE_DIR/usr/share/locale" -mindepth 1 -not -name locale.alias -delete
    $SUDO rm -rf "$BASE_DIR"/var/lib/apt/lists/* "$BASE_DIR"/var/cache/apt/*.bin \
      "$BASE_DIR"/var/cache/apt/archives/*.deb "$BASE_DIR"/var/log/*.log
  fi
  $SUDO tar -C "$BASE_DIR" -c . | podman import --quiet --change 'CMD ["bash"]' - "$BASE_IMAGE" >/dev/null
  echo "podman_check: imported $BASE_IMAGE"
fi

# --- 2. runtime, limits, network ------------------------------------------
step "OCI runtime"
RUNTIME=()
err=$(podman run --rm "${ULIMITS[@]}" "$BASE_IMAGE" true 2>&1) || {
  echo "podman_check: the default runtime fails: $err"
  command -v runc >/dev/null || { echo "podman_check: and runc is not installed (apt-get install runc)" >&2; exit 1; }
  RUNTIME=(--runtime runc)
  err=$(podman "${RUNTIME[@]}" run --rm "${ULIMITS[@]}" "$BASE_IMAGE" true 2>&1) ||
    { echo "podman_check: runc fails too: $err" >&2; exit 1; }
}
echo "podman_check: runtime ${RUNTIME[1]:-default}, ${ULIMITS[*]}"
run() { podman "${RUNTIME[@]}" run --rm "${ULIMITS[@]}" "$@"; }

step "apt in a container"
NETWORK=()
if run "$BASE_IMAGE" sh -c 'apt-get update -qq' >/dev/null 2>&1; then
  echo "podman_check: default network reaches the mirror"
elif run --network=host "$BASE_IMAGE" sh -c 'apt-get update -qq' >/dev/null 2>&1; then
  echo "podman_check: only --network=host reaches the mirror"
  NETWORK=(--network=host)
else
  echo "podman_check: apt-get update fails in a container, with either network:" >&2
  run --network=host "$BASE_IMAGE" apt-get update 2>&1 | tail -5 >&2
  exit 1
fi

# --- 3. build --------------------------------------------------------------
if [ "$NO_BUILD" = 0 ]; then
  step "podman build $IMAGE (nice $NICE, $JOBS jobs)"
  t0=$SECONDS
  nice -n "$NICE" podman build "${RUNTIME[@]}" "${ULIMITS[@]}" "${NETWORK[@]}" \
    --build-arg BASE="$BASE_IMAGE" --build-arg JOBS="$JOBS" \
    -f deploy/docker/Dockerfile -t "$IMAGE" . >"$LOG_DIR/podman-build.log" 2>&1 ||
    { tail -40 "$LOG_DIR/podman-build.log"; exit 1; }
  echo "podman_check: build took $((SECONDS - t0)) s (log: $LOG_DIR/podman-build.log)"
fi

# --- 4. the image ----------------------------------------------------------
step "$IMAGE --help"
run "$IMAGE" --help >"$LOG_DIR/podman-help.txt"
head -1 "$LOG_DIR/podman-help.txt"

step "$IMAGE: 20 steps of LeNet on mock data"
t0=$SECONDS
run "$IMAGE" --model_name=lenet --dataset_name=mock --num_classes=10 --batch_size=8 \
  --stop_at_step=20 --train_dir=/tmp/t --intra_op_parallelism_threads=1 2>&1 |
  tee "$LOG_DIR/podman-train.log" | tail -3
echo "podman_check: training container took $((SECONDS - t0)) s"
grep -q "global_step 20" "$LOG_DIR/podman-train.log"

step "$IMAGE eval_image_classifier --help"
run "$IMAGE" eval_image_classifier --help >"$LOG_DIR/podman-eval-help.txt"
head -1 "$LOG_DIR/podman-eval-help.txt"

if [ "$DEFAULT_JOB" = 1 ]; then
  step "$IMAGE: the default job and its evaluation"
  t0=$SECONDS
  # train_dir on the container's own disk; the evaluation runs in the same
  # container, from the image's working directory.
  run --entrypoint sh "$IMAGE" -c \
    'fastnn-entrypoint --config configs/quickstart.cfg --train_dir=runs/quickstart &&
     eval_image_classifier --config configs/quickstart.cfg --checkpoint_path=runs/quickstart' \
    >"$LOG_DIR/podman-default-job.log" 2>&1 || { tail -20 "$LOG_DIR/podman-default-job.log"; exit 1; }
  grep -E "^Stopped at|^Accuracy" "$LOG_DIR/podman-default-job.log"
  echo "podman_check: default job + evaluation took $((SECONDS - t0)) s"
fi

step "image sizes"
podman images --format '{{.Repository}}:{{.Tag}} {{.Size}}' |
  grep -E "^(localhost/)?($IMAGE|${BASE_IMAGE#localhost/})(:| )" || true
echo "podman_check: all checks passed"
