#!/usr/bin/env python3
# sympy_sphere.py — the peer row of `make bench`: the rolling sphere of
# LANGUAGE.md §11 derived with SymPy the way nh's `equations multipliers`
# does it (M = d2L/dq'dq', h, B = dC/dq', c: LANGUAGE.md §5), compiled with
# lambdify, and one right-hand side evaluated (the lambdified M, h, B, c
# and a Gaussian elimination of the 7x7 system, in Python).
#
# Prints two numbers, the derivation time and the time of one right-hand
# side, in seconds (median of several runs); bench.c reads them.  Exits 1
# when SymPy is not installed (bench.c then leaves the row out).
import statistics
import sys
import time

try:
    import sympy as sp
except ImportError:
    sys.exit(1)


def derive():
    m, R = sp.symbols("m R")
    q = sp.symbols("phi theta psi x y")
    qd = sp.symbols("phid thetad psid xd yd")
    phi, theta, psi, x, y = q
    phid, thetad, psid, xd, yd = qd
    T = m / 2 * (xd**2 + yd**2) + m * R**2 / 5 * (
        phid**2 + thetad**2 + psid**2 + 2 * phid * psid * sp.cos(theta))
    C = [xd - (R * thetad * sp.sin(phi) - R * psid * sp.sin(theta) * sp.cos(phi)),
         yd - (-R * thetad * sp.cos(phi) - R * psid * sp.sin(theta) * sp.sin(phi))]
    p = [sp.diff(T, v) for v in qd]
    M = sp.Matrix(5, 5, lambda i, j: sp.diff(p[i], qd[j]))
    h = sp.Matrix([sum(sp.diff(p[i], q[j]) * qd[j] for j in range(5))
                   - sp.diff(T, q[i]) for i in range(5)])
    B = sp.Matrix(2, 5, lambda a, i: sp.diff(C[a], qd[i]))
    c = sp.Matrix([sum(sp.diff(C[a], q[j]) * qd[j] for j in range(5))
                   for a in range(2)])
    args = list(q) + list(qd) + [m, R]
    return sp.lambdify(args, [M.tolist(), list(h), B.tolist(), list(c)],
                       "math")


def solve(A, b):
    n = len(b)
    A = [row[:] + [b[i]] for i, row in enumerate(A)]
    for k in range(n):
        p = max(range(k, n), key=lambda i: abs(A[i][k]))
        A[k], A[p] = A[p], A[k]
        for i in range(k + 1, n):
            f = A[i][k] / A[k][k]
            for j in range(k, n + 1):
                A[i][j] -= f * A[k][j]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (A[i][n] - sum(A[i][j] * x[j] for j in range(i + 1, n))) / A[i][i]
    return x


def rhs(f, s):
    M, h, B, c = f(*s)
    K = [[float(M[i][j]) for j in range(5)] + [-float(B[a][i]) for a in range(2)]
         for i in range(5)]
    K += [[float(B[a][i]) for i in range(5)] + [0.0, 0.0] for a in range(2)]
    b = [-float(h[i]) for i in range(5)] + [-float(c[a]) for a in range(2)]
    return solve(K, b)


def main():
    times = []
    for _ in range(5):
        sp.core.cache.clear_cache()  # no help from an earlier run
        t0 = time.perf_counter()
        f = derive()
        times.append(time.perf_counter() - t0)
    s = [0.1, 1.0, 0.2, 0.0, 0.0, 0.7, 0.3, 1.1, 0.0, 0.0, 1.0, 1.0]
    rhs(f, s)
    reps = 200
    rt = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            rhs(f, s)
        rt.append((time.perf_counter() - t0) / reps)
    print(statistics.median(times), statistics.median(rt))


main()
