#!/bin/sh
# ntrailer.sh N [bodies] — writes the N-trailer model to standard output: a
# cart pulling N trailers on the plane, every axle a knife edge (for
# bench/bench.c's scaling tables; `make bench` runs it for N = 1, 2, 4,
# ..., 64).
#
# Coordinates x, y (the cart's axle) and th0 ... thN (the headings of the
# cart and of the trailers).  Axle i trails axle i-1 at the distance d:
#   A_i = A_{i-1} - d*[cos(th_i), sin(th_i)],   A_0 = [x, y],
# Speeds for the first-kind equations: v, the cart's forward speed, and w,
# its turning rate; axle i then moves forward with
#   v_i = v_{i-1}*cos(th_{i-1} - th_i)  and  th_i' = v_{i-1}*sin(th_{i-1} - th_i)/d.
#
# Written with particles: a point mass m on every axle and the cart's body
# a mass m at the distance a ahead of its axle; the knife edges
# dot(A_i', [-sin(th_i), cos(th_i)]) = 0.
# With `bodies`: every vehicle a body with a frame of its own (turned from
# the inertial frame by its heading), its centre of mass a ahead of its
# axle, three different moments; the knife edges
# dot(velocity(A_i, body_i), F_i.y) = 0.
set -eu
n=${1:?usage: ntrailer.sh N [bodies]}
style=${2:-particles}
coords="x, y, th0"
i=1
while [ "$i" -le "$n" ]; do coords="$coords, th$i"; i=$((i + 1)); done
if [ "$style" = bodies ]; then
    echo "# The $n-trailer of bodies, written by bench/ntrailer.sh."
    echo "param m = 1, d = 1, a = 0.3, I1 = 0.01, I2 = 0.02, I3 = 0.025"
    echo "coord $coords"
    echo "speed v, w"
    echo "frame N"
    echo "let A0 = [x, y, 0]"
else
    echo "# The $n-trailer, written by bench/ntrailer.sh."
    echo "param m = 1, d = 1, a = 0.5"
    echo "coord $coords"
    echo "speed v, w"
    echo "let A0 = [x, y]"
fi
echo "let v0 = v"
i=0
while [ "$i" -le "$n" ]; do
    j=$((i - 1))
    if [ "$style" = bodies ]; then
        echo "frame F$i from N about z by th$i"
        [ "$i" -gt 0 ] && echo "let A$i = A$j - d*F$i.x"
    elif [ "$i" -gt 0 ]; then
        echo "let A$i = A$j - d*[cos(th$i), sin(th$i)]"
    fi
    [ "$i" -gt 0 ] && echo "let v$i = v$j*cos(th$j - th$i)"
    i=$((i + 1))
done
if [ "$style" = bodies ]; then
    i=0
    while [ "$i" -le "$n" ]; do
        echo "body b$i mass m at A$i + a*F$i.x frame F$i inertia [I1, I2, I3]"
        echo "constraint k$i: dot(velocity(A$i, b$i), F$i.y) = 0"
        i=$((i + 1))
    done
else
    echo "particle C mass m at [x + a*cos(th0), y + a*sin(th0)]"
    i=0
    while [ "$i" -le "$n" ]; do
        echo "particle P$i mass m at A$i"
        echo "constraint k$i: dot(P$i', [-sin(th$i), cos(th$i)]) = 0"
        i=$((i + 1))
    done
fi
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
if [ "$style" = bodies ]; then
    echo "initial $init"
else
    echo "initial $init, x' = cos(0.1), y' = sin(0.1), th0' = 0.2"
fi
