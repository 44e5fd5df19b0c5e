"""nbconvert.py NH TMP -- the notebooks as an author exports them
(LANGUAGE.md 1.1 and 7.1), with Debian's tools: jupyter nbconvert (HTML
and PDF), MathJax from libjs-mathjax (offline), headless Chromium.

1. Every notebook of examples/notebooks/ is executed on the nh kernel
   (registered by tests/nbconvert.sh in TMP) and exported to HTML: no
   error, and each plot is there as a picture that holds a drawing (an
   <img> whose SVG has paths, or an <svg> with paths).  Chromium renders
   the page: the mathematics is typeset (a MathJax output element for
   every text/latex output, no "Math Processing Error", no TeX error),
   and a screenshot differs from one of a blank page.
2. The same notebooks exported to PDF (xelatex): no error, and the plot
   is in the document (the LaTeX includes a figure nbconvert extracted).
3. A notebook of every worksheet of every example that has one and the
   long outputs of the benchmark bicycle (named subexpressions), exported
   to HTML and rendered: every formula typeset, none in error.
A part whose tool is missing is skipped with a note; ./bootstrap installs
them all (CI runs them).
"""

import base64
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

NH, TMP = sys.argv[1:3]
SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3"
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def nbconvert(args, cwd):
    r = subprocess.run([PY, "-m", "nbconvert"] + args, cwd=cwd,
                       capture_output=True, text=True, timeout=1200)
    return r.returncode, r.stderr


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update", "--disable-sync",
                "--no-first-run"]


def chromium(args, url):
    """Runs headless Chromium with a fresh profile; its stdout."""
    profile = tempfile.mkdtemp(dir=TMP)
    try:
        r = subprocess.run([CHROMIUM] + CHROME_FLAGS +
                           ["--user-data-dir=" + profile,
                            "--virtual-time-budget=60000"] + args + [url],
                           capture_output=True, text=True, timeout=600)
        return r.stdout
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def typeset(html_path, label):
    """Renders HTML_PATH; checks every text/latex output is typeset."""
    dom = chromium(["--dump-dom"], "file://" + html_path)
    outputs = dom.count('data-mime-type="text/latex"')
    typed = len(re.findall(r'class="MathJax_CHTML|class="mjx-chtml', dom))
    check(outputs > 0, "%s: no text/latex output in the page" % label)
    check(typed >= outputs,
          "%s: %d formulas typeset for %d text/latex outputs"
          % (label, typed, outputs))
    check("Math Processing Error" not in dom,
          "%s: MathJax reports a Math Processing Error" % label)
    errors = len(re.findall(r'class="mjx-merror"|class="MathJax_Error"',
                            dom))
    check(errors == 0, "%s: %d formulas in error" % (label, errors))
    print("%s: %d text/latex outputs, %d typeset, %d in error"
          % (label, outputs, typed, errors))
    return dom


def has_drawing(html):
    """Whether the page holds a plot with a drawing in it."""
    for b64 in re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"',
                          html):
        svg = base64.b64decode(b64).decode("utf-8", "replace")
        if "<path" in svg or "<polyline" in svg:
            return True
    for svg in re.findall(r"<svg.*?</svg>", html, re.S):
        if "<path" in svg:
            return True
    return False


have_chromium = CHROMIUM is not None
have_xelatex = shutil.which("xelatex") is not None
if not have_chromium:
    print("note: chromium is missing: the pages are not rendered "
          "(./bootstrap installs it)")
if not have_xelatex:
    print("note: xelatex is missing: the notebooks are not exported to PDF "
          "(./bootstrap installs texlive-xetex)")

# ---- 1 and 2: the example notebooks ------------------------------------

notebooks = sorted(glob.glob(os.path.join(SRC, "examples", "notebooks",
                                          "*.ipynb")))
