#!/usr/bin/env bash
# Builds the Debian packages: scripts/package.sh [--no-build] [BUILD_DIR] [OUT_DIR]
#   ckptd_<version>_<arch>.deb        the daemon, ckptctl, ckpt-worker-sim, the config, the unit,
#                                     the man pages, the alert rules and the dashboard
#   libckpt-dev_<version>_<arch>.deb  the worker SDK: headers, libckpt.so and .a, the protos,
#                                     the CMake package and ckpt.pc
# BUILD_DIR defaults to build-release (configured Release, tests off, if it does not exist). An
# existing tree is packaged as it is configured: the packages always install under /usr, whatever
# the tree's install prefix, so nothing is reconfigured. Its out-of-date targets are built first,
# unless --no-build: then the tree is packaged as built, and a missing part is an error.
# OUT_DIR defaults to BUILD_DIR. Prints the paths of both packages.
# Install with: apt-get install ./ckptd_*.deb ./libckpt-dev_*.deb
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=1
if [ "${1:-}" = --no-build ]; then
  build=0
  shift
fi
case "${1:-}" in -h|--help) sed -n '2,12p' "$0" | cut -c3-; exit 0 ;; esac
build_dir=${1:-$root/build-release}
out_dir=${2:-$build_dir}
# cpack runs in the build tree: both paths absolute from here on.
mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)

if [ $build = 1 ]; then
  "$root/scripts/setup.sh"
  if [ ! -f "$build_dir/build.ninja" ]; then
    cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCKPT_BUILD_TESTS=OFF \
      >/dev/null
  fi
  build_dir=$(cd "$build_dir" && pwd)
  export CCACHE_BASEDIR=$root
  cmake --build "$build_dir" -j"$(nproc)" \
    --target ckptd ckptctl ckpt-worker-sim man ckpt_sdk_shared ckpt_sdk_static >/dev/null
else
  if [ ! -d "$build_dir" ]; then
    echo "package.sh: no build tree $build_dir (run without --no-build)" >&2
    exit 1
  fi
  build_dir=$(cd "$build_dir" && pwd)
  for part in server/ckptd client/ckptctl client/ckpt-worker-sim deploy/man/ckptd.8.gz; do
    if [ ! -e "$build_dir/$part" ]; then
      echo "package.sh: $build_dir/$part is not built (run without --no-build)" >&2
      exit 1
    fi
  done
  if [ -z "$(find "$build_dir/client/package" -maxdepth 1 -name 'libckpt.so*' 2>/dev/null)" ]; then
    echo "package.sh: $build_dir has no SDK library built (CKPT_SDK_PACKAGE=OFF, a sanitizer" \
      "tree, or run without --no-build)" >&2
    exit 1
  fi
fi
rm -f "$out_dir"/ckptd_*.deb "$out_dir"/libckpt-dev_*.deb
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! (cd "$build_dir" && cpack -G DEB -B "$out_dir") >"$log" 2>&1; then
  cat "$log" >&2
  exit 1
fi
rm -rf "$out_dir/_CPack_Packages"
ls "$out_dir"/ckptd_*.deb "$out_dir"/libckpt-dev_*.deb
