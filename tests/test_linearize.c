/*
 * test_linearize.c — the exact derivatives of the motion
 * (interp/analysis/linearize.c, eom_tangent) against central differences,
 * on every example.
 *
 * Each example in examples/ runs in a session; then, for every method of
 * equations that applies to its model:
 *   - the Jacobian of the ODE right-hand side ∂f/∂(y, t), as the implicit
 *     integrators get it (eom_tangent), against central differences of
 *     eom_rhs at random states around the example's last state;
 *   - the linearization A on the constraint manifold (lin_matrix) against
 *     central differences of the motion in the independent variables,
 *     the dependent ones solved from the constraints (the velocity
 *     solver of `initial`) at each displaced point.
 * Central differences extrapolated (Richardson) are accurate to about
 * 1e-10 relative: agreement within 1e-7 of the entry's row scale (the
 * largest entry of the row and 1) says the exact values are right — and
 * a dropped term of the chain rule (a missing dependent velocity, the
 * wrong sign of dK u) shows up as an error of order 1.
 */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "interp/analysis/linearize.h"
#include "interp/cli/context.h"
#include "interp/cli/session.h"
#include "interp/eom/common.h"
#include "interp/eom/velocity.h"

static double uniform(uint64_t *s, double lo, double hi)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * (double)(*s >> 11) * 0x1.0p-53;
}

typedef struct example {
    session_t *s;
    char *out, *err;
    size_t out_len, err_len;
    FILE *fout, *ferr;
} example_t;

static bool example_open(example_t *x, const char *path)
{
    memset(x, 0, sizeof *x);
    x->fout = open_memstream(&x->out, &x->out_len);
    x->ferr = open_memstream(&x->err, &x->err_len);
    x->s = session_new(true, x->fout, x->ferr);
    return session_run_file(x->s, path) == RUN_OK;
}

static void example_close(example_t *x)
{
    session_free(x->s);
    fclose(x->fout);
    fclose(x->ferr);
    free(x->out);
    free(x->err);
}

/* The largest |a - b| relative to its row's scale, over an R×C pair. */
static double worst_rows(const double *a, const double *b, size_t rows,
                         size_t cols, size_t *wi, size_t *wj)
{
    double worst = 0;
    for (size_t i = 0; i < rows; i++) {
        double scale = 1;
        for (size_t j = 0; j < cols; j++)
            scale = fmax(scale, fmax(fabs(a[i * cols + j]),
                                     fabs(b[i * cols + j])));
        for (size_t j = 0; j < cols; j++) {
            double d = fabs(a[i * cols + j] - b[i * cols + j]) / scale;
            if (!(d <= worst)) {
                worst = d;
                *wi = i;
                *wj = j;
            }
        }
    }
    return worst;
}

/* The step of the central differences, relative to max(|x|, 1): with
 * Richardson's extrapolation from h and h/2 the error is O(h⁴) from
 * truncation and O(ε/h) from rounding.  (A step of 1e-3 meets the
 * curvature of the constraints: the bicycle's steer solved from its
 * pitch constraint while it leans moves far for a small pitch.) */
#define STEP 1e-5

/* A function of M variables with NOUT values: 0, or -1 where it cannot
 * be evaluated. */
typedef int (*map_fn)(void *ctx, const double *x, double *out);

/* F (NOUT rows of M) = ∂out/∂x at X by central differences, extrapolated
 * from the steps h and h/2 (h = STEP·max(|x_j|, 1)); X is kept.  -1 when
 * F cannot be evaluated at a displaced point. */
static int differences(map_fn f, void *ctx, double *x, size_t m, size_t nout,
                       double *F)
{
    double *f1 = malloc((nout + 1) * sizeof *f1);
    double *f2 = malloc((nout + 1) * sizeof *f2);
    int rc = 0;
    for (size_t j = 0; j < m && rc == 0; j++)
        for (int half = 0; half < 2 && rc == 0; half++) {
            double xj = x[j], h = STEP * fmax(fabs(xj), 1.0) / (1 + half);
            x[j] = xj + h;
            rc = f(ctx, x, f1);
            x[j] = xj - h;
            if (rc == 0)
                rc = f(ctx, x, f2);
            x[j] = xj;
            for (size_t i = 0; i < nout && rc == 0; i++) {
                double dd = (f1[i] - f2[i]) / (2 * h);
                F[i * m + j] = half ? (4 * dd - F[i * m + j]) / 3 : dd;
            }
        }
    free(f1);
    free(f2);
    return rc;
}

/* eom_rhs as a map_fn of (y, t). */
typedef struct rhs_map {
    eom_t *e;
    size_t ns;
    double *vars;
} rhs_map_t;

