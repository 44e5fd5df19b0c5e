#!/bin/sh
# stack_use.sh — LANGUAGE.md §9: no input crashes nh.  What a statement
# holds in proportion to its input (its items, the model's parameters,
# a call's arguments) lives on the heap, not in variable-length arrays on
# the stack, which a large input overflowed (issue 31 item 1: `print` of
# 150 000 items, `print a5` after 1 100 000 params, `table` of 1 100 000
# columns killed nh and a notebook session with it).
#
# Each statement family runs once with a stack of 256 KiB (every example
# runs in that much) and an input whose arrays would take about 1 MiB:
# 100 000 parameters, 40 000 print items or table columns, a let
# function of 30 000 arguments.  It must run and print the right thing.
set -u
: "${NH:?NH must name the nh binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0
stack=256
# AddressSanitizer's frames are larger, and its own start-up takes more.
if ldd "$NH" 2>/dev/null | grep -q libasan; then
    stack=1024
fi

# A list "PREFIX0SUFFIX, PREFIX1SUFFIX, …" of N items, 1000 to a line
# (lines end in a comma, so the statement goes on), without a newline at
# the end.
list() { # list N PREFIX SUFFIX
    awk -v n="$1" -v p="$2" -v s="$3" 'BEGIN {
        for (i = 0; i < n; i++)
            printf "%s%s%d%s", (i ? (i % 1000 ? ", " : ",\n") : ""), p, i, s
    }'
}

# 100 000 parameters p0 … p99999, all 1 but p7 = 7.
{
    k=0
    while [ $k -lt 100 ]; do
        awk -v k=$k 'BEGIN { s = "param"; for (j = 0; j < 1000; j++) {
            i = k * 1000 + j; s = s (j ? "," : "") " p" i " = " (i == 7 ? 7 : 1) }
            print s }'
        k=$((k + 1))
    done
} > params.nh
# A model over them: a particle on a line, in a spring of stiffness p7.
cat > model.nh <<'EOF'
load "params.nh"
coord x, y
kinetic T = (x'^2 + y'^2)/2
potential V = p7*x^2/2
initial x = 1
EOF

# run NAME WANT: runs script NAME.nh with the small stack; standard
# output and error together must contain the line WANT (a grep pattern).
run() {
    (ulimit -s $stack && exec "$NH" -q "$1.nh") > out 2>&1 < /dev/null
    st=$?
    if [ $st -gt 1 ] || ! grep -q -- "$2" out; then
        echo "FAIL: $1: status $st, output:"
        head -c 600 out
        echo
        echo "  (want a line matching: $2)"
        fail=1
    fi
}

# print: 40 000 items; a value among 100 000 parameters.
{ printf 'print '; list 40000 "" ""; echo; } > print_items.nh
run print_items '^39999 = 39999$'
printf 'load "params.nh"\nprint p7\n' > print_params.nh
run print_params '^p7 = 7$'
# param and set evaluate their values among all the variables.
printf 'load "params.nh"\nparam b = 2*p7\nset p8 = b + 1\nprint p8\n' > param_values.nh
run param_values '^p8 = 15$'
# accel
printf 'load "model.nh"\naccel\n' > accel.nh
run accel "^x'' = -7$"
# initial and reset
printf 'load "model.nh"\ninitial x = 2, y = 3\nreset\nprint x + y\n' > initial.nh
run initial '^x + y = 5$'
# set of a parameter a constraint uses: the state is checked again
printf 'load "model.nh"\nconstraint c: y = p9*x\ninitial x = 1\nset p9 = 3\n' > set_constraint.nh
run set_constraint 'warning: the state now violates c'
# compare, at the state and over random states
printf 'load "model.nh"\ncompare lagrange multipliers\ncompare lagrange second_kind samples 3\n' > compare.nh
run compare '^max |diff| = 0$'
# check and worksheet
printf 'load "model.nh"\ncheck\n' > check.nh
run check 'degrees of freedom'
printf 'load "model.nh"\nworksheet preliminary\n' > worksheet.nh
run worksheet 'g_'
# table and plot: 40 000 columns
{ printf 'load "model.nh"\nsimulate to 0.1 step 0.05\ntable '; list 40000 "x + " ""
  printf ' > "t.csv"\nprint 1\n'; } > table.nh
run table '^1 = 1$'
[ "$(wc -l < t.csv)" = 4 ] || { echo "FAIL: table: t.csv has $(wc -l < t.csv) lines, want 4"; fail=1; }
# a let function of 30 000 arguments
{ printf 'let f('; list 30000 a ""; printf ') = a29999 - a0\nprint f('
  list 30000 "" ""; printf ')\n'; } > let_call.nh
run let_call '^f(.*) = 29999$'

[ $fail = 0 ] && echo "stack use: every statement family ran in $stack KiB"
exit $fail
