#!/bin/sh
# control_bicycle.sh — the benchmark bicycle's inputs and transfer
# functions (LANGUAGE.md §7.2.1, examples/bicycle_control.nh) against the
# paper: Meijaard et al. (2007) Appendix A in 40-digit arithmetic
# (tests/meijaard2007.py, written from the paper, nothing of nh).
#   * B's rows of the roll and steer rates equal M^-1 to 1e-14 (relative
#     to M^-1's largest entry);
#   * G(s) = e_i^T (sI - A)^-1 B e_j, for the steer torque to roll (and
#     the roll torque to steer), at 3 speeds and 5 values of s, equals
#     the paper's to 1e-12 relative to |G|;
#   * the Bode CSV's magnitude and phase at its ends equal 20 log10 |G|
#     and arg G of the script at s = i w.
set -u
: "${NH:?NH must name the nh binary}"
src="${srcdir:-.}"
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
"$py" -c 'import mpmath' 2>/dev/null || { echo "SKIP: no mpmath for $py"; exit 77; }

# The model of the example, without its checks.
sed -n '1,/^output /p' "$src/examples/bicycle_control.nh" > "$tmp/model.nh"
cp "$src/examples/bicycle_model.nh" "$tmp/"
{
    cat "$tmp/model.nh"
    echo 'param v = 5'
    echo "initial theta ~ 0, phi' = 0, delta' = 0, thR' = -v/rR"
    echo "linearize phi, delta, phi', delta'"
    for v in 2 5 7; do
        echo "set v = $v"
        echo "initial theta ~ 0, phi' = 0, delta' = 0, thR' = -v/rR"
        for s in "0 0.5" "0 2" "1 3" "-0.5 1" "0 10"; do
            set -- $s
            echo "transfer roll from Tdelta at s = $1 + $2*i"
            echo "transfer steer from Tphi at s = $1 + $2*i"
        done
    done
    echo 'set v = 5'
    echo "initial theta ~ 0, phi' = 0, delta' = 0, thR' = -v/rR"
    echo "bode roll from Tdelta from 0.1 to 100 > \"$tmp/bode.csv\""
} > "$tmp/run.nh"
(cd "$tmp" && "$NH" -q run.nh) > "$tmp/out" 2> "$tmp/err" ||
    fail "nh: $(head -n 3 "$tmp/err")"

# B: the 3rd and 4th rows after "inputs:".
b_nh=$(sed -n '/^inputs:/{n;n;n;p;n;p}' "$tmp/out" | tr -d '[],' | tr '\n' ' ')
b_ref=$("$py" "$src/tests/meijaard2007.py" B 5)
"$py" - "$b_nh" "$b_ref" <<'PYEOF' || fail "B is not [0; M^-1]: nh $b_nh, paper $b_ref"
import sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
scale = max(abs(x) for x in b)
sys.exit(0 if len(a) == 4 and max(abs(x - y) for x, y in zip(a, b)) <= 1e-14 * scale else 1)
PYEOF

# G: one line per transfer, in the order written.
grep '^G = ' "$tmp/out" > "$tmp/g_nh"
: > "$tmp/g_ref"
for v in 2 5 7; do
    for s in "0 0.5" "0 2" "1 3" "-0.5 1" "0 10"; do
        set -- $s
        "$py" "$src/tests/meijaard2007.py" G "$v" 1 2 "$1" "$2" >> "$tmp/g_ref"
        "$py" "$src/tests/meijaard2007.py" G "$v" 2 1 "$1" "$2" >> "$tmp/g_ref"
    done
done
"$py" - "$tmp/g_nh" "$tmp/g_ref" <<'PYEOF' || fail "G differs from the paper's"
import re, sys
nh = open(sys.argv[1]).read().splitlines()
ref = open(sys.argv[2]).read().splitlines()
if len(nh) != len(ref) or not nh:
    print("%d values from nh, %d from the paper" % (len(nh), len(ref)))
    sys.exit(1)
worst = 0
for a, b in zip(nh, ref):
    m = re.fullmatch(r"G = (\S+)(?: ([+-]) (\S+)\*i)?", a)
    g = complex(float(m.group(1)),
                0 if not m.group(2) else float(m.group(2) + m.group(3)))
    re_, im = (float(x) for x in b.split())
    r = complex(re_, im)
    worst = max(worst, abs(g - r) / abs(r))
print("largest relative difference of G: %.3g" % worst)
sys.exit(0 if worst <= 1e-12 else 1)
PYEOF

# The Bode CSV: w, magnitude (dB), phase (deg); its ends against G(i w).
if [ -s "$tmp/bode.csv" ]; then
    first=$(sed -n '2p' "$tmp/bode.csv")
    last=$(tail -n 1 "$tmp/bode.csv")
    for row in "$first" "$last"; do
        w=$(echo "$row" | cut -d, -f1)
        ref=$("$py" "$src/tests/meijaard2007.py" G 5 1 2 0 "$w")
        "$py" - "$row" "$ref" <<'PYEOF' || fail "Bode row $row differs from G(i w) = $ref"
import cmath, math, sys
w, mag, ph = (float(x) for x in sys.argv[1].split(","))
re_, im = (float(x) for x in sys.argv[2].split())
g = complex(re_, im)
dph = (ph - math.degrees(cmath.phase(g)) + 180) % 360 - 180
sys.exit(0 if abs(mag - 20 * math.log10(abs(g))) <= 1e-11 and abs(dph) <= 1e-9 else 1)
PYEOF
    done
    rows=$(($(wc -l < "$tmp/bode.csv") - 1))
    [ "$rows" -eq 301 ] || fail "the Bode CSV has $rows rows, not 301 (100 a decade)"
else
    fail "no Bode CSV written"
fi
exit $status
