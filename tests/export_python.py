#!/usr/bin/env python3
"""export python (LANGUAGE.md §8.2) as a user meets it: nh writes a module,
SciPy integrates it, and the numbers must be nh's.  Run by
tests/export_python.sh with NH (the binary) and SRC (the source tree).

For the rolling sphere (examples/rolling_sphere.nh: multipliers,
voronec, and maggi and gibbs_appell with speeds and kinematic equations)
and the benchmark bicycle (examples/bicycle_model.nh: multipliers,
maggi):
  * solve_ivp (DOP853, rtol 1e-12, atol 1e-14) with the module's rhs,
    from nh's state, reproduces nh's `simulate` (rk8pd, the same
    tolerances) to 1e-9 relative to the state's scale;
  * jacobian equals central differences of rhs to 1e-7 of the row's scale,
    at the initial state, the final one and a state off the constraints;
    with jac= it drives an implicit solver (Radau) to the same end;
  * monitors: the constraints' residuals vanish on nh's state and the
    energy is conserved along the run (1e-9);
  * the names and sizes are the model's.
Then the bicycle with inputs (examples/bicycle_control.nh): p holds the
parameters, then the inputs; with T_delta = 1 the module's accelerations
are nh's after `set Tdelta = 1`.  The build cache is used on the second
import (no new object), and without a compiler the import is an
ImportError that says so.
"""
import atexit
import importlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from scipy.integrate import solve_ivp

NH = os.environ["NH"]
SRC = os.environ.get("SRC", ".")
TMP = tempfile.mkdtemp(prefix="nh-export-python-")
atexit.register(shutil.rmtree, TMP, True)
CACHE = os.path.join(TMP, "cache")
os.environ["XDG_CACHE_HOME"] = CACHE
sys.path.insert(0, TMP)
failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL: " + msg)


