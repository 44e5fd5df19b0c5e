#!/usr/bin/python3
# sympy_bicycle.py — the benchmark bicycle of examples/bicycle.nh derived
# independently with SymPy (sympy.physics.mechanics), for two uses:
#
#   /usr/bin/python3 bench/sympy_bicycle.py check
#       derives the equations twice — KanesMethod (Kane's equations with
#       the eight coordinates' rates as speeds, three of them independent)
#       and LagrangesMethod (Lagrange's equations with multipliers) — and
#       evaluates both at three generic states in 40-digit arithmetic
#       (mpmath), the pitch solved from the holonomic constraint by
#       sympy.nsolve; it stops when the two routes differ by more than
#       1e-25, or when KanesMethod's dependent speeds (its symbolic LU of
#       the velocity constraints, below) differ from a numerical solve.
#       Prints, per state, the nh statements of the state and the
#       accelerations: what examples/bicycle.nh pins (its Check 3).
#   /usr/bin/python3 bench/sympy_bicycle.py time
#       prints the seconds KanesMethod takes to derive the equations (from
#       the frames to mass_matrix_full and forcing_full), the figure that
#       `make bench` puts beside nh's derivation.  Exits 1 without SymPy.
#   /usr/bin/python3 bench/sympy_bicycle.py rhs
#       the peer of nh's compiled right-hand side: KanesMethod's
#       mass_matrix_full and forcing_full lambdified with common
#       subexpressions eliminated, solved in Python at a generic state;
#       prints the seconds to lambdify and of one right-hand side.
#   /usr/bin/python3 bench/sympy_bicycle.py linearize LIMIT
#       the peer row of `make bench` for `linearize`: KanesMethod.linearize
#       of the same model about running upright at v = 5 m/s, as a SymPy
#       user would, in a child process for at most LIMIT seconds; prints
#       one line: "ok SECONDS (STAGES)" when A was found, "failed SECONDS
#       (STAGES): MESSAGE" when SymPy raised an exception, "timeout
#       SECONDS (STAGES)" when it was still running at the limit.  STAGES
#       says how long each step took that finished (the model built,
#       Kane's equations formed, the linearization).
#
# The model is examples/bicycle.nh's, written again here from the paper
# (Meijaard, Papadopoulos, Ruina, Schwab, Proc. R. Soc. A 463 (2007),
# Table 1) and not from nh's output: axes x forward, y right, z down; the
# same frames (yaw psi about z, roll phi about x, pitch theta about y,
# the steer axis tilted by lam, steer delta, the fork's inertia axes
# turned back by -lam, the wheels' rotations thR, thF), the same
# coordinates in the same order, the front contact as the lowest point of
# the front wheel's rim, gravity along +z.
#
# The dependent speeds.  SymPy's KanesMethod (1.11) solves the velocity
# constraints B_dep u_dep = -B_ind u_ind symbolically by LU without
# recognising a pivot that is zero only after simplification (SymPy issues
# 24780 and 9641: the bicycle's linearisation came out wrong).  Here the
# constraints are written on the yaw frame's axes (no psi where none
# belongs) and ordered with the dependent speeds so that every leading
# principal minor of B_dep is nonzero at generic states: then LU takes the
# diagonal pivots, none of them zero, and its answer is right.  The
# script checks this — the minors at the three states, and the symbolic
# Ars against an mpmath solve of B at each state — and fails otherwise.
# LagrangesMethod does not solve for dependent speeds at all (its
# multipliers join the unknowns), which is why it is the second route.
import sys
import time

try:
    import sympy as sp
    import mpmath
    from sympy.physics.mechanics import (KanesMethod, LagrangesMethod,
                                         Point, ReferenceFrame, RigidBody,
                                         dynamicsymbols, inertia,
                                         kinetic_energy, msubs)
except ImportError:
    sys.exit(1)

DIGITS = 40

