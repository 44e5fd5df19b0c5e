#!/bin/sh
# run_regressions.sh — runs `$NH -q` on every fuzz/regressions/*.nh (the
# inputs the fuzzer found, fuzz/README.md) with a limit of 10 s each.
# A clean error (exit status 1) or success (0) passes; a crash (a signal),
# a sanitizer report, a timeout or any other status fails.  LANGUAGE.md §9:
# no input crashes the interpreter, leaks or hangs it.
# A file with a line "# stack: N" runs with a stack of N KiB (`ulimit -s`),
# so that a stack overflow that takes megabytes of input at the default
# 8 MiB shows with a few kilobytes (under AddressSanitizer, whose frames
# are larger, with four times N).
#
#   NH=./nh tests/run_regressions.sh        (srcdir: the source tree, default .)
set -u
: "${NH:?NH must name the nh binary}"
dir=${srcdir:-.}/fuzz/regressions
limit=${NH_REGRESSION_TIMEOUT:-10}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A sanitizer report must not pass for nh's own error exit (1): make
# AddressSanitizer exit with a status of its own (later options win).
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}exitcode=86"
export ASAN_OPTIONS
stack_factor=1
if ldd "$NH" 2>/dev/null | grep -q libasan; then
    stack_factor=4
fi

passed=0
failed=0
for f in "$dir"/*.nh; do
    [ -e "$f" ] || continue
    case $f in /*) abs=$f ;; *) abs=$(pwd)/$f ;; esac
    name=$(basename "$f")
    stack=$(sed -n 's/^# stack: \([0-9][0-9]*\)$/\1/p' "$f" | head -n 1)
    [ -n "$stack" ] && stack=$((stack * stack_factor))
    # From a scratch folder: a `table > "x"` in a reproducer writes there.
    (cd "$tmp" && { [ -z "$stack" ] || ulimit -s "$stack"; } &&
        exec timeout -k 5 "$limit" "$NH" -q "$abs" \
        < /dev/null > "$tmp/out" 2> "$tmp/err")
    status=$?
    why=
    case $status in
    0 | 1) ;;
    124 | 137) why="timed out after $limit s" ;;
    *) if [ $status -gt 128 ]; then
           why="killed by signal $((status - 128))"
       else
           why="exit status $status"
       fi ;;
    esac
    if [ -z "$why" ] &&
       grep -q -e 'Sanitizer' -e 'runtime error:' "$tmp/err"; then
        why="sanitizer report"
    fi
    if [ -n "$why" ]; then
        echo "FAIL: $name: $why"
        sed -n '1,20p' "$tmp/err"
        failed=$((failed + 1))
    else
        echo "PASS: $name (exit $status)"
        passed=$((passed + 1))
    fi
done
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
