#!/bin/sh
# valgrind_examples.sh — every example under `valgrind --leak-check=full`:
# no invalid read or write, no use of an uninitialised value, no leak.
# Run by .ci/run (slow: about a minute in all), and by hand:
#   NH=./nh sh tests/valgrind_examples.sh
set -u
: "${NH:?NH must name the nh binary}"
case $NH in /*) ;; *) NH=$(pwd)/$NH ;; esac
dir="${srcdir:-.}/examples"
NH_PATH="${NH_PATH:-$(cd "${srcdir:-.}" && pwd)/stdlib}"
export NH_PATH
status=0
n=0
for ex in "$dir"/*.nh; do
    n=$((n + 1))
    log=$(mktemp)
    if ! (cd "$dir" && valgrind --leak-check=full --errors-for-leak-kinds=definite,indirect \
            --error-exitcode=9 -q "$NH" -q "$(basename "$ex")" > /dev/null 2> "$log"); then
        echo "FAIL: $(basename "$ex")"
        grep '==' "$log" | head -20
        status=1
    fi
    rm -f "$log"
done
echo "valgrind: $n examples checked"
exit $status
