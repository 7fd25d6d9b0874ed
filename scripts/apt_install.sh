#!/usr/bin/env bash
# Installs Debian packages for the other scripts (setup.sh, fuzz.sh,
# format.sh), through sudo when not run as root.
# Usage: scripts/apt_install.sh WHO PACKAGE...   (WHO names the caller in
#        the message "WHO: installing PACKAGE...")
set -euo pipefail
who=$1
shift
echo "$who: installing $*"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
# env: sudo would drop a variable set in front of it.
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
