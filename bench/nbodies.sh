#!/bin/sh
# nbodies.sh N — writes the N-trailer of bench/ntrailer.sh with rigid
# bodies: a cart pulling N trailers, each vehicle a body with a frame of its
# own (turned from the inertial frame by its heading), its mass centre the
# distance a ahead of its axle, three different moments; every axle a knife
# edge on the body, dot(velocity(A_i, body_i), F_i.y) = 0.  For
# bench/bench.c's scaling table of frames and bodies (`make bench` runs it
# for N = 1, 2, 4, ..., 64).
#
# Coordinates x, y (the cart's axle A0) and th0 ... thN (the headings);
# axle i trails axle i-1 at the distance d.  Speeds for the first-kind
# equations: v, the cart's forward speed, and w, its turning rate, with
#   v_i = v_{i-1}*cos(th_{i-1} - th_i),  th_i' = v_{i-1}*sin(th_{i-1} - th_i)/d.
set -eu
n=${1:?usage: nbodies.sh N}
echo "# The $n-trailer of bodies, written by bench/nbodies.sh."
echo "param m = 1, d = 1, a = 0.3, I1 = 0.01, I2 = 0.02, I3 = 0.025"
coords="x, y, th0"
i=1
while [ "$i" -le "$n" ]; do coords="$coords, th$i"; i=$((i + 1)); done
echo "coord $coords"
echo "speed v, w"
echo "frame N"
echo "let A0 = [x, y, 0]"
echo "let v0 = v"
i=0
while [ "$i" -le "$n" ]; do
    echo "frame F$i from N about z by th$i"
    if [ "$i" -gt 0 ]; then
        j=$((i - 1))
        echo "let A$i = A$j - d*F$i.x"
        echo "let v$i = v$j*cos(th$j - th$i)"
    fi
    echo "body b$i mass m at A$i + a*F$i.x frame F$i inertia [I1, I2, I3]"
    echo "constraint k$i: dot(velocity(A$i, b$i), F$i.y) = 0"
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
init="th0 = 0.1, v = 1, w = 0.2"
i=1
while [ "$i" -le "$n" ]; do init="$init, th$i = $(awk "BEGIN { print 0.1 - 0.05*$i }")"; i=$((i + 1)); done
echo "initial $init"
