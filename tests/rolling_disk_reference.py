#!/usr/bin/python3
"""The rolling disk's steady motions, derived independently of nh.

A thin homogeneous disk (mass m, radius r; moments m r^2/4 about a
diameter, m r^2/2 about its axis) rolls without slipping on a horizontal
plane.  Euler angles: heading phi about the vertical, theta about the line
of nodes (theta is the angle between the disk's axis and the vertical:
upright is pi/2), spin psi about the axis.  The equations are derived here
by Newton-Euler, not from a Lagrangian: the centre G is r e2 above the
contact point P (e2 the in-plane unit vector that points most upwards),
rolling gives v_G = w x (G - P), and

    m a_G = F - m g z,        dH_G/dt = (P - G) x F,

linear in the accelerations and the contact force F, solved by SymPy.
Then, in 40-digit arithmetic (mpmath):

  * the steady circles: theta' = 0 makes phi'' = psi'' = 0, and theta'' = 0
    is  4 g cos(theta) + 5 r Omega^2 sin(theta) cos(theta)
        + 6 r Omega psi' sin(theta) = 0   (Omega = phi'),
    solved for psi' at the example's lean and heading rate; the centre
    moves at r |omega3| (omega3 = psi' + Omega cos(theta)) on a circle of
    radius r |omega3| / |Omega|;
  * their stability: the Jacobian of (theta', theta'', phi'', psi'') in
    (theta, theta', phi', psi') at the steady motion, and its eigenvalues
    (mpmath.eig), ordered as nh's eigen orders them;
  * Euler's disk (Moffatt, Nature 404 (2000) 833): with the centre at rest
    (omega3 = 0), Omega^2 sin(alpha) = m g r / A = 4 g / r, alpha the angle
    between the disk and the table (= theta), checked on theta'' here;
  * the PyDy rolling disc (sympy.physics.mechanics' rolling disc, speeds
    u1 = theta', u2 = omega3 about the axis, u3 = Omega sin(theta) with
    SymPy's lean q2 = pi/2 - theta): its steady-turn equation
    6 u2 u3 r - u3^2 r tan(q2) + 4 g sin(q2) = 0 (SymPy's u1' = 0), two
    roots u3 at given lean and spin, from the Newton-Euler theta'' = 0.

It prints the `# expect:` lines that hold these numbers, each group after
a line `== FILE` naming the script that must hold them (in that order):
examples/rolling_disk_steady.nh and tests/lang/steady_pydy_disc.nh.
tests/steady_references.sh checks that they do.
"""
import sympy as sp
import mpmath as mp

mp.mp.dps = 40

m, r, g = sp.symbols('m r g', positive=True)
q = sp.symbols('ph th ps')
v = sp.symbols('phd thd psd')
a = sp.symbols('phdd thdd psdd')


def ddt(e):
    return e.applyfunc(lambda x: sum(sp.diff(x, q[i]) * v[i] +
                                     sp.diff(x, v[i]) * a[i]
                                     for i in range(3)))


def Rz(x):
    return sp.Matrix([[sp.cos(x), -sp.sin(x), 0], [sp.sin(x), sp.cos(x), 0],
                      [0, 0, 1]])


def Rx(x):
    return sp.Matrix([[1, 0, 0], [0, sp.cos(x), -sp.sin(x)],
                      [0, sp.sin(x), sp.cos(x)]])


# the frame of the disk that does not spin: e1 the line of nodes, e3 the axis
Rf = Rz(q[0]) * Rx(q[1])
e1, e2, e3 = Rf[:, 0], Rf[:, 1], Rf[:, 2]
zh = sp.Matrix([0, 0, 1])
w = v[0] * zh + v[1] * e1 + v[2] * e3      # the disk's angular velocity
rho = r * e2                              # G - P
vG = w.cross(rho)                         # rolling: v_P = 0
aG = ddt(vG)
I = Rf * sp.diag(m * r**2 / 4, m * r**2 / 4, m * r**2 / 2) * Rf.T
dH = ddt(I * w)
F = sp.Matrix(sp.symbols('Fx Fy Fz'))
eqs = list(m * aG - F + m * g * zh) + list(dH + rho.cross(F))
A, b = sp.linear_eq_to_matrix([sp.expand(e) for e in eqs], list(a) + list(F))
A = A.subs(q[0], 0)                       # the heading does not enter
b = b.subs(q[0], 0)
sol = A.LUsolve(b)
phdd, thdd, psdd = [sp.simplify(sp.trigsimp(sol[i])) for i in range(3)]

# the steady motions: theta' = 0
assert sp.simplify(phdd.subs(v[1], 0)) == 0
assert sp.simplify(psdd.subs(v[1], 0)) == 0
Om = sp.Symbol('Omega')
steady = sp.simplify(thdd.subs({v[1]: 0, v[0]: Om}) * 5 * r)
closed = -(4 * g * sp.cos(q[1]) + 5 * r * Om**2 * sp.sin(q[1]) * sp.cos(q[1])
           + 6 * r * Om * v[2] * sp.sin(q[1]))
assert sp.simplify(steady - closed) == 0
# Euler's disk: omega3 = psi' + Omega cos(theta) = 0
euler = sp.simplify(closed.subs(v[2], -Om * sp.cos(q[1])))
assert sp.simplify(euler - sp.cos(q[1]) * (r * Om**2 * sp.sin(q[1]) - 4 * g)) == 0

vals = {m: 1, r: sp.Rational(1, 2), g: sp.Rational(981, 100)}


