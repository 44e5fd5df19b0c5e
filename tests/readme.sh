#!/bin/sh
# readme.sh — the README's walk-through is a transcript: run its `nh>`
# lines in one session and compare what nh prints with the lines shown
# after them, so a newcomer who follows it gets the same numbers.  (The
# numbers themselves are checked against closed forms by
# examples/rolling_sphere.nh; this test keeps the README true to nh.)
#
# The walk-through plots: where gnuplot is installed (./bootstrap installs
# it) it must draw sphere.png.  Without gnuplot — on this machine, or on
# any with nh run on an empty PATH, which is always tried — everything but
# the plot must still be as shown, and the plot must fail with the error
# that says how to install gnuplot, and write nothing.
set -u
: "${NH:?NH must name the nh binary}"
readme="${srcdir:-.}/README.md"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Commands and expected output, in the order they appear in nh> blocks.
awk -v cmds="$tmp/cmds" -v want="$tmp/want" '
    /^```/ { if (inblock) inblock = 0; else { inblock = 1; isnh = 0 } ; next }
    inblock && /^nh> / { isnh = 1; sub(/^nh> /, ""); print > cmds; next }
    inblock && isnh { print > want }
' "$readme"
[ -s "$tmp/cmds" ] || { echo "FAIL: no nh> lines in README.md"; exit 1; }
mkdir "$tmp/run" "$tmp/empty"

# walk PATH-FOR-NH: runs the walk-through in a fresh folder, with nh
# finding programs (gnuplot) on that PATH only.
walk() {
    rm -rf "$tmp/run" && mkdir "$tmp/run"
    (cd "$tmp/run" && HOME="$tmp/run" PATH="$1" "$NH" < ../cmds > ../got 2> ../err)
    status=$?
    if ! diff -u "$tmp/want" "$tmp/got"; then
        echo "FAIL: README.md's walk-through differs from what nh prints"
        exit 1
    fi
    [ -s "$tmp/run/sphere.csv" ] || {
        echo "FAIL: the walk-through did not write sphere.csv"; exit 1;
    }
}

# Without gnuplot.
walk "$tmp/empty"
grep ': error: ' "$tmp/err" > "$tmp/errors"
if [ $status != 1 ] || [ "$(wc -l < "$tmp/errors")" != 1 ] ||
   ! grep -q '^<repl>:[0-9]*:[0-9]*: error: plot needs gnuplot, which is not installed: install it (e.g. `apt-get install gnuplot-nox`)' "$tmp/errors" ||
   [ -e "$tmp/run/sphere.png" ]; then
    echo "FAIL: without gnuplot the walk-through must fail at plot only (status $status)"
    cat "$tmp/err"
    exit 1
fi
echo "README walk-through without gnuplot: output identical, plot says how to install it"

# With gnuplot, where it is installed.
if command -v gnuplot >/dev/null 2>&1; then
    walk "$PATH"
    if [ $status != 0 ] || [ -s "$tmp/err" ]; then
        echo "FAIL: the walk-through fails (status $status)"; cat "$tmp/err"; exit 1
    fi
    [ -s "$tmp/run/sphere.png" ] || {
        echo "FAIL: the walk-through did not write sphere.png"; exit 1;
    }
    echo "README walk-through: $(wc -l < "$tmp/cmds") statements, output identical"
else
    echo "README walk-through with gnuplot: not tried, gnuplot is not installed"
fi
