#!/bin/sh
# check_option.sh — `nh --check FILE…` (issue 24, item 8; interp/cli/expect.h):
# a file whose statements print what its `# expect:` lines say passes
# (status 0, nothing on standard error); a changed expectation, a line
# nobody expects, an expected line that never comes, an unexpected error
# and an expectation the run never reaches each fail with status 1 and a
# message at FILE:LINE with the expected line after '-' and the printed one
# after '+'.  Also: the example the README points at passes, and the same
# example with one expectation changed to 42 fails (the issue's case).
set -u
: "${NH:?NH must name the nh binary}"
src=${srcdir:-.}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# run NAME ARGS...: nh ARGS, standard output and error in $tmp/NAME.out/.err
run() {
    name=$1; shift
    "$NH" "$@" > "$tmp/$name.out" 2> "$tmp/$name.err"
    echo $?
}

mkdir "$tmp/d"
cat > "$tmp/d/part.nh" <<'EOF'
print 2*k
EOF
cat > "$tmp/d/good.nh" <<'EOF'
# A worked example: each statement's output, then what it should be.
param k = 3
coord x
kinetic T = x'^2/2
potential V = k*x^2/2
initial x = 1
print x''
# expect: x'' = -3
print sqrt(2), x; print k
# expect: sqrt(2) = ~1.41421356237
# expect: x = 1
# expect: k = 3
load "part.nh"
# expect: 2*k = 6
print exp(1)
# expect: exp(1) = ~2.718@1e-3
print 1/0
# expect-error: good.nh:17:7: error: the value is not finite (inf: a division by zero or a function outside its domain) at t = 0; state: x = 1, x' = 0
EOF
st=$(run good -q --check "$tmp/d/good.nh")
[ "$st" = 0 ] || bad "a file as expected: status $st"
[ -s "$tmp/good.out" ] && bad "quiet: standard output not empty: $(cat "$tmp/good.out")"
[ -s "$tmp/good.err" ] && bad "a file as expected: $(cat "$tmp/good.err")"
st=$(run good_loud --check "$tmp/d/good.nh")
[ "$st" = 0 ] || bad "without -q: status $st"
grep -qx "$tmp/d/good.nh: as expected (6 lines of output)" "$tmp/good_loud.out" ||
    bad "without -q, the summary: $(cat "$tmp/good_loud.out")"

# expect_fail NAME SED-SCRIPT LINE...: good.nh changed by SED-SCRIPT must
# fail with status 1, each LINE on standard error.
expect_fail() {
    name=$1 script=$2; shift 2
    sed -e "$script" -e "s/^# expect-error: good.nh:/# expect-error: $name.nh:/" \
        "$tmp/d/good.nh" > "$tmp/d/$name.nh"
    st=$(run "$name" -q --check "$tmp/d/$name.nh")
    [ "$st" = 1 ] || bad "$name: status $st, expected 1"
    for line in "$@"; do
        grep -qxF -- "$line" "$tmp/$name.err" ||
            { bad "$name: no line '$line' in:"; cat "$tmp/$name.err"; }
    done
}
f="$tmp/d"
# a changed expectation: at its line, expected and printed
expect_fail changed 's/^# expect: x = 1$/# expect: x = 42/' \
    "$f/changed.nh:11: the output differs from this expectation:" \
    "-x = 42" "+x = 1" "$f/changed.nh: 1 mismatch"
# a number outside its tolerance
expect_fail tolerance 's/~2.718@1e-3/~2.718@1e-5/' \
    "$f/tolerance.nh:16: the output differs from this expectation:" \
    "-exp(1) = ~2.718@1e-5" "+exp(1) = 2.718281828459045"
# a line printed that nobody expects: at the statement that printed it
# (the error's line moves up with the line deleted)
expect_fail extra '/^# expect: x = 1$/d;s/good.nh:17:7/good.nh:16:7/' \
    "$f/extra.nh:9: the statement printed a line that no \`# expect:\` line expects:" \
    "+x = 1" "$f/extra.nh: 1 mismatch"
# an expected line that never comes
expect_fail missing 's/^# expect: 2\*k = 6$/&\n# expect: 3*k = 9/;s/good.nh:17:7/good.nh:18:7/' \
    "$f/missing.nh:15: expected this line, but it was not printed:" \
    "-3*k = 9" "$f/missing.nh: 1 mismatch"
# an error nobody expects, and what the run then never reached
expect_fail stopped 's/^print sqrt(2), x; print k$/print sqrt(-2), x; print k/;/^# expect-error:/d' \
    "$f/stopped.nh:10: expected this, but the run stopped at the error on line 9" \
    "+stopped.nh:9:7: error: the value is not finite (nan: a division by zero or a function outside its domain) at t = 0; state: x = 1, x' = 0"
grep -q "^$f/stopped.nh: an error that no \`# expect-error:\` line expects:\$" "$tmp/stopped.err" ||
    bad "stopped: the unexpected error is not reported as one"
# an expected error that differs
expect_fail wrong_error 's/(inf: a division/(nan: a division/' \
    "$f/wrong_error.nh:18: the error differs from this expectation:"

# Bad usage: status 2.
for args in "--check" "--check -" "--check -e x $f/good.nh" "--check -i $f/good.nh"; do
    # shellcheck disable=SC2086
    st=$(run usage $args)
    [ "$st" = 2 ] || bad "nh $args: status $st, expected 2"
done
st=$(run nofile -q --check "$tmp/no_such.nh")
[ "$st" = 1 ] || bad "a file that does not exist: status $st"
grep -q "cannot read '$tmp/no_such.nh'" "$tmp/nofile.err" || bad "no_such.nh: $(cat "$tmp/nofile.err")"

# The example the README points at passes, and fails with one of its
# expectations changed to 42 (it exited 0 before --check existed).
st=$(run sphere -q --check "$src/examples/rolling_sphere.nh")
[ "$st" = 0 ] || { bad "examples/rolling_sphere.nh: status $st"; cat "$tmp/sphere.err"; }
sed "s/^# expect: x'' = 0\$/# expect: x'' = 42/" "$src/examples/rolling_sphere.nh" > "$tmp/d/sphere42.nh"
cmp -s "$src/examples/rolling_sphere.nh" "$tmp/d/sphere42.nh" && bad "the sed did not change the example"
line=$(grep -n "^# expect: x'' = 42\$" "$tmp/d/sphere42.nh" | cut -d: -f1)
st=$(run sphere42 -q --check "$tmp/d/sphere42.nh")
[ "$st" = 1 ] || bad "the example with 42: status $st"
grep -qxF "$tmp/d/sphere42.nh:$line: the output differs from this expectation:" "$tmp/sphere42.err" ||
    { bad "the example with 42: no mismatch at line $line:"; cat "$tmp/sphere42.err"; }

[ $fail = 0 ] && echo "nh --check: passing file, 6 kinds of mismatch, usage, the README's example"
exit $fail
