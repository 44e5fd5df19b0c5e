#!/bin/sh
# layers.sh — the house stays as drawn (doc/architecture.md).
#
# 1. Includes: a file of the sources may include only headers of its own
#    layer or of the layers below it.  The layers, bottom up:
#        base lang expr mech eom analysis run cli
#    (base is interp/base, lang is lang/, the others interp/NAME).
# 2. Calls: in the objects that make built, no module (one object file)
#    uses a symbol defined in a layer above its own, and no circle runs
#    through modules (A uses B uses ... uses A), inside a layer or across.
#    The modules are the object files of the library and of nh.
# 3. Include circles: no circle runs through the modules' includes either
#    (a module is a .c with its .h; X_impl.h is X's private half; the
#    scanner and the grammar are parts of lang/parse, whose context they
#    share).  The object check cannot see a circle of declarations alone.
# 4. The checker itself: a file that includes a header from above its own
#    layer, and a circle of includes, must be reported (so a broken check
#    cannot pass in silence).
#
# Run by `make check` from the build tree; srcdir is the source tree.
set -u
src=${srcdir:-.}
build=$(pwd)

layers="base lang expr mech eom analysis run cli"

# The layer number of a path (lang/x.c, interp/eom/x.h), or nothing.
rank_of() {
    case $1 in
    lang/*) d=lang ;;
    interp/*/*) d=${1#interp/}; d=${d%%/*} ;;
    *) return ;;
    esac
    k=0
    for l in $layers; do
        [ "$l" = "$d" ] && { echo $k; return; }
        k=$((k + 1))
    done
    echo unknown
}

# Prints "FILE includes HEADER (layer A above B)" for every violation
# among the files given relative to directory $1.
check_includes() {
    root=$1; shift
    for f in "$@"; do
        rf=$(rank_of "$f")
        [ -n "$rf" ] || continue
        if [ "$rf" = unknown ]; then
            echo "$f: its folder is not a layer (add it to tests/layers.sh and doc/architecture.md)"
            continue
        fi
        sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' \
            "$root/$f" |
        while read -r h; do
            rh=$(rank_of "$h")
            [ -n "$rh" ] || continue
            if [ "$rh" = unknown ] || [ "$rh" -gt "$rf" ]; then
                echo "$f includes $h, from a layer above its own"
            fi
        done
    done
}

# The module a source file belongs to (see 3).
module_of() {
    m=${1%.*}
    m=${m%_impl}
    case $m in
    lang/lexer | lang/parser) m=lang/parse ;;
    esac
    echo "$m"
}

# Prints the include edges that lie on a circle, "FILE-MODULE HEADER-MODULE",
# among the files given relative to directory $1.
include_circles() {
    root=$1; shift
    for f in "$@"; do
        m=$(module_of "$f")
        sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' \
            "$root/$f" |
        while read -r h; do
            hm=$(module_of "$h")
            [ "$hm" != "$m" ] && echo "$m $hm"
        done
    done | sort -u | awk '{ e[NR] = $1 " " $2; out[$1]++; in_[$2]++; node[$1]; node[$2] }
        END {
            do {
                gone = 0
                for (v in node) if (out[v] + 0 == 0 || in_[v] + 0 == 0) {
                    for (i in e) { split(e[i], p, " ")
                        if (p[1] == v || p[2] == v) {
                            out[p[1]]--; in_[p[2]]--; delete e[i] } }
                    delete node[v]; gone = 1
                }
            } while (gone)
            for (i in e) print e[i]
        }' | sort
}

fail=0
files=$(cd "$src" && find lang interp \( -name '*.c' -o -name '*.h' \
            -o -name '*.y' -o -name '*.l' \) ! -name 'parser.c' \
            ! -name 'parser.h' ! -name 'lexer.c' ! -name 'lexer.h' | sort)
bad=$(check_includes "$src" $files)
if [ -n "$bad" ]; then
    echo "$bad"
    fail=1
fi
circle=$(include_circles "$src" $files)
if [ -n "$circle" ]; then
    echo "modules whose headers include each other in a circle (includer, included):"
    echo "$circle"
    fail=1
fi

# 3. The checker must catch a wrong include.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/interp/expr"
printf '#include "interp/cli/session.h"\n' > "$tmp/interp/expr/probe.c"
if [ -z "$(check_includes "$tmp" interp/expr/probe.c)" ]; then
    echo "layers.sh: the include check missed a wrong include"
    fail=1
fi
mkdir -p "$tmp/lang"
printf '#include "lang/b.h"\n' > "$tmp/lang/a.c"
printf '#include "lang/a.h"\n' > "$tmp/lang/b.h"
if [ -z "$(include_circles "$tmp" lang/a.c lang/b.h)" ]; then
    echo "layers.sh: the circle check missed a circle of includes"
    fail=1
fi

# 2. Calls, from the objects (when they are built).
objs=$(cd "$build" && find lang interp -name '*.o' ! -name '*-*' 2>/dev/null | sort)
if [ -n "$objs" ] && command -v nm >/dev/null 2>&1; then
    : > "$tmp/defs"
    : > "$tmp/uses"
    for o in $objs; do
        m=${o%.o}
        # A module whose source is gone (a stale object) is not the house.
        [ -f "$src/$m.c" ] || [ -f "$src/$m.y" ] || [ -f "$src/$m.l" ] || continue
        (cd "$build" && nm -g --defined-only "$o") |
            awk -v m="$m" 'NF == 3 { print $3, m }' >> "$tmp/defs"
        (cd "$build" && nm -u "$o") | awk -v m="$m" '{ print $NF, m }' >> "$tmp/uses"
    done
    # Edges "user definer" between modules.
    awk 'NR == FNR { def[$1] = $2; next }
         ($1 in def) && def[$1] != $2 { print $2, def[$1] }' \
        "$tmp/defs" "$tmp/uses" | sort -u > "$tmp/edges"
    while read -r a b; do
        ra=$(rank_of "$a"); rb=$(rank_of "$b")
        if [ -n "$ra" ] && [ -n "$rb" ] && [ "$rb" != unknown ] &&
           [ "$ra" != unknown ] && [ "$rb" -gt "$ra" ]; then
            echo "$a uses $b, a layer above its own"
            fail=1
        fi
    done < "$tmp/edges"
    # Circles: strip the modules that use nothing left, or that nothing
    # left uses, until none can go; what stays runs in circles.
    circle=$(awk '{ e[NR] = $1 " " $2; out[$1]++; in_[$2]++; node[$1]; node[$2] }
        END {
            do {
                gone = 0
                for (v in node) if (out[v] + 0 == 0 || in_[v] + 0 == 0) {
                    for (i in e) { split(e[i], p, " ")
                        if (p[1] == v || p[2] == v) {
                            out[p[1]]--; in_[p[2]]--; delete e[i] } }
                    delete node[v]; gone = 1
                }
            } while (gone)
            for (i in e) print e[i]
        }' "$tmp/edges" | sort)
    if [ -n "$circle" ]; then
        echo "modules that use each other in a circle (user, used):"
        echo "$circle"
        fail=1
    fi
else
    echo "layers.sh: no objects built; only the includes were checked"
fi

exit $fail
