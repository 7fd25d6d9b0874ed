#!/usr/bin/env bash
# Works out what a runtime image needs for the given programs, from the
# shared libraries ldd resolves for them (directly and indirectly):
#   - a library a Debian package owns: the package's name goes to PKG_FILE
#     (one a line, sorted), for apt-get install in the runtime stage;
#   - a library under one of the SKIP_DIRS (colon-separated; e.g. a LibTorch
#     copied whole into the runtime image): nothing;
#   - any other library (the CUDA toolkit's, NCCL's from NVIDIA's image):
#     copied, symlinks resolved, into LIB_DIR under the name it is loaded by;
#   - the NVIDIA driver's libraries (libcuda.so.1, libnvidia-*): nothing; the
#     NVIDIA container toolkit mounts them into the container at run time.
# Fails when another library is not found.
# Usage: runtime_libs.sh LIB_DIR PKG_FILE SKIP_DIRS PROGRAM...
# Used by Dockerfile.cuda; on the CPU build it prints what Dockerfile installs.
set -euo pipefail
lib_dir=$1 pkg_file=$2 skip_dirs=$3
shift 3
mkdir -p "$lib_dir"

# dpkg knows a file by the path its package installed, which usrmerge may
# have moved (/lib -> /usr/lib) or an alternative may hide (libblas.so.3).
owner() {
  local p
  for p in "$1" "/usr$1" "${1#/usr}" "$(readlink -f "$1")"; do
    if dpkg -S "$p" 2>/dev/null | sed -n '1s/:.*//p' | grep .; then return 0; fi
  done
  return 1
}

declare -A pkgs=()
missing=0
while read -r name arrow path _; do
  [ "$arrow" = "=>" ] || continue
  case $name in libcuda.so* | libnvidia-*) continue ;; esac
  if [ "$path" = not ]; then
    echo "runtime_libs: $name not found" >&2
    missing=1
    continue
  fi
  skip=0
  IFS=: read -r -a dirs <<<"$skip_dirs"
  for d in "${dirs[@]}"; do
    case $path in "$d"/*) skip=1 ;; esac
  done
  [ "$skip" = 1 ] && continue
  if pkg=$(owner "$path"); then
    pkgs[$pkg]=1
  else
    cp -L "$path" "$lib_dir/$name"
    echo "runtime_libs: copied $path as $name"
  fi
done < <(for p in "$@"; do ldd "$p" | sed 's/ (0x[0-9a-f]*)$//'; done | sort -u)
[ "$missing" = 0 ] || exit 1
if ((${#pkgs[@]})); then printf '%s\n' "${!pkgs[@]}" | sort; fi >"$pkg_file"
echo "runtime_libs: $(wc -l <"$pkg_file") Debian packages, $(find "$lib_dir" -type f | wc -l) libraries copied"
