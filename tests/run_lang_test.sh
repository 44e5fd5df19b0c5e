#!/bin/sh
# run_lang_test.sh — runs one .nh script and checks its output against the
# expectations written in it (the test is the script):
#   # expect: TEXT        the next line of standard output is exactly TEXT;
#                         "NAME = ~VALUE" matches a number within 1e-9
#                         (relative to max(1, |VALUE|)), "~VALUE@TOL" within TOL
#   # expect-error: TEXT  the next "…: error: …" line on standard error is TEXT
#                         (TEXT ending in "..." matches a line that begins so)
#   # expect-warning: TEXT  the same for "…: warning: …" lines; a script
#                         with such lines must print exactly those warnings
#                         (one without them is not checked for warnings)
#   # exit: N             the exit status (default 0; 1 when an error is expected)
#   # args: ARGS          options placed before the file name (default -q)
#   # without: gnuplot    nh runs with an empty PATH, as on a machine without
#                         gnuplot (the one program nh starts), whether or not
#                         this one has it: a plot test says which path it tests
# The script runs from its own directory, as `nh ARGS NAME.nh`, so error
# locations read NAME.nh:LINE:COL.  Scripts without expectations must just
# run cleanly (exit 0, nothing on standard error).
set -u
test_file=$1
: "${NH:?NH must name the nh binary}"
dir=$(dirname "$test_file")
base=$(basename "$test_file")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sed -n 's/^[[:space:]]*# expect: \{0,1\}//p' "$test_file" > "$tmp/want_out"
sed -n 's/^[[:space:]]*# expect-error: //p' "$test_file" > "$tmp/want_err"
sed -n 's/^[[:space:]]*# expect-warning: //p' "$test_file" > "$tmp/want_warn"
want_exit=$(sed -n 's/^[[:space:]]*# exit: //p' "$test_file" | head -n 1)
args=$(sed -n 's/^[[:space:]]*# args: //p' "$test_file" | head -n 1)
run_path=$PATH
timeout=$(command -v timeout)
if grep -q '^[[:space:]]*# without: gnuplot[[:space:]]*$' "$test_file"; then
    mkdir "$tmp/empty"
    run_path=$tmp/empty
fi
[ -n "$args" ] || args=-q
if [ -z "$want_exit" ]; then
    if [ -s "$tmp/want_err" ]; then want_exit=1; else want_exit=0; fi
fi

(cd "$dir" && PATH=$run_path "$timeout" 120 "$NH" $args "$base" < /dev/null > "$tmp/out" 2> "$tmp/err")
status=$?
fail=0
if [ "$status" != "$want_exit" ]; then
    echo "FAIL: exit status $status, expected $want_exit"
    fail=1
fi

# Standard output, line by line, with ~ for approximate numbers.
if ! awk -v wantf="$tmp/want_out" '
    function abs(x) { return x < 0 ? -x : x }
    function matches(got, want,    p, pre, spec, tol, v, g, scale) {
        p = index(want, "~")
        if (p == 0) return got == want
        pre = substr(want, 1, p - 1)
        if (substr(got, 1, length(pre)) != pre) return 0
        spec = substr(want, p + 1)
        tol = 1e-9
        if (index(spec, "@")) { tol = substr(spec, index(spec, "@") + 1) + 0; spec = substr(spec, 1, index(spec, "@") - 1) }
        v = spec + 0; g = substr(got, length(pre) + 1)
        if (g !~ /^-?[0-9.]+([eE][-+]?[0-9]+)?$/) return 0
        g = g + 0
        scale = abs(v) > 1 ? abs(v) : 1
        return abs(g - v) <= tol * scale
    }
    BEGIN { n = 0; while ((getline line < wantf) > 0) want[++n] = line }
    { got[++m] = $0 }
    END {
        bad = 0
        for (i = 1; i <= (m > n ? m : n); i++) {
            if (i > n) { printf "FAIL: unexpected output line %d: %s\n", i, got[i]; bad = 1; break }
            if (i > m) { printf "FAIL: missing output line %d: %s\n", i, want[i]; bad = 1; break }
            if (!matches(got[i], want[i])) { printf "FAIL: output line %d\n  got:  %s\n  want: %s\n", i, got[i], want[i]; bad = 1 }
        }
        exit bad
    }' "$tmp/out"; then
    fail=1
fi

grep ': error: ' "$tmp/err" > "$tmp/got_err" || true
grep ': warning: ' "$tmp/err" > "$tmp/got_warn" || true
# An expected line ending in "..." matches any line it begins.
same_lines() {
    awk -v wantf="$1" '
    BEGIN { n = 0; while ((getline line < wantf) > 0) want[++n] = line }
    { got[++m] = $0 }
    END {
        if (m != n) exit 1
        for (i = 1; i <= n; i++) {
            w = want[i]
            if (substr(w, length(w) - 2) == "...") {
                if (substr(got[i], 1, length(w) - 3) != substr(w, 1, length(w) - 3)) exit 1
            } else if (got[i] != w) exit 1
        }
    }' "$2"
}
if ! same_lines "$tmp/want_err" "$tmp/got_err"; then
    echo "FAIL: errors differ"
    echo "--- got:"; cat "$tmp/got_err"
    echo "--- want:"; cat "$tmp/want_err"
    fail=1
fi
if [ -s "$tmp/want_warn" ] && ! same_lines "$tmp/want_warn" "$tmp/got_warn"; then
    echo "FAIL: warnings differ"
    echo "--- got:"; cat "$tmp/got_warn"
    echo "--- want:"; cat "$tmp/want_warn"
    fail=1
fi
if [ ! -s "$tmp/want_err" ] && [ "$want_exit" = 0 ] && grep -q 'runtime error\|Sanitizer' "$tmp/err"; then
    echo "FAIL: sanitizer report"; cat "$tmp/err"; fail=1
fi
if [ $fail != 0 ]; then
    echo "--- stdout:"; cat "$tmp/out"
    echo "--- stderr:"; cat "$tmp/err"
fi
exit $fail