# Table 1 of Meijaard et al. 2007, as written in examples/bicycle.nh.
PARAMS = {
    "w": "1.02", "c": "0.08", "g": "9.81",
    "rR": "0.3", "mR": "2", "IRxx": "0.0603", "IRyy": "0.12",
    "rF": "0.35", "mF": "3", "IFxx": "0.1405", "IFyy": "0.28",
    "xB": "0.3", "zB": "-0.9", "mB": "85", "IBxx": "9.2", "IByy": "11",
    "IBzz": "2.8", "IBxz": "2.4",
    "xH": "0.9", "zH": "-0.7", "mH": "4", "IHxx": "0.05892", "IHyy": "0.06",
    "IHzz": "0.00708", "IHxz": "-0.00756",
}
NAMES = ["x", "y", "psi", "phi", "theta", "delta", "thR", "thF"]


def model():
    """The bicycle: frames, bodies, constraints; all symbolic."""
    t = dynamicsymbols._t
    P = {k: sp.Symbol(k) for k in PARAMS}
    lam = sp.Symbol("lam")  # pi/10, kept a symbol as nh keeps it
    x, y, psi, phi, theta, delta, thR, thF = q = dynamicsymbols(NAMES)
    w, c, rR, rF = P["w"], P["c"], P["rR"], P["rF"]
    # The steer axis passes d1 ahead of the rear wheel's centre (measured
    # normal to it), the front wheel's centre lies d3 ahead of it (the
    # fork offset), and d2 is the length of axis between the feet of the
    # two normals: from the wheelbase w, the trail c and the radii.
    d1 = sp.cos(lam) * (w + c - rR * sp.tan(lam))
    d3 = -sp.cos(lam) * (c - rF * sp.tan(lam))
    d2 = (w - (d1 + d3) * sp.cos(lam)) / sp.sin(lam)

    N = ReferenceFrame("N")
    Y = N.orientnew("Y", "Axis", (psi, N.z))
    R = Y.orientnew("R", "Axis", (phi, Y.x))
    B = R.orientnew("B", "Axis", (theta, R.y))
    H = B.orientnew("H", "Axis", (lam, B.y))
    F = H.orientnew("F", "Axis", (delta, H.z))
    Fb = F.orientnew("Fb", "Axis", (-lam, F.y))
    WR = B.orientnew("WR", "Axis", (thR, B.y))
    WF = F.orientnew("WF", "Axis", (thF, F.y))

    # Positions from a fixed origin, velocities as their derivatives in N.
    rP = x * N.x + y * N.y                      # rear contact
    rGR = rP - rR * R.z                         # rear wheel centre
    rGF = rGR + d1 * H.x + d2 * H.z + d3 * F.x  # front wheel centre
    # The front wheel's lowest point: from its centre, rF along the
    # downward vertical projected on the wheel's plane (normal F.y).
    dn = N.z - (N.z & F.y) * F.y
    rQF = rGF + rF * dn / sp.sqrt(1 - (N.z & F.y) ** 2)
    rGB = rGR + P["xB"] * B.x + (P["zB"] + rR) * B.z
    rGH = rGF + (P["xH"] - w) * Fb.x + (P["zH"] + rF) * Fb.z

    O = Point("O")
    O.set_vel(N, 0)
    pts = {}
    for name, r in (("GR", rGR), ("GF", rGF), ("GB", rGB), ("GH", rGH)):
        p = O.locatenew(name, r)
        p.set_vel(N, r.dt(N))
        pts[name] = p
    bodies = [
        RigidBody("rear_wheel", pts["GR"], WR, P["mR"],
                  (inertia(WR, P["IRxx"], P["IRyy"], P["IRxx"]), pts["GR"])),
        # inertia(frame, ixx, iyy, izz, ixy, iyz, izx): matrix entries;
        # the paper's I_Bxz is the (z, x) entry.
        RigidBody("rear_frame", pts["GB"], B, P["mB"],
                  (inertia(B, P["IBxx"], P["IByy"], P["IBzz"], 0, 0,
                           P["IBxz"]), pts["GB"])),
        RigidBody("fork", pts["GH"], Fb, P["mH"],
                  (inertia(Fb, P["IHxx"], P["IHyy"], P["IHzz"], 0, 0,
                           P["IHxz"]), pts["GH"])),
        RigidBody("front_wheel", pts["GF"], WF, P["mF"],
                  (inertia(WF, P["IFxx"], P["IFyy"], P["IFxx"]), pts["GF"])),
    ]
    weights = [(b.masscenter, b.mass * P["g"] * N.z) for b in bodies]

    # Rolling: the material points of the wheels at the contacts have no
    # velocity; components on the yaw frame's horizontal axes.
    vP = rGR.dt(N) + WR.ang_vel_in(N).cross(rP - rGR)
    vQ = rGF.dt(N) + WF.ang_vel_in(N).cross(rQF - rGF)
    height = (rQF & N.z)                # the front contact's height: 0
    rolling = [vP & Y.x, vP & Y.y, vQ & Y.x, vQ & Y.y]
    symbols = [P[k] for k in PARAMS] + [lam]
    return dict(t=t, q=q, N=N, bodies=bodies, loads=weights, height=height,
                rolling=rolling, symbols=symbols, P=P, lam=lam,
                centres=[rGR, rGB, rGH, rGF])


