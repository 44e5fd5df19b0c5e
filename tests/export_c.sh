#!/bin/sh
# export_c.sh — `export c` as a user meets it (LANGUAGE.md §8.1): nh
# writes the rolling sphere's equations (examples/rolling_sphere.nh,
# voronec) to sphere.c; a program of the user's own, written here, links
# that file alone with GSL and integrates it with rk8pd from the state nh
# prints; the final state must agree with nh's `simulate` to the
# tolerances of the two integrations (both rtol 1e-10: their step
# sequences differ, so 1e-7 relative).  The file must compile with
# -std=c99 -Wall -Wextra -pedantic without a warning.  Then
# `set compile = on` without a compiler: a note, and simulate runs on the
# tapes.  (test_cgen.c compares every example's C with nh bit for bit.)
set -u
: "${NH:?NH must name the nh binary}"
src="${srcdir:-.}"
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }

state="phi, theta, psi, x, y, phi', theta', psi'"
(cd "$src/examples" && "$NH" -q rolling_sphere.nh -e "equations voronec" \
    -e "reset" -e "export c \"$tmp/sphere.c\"" -e "print $state" \
    -e "simulate to 5" -e "print $state") > "$tmp/nh.out" 2> "$tmp/nh.err" ||
    fail "nh: $(head -n 1 "$tmp/nh.err")"
[ -s "$tmp/sphere.c" ] || fail "no sphere.c written"

cat > "$tmp/user.c" <<'CEOF'
/* A user's program: the exported equations, GSL's rk8pd, nothing of nh. */
#include <stdio.h>
#include <stdlib.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_odeiv2.h>

extern const int sphere_nstate, sphere_nparam;
extern const char *const sphere_state_names[];
extern const double sphere_param_defaults[];
void sphere_rhs(double t, const double *y, const double *p, double *dydt);

static int f(double t, const double y[], double dydt[], void *p)
{
    sphere_rhs(t, y, p, dydt);
    return GSL_SUCCESS;
}

int main(int argc, char **argv)
{
    double y[64];
    int n = sphere_nstate;
    if (argc != n + 1 || n > 64)
        return 2;
    for (int k = 0; k < n; k++)
        y[k] = strtod(argv[k + 1], NULL);
    gsl_odeiv2_system sys = {f, NULL, (size_t)n,
                             (void *)sphere_param_defaults};
    gsl_odeiv2_driver *d = gsl_odeiv2_driver_alloc_y_new(
        &sys, gsl_odeiv2_step_rk8pd, 1e-3, 1e-12, 1e-10);
    double t = 0;
    if (gsl_odeiv2_driver_apply(d, &t, 5.0, y) != GSL_SUCCESS)
        return 1;
    for (int k = 0; k < n; k++)
        printf("%s = %.17g\n", sphere_state_names[k], y[k]);
    gsl_odeiv2_driver_free(d);
    return 0;
}
CEOF
if ! $cc -std=c99 -O2 -Wall -Wextra -pedantic -Werror -c "$tmp/sphere.c" \
        -o "$tmp/sphere.o" 2> "$tmp/cc.err"; then
    fail "sphere.c: $(head -n 3 "$tmp/cc.err")"
elif ! $cc -O2 -c "$tmp/user.c" -o "$tmp/user.o" $(pkg-config --cflags gsl) ||
     ! $cc -o "$tmp/user" "$tmp/user.o" "$tmp/sphere.o" \
        $(pkg-config --libs gsl) -lm; then
    fail "the user's program does not build"
else
    # the example prints first: the last 16 lines are ours
    start=$(tail -n 16 "$tmp/nh.out" | head -n 8 | sed 's/.* = //' | tr '\n' ' ')
    # shellcheck disable=SC2086
    "$tmp/user" $start > "$tmp/user.out" || fail "the user's program fails"
    tail -n 8 "$tmp/nh.out" > "$tmp/nh.end"
    if ! awk 'NR == FNR { want[$1] = $3; next }
              $3 !~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/ { print "  " $1 ": C " $3; bad = 1; next }
              { d = $3 - want[$1]; if (d < 0) d = -d
                s = want[$1] < 0 ? -want[$1] : want[$1]; if (s < 1) s = 1
                if (!($1 in want) || d > 1e-7 * s) { print "  " $1 ": nh " want[$1] ", C " $3; bad = 1 } }
              END { exit bad }' "$tmp/nh.end" "$tmp/user.out"; then
        fail "the user's integration differs from simulate"
    fi
    [ "$(wc -l < "$tmp/user.out")" = 8 ] || fail "the state has not 8 values"
fi

# Through a symbolic link: the file it names gets the C, the link stays
# (it was replaced by the file, issue 31).
echo old > "$tmp/real.c"
ln -s real.c "$tmp/link.c"
(cd "$src/examples" && "$NH" -q rolling_sphere.nh -e "equations voronec" \
    -e "export c \"$tmp/link.c\"") > /dev/null 2>&1 ||
    fail "export c through a link"
[ -L "$tmp/link.c" ] || fail "export c replaced the link"
grep -q "void link_rhs(" "$tmp/real.c" || fail "the linked file has not the C"
# Not a regular file: a FIFO, a link to a device.  Refused with an error,
# left as they were (the FIFO was replaced by the file, and as root
# /dev/stdout's node was).  Both live in the scratch folder, so an nh
# without the check replaces them there and nothing else.
mkfifo "$tmp/fifo.c"
ln -s /dev/null "$tmp/dev.c"
for f in fifo.c dev.c; do
    out=$(cd "$src/examples" && timeout 60 "$NH" -q rolling_sphere.nh \
        -e "equations voronec" -e "export c \"$tmp/$f\"" 2>&1)
    echo "$out" | grep -q "^<-e>:1:10: error: cannot write '$tmp/$f': it is not a regular file (a device, a FIFO or a socket)\$" ||
        fail "export c to $f: $out"
done
[ -p "$tmp/fifo.c" ] || fail "export c replaced the FIFO"
[ -L "$tmp/dev.c" ] || fail "export c replaced the link to a device"

# No compiler: a note, and the tapes.
mkdir "$tmp/empty"
out=$(cd "$src/examples" && env -u CC PATH="$tmp/empty" "$NH" rolling_sphere.nh \
    -e "set compile = on" -e "simulate to 1" 2>&1 > /dev/null)
[ $? = 0 ] || fail "simulate without a compiler: $out"
echo "$out" | grep -q "<-e>:1:15: note: no C compiler found (cc on the PATH, or \$CC): simulate and compare run on the tapes" ||
    fail "no note without a compiler: $out"
exit $status
