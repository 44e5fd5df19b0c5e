"""named_rows.py NH -- the rows nh prints with named subexpressions
(LANGUAGE.md §7.1, v3: `where` rows k1 = ..., then the rows in their
terms), read back and evaluated, equal what nh's tapes compute.

For each case (the benchmark bicycle's `show eom` and `show accel` under
maggi, `show kane`, its `show eom` under multipliers, and a row whose tree
doubles at each level), the text of the statement is parsed: every
`where` row becomes a `let`, and every row L = R becomes
`print (L) - (R)` and `print abs(L) + abs(R)`.  That script runs in a
fresh nh after the model, at a few states; a row holds when its
difference is within 1e-12 of its size (|L| + |R|, or 1 when that is
smaller: the states' values are of order 1).  The accelerations and
multipliers in a row (u1', lambda(rear[1])) are nh's values at the state:
those of the tapes, so the rows equal the tapes' equations.  A row that
leaves out a variable it does not depend on (the bicycle's yaw, set to 0
in the named rows) is checked at states where that variable is not 0.
Then the LaTeX of the same statement is checked to use the same names
(k1 ... kN, in the same order) as the text.
"""

import os
import re
import subprocess
import sys
import tempfile

NH = sys.argv[1]
SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EX = os.path.join(SRC, "examples")
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def run(args, cwd=EX):
    r = subprocess.run([NH, "-q"] + args, cwd=cwd, capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit("FAIL: nh %s: %s" % (" ".join(args), r.stderr))
    return r.stdout


def joined(lines):
    """Lines continued after an operator joined into logical lines."""
    out = []
    for ln in lines:
        if out and re.search(r"[-+*/,(]\s*$", out[-1]) and \
                ln.startswith(" "):
            out[-1] = out[-1].rstrip() + " " + ln.strip()
        else:
            out.append(ln)
    return out


def parse(text):
    """The where rows (name, expression) and the rows (left, right) of
    a block with named subexpressions."""
    lines = joined(text.split("\n"))
    defs, rows = [], []
    i = lines.index("where") if "where" in lines else -1
    if i < 0:
        return defs, rows
    i += 1
    while i < len(lines) and re.match(r"^  [A-Za-z]\w* = ", lines[i]):
        name, expr = lines[i].strip().split(" = ", 1)
        defs.append((name, expr))
        i += 1
    for ln in lines[i:]:
        m = re.match(r"^(.*?) = (.*?)(  \(where .*\))?$", ln)
        if not m or ln.startswith(" ") or ":" in ln.split(" = ")[0]:
            continue
        left, right = m.group(1), m.group(2)
        if not re.search(r"[A-Za-z]", left) or left.startswith("("):
            continue
        rows.append((left, right))
    return defs, rows


def kane_pairs(rows):
    """Kane's rows F_r = A, F*_r = B as the equations A = -(B)."""
    out, force = [], {}
    for l, r in rows:
        m = re.match(r"^F(\*?)_(\w+)$", l)
        if not m:
            out.append((l, r))
        elif m.group(1):
            out.append((force.pop(m.group(2)), "-(%s)" % r))
        else:
            force[m.group(2)] = r
    return out


def statements_args(statements):
    return sum([["-e", s] for s in statements], [])


def check(label, model, statements, states, min_defs):
    text = run([model] + statements_args(statements))
    base = run([model] + statements_args(statements[:-1]))
    text = text[len(base):] if text.startswith(base) else text
    defs, rows = parse(text)
    rows = kane_pairs(rows)
    if len(defs) < min_defs or not rows:
        fail("%s: %d where rows and %d rows read (expected at least %d "
             "and 1)" % (label, len(defs), len(rows), min_defs))
        return
    worst = 0.0
    for st in states:
        script = "\n".join(statements[:-1]) + "\n" + st + "\n"
        script += "".join("let %s = %s\n" % d for d in defs)
        for k, (l, r) in enumerate(rows):
            script += "let row_d%d = (%s) - (%s)\n" % (k, l, r)
            script += "let row_s%d = abs(%s) + abs(%s)\n" % (k, l, r)
            script += "print row_d%d, row_s%d\n" % (k, k)
        with tempfile.NamedTemporaryFile("w", suffix=".nh", dir=EX,
                                         delete=False) as f:
            f.write(script)
            name = f.name
        try:
            out = run([model, os.path.basename(name)])
        finally:
            os.unlink(name)
        vals = dict(re.findall(r"^(row_[ds]\d+) = (\S+)$", out, re.M))
        for k in range(len(rows)):
            d = float(vals["row_d%d" % k])
            s = float(vals["row_s%d" % k])
            # (a row that reads 0 = 0 to rounding: against 1, the size
            # of the states' values)
            rel = abs(d) / max(s, 1.0)
            worst = max(worst, rel)
            if not rel <= 1e-12:
                fail("%s, row %d (%s = ...): L - R = %.3g where |L| + |R| "
                     "= %.3g, at %s" % (label, k, rows[k][0][:60], d, s, st))
    print("%s: %d where rows, %d rows, %d states, largest |L - R| / "
          "max(1, |L| + |R|) = %.2g" % (label, len(defs), len(rows),
                                        len(states), worst))
    # the LaTeX names the same subexpressions, in the same order
    statements_tex = statements[:-1] + [
        statements[-1].replace("show ", "show latex ", 1)]
    tex = run([model] + statements_args(statements_tex))
    tex = tex[len(base):] if tex.startswith(base) else tex
    block = tex[tex.find("\\text{where}"):]
    ends = [block.find(e) for e in ("\\\\[4pt]", "\\end{align*}")]
    block = block[:min(e for e in ends if e >= 0)]
    # numbered names k1, k2, ... and sines and cosines named after their
    # variable, s_phi as s_{\phi}
    names = re.findall(r"\b(?:(k)_\{(\d+)\}|([cs])_\{([^{}]*|\\mathrm\{\w+\})\}) = ",
                       block)
    tex = [("k" + n) if k else ("%s_%s" % (t, v.replace("\\mathrm{", "")
                                            .strip("\\}")))
           for k, n, t, v in names]
    want = [n for n, _ in defs]
    if tex != want:
        fail("%s: the LaTeX defines %d names, the text %d, or in another "
             "order: %s against %s" % (label, len(tex), len(want),
                                       tex[:12], want[:12]))


BIKE_STATES = [
    "initial psi = 0.7, phi = -0.2, delta = 0.3, u1 = 0.4, u2 = -0.6, "
    "u3 = -14",
    "initial psi = -2.1, phi = 0.35, delta = -0.5, u1 = -1.1, u2 = 1.3, "
    "u3 = -8",
]
BIKE_STATES_Q = [
    "initial psi = 0.7, phi = -0.2, delta = 0.3, phi' = 0.4, "
    "delta' = -0.6, thR' = -14",
    "initial psi = -2.1, phi = 0.35, delta = -0.5, phi' = -1.1, "
    "delta' = 1.3, thR' = -8",
]

check("bicycle, maggi, show eom", "bicycle_model.nh",
      ["equations maggi", "show eom"], BIKE_STATES, 30)
check("bicycle, maggi, show accel", "bicycle_model.nh",
      ["equations maggi", "show accel"], BIKE_STATES, 30)
check("bicycle, show kane", "bicycle_model.nh",
      ["equations maggi", "show kane"], BIKE_STATES, 30)
check("bicycle, multipliers, show eom", "bicycle_model.nh",
      ["equations multipliers", "show eom"], BIKE_STATES_Q, 30)
check("a tree that doubles at each level", os.path.join(
    SRC, "tests", "lang", "show_too_large.nh"),
      ["equations lagrange", "show eom"],
      ["initial x = 0.3, x' = 2", "initial x = -1.1, x' = 0.5"], 10)

if failures:
    sys.exit(1)
