#!/usr/bin/env bash
# Mutation test of the post's rules (bees_cli/rules.py) and the approval gate's decision
# (bees_cli/gate.py) and where an item goes when a stage ends (bees_cli/moves.py) and the
# handover limits' judgement (bees_cli/handover/limits.py: Limits.problems, Limits.describe)
# with cosmic-ray; not part of CI.
#
# Every mutant of a rule's constant or condition must make the tests fail. cosmic-ray makes
# the mutants of numbers and operators; the sets of gated kinds and of statuses that hold a
# runner's slot (UNDER_WAY) are mutated here by hand (one member dropped at a time), since
# cosmic-ray does not mutate set members. Prints each
# survivor and a count; exits 1 when a mutant survives. Takes 10-30 minutes on 2 cores.
#
# Excluded (``# pragma: no mutate`` on a def line, or a dataclass field's line of gate.py,
# moves.py or limits.py, filtered by cr-filter-pragma): only annotations, which are equivalent mutants: all
# have ``from __future__ import annotations``, so ``str | None`` in a signature or a field's
# annotation is never evaluated and its ``|`` mutated to ``+``, ``-``, ... cannot change
# behaviour. A function's body line never carries the pragma.
#
# The gate's mutants are judged by its decision table alone (tests/rules/test_gate.py, under
# a second; no engine): every kind x approval x journal x intent x request x answer x in
# tools or not. Its run takes about a minute. The moves' mutants likewise by their table
# (tests/rules/test_moves.py, under a second; no engine). The limits' mutants by their direct
# tests (tests/handover/test_limits.py, a few seconds; no engine): each limit below, at and
# above its bound, and relinquish, verify and continue refusing alike.
#
# Usage: scripts/mutate_rules.sh [WORK_DIR] [rules|gate|moves|limits|all]   (default all; run from a clone
# with .venv installed). MUTATE_TESTS="-n 0 tests/rules" judges the rules' mutants by those
# tests alone (about 15 minutes): a quick look at the rules tests/rules covers (the runner
# rules, the gate's kinds), where a survivor elsewhere may be one only the engine tests kill.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="$PWD/.venv/bin/python"
BIN="$PWD/.venv/bin"
WORK="${1:-$(mktemp -d)}"
WHICH="${2:-all}"
RULES=bees_cli/rules.py
GATE=bees_cli/gate.py
MOVES=bees_cli/moves.py
LIMITS=bees_cli/handover/limits.py
"$PY" -m pip install -q cosmic-ray

# The tests that judge the rules, fastest first so most mutants die in seconds (a survivor
# costs one run of them all: about 2 minutes on 2 idle cores). Which rule each judges:
#   tests/rules                        every constant and decision at its boundaries
#     (tests/rules/test_runner_rules.py: RUNNER_SILENT_AFTER, runner_silent, UNDER_WAY,
#     runner_room, the runner rules of DESIGN.md, Runners)
#   tests/schedules/test_times.py      LATE_AFTER through the fire times (is_late)
#   tests/e2e/test_schedule_registration.py  LATE_AFTER as Temporal's catch-up window
#   tests/handover/test_limits.py      MAX_FILES, MAX_FILE_BYTES, MAX_TOTAL_BYTES (Limits.problems)
#   tests/handover/test_checkpoint_limits.py  the same through write and verify
#   tests/cloud/test_faults.py (the two clock tests)  CLOCK_TOLERANCE_SECONDS, over HTTP
#   tests/e2e/test_fire_race.py        LATE_AFTER and KEY_TRIES on the fire path
#   tests/engine/test_rules_busy_timing.py  RECHECK_EVERY, BUSY_LIMIT, busy_* on the engine
#   tests/engine/test_eligibility.py   RECHECK_EVERY for eligibility on the engine
#   tests/engine/test_rules.py         REVIEW_LIMIT, GATED_KINDS and approvals on the engine
# Left out as slower and judging nothing the above do not: tests/engine/test_waits_week.py
# (slow; days of RECHECK_EVERY), tests/engine/test_pieces_busy.py (the same busy_* rules
# for pieces), tests/engine/test_schedules_temporal.py (registration on a dev server).
FAULTS=tests/cloud/test_faults.py
TESTS="tests/rules tests/schedules/test_times.py tests/e2e/test_schedule_registration.py \
tests/handover/test_limits.py tests/handover/test_checkpoint_limits.py \
$FAULTS::test_a_change_stamped_past_the_tolerance_is_refused_then_a_correct_one_applies \
$FAULTS::test_a_refused_change_stays_in_the_outbox_until_it_can_be_sent \
tests/e2e/test_fire_race.py tests/engine/test_rules_busy_timing.py tests/engine/test_eligibility.py \
tests/engine/test_rules.py"
TESTS="${MUTATE_TESTS:-$TESTS}"
RUN_TESTS="$PY -m pytest -x -q -p no:cacheprovider $TESTS"

