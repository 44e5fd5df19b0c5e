#!/bin/sh
# nchain.sh N — writes a chain of N rigid bodies to standard output, for
# bench/bench.c's scaling table of frames and bodies (`make bench` runs it
# for N = 1, 2, 4, ..., 64): a Chaplygin sleigh on the plane (body 1, a
# knife edge at its back end P0) with N - 1 links hanging from its front
# end, one after the other, each turned from the one before about that
# link's x axis (odd links) or y axis (even links) — a spatial chain
# whose frames nest N deep.  Every link is a body of mass m and length l,
# its centre l/2 along its x axis from the joint, with three different
# moments; gravity pulls them down.
#
# Coordinates x, y (P0), q1 (the sleigh's heading), q2 ... qN (the
# hinges).  Speeds for the first-kind equations: v (along the blade) and
# u1 ... uN (the rates), with x' = v cos(q1), y' = v sin(q1).
set -eu
n=${1:?usage: nchain.sh N}
echo "# A sleigh and $n - 1 hanging links, written by bench/nchain.sh."
echo "param m = 1, l = 0.5, g = 9.81, I1 = 0.01, I2 = 0.02, I3 = 0.025"
coords="x, y"
speeds="v"
i=1
while [ "$i" -le "$n" ]; do coords="$coords, q$i"; speeds="$speeds, u$i"; i=$((i + 1)); done
echo "coord $coords"
echo "speed $speeds"
echo "frame N"
echo "frame F1 from N about z by q1"
i=2
while [ "$i" -le "$n" ]; do
    axis=x
    [ $((i % 2)) -eq 0 ] && axis=y
    echo "frame F$i from F$((i - 1)) about $axis by q$i"
    i=$((i + 1))
done
echo "let P0 = [x, y, 0]"
echo "let P1 = P0 + l*F1.x"
echo "body b1 mass m at P0 + l/2*F1.x frame F1 inertia [I1, I2, I3]"
i=2
while [ "$i" -le "$n" ]; do
    j=$((i - 1))
    echo "let P$i = P$j + l*F$i.x"
    echo "body b$i mass m at P$j + l/2*F$i.x frame F$i inertia [I1, I2, I3]"
    i=$((i + 1))
done
echo "gravity [0, 0, -g]"
echo "constraint knife: dot(velocity(P0, b1), F1.y) = 0"
echo "kinematic x' = v*cos(q1)"
echo "kinematic y' = v*sin(q1)"
i=1
while [ "$i" -le "$n" ]; do echo "kinematic q$i' = u$i"; i=$((i + 1)); done
# A state on the constraint: moving along the blade, the links turning.
init="v = 1"
i=1
while [ "$i" -le "$n" ]; do init="$init, q$i = 0.$((i % 9 + 1)), u$i = 0.1"; i=$((i + 1)); done
echo "initial $init"
