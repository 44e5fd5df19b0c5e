#!/bin/sh
# run.sh SRCDIR BENCH [FLAGS...] — what `make bench` runs: writes the
# N-trailer models (bench/ntrailer.sh, N = 1, 2, 4, ..., 64) and the
# chains of bodies (bench/ntrailer.sh N bodies, bench/nchain.sh) into a
# temporary folder and runs the suite BENCH on them (FLAGS before: `make
# bench BENCH_FLAGS=-q` for the quick runs), which prints the table.  A
# target that fails, or a part of the table that cannot finish, is a FAIL
# row, and then the exit status is not 0 (issue 24): the table still
# comes whole.
set -eu
srcdir=$1
bench=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in 1 2 4 8 16 32 64; do
    sh "$srcdir/bench/ntrailer.sh" "$n" > "$tmp/ntrailer-$n.nh"
    sh "$srcdir/bench/ntrailer.sh" "$n" bodies > "$tmp/nbodies-$n.nh"
    sh "$srcdir/bench/nchain.sh" "$n" > "$tmp/nchain-$n.nh"
done
status=0
"$bench" "$@" -s "$srcdir" "$tmp" || status=$?
[ $status = 0 ] || echo "bench: some targets FAILED (status $status)" >&2
exit $status
