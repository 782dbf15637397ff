#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang, ASan and UBSan in build-fuzz/ and runs
# each for SECONDS_PER_TARGET seconds (default 60). Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]
# Each run starts from a copy of its seed corpus (tests/fuzz/corpus/<name>/, plus the dictionary
# tests/fuzz/<name>.dict if there is one) in a temporary directory, so the committed corpus never
# grows by itself. Prints total executions and executions per second per target; exits non-zero
# on a crash, leak, hang (-timeout) or broken invariant, naming the reproducer, which is kept in
# build-fuzz/fuzz-artifacts/.
# (Every ordinary build also runs each seed of the corpus once, without libFuzzer: the ctests
# fuzz_replay.<name>, built from tests/fuzz/replay_main.cc.)
#
# Longer runs: `scripts/fuzz.sh 3600`, or one target by hand on every core, keeping what it finds
# in a directory of your own (new inputs go to the first directory; later ones are only read):
#   mkdir -p /tmp/found && build-fuzz/tests/fuzz/coordinator_fuzzer -fork=$(nproc) \
#     -max_total_time=3600 /tmp/found tests/fuzz/corpus/coordinator
# Reproduce a failure: build-fuzz/tests/fuzz/<name>_fuzzer <reproducer> (the coordinator fuzzer
# prints every event and action with CKPT_FUZZ_VERBOSE=1).
# Adding found inputs to the corpus: keep it small (< 50 files, < 200 KB per target). Add a
# reproducer once its bug is fixed (named for what it does), or a few inputs that reach new code:
#   cp -r tests/fuzz/corpus/<name> /tmp/merged
#   build-fuzz/tests/fuzz/<name>_fuzzer -merge=1 /tmp/merged /tmp/found
# copies into /tmp/merged only the inputs that add coverage to the committed corpus; copy a few of
# those new files into tests/fuzz/corpus/<name>/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
build_dir=$root/build-fuzz
targets=(config coordinator group_coordinator)

if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ not found (Debian: apt-get install clang libclang-rt-14-dev)" >&2
  exit 1
fi
export CCACHE_BASEDIR=$root
if [ ! -f "$build_dir/build.ninja" ]; then
  echo "== configure $build_dir (clang, libFuzzer, ASan+UBSan)"
  CC=clang CXX=clang++ cmake -S "$root" -B "$build_dir" -G Ninja -DCKPT_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
echo "== build fuzz targets ($build_dir)"
cmake --build "$build_dir" -j"$(nproc)" --target "${targets[@]/%/_fuzzer}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
artifacts=$build_dir/fuzz-artifacts
mkdir -p "$artifacts"

failed=0
for name in "${targets[@]}"; do
  binary=$build_dir/tests/fuzz/${name}_fuzzer
  corpus=$work/$name
  mkdir -p "$corpus"
  cp -r "$root/tests/fuzz/corpus/$name/." "$corpus/"
  log=$work/$name.log
  dict=()
  [ -f "$root/tests/fuzz/$name.dict" ] && dict=(-dict="$root/tests/fuzz/$name.dict")
  # CKPT_FUZZ_SEED fixes libFuzzer's seed: the same binary then walks the same inputs, so a
  # gating run (scripts/test.sh) explores what was explored before it was committed.
  seed=()
  [ -n "${CKPT_FUZZ_SEED:-}" ] && seed=(-seed="$CKPT_FUZZ_SEED")
  echo "== fuzz $name: ${seconds}s"
  status=0
  # -timeout: one input taking this long is a hang (yaml-cpp's known LoadAll loop would show here).
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      "${dict[@]}" "${seed[@]}" -artifact_prefix="$artifacts/$name-" "$corpus" >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n1)
  echo "   executions: ${runs:-?} total, ${rate:-?}/s"
  if [ "$status" -ne 0 ]; then
    failed=1
    # The last 40 lines hold the report; the reproducer is the "Test unit written to" line.
    tail -n 40 "$log"
    reproducer=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n1)
    echo "FAILED: $name fuzzer (exit $status); reproducer: ${reproducer:-see the log above}"
    echo "   reproduce: $binary ${reproducer:-<file>}"
  fi
done
exit "$failed"
