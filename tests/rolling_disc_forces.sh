#!/bin/sh
# rolling_disc_forces.sh — LANGUAGE.md §4 (v3): the reactions of a rolling
# contact, the dropped vertical component's included, against an
# independent derivation: tests/rolling_disc_forces.py derives the contact
# force of a rolling disc with SymPy (Kane's method with auxiliary speeds)
# and prints an nh script that checks lambda(roll[1..3]) against it at four
# states, by multipliers and second_kind; run_lang_test.sh runs that script.
# Needs Debian's python3-sympy, which ./bootstrap installs.
set -u
: "${NH:?NH must name the nh binary}"
src=$(cd "$(dirname "$0")/.." && pwd)
PY=/usr/bin/python3
if ! "$PY" -c 'import sympy' 2>/dev/null; then
    echo "FAIL: this test needs python3-sympy (./bootstrap installs it)"
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$PY" "$src/tests/rolling_disc_forces.py" > "$tmp/rolling_disc_forces.nh"; then
    echo "FAIL: tests/rolling_disc_forces.py did not run"
    exit 1
fi
n=$(grep -c '^# expect:' "$tmp/rolling_disc_forces.nh")
if [ "$n" -ne 24 ]; then
    echo "FAIL: the script has $n checks, not 24"
    exit 1
fi
sh "$src/tests/run_lang_test.sh" "$tmp/rolling_disc_forces.nh"
