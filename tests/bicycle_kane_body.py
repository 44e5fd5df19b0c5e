#!/usr/bin/python3
"""bicycle_kane_body.py NH [--size] -- the benchmark bicycle's Kane form
derived a second way, on the bodies' own axes, against nh's.

nh derives maggi's form from the kinetic energy: G = Psi^T M Psi and
Psi^T (-h - M beta), with M and h of the eight coordinates (Benenti eq.
27).  Here the same equations are derived by Kane's method, body by body,
with Newton-Euler's recursive accelerations, and nothing of nh's:

  * the rear bodies' vectors on the roll frame R's axes, the front ones'
    on the front frame F's (the angle of the steer axis is theta + lam);
  * angular velocities linear in the six rates (psi', phi', theta',
    delta', thR', thF'), each coefficient a vector;
  * the rear centre's velocity from rolling, w_WR x (-rR R.z); the
    front contact at rF e from the front centre, e = (n1, 0, n3)/|.| on
    F's axes (n = N.z there), so that the front rolling condition,
    v_GF + w_WF x rF e = 0, taken along f = F.y x e, F.y and e, gives
    psi' and theta' from the last two and thF' from the first;
  * the accelerations at u' = 0 by a = a_parent + alpha x r + w x (w x r)
    and the contact's derivative (e moves as n does, n' = -w_F x n), the
    dependent rates' accelerations (beta) from the same 3 x 3 system;
  * G_rs = sum m V_r.V_s + W_r.I W_s and f_r = sum V_r.(m g - m a) -
    W_r.(I alpha + w x I w), V and W the partial velocities.

Checks (each failure printed, exit status 1):
  1. nh's `show eom` under maggi, read as text: its three rows'
     coefficients of u1', u2', u3' are G and their right sides f, at
     random values of every parameter and coordinate (d1, d2, d3 free):
     equal to 1e-11 relative to the largest entry.
  2. nh's tapes (`accel`, and the pitch and the dependent rates that nh
     solves) at states of the example (Meijaard et al. 2007 Table 1): the
     pitch from the front contact's height here, then psi', theta',
     thF', the speeds' and all eight accelerations, to 1e-10.
With --size, it prints the rows this derivation takes when every row used
once is written where it is used (doc/display.md compares them with
nh's).
"""

import math
import random
import re
import subprocess
import sys

import mpmath
import sympy as sp

NH = sys.argv[1]
SIZE = "--size" in sys.argv[2:]
EX = __file__.rsplit("/tests/", 1)[0] + "/examples"
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


# ---- rows of named subexpressions ---------------------------------------

rows = []            # (symbol, expression), each in terms of earlier ones
seen = {}
PAIRS = []           # (s, c) with s^2 = 1 - c^2


def shorten(e):
    """The shortest of e, e multiplied out, and either with s^2 = 1 - c^2."""
    cands = [e]
    x = sp.expand(e)
    cands.append(x)
    cands.append(sp.factor_terms(x))
    for s, c in PAIRS:
        y = sp.expand(x.subs(s**2, 1 - c**2))
        cands += [y, sp.factor_terms(y)]
    return min(cands, key=lambda z: len(str(z)))


def name(e, base="k"):
    e = sp.sympify(e)
    if e.is_Atom:
        return e
    e = shorten(e)
    if e.is_Atom or (e.is_Mul and len(e.args) <= 2
                     and all(a.is_Atom for a in e.args)):
        return e
    if e in seen:
        return seen[e]
    if -e in seen:
        return -seen[-e]
    s = sp.Symbol("%s%d" % (base, len(rows) + 1))
    rows.append((s, e))
    seen[e] = s
    return s


def vname(v):
    return sp.Matrix([name(x) for x in v])


Z = sp.zeros(3, 1)
ex, ey, ez = sp.Matrix([1, 0, 0]), sp.Matrix([0, 1, 0]), sp.Matrix([0, 0, 1])


def cross(a, b):
    return a.cross(b)


def dot(a, b):
    return (a.T * b)[0]