check(len(notebooks) > 0, "no notebook in examples/notebooks")
for nb in notebooks:
    name = os.path.splitext(os.path.basename(nb))[0]
    work = os.path.join(TMP, name)
    os.makedirs(work)
    shutil.copy(nb, work)
    rc, err = nbconvert(["--to", "html", "--execute", name + ".ipynb"], work)
    check(rc == 0, "%s: nbconvert --to html fails: %s" % (name, err[-800:]))
    if rc != 0:
        continue
    html_path = os.path.join(work, name + ".html")
    html = open(html_path, encoding="utf-8").read()
    check(has_drawing(html), "%s: the HTML holds no plot with a drawing"
          % name)
    if have_chromium:
        typeset(html_path, name + ".html")
        shot = os.path.join(work, "page.png")
        blank_html = os.path.join(work, "blank.html")
        open(blank_html, "w").write("<!DOCTYPE html><html><body></body>"
                                    "</html>")
        blank = os.path.join(work, "blank.png")
        for out, url in ((shot, html_path), (blank, blank_html)):
            chromium(["--screenshot=" + out, "--window-size=1000,1400"],
                     "file://" + url)
        ok = os.path.exists(shot) and os.path.exists(blank)
        check(ok, "%s: Chromium took no screenshot" % name)
        if ok:
            a, b = open(shot, "rb").read(), open(blank, "rb").read()
            check(a != b and len(a) > 2 * len(b),
                  "%s: the screenshot (%d bytes) does not differ from a "
                  "blank page's (%d)" % (name, len(a), len(b)))
    if have_xelatex:
        rc, err = nbconvert(["--to", "pdf", "--execute", name + ".ipynb"],
                            work)
        check(rc == 0, "%s: nbconvert --to pdf fails: %s"
              % (name, err[-800:]))
        pdf = os.path.join(work, name + ".pdf")
        check(rc != 0 or os.path.getsize(pdf) > 10000,
              "%s: the PDF is (nearly) empty" % name)
        # the plot is a figure of the document: the LaTeX includes an
        # image nbconvert extracted from the outputs
        rc, err = nbconvert(["--to", "latex", "--execute", name + ".ipynb"],
                            work)
        tex = open(os.path.join(work, name + ".tex"),
                   encoding="utf-8").read() if rc == 0 else ""
        figs = re.findall(r"\\(?:includegraphics|adjustimage)\b.*?"
                          r"\{([^{}]+\.(?:pdf|png|jpg|svg))\}", tex)
        check(any(os.path.exists(os.path.join(work, f)) and
                  os.path.getsize(os.path.join(work, f)) > 1000
                  for f in figs),
              "%s: the PDF's LaTeX includes no plot (%s)" % (name, figs))
    print("%s: exported" % name)

# ---- 3: every worksheet, the bicycle's long outputs ----------------------

examples = sorted(glob.glob(os.path.join(SRC, "examples", "*.nh")))
work = os.path.join(TMP, "sheets")
os.makedirs(work)
names, nsheets = [], 0
for ex in examples:
    base = os.path.basename(ex)
    cells = ['load "%s"' % ex]
    for sheet in ("preliminary", "first", "second", "second_reduced"):
        probe = subprocess.run([NH, "-q", base, "-e",
                                "worksheet " + sheet],
                               cwd=os.path.dirname(ex), capture_output=True,
                               text=True, timeout=300)
        if probe.returncode == 0:
            cells.append("worksheet latex " + sheet)
    if base == "bicycle_model.nh":
        cells += ["equations maggi", "show latex eom", "show latex accel",
                  "show latex kane"]
    if len(cells) == 1:
        continue
    nsheets += len(cells) - 1
    # one notebook (one session) per example
    nb = {"cells": [{"cell_type": "code", "execution_count": None,
                     "metadata": {}, "outputs": [], "source": c}
                    for c in cells],
          "metadata": {"kernelspec": {"name": "nh", "display_name": "nh",
                                      "language": "nh"}},
          "nbformat": 4, "nbformat_minor": 5}
    name = os.path.splitext(base)[0]
    json.dump(nb, open(os.path.join(work, name + ".ipynb"), "w"))
    names.append(name)
rc, err = nbconvert(["--to", "html", "--execute"] +
                    [n + ".ipynb" for n in names], work)
check(rc == 0, "the worksheets' notebooks: nbconvert --to html fails: %s"
      % err[-800:])
print("%d worksheets and the bicycle's long outputs in %d notebooks"
      % (nsheets, len(names)))
if rc == 0 and have_chromium:
    for n in names:
        typeset(os.path.join(work, n + ".html"), n + " (worksheets)")

if failures:
    sys.exit(1)
