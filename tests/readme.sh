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
#
# doc/walkthrough.nh is the same transcript as a script, each statement
# followed by `# expect:` lines, so that `nh --check doc/walkthrough.nh`
# runs the walk-through and checks it (the README says so): it must be
# what the README gives (`tests/readme.sh --write` writes it), and pass
# `nh --check` where gnuplot is installed.
set -u
readme="${srcdir:-.}/README.md"
walkthrough="${srcdir:-.}/doc/walkthrough.nh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Commands and expected output, in the order they appear in nh> blocks;
# and the same as a script with `# expect:` lines.
awk -v cmds="$tmp/cmds" -v want="$tmp/want" -v script="$tmp/walkthrough.nh" '
    BEGIN {
        print "# The README'"'"'s walk-through of the rolling sphere, as a script: each" > script
        print "# statement is followed by what nh prints, so that" > script
        print "#   nh --check doc/walkthrough.nh" > script
        print "# runs it and checks it.  Written from README.md by" > script
        print "# `tests/readme.sh --write`; `make check` keeps the two the same.  It" > script
        print "# writes sphere.csv, sphere.png and sphere.c beside itself." > script
    }
    /^```/ { if (inblock) inblock = 0; else { inblock = 1; isnh = 0 } ; next }
    inblock && /^nh> / { isnh = 1; sub(/^nh> /, ""); print > cmds; print > script; next }
    inblock && isnh { print > want; print ($0 == "" ? "# expect:" : "# expect: " $0) > script }
' "$readme"
[ -s "$tmp/cmds" ] || { echo "FAIL: no nh> lines in README.md"; exit 1; }
if [ "${1:-}" = --write ]; then
    cp "$tmp/walkthrough.nh" "$walkthrough"
    exit $?
fi
: "${NH:?NH must name the nh binary}"
if ! cmp -s "$tmp/walkthrough.nh" "$walkthrough"; then
    echo "FAIL: doc/walkthrough.nh is not README.md's walk-through (tests/readme.sh --write rewrites it):"
    diff -u "$walkthrough" "$tmp/walkthrough.nh"
    exit 1
fi
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
    # nh --check on the script, in a folder of its own (it writes there)
    mkdir "$tmp/check" && cp "$walkthrough" "$tmp/check/"
    if ! "$NH" --check "$tmp/check/walkthrough.nh" > "$tmp/check.out" 2>&1; then
        echo "FAIL: nh --check doc/walkthrough.nh fails:"; cat "$tmp/check.out"; exit 1
    fi
    [ -s "$tmp/check/sphere.png" ] || {
        echo "FAIL: nh --check doc/walkthrough.nh did not write sphere.png"; exit 1;
    }
    echo "nh --check doc/walkthrough.nh: $(cat "$tmp/check.out")"
else
    echo "README walk-through with gnuplot: not tried, gnuplot is not installed"
fi