# Kane: speeds u_i = q_i', independent phi', delta', thR'; the order of the
# dependent speeds and of the constraints puts a nonzero pivot on B_dep's
# diagonal (checked in check_pivots).
IND = ["phi", "delta", "thR"]
DEP = ["x", "y", "theta", "psi", "thF"]


def kane(m):
    t, q = m["t"], m["q"]
    u = dict(zip(NAMES, dynamicsymbols(["u_" + n for n in NAMES])))
    qn = dict(zip(NAMES, q))
    kd = [u[n] - qn[n].diff(t) for n in NAMES]
    qd_u = {qn[n].diff(t): u[n] for n in NAMES}
    # rear along Y.x, rear along Y.y, the height's rate, front along Y.x,
    # front along Y.y: rows for x', y', theta', psi', thF'.
    vel = [m["rolling"][0], m["rolling"][1], m["height"].diff(t),
           m["rolling"][2], m["rolling"][3]]
    vel = [msubs(v, qd_u) for v in vel]
    km = KanesMethod(m["N"], q_ind=[qn[n] for n in NAMES if n != "theta"],
                     u_ind=[u[n] for n in IND], kd_eqs=kd,
                     q_dependent=[qn["theta"]],
                     configuration_constraints=[m["height"]],
                     u_dependent=[u[n] for n in DEP],
                     velocity_constraints=vel)
    km.kanes_equations(m["bodies"], m["loads"])
    return km, u


def lagrange(m):
    """Lagrange's equations with multipliers: L = T - V, V = -sum m g.r."""
    T = kinetic_energy(m["N"], *m["bodies"])
    V = -sum(b.mass * m["P"]["g"] * (r & m["N"].z)
             for b, r in zip(m["bodies"], m["centres"]))
    lm = LagrangesMethod(T - V, m["q"], hol_coneqs=[m["height"]],
                         nonhol_coneqs=m["rolling"], frame=m["N"])
    lm.form_lagranges_equations()
    return lm


# Three generic states: coordinates but the pitch, and the independent
# rates phi', delta', thR' (the rear wheel turning backwards: riding
# forwards at 2.4 to 6 m/s).  Leaning and steering well away from upright,
# where the linearisation of examples/bicycle.nh's Check 1 says nothing.
STATES = [
    dict(x="0.3", y="-0.7", psi="0.9", phi="-0.2", delta="0.4",
         thR="1.3", thF="-2.1", phid="0.3", deltad="-0.7", thRd="-15"),
    dict(x="-1.2", y="0.4", psi="-2.5", phi="0.35", delta="-0.8",
         thR="-0.6", thF="0.25", phid="-1.1", deltad="1.9", thRd="-8"),
    dict(x="2", y="3", psi="0.1", phi="0.6", delta="0.15",
         thR="4", thF="-5", phid="0.8", deltad="-0.35", thRd="-20"),
]


