#!/usr/bin/python3
"""The benchmark bicycle's hands-free steady turns: what nh must reproduce,
derived independently of nh.

Meijaard, Papadopoulos, Ruina & Schwab (Proc. R. Soc. A 463, 2007) give the
bicycle's motion linearized about running upright at speed v,
M q'' + v C1 q' + (g K0 + v^2 K2) q = 0 in q = (roll, steer), with M, C1,
K0, K2 from the parameters of their Table 1 by the formulas of their
Appendix A (written out below again, in 40-digit arithmetic).  Running
upright is steady at every speed; at the capsize speed v_c the stiffness
g K0 + v_c^2 K2 is singular, and the family of hands-free steady turns
that Basu-Mandal, Chatterjee & Papadopoulos (Proc. R. Soc. A 463, 2007)
trace meets straight running there (their capsize bifurcation): as the
lean goes to 0 along it, the speed tends to v_c and steer/lean to the
ratio of the null vector of g K0 + v_c^2 K2.  The paper prints
v_c = 6.0242620153883589 (Meijaard et al. Table 2 (a): 6.02426201538837):
checked here to 1e-15.

The same family ends, Basu-Mandal et al. say, "in unstable static
equilibrium, with the frame perfectly upright and the front wheel almost
perpendicular".  That equilibrium is a critical point of the potential
energy on the holonomic constraint (the front wheel on the ground): with
the bicycle's geometry as bench/sympy_bicycle.py writes it from the paper
(not from nh), V = -sum m_i g z_i (z down) and the front contact's height
h, the conditions dV = mu dh in (theta, delta) at roll 0, h = 0, solved
for the pitch, the steer and mu by mpmath.findroot; then the roll
component dV/dphi - mu dh/dphi is checked to vanish too (the frame is
upright).

Prints the `# expect:` lines of examples/bicycle_steady.nh that hold
these numbers, after `== examples/bicycle_steady.nh`; tests/
steady_references.sh checks that the example holds them.
"""
import os
import sys

import mpmath as mp

mp.mp.dps = 40
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "bench"))

# ---- Meijaard et al. (2007) Appendix A ------------------------------------
w, c, lam = mp.mpf('1.02'), mp.mpf('0.08'), mp.pi / 10
g = mp.mpf('9.81')
rR, mR, IRxx, IRyy = mp.mpf('0.3'), mp.mpf(2), mp.mpf('0.0603'), mp.mpf('0.12')
xB, zB, mB = mp.mpf('0.3'), mp.mpf('-0.9'), mp.mpf(85)
IBxx, IBzz, IBxz = mp.mpf('9.2'), mp.mpf('2.8'), mp.mpf('2.4')
xH, zH, mH = mp.mpf('0.9'), mp.mpf('-0.7'), mp.mpf(4)
IHxx, IHzz, IHxz = mp.mpf('0.05892'), mp.mpf('0.00708'), mp.mpf('-0.00756')
rF, mF, IFxx, IFyy = mp.mpf('0.35'), mp.mpf(3), mp.mpf('0.1405'), mp.mpf('0.28')
sl, cl = mp.sin(lam), mp.cos(lam)
mT = mR + mB + mH + mF                                          # (A1)
xT = (xB * mB + xH * mH + w * mF) / mT                          # (A2)
zT = (-rR * mR + zB * mB + zH * mH - rF * mF) / mT              # (A3)
mA = mH + mF                                                    # (A8)
xA = (xH * mH + w * mF) / mA                                    # (A9)
zA = (zH * mH - rF * mF) / mA
uA = (xA - w - c) * cl - zA * sl                                # (A11)
mu = c / w * cl                                                 # (A15)
SR, SF = IRyy / rR, IFyy / rF                                   # (A16)
ST = SR + SF
SA = mA * uA + mu * mT * xT                                     # (A17)
K0 = mp.matrix([[mT * zT, -SA], [-SA, -SA * sl]])               # (A21)
K2 = mp.matrix([[0, (ST - mT * zT) / w * cl],                   # (A22)
                [0, (SA + SF * sl) / w * cl]])
vc = mp.findroot(lambda v: mp.det(g * K0 + v**2 * K2), mp.mpf(6))
assert abs(vc - mp.mpf('6.0242620153883589')) < mp.mpf('1e-15'), vc
K = g * K0 + vc**2 * K2
ratio = -K[0, 0] / K[0, 1]              # steer/roll of the null vector
assert abs(K[1, 0] + K[1, 1] * ratio) < mp.mpf('1e-30')


def num(x):
    return repr(float(x))


lines = ['== examples/bicycle_steady.nh']
lines.append('# expect: v = ~%s@1e-9' % num(vc))
lines.append('# expect: delta/phi = ~%s@1e-9' % num(ratio))

# ---- the static equilibrium at the family's other end --------------------
import sympy as sp                                   # noqa: E402
import sympy_bicycle as sb                           # noqa: E402

m = sb.model()
pl = sb.Plain(m)
vals = {s: sp.Float(v, 40) for s, v in zip(m["symbols"], sb.PARAMS.values())}
vals[m["lam"]] = sp.pi / 10
N = m["N"]
masses = [sb.PARAMS[k] for k in ("mR", "mB", "mH", "mF")]
from sympy.physics.mechanics import msubs            # noqa: E402
z = [msubs(r & N.z, pl.map) for r in m["centres"]]
V = -sum(sp.Symbol(k) * sp.Symbol("g") * zi
         for k, zi in zip(("mR", "mB", "mH", "mF"), z))
h = msubs(m["height"], pl.map)
phi, theta, delta = (pl.q[sb.NAMES.index(n)] for n in ("phi", "theta", "delta"))
muS = sp.Symbol("mu_h")
conds = [sp.diff(V, theta) - muS * sp.diff(h, theta),
         sp.diff(V, delta) - muS * sp.diff(h, delta), h]
roll = sp.diff(V, phi) - muS * sp.diff(h, phi)
subs0 = dict(vals)
subs0[phi] = 0
for n in ("x", "y", "psi", "thR", "thF"):
    subs0[pl.q[sb.NAMES.index(n)]] = 0
f = sp.lambdify([theta, delta, muS], [e.subs(subs0) for e in conds], "mpmath")
th, de, mu_h = mp.findroot(lambda a, b, c: f(a, b, c),
                           (mp.mpf(0), mp.mpf('1.3'), mp.mpf(0)))
r = sp.lambdify([theta, delta, muS], roll.subs(subs0), "mpmath")(th, de, mu_h)
assert abs(r) < mp.mpf('1e-25'), r
# the mirror image (-delta) is an equilibrium too (V and h are even in
# delta at roll 0): the steer's size is what is pinned
lines.append('# expect: delta = ~%s@1e-12' % num(abs(de)))
print('\n'.join(lines))
