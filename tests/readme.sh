#!/bin/sh
# readme.sh — the README's walk-through is a transcript: run its `nh>`
# lines in one session and compare what nh prints with the lines shown
# after them, so a newcomer who follows it gets the same numbers.  (The
# numbers themselves are checked against closed forms by
# examples/rolling_sphere.nh; this test keeps the README true to nh.)
set -u
: "${NH:?NH must name the nh binary}"
readme="${srcdir:-.}/README.md"
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "SKIP: the walk-through plots, and gnuplot is not installed"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Commands and expected output, in the order they appear in nh> blocks.
awk -v cmds="$tmp/cmds" -v want="$tmp/want" '
    /^```/ { if (inblock) inblock = 0; else { inblock = 1; isnh = 0 } ; next }
    inblock && /^nh> / { isnh = 1; sub(/^nh> /, ""); print > cmds; next }
    inblock && isnh { print > want }
' "$readme"
[ -s "$tmp/cmds" ] || { echo "FAIL: no nh> lines in README.md"; exit 1; }
(cd "$tmp" && HOME="$tmp" "$NH" < cmds > got 2> err)
status=$?
if [ $status != 0 ] || [ -s "$tmp/err" ]; then
    echo "FAIL: the walk-through fails (status $status)"; cat "$tmp/err"; exit 1
fi
if ! diff -u "$tmp/want" "$tmp/got"; then
    echo "FAIL: README.md's walk-through differs from what nh prints"
    exit 1
fi
for f in sphere.csv sphere.png; do
    [ -s "$tmp/$f" ] || { echo "FAIL: the walk-through did not write $f"; exit 1; }
done
echo "README walk-through: $(wc -l < "$tmp/cmds") statements, output identical"
