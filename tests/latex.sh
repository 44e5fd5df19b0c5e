#!/bin/sh
# latex.sh — LANGUAGE.md §7.1: what `show latex` prints compiles in an
# amsmath document as it is, breaks across pages and stays inside the
# margins.  For every example: `show latex eom` and `show latex accel`
# under every method that applies and every worksheet that applies
# (`worksheet latex …`); `show latex model` and `show latex mass`
# compile (their width is not checked).  Each
# fragment goes into a document of its own,
#   \documentclass[a4paper,10pt]{article} \usepackage{amsmath} …,
# compiled by pdflatex in batch mode; it fails on a TeX error, on an
# `Overfull \hbox` more than 10 pt too wide or any `Overfull \vbox` (a
# display that could not break across pages), and, for the worksheets, on
# a value like 2.7e-22 where the value is exactly 0 (printed
# 2.7 \cdot 10^{-22}).  The benchmark bicycle's Kane form (`equations
# maggi`, `show latex eom`, `show latex accel` and `show latex kane`) is
# counted in pages with pdfinfo (poppler-utils): at most BIKE_PAGES, and
# its multipliers' `show latex eom` one more.  LANGUAGE.md asks for two;
# nh sets them in four (the multipliers' in five) today
# (doc/display.md says what is left), and this keeps them from growing.
# (pdflatex is Debian's texlive-latex-base, pdfinfo poppler-utils;
# ./bootstrap installs both.)
set -u
: "${NH:?NH must name the nh binary}"
BIKE_PAGES=${BIKE_PAGES:-4}
for tool in pdflatex pdfinfo; do
    if ! command -v $tool > /dev/null 2>&1; then
        echo "FAIL: $tool is missing: ./bootstrap installs texlive-latex-base and poppler-utils"
        exit 1
    fi
done
dir="${srcdir:-.}/examples"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
methods="lagrange multipliers second_kind voronec naive maggi gibbs_appell"
sheets="preliminary first second second_reduced"
status=0
count=0

# compile NAME [loose]: $tmp/NAME.tex; fails on a TeX error or (unless
# loose) a box too wide
compile() {
    if ! (cd "$tmp" && pdflatex -interaction=nonstopmode -halt-on-error \
            "$1.tex" > "$1.out" 2>&1); then
        echo "FAIL: $1: the LaTeX does not compile:"
        grep -A 12 '^!' "$tmp/$1.log" | head -n 30
        status=1
        return 1
    fi
    if grep -q '^!' "$tmp/$1.log"; then
        echo "FAIL: $1: TeX reported an error:"
        grep -A 12 '^!' "$tmp/$1.log" | head -n 30
        status=1
    fi
    [ "${2:-}" = loose ] && return 0
    # Overfull \hbox (12.3pt too wide) …: more than 10 pt
    wide=$(sed -n 's/^Overfull \\hbox (\([0-9.]*\)pt too wide).*/\1/p' \
        "$tmp/$1.log" | awk '$1 > 10' | head -n 1)
    if [ -n "$wide" ]; then
        echo "FAIL: $1: a line runs $wide pt into the right margin"
        grep -A 3 '^Overfull \\hbox' "$tmp/$1.log" | head -n 8
        status=1
    fi
    if grep -q '^Overfull \\vbox' "$tmp/$1.log"; then
        echo "FAIL: $1: a display does not break across pages"
        grep '^Overfull \\vbox' "$tmp/$1.log" | head -n 3
        status=1
    fi
    return 0
}

begin_doc() { # begin_doc FILE
    printf '%s\n' '\documentclass[a4paper,10pt]{article}' \
        '\usepackage{amsmath}' '\begin{document}' > "$1"
}

for ex in "$dir"/*.nh; do
    name=$(basename "$ex" .nh)
    # what the example prints by itself, to be left out
    (cd "$dir" && "$NH" -q "$name.nh" > "$tmp/base" 2> /dev/null)
    skip=$(wc -l < "$tmp/base")
    add() { # add DOC STATEMENT...: their LaTeX into DOC, if they run
        doc=$1
        shift
        args=""
        for st in "$@"; do
            args="$args -e \"$st\""
        done
        if eval "(cd \"\$dir\" && \"\$NH\" -q \"\$name.nh\" $args)" \
            > "$tmp/out" 2> /dev/null; then
            printf '%% %s\n' "$*" >> "$doc"
            tail -n +$((skip + 1)) "$tmp/out" | grep -v '^equations' >> "$doc"
            count=$((count + 1))
            return 0
        fi
        return 1
    }
    # show latex model and mass: they compile (their lines are not yet
    # laid out to the page)
    doc="$tmp/$name-model.tex"
    begin_doc "$doc"
    add "$doc" "show latex model" "show latex mass"
    printf '%s\n' '\end{document}' >> "$doc"
    compile "$name-model" loose
    doc="$tmp/$name.tex"
    begin_doc "$doc"
    for m in $methods; do
        add "$doc" "equations $m" "show latex eom" "show latex accel"
    done
    printf '%s\n' '\end{document}' >> "$doc"
    compile "$name"
    # the worksheets, one document each
    for w in $sheets; do
        wdoc="$tmp/$name-$w.tex"
        begin_doc "$wdoc"
        if add "$wdoc" "worksheet latex $w"; then
            printf '%s\n' '\end{document}' >> "$wdoc"
            compile "$name-$w"
            if grep -q '10^{-\(1[2-9]\|[2-9][0-9]\)}' "$wdoc"; then
                echo "FAIL: $name-$w: a value that is rounding (below 1e-12) in the sheet:"
                grep -o '[-0-9.]* \\cdot 10^{-[0-9]*}' "$wdoc" | head -n 3
                status=1
            fi
        fi
    done
done

# The benchmark bicycle's nonlinear equations in Kane's form, with named
# subexpressions: each of show latex eom and show latex accel in at most
# BIKE_PAGES pages.
bike="$dir/bicycle_model.nh"
# METHOD STATEMENT PAGES: Kane's form's eom, accel and kane in BIKE_PAGES,
# the multipliers' eom (eight rows and the multipliers) in one more
for case in "maggi eom $BIKE_PAGES" "maggi accel $BIKE_PAGES" \
    "maggi kane $BIKE_PAGES" "multipliers eom $((BIKE_PAGES + 1))"; do
    set -- $case
    meth=$1 what=$2 most=$3
    doc="$tmp/bike-$meth-$what.tex"
    begin_doc "$doc"
    (cd "$dir" && "$NH" -q bicycle_model.nh -e "equations $meth" \
        -e "show latex $what") >> "$doc" 2> "$tmp/err" || {
        echo "FAIL: bicycle, $meth, show latex $what:"
        cat "$tmp/err"
        status=1
    }
    printf '%s\n' '\end{document}' >> "$doc"
    if compile "bike-$meth-$what"; then
        pages=$(pdfinfo "$tmp/bike-$meth-$what.pdf" | sed -n 's/^Pages: *//p')
        echo "bicycle, $meth, show latex $what: $pages pages"
        if [ "${pages:-99}" -gt "$most" ]; then
            echo "FAIL: the bicycle's $meth show latex $what takes $pages pages (at most $most)"
            status=1
        fi
    fi
done
[ -f "$bike" ] || { echo "FAIL: $bike is missing"; status=1; }

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
begin_doc "$tmp/wide.tex"
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
if [ "$count" -lt 60 ]; then
    echo "FAIL: only $count fragments were made"
    status=1
fi
echo "$count fragments compiled"
exit $status