cp "$RULES" "$WORK/rules.py.orig"
cp "$GATE" "$WORK/gate.py.orig"
cp "$MOVES" "$WORK/moves.py.orig"
cp "$LIMITS" "$WORK/limits.py.orig"
restore() {
    cp "$WORK/rules.py.orig" "$RULES"; cp "$WORK/gate.py.orig" "$GATE"
    cp "$WORK/moves.py.orig" "$MOVES"; cp "$WORK/limits.py.orig" "$LIMITS"
}
trap restore EXIT
survivors=0

# cosmic_ray NAME MODULE TEST_COMMAND [EXCLUDED_OPERATORS]: one cosmic-ray session; adds
# its survivors. EXCLUDED_OPERATORS: a TOML list of operator names cr-filter-operators skips.
cosmic_ray() {
    local name=$1 module=$2 tests=$3 excluded=${4:-[]}
    cat > "$WORK/$name.toml" <<TOML
[cosmic-ray.filters.operators-filter]
exclude-operators = $excluded

[cosmic-ray]
module-path = "$module"
timeout = 900.0
excluded-modules = []
test-command = "$tests"

[cosmic-ray.distributor]
name = "local"
TOML
    echo "== baseline: the tests pass on the unmutated $module"
    $tests >"$WORK/$name-baseline.log" 2>&1 || { echo "baseline fails: $WORK/$name-baseline.log"; exit 2; }
    echo "== cosmic-ray over $module"
    rm -f "$WORK/$name.sqlite"
    "$BIN/cosmic-ray" init "$WORK/$name.toml" "$WORK/$name.sqlite"
    "$BIN/cr-filter-pragma" "$WORK/$name.sqlite"
    "$BIN/cr-filter-operators" "$WORK/$name.sqlite" "$WORK/$name.toml"
    "$BIN/cosmic-ray" exec "$WORK/$name.toml" "$WORK/$name.sqlite"
    "$BIN/cr-report" "$WORK/$name.sqlite" --show-pending >"$WORK/$name-report.txt"
    tail -4 "$WORK/$name-report.txt"
    local found
    found=$("$BIN/cr-report" "$WORK/$name.sqlite" --surviving-only | grep -c "^\[job-id\]" || true)
    survivors=$((survivors + found))
}

# drop_each SET TEST_COMMAND MEMBER...: hand-made mutants of the set literal assigned to SET
# in rules.py, each without one MEMBER (a string); adds its survivors.
drop_each() {
    local name=$1 tests=$2 member
    shift 2
    echo "== hand-made mutants: one member of $name dropped at a time"
    for member in "$@"; do
        restore
        sed -i "/^$name\b.* = /{s/\"$member\", //; s/, \"$member\"//}" "$RULES"
        if grep -q "^$name\b.* = .*\"$member\"" "$RULES"; then
            echo "could not drop $member from $name"; exit 2
        fi
        if $tests >"$WORK/$name-$member.log" 2>&1; then
            echo "SURVIVED: $name without $member"; survivors=$((survivors + 1))
        else
            echo "killed: $name without $member"
        fi
    done
    restore
}

if [ "$WHICH" = all ] || [ "$WHICH" = rules ]; then
    cosmic_ray rules "$RULES" "$RUN_TESTS"

    drop_each GATED_KINDS "$RUN_TESTS" send post delete pay
    drop_each UNDER_WAY "$RUN_TESTS" pending starting waiting running
fi

# ``is`` <-> ``==`` (and ``is not`` <-> ``!=``) between enum members are equivalent
# mutants: a member is equal only to itself. Their ordering mutants (``is`` -> ``<=``)
# are kept: the enums are plain ``Enum``, so those raise and die.
SAME_ENUM='["core/ReplaceComparisonOperator_Is_Eq", "core/ReplaceComparisonOperator_IsNot_NotEq", "core/ReplaceComparisonOperator_Eq_Is", "core/ReplaceComparisonOperator_NotEq_IsNot"]'
if [ "$WHICH" = all ] || [ "$WHICH" = gate ]; then
    cosmic_ray gate "$GATE" "$PY -m pytest -x -q -n 0 -p no:cacheprovider tests/rules/test_gate.py" \
        "$SAME_ENUM"
fi

if [ "$WHICH" = all ] || [ "$WHICH" = moves ]; then
    cosmic_ray moves "$MOVES" "$PY -m pytest -x -q -n 0 -p no:cacheprovider tests/rules/test_moves.py" \
        "$SAME_ENUM"
fi

if [ "$WHICH" = all ] || [ "$WHICH" = limits ]; then
    cosmic_ray limits "$LIMITS" "$PY -m pytest -x -q -n 0 -p no:cacheprovider tests/handover/test_limits.py"
fi

echo "== $survivors surviving mutants (details: $WORK/*report.txt)"
[ "$survivors" -eq 0 ]
