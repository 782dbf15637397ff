#!/usr/bin/env bash
# Model-checks the HA protocol (model/ha.pml, see model/README.md) with spin, exhaustively:
#   - the model as built must hold every assertion ("errors: 0", search depth not truncated);
#   - each planted bug (-DBUG_UNFENCED, -DBUG_TRIGGER_AFTER_DEADLINE) must be caught, so that the
#     check itself can fail.
# Usage: scripts/check-model.sh [--full]
#   default: the bounds CI runs (two leaderships, ids 1..3), about a minute and 0.5 GiB;
#   --full:  the model's own bounds (three leaderships, ids 1..4): ~68 million states, tens of
#            minutes and several GiB (a slow proof, not CI).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model=$root/model/ha.pml
bounds=(-DMAXEP=2 -DMAXID=3)
hash_bits=-w24
if [ "${1:-}" = --full ]; then
  bounds=()
  hash_bits=-w27
elif [ $# -gt 0 ]; then
  echo "usage: $0 [--full]" >&2
  exit 2
fi
command -v spin >/dev/null || { echo "spin is not installed (scripts/setup.sh installs it)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# verify NAME [-DDEFINE...]: compiles the verifier for the model with the defines and runs it;
# its report is left in $work/NAME/report.
verify() {
  local name=$1
  shift
  mkdir "$work/$name"
  (
    cd "$work/$name"
    spin -a "${bounds[@]}" "$@" "$model" >spin.log
    gcc -O2 -DSAFETY -DCOLLAPSE -o pan pan.c
    # pan's exit status says nothing about errors; the report does.
    ./pan -m200000 "$hash_bits" >report 2>&1 || true
  )
}

errors_of() {
  sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$work/$1/report" | head -1
}

status=0
start=$(date +%s)
verify correct
report=$work/correct/report
grep -E "errors:|states, stored" "$report" | sed 's/^/  /'
if [ "$(errors_of correct)" != 0 ]; then
  echo "FAIL: the model violates an assertion:" >&2
  grep -E "assertion violated|pan:" "$report" >&2 || true
  status=1
elif grep -q "max search depth too small" "$report"; then
  echo "FAIL: the search was cut off (raise -m)" >&2
  status=1
elif grep -qE "out of memory|MEMLIM" "$report"; then
  echo "FAIL: pan ran out of memory: the search is incomplete" >&2
  status=1
else
  echo "ok: every assertion holds in every reachable state ($(($(date +%s) - start)) s)"
fi

for bug in BUG_UNFENCED BUG_TRIGGER_AFTER_DEADLINE; do
  verify "$bug" "-D$bug"
  errors=$(errors_of "$bug")
  if [ -n "$errors" ] && [ "$errors" -gt 0 ]; then
    echo "ok: planted $bug is caught: $(grep -m1 'assertion violated' "$work/$bug/report")"
  else
    echo "FAIL: planted $bug went unnoticed" >&2
    status=1
  fi
done
exit $status