class Plain:
    """The functions of time and their derivatives as plain symbols, so
    that expressions can be lambdified and evaluated with mpmath."""

    def __init__(self, m, km_u=None):
        t = m["t"]
        self.q = [sp.Symbol(n) for n in NAMES]
        self.qd = [sp.Symbol(n + "_d") for n in NAMES]
        self.qdd = [sp.Symbol(n + "_dd") for n in NAMES]
        self.map = {}
        for f, a, b, c in zip(m["q"], self.q, self.qd, self.qdd):
            self.map[f.diff(t, 2)] = c
            self.map[f.diff(t)] = b
        self.u = []
        if km_u:
            for n in NAMES:
                s = sp.Symbol("u_" + n)
                self.map[km_u[n].diff(t)] = sp.Symbol("u_" + n + "_d")
                self.map[km_u[n]] = s
                self.u.append(s)
        for f, a in zip(m["q"], self.q):
            self.map[f] = a
        self.args = self.q + self.qd + self.u + m["symbols"]

    def compile(self, exprs):
        plain = [msubs(e, self.map) for e in exprs]
        return sp.lambdify(self.args, plain, modules="mpmath", cse=True)


def param_values():
    return [mpmath.mpf(v) for v in PARAMS.values()] + [mpmath.pi / 10]


def solve_pitch(m, st):
    """The pitch that puts the front wheel on the ground (nsolve, from the
    upright value 0)."""
    pl = Plain(m)
    vals = {pl.q[i]: sp.Float(st[n], DIGITS) for i, n in enumerate(NAMES)
            if n != "theta"}
    vals.update({s: sp.Float(v, DIGITS) for s, v in zip(
        m["symbols"], PARAMS.values())})
    vals[m["lam"]] = sp.pi / 10
    h = msubs(m["height"], pl.map).subs(vals)
    th = sp.nsolve(h, pl.q[NAMES.index("theta")], 0, prec=DIGITS)
    return mpmath.mpf(str(th))


def wrap(head, items, sep):
    """nh text: HEAD, then ITEMS joined by SEP, lines broken after SEP
    (where a statement goes on) at 78 columns."""
    lines, line = [], head
    for i, it in enumerate(items):
        piece = it + (sep if i + 1 < len(items) else "")
        if len(line) + len(piece) + 1 > 78 and line.strip():
            lines.append(line.rstrip())
            line = "    "
        line += piece + " "
    lines.append(line.rstrip())
    return "\n".join(lines)


