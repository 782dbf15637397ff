#!/usr/bin/env bash
# Builds the Debian package: scripts/package.sh [BUILD_DIR] [OUT_DIR]
# BUILD_DIR defaults to build-release (configured Release with prefix /usr, tests off); an existing
# tree is reused with its build type, its install prefix set to /usr (the unit and the config
# name /usr/bin and /etc/ckptd). Writes OUT_DIR/ckptd_<version>_<arch>.deb (OUT_DIR defaults to
# BUILD_DIR) and prints its path. Install it with: apt-get install ./ckptd_*.deb
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-$root/build-release}
out_dir=${2:-$build_dir}
"$root/scripts/setup.sh"
if [ -f "$build_dir/build.ninja" ]; then
  cmake -S "$root" -B "$build_dir" -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
else
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCKPT_BUILD_TESTS=OFF \
    -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
fi
export CCACHE_BASEDIR=$root
cmake --build "$build_dir" -j"$(nproc)" --target ckptd ckptctl ckpt-worker-sim man >/dev/null
mkdir -p "$out_dir"
rm -f "$out_dir"/ckptd_*.deb
(cd "$build_dir" && cpack -G DEB -B "$out_dir" >/dev/null)
rm -rf "$out_dir/_CPack_Packages"
ls "$out_dir"/ckptd_*.deb