static int rhs_at(void *ctx, const double *yt, double *out)
{
    rhs_map_t *c = ctx;
    diag_t err = {0};
    return eom_rhs(c->e, yt[c->ns], yt, out, c->vars, &err);
}

/* ∂f/∂y and ∂f/∂t at the state in VARS by eom_tangent and by central
 * differences of eom_rhs (extrapolated);
 * the worst disagreement, or -1 when the equations cannot be evaluated
 * at or near the state. */
static double ode_jacobian_error(const nh_system_t *sys, eom_t *e,
                                 const double *vars0)
{
    size_t nv = expr_graph_nvars(sys->g);
    size_t ns = eom_state_size(e), K = ns + 1;
    const uint32_t *sv = eom_state_vars(e), *dv = eom_state_derivs(e);
    double *vars = malloc(nv * sizeof *vars);
    double *dvars = calloc(nv * K, sizeof *dvars);
    double *J = calloc(ns * K, sizeof *J), *F = calloc(ns * K, sizeof *F);
    double *y = malloc(K * sizeof *y); /* the state, then t */
    diag_t err = {0};
    memcpy(vars, vars0, nv * sizeof *vars);
    for (size_t k = 0; k < ns; k++) {
        y[k] = vars[sv[k]];
        dvars[(size_t)sv[k] * K + k] = 1;
    }
    double t = vars[sys->t];
    dvars[(size_t)sys->t * K + ns] = 1;
    double worst = -1;
    if (eom_tangent(e, vars, dvars, K, &err) != 0)
        goto done;
    for (size_t i = 0; i < ns; i++)
        for (size_t j = 0; j < K; j++)
            J[i * K + j] = dvars[(size_t)dv[i] * K + j];
    y[ns] = t;
    rhs_map_t rm = {e, ns, vars};
    if (differences(rhs_at, &rm, y, K, ns, F) != 0)
        goto done;
    size_t wi = 0, wj = 0;
    worst = worst_rows(J, F, ns, K, &wi, &wj);
    if (worst > 1e-7)
        print_error("  d(%s)'/d%s: exact %.12g, differences %.12g\n",
                    expr_var_name(sys->g, sv[wi]),
                    wj < ns ? expr_var_name(sys->g, sv[wj]) : "t",
                    J[wi * K + wj], F[wi * K + wj]);
done:
    free(vars);
    free(dvars);
    free(J);
    free(F);
    free(y);
    return worst;
}

/* The motion in the independent variables at X (their values written
 * into VARS, the dependent ones solved from the constraints as `initial`
 * solves them, the others given): the rates of the independent variables
 * into RATE.  Returns 0, or -1 when the constraints or the equations
 * fail there. */
static int manifold_rates(const nh_system_t *sys, eom_t *e, lin_t *l,
                          eom_velsolver_t *vs, double *vars,
                          const double *x, double *rate)
{
    size_t n = sys->n, m = lin_size(l);
    const uint32_t *ind = lin_vars(l), *dep;
    size_t nd = lin_dependent(l, &dep);
    bool *given_q = malloc(n + 1), *given_v = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        given_q[i] = given_v[i] = true;
    for (size_t k = 0; k < nd; k++)
        for (size_t i = 0; i < n; i++) {
            if (dep[k] == sys->q[i])
                given_q[i] = false;
            if (dep[k] == sys->qd[i])
                given_v[i] = false;
        }
    for (size_t k = 0; k < m; k++)
        vars[ind[k]] = x[k];
    diag_t err = {0};
    int rc = eom_velsolver_positions(vs, vars, given_q, NULL, &err);
    if (rc == 0)
        rc = eom_velsolver_solve(vs, vars, given_v, NULL, &err);
    if (rc == 0)
        rc = eom_accel(e, vars, &err);
    const uint32_t *sv = eom_state_vars(e), *dv = eom_state_derivs(e);
    for (size_t k = 0; k < m && rc == 0; k++)
        for (size_t s = 0; s < eom_state_size(e); s++)
            if (sv[s] == ind[k])
                rate[k] = vars[dv[s]];
    free(given_q);
    free(given_v);
    return rc;
}

/* manifold_rates as a map_fn, from the state VARS0 each time. */
typedef struct manifold_map {
    const nh_system_t *sys;
    eom_t *e;
    lin_t *l;
    eom_velsolver_t *vs;
    double *vars;
    const double *vars0;
    size_t nv;
} manifold_map_t;

static int manifold_at(void *ctx, const double *x, double *out)
{
    manifold_map_t *c = ctx;
    memcpy(c->vars, c->vars0, c->nv * sizeof *c->vars);
    return manifold_rates(c->sys, c->e, c->l, c->vs, c->vars, x, out);
}