def check():
    mpmath.mp.dps = DIGITS
    m = model()
    km, u = kane(m)
    lm = lagrange(m)
    pk = Plain(m, u)
    o, p = len(NAMES), len(IND)
    ku = [km._k_nh, km._f_nh, km._Ars, km.mass_matrix, km.forcing]
    fk = pk.compile([sp.Matrix(e) for e in ku])
    pl = Plain(m)
    fl = pl.compile([lm.mass_matrix, lm.forcing, lm._m_cd, lm._f_cd])
    uorder = IND + DEP  # KanesMethod's u: independent, then dependent
    worst = 0
    print("# bench/sympy_bicycle.py check, SymPy %s, mpmath %s, %d digits"
          % (sp.__version__, mpmath.__version__, DIGITS))
    sys.stdout.flush()
    for k, st in enumerate(STATES):
        qv = {n: mpmath.mpf(st[n]) for n in NAMES if n != "theta"}
        qv["theta"] = solve_pitch(m, st)
        ui = {"phi": mpmath.mpf(st["phid"]), "delta": mpmath.mpf(
            st["deltad"]), "thR": mpmath.mpf(st["thRd"])}
        # the dependent speeds from the velocity constraints, numerically
        args0 = ([qv[n] for n in NAMES] + [0] * o +
                 [ui.get(n, 0) for n in NAMES] + param_values())
        K, f0, Ars, _, _ = [mpmath.matrix(a) for a in fk(*args0)]
        # K's columns are KanesMethod's u: independent, then dependent
        Kdep = mpmath.matrix([[K[r, p + j] for j in range(o - p)]
                              for r in range(o - p)])
        Kind = mpmath.matrix([[K[r, j] for j in range(p)]
                              for r in range(o - p)])
        assert max(abs(x) for x in f0) == 0
        # LU takes the diagonal pivots only when the leading minors of
        # B_dep are nonzero: then SymPy's symbolic Ars is right.
        for r in range(1, o - p + 1):
            minor = mpmath.det(Kdep[:r, :r])
            if abs(minor) < mpmath.mpf("1e-8"):
                raise SystemExit("state %d: leading minor %d of B_dep is %s"
                                 % (k + 1, r, minor))
        Ars_num = mpmath.matrix(o - p, p)
        for j in range(p):
            colj = -mpmath.lu_solve(Kdep, Kind[:, j])
            for i in range(o - p):
                Ars_num[i, j] = colj[i]
        err = max(abs(Ars[i, j] - Ars_num[i, j]) for i in range(o - p)
                  for j in range(p))
        if err > mpmath.mpf("1e-30"):
            raise SystemExit("state %d: KanesMethod's Ars is off by %s"
                             % (k + 1, err))
        udep = Ars_num * mpmath.matrix([ui[n] for n in IND])
        uv = dict(ui)
        for j, n in enumerate(DEP):
            uv[n] = udep[j]
        # Kane: mass_matrix u' = forcing, u' in KanesMethod's order
        args = ([qv[n] for n in NAMES] + [uv[n] for n in NAMES] +
                [uv[n] for n in NAMES] + param_values())
        _, _, _, MM, FF = [mpmath.matrix(a) for a in fk(*args)]
        ud = mpmath.lu_solve(MM, FF)
        qdd_k = {n: ud[i] for i, n in enumerate(uorder)}
        # Lagrange with multipliers: [M, -A^T; A', 0] [q''; lam] = [f; fc]
        argl = ([qv[n] for n in NAMES] + [uv[n] for n in NAMES] +
                param_values())
        Md, fd, Mc, fc = [mpmath.matrix(a) for a in fl(*argl)]
        r = Mc.rows
        A = mpmath.matrix(o + r, o + r)
        b = mpmath.matrix(o + r, 1)
        for i in range(o):
            for j in range(o + r):
                A[i, j] = Md[i, j]
            b[i] = fd[i]
        for a in range(r):
            for j in range(o):
                A[o + a, j] = Mc[a, j]
            b[o + a] = fc[a]
        sol = mpmath.lu_solve(A, b)
        qdd_l = {n: sol[i] for i, n in enumerate(NAMES)}
        diff = max(abs(qdd_k[n] - qdd_l[n]) for n in NAMES)
        worst = max(worst, diff)
        if diff > mpmath.mpf("1e-25"):
            raise SystemExit("state %d: Kane and Lagrange differ by %s"
                             % (k + 1, diff))
        print("# state %d: KanesMethod - LagrangesMethod = %s"
              % (k + 1, mpmath.nstr(diff, 3)))
        items = ["%s = %s" % (n, mpmath.nstr(qv[n], 20)) for n in NAMES]
        items += ["%s' = %s" % (n, mpmath.nstr(uv[n], 20)) for n in NAMES]
        print(wrap("initial ", items, ","))
        terms = []
        for n in NAMES:
            v = qdd_k[n]
            terms.append("abs(%s'' %s %s)" % (n, "-" if v >= 0 else "+",
                                              mpmath.nstr(abs(v), 20)))
        print(wrap("let dev%d = " % (k + 1), terms, " +"))


def linearize(result):
    """KanesMethod.linearize about upright at v = 5 m/s, its stages and
    its end (or SymPy's exception, which is the measurement) into RESULT."""
    t0 = time.time()
    try:
        m = model()
        result.put(("stage", "built", time.time() - t0))
        t1 = time.time()
        km, u = kane(m)
        result.put(("stage", "kanes_equations", time.time() - t1))
        t1 = time.time()
        v = 5
        vals = {m["P"][k]: sp.Rational(PARAMS[k]) for k in PARAMS}
        vals[m["lam"]] = sp.pi / 10
        op = dict(vals)
        op.update({qi: 0 for qi in m["q"]})
        op.update({ui: 0 for ui in u.values()})
        op[u["x"]] = v                          # x' = v
        op[u["thR"]] = -v / vals[m["P"]["rR"]]  # the wheels roll
        op[u["thF"]] = -v / vals[m["P"]["rF"]]
        op.update({ui.diff(m["t"]): 0 for ui in u.values()})
        A, _, _ = km.linearize(op_point=op, A_and_B=True, simplify=False)
        sp.Matrix(A).evalf()
        result.put(("stage", "linearize", time.time() - t1))
        result.put(("ok", time.time() - t0, ""))
    except Exception as e:
        msg = (type(e).__name__ + ": " + str(e)).replace("\n", " ")[:200]
        result.put(("failed", time.time() - t0, msg))


