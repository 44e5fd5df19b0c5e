#!/bin/sh
# notebook.sh — the Jupyter kernel with a real client (LANGUAGE.md §1.1):
# registers the kernel of the build's nh (`nh --install-kernel --user`)
# in a temporary Jupyter data folder, then tests/notebook.py runs
# examples/notebooks/rolling_sphere.ipynb headlessly with nbclient and
# drives the kernel with jupyter_client (interrupt, restart, completion).
# Needs Debian's python3-nbclient and python3-ipykernel and gnuplot, which
# ./bootstrap installs.
set -e
src=$(cd "$(dirname "$0")/.." && pwd)
NH=${NH:-$src/nh}
PY=/usr/bin/python3
if ! "$PY" -c 'import nbclient, nbformat, ipykernel, jupyter_client' 2>/dev/null; then
    echo "FAIL: the notebook test needs python3-nbclient and python3-ipykernel (./bootstrap installs them)"
    exit 1
fi
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "FAIL: the notebook plots inline, with gnuplot (./bootstrap installs gnuplot-nox)"
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nh-notebook-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
# Jupyter's folders, all in the temporary one: nothing of the user's is
# read or written.
JUPYTER_DATA_DIR=$tmp/data
JUPYTER_PATH=$tmp/data
JUPYTER_CONFIG_DIR=$tmp/config
JUPYTER_RUNTIME_DIR=$tmp/runtime
IPYTHONDIR=$tmp/ipython
export JUPYTER_DATA_DIR JUPYTER_PATH JUPYTER_CONFIG_DIR JUPYTER_RUNTIME_DIR IPYTHONDIR
"$NH" --install-kernel --user >"$tmp/install.out"
grep -q "installed the Jupyter kernel nh in $tmp/data/kernels/nh" "$tmp/install.out"
"$PY" "$src/tests/notebook.py" "$NH" "$src/examples/notebooks/rolling_sphere.ipynb" "$tmp"
