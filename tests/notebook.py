"""notebook.py NH NOTEBOOK TMP -- the nh kernel as Jupyter clients use it.

1. nbclient runs NOTEBOOK (examples/notebooks/rolling_sphere.ipynb) on
   the kernel that tests/notebook.sh registered in TMP, and its outputs
   are checked: `show latex eom` is text/latex ready for MathJax, `plot`
   is image/svg+xml, the deliberate mistake is an error with the cell,
   line, column and caret, and the printed numbers equal those of the
   same statements run as a script by NH, and the closed forms the
   README gives.
2. jupyter_client drives the kernel: an interrupt stops a long simulate
   with nh's error and the session goes on; completion and
   is_complete come from nh; a restart starts a fresh session; animate
   plays in the cell (text/html).
"""

import json
import math
import os
import re
import subprocess
import sys
import time

import nbformat
from nbclient import NotebookClient
from jupyter_client.manager import start_new_kernel

NH, NOTEBOOK, TMP = sys.argv[1:4]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def cell_of(nb, text):
    """The code cell whose source is TEXT's first line."""
    for c in nb.cells:
        if c.cell_type == "code" and c.source.split("\n")[0] == text:
            return c
    raise SystemExit("FAIL: no cell starting with %r" % text)


def stdout_of(cell):
    """What CELL printed as text; a formula as its plain text."""
    return "".join(o.get("text", "") if o.output_type == "stream"
                   else o.data.get("text/plain", "")
                   for o in cell.outputs
                   if (o.output_type == "stream" and o.name == "stdout")
                   or (o.output_type == "display_data"
                       and "text/latex" in o.data))


def value(text, name):
    """The number printed as "NAME = number" in TEXT."""
    m = re.search(r"^%s = (\S+)$" % re.escape(name), text, re.M)
    if not m:
        raise SystemExit("FAIL: no %r in %r" % (name, text))
    return float(m.group(1))


# ---- the kernel spec ---------------------------------------------------

spec = json.load(open(os.path.join(TMP, "data", "kernels", "nh",
                                   "kernel.json")))
check(spec["argv"][2:4] == ["--nh", os.path.realpath(NH)],
      "the kernel spec runs the nh that registered it: %s" % spec["argv"])
check(spec["language"] == "nh" and spec["interrupt_mode"] == "signal",
      "the kernel spec's language and interrupt mode")

# ---- 1. the notebook, headlessly ---------------------------------------

nb = nbformat.read(NOTEBOOK, as_version=4)
NotebookClient(nb, kernel_name="nh", timeout=120, startup_timeout=60,
               resources={"metadata": {"path": TMP}}).execute()

# Every cell ran, in order, and only the tagged one failed.
code_cells = [c for c in nb.cells if c.cell_type == "code"]
check([c.execution_count for c in code_cells] ==
      list(range(1, len(code_cells) + 1)), "every cell ran, in order")
for c in code_cells:
    errors = [o for o in c.outputs if o.output_type == "error"]
    tagged = "raises-exception" in c.metadata.get("tags", [])
    check(bool(errors) == tagged,
          "an error exactly in the tagged cell: %r" % c.source)

# show latex eom: text/latex, one formula for MathJax, the plain text too.
c = cell_of(nb, "show latex eom")
shown = [o for o in c.outputs if o.output_type == "display_data"]
check(len(shown) == 1, "show latex eom displays one formula")
if shown:
    latex = shown[0].data.get("text/latex", "")
    check(latex.startswith("$\\displaystyle \\begin{aligned}")
          and latex.endswith("\\end{aligned}$"),
          "text/latex is $\\displaystyle ...$ with aligned rows: %r"
          % latex[:80])
    check("\\ddot{\\theta}" in latex and "&= " in latex,
          "text/latex holds the equations")
    check("\\ddot{\\theta}" in shown[0].data.get("text/plain", ""),
          "text/plain holds what nh printed")

# plot: an SVG image.
c = cell_of(nb, "plot x, y vs t")
shown = [o for o in c.outputs if o.output_type == "display_data"]
check(len(shown) == 1 and "image/svg+xml" in shown[0].data,
      "plot displays an image/svg+xml")
if shown:
    svg = shown[0].data.get("image/svg+xml", "")
    check("<svg" in svg and "</svg>" in svg and "<path" in svg,
          "the SVG is a drawing")

# The mistake: nh's error, in cell N at line 1, column 7, with the caret.
c = cell_of(nb, "print thetta''")
err = [o for o in c.outputs if o.output_type == "error"]
if err:
    n = c.execution_count
    want = ["<cell %d>:1:7: error: unknown name 'thetta'; did you mean "
            "'theta'?" % n, "print thetta''", "      ^~~~~~"]
    check(err[0].traceback == want,
          "the error's traceback is nh's: %r" % err[0].traceback)
    check(err[0].evalue == "unknown name 'thetta'; did you mean 'theta'?",
          "the error's value is nh's message")

# The numbers: the same statements as a script give the same text, digit
# for digit (one session either way).
script = "\n".join(c.source for c in code_cells
                   if "raises-exception" not in c.metadata.get("tags", [])
                   and not c.source.startswith("plot"))
run = subprocess.run([NH, "-"], input=script, capture_output=True,
                     text=True, timeout=120, cwd=TMP)
check(run.returncode == 0, "the script runs: %s" % run.stderr)
notebook_text = "".join(stdout_of(c) for c in code_cells)
check(notebook_text == run.stdout,
      "the notebook prints what the script prints:\n%s\n---\n%s"
      % (notebook_text, run.stdout))

