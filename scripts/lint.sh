#!/usr/bin/env bash
# The style checks: clang-format (.clang-format) over every C++ file of the tree, then clang-tidy
# (.clang-tidy) over the daemon's and the clients' sources. Usage: scripts/lint.sh [--format-only]
# [BUILD_DIR]. clang-tidy reads BUILD_DIR's compile_commands.json (default: build/, made by
# scripts/build.sh). scripts/test.sh runs the format check; clang-tidy takes a few minutes a core,
# so it runs here, by hand or before a release.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
format_only=0
if [ "${1:-}" = "--format-only" ]; then
  format_only=1
  shift
fi
build_dir=${1:-$root/build}

mapfile -t sources < <(git ls-files '*.h' '*.cc')
echo "== clang-format: ${#sources[@]} files"
unformatted=()
for f in "${sources[@]}"; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || unformatted+=("$f")
done
if [ ${#unformatted[@]} -gt 0 ]; then
  echo "not formatted (clang-format -i FILE): ${unformatted[*]}" >&2
  exit 1
fi
[ "$format_only" = 1 ] && exit 0

if [ ! -f "$build_dir/compile_commands.json" ]; then
  echo "lint.sh: no $build_dir/compile_commands.json; run scripts/build.sh first" >&2
  exit 1
fi
mapfile -t tidy_sources < <(git ls-files 'server/*.cc' 'client/*.cc')
echo "== clang-tidy: ${#tidy_sources[@]} files"
run-clang-tidy -quiet -j"$(nproc)" -p "$build_dir" "${tidy_sources[@]/#/$root/}"