def nh(example, stmts):
    """Runs nh -q on EXAMPLE (in examples/) then STMTS; its output."""
    args = [NH, "-q", example]
    for s in stmts:
        args += ["-e", s]
    r = subprocess.run(args, cwd=os.path.join(SRC, "examples"),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if r.returncode != 0:
        raise RuntimeError("nh %s: %s" % (example, r.stderr.strip()))
    return r.stdout


def values(text, names):
    """The numbers of `print` lines NAME = VALUE, in the order of NAMES."""
    got = {}
    for line in text.splitlines():
        m = re.fullmatch(r"(.+?) = (-?[0-9.]+(?:e[-+]?[0-9]+)?)", line)
        if m:
            got[m.group(1)] = float(m.group(2))
    return np.array([got[n] for n in names])


def load(name):
    if name in sys.modules:
        del sys.modules[name]
    return importlib.import_module(name)


def central(mod, t, y, p=None):
    """The Jacobian by central differences, column by column."""
    n = len(y)
    J = np.empty((n, n))
    for j in range(n):
        h = 1e-6 * max(1.0, abs(y[j]))
        e = np.zeros(n)
        e[j] = h
        J[:, j] = (mod.rhs(t, y + e, p) - mod.rhs(t, y - e, p)) / (2 * h)
    return J


def check_jacobian(tag, mod, t, y):
    J = mod.jacobian(t, y)
    Jc = central(mod, t, y)
    worst = 0.0
    for i in range(len(y)):
        scale = max(1.0, np.abs(Jc[i]).max())
        worst = max(worst, np.abs(J[i] - Jc[i]).max() / scale)
    if not worst <= 1e-7:
        fail("%s: jacobian differs from central differences by %.3g" %
             (tag, worst))
    return worst


def case(tag, example, setup, method, T):
    """Exports EXAMPLE after SETUP with METHOD, and checks the module."""
    modname = "m_" + re.sub(r"\W", "_", tag)
    path = os.path.join(TMP, modname + ".py")
    stmts = setup + ["export python \"%s\"" % path]
    nh(example, stmts)
    mod = load(modname)
    names = mod.state_names
    state = ", ".join(names)
    before = nh(example, setup + ["print " + state])
    after = nh(example, setup + ["simulate to %g rtol 1e-12 atol 1e-14" % T,
                                 "print " + state])
    y0, y1 = values(before, names), values(after, names)
    if mod.method != method:
        fail("%s: method %s, not %s" % (tag, mod.method, method))
    sol = solve_ivp(mod.rhs, (0, T), y0, method="DOP853", rtol=1e-12,
                    atol=1e-14)
    if not sol.success:
        fail("%s: solve_ivp: %s" % (tag, sol.message))
        return
    scale = max(1.0, np.abs(y1).max())
    diff = np.abs(sol.y[:, -1] - y1).max() / scale
    if not diff <= 1e-9:
        fail("%s: solve_ivp ends %.3g from nh's simulate" % (tag, diff))
    jw = max(check_jacobian(tag, mod, 0.0, y0),
             check_jacobian(tag, mod, T, y1),
             check_jacobian(tag, mod, 0.3, y0 + 0.01 * np.cos(np.arange(len(y0)))))
    # an implicit solver with the exact Jacobian reaches the same state
    short = min(T, 1.0)
    a = solve_ivp(mod.rhs, (0, short), y0, method="Radau", rtol=1e-10,
                  atol=1e-12, jac=mod.jacobian)
    b = solve_ivp(mod.rhs, (0, short), y0, method="DOP853", rtol=1e-12,
                  atol=1e-14)
    if not (a.success and np.abs(a.y[:, -1] - b.y[:, -1]).max() <= 1e-7 *
            max(1.0, np.abs(b.y[:, -1]).max())):
        fail("%s: Radau with jac=jacobian does not reach DOP853's state" % tag)
    m0 = mod.monitors(0.0, y0)
    m1 = mod.monitors(T, sol.y[:, -1])
    r = len(mod.constraint_names)
    if mod.monitor_names != mod.constraint_names + ["energy"]:
        fail("%s: monitor_names %r" % (tag, mod.monitor_names))
    if not np.abs(m0[:r]).max(initial=0) <= 1e-12:
        fail("%s: residuals %r on nh's state" % (tag, m0[:r]))
    drift = abs(m1[r] - m0[r]) / max(1.0, abs(m0[r]))
    if not drift <= 1e-9:
        fail("%s: energy drifts by %.3g" % (tag, drift))
    print("%-28s end %.2g, jacobian %.2g, energy drift %.2g" %
          (tag, diff, jw, drift))
    return mod


# ---- the rolling sphere ------------------------------------------------------

sphere_init = "initial theta = 1, phi' = 0.7, theta' = 0.3, psi' = 1.1"
for method in ("multipliers", "voronec"):
    case("sphere " + method, "rolling_sphere.nh",
         ["equations " + method, sphere_init], method, 5)
speeds = ["speed w1, w2, w3",
          "kinematic phi' = w1", "kinematic theta' = w2",
          "kinematic psi' = w3",
          "kinematic x' = R*w2*sin(phi) - R*w3*sin(theta)*cos(phi)",
          "kinematic y' = -R*w2*cos(phi) - R*w3*sin(theta)*sin(phi)"]
for method in ("maggi", "gibbs_appell"):
    mod = case("sphere " + method, "rolling_sphere.nh",
               speeds + ["equations " + method,
                         "initial theta = 1, w1 = 0.7, w2 = 0.3, w3 = 1.1"],
               method, 5)
if mod and mod.state_names[-3:] != ["w1", "w2", "w3"]:
    fail("sphere: state_names %r" % mod.state_names)

# ---- the benchmark bicycle -----------------------------------------------

bike_init = "initial phi = -0.2, phi' = 0.3, delta' = -0.7, thR' = -15"
mod = case("bicycle multipliers", "bicycle_model.nh",
           ["equations multipliers", bike_init], "multipliers", 2)
if mod and (mod.param_names[:3] != ["w", "c", "lam"] or
            len(mod.param_defaults) != len(mod.param_names) or
            mod.input_names != []):
    fail("bicycle: names %r %r" % (mod.param_names, mod.input_names))
case("bicycle maggi", "bicycle_model.nh",
     ["equations maggi", "initial phi = -0.2, u1 = 0.3, u2 = -0.7, u3 = -15"],
     "maggi", 2)

# ---- inputs: after the parameters in p ---------------------------------------

setup = ["equations multipliers", bike_init]
path = os.path.join(TMP, "bike_control.py")
nh("bicycle_control.nh", setup + ["export python \"%s\"" % path])
ctl = load("bike_control")
if ctl.input_names != ["Tphi", "Tdelta"] or list(ctl.input_defaults) != [0, 0]:
    fail("inputs: %r %r" % (ctl.input_names, ctl.input_defaults))
names = ctl.state_names
y0 = values(nh("bicycle_control.nh", setup + ["print " + ", ".join(names)]),
            names)
p = np.concatenate([ctl.param_defaults, [0.0, 1.0]])
f1 = ctl.rhs(0.0, y0, p)
f0 = ctl.rhs(0.0, y0)
f0b = ctl.rhs(0.0, y0, ctl.param_defaults)  # the inputs left off: 0
acc = values(nh("bicycle_control.nh", setup + ["set Tdelta = 1",
                                               "print phi'', delta''"]),
             ["phi''", "delta''"])
at = [names.index("phi'"), names.index("delta'")]
if not (np.abs(f1[at] - acc).max() <= 1e-12 * max(1, np.abs(acc).max()) and
        np.abs(f1[at] - f0[at]).max() > 1e-3 and np.array_equal(f0, f0b)):
    fail("inputs: rhs with T_delta = 1 gives %r, nh %r" % (f1[at], acc))
try:
    ctl.rhs(0.0, y0, p[:3])
    fail("inputs: a short p was accepted")
except ValueError as e:
    if "p holds" not in str(e):
        fail("inputs: %s" % e)

# ---- the build cache, and no compiler ---------------------------------------

objects = sorted(f for f in os.listdir(os.path.join(CACHE, "nh", "python"))
                 if f.endswith(".so"))
code = "import bike_control; print(bike_control.rhs(0, %r)[0])" % list(y0)
r = subprocess.run([sys.executable, "-c", code], cwd=TMP,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                   universal_newlines=True)
again = sorted(f for f in os.listdir(os.path.join(CACHE, "nh", "python"))
               if f.endswith(".so"))
if r.returncode != 0 or objects != again:
    fail("cache: a second import built again or failed: %s" % r.stderr)
env = dict(os.environ, CC="/nonexistent/cc",
           XDG_CACHE_HOME=os.path.join(TMP, "empty"))
r = subprocess.run([sys.executable, "-c", "import bike_control"], cwd=TMP,
                   env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                   universal_newlines=True)
if r.returncode == 0 or "ImportError" not in r.stderr or \
        "needs a C compiler" not in r.stderr:
    fail("no compiler: %s" % r.stderr.strip().splitlines()[-1:])

sys.exit(1 if failures else 0)