def Ry(c, s):
    return sp.Matrix([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def Rz(c, s):
    return sp.Matrix([[c, -s, 0], [s, c, 0], [0, 0, 1]])


PARAMS = ("w c lam g rR mR IRxx IRyy rF mF IFxx IFyy xB zB mB IBxx IByy "
          "IBzz IBxz xH zH mH IHxx IHyy IHzz IHxz d1 d2 d3").split()
p = {n: sp.Symbol(n) for n in PARAMS}
u1, u2, u3 = U = sp.symbols("u1 u2 u3")
psid, thd, thFd = DEP = sp.symbols("psid thetad thFd")
RATES = [u1, u2, u3, psid, thd, thFd]
ANGLES = {"phi": "phi", "theta": "theta", "delta": "delta", "lam": "lam",
          "tl": "theta + lam"}
trig = []
cs = {}
for a, arg in ANGLES.items():
    c, s = sp.Symbol("c_" + a), sp.Symbol("s_" + a)
    cs[a] = (c, s)
    trig += [(c, arg), (s, arg)]
    PAIRS.append((s, c))
cph, sph = cs["phi"]


class Lin:
    """A vector linear in the six rates: a coefficient vector per rate."""

    def __init__(self, d=None):
        self.d = {r: (d.get(r, Z) if d else Z) for r in RATES}

    def __add__(self, o):
        return Lin({r: self.d[r] + o.d[r] for r in RATES})

    def map(self, f):
        return Lin({r: f(self.d[r]) for r in RATES})

    def named(self):
        return Lin({r: vname(self.d[r]) for r in RATES})

    def at(self, rate):
        return sum((self.d[r] * rate[r] for r in RATES), Z)


# frames: B is R turned by theta about y, H (the steer axis is H.z) R
# turned by theta + lam, F is H turned by delta about z, the fork's inertia
# axes Fb are F turned by -lam about y; C_XY has Y's axes in X's components
C_RB = Ry(*cs["theta"])
C_RF = Ry(*cs["tl"]) * Rz(*cs["delta"])
cla, sla = cs["lam"]
C_FFb = Ry(cla, -sla)
nR = sp.Matrix([0, sph, cph])                          # N.z on R's axes
nF = vname(C_RF.T * nR)                                # and on F's
wR = Lin({psid: nR, u1: ex})                           # phi' = u1
wB = wR + Lin({thd: ey})
wF = (wB.map(lambda v: C_RF.T * v) + Lin({u2: ez})).named()   # delta' = u2
wWR = wB + Lin({u3: ey})                               # thR' = u3
wWF = wF + Lin({thFd: ey})
vGR = wWR.map(lambda v: cross(v, -p["rR"] * ez)).named()
rBH = vname(Ry(*cs["tl"]) * sp.Matrix([p["d1"], 0, p["d2"]]))
rB = vname(C_RB * sp.Matrix([p["xB"], 0, p["zB"] + p["rR"]]))
d3x = sp.Matrix([p["d3"], 0, 0])
rH = vname(C_FFb * sp.Matrix([p["xH"] - p["w"], 0, p["zH"] + p["rF"]]))
vGB = (vGR + wB.map(lambda v: cross(v, rB))).named()
vGF = ((vGR + wB.map(lambda v: cross(v, rBH))).map(lambda v: C_RF.T * v)
       + wF.map(lambda v: cross(v, d3x))).named()
vGH = (vGF + wF.map(lambda v: cross(v, rH))).named()

# the front contact: e towards it, f forward (horizontal), both unit
isq = name(1 / sp.sqrt(nF[0]**2 + nF[2]**2))
e1, e3 = name(nF[0] * isq, "e"), name(nF[2] * isq, "e")
PAIRS.append((e3, e1))
e = sp.Matrix([e1, 0, e3])
f = sp.Matrix([e3, 0, -e1])
rF = p["rF"]
vQ = vGF + wWF.map(lambda v: cross(v, rF * e))
cons = [vQ.map(lambda v: sp.Matrix([dot(v, f), 0, 0])),
        vQ.map(lambda v: sp.Matrix([v[1], 0, 0])),
        vQ.map(lambda v: sp.Matrix([dot(v, e), 0, 0]))]
A = [[name(cq.d[x][0]) for x in DEP] for cq in cons]
assert A[1][2] == 0 and A[2][2] == 0
idet = name(1 / (A[1][0] * A[2][1] - A[1][1] * A[2][0]))


def solve(b0, b1, b2):
    """A x = -b for the three dependent rates (or their accelerations)."""
    x = name((-b1 * A[2][1] + b2 * A[1][1]) * idet)
    y = name((-b2 * A[1][0] + b1 * A[2][0]) * idet)
    z = name(-(b0 + A[0][0] * x + A[0][1] * y) / A[0][2])
    return x, y, z


Psi = {r: solve(*[name(cq.d[r][0]) for cq in cons]) for r in U}
rate = {u1: u1, u2: u2, u3: u3}
for k, d in enumerate(DEP):
    rate[d] = name(sum(Psi[r][k] * r for r in U), "v")
psv, thv, thFv = rate[psid], rate[thd], rate[thFd]


def partial(lin, r):
    return vname(lin.d[r] + sum((lin.d[d] * Psi[r][k]
                                 for k, d in enumerate(DEP)), Z))


wRv, wBv, wFv = vname(wR.at(rate)), vname(wB.at(rate)), vname(wF.at(rate))
wWRv, wWFv = wBv + ey * u3, wFv + ey * thFv

# accelerations at u' = 0 and beta = 0 (inertial, on R's or F's axes)
aR0 = vname(cross(-wRv, nR) * psv)             # N.z turns on R's axes
aB0 = vname(aR0 + cross(wRv, thv * ey))
aF0 = vname(C_RF.T * aB0 - cross(u2 * ez, C_RF.T * wBv))
aWR0 = vname(aB0 + cross(wBv, ey * u3))
aWF0 = vname(aF0 + cross(wFv, ey * thFv))


def rigid(a0, al, w, r):
    return a0 + cross(al, r) + cross(w, cross(w, r))


rR = p["rR"]
aGR0 = vname(cross(aWR0, -rR * ez) + cross(wWRv, cross(wRv, -rR * ez)))
aGB0 = vname(rigid(aGR0, aB0, wBv, rB))
aGF0 = vname(C_RF.T * rigid(aGR0, aB0, wBv, rBH) + cross(aF0, d3x)
             + cross(wFv, cross(wFv, d3x)))
aGH0 = vname(rigid(aGF0, aF0, wFv, rH))
dn = vname(cross(-wFv, nF))
de = name(e1 * dn[0] + e3 * dn[2])
edot = vname(sp.Matrix([(dn[0] - e1 * de) * isq, 0, (dn[2] - e3 * de) * isq])
             + cross(wFv, e))
dv = aGF0 + cross(aWF0, rF * e) + cross(wWFv, rF * edot)
beta = solve(name(dot(dv, f)), name(dv[1]), name(dot(dv, e)))


def accel(lin, a0):
    return vname(a0 + sum((lin.d[d] * beta[k] for k, d in enumerate(DEP)), Z))


def inertia(xx, yy, zz, xz):
    return sp.Matrix([[xx, 0, xz], [0, yy, 0], [xz, 0, zz]])


IR = sp.diag(p["IRxx"], p["IRyy"], p["IRxx"])
IF = sp.diag(p["IFxx"], p["IFyy"], p["IFxx"])
IB = (C_RB * inertia(p["IBxx"], p["IByy"], p["IBzz"], p["IBxz"]) * C_RB.T
      ).applyfunc(name)
IH = (C_FFb * inertia(p["IHxx"], p["IHyy"], p["IHzz"], p["IHxz"]) * C_FFb.T
      ).applyfunc(name)
bodies = [(p["mR"], vGR, wWR, aGR0, aWR0, wWRv, IR, nR),
          (p["mB"], vGB, wB, aGB0, aB0, wBv, IB, nR),
          (p["mH"], vGH, wF, aGH0, aF0, wFv, IH, nF),
          (p["mF"], vGF, wWF, aGF0, aWF0, wWFv, IF, nF)]
Gs, fs = {}, [0, 0, 0]
parts = []
for m, v, w, a0, al0, wv, inert, n in bodies:
    V = [partial(v, r) for r in U]
    W = [partial(w, r) for r in U]
    force = vname(m * (p["g"] * n - accel(v, a0)))
    al = accel(w, al0)
    torque = vname(inert * al + cross(wv, inert * wv))
    parts.append((m, V, W, inert))
    for i in range(3):
        fs[i] += dot(V[i], force) - dot(W[i], torque)
for i in range(3):
    for j in range(i, 3):
        Gs[i, j] = name(sum(m * dot(V[i], V[j]) + dot(W[i], inert * W[j])
                            for m, V, W, inert in parts), "G")
        Gs[j, i] = Gs[i, j]
fs = [name(x, "f") for x in fs]
HEIGHT = -rR * cph + dot(rBH, nR) + p["d3"] * nF[0] + rF / isq


# ---- evaluation ----------------------------------------------------------

def evaluate(values, dps=30):
    """Every row at VALUES (parameters, phi, theta, delta, u1..u3)."""
    mpmath.mp.dps = dps
    env = {k: mpmath.mpf(v) for k, v in values.items()}
    for s, arg in trig:
        fn = mpmath.cos if str(s).startswith("c_") else mpmath.sin
        env[str(s)] = fn(eval(arg, {}, env))
    ns = {"sqrt": mpmath.sqrt}
    for s, x in rows:
        env[str(s)] = eval(str(x), ns, env)
    return env


def kane(env):
    G = mpmath.matrix(3, 3)
    for (i, j), s in Gs.items():
        G[i, j] = eval(str(s), {}, env)
    return G, mpmath.matrix([eval(str(s), {}, env) for s in fs])


def run(args):
    r = subprocess.run([NH, "-q"] + args, cwd=EX, capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        sys.exit("FAIL: nh %s: %s" % (" ".join(args), r.stderr))
    return r.stdout


def joined(lines):
    out = []
    for ln in lines:
        if out and re.search(r"[-+*/,(]\s*$", out[-1]) and ln.startswith(" "):
            out[-1] = out[-1].rstrip() + " " + ln.strip()
        else:
            out.append(ln)
    return out


def nh_rows():
    """The where rows and the three equations of maggi's `show eom`."""
    lines = joined(run(["bicycle_model.nh", "-e", "equations maggi",
                        "-e", "show eom"]).split("\n"))
    defs, eqs = [], []
    for ln in lines[lines.index("where") + 1:]:
        m = re.match(r"^  (\w+) = (.*)$", ln)
        if m:
            defs.append((m.group(1), m.group(2)))
        elif "u1'" in ln and " = " in ln:
            eqs.append(ln.split(" = ", 1))
    return defs, eqs


def check_rows():
    defs, eqs = nh_rows()
    if len(eqs) != 3 or len(defs) < 30:
        fail("show eom: %d where rows and %d equations read" %
             (len(defs), len(eqs)))
        return
    py = lambda s: s.replace("^", "**")
    worst = 0.0
    rnd = random.Random(29)
    for trial in range(6):
        vals = {n: rnd.uniform(0.3, 1.3) for n in PARAMS}
        vals.update(phi=rnd.uniform(-0.6, 0.6), theta=rnd.uniform(-0.4, 0.4),
                    delta=rnd.uniform(-0.8, 0.8))
        vals.update({str(u): rnd.uniform(-2, 2) for u in U})
        env = {k: float(v) for k, v in vals.items()}
        env.update(sqrt=math.sqrt, cos=math.cos, sin=math.sin)
        for n, x in defs:
            env[n] = eval(py(x), env)
        Gn, fn = [[0.0] * 3 for _ in range(3)], [0.0] * 3
        for i, (left, right) in enumerate(eqs):
            for j in range(3):
                unit = {"U%d" % (k + 1): float(k == j) for k in range(3)}
                lhs = re.sub(r"u(\d)'", r"U\1", left)
                Gn[i][j] = eval(py(lhs), dict(env, **unit))
            fn[i] = eval(py(right), env)
        G, fv = kane(evaluate(vals))
        scale = max(max(abs(float(G[i, j])) for i in range(3)
                        for j in range(3)), max(abs(float(x)) for x in fv))
        for i in range(3):
            for j in range(3):
                d = abs(Gn[i][j] - float(G[i, j])) / scale
                worst = max(worst, d)
                if not d <= 1e-11:
                    fail("G[%d][%d]: nh %r, here %r (%s)" %
                         (i + 1, j + 1, Gn[i][j], float(G[i, j]), vals))
            d = abs(fn[i] - float(fv[i])) / scale
            worst = max(worst, d)
            if not d <= 1e-11:
                fail("f[%d]: nh %r, here %r (%s)" %
                     (i + 1, fn[i], float(fv[i]), vals))
    print("show eom against the body-frame derivation: %d where rows, "
          "6 states, largest difference / scale %.2g" % (len(defs), worst))


def example_params():
    """The parameters of examples/bicycle_model.nh, in its order."""
    env = {"pi": mpmath.pi, "cos": mpmath.cos, "sin": mpmath.sin,
           "tan": mpmath.tan, "sqrt": mpmath.sqrt}
    for ln in open(EX + "/bicycle_model.nh"):
        if ln.startswith("param "):
            for item in ln[6:].split("#")[0].split(","):
                k, v = item.split("=", 1)
                env[k.strip()] = eval(v.strip(), {}, env)
    return {n: env[n] for n in PARAMS}


def check_tapes():
    mpmath.mp.dps = 30
    par = example_params()
    rnd = random.Random(7)
    worst = 0.0
    for trial in range(4):
        phi, delta = rnd.uniform(-0.5, 0.5), rnd.uniform(-0.6, 0.6)
        us = [rnd.uniform(-1.5, 1.5), rnd.uniform(-1.5, 1.5),
              rnd.uniform(-16, -6)]
        # the pitch: the front contact's height, -rR cos(phi) + rBH.N.z +
        # d3 F.x.N.z + rF |(n1, n3)|, is 0
        def height(th):
            env = evaluate(dict(par, phi=phi, theta=th, delta=delta,
                                u1=0, u2=0, u3=0))
            return eval(str(HEIGHT), {"sqrt": mpmath.sqrt}, env)
        theta = mpmath.findroot(height, 0)
        vals = dict(par, phi=phi, theta=theta, delta=delta,
                    u1=us[0], u2=us[1], u3=us[2])
        env = evaluate(vals)
        G, fv = kane(env)
        zd = mpmath.lu_solve(G, fv)
        rates = [eval(str(x), {}, env) for x in (psv, thv, thFv)]
        dep = [eval(str(beta[k] + sum(Psi[r][k] * zd[i]
                                      for i, r in enumerate(U))), {}, env)
               for k in range(3)]
        out = run(["bicycle_model.nh", "-e", "equations maggi", "-e",
                   "initial phi = %r, delta = %r, phi' = %r, delta' = %r, "
                   "thR' = %r" % (phi, delta, us[0], us[1], us[2]),
                   "-e", "accel", "-e", "print theta, psi', theta', thF'"])
        got = dict(re.findall(r"^(\S+) = (\S+)$", out, re.M))
        want = {"theta": theta, "psi'": rates[0], "theta'": rates[1],
                "thF'": rates[2], "u1'": zd[0], "u2'": zd[1], "u3'": zd[2],
                "phi''": zd[0], "delta''": zd[1], "thR''": zd[2],
                "psi''": dep[0], "theta''": dep[1], "thF''": dep[2]}
        for k, v in want.items():
            if k not in got:
                fail("nh printed no %s" % k)
                continue
            d = abs(float(got[k]) - float(v)) / max(1.0, abs(float(v)))
            worst = max(worst, d)
            if not d <= 1e-10:
                fail("%s at phi = %r, delta = %r: nh %s, here %.17g" %
                     (k, phi, delta, got[k], float(v)))
    print("nh's tapes against the body-frame derivation: 4 states, 13 "
          "values each, largest relative difference %.2g" % worst)


def size():
    """Rows once every row used once is written where it is used."""
    body = dict(rows)
    order = [s for s, _ in rows]
    roots = set(x for x in list(Gs.values()) + fs if isinstance(x, sp.Symbol))
    changed = True
    while changed:
        changed = False
        uses = {s: 0 for s in order}
        for s in order:
            for a in body[s].free_symbols:
                if a in uses:
                    uses[a] += 1
        for s in order:
            if s in roots or uses[s] > 1:
                continue
            for t in order:
                if s in body[t].free_symbols:
                    body[t] = body[t].xreplace({s: body[s]})
            order.remove(s)
            del body[s]
            changed = True
            break
    text = ["  %s = %s" % (s, str(body[s]).replace("**", "^"))
            for s in order]
    print("\n".join(text))
    print("%d rows, %d characters right of '=' (%d with the names)" %
          (len(order), sum(len(str(body[s]).replace("**", "^"))
                           for s in order), sum(len(t) - 2 for t in text)))


if SIZE:
    size()
else:
    check_rows()
    check_tapes()
    if failures:
        sys.exit(1)
