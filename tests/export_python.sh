#!/bin/sh
# export_python.sh — `export python` (LANGUAGE.md §8.2) against SciPy:
# tests/export_python.py says what is checked.  Debian's python3 with
# python3-numpy and python3-scipy (./bootstrap installs them).
set -u
: "${NH:?NH must name the nh binary}"
py=/usr/bin/python3
"$py" -c 'import numpy, scipy' 2>/dev/null ||
    { echo "SKIP: no numpy and scipy for $py"; exit 77; }
SRC="${srcdir:-.}" NH="$NH" exec "$py" "${srcdir:-.}/tests/export_python.py"
