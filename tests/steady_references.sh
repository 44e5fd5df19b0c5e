#!/bin/sh
# steady_references.sh — the numbers pinned in the steady-motion examples
# are those of their independent derivations (LANGUAGE.md §7.3): each
# reference script, run with Debian's python3 (SymPy and mpmath), prints
# groups of `# expect:` lines, each group after a line `== FILE`; FILE
# must hold every line of its group, in that order.  The scripts derive
# their results from the physics and from published values, never from
# nh: this is what makes the examples' expectations a check of nh.
set -u
: "${NH_SRCDIR:=.}"
PY=/usr/bin/python3
if ! "$PY" -c 'import sympy, mpmath' 2>/dev/null; then
    echo "FAIL: the reference scripts need Debian's python3-sympy (./bootstrap installs it)"
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for script in rolling_disk_reference.py bicycle_steady_reference.py; do
    [ -f "$NH_SRCDIR/tests/$script" ] || continue
    if ! "$PY" "$NH_SRCDIR/tests/$script" > "$tmp/out" 2> "$tmp/err"; then
        echo "FAIL: tests/$script failed:"; cat "$tmp/err"; fail=1; continue
    fi
    # each group's lines must appear in its file, in order
    awk -v dir="$NH_SRCDIR" '
        /^== / { file = dir "/" substr($0, 4); n = 0; delete have;
                 while ((getline l < file) > 0) have[++n] = l; close(file);
                 pos = 0; next }
        {
            for (k = pos + 1; k <= n; k++) if (have[k] == $0) break
            if (k > n) { printf "FAIL: %s lacks (after line %d): %s\n", file, pos, $0; bad = 1 }
            else pos = k
        }
        END { exit bad }' "$tmp/out" || fail=1
    [ $fail -eq 0 ] && echo "ok: tests/$script: $(grep -c '^# expect' "$tmp/out") values"
done
exit $fail
