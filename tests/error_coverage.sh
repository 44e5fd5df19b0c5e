#!/bin/sh
# error_coverage.sh — every error message the code can produce is produced
# by some test (issue 7).  A best-effort check: it takes the format string
# of every diag_error() call in interp/ and lang/ (the first string literal
# after "diag_error(", with adjacent literals joined), turns it into a
# pattern (its first 40 literal characters, each printf directive a
# wildcard that does not cross a ';'; a message shorter than that must not
# go on with ';', ':' or '(', which would make it a longer message such as
# "...; did you mean"), and looks for a line of the tests that matches it:
# an `# expect-error:` or `# expect-warning:` line (a warning is made with
# diag_error too) of tests/lang/*.nh or examples/*.nh (comments
# do not count), or any line of tests/test_*.c.  Messages that no test can
# produce (internal checks, failures of the operating system, arguments
# only the C API can pass) are listed with a reason in
# tests/error_coverage.allow, one fragment of the message per line; a
# format containing such a fragment is not required to be covered.  A
# format with no literal text ("%s") passes on a message made by another
# call, which is checked where it is made.
# Prints the uncovered formats and fails if any is not allowed.
cd "${srcdir:-.}" || exit 1
allow=tests/error_coverage.allow
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sources=$(ls interp/*/*.c lang/*.c lang/parser.y lang/lexer.l |
          grep -v '^lang/parser\.c$' | grep -v '^lang/lexer\.c$')

# 1. FILE:LINE<TAB>FORMAT (the literal still C-escaped) for every call.
for f in $sources; do
    awk -v file="$f" '
        { text = text $0 "\n" }
        END {
            n = length(text); line = 1; p = 1
            while ((i = index(substr(text, p), "diag_error(")) > 0) {
                start = p + i - 1
                for (k = p; k < start; k++) if (substr(text, k, 1) == "\n") line++
                p = start + 11
                # The first literal must come before the call ends.
                q = p; fmt = ""; found = 0
                while (q <= n) {
                    c = substr(text, q, 1)
                    if (c == "\"") {
                        q++
                        while (q <= n && (c = substr(text, q, 1)) != "\"") {
                            if (c == "\\") { fmt = fmt c substr(text, q + 1, 1); q += 2 }
                            else { fmt = fmt c; q++ }
                        }
                        q++; found = 1
                        # adjacent literals are one string
                        while (q <= n && substr(text, q, 1) ~ /[ \t\n]/) q++
                        if (substr(text, q, 1) == "\"") continue
                        break
                    }
                    if (c == ";" || c == "{") break
                    q++
                }
                if (found) print file ":" line "\t" fmt
            }
        }' "$f"
done > "$tmp/formats"

# The test corpus: the expected errors of the scripts and examples (their
# comments do not count), and the C test sources.
{
    grep -h '^[[:space:]]*# expect-\(error\|warning\):' tests/lang/*.nh examples/*.nh
    cat tests/test_*.c
} > "$tmp/corpus" 2>/dev/null

# 2. A grep -E pattern per format.
awk -F '\t' '
    function quote(ch) { return ch ~ /[][\\.*+?(){}|^$]/ ? "\\" ch : ch }
    {
        fmt = $2; pat = ""; lit = 0; out = ""; i = 1; n = length(fmt); done = 0
        while (i <= n && lit < 40) {
            c = substr(fmt, i, 1)
            if (c == "\\") {                     # C escape: \" \\ \n
                d = substr(fmt, i + 1, 1)
                pat = pat "(\\\\)?" quote(d == "n" ? " " : d); lit++; i += 2
                continue
            }
            if (c == "%") {
                if (substr(fmt, i + 1, 1) == "%") { pat = pat "%"; lit++; i += 2; continue }
                j = i + 1
                while (j <= n && substr(fmt, j, 1) ~ /[-+ #0-9.*hlLzjt]/) j++
                if (pat != "") pat = pat "[^;]*"  # leading ones: no anchor
                i = j + 1
                continue
            }
            pat = pat quote(c); lit++; i++
        }
        if (lit == 0) pat = "@"                 # "%s": a message made elsewhere
        else if (i > n) pat = pat "($|[^;:(])"  # not a longer sibling
        print $1 "\t" pat "\t" fmt
    }' "$tmp/formats" > "$tmp/patterns"

# The allow-list without its comments: "FRAGMENT   # reason".
: > "$tmp/allow"
[ -f "$allow" ] && sed -e 's/[[:space:]]*#.*$//' -e '/^$/d' "$allow" > "$tmp/allow"

total=0; missing=0; allowed=0; passed=0
while IFS='	' read -r where pat fmt; do
    total=$((total + 1))
    if [ "$pat" = @ ]; then              # passes on a message made elsewhere
        passed=$((passed + 1))
        continue
    fi
    if grep -E -q -e "$pat" "$tmp/corpus"; then
        continue
    fi
    ok=0
    while IFS= read -r frag; do
        case "$fmt" in *"$frag"*) ok=1; break ;; esac
    done < "$tmp/allow"
    if [ $ok = 1 ]; then
        allowed=$((allowed + 1))
    else
        missing=$((missing + 1))
        echo "UNCOVERED: $where: $fmt"
    fi
done < "$tmp/patterns"
echo "error_coverage: $total calls ($passed pass on a message made elsewhere), $allowed allowed, $missing uncovered"
[ $missing = 0 ]
