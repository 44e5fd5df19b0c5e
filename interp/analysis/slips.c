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

int slip_indefinite(const nh_system_t *sys, const expr_t *e,
                    const double *vars)
{
    size_t n = sys->n;
    if (n == 0 || n > SLIP_MAX_COORDS)
        return 0;
    const expr_t **nodes = mass_nodes(sys, e);
    tape_t *tp = tape_compile(sys->g, nodes, n * n, expr_graph_nvars(sys->g));
    double *work = xcalloc(tape_work_size(tp) + 1, sizeof *work);
    gsl_matrix *m = gsl_matrix_alloc(n, n);
    tape_eval(tp, vars, m->data, work); /* n×n, row-major, tda = n */
    int result = 0;
    bool finite = true;
    double big = 0;
    for (size_t i = 0; i < n * n; i++) {
        finite &= isfinite(m->data[i]) != 0;
        big = fmax(big, fabs(m->data[i]));
    }
    if (finite && big > 0) {
        /* the eigenvalues: a negative one, beyond rounding, is a
         * direction of negative kinetic energy */
        gsl_vector *ev = gsl_vector_alloc(n);
        gsl_eigen_symm_workspace *w = gsl_eigen_symm_alloc(n);
        if (gsl_eigen_symm(m, ev, w) == GSL_SUCCESS)
            for (size_t i = 0; i < n; i++)
                if (gsl_vector_get(ev, i) < -1e-9 * big)
                    result = 1;
        gsl_eigen_symm_free(w);
        gsl_vector_free(ev);
    }
    gsl_matrix_free(m);
    free(work);
    tape_free(tp);
    free(nodes);
    return result;
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