/* A at the state in VARS0 by lin_matrix and by central differences of
 * manifold_rates; the worst disagreement, or -1 as above. */
static double manifold_error(const nh_system_t *sys, eom_t *e,
                             const model_t *model, const double *vars0,
                             const char *name)
{
    size_t nv = expr_graph_nvars(sys->g), n = sys->n;
    lin_t *l = lin_new(sys, e);
    eom_velsolver_t *vs = eom_velsolver_new(sys);
    bool *flags = calloc(4 * (n + 1), sizeof *flags);
    bool *gq = flags, *uq = flags + (n + 1), *gv = flags + 2 * (n + 1),
         *uv = flags + 3 * (n + 1);
    for (size_t i = 0; i < n; i++) {
        gq[i] = model->q0_how.v[i] == MODEL_INIT_GIVEN;
        uq[i] = model->q0_how.v[i] == MODEL_INIT_GUESS;
        gv[i] = model->qd0_how.v[i] == MODEL_INIT_GIVEN;
        uv[i] = model->qd0_how.v[i] == MODEL_INIT_GUESS;
    }
    double *vars = malloc(nv * sizeof *vars);
    memcpy(vars, vars0, nv * sizeof *vars);
    diag_t err = {0};
    double worst = -1;
    size_t m = 0;
    double *A = NULL, *F = NULL, *x = NULL;
    if (lin_choose(l, vars, gq, uq, gv, uv, &err) != 0)
        goto done;
    m = lin_size(l);
    A = calloc(m * m + 1, sizeof *A);
    F = calloc(m * m + 1, sizeof *F);
    x = calloc(m + 1, sizeof *x);
    if (lin_matrix(l, vars, A, &err) != 0)
        goto done;
    const uint32_t *ind = lin_vars(l);
    for (size_t k = 0; k < m; k++)
        x[k] = vars0[ind[k]];
    manifold_map_t mm = {sys, e, l, vs, vars, vars0, nv};
    if (differences(manifold_at, &mm, x, m, m, F) != 0)
        goto done;
    size_t wi = 0, wj = 0;
    worst = worst_rows(A, F, m, m, &wi, &wj);
    if (worst > 1e-7)
        print_error("  %s: A[%s, %s]: exact %.12g, differences %.12g\n",
                    name, expr_var_name(sys->g, ind[wi]),
                    expr_var_name(sys->g, ind[wj]), A[wi * m + wj],
                    F[wi * m + wj]);
done:
    free(A);
    free(F);
    free(x);
    free(vars);
    free(flags);
    eom_velsolver_free(vs);
    lin_free(l);
    return worst;
}