def linearize_limited(limit):
    """linearize() in a child process for at most LIMIT seconds."""
    import multiprocessing as mp
    result = mp.Queue()
    p = mp.Process(target=linearize, args=(result,))
    t0 = time.time()
    p.start()
    p.join(limit)
    timed_out = p.is_alive()
    if timed_out:
        p.terminate()
        p.join()
    stages, end = [], None
    while True:
        try:
            item = result.get(timeout=0.1)
        except Exception:
            break
        if item[0] == "stage":
            stages.append("%s %.1f s" % (item[1], item[2]))
        else:
            end = item
    done = "(" + (", ".join(stages) if stages else "nothing finished") + ")"
    if timed_out:
        print("timeout %.1f %s" % (time.time() - t0, done))
    elif end is None:
        print("failed %.1f %s: the process died (exit %s)"
              % (time.time() - t0, done, p.exitcode))
    elif end[0] == "ok":
        print("ok %.1f %s" % (end[1], done))
    else:
        print("failed %.1f %s: %s" % (end[1], done, end[2]))


def gauss(A, b):
    """x with A x = b, by Gaussian elimination with partial pivoting on
    lists of floats (what a SymPy user without NumPy writes)."""
    n = len(b)
    A = [list(r) + [b[i]] for i, r in enumerate(A)]
    for k in range(n):
        p = max(range(k, n), key=lambda i: abs(A[i][k]))
        A[k], A[p] = A[p], A[k]
        for i in range(k + 1, n):
            f = A[i][k] / A[k][k]
            if f:
                for j in range(k, n + 1):
                    A[i][j] -= f * A[k][j]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (A[i][n] - sum(A[i][j] * x[j] for j in range(i + 1, n))) / A[i][i]
    return x


def rhs_peer():
    """The peer of nh's compiled right-hand side (issue 17): KanesMethod's
    mass_matrix_full and forcing_full lambdified with common
    subexpressions eliminated (cse=True, the math module), and one
    right-hand side M_full^-1 F_full solved in Python, at STATES[0] with
    its pitch on the ground (the dependent speeds need not satisfy the
    constraints to time the call).  Prints the seconds to lambdify and the
    seconds of one right-hand side (the best of five batches)."""
    m = model()
    km, u = kane(m)
    M, F = km.mass_matrix_full, km.forcing_full
    pl = Plain(m, u)
    args = pl.q + pl.u + m["symbols"]
    plain = [msubs(M, pl.map).tolist(), list(msubs(F, pl.map))]
    t0 = time.perf_counter()
    f = sp.lambdify(args, plain, modules="math", cse=True)
    build = time.perf_counter() - t0
    st = STATES[0]
    mpmath.mp.dps = DIGITS
    theta = float(solve_pitch(m, st))
    q = [theta if n == "theta" else float(st[n]) for n in NAMES]
    rates = {"phi": float(st["phid"]), "delta": float(st["deltad"]),
             "thR": float(st["thRd"])}
    us = [rates.get(n, 0.1 * (k + 1)) for k, n in enumerate(NAMES)]
    vals = q + us + [float(v) for v in param_values()]

    def one():
        Mv, Fv = f(*vals)
        return gauss(Mv, Fv)

    one()
    reps, best = 50, float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            one()
        best = min(best, (time.perf_counter() - t0) / reps)
    print(build, best)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "check"
    if mode == "check":
        check()
        return
    if mode == "time":
        times = []
        for _ in range(2):
            sp.core.cache.clear_cache()
            t0 = time.perf_counter()
            km, _ = kane(model())
            km.mass_matrix_full, km.forcing_full
            times.append(time.perf_counter() - t0)
        print(min(times))
        return
    if mode == "linearize":
        limit = float(sys.argv[2]) if len(sys.argv) > 2 else 300.0
        linearize_limited(limit)
        return
    if mode == "rhs":
        rhs_peer()
        return
    raise SystemExit("unknown mode")


if __name__ == "__main__":
    main()
