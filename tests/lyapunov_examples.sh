#!/bin/sh
# lyapunov_examples.sh — the sum rule of LANGUAGE.md §7.4 on every
# example: from the state `reset` gives, `lyapunov to 1` prints the
# exponents and, beside their sum, the time average of the divergence
# tr A, integrated on its own; by Liouville's formula they are the same
# number (the growth of the volume the tangent vectors span), so they
# must agree to the integration's accuracy (here 1e-8 of their size),
# without the warning nh prints when they do not.
set -u
: "${NH:?NH must name the nh binary}"
dir="${srcdir:-.}/examples"
status=0
count=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ex in "$dir"/*.nh; do
    name=$(basename "$ex")
    if ! (cd "$dir" && "$NH" -q "$name" -e reset -e "lyapunov to 1" \
            > "$tmp/out" 2> "$tmp/err"); then
        echo "FAIL: $name: lyapunov fails: $(grep ': error: ' "$tmp/err" | head -n 1)"
        status=1
        continue
    fi
    if grep -q 'warning: the sum of the exponents' "$tmp/err"; then
        echo "FAIL: $name: $(grep 'warning: the sum' "$tmp/err")"
        status=1
    fi
    line=$(grep '^sum = ' "$tmp/out" | tail -n 1)
    if ! echo "$line" | awk '{
            s = $3; sub(/,$/, "", s); s = s + 0; d = $7 + 0
            a = s < 0 ? -s : s; scale = a > 1 ? a : 1
            diff = s - d; if (diff < 0) diff = -diff
            exit !(NF == 7 && diff <= 1e-8 * scale) }'; then
        echo "FAIL: $name: the sum and the mean divergence differ: $line"
        status=1
    fi
    count=$((count + 1))
done
echo "lyapunov_examples: the sum rule on $count examples"
[ "$count" -gt 0 ] || status=1
exit $status