static int name_order(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_every_example(void **state)
{
    (void)state;
    const char *dir = getenv("NH_SRCDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/examples", dir ? dir : ".");
    DIR *d = opendir(path);
    assert_non_null(d);
    char *names[256];
    size_t nn = 0;
    for (struct dirent *de; (de = readdir(d)) && nn < 256;) {
        size_t len = strlen(de->d_name);
        if (len > 3 && strcmp(de->d_name + len - 3, ".nh") == 0)
            names[nn++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, nn, sizeof *names, name_order);
    uint64_t seed = 1955;
    size_t ode_checked = 0, lin_checked = 0;
    for (size_t f = 0; f < nn; f++) {
        char file[4352];
        snprintf(file, sizeof file, "%s/%s", path, names[f]);
        example_t x;
        if (!example_open(&x, file)) {
            fflush(x.ferr);
            fail_msg("%s: %s", names[f], x.err);
        }
        ctx_t *c = session_ctx(x.s);
        diag_t err = {0};
        lower_t *lw = ctx_lowered(c, &err);
        assert_non_null(lw);
        const nh_system_t *sys = lower_system(lw);
        size_t nv = expr_graph_nvars(sys->g);
        double *vars = malloc((nv + 1) * sizeof *vars);
        double *base = malloc((nv + 1) * sizeof *base);
        for (int m = 0; m < EOM_METHOD_COUNT; m++) {
            diag_t perr = {0};
            eom_t *e = eom_prepare(sys, (eom_method_t)m, SRC_SPAN_NONE, &perr);
            if (!e)
                continue;
            lower_fill_vars(lw, &c->model, base);
            /* the example's own state: on the manifold */
            memcpy(vars, base, nv * sizeof *vars);
            char what[256];
            snprintf(what, sizeof what, "%s, %s", names[f],
                     eom_method_name((eom_method_t)m));
            double w = manifold_error(sys, e, &c->model, vars, what);
            if (w >= 0) {
                lin_checked++;
                if (w > 1e-7)
                    fail_msg("%s: the linearization differs by %g", what, w);
            }
            /* random states around it, for the ODE Jacobian */
            const uint32_t *sv = eom_state_vars(e);
            for (int k = 0; k < 3; k++) {
                memcpy(vars, base, nv * sizeof *vars);
                for (size_t i = 0; i < eom_state_size(e); i++)
                    vars[sv[i]] += uniform(&seed, -0.1, 0.1) *
                                   fmax(1, fabs(vars[sv[i]]));
                double wj = ode_jacobian_error(sys, e, vars);
                if (wj < 0)
                    continue;
                ode_checked++;
                if (wj > 1e-7)
                    fail_msg("%s: the ODE Jacobian differs by %g", what, wj);
            }
            eom_free(e);
        }
        free(vars);
        free(base);
        example_close(&x);
        free(names[f]);
    }
    /* every example, most methods: enough comparisons were made */
    assert_true(lin_checked >= nn);
    assert_true(ode_checked >= 3 * nn);
}

/* Directions taken in blocks (eom_tangent, when the tapes' derivatives
 * in all of them would pass EOM_TANGENT_BUDGET: a linearization of 1000
 * particles took 8 GB, issue 31) give the numbers of one pass, bit for
 * bit: on every example and method, the ODE Jacobian's ns + 1 directions
 * at once, and in blocks of 1, 2 and 3 (the blocks after the first reuse
 * the values and the factorization of the first). */
static void test_blocks_equal_one_pass(void **state)
{
    (void)state;
    const char *dir = getenv("NH_SRCDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/examples", dir ? dir : ".");
    DIR *d = opendir(path);
    assert_non_null(d);
    size_t compared = 0;
    uint64_t seed = 7;
    for (struct dirent *de; (de = readdir(d));) {
        size_t len = strlen(de->d_name);
        if (len <= 3 || strcmp(de->d_name + len - 3, ".nh") != 0)
            continue;
        char file[4352];
        snprintf(file, sizeof file, "%s/%s", path, de->d_name);
        example_t x;
        if (!example_open(&x, file))
            fail_msg("%s does not run", de->d_name);
        ctx_t *c = session_ctx(x.s);
        diag_t err = {0};
        lower_t *lw = ctx_lowered(c, &err);
        const nh_system_t *sys = lower_system(lw);
        size_t nv = expr_graph_nvars(sys->g);
        for (int m = 0; m < EOM_METHOD_COUNT; m++) {
            eom_t *e[4];
            diag_t perr = {0};
            for (int b = 0; b < 4; b++) {
                e[b] = eom_prepare(sys, (eom_method_t)m, SRC_SPAN_NONE, &perr);
                if (e[b])
                    e[b]->t_max_block = (size_t)b; /* 0: one pass */
            }
            if (!e[0]) {
                for (int b = 1; b < 4; b++)
                    eom_free(e[b]);
                continue;
            }
            size_t ns = eom_state_size(e[0]), K = ns + 1;
            const uint32_t *sv = eom_state_vars(e[0]);
            double *base = malloc((nv + 1) * sizeof *base);
            double *res[4];
            int rc[4];
            lower_fill_vars(lw, &c->model, base);
            for (size_t i = 0; i < ns; i++)
                base[sv[i]] += uniform(&seed, -0.1, 0.1);
            for (int b = 0; b < 4; b++) {
                double *vars = malloc((nv + 1) * sizeof *vars);
                memcpy(vars, base, nv * sizeof *vars);
                res[b] = calloc(nv * K, sizeof *res[b]);
                for (size_t i = 0; i < ns; i++)
                    res[b][(size_t)sv[i] * K + i] = 1;
                res[b][(size_t)sys->t * K + ns] = 1;
                diag_t terr = {0};
                rc[b] = eom_tangent(e[b], vars, res[b], K, &terr);
                free(vars);
            }
            for (int b = 1; b < 4; b++) {
                assert_int_equal(rc[b], rc[0]);
                for (size_t i = 0; i < nv * K && rc[0] == 0; i++)
                    if (memcmp(&res[b][i], &res[0][i], sizeof(double)) != 0)
                        fail_msg("%s, %s, blocks of %d: %s in direction %zu: "
                                 "%.17g, one pass %.17g",
                                 de->d_name, eom_method_name((eom_method_t)m),
                                 b, expr_var_name(sys->g, (uint32_t)(i / K)),
                                 i % K, res[b][i], res[0][i]);
            }
            compared += rc[0] == 0;
            for (int b = 0; b < 4; b++) {
                free(res[b]);
                eom_free(e[b]);
            }
            free(base);
        }
        example_close(&x);
    }
    closedir(d);
    assert_true(compared >= 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_example),
        cmocka_unit_test(test_blocks_equal_one_pass),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
