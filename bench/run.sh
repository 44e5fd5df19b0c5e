#!/bin/sh
# run.sh SRCDIR BENCH — what `make bench` runs: writes the N-trailer
# models (bench/ntrailer.sh, N = 1, 2, 4, ..., 64) and the chains of
# bodies (bench/ntrailer.sh N bodies, bench/nchain.sh) into a temporary
# folder and runs the suite BENCH on them, which prints the table.  A
# target that fails is reported in the table (and in the last line), not
# by make's exit status: the table is the product.
set -eu
srcdir=$1
bench=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in 1 2 4 8 16 32 64; do
    sh "$srcdir/bench/ntrailer.sh" "$n" > "$tmp/ntrailer-$n.nh"
    sh "$srcdir/bench/ntrailer.sh" "$n" bodies > "$tmp/nbodies-$n.nh"
    sh "$srcdir/bench/nchain.sh" "$n" > "$tmp/nchain-$n.nh"
done
"$bench" -s "$srcdir" "$tmp" || true
