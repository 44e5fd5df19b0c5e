#!/bin/sh
# listed.sh — every script in tests/lang/ and examples/ must be in
# Makefile.am's test lists, or `make check` would silently skip it.
#
#   tests/listed.sh           checks (run by `make check`)
#   tests/listed.sh --write   rewrites LANG_TESTS and EXAMPLE_TESTS in
#                             Makefile.am from the scripts in the folders
cd "${srcdir:-.}" || exit 1
if [ "${1:-}" = --write ]; then
    tmp=$(mktemp) || exit 1
    awk -v lang="$(ls tests/lang/*.nh | LC_ALL=C sort)" \
        -v ex="$(ls examples/*.nh | LC_ALL=C sort)" '
        function list(name, files,   n, f, i) {
            n = split(files, f, "\n")
            print name " = \\"
            for (i = 1; i <= n; i++)
                print "\t" f[i] (i < n ? " \\" : "")
        }
        skip && /\\$/ { next }
        skip { skip = 0; next }
        /^LANG_TESTS = \\$/ { list("LANG_TESTS", lang); skip = 1; next }
        /^EXAMPLE_TESTS = \\$/ { list("EXAMPLE_TESTS", ex); skip = 1; next }
        { print }' Makefile.am > "$tmp" && cat "$tmp" > Makefile.am
    status=$?
    rm -f "$tmp"
    exit $status
fi
status=0
for f in tests/lang/*.nh examples/*.nh; do
    [ -e "$f" ] || continue
    if ! grep -q "^[[:space:]]*$f\( \\\\\)\{0,1\}\$" Makefile.am; then
        echo "FAIL: $f is not listed in Makefile.am"
        status=1
    fi
done
exit $status
