#!/bin/sh
# nbconvert.sh — the notebooks as an author exports them (LANGUAGE.md §1.1,
# §7.1): tests/nbconvert.py runs every notebook of examples/notebooks on
# the kernel of the build's nh, exports it with Debian's jupyter nbconvert
# to HTML (the plot there, the mathematics typeset offline by
# libjs-mathjax in headless Chromium) and to PDF (xelatex), and renders a
# notebook of every worksheet and of the bicycle's long outputs.  The
# kernel is registered in a temporary Jupyter data folder, as in
# tests/notebook.sh.  ./bootstrap installs the tools; without nbconvert
# the test is skipped (77), without Chromium or xelatex the parts that
# need them are (the test says so).
set -e
src=$(cd "$(dirname "$0")/.." && pwd)
NH=${NH:-$src/nh}
PY=/usr/bin/python3
if ! "$PY" -c 'import nbconvert, nbclient, ipykernel' 2>/dev/null; then
    echo "SKIP: jupyter nbconvert is missing (./bootstrap installs python3-nbconvert)"
    exit 77
fi
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "FAIL: the notebooks plot inline, with gnuplot (./bootstrap installs gnuplot-nox)"
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nh-nbconvert-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
JUPYTER_DATA_DIR=$tmp/data
JUPYTER_PATH=$tmp/data
JUPYTER_CONFIG_DIR=$tmp/config
JUPYTER_RUNTIME_DIR=$tmp/runtime
IPYTHONDIR=$tmp/ipython
export JUPYTER_DATA_DIR JUPYTER_PATH JUPYTER_CONFIG_DIR JUPYTER_RUNTIME_DIR IPYTHONDIR
"$NH" --install-kernel --user >"$tmp/install.out"
"$PY" "$src/tests/nbconvert.py" "$NH" "$tmp"
