#!/bin/sh
# listed.sh — every script in tests/lang/ and examples/ must be in
# Makefile.am's test lists, or `make check` would silently skip it.
cd "${srcdir:-.}" || exit 1
status=0
for f in tests/lang/*.nh examples/*.nh; do
    [ -e "$f" ] || continue
    if ! grep -q "^[[:space:]]*$f\( \\\\\)\{0,1\}\$" Makefile.am; then
        echo "FAIL: $f is not listed in Makefile.am"
        status=1
    fi
done
exit $status
