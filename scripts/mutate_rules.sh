#!/usr/bin/env bash
# Mutation test of the post's rules (bees_cli/rules.py) with cosmic-ray; not part of CI.
#
# Every mutant of a rule's constant or condition must make the tests fail. cosmic-ray makes
# the mutants of numbers and operators; the set of gated kinds is mutated here by hand (one
# kind dropped at a time), since cosmic-ray does not mutate set members. Prints each
# survivor and a count; exits 1 when a mutant survives. Takes 10-30 minutes on 2 cores.
#
# Usage: scripts/mutate_rules.sh [WORK_DIR]    (run from a clone with .venv installed)
set -euo pipefail
cd "$(dirname "$0")/.."
PY="$PWD/.venv/bin/python"
BIN="$PWD/.venv/bin"
WORK="${1:-$(mktemp -d)}"
RULES=bees_cli/rules.py
"$PY" -m pip install -q cosmic-ray

# the tests that judge the rules, fastest first so most mutants die in seconds
TESTS="tests/rules tests/schedules/test_times.py tests/handover/test_checkpoint_limits.py \
tests/e2e/test_fire_race.py tests/engine/test_rules_busy_timing.py tests/engine/test_eligibility.py \
tests/engine/test_rules.py tests/cloud/test_faults.py"
RUN_TESTS="$PY -m pytest -x -q -p no:cacheprovider $TESTS"

cp "$RULES" "$WORK/rules.py.orig"
restore() { cp "$WORK/rules.py.orig" "$RULES"; }
trap restore EXIT

cat > "$WORK/config.toml" <<TOML
[cosmic-ray]
module-path = "$RULES"
timeout = 900.0
excluded-modules = []
test-command = "$RUN_TESTS"

[cosmic-ray.distributor]
name = "local"
TOML

echo "== baseline: the tests pass on the unmutated rules"
$RUN_TESTS >"$WORK/baseline.log" 2>&1 || { echo "baseline fails: $WORK/baseline.log"; exit 2; }

echo "== cosmic-ray over $RULES"
rm -f "$WORK/session.sqlite"
"$BIN/cosmic-ray" init "$WORK/config.toml" "$WORK/session.sqlite"
"$BIN/cr-filter-pragma" "$WORK/session.sqlite"
"$BIN/cosmic-ray" exec "$WORK/config.toml" "$WORK/session.sqlite"
"$BIN/cr-report" "$WORK/session.sqlite" --show-pending >"$WORK/report.txt"
tail -4 "$WORK/report.txt"
survivors=$("$BIN/cr-report" "$WORK/session.sqlite" --surviving-only | grep -c "^\[job-id\]" || true)

echo "== hand-made mutants: one gated kind dropped at a time"
for kind in send post delete pay; do
    restore
    sed -i "s/\"$kind\", //; s/, \"$kind\"//" "$RULES"
    if grep -q "\"$kind\"" "$RULES"; then echo "could not drop $kind"; exit 2; fi
    if $RUN_TESTS >"$WORK/gated-$kind.log" 2>&1; then
        echo "SURVIVED: GATED_KINDS without $kind"; survivors=$((survivors + 1))
    else
        echo "killed: GATED_KINDS without $kind"
    fi
done
restore

echo "== $survivors surviving mutants (details: $WORK/report.txt)"
[ "$survivors" -eq 0 ]
