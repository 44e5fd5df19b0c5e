#!/usr/bin/env python3
# sympy_bicycle.py — the peer row of `make bench` for `linearize`: the
# benchmark bicycle of examples/bicycle_model.nh (Meijaard, Papadopoulos,
# Ruina and Schwab 2007: four rigid bodies, knife-edge wheels rolling on
# level ground, the pitch fixed by the front contact's height) built with
# sympy.physics.mechanics the way nh builds it — the same frames turned
# by the same angles, the same contact points, the same constraints — and
# linearized with SymPy's own KanesMethod.linearize about running upright
# at v = 5 m/s, as a SymPy user would.
#
# Usage: sympy_bicycle.py LIMIT.  Runs the linearization in a child
# process for at most LIMIT seconds and prints one line for bench.c:
#   ok SECONDS STAGES        the linearization finished (A was found)
#   failed SECONDS STAGES: MESSAGE   it raised an exception
#   timeout SECONDS STAGES   it was still running at the limit
# STAGES says how long each step took that finished: the model built,
# Kane's equations formed (kanes_equations), the linearization.
# Exits 1 when SymPy is not installed (bench.c then leaves the row out).
import multiprocessing as mp
import sys
import time

try:
    import sympy as sp
    import sympy.physics.mechanics as me
except ImportError:
    sys.exit(1)


