#!/bin/sh
# ntrailer.sh N — writes the N-trailer model to standard output: a cart
# pulling N trailers on the plane, every axle a knife edge, written with
# particles (for bench/bench.c's scaling table; `make bench` runs it for
# N = 1, 2, 4, ..., 64).
#
# Coordinates x, y (the cart's axle) and th0 ... thN (the headings of the
# cart and of the trailers).  Axle i trails axle i-1 at the distance d:
#   A_i = A_{i-1} - d*[cos(th_i), sin(th_i)],   A_0 = [x, y],
# with a point mass m on every axle, and the cart's body a mass m at the
# distance a ahead of its axle.  Knife edges (N + 1 constraints): every
# axle moves along its heading, dot(A_i', [-sin(th_i), cos(th_i)]) = 0.
# Speeds for the first-kind equations: v, the cart's forward speed, and w,
# its turning rate; axle i then moves forward with
#   v_i = v_{i-1}*cos(th_{i-1} - th_i)  and  th_i' = v_{i-1}*sin(th_{i-1} - th_i)/d.
set -eu
n=${1:?usage: ntrailer.sh N}
echo "# The $n-trailer, written by bench/ntrailer.sh."
echo "param m = 1, d = 1, a = 0.5"
coords="x, y, th0"
i=1
while [ "$i" -le "$n" ]; do coords="$coords, th$i"; i=$((i + 1)); done
echo "coord $coords"
echo "speed v, w"
echo "let A0 = [x, y]"
echo "let v0 = v"
i=1
while [ "$i" -le "$n" ]; do
    j=$((i - 1))
    echo "let A$i = A$j - d*[cos(th$i), sin(th$i)]"
    echo "let v$i = v$j*cos(th$j - th$i)"
    i=$((i + 1))
done
echo "particle C mass m at [x + a*cos(th0), y + a*sin(th0)]"
i=0
while [ "$i" -le "$n" ]; do
    echo "particle P$i mass m at A$i"
    echo "constraint k$i: dot(P$i', [-sin(th$i), cos(th$i)]) = 0"
    i=$((i + 1))
done
echo "kinematic x' = v*cos(th0)"
echo "kinematic y' = v*sin(th0)"
echo "kinematic th0' = w"
i=1
while [ "$i" -le "$n" ]; do
    j=$((i - 1))
    echo "kinematic th$i' = v$j*sin(th$j - th$i)/d"
    i=$((i + 1))
done
# A state on the constraints: the speeds, and the velocities they give.
init="th0 = 0.1, v = 1, w = 0.2"
i=1
while [ "$i" -le "$n" ]; do init="$init, th$i = $(awk "BEGIN { print 0.1 - 0.05*$i }")"; i=$((i + 1)); done
echo "initial $init, x' = cos(0.1), y' = sin(0.1), th0' = 0.2"
