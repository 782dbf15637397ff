#!/usr/bin/env bash
# Soak (not part of CI): builds Release and runs scripts/soak.py against it — thousands of
# pipelines for ten minutes with reconnect storms, short-lived pipelines and savepoints, sampling
# the daemon's RSS, threads and worker sessions. Exits non-zero if RSS is not flat after warm-up,
# sessions leak, or a savepoint fails.
# Usage: scripts/soak.sh [soak.py options]   e.g. scripts/soak.sh --pipelines 5000 --minutes 10
#        (scripts/soak.py --help lists them; BUILD_DIR overrides the Release tree, build-release)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build-release}
"$root/scripts/build.sh" "$build_dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
exec python3 "$root/scripts/soak.py" --build-dir "$build_dir" "$@"
