#!/bin/sh
# install.sh — an installed nh finds its standard library and has a
# Jupyter kernel spec whose paths exist, whichever way it was put there
# (issue 24, item 4; doc/language.md, "Files"):
#   make install prefix=DIR      the directories changed after the build
#   make install DESTDIR=STAGE   the configured ones, under a staging root
#   ./configure --prefix=DIR     (with NH_TEST_CONFIGURE=1: a build of its
#                                own, minutes; .ci/run sets it)
# For each: the installed nh runs `import "euler"` without NH_PATH (and
# from another folder), a missing module's error names every folder
# searched, kernel.json names an nh, a wrapper and a Python that exist,
# `nh --install-kernel --user` of the installed nh does too, and `make
# uninstall` removes the spec.
# Runs in the build tree (make check's working folder).
set -u
make=${MAKE:-make}
builddir=$(pwd)
srcdir=$(cd "${srcdir:-.}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# check ROUTE ROOT BIN KERNELDIR: the installed nh BIN/nh; kernel.json in
# KERNELDIR names paths that exist under ROOT ("" or the DESTDIR).
check() {
    route=$1 root=$2 bin=$3 kdir=$4
    before=$fail
    fail=0
    nh="$bin/nh"
    [ -x "$nh" ] || { bad "$route: no $nh"; [ $before = 0 ] || fail=1; return; }
    out=$(cd "$tmp" && env -u NH_PATH "$nh" -q -e 'import "euler"' \
          -e 'coord a, b, c' -e "print omega_space(a, b, c)" 2>&1)
    [ "$out" = "omega_space(a, b, c) = [0, 0, 0]" ] ||
        bad "$route: the installed nh cannot import its library: $out"
    err=$(cd "$tmp" && env -u NH_PATH "$nh" -q -e 'import "no_such_zz"' 2>&1)
    stdlib=$(cd "$bin/../share/nh/stdlib" 2>/dev/null && pwd)
    case "$err" in
    *"no no_such_zz.nh in NH_PATH (not set)"*"$stdlib"*) ;;
    *) bad "$route: the error of a missing module does not name $stdlib: $err" ;;
    esac
    spec="$kdir/kernel.json"
    [ -f "$spec" ] || { bad "$route: no $spec"; [ $before = 0 ] || fail=1; return; }
    paths=$(python3 -c 'import json, sys
a = json.load(open(sys.argv[1]))["argv"]
print(a[0]); print(a[1]); print(a[a.index("--nh") + 1])' "$spec") ||
        { bad "$route: $spec is not a kernel spec"; [ $before = 0 ] || fail=1; return; }
    first=1
    for p in $paths; do # the Python is the system's, the others installed
        if [ $first = 1 ]; then r=""; first=0; else r=$root; fi
        [ -e "$r$p" ] || bad "$route: kernel.json names $p, which does not exist${r:+ under $r}"
    done
    echo "$paths" | grep -qx "$(echo "$nh" | sed "s|^$root||")" ||
        bad "$route: kernel.json does not run the installed nh: $paths"
    # the installed nh registers a spec that runs the installed wrapper
    mkdir -p "$tmp/jupyter"
    JUPYTER_DATA_DIR="$tmp/jupyter" "$nh" --install-kernel --user > /dev/null ||
        bad "$route: nh --install-kernel --user fails"
    script=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["argv"][1])' "$tmp/jupyter/kernels/nh/kernel.json")
    [ -f "$script" ] && [ "$(dirname "$script")" != "$builddir/jupyter" ] ||
        bad "$route: --install-kernel names the wrapper $script"
    rm -rf "$tmp/jupyter"
    [ $fail = 0 ] && echo "$route: import finds $stdlib; kernel.json's paths exist"
    [ $before = 0 ] || fail=1
}

# 1. make install prefix=DIR
$make -s -C "$builddir" install prefix="$tmp/p" > "$tmp/log" 2>&1 ||
    { bad "make install prefix=: $(cat "$tmp/log")"; exit 1; }
check "make install prefix=DIR" "" "$tmp/p/bin" "$tmp/p/share/jupyter/kernels/nh"
$make -s -C "$builddir" uninstall prefix="$tmp/p" > "$tmp/log" 2>&1 ||
    bad "make uninstall prefix=: $(cat "$tmp/log")"
[ -e "$tmp/p/share/jupyter/kernels/nh/kernel.json" ] &&
    bad "make uninstall leaves kernel.json"

# 2. make install DESTDIR=STAGE
$make -s -C "$builddir" install DESTDIR="$tmp/d" > "$tmp/log" 2>&1 ||
    { bad "make install DESTDIR=: $(cat "$tmp/log")"; exit 1; }
bin=$(dirname "$(find "$tmp/d" -path '*/bin/nh' | head -n 1)")
spec=$(dirname "$(find "$tmp/d" -path '*/jupyter/kernels/nh/kernel.json' | head -n 1)")
check "make install DESTDIR=STAGE" "$tmp/d" "$bin" "$spec"

# 3. ./configure --prefix=DIR (a build of its own)
# (a copy of the sources: configure refuses a second build of a source
# tree that is configured in place)
if [ "${NH_TEST_CONFIGURE:-0}" = 1 ]; then
    mkdir "$tmp/src"
    if (cd "$srcdir" && git ls-files -z --cached --others --exclude-standard |
            xargs -0 cp --parents -t "$tmp/src") > "$tmp/log" 2>&1 &&
       (cd "$tmp/src" && autoreconf -fi > "$tmp/log" 2>&1 &&
        ./configure -q --prefix="$tmp/c" > "$tmp/log" 2>&1 &&
        $make -s -j2 install > "$tmp/log" 2>&1); then
        check "./configure --prefix=DIR" "" "$tmp/c/bin" "$tmp/c/share/jupyter/kernels/nh"
    else
        bad "./configure --prefix=DIR; make install: $(tail -20 "$tmp/log")"
    fi
else
    echo "./configure --prefix=DIR: not tried (NH_TEST_CONFIGURE=1 tries it)"
fi
exit $fail