def build():
    """The bicycle's KanesMethod, its bodies and loads, and the names."""
    # Table 1 of the paper, as examples/bicycle_model.nh has them.
    w, c, lam, g = sp.Rational(102, 100), sp.Rational(8, 100), sp.pi / 10, sp.Rational(981, 100)
    rR, mR, IRxx, IRyy = sp.Rational(3, 10), 2, sp.Rational(603, 10000), sp.Rational(12, 100)
    rF, mF, IFxx, IFyy = sp.Rational(35, 100), 3, sp.Rational(1405, 10000), sp.Rational(28, 100)
    xB, zB, mB = sp.Rational(3, 10), sp.Rational(-9, 10), 85
    IBxx, IByy, IBzz, IBxz = sp.Rational(92, 10), 11, sp.Rational(28, 10), sp.Rational(24, 10)
    xH, zH, mH = sp.Rational(9, 10), sp.Rational(-7, 10), 4
    IHxx, IHyy, IHzz, IHxz = (sp.Rational(5892, 100000), sp.Rational(6, 100),
                              sp.Rational(708, 100000), sp.Rational(-756, 100000))
    d1 = sp.cos(lam) * (w + c - rR * sp.tan(lam))
    d3 = -sp.cos(lam) * (c - rF * sp.tan(lam))
    d2 = (w - (d1 + d3) * sp.cos(lam)) / sp.sin(lam)

    q = me.dynamicsymbols("x y psi phi theta delta thR thF")
    u = me.dynamicsymbols("ux uy upsi uphi utheta udelta uthR uthF")
    x, y, psi, phi, theta, delta, thR, thF = q

    N = me.ReferenceFrame("N")
    Y = N.orientnew("Y", "Axis", [psi, N.z])
    R = Y.orientnew("R", "Axis", [phi, Y.x])
    B = R.orientnew("B", "Axis", [theta, R.y])
    H = B.orientnew("H", "Axis", [lam, B.y])
    F = H.orientnew("F", "Axis", [delta, H.z])
    Fb = F.orientnew("Fb", "Axis", [-lam, F.y])
    WR = B.orientnew("WR", "Axis", [thR, B.y])
    WF = F.orientnew("WF", "Axis", [thF, F.y])

    O = me.Point("O")
    O.set_vel(N, 0)
    P = O.locatenew("P", x * N.x + y * N.y)
    GR = P.locatenew("GR", -rR * R.z)
    GF = GR.locatenew("GF", d1 * H.x + d2 * H.z + d3 * F.x)
    dn = N.z - me.dot(N.z, F.y) * F.y
    QF = GF.locatenew("QF", rF * dn / dn.magnitude())
    GB = GR.locatenew("GB", xB * B.x + (zB + rR) * B.z)
    GH = GF.locatenew("GH", (xH - w) * Fb.x + (zH + rF) * Fb.z)

    qd = [qi.diff() for qi in q]
    to_u = dict(zip(qd, u))
    kd = [qdi - ui for qdi, ui in zip(qd, u)]

    def vel(pt):
        return pt.pos_from(O).dt(N).subs(to_u)

    # the material points of the wheels at the contacts
    vP = vel(GR) + me.cross(WR.ang_vel_in(N).subs(to_u), P.pos_from(GR))
    vQ = vel(GF) + me.cross(WF.ang_vel_in(N).subs(to_u), QF.pos_from(GF))
    for pt in (GR, GF, GB, GH):
        pt.set_vel(N, vel(pt))
    for fr in (WR, WF, B, Fb):
        fr.set_ang_vel(N, fr.ang_vel_in(N).subs(to_u))

    # the pitch: the front contact's height; its rate joins the rolling
    # conditions among the velocity constraints
    hol = [me.dot(QF.pos_from(O), N.z)]
    nonhol = [me.dot(vP, N.x), me.dot(vP, N.y), me.dot(vQ, N.x), me.dot(vQ, N.y),
              sum(sp.diff(hol[0], qi) * ui for qi, ui in zip(q, u))]

    bodies = [
        me.RigidBody("rear_wheel", GR, WR, mR, (me.inertia(WR, IRxx, IRyy, IRxx), GR)),
        me.RigidBody("rear_frame", GB, B, mB, (me.inertia(B, IBxx, IByy, IBzz, 0, 0, IBxz), GB)),
        me.RigidBody("fork", GH, Fb, mH, (me.inertia(Fb, IHxx, IHyy, IHzz, 0, 0, IHxz), GH)),
        me.RigidBody("front_wheel", GF, WF, mF, (me.inertia(WF, IFxx, IFyy, IFxx), GF)),
    ]
    loads = [(b.masscenter, b.mass * g * N.z) for b in bodies]

    q_ind = [x, y, psi, phi, delta, thR, thF]
    q_dep = [theta]
    u_ind = [u[3], u[5], u[6]]
    u_dep = [u[0], u[1], u[2], u[4], u[7]]
    kane = me.KanesMethod(N, q_ind, u_ind, kd_eqs=kd, q_dependent=q_dep,
                          configuration_constraints=hol, u_dependent=u_dep,
                          velocity_constraints=nonhol)
    return kane, bodies, loads, q, u, rR


def linearize(result):
    t0 = time.time()
    try:
        kane, bodies, loads, q, u, rR = build()
        result.put(("stage", "built", time.time() - t0))
        t1 = time.time()
        kane.kanes_equations(bodies, loads)
        result.put(("stage", "kanes_equations", time.time() - t1))
        t1 = time.time()
        v = 5
        op = {qi: 0 for qi in q}
        speeds = {ui: 0 for ui in u}
        speeds[u[6]] = -v / rR          # the rear wheel
        speeds[u[7]] = -v / sp.Rational(35, 100)  # the front wheel
        speeds[u[0]] = v                # x' = v
        op.update(speeds)
        op.update({ui.diff(): 0 for ui in u})
        A, _, _ = kane.linearize(op_point=op, A_and_B=True, simplify=False)
        A = sp.Matrix(A).evalf()
        result.put(("stage", "linearize", time.time() - t1))
        result.put(("ok", time.time() - t0, ""))
    except Exception as e:  # SymPy's failure is the measurement
        msg = (type(e).__name__ + ": " + str(e)).replace("\n", " ")[:200]
        result.put(("failed", time.time() - t0, msg))


def main():
    limit = float(sys.argv[1]) if len(sys.argv) > 1 else 300.0
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


if __name__ == "__main__":
    main()
