#!/usr/bin/python3
# rattleback_reference.py — an integration of the rattleback of
# examples/rattleback.nh (Kane and Levinson's 1982 parameters) that shares
# nothing with nh: Newton's and Euler's equations of a rigid body rolling
# without slipping, on the body's own axes, in the six variables w (the
# angular velocity) and n (the upward vertical), integrated by a
# Dormand-Prince 5(4) pair written here.  examples/rattleback.nh pins what
# it prints (the output of `/usr/bin/python3 tests/rattleback_reference.py
# 5`; standard library only, about 4 s of CPU).
#
#   /usr/bin/python3 tests/rattleback_reference.py [T]
#
# prints the times in [0, T] where the spin about the vertical, w . n,
# changes sign, the energy at the start and its drift, and the spin at T.
#
# The equations, on the body's axes (every vector there):
#   r(n)   the contact point seen from the centre of mass G: the point of
#          the ellipsoid diag(a, b, c) around its centre (h above G on the
#          body's vertical axis) whose outward normal is -n,
#          r = h e3 - A^2 n / sqrt(n . A^2 n),  A = diag(a, b, c);
#   no slip: the material point at the contact is at rest, so the centre
#          moves with v = -w x r;
#   Newton: m (v' + w x v) = F - m g n   (F: the contact force);
#   Euler:  I w' + w x I w = r x F;
#   the vertical is fixed in space: n' = n x w.
# F eliminated (v' = -w' x r - w x r'):
#   (I + m (|r|^2 E - r r^T)) w' = -w x I w + m r x (-w x r' - w x (w x r) + g n)
# with r' = (dr/dn) n'.  The energy E = w . I w / 2 + m |w x r|^2 / 2 - m g r . n
# (G is -r . n above the plane) is conserved.
import math
import sys

a, b, c, h, m, g = 0.2, 0.03, 0.02, 0.01, 1.0, 9.81
I = [[2e-4, 2e-5, 0.0], [2e-5, 1.6e-3, 0.0], [0.0, 0.0, 1.7e-3]]
A2 = [a * a, b * b, c * c]


def cross(u, v):
    return [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2],
            u[0] * v[1] - u[1] * v[0]]


def dot(u, v):
    return u[0] * v[0] + u[1] * v[1] + u[2] * v[2]


def times(M, v):
    return [dot(row, v) for row in M]


def det3(M):
    return (M[0][0] * (M[1][1] * M[2][2] - M[1][2] * M[2][1]) -
            M[0][1] * (M[1][0] * M[2][2] - M[1][2] * M[2][0]) +
            M[0][2] * (M[1][0] * M[2][1] - M[1][1] * M[2][0]))


def solve3(M, rhs):
    """Cramer's rule."""
    d = det3(M)
    x = []
    for k in range(3):
        Mk = [row[:] for row in M]
        for i in range(3):
            Mk[i][k] = rhs[i]
        x.append(det3(Mk) / d)
    return x


def contact(n):
    D = sum(A2[i] * n[i] ** 2 for i in range(3))
    s = math.sqrt(D)
    return [-A2[0] * n[0] / s, -A2[1] * n[1] / s, -A2[2] * n[2] / s + h], D, s


def rhs(y):
    w, n = y[:3], y[3:]
    r, D, s = contact(n)
    nd = cross(n, w)
    An = [A2[i] * n[i] for i in range(3)]
    q = dot(An, nd)
    rd = [-A2[i] * nd[i] / s + An[i] * q / (D * s) for i in range(3)]
    rr = dot(r, r)
    K = [[I[i][j] + m * ((rr if i == j else 0.0) - r[i] * r[j])
          for j in range(3)] for i in range(3)]
    wr, wrd = cross(w, r), cross(w, rd)
    wwr = cross(w, wr)
    t = [-wrd[i] - wwr[i] + g * n[i] for i in range(3)]
    rt, gyro = cross(r, t), cross(w, times(I, w))
    wd = solve3(K, [-gyro[i] + m * rt[i] for i in range(3)])
    return wd + nd


def energy(y):
    w, n = y[:3], y[3:]
    r = contact(n)[0]
    v = cross(w, r)
    return 0.5 * dot(w, times(I, w)) + 0.5 * m * dot(v, v) - m * g * dot(r, n)


def spin(y):
    return dot(y[:3], y[3:])


# Dormand and Prince (1980): the RK5(4)7M pair.
CA = [[], [1 / 5], [3 / 40, 9 / 40], [44 / 45, -56 / 15, 32 / 9],
      [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
      [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
      [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84]]
B5 = [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]
B4 = [5179 / 57600, 0, 7571 / 16695, 393 / 640, -92097 / 339200,
      187 / 2100, 1 / 40]
RTOL, ATOL = 1e-12, 1e-13


def step(y, dt):
    """One step: the fifth-order value and the error in tolerances."""
    k = []
    for i in range(7):
        k.append(rhs([y[j] + dt * sum(CA[i][l] * k[l][j] for l in range(i))
                      for j in range(6)]))
    y5 = [y[j] + dt * sum(B5[l] * k[l][j] for l in range(7)) for j in range(6)]
    y4 = [y[j] + dt * sum(B4[l] * k[l][j] for l in range(7)) for j in range(6)]
    err = max(abs(y5[j] - y4[j]) / (ATOL + RTOL * abs(y5[j])) for j in range(6))
    return y5, err


def main():
    T = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    # tilted by q2 = 0.5 deg about the long axis (x), then q3 = -0.5 deg
    # about the third (y); the vertical on the body's axes
    q2, q3 = 0.5 * math.pi / 180, -0.5 * math.pi / 180
    y = [0.0, 0.0, 5.0, -math.cos(q2) * math.sin(q3), math.sin(q2),
         math.cos(q2) * math.cos(q3)]
    E0, t, dt, changes = energy(y), 0.0, 1e-4, []
    while t < T:
        dt = min(dt, T - t)
        yn, err = step(y, dt)
        if err <= 1.0:
            if spin(y) * spin(yn) < 0:
                # the change of sign inside the step: bisection on the
                # length of a step from its start
                lo, hi = 0.0, dt
                for _ in range(60):
                    mid = 0.5 * (lo + hi)
                    if spin(step(y, mid)[0]) * spin(y) > 0:
                        lo = mid
                    else:
                        hi = mid
                changes.append(t + 0.5 * (lo + hi))
            t, y = t + dt, yn
        dt *= min(5.0, max(0.2, 0.9 * max(err, 1e-30) ** -0.2))
    print("the spin changes sign at t =", ", ".join("%.12f" % x for x in changes))
    print("energy %.17g, relative drift %.2g" % (E0, (energy(y) - E0) / E0))
    print("spin at t = %g: %.12f" % (T, spin(y)))


main()
