#!/usr/bin/env bash
# Configures and builds one tree. Usage: scripts/build.sh [BUILD_DIR] [extra cmake args...]
# Defaults to build/ in Debug; ccache is used when installed. CKPT_BUILD_TARGETS (space-separated)
# builds only those targets and what they depend on.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-$root/build}
shift || true
export CCACHE_BASEDIR=$root
jobs=$(nproc)
if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug "$@" >/dev/null
elif [ $# -gt 0 ]; then
  cmake -S "$root" -B "$build_dir" "$@" >/dev/null
fi
targets=()
for target in ${CKPT_BUILD_TARGETS:-}; do targets+=(--target "$target"); done
cmake --build "$build_dir" -j"$jobs" "${targets[@]}"