def num(x):
    """The shortest text that reads back to the same double, as nh."""
    return repr(float(x))


def expect(lines, text):
    lines.append('# expect: ' + text)


def steady_psi(theta0, omega):
    """psi' of the steady circle at lean theta0 and heading rate omega."""
    f = sp.lambdify(v[2], closed.subs(vals).subs({q[1]: theta0, Om: omega}),
                    'mpmath')
    return mp.findroot(f, mp.mpf(-1))


def eig_lines(theta0, omega, psi):
    """nh's eigen lines for (theta, theta', phi', psi') at the circle."""
    X = [q[1], v[1], v[0], v[2]]
    rates = [v[1], thdd, phdd, psdd]
    at = {q[1]: theta0, v[1]: 0, v[0]: omega, v[2]: psi}
    J = mp.matrix(4, 4)
    for i in range(4):
        for j in range(4):
            e = sp.diff(rates[i], X[j]).subs(vals)
            J[i, j] = sp.lambdify([q[1], v[1], v[0], v[2]], e, 'mpmath')(
                at[q[1]], at[v[1]], at[v[0]], at[v[2]])
    ev = mp.eig(J)[0]
    ev = sorted(ev, key=lambda z: (-float(mp.re(z)), -float(mp.im(z))))
    out = []
    for k, z in enumerate(ev, 1):
        re, im = float(mp.re(z)), float(mp.im(z))
        tol = 1e-9 * max(1.0, max(abs(float(mp.re(y))) for y in ev))
        re = 0.0 if abs(re) < 1e-30 else re
        if abs(im) < 1e-30:
            out.append('eig%d = ~%s@1e-9' % (k, num(re)) if abs(re) > 1e-20
                       else 'eig%d = ~0@1e-9' % k)
        else:
            out.append('eig%d = ~%s@1e-9 %s ~%s@1e-9*i'
                       % (k, num(re) if abs(re) > 1e-20 else '0',
                          '+' if im > 0 else '-', num(abs(im))))
        del tol
    return out


lines = ['== examples/rolling_disk_steady.nh']
# 1. a steady circle that capsizes: lean theta0 = 1.3, Omega = 2
theta0, omega = mp.mpf('1.3'), mp.mpf(2)
psi = steady_psi(theta0, omega)
w3 = psi + omega * mp.cos(theta0)
expect(lines, "psi' = ~%s@1e-12" % num(psi))
expect(lines, "radius = ~%s@1e-12" % num(mp.mpf('0.5') * abs(w3) / abs(omega)))
lines += ['# expect: ' + l for l in eig_lines(theta0, omega, psi)]
# 2. a fast, nearly upright one: theta0 = 1.5, Omega = 0.05
theta0, omega = mp.mpf('1.5'), mp.mpf('0.05')
psi = steady_psi(theta0, omega)
w3 = psi + omega * mp.cos(theta0)
expect(lines, "psi' = ~%s@1e-12" % num(psi))
expect(lines, "radius = ~%s@1e-12" % num(mp.mpf('0.5') * abs(w3) / abs(omega)))
lines += ['# expect: ' + l for l in eig_lines(theta0, omega, psi)]
# 3. Euler's disk at Omega = 12: sin(alpha) = 4 g / (r Omega^2)
omega = mp.mpf(12)
alpha = mp.asin(4 * mp.mpf('9.81') / (mp.mpf('0.5') * omega**2))
expect(lines, "theta = ~%s@1e-12" % num(alpha))
# 4. the PyDy disc: lean q2 = 0.4, spin u2 = -1.1, r = 0.5, g = 9.81.
# SymPy's frames are the mirror image of these (its axis L.y is e3 with y
# reversed), so its lean, spin and heading rate are q2 = pi/2 - theta,
# u2 = -omega3, q1' = -Omega (omega, a pseudovector, mirrors to
# -M omega); the Newton-Euler steady equation
#   4 g cos(theta) - r Omega^2 sin(theta) cos(theta)
#     + 6 r Omega omega3 sin(theta) = 0
# (closed with psi' = omega3 - Omega cos(theta)) becomes SymPy's u1' = 0,
# 6 u2 u3 r - u3^2 r tan(q2) + 4 g sin(q2) = 0 with u3 = q1' cos(q2),
# as the assertion below checks; a quadratic in the heading rate.
lines.append('== tests/lang/steady_pydy_disc.nh')
q2s, u2s = sp.symbols('q2 u2')
mapped = closed.subs(v[2], -u2s - Om * sp.cos(q[1])).subs(
    {q[1]: sp.pi / 2 - q2s, Om: -sp.Symbol('u3') / sp.cos(q2s)})
sympys = (6 * u2s * sp.Symbol('u3') * r - sp.Symbol('u3')**2 * r * sp.tan(q2s)
          + 4 * g * sp.sin(q2s))
assert sp.simplify(mapped + sympys) == 0
q2, u2, rr, gg = mp.mpf('0.4'), mp.mpf('-1.1'), mp.mpf('0.5'), mp.mpf('9.81')
th, w3 = mp.pi / 2 - q2, -u2
qa = -rr * mp.sin(th) * mp.cos(th)
qb = 6 * rr * w3 * mp.sin(th)
qc = 4 * gg * mp.cos(th)
for sign in (1, -1):
    O = (-qb + sign * mp.sqrt(qb**2 - 4 * qa * qc)) / (2 * qa)
    expect(lines, "q1' = ~%s@1e-12" % num(-O))
    expect(lines, "u3 = ~%s@1e-12" % num(-O * mp.cos(q2)))
print('\n'.join(lines))
