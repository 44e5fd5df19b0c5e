#!/bin/sh
# named_rows.sh — LANGUAGE.md §7.1 (v3): rows shown with named
# subexpressions (`where` rows k1 = …), read back into nh as `let`s and
# evaluated, equal the tapes' values to 1e-12, and the LaTeX names the
# same subexpressions as the text (tests/named_rows.py, Debian's python3).
set -e
src=$(cd "$(dirname "$0")/.." && pwd)
NH=${NH:-$src/nh}
exec /usr/bin/python3 "$src/tests/named_rows.py" "$NH"
