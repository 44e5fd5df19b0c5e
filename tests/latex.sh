#!/bin/sh
# latex.sh — LANGUAGE.md §7.1: what `show latex` prints compiles in an
# amsmath document as it is.  For every example: `show latex eom` and
# `show latex accel` under every method that applies, `show latex model`
# and `show latex mass`; and one worksheet (`worksheet latex second` of
# the rolling sphere).  Each fragment goes into a minimal document,
#   \documentclass{article} \usepackage{amsmath} \begin{document} ... ,
# one document per example, compiled by pdflatex in batch mode; any TeX
# error fails the test and prints the fragment's lines around it.
# (pdflatex is Debian's texlive-latex-base; ./bootstrap installs it.)
set -u
: "${NH:?NH must name the nh binary}"
if ! command -v pdflatex > /dev/null 2>&1; then
    echo "FAIL: pdflatex is missing: ./bootstrap installs texlive-latex-base"
    exit 1
fi
dir="${srcdir:-.}/examples"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
methods="lagrange multipliers second_kind voronec naive maggi gibbs_appell"
status=0
count=0

for ex in "$dir"/*.nh; do
    name=$(basename "$ex" .nh)
    doc="$tmp/$name.tex"
    printf '%s\n' '\documentclass{article}' '\usepackage{amsmath}' \
        '\begin{document}' > "$doc"
    # what the example prints by itself, to be left out
    (cd "$dir" && "$NH" -q "$name.nh" > "$tmp/base" 2> /dev/null)
    skip=$(wc -l < "$tmp/base")
    add() { # add STATEMENT...: their LaTeX into the document, if they run
        args=""
        for st in "$@"; do
            args="$args -e \"$st\""
        done
        if eval "(cd \"\$dir\" && \"\$NH\" -q \"\$name.nh\" $args)" \
            > "$tmp/out" 2> /dev/null; then
            printf '%% %s\n' "$*" >> "$doc"
            tail -n +$((skip + 1)) "$tmp/out" | grep -v '^equations' >> "$doc"
            count=$((count + 1))
        fi
    }
    add "show latex model" "show latex mass"
    for m in $methods; do
        add "equations $m" "show latex eom" "show latex accel"
    done
    if [ "$name" = rolling_sphere ]; then
        add "equations multipliers" "worksheet latex second"
    fi
    printf '%s\n' '\end{document}' >> "$doc"
    if ! (cd "$tmp" && pdflatex -interaction=nonstopmode -halt-on-error \
            "$name.tex" > "$name.out" 2>&1); then
        echo "FAIL: $name: the LaTeX does not compile:"
        grep -A 12 '^!' "$tmp/$name.log" | head -n 30
        status=1
    elif grep -q '^!' "$tmp/$name.log"; then
        echo "FAIL: $name: TeX reported an error:"
        grep -A 12 '^!' "$tmp/$name.log" | head -n 30
        status=1
    fi
done
if [ "$count" -lt 20 ]; then
    echo "FAIL: only $count fragments were made"
    status=1
fi
exit $status