# And the closed forms of the README: x' = -R psi' sin(theta) =
# -1.1 sin 1, y' = -R theta' cos(phi) = -0.3 (phi = 0); Lemos eq. 16,
# theta'' = -phi' psi' sin(theta); rolling straight at constant speed,
# x(20) = 20 x'(0), to the integration's tolerance.
text = stdout_of(cell_of(nb, "initial theta = 1, phi' = 0.7, theta' = 0.3, "
                             "psi' = 1.1"))
xd = value(text, "x'")
check(abs(xd - (-1.1 * math.sin(1.0))) <= 4 * math.ulp(xd),
      "x' = -1.1 sin 1: %r" % xd)
check(value(text, "y'") == -0.3, "y' = -0.3")
text = stdout_of(cell_of(nb, "accel"))
check(abs(value(text, "theta'' + phi'*psi'*sin(theta)")) < 1e-15,
      "Lemos eq. 16")
text = stdout_of(cell_of(nb, "simulate to 20 step 0.05"))
check(abs(value(text, "x + 20*sin(1)*1.1")) < 1e-9, "x(20) = 20 x'(0)")

# ---- 2. the kernel, driven -----------------------------------------------


def reply_to(kc, msg_id, timeout=60):
    """The content of the shell reply to MSG_ID (others are skipped:
    wait_for_ready leaves kernel_info replies)."""
    while True:
        m = kc.get_shell_msg(timeout=timeout)
        if m["parent_header"].get("msg_id") == msg_id:
            return m["content"]


def run_cell(kc, code, timeout=60):
    """Executes CODE; returns (outputs, reply content)."""
    msg_id = kc.execute(code)
    outs = []
    while True:
        m = kc.get_iopub_msg(timeout=timeout)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "status":
            if m["content"]["execution_state"] == "idle":
                break
        elif m["msg_type"] in ("stream", "display_data", "error"):
            outs.append((m["msg_type"], m["content"]))
    return outs, reply_to(kc, msg_id, timeout)


km, kc = start_new_kernel(kernel_name="nh", startup_timeout=60, cwd=TMP)
try:
    # A fast oscillation over 10^6 time units: hours of steps, unless
    # the interrupt stops it.
    outs, rep = run_cell(kc, "coord x; kinetic T = x'^2/2; "
                             "potential V = 5e5*x^2\n"
                             "initial x = 1; set max_steps = 1e9")
    check(rep["status"] == "ok", "the oscillator is declared")
    msg_id = kc.execute("simulate to 1e6 step 1e3")
    time.sleep(1.0)
    start = time.monotonic()
    km.interrupt_kernel()
    outs = []
    while True:
        m = kc.get_iopub_msg(timeout=60)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if (m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle"):
            break
        outs.append((m["msg_type"], m["content"]))
    rep = reply_to(kc, msg_id)
    check(time.monotonic() - start < 30, "the interrupt stops the simulate")
    check(rep["status"] == "error"
          and rep["evalue"].startswith("interrupted at t = "),
          "the interrupted simulate is nh's error: %r" % rep.get("evalue"))
    outs, rep = run_cell(kc, "print t, x")
    check(outs == [("stream", {"name": "stdout", "text": "t = 0\nx = 1\n"})],
          "after the interrupt the state is the initial one: %r" % outs)

    # Completion by context (cursor in characters: θ is one; the
    # statement after the `;` decides: a method after `equations`) and
    # is_complete.
    rep = reply_to(kc, kc.complete("print θ; equations mu", 21))
    check(rep["matches"] == ["multipliers"]
          and rep["cursor_start"] == 19 and rep["cursor_end"] == 21,
          "completion: %r" % rep)
    for code, status in (("print (1 +", "incomplete"),
                         ("print 1", "complete"),
                         ("print 1 +* 2", "invalid")):
        rep = reply_to(kc, kc.is_complete(code))
        check(rep["status"] == status, "is_complete %r: %r" % (code, rep))

    # A restart starts a fresh session: x is unknown.
    km.restart_kernel(now=True)
    kc.wait_for_ready(timeout=60)
    outs, rep = run_cell(kc, "print x")
    check(rep["status"] == "error"
          and rep["evalue"].startswith("unknown name 'x'"),
          "after a restart the session is fresh: %r" % rep.get("evalue"))

    # animate without a file plays in the cell: text/html, one <div> with
    # its SVG and script, and nothing written (LANGUAGE.md §7.5).
    outs, rep = run_cell(kc, "coord x; kinetic T = x'^2/2; initial x' = 1\n"
                             "draw point [x, 0, 0] trail\n"
                             "simulate to 1 step 0.1\nanimate")
    shown = [c for k, c in outs if k == "display_data"]
    check(rep["status"] == "ok" and len(shown) == 1
          and shown[0]["data"].get("text/html", "").startswith(
              '<div class="nh-animation" id="nh-animation-1-')
          and "<svg" in shown[0]["data"]["text/html"]
          and "<script>" in shown[0]["data"]["text/html"],
          "animate shows text/html in the cell: %r" % (outs,))
    check(not os.path.exists(os.path.join(TMP, "animation.html")),
          "animate in a notebook writes no animation.html")
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=True)
    # Dropped now, while logging still works (their __del__ logs).
    del kc, km

if failures:
    print("%d failed" % len(failures))
    sys.exit(1)
print("notebook: every check passed")
