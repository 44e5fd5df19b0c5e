#!/bin/sh
# every_example.sh — on every example: `accel`, `check` and `show eom` run
# cleanly, every worksheet runs or refuses with a clean error, and every pair of methods that applies to the model agrees:
# `compare A B samples 200` below 1e-9.  A method that does not apply (an
# error from `equations`-style preparation) is skipped for that example;
# at least one pair must apply everywhere.  naive is left out: it is wrong
# in general by design.
set -u
: "${NH:?NH must name the nh binary}"
dir="${srcdir:-.}/examples"
methods="multipliers second_kind voronec maggi gibbs_appell"
status=0
pairs_total=0
for ex in "$dir"/*.nh; do
    name=$(basename "$ex")
    for stmt in accel check "show eom"; do
        if ! (cd "$dir" && "$NH" -q "$name" -e "$stmt" > /dev/null 2> /tmp/every.$$); then
            echo "FAIL: $name: '$stmt' fails: $(head -n 1 /tmp/every.$$)"
            status=1
        fi
    done
    # every worksheet runs, or refuses with an error (never a crash)
    for w in preliminary first second second_reduced; do
        (cd "$dir" && "$NH" -q "$name" -e "worksheet $w" > /dev/null 2> /tmp/every.$$)
        rc=$?
        if [ $rc != 0 ] && { [ $rc -gt 1 ] || ! grep -q ': error: ' /tmp/every.$$; }; then
            echo "FAIL: $name: worksheet $w: exit $rc: $(head -n 1 /tmp/every.$$)"
            status=1
        fi
    done
    pairs=0
    for a in $methods; do
        for b in $methods; do
            [ "$a" \< "$b" ] || continue
            if ! out=$(cd "$dir" && "$NH" -q "$name" -e "compare $a $b samples 200" 2> /tmp/every.$$); then
                # a method that does not apply is skipped; failing to find
                # regular states is not a reason to skip
                if grep -q "random states" /tmp/every.$$; then
                    echo "FAIL: $name: compare $a $b: $(head -n 1 /tmp/every.$$)"
                    status=1
                fi
                continue
            fi
            d=$(printf '%s\n' "$out" | sed -n 's/^max |diff| = //p' | tail -n 1)
            pairs=$((pairs + 1))
            if ! awk -v d="$d" 'BEGIN { exit !(d != "" && d + 0 < 1e-9) }'; then
                echo "FAIL: $name: compare $a $b samples 200: max |diff| = $d"
                status=1
            fi
        done
    done
    [ $pairs -gt 0 ] || { echo "FAIL: $name: no pair of methods applies"; status=1; }
    echo "$name: $pairs pairs agree"
    pairs_total=$((pairs_total + pairs))
done
rm -f /tmp/every.$$
echo "every example: $pairs_total method pairs compared"
exit $status
