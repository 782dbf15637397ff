#!/usr/bin/env bash
# Runs every test: setup, configure, build, then ctest: unit, integration and end-to-end tests
# (the e2e ones drive the built binaries as processes). Non-zero exit if anything failed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}

"$root/scripts/setup.sh"
echo "== build ($build_dir)"
"$root/scripts/build.sh" "$build_dir"

echo "== tests: unit, integration, end-to-end (ctest)"
ctest --test-dir "$build_dir" --output-on-failure -j2 --timeout 300

