/*
 * slips.c — see slips.h.  Must not: print; change the system.
 */
#include "interp/analysis/slips.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>

#include "interp/base/util.h"
#include "interp/expr/tape.h"

/* M = ∂²E/∂q'∂q' as nodes (n² of them, row-major; malloc'ed). */
static const expr_t **mass_nodes(const nh_system_t *sys, const expr_t *e)
{
    size_t n = sys->n;
    const expr_t **m = xcalloc(n > 0 ? n * n : 1, sizeof *m);
    for (size_t i = 0; i < n; i++) {
        const expr_t *p = expr_diff(sys->g, e, sys->qd[i]);
        for (size_t j = 0; j < n; j++)
            m[i * n + j] = expr_diff(sys->g, p, sys->qd[j]);
    }
    return m;
}

/* The eigenvalues of M = ∂²E/∂q'∂q' at each of the NPTS value vectors
 * PTS (each expr_graph_nvars long) into EV (n per point), with *BIG[k] the
 * largest |M_ij| at point k (0 when M is not finite there: no
 * eigenvalues).  Returns 0, or -1 when the model is too large. */
static int mass_eigen(const nh_system_t *sys, const expr_t *e,
                      const double *const *pts, size_t npts, double *ev,
                      double *big)
{
    size_t n = sys->n;
    if (n == 0 || n > SLIP_MAX_COORDS)
        return -1;
    const expr_t **nodes = mass_nodes(sys, e);
    tape_t *tp = tape_compile(sys->g, nodes, n * n, expr_graph_nvars(sys->g));
    double *work = xcalloc(tape_work_size(tp) + 1, sizeof *work);
    gsl_matrix *m = gsl_matrix_alloc(n, n);
    gsl_vector *v = gsl_vector_alloc(n);
    gsl_eigen_symm_workspace *w = gsl_eigen_symm_alloc(n);
    if (!m || !v || !w)
        nh_out_of_memory();
    for (size_t k = 0; k < npts; k++) {
        tape_eval(tp, pts[k], m->data, work); /* row-major, tda = n */
        bool finite = true;
        big[k] = 0;
        for (size_t i = 0; i < n * n; i++) {
            finite &= isfinite(m->data[i]) != 0;
            big[k] = fmax(big[k], fabs(m->data[i]));
        }
        if (!finite || gsl_eigen_symm(m, v, w) != GSL_SUCCESS) {
            big[k] = 0;
            continue;
        }
        for (size_t i = 0; i < n; i++)
            ev[k * n + i] = gsl_vector_get(v, i);
    }
    gsl_eigen_symm_free(w);
    gsl_vector_free(v);
    gsl_matrix_free(m);
    free(work);
    tape_free(tp);
    free(nodes);
    return 0;
}

/* Whether eigenvalue X of a matrix whose largest entry is BIG is below
 * zero (SIGN < 0) or zero (SIGN == 0) beyond rounding. */
static bool eigen_is(double x, double big, int sign)
{
    return sign < 0 ? x < -1e-9 * big : fabs(x) <= 1e-9 * big;
}

int slip_indefinite(const nh_system_t *sys, const expr_t *e,
                    const double *vars)
{
    size_t n = sys->n;
    double *ev = xcalloc(n ? n : 1, sizeof *ev), big;
    int found = 0;
    if (mass_eigen(sys, e, &vars, 1, ev, &big) == 0 && big != 0)
        /* a negative eigenvalue is a direction of negative kinetic
         * energy */
        for (size_t i = 0; i < n && !found; i++)
            found = eigen_is(ev[i], big, -1);
    free(ev);
    return found;
}

int slip_singular_here(const nh_system_t *sys, const expr_t *e,
                       const double *vars)
{
    size_t n = sys->n, nv = expr_graph_nvars(sys->g);
    double *near = xcalloc(nv ? nv : 1, sizeof *near);
    memcpy(near, vars, nv * sizeof *near);
    /* every coordinate moved by a different irrational fraction */
    for (size_t i = 0; i < n; i++)
        near[sys->q[i]] += 0.3 + fmod(0.6180339887498949 * (double)(i + 1),
                                      0.5);
    const double *pts[2] = {vars, near};
    double *ev = xcalloc(2 * (n ? n : 1), sizeof *ev), big[2];
    int rc = mass_eigen(sys, e, pts, 2, ev, big);
    free(near);
    bool here = false, there = false;
    for (size_t i = 0; i < n && rc == 0 && big[0] != 0 && big[1] != 0; i++) {
        here |= eigen_is(ev[i], big[0], 0);
        there |= eigen_is(ev[n + i], big[1], 0);
    }
    free(ev);
    return here && !there;
}

size_t slip_energy(const nh_system_t *sys, const expr_t *e, const char *name,
                   bool kinetic, char (*msgs)[SLIP_MSG_MAX], size_t max)
{
    expr_graph_t *g = sys->g;
    size_t n = sys->n, count = 0;
#define SAY(...)                                                        \
    do {                                                                \
        if (count < max)                                                \
            snprintf(msgs[count++], SLIP_MSG_MAX, __VA_ARGS__);         \
    } while (0)
    if (kinetic)
        for (size_t i = 0; i < n; i++)
            if (expr_depends(g, e, sys->q[i]) &&
                !expr_depends(g, e, sys->qd[i]))
                SAY("%s holds the coordinate %s but not its velocity %s': "
                    "%s where %s' was meant?",
                    name, sys->qname[i], sys->qname[i], sys->qname[i],
                    sys->qname[i]);
    if (n == 0 || n > SLIP_MAX_COORDS)
        return count;

    /* M = ∂²E/∂q'∂q', which depends on no velocity in a quadratic form */
    const expr_t **m = mass_nodes(sys, e);
    bool *vel = xcalloc(expr_graph_nvars(g), sizeof *vel);
    for (size_t i = 0; i < n; i++)
        vel[sys->qd[i]] = true;
    size_t bi = n, bv = n;
    for (size_t k = 0; k < n * n && bi == n; k++)
        if (expr_depends_any(g, m[k], vel)) {
            bi = k / n;
            for (size_t w = 0; w < n && bv == n; w++)
                if (expr_depends(g, m[k], sys->qd[w]))
                    bv = w;
        }
    if (bi < n)
        SAY("%s is not a quadratic form in the velocities: its second "
            "derivatives by %s' still depend on %s'",
            name, sys->qname[bi], bv < n ? sys->qname[bv] : "a velocity");
#undef SAY
    free(vel);
    free(m);
    return count;
}
