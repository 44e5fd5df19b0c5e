#!/bin/sh
# bicycle_kane_body.sh — the benchmark bicycle's Kane form (maggi) against
# a second derivation: tests/bicycle_kane_body.py derives G and the right
# side by Kane's method on the bodies' own axes (Newton-Euler
# accelerations, the front contact's unit vectors), with SymPy, and checks
# nh's `show eom` rows entry by entry and its tapes (`accel`, the pitch,
# the dependent rates) at states of the example.  Needs Debian's
# python3-sympy, which ./bootstrap installs.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
NH=${NH:-$src/nh}
PY=/usr/bin/python3
if ! "$PY" -c 'import sympy, mpmath' 2>/dev/null; then
    echo "FAIL: this test needs python3-sympy (./bootstrap installs it)"
    exit 1
fi
exec "$PY" "$src/tests/bicycle_kane_body.py" "$NH"
