#!/bin/sh
# write_errors.sh — LANGUAGE.md §7: "a write error on standard output (a
# full disk) is an error too, never silent".  Standard output is /dev/full
# (every write fails with ENOSPC): each printing statement, in a script,
# with -e, from `nh -` and in the REPL's plain mode, must fail with the
# error at its place and exit 1, and so must nh's own output (--help).
set -u
: "${NH:?NH must name the nh binary}"
if ! [ -c /dev/full ]; then
    echo "SKIP: no /dev/full"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# expect STATUS PATTERN CMD...: runs CMD with standard output on /dev/full
expect() {
    want=$1 pattern=$2
    shift 2
    "$@" > /dev/full 2> "$tmp/err" < /dev/null
    status=$?
    if [ "$status" != "$want" ] || ! grep -q -- "$pattern" "$tmp/err"; then
        echo "FAIL: $* > /dev/full: status $status (want $want), stderr:"
        cat "$tmp/err"
        echo "  (want a line matching: $pattern)"
        fail=1
    fi
}

full='cannot write to standard output: No space left on device'
for stmt in 'print 1, 2' 'help' 'help plot' 'show latex t^2' 'show model'; do
    expect 1 "^<-e>:1:1: error: $full\$" "$NH" -q -e "$stmt"
done
cat > "$tmp/m.nh" <<'EOF'
coord x
kinetic T = x'^2/2
potential V = x^2/2
initial x = 1
accel
EOF
expect 1 "^$tmp/m.nh:5:1: error: $full\$" "$NH" -q "$tmp/m.nh"
printf 'coord x; kinetic T = x^2\ncheck\n' > "$tmp/c.nh"
expect 1 "^<stdin>:2:1: error: $full\$" sh -c "\"\$0\" -q - < '$tmp/c.nh'" "$NH"
# the REPL without a terminal goes on after the error, and exits 1
expect 1 "^<repl>:2:1: error: $full\$" sh -c "\"\$0\" -q < '$tmp/c.nh'" "$NH"
# what nh writes itself
expect 1 "^nh: error: $full\$" "$NH" --help
expect 1 "^nh: error: $full\$" "$NH" --version
# a statement that prints nothing does not fail
"$NH" -q -e 'coord x' > /dev/full 2> "$tmp/err" || {
    echo "FAIL: coord x > /dev/full"; cat "$tmp/err"; fail=1;
}
[ $fail = 0 ] && echo "write errors: all reported"
exit $fail
