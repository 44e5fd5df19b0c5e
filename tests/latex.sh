#!/bin/sh
# latex.sh — LANGUAGE.md §7.1: what `show latex` prints compiles in an
# amsmath document as it is.  For every example: `show latex eom` and
# `show latex accel` under every method that applies, `show latex model`
# and `show latex mass`; one worksheet (`worksheet latex second` of the
# rolling sphere); and a mass matrix too wide for one line.  Each fragment
# goes into a minimal document,
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
# A mass matrix with a row wider than TeX can set on one line (two
# entries of some 1660 characters each): its entries one per line.
cat > "$tmp/wide.nh" <<'EOF_NH'
coord x, y
let c1 = x
let c2 = sin(c1) + cos(c1)
let c3 = sin(c2) + cos(c2)
let c4 = sin(c3) + cos(c3)
let c5 = sin(c4) + cos(c4)
let c6 = sin(c5) + cos(c5)
let c7 = sin(c6) + cos(c6)
kinetic T = (2 + c7)*x'^2/2 + c7*x'*y' + (2 + c7)*y'^2/2
EOF_NH
printf '%s\n' '\documentclass{article}' '\usepackage{amsmath}' \
    '\begin{document}' > "$tmp/wide.tex"
"$NH" -q "$tmp/wide.nh" -e "show latex mass" >> "$tmp/wide.tex"
printf '%s\n' '\end{document}' >> "$tmp/wide.tex"
for entry in 'M_{11} &= ' 'M_{12} &= ' 'M_{22} &= '; do
    if ! grep -qF "$entry" "$tmp/wide.tex"; then
        echo "FAIL: the wide mass matrix has no line $entry"
        status=1
    fi
done
if grep -qF 'M_{21}' "$tmp/wide.tex"; then
    echo "FAIL: the wide mass matrix shows M_21 (M is symmetric)"
    status=1
fi
if ! (cd "$tmp" && pdflatex -interaction=nonstopmode -halt-on-error \
        wide.tex > wide.out 2>&1); then
    echo "FAIL: the wide mass matrix does not compile:"
    grep -A 12 '^!' "$tmp/wide.log" | head -n 30
    status=1
fi
if [ "$count" -lt 20 ]; then
    echo "FAIL: only $count fragments were made"
    status=1
fi
exit $status
