/*
 * cgen.c — the prepared equations of motion as C text (cgen.h).
 *
 * Generated from the same tapes that nh evaluates, so that the two
 * cannot drift apart: every tape the method's compute step runs (the
 * fast tape of common.c, maggi's first tape, the main tape) becomes a
 * straight-line C function by tape_write_c, operation for operation in
 * the tape's order, and the compute step after the tapes — the dense
 * solves — is written out below as C text, a port of the function named
 * above each piece, statement for statement and in the same order:
 *
 *   the fast path        common.c  eom_fast_compute, eom_fast_values,
 *                                  and for the right-hand side eom_rhs
 *   lagrange             mult.c    lagrange_compute
 *   multipliers          mult.c    multipliers_compute, multipliers_blocks
 *   second_kind          mult.c    second_kind_compute
 *   voronec, naive       voronec.c voronec_compute
 *   maggi                maggi.c   maggi_compute_matrix
 *   gibbs_appell         maggi.c   maggi_compute
 *   LU, LDLᵀ             linalg.c  linalg_lu, linalg_lu_solve, linalg_ldlt,
 *                                  linalg_ldlt_solve; common.c
 *                                  eom_solve_symmetric, eom_unpack_*
 *
 * A change to one of those functions must be made here too; the tests
 * (tests/test_cgen.c, tests/export_c.sh) compare the compiled text with
 * eom_accel bit for bit on every method and example, at regular states
 * and at singular ones, so a port that drifts fails them.
 *
 * The generated code says only whether it succeeded (0, CGEN_SINGULAR,
 * CGEN_NONFINITE): nh words its errors by running the tapes again at the
 * same state (eom_set_native), which meet the same failure.  The text is
 * deterministic — the same model and method give the same bytes — since
 * run/native.c caches the compiled code by its hash.
 *
 * Must not: print; change the eom_t or the system (the residual tapes
 * are compiled here and freed; compiling adds no node to the graph).
 */
#include "interp/eom/cgen.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"
#include "interp/eom/cgen_jac.h"
#include "interp/eom/common.h"
#include "interp/eom/linalg.h"
#include "interp/eom/velocity.h"
#include "interp/expr/tape.h"

/* ---- the dense algebra, as C text ---------------------------------------- */

/* Helper functions of the generated file, written once each, in this
 * order (each after the ones it calls), when the compute step uses them. */
enum {
    H_FINITE,
    H_UNPACK_LOWER,
    H_UNPACK_SYMMETRIC,
    H_MAX_ABS,
    H_LU,
    H_LU_SOLVE,
    H_LDLT,
    H_LDLT_SOLVE,
    H_SOLVE_SYMMETRIC,
    H_COUNT
};

static const struct {
    unsigned needs; /* the helpers it calls */
    const char *text;
} cgen_helpers[H_COUNT] = {
    /* eom_check_finite, without the message (independent tests: a
     * reduction would be one long chain of dependent additions) */
    [H_FINITE] = {0,
                  "static int nh_finite(const double *v, int count)\n"
                  "{\n"
                  "    int k;\n"
                  "    for (k = 0; k < count; k++)\n"
                  "        if (!isfinite(v[k]))\n"
                  "            return 0;\n"
                  "    return 1;\n"
                  "}\n"},
    /* eom_unpack_lower */
    [H_UNPACK_LOWER] = {0,
                        "static void nh_unpack_lower(const double *u, int n, "
                        "double *f)\n"
                        "{\n"
                        "    int i, j, k = 0;\n"
                        "    for (i = 0; i < n; i++)\n"
                        "        for (j = i; j < n; j++)\n"
                        "            f[j * n + i] = u[k++];\n"
                        "}\n"},
    /* eom_unpack_symmetric */
    [H_UNPACK_SYMMETRIC] = {0,
                            "static void nh_unpack_symmetric(const double *u, "
                            "int n, double *f, int ld)\n"
                            "{\n"
                            "    int i, j, k = 0;\n"
                            "    for (i = 0; i < n; i++)\n"
                            "        for (j = i; j < n; j++) {\n"
                            "            f[i * ld + j] = u[k];\n"
                            "            f[j * ld + i] = u[k];\n"
                            "            k++;\n"
                            "        }\n"
                            "}\n"},
    /* linalg_max_abs */
    [H_MAX_ABS] = {0,
                   "static double nh_max_abs(const double *a, int count)\n"
                   "{\n"
                   "    double m = 0.0;\n"
                   "    int k;\n"
                   "    for (k = 0; k < count; k++) {\n"
                   "        double v = fabs(a[k]);\n"
                   "        if (v > m)\n"
                   "            m = v;\n"
                   "    }\n"
                   "    return m;\n"
                   "}\n"},
    /* linalg_lu */
    [H_LU] = {1u << H_MAX_ABS,
              "static int nh_lu(double *a, int n, int *perm)\n"
              "{\n"
              "    double tol = NH_RTOL * nh_max_abs(a, n * n);\n"
              "    int i, j, k;\n"
              "    for (k = 0; k < n; k++)\n"
              "        perm[k] = k;\n"
              "    if (!(tol > 0.0))\n"
              "        return n == 0 ? 0 : -1;\n"
              "    for (k = 0; k < n; k++) {\n"
              "        int p = k;\n"
              "        double best = fabs(a[k * n + k]), inv;\n"
              "        double *rk;\n"
              "        for (i = k + 1; i < n; i++) {\n"
              "            double v = fabs(a[i * n + k]);\n"
              "            if (v > best) {\n"
              "                best = v;\n"
              "                p = i;\n"
              "            }\n"
              "        }\n"
              "        if (!(best > tol))\n"
              "            return -1;\n"
              "        if (p != k) {\n"
              "            double *rp = a + p * n;\n"
              "            int s;\n"
              "            rk = a + k * n;\n"
              "            for (j = 0; j < n; j++) {\n"
              "                double t = rk[j];\n"
              "                rk[j] = rp[j];\n"
              "                rp[j] = t;\n"
              "            }\n"
              "            s = perm[k];\n"
              "            perm[k] = perm[p];\n"
              "            perm[p] = s;\n"
              "        }\n"
              "        rk = a + k * n;\n"
              "        inv = 1.0 / rk[k];\n"
              "        rk[k] = inv;\n"
              "        for (i = k + 1; i < n; i++) {\n"
              "            double *ri = a + i * n;\n"
              "            double f = ri[k] * inv;\n"
              "            ri[k] = f;\n"
              "            for (j = k + 1; j < n; j++)\n"
              "                ri[j] -= f * rk[j];\n"
              "        }\n"
              "    }\n"
              "    return 0;\n"
              "}\n"},
    /* linalg_lu_solve */
    [H_LU_SOLVE] = {0,
                    "static void nh_lu_solve(const double *lu, int n, "
                    "const int *perm, double *b,\n"
                    "                        double *y)\n"
                    "{\n"
                    "    int i, j;\n"
                    "    for (i = 0; i < n; i++) {\n"
                    "        double s = b[perm[i]];\n"
                    "        const double *ri = lu + i * n;\n"
                    "        for (j = 0; j < i; j++)\n"
                    "            s -= ri[j] * y[j];\n"
                    "        y[i] = s;\n"
                    "    }\n"
                    "    for (i = n - 1; i >= 0; i--) {\n"
                    "        double s = y[i];\n"
                    "        const double *ri = lu + i * n;\n"
                    "        for (j = i + 1; j < n; j++)\n"
                    "            s -= ri[j] * b[j];\n"
                    "        b[i] = s * ri[i];\n"
                    "    }\n"
                    "}\n"},
    /* linalg_ldlt */
    [H_LDLT] = {0,
                "static int nh_ldlt(double *a, int n)\n"
                "{\n"
                "    double amax = 0.0, tol, first = 0.0;\n"
                "    int i, j, k, p;\n"
                "    for (i = 0; i < n; i++)\n"
                "        for (j = 0; j <= i; j++) {\n"
                "            double v = fabs(a[i * n + j]);\n"
                "            if (v > amax || v != v)\n"
                "                amax = v;\n"
                "        }\n"
                "    tol = NH_RTOL * amax;\n"
                "    if (!(tol > 0.0))\n"
                "        return n == 0 ? 0 : -1;\n"
                "    for (j = 0; j < n; j++) {\n"
                "        double *rj = a + j * n;\n"
                "        double d = rj[j];\n"
                "        for (k = 0; k < j; k++) {\n"
                "            const double *rk = a + k * n;\n"
                "            double w = rj[k], l;\n"
                "            for (p = 0; p < k; p++)\n"
                "                w -= a[p * n + j] * rk[p];\n"
                "            a[k * n + j] = w;\n"
                "            l = w * rk[k];\n"
                "            rj[k] = l;\n"
                "            d -= l * w;\n"
                "        }\n"
                "        if (!(fabs(d) > tol) || (j > 0 && (d > 0) != "
                "(first > 0)))\n"
                "            return -1;\n"
                "        if (j == 0)\n"
                "            first = d;\n"
                "        rj[j] = 1.0 / d;\n"
                "    }\n"
                "    return 0;\n"
                "}\n"},
    /* linalg_ldlt_solve */
    [H_LDLT_SOLVE] = {0,
                      "static void nh_ldlt_solve(const double *ld, int n, "
                      "double *b)\n"
                      "{\n"
                      "    int i, k;\n"
                      "    for (i = 0; i < n; i++) {\n"
                      "        const double *ri = ld + i * n;\n"
                      "        double s = b[i];\n"
                      "        for (k = 0; k < i; k++)\n"
                      "            s -= ri[k] * b[k];\n"
                      "        b[i] = s;\n"
                      "    }\n"
                      "    for (i = 0; i < n; i++)\n"
                      "        b[i] *= ld[i * n + i];\n"
                      "    for (i = n - 1; i >= 0; i--) {\n"
                      "        double s = b[i];\n"
                      "        for (k = i + 1; k < n; k++)\n"
                      "            s -= ld[k * n + i] * b[k];\n"
                      "        b[i] = s;\n"
                      "    }\n"
                      "}\n"},
    /* eom_solve_symmetric */
    [H_SOLVE_SYMMETRIC] = {(1u << H_UNPACK_LOWER) | (1u << H_UNPACK_SYMMETRIC) |
                               (1u << H_LU) | (1u << H_LU_SOLVE) |
                               (1u << H_LDLT) | (1u << H_LDLT_SOLVE),
                           "static int nh_solve_symmetric(const double *upper, "
                           "int n, double *x, double *f,\n"
                           "                              double *w, int *perm)\n"
                           "{\n"
                           "    nh_unpack_lower(upper, n, f);\n"
                           "    if (nh_ldlt(f, n) == 0) {\n"
                           "        nh_ldlt_solve(f, n, x);\n"
                           "        return 0;\n"
                           "    }\n"
                           "    nh_unpack_symmetric(upper, n, f, n);\n"
                           "    if (nh_lu(f, n, perm) != 0)\n"
                           "        return -1;\n"
                           "    nh_lu_solve(f, n, perm, x, w);\n"
                           "    return 0;\n"
                           "}\n"},
};

/* ---- the generator ---------------------------------------------------------- */

typedef struct cgen {
    const eom_t *e;
    const nh_system_t *sys;
    const cgen_options_t *opt;
    strbuf_t tapes;       /* the tape functions */
    strbuf_t code;        /* the compute step */
    strbuf_t api;         /* the public functions */
    unsigned tape_helpers; /* tape_write_c's helpers */
    eom_velsolver_t *vs;   /* the constraints' Jacobians' tapes */
    unsigned helpers;      /* H_* bits */
    size_t stack;          /* doubles kept on the stack, at most */
    bool fast_rhs;         /* nh_fast_rates was written */
    tape_t *vel;           /* voronec, naive: the dependent velocities */
    tape_t *res;           /* the constraints as declared */
    const tape_t *mon;     /* simulate's monitors (eom_monitor_tape) */
} cgen_t;

static void cgen_need(cgen_t *c, unsigned h)
{
    c->helpers |= 1u << h;
}

/* The helpers needed, with the ones they call (which come earlier in
 * the enum, so one pass from the last down closes the set). */
static unsigned cgen_helper_closure(unsigned set)
{
    for (int h = H_COUNT - 1; h >= 0; h--)
        if (set & (1u << h))
            set |= cgen_helpers[h].needs;
    return set;
}

static void cgen_stack(cgen_t *c, size_t doubles)
{
    if (doubles > c->stack)
        c->stack = doubles;
}

/* Writes "v[VAR[i]] = SRC[OFF + i];" for i < COUNT. */
static void cgen_scatter(strbuf_t *b, const uint32_t *var, size_t count,
                         const char *src, size_t off)
{
    for (size_t i = 0; i < count; i++)
        strbuf_addf(b, "    v[%u] = %s[%zu];\n", var[i], src, off + i);
}

/* Writes "v[VAR[i]] = NAN;" for the multipliers (eom_clear_lambda). */
static void cgen_clear_lambda(cgen_t *c, strbuf_t *b)
{
    for (size_t a = 0; a < c->sys->r; a++)
        strbuf_addf(b, "    v[%u] = NAN;\n", c->sys->lam[a]);
}

/* A tape function NAME (INPUT: tape_write_c's), counted on the stack by
 * its work slots. */
static void cgen_tape(cgen_t *c, const tape_t *t, const char *name,
                      const char *const *input)
{
    tape_write_c(t, &c->tapes, name, c->sys->g, input, &c->tape_helpers);
    strbuf_add(&c->tapes, "\n");
    cgen_stack(c, tape_work_size(t) + tape_nout(t));
}

/* The array sizes of the text: C has no arrays of length 0. */
static size_t cgen_len(size_t n)
{
    return n ? n : 1;
}

/* ---- the derivatives: tape_eval_tangent ------------------------------- */

/* The forward-mode derivatives of the main tape (and of the first tape,
 * where the method has one) as nh's eom_tangent_tape and eom_tangent_pre
 * run them, for `linearize`, `eigen`, `sweep` and the implicit
 * integrators once compiled: NAME_tangent_main and NAME_tangent_pre,
 * with the sizes of their value arrays w, NAME_tangent_main_work and
 * NAME_tangent_pre_work (dw is the tape's work slots times k): the text
 * of cgen_tangent_text, a file apart from the equations'.  The dense
 * algebra after the tapes stays nh's (common.c, eom_tangent: the
 * methods' implicit derivatives of their solves). */
static void cgen_tangents(cgen_t *c)
{
    const eom_t *e = c->e;
    const char *name = c->opt->name;
    const tape_t *t[2] = {e->tape, e->pre};
    static const char *const which[2] = {"main", "pre"};
    for (int q = 0; q < 2; q++) {
        if (!t[q])
            continue;
        char fn[32];
        snprintf(fn, sizeof fn, "nh_tan_%s", which[q]);
        tape_write_c_tangent(t[q], &c->tapes, fn, &c->tape_helpers);
        strbuf_add(&c->tapes, "\n");
        strbuf_addf(&c->api,
                    "const int %s_tangent_%s_work = %zu;\n\n"
                    "void %s_tangent_%s(const double *v, const double *dv, "
                    "long k, double *o,\n"
                    "        double *dout, double *w, double *dw)\n"
                    "{\n"
                    "    %s(v, dv, k, o, dout, w, dw);\n"
                    "}\n\n",
                    name, which[q], tape_c_tangent_values(t[q]), name, which[q],
                    fn);
    }
}

/* The constraints' Jacobians as eom_velsolver_jacobians takes them (J and
 * B by a tape, Cq by the derivatives of Ceff along the coordinates it
 * reads), for lyapunov, which takes them at every evaluation of the
 * motion, once compiled: NAME_constraint_jacobians and
 * NAME_constraint_tangent, with the size of the latter's value array,
 * NAME_constraint_tangent_work.  The tapes are the velsolver's own
 * (eom_velsolver_jacobian_tapes), so the numbers are its, bit for bit. */
static void cgen_constraints(cgen_t *c, const tape_t *tjac,
                             const tape_t *tceff)
{
    const char *name = c->opt->name;
    cgen_tape(c, tjac, "nh_tape_jac", NULL);
    tape_write_c_tangent(tceff, &c->tapes, "nh_tan_ceff", &c->tape_helpers);
    strbuf_add(&c->tapes, "\n");
    strbuf_addf(&c->api,
                "void %s_constraint_jacobians(const double *v, double *o)\n"
                "{\n"
                "    nh_tape_jac(v, o);\n"
                "}\n\n"
                "const int %s_constraint_tangent_work = %zu;\n\n"
                "void %s_constraint_tangent(const double *v, const double *dv, "
                "long k,\n"
                "        double *o, double *dout, double *w, double *dw)\n"
                "{\n"
                "    nh_tan_ceff(v, dv, k, o, dout, w, dw);\n"
                "}\n\n",
                name, name, tape_c_tangent_values(tceff), name);
}

/* ---- the fast path: common.c eom_fast_compute --------------------------- */

/* "if (!((ARR[0] - ARR[0]) + ... == 0)) return RC;" written out (the
 * counts of a fast path are small and known), or through nh_finite past
 * 32 values: x − x is 0 for a finite x and NaN for an infinity or a NaN,
 * so one comparison tests them all, without a branch per value (the
 * compiler keeps x − x: the file is not built with -ffinite-math-only). */
static void cgen_finite(cgen_t *c, strbuf_t *b, const char *arr, size_t off,
                        size_t count, const char *rc)
{
    if (count == 0)
        return;
    if (count > 32) {
        cgen_need(c, H_FINITE);
        strbuf_addf(b, "    if (!nh_finite(%s + %zu, %zu))\n        return %s;\n",
                    arr, off, count, rc);
        return;
    }
    strbuf_add(b, "    if (!(");
    for (size_t k = 0; k < count; k++)
        strbuf_addf(b, "%s(%s[%zu] - %s[%zu])",
                    k ? k % 3 ? " + " : " +\n          " : "", arr, off + k,
                    arr, off + k);
    strbuf_addf(b, " == 0))\n        return %s;\n", rc);
}

/* The fast path's function: nh_fast(v) writes the values into the value
 * vector as eom_fast_compute does; with DYDT (by state entry: the C text
 * of its derivative, the fast tape's outputs or the state), it is
 * nh_fast_rates(t, y, v, dydt), which reads the state from y and writes
 * dy/dt alone, for the right-hand side. */
static void cgen_fast_fn(cgen_t *c, char **dydt)
{
    const eom_t *e = c->e;
    strbuf_t *b = &c->code;
    size_t nout = tape_nout(e->fast);
    if (dydt)
        strbuf_addf(b,
                    "/* The fast path for the right-hand side: the same, "
                    "on the state y,\n"
                    " * writing dy/dt. */\n"
                    "static int nh_fast_rates(double t, const double *y, "
                    "const double *v, double *dydt)\n"
                    "{\n"
                    "    double o[%zu], dmax, tol;\n",
                    cgen_len(nout));
    else
        strbuf_addf(b,
                    "/* The fast path (nh: common.c, eom_fast_compute): the "
                    "fast tape, its\n"
                    " * pivots, then the values; -1 sends the call to the "
                    "numeric path.  The\n"
                    " * checks are written out: dmax = fmax(dmax, fabs(d)) as "
                    "a comparison (the\n"
                    " * same value: fmax keeps dmax when fabs(d) is NaN, and "
                    "fabs is never -0). */\n"
                    "static int nh_fast(double *v)\n"
                    "{\n"
                    "    double o[%zu], dmax, tol;\n",
                    cgen_len(nout));
    if (e->fast_ngroup > 1)
        strbuf_add(b, "    double dmax0;\n");
    strbuf_add(b, dydt ? "    nh_tape_fast_rhs(t, y, v, o);\n"
                       : "    nh_tape_fast(v, o);\n");
    size_t at = 0;
    for (size_t gi = 0; gi < e->fast_ngroup; gi++) {
        size_t p = e->fast_group[gi];
        strbuf_addf(b, "    /* matrix %zu: the largest of its %zu diagonal "
                       "entries, then the pivots */\n"
                       "    dmax = 0.0;\n",
                    gi + 1, p);
        for (size_t i = 0; i < p; i++)
            strbuf_addf(b, "    if (fabs(o[%zu]) > dmax)\n"
                           "        dmax = fabs(o[%zu]);\n",
                        at + i, at + i);
        if (gi == 0 && e->fast_ngroup > 1)
            strbuf_add(b, "    dmax0 = dmax;\n");
        else if (gi > 0)
            /* eom_schur_negligible */
            strbuf_add(b, "    if (!(dmax * dmax0 >= NH_RTOL))\n"
                          "        return -1;\n");
        strbuf_add(b, "    tol = NH_RTOL * dmax;\n");
        if (p > 0) {
            strbuf_add(b, "    if (");
            for (size_t i = 0; i < p; i++)
                strbuf_addf(b, "%s!(fabs(o[%zu]) > tol)",
                            i ? " ||\n        " : "", at + p + i);
            for (size_t i = 1; i < p; i++)
                strbuf_addf(b, " ||\n        (o[%zu] > 0) != (o[%zu] > 0)",
                            at + p + i, at + p);
            strbuf_add(b, ")\n        return -1;\n");
        } else {
            strbuf_add(b, "    (void)tol;\n");
        }
        at += 2 * p;
    }
    if (dydt) {
        /* eom_rhs: the sum of the computed derivatives in the state's
         * order must be finite, as cgen_rhs_end and the tapes test it */
        size_t n = 0;
        for (size_t k = 0; k < e->nstate; k++)
            if (e->fast_dydt[k] >= 0)
                strbuf_addf(b, "%s%s", n++ ? " + " : "    {\n        const double fin = ",
                            dydt[k]);
        if (n)
            strbuf_add(b, ";\n        if (!(fin - fin == 0))\n"
                          "            return -1;\n    }\n");
        for (size_t k = 0; k < e->nstate; k++)
            strbuf_addf(b, "    dydt[%zu] = %s;\n", k, dydt[k]);
    } else {
        cgen_finite(c, b, "o", at, e->fast_nval, "-1");
        for (size_t i = 0; i < e->fast_nval; i++)
            strbuf_addf(b, "    v[%u] = o[%zu];\n", e->fast_var[i], at + i);
        if (e->fast_clear_lambda)
            cgen_clear_lambda(c, b);
    }
    strbuf_add(b, "    return 0;\n}\n\n");
    cgen_stack(c, nout);
}

/* The derivative of each state entry as eom_rhs's fast path takes it
 * (e->fast_dydt): a value of the fast tape (o[K]) or an entry of the
 * state (y[K]); NULL when the fast path does not give them all (the
 * right-hand side then takes the value vector's path). */
static char **cgen_fast_dydt(const cgen_t *c)
{
    const eom_t *e = c->e;
    if (!e->fast_dydt)
        return NULL;
    size_t at = 0;
    for (size_t gi = 0; gi < e->fast_ngroup; gi++)
        at += 2 * e->fast_group[gi];
    char **dydt = xcalloc(e->nstate + 1, sizeof *dydt);
    for (size_t k = 0; k < e->nstate; k++) {
        char buf[48];
        int32_t j = e->fast_dydt[k];
        if (j >= 0)
            snprintf(buf, sizeof buf, "o[%zu]", at + (size_t)j);
        else
            snprintf(buf, sizeof buf, "y[%d]", -1 - j);
        dydt[k] = xstrdup(buf);
    }
    return dydt;
}

/* The variables as the right-hand side's functions read them: the state
 * from y, t from t (NULL: from the value vector). */
static char **cgen_rhs_inputs(const cgen_t *c)
{
    const eom_t *e = c->e;
    char **in = xcalloc(e->nvars + 1, sizeof *in);
    char buf[48];
    for (size_t k = 0; k < e->nstate; k++) {
        snprintf(buf, sizeof buf, "y[%zu]", k);
        in[e->state[k]] = xstrdup(buf);
    }
    in[c->sys->t] = xstrdup("t");
    return in;
}

static void cgen_free_strings(char **s, size_t n)
{
    if (!s)
        return;
    for (size_t k = 0; k < n; k++)
        free(s[k]);
    free(s);
}

/* ---- the fast path for the right-hand side, as one function ------------ */

/* nh_fast_rates written as the fast tape itself (tape_write_c_frame), which
 * decides as cgen_fast_fn's does but in another order: each matrix's
 * checks where the last of its entries is computed, so that the values
 * they read are not kept alive to the end; each derivative stored into
 * dydt where it is computed; the finiteness of the computed derivatives
 * at the end, by their sum in the state's order, as eom_rhs tests it (a
 * sum is finite only if every term is).  On the sphere under multipliers
 * this took the compiled right-hand side from 36.5 to 28.5 ns
 * (doc/performance.md, "Seventh session").  A failure may have stored
 * some derivatives: nh_rates's numeric path then writes them all. */
typedef struct cgen_rhs_frame {
    cgen_t *c;
    size_t nout;   /* the fast tape's outputs */
    char **text;   /* by output: its C text, once written */
    size_t checked; /* the matrices checked so far */
} cgen_rhs_frame_t;

/* The first output after the matrices (their diagonals and pivots). */
static size_t cgen_fast_values_at(const eom_t *e)
{
    size_t at = 0;
    for (size_t gi = 0; gi < e->fast_ngroup; gi++)
        at += 2 * e->fast_group[gi];
    return at;
}

/* The checks of matrix GI (its entries from output AT) on the texts of
 * its outputs: cgen_fast_fn's, with its own dmax and tol. */
static void cgen_rhs_check(cgen_rhs_frame_t *f, size_t gi, size_t at,
                           strbuf_t *b)
{
    const eom_t *e = f->c->e;
    size_t p = e->fast_group[gi];
    char *const *x = f->text + at;
    bool kept = gi == 0 && e->fast_ngroup > 1; /* dmax1 is read later */
    if (p == 0 && gi == 0 && !kept)
        return;
    strbuf_addf(b, "    /* matrix %zu: the largest of its %zu diagonal "
                   "entries, then the pivots */\n"
                   "    double dmax%zu = 0.0;\n",
                gi + 1, p, gi + 1);
    for (size_t i = 0; i < p; i++)
        strbuf_addf(b, "    if (fabs(%s) > dmax%zu)\n"
                       "        dmax%zu = fabs(%s);\n",
                    x[i], gi + 1, gi + 1, x[i]);
    if (gi > 0) /* eom_schur_negligible */
        strbuf_addf(b, "    if (!(dmax%zu * dmax1 >= NH_RTOL))\n"
                       "        return -1;\n",
                    gi + 1);
    if (p == 0)
        return;
    strbuf_addf(b, "    const double tol%zu = NH_RTOL * dmax%zu;\n", gi + 1,
                gi + 1);
    strbuf_add(b, "    if (");
    for (size_t i = 0; i < p; i++)
        strbuf_addf(b, "%s!(fabs(%s) > tol%zu)", i ? " ||\n        " : "",
                    x[p + i], gi + 1);
    for (size_t i = 1; i < p; i++)
        strbuf_addf(b, " ||\n        (%s > 0) != (%s > 0)", x[p + i], x[p]);
    strbuf_add(b, ")\n        return -1;\n");
}

/* tape_c_frame_t.value: output K is TEXT. */
static void cgen_rhs_value(void *ctx, size_t k, const char *text, strbuf_t *b)
{
    cgen_rhs_frame_t *f = ctx;
    const eom_t *e = f->c->e;
    if (f->text[k])
        return; /* written once: a value computed once */
    f->text[k] = xstrdup(text);
    size_t at = cgen_fast_values_at(e);
    bool used = k < at;
    if (k >= at)
        for (size_t s = 0; s < e->nstate; s++)
            if (e->fast_dydt[s] >= 0 && (size_t)e->fast_dydt[s] == k - at) {
                strbuf_addf(b, "    dydt[%zu] = %s;\n", s, text);
                used = true;
            }
    if (!used) /* a value the right-hand side does not return (λ, say) */
        strbuf_addf(b, "    (void)%s;\n", text);
    /* the matrices whose entries (and the earlier matrices') are known */
    size_t start = 0, gi = 0;
    for (; gi < f->checked; gi++)
        start += 2 * e->fast_group[gi];
    while (f->checked < e->fast_ngroup) {
        size_t end = start + 2 * e->fast_group[f->checked];
        for (size_t i = 0; i < end; i++)
            if (!f->text[i])
                return;
        cgen_rhs_check(f, f->checked, start, b);
        f->checked++;
        start = end;
    }
}

/* tape_c_frame_t.end: the state's own entries, then the test. */
static void cgen_rhs_end(void *ctx, strbuf_t *b)
{
    cgen_rhs_frame_t *f = ctx;
    const eom_t *e = f->c->e;
    size_t at = cgen_fast_values_at(e), n = 0;
    for (size_t s = 0; s < e->nstate; s++)
        if (e->fast_dydt[s] < 0)
            strbuf_addf(b, "    dydt[%zu] = y[%d];\n", s, -1 - e->fast_dydt[s]);
    for (size_t s = 0; s < e->nstate; s++) {
        if (e->fast_dydt[s] < 0)
            continue;
        const char *x = f->text[at + (size_t)e->fast_dydt[s]];
        strbuf_addf(b, "%s%s", n == 0 ? "    const double fin = "
                                : n % 4 ? " + "
                                        : " +\n        ",
                    x ? x : "NAN");
        n++;
    }
    strbuf_add(b, n ? ";\n    return fin - fin == 0 ? 0 : -1;\n"
                    : "    return 0;\n");
}

static void cgen_fast_rhs_frame(cgen_t *c)
{
    const eom_t *e = c->e;
    cgen_rhs_frame_t f = {.c = c, .nout = tape_nout(e->fast)};
    f.text = xcalloc(f.nout + 1, sizeof *f.text);
    tape_c_frame_t frame = {
        .head = "/* The fast path for the right-hand side (nh: common.c, "
                "eom_rhs), on the\n"
                " * state y, writing dy/dt; y and dydt must not overlap. */\n"
                "static int nh_fast_rates(double t, const double *restrict y,\n"
                "        const double *restrict v, double *restrict dydt)",
        .value = cgen_rhs_value,
        .end = cgen_rhs_end,
        .ctx = &f,
    };
    char **in = cgen_rhs_inputs(c);
    tape_write_c_frame(e->fast, &c->code, &frame, c->sys->g,
                       (const char *const *)in, &c->tape_helpers);
    strbuf_add(&c->code, "\n");
    cgen_free_strings(in, e->nvars);
    cgen_free_strings(f.text, f.nout);
    cgen_stack(c, tape_work_size(e->fast));
}

/* The fast path: nh_fast, and nh_fast_rates when the fast path gives every
 * derivative of the state. */
static void cgen_fast(cgen_t *c)
{
    const eom_t *e = c->e;
    cgen_tape(c, e->fast, "nh_tape_fast", NULL);
    cgen_fast_fn(c, NULL);
    if (!e->fast_dydt)
        return;
    c->fast_rhs = true;
    if (tape_write_c_fits(e->fast)) {
        cgen_fast_rhs_frame(c);
        return;
    }
    char **dydt = cgen_fast_dydt(c);
    char **in = cgen_rhs_inputs(c);
    cgen_tape(c, e->fast, "nh_tape_fast_rhs", (const char *const *)in);
    cgen_free_strings(in, e->nvars);
    cgen_fast_fn(c, dydt);
    cgen_free_strings(dydt, e->nstate);
}

/* ---- the numeric paths ----------------------------------------------------- */

static size_t cgen_upper(size_t n)
{
    return n * (n + 1) / 2;
}

/* The head of nh_full: its comment (the function PORT ports), the sizes
 * as enum constants (SIZES, printf-style), the tape outputs o[NOUT]. */
static void cgen_full_head(cgen_t *c, const char *port, const char *sizes,
                           ...) __attribute__((format(printf, 3, 4)));
static void cgen_full_head(cgen_t *c, const char *port, const char *sizes,
                           ...)
{
    strbuf_addf(&c->code,
                "/* The numeric path (nh: %s). */\n"
                "static int nh_full(double *v)\n"
                "{\n"
                "    enum { ",
                port);
    va_list ap;
    va_start(ap, sizes);
    strbuf_vaddf(&c->code, sizes, ap);
    va_end(ap);
    strbuf_addf(&c->code, " };\n    double o[%zu];\n",
                cgen_len(tape_nout(c->e->tape)));
}

/* mult.c lagrange_compute */
static void cgen_lagrange(cgen_t *c)
{
    const nh_system_t *sys = c->sys;
    size_t n = sys->n;
    cgen_full_head(c, "mult.c, lagrange_compute", "NQ = %zu, NU = %zu", n,
                   cgen_upper(n));
    cgen_need(c, H_FINITE);
    cgen_need(c, H_SOLVE_SYMMETRIC);
    strbuf_t *b = &c->code;
    strbuf_add(b, "    double Mf[NQ * NQ], x[NQ], w[NQ];\n"
                  "    int perm[NQ], i;\n"
                  "    const double *h = o + NU;\n"
                  "    nh_tape_main(v, o);\n"
                  "    if (!nh_finite(o, NU + NQ))\n"
                  "        return 2;\n"
                  "    for (i = 0; i < NQ; i++)\n"
                  "        x[i] = -h[i];\n"
                  "    if (nh_solve_symmetric(o, NQ, x, Mf, w, perm) != 0)\n"
                  "        return 1;\n"
                  "    if (!nh_finite(x, NQ))\n"
                  "        return 2;\n");
    cgen_scatter(b, sys->qdd, n, "x", 0);
    cgen_clear_lambda(c, b);
    strbuf_add(b, "    return 0;\n}\n\n");
    cgen_stack(c, tape_nout(c->e->tape) + n * n + 3 * n);
}

/* mult.c multipliers_blocks, then multipliers_compute */
static void cgen_multipliers(cgen_t *c)
{
    const nh_system_t *sys = c->sys;
    size_t n = sys->n, r = sys->r;
    strbuf_t *b = &c->code;
    char sizes[128];
    snprintf(sizes, sizeof sizes, "NQ = %zu, NR = %zu, NU = %zu", n, r,
             cgen_upper(n));
    cgen_need(c, H_FINITE);
    cgen_need(c, H_UNPACK_LOWER);
    cgen_need(c, H_UNPACK_SYMMETRIC);
    cgen_need(c, H_LDLT);
    cgen_need(c, H_LDLT_SOLVE);
    cgen_need(c, H_LU);
    cgen_need(c, H_LU_SOLVE);
    strbuf_addf(b,
                "/* The multipliers' system by its blocks (nh: mult.c, "
                "multipliers_blocks):\n"
                " * 0 with q'' in QDD and lambda in LAM, or 1 when M or H is "
                "not definite. */\n"
                "static int nh_blocks(const double *o, double *qdd, double "
                "*lam)\n"
                "{\n"
                "    enum { %s };\n",
                sizes);
    strbuf_add(b,
               "    const double *Mu = o, *h = Mu + NU, *B = h + NQ, *c = B + "
               "NR * NQ;\n"
               "    double Mf[NQ * NQ], f[NQ], Z[NQ * NR + 1], Zd[NQ * NR + 1];\n"
               "    double H[NR * NR + 1];\n"
               "    double hmax = 0.0, mmax = 0.0;\n"
               "    int i, a, b, k;\n"
               "    nh_unpack_lower(Mu, NQ, Mf);\n"
               "    if (nh_ldlt(Mf, NQ) != 0)\n"
               "        return 1;\n"
               "    /* M = L D L^T: f = L^-1 (-h), z_a = L^-1 B_a^T (forward) */\n"
               "    for (i = 0; i < NQ; i++)\n"
               "        f[i] = -h[i];\n"
               "    for (a = -1; a < NR; a++) {\n"
               "        double *v = a < 0 ? f : Z + a * NQ;\n"
               "        if (a >= 0)\n"
               "            for (i = 0; i < NQ; i++)\n"
               "                v[i] = B[a * NQ + i];\n"
               "        for (i = 0; i < NQ; i++) {\n"
               "            double s = v[i];\n"
               "            for (k = 0; k < i; k++)\n"
               "                s -= Mf[i * NQ + k] * v[k];\n"
               "            v[i] = s;\n"
               "        }\n"
               "    }\n"
               "    /* D^-1 f and D^-1 z_a, then H and B F */\n"
               "    for (i = 0; i < NQ; i++) {\n"
               "        double d = Mf[i * NQ + i];\n"
               "        f[i] *= d;\n"
               "        for (a = 0; a < NR; a++)\n"
               "            Zd[a * NQ + i] = Z[a * NQ + i] * d;\n"
               "    }\n"
               "    for (a = 0; a < NR; a++) {\n"
               "        const double *za = Z + a * NQ;\n"
               "        double s = c[a];\n"
               "        for (i = 0; i < NQ; i++)\n"
               "            s += za[i] * f[i];\n"
               "        lam[a] = -s;\n"
               "        for (b = 0; b <= a; b++) {\n"
               "            const double *zb = Zd + b * NQ;\n"
               "            double t = 0.0;\n"
               "            for (i = 0; i < NQ; i++)\n"
               "                t += za[i] * zb[i];\n"
               "            H[a * NR + b] = t;\n"
               "        }\n"
               "    }\n"
               "    for (a = 0; a < NR; a++)\n"
               "        if (H[a * NR + a] > hmax)\n"
               "            hmax = H[a * NR + a];\n"
               "    for (k = 0; k < NU; k++)\n"
               "        if (fabs(Mu[k]) > mmax)\n"
               "            mmax = fabs(Mu[k]);\n"
               "    if (NR > 0) { /* (H is not written when NR = 0) */\n"
               "        if (!(hmax * mmax >= NH_RTOL) || nh_ldlt(H, NR) != 0)\n"
               "            return 1;\n"
               "        nh_ldlt_solve(H, NR, lam);\n"
               "    }\n"
               "    /* q'' = L^-T (D^-1 f + sum_a lambda_a D^-1 z_a) (back) */\n"
               "    for (i = 0; i < NQ; i++) {\n"
               "        double s = f[i];\n"
               "        for (a = 0; a < NR; a++)\n"
               "            s += Zd[a * NQ + i] * lam[a];\n"
               "        qdd[i] = s;\n"
               "    }\n"
               "    for (i = NQ - 1; i >= 0; i--) {\n"
               "        double s = qdd[i];\n"
               "        for (k = i + 1; k < NQ; k++)\n"
               "            s -= Mf[k * NQ + i] * qdd[k];\n"
               "        qdd[i] = s;\n"
               "    }\n"
               "    return 0;\n"
               "}\n\n");
    cgen_full_head(c, "mult.c, multipliers_compute",
                   "NQ = %zu, NR = %zu, NT = %zu, NU = %zu", n, r, n + r,
                   cgen_upper(n));
    strbuf_add(b,
               "    double K[NT * NT], x[NT], w[NT], sol[NT];\n"
               "    int perm[NT], i, a, b;\n"
               "    const double *h = o + NU, *B = h + NQ, *c = B + NR * NQ;\n"
               "    nh_tape_main(v, o);\n"
               "    if (!nh_finite(o, NU + NQ + NR * NQ + NR))\n"
               "        return 2;\n"
               "    if (nh_blocks(o, sol, sol + NQ) == 0) {\n"
               "        if (!nh_finite(sol, NT))\n"
               "            return 2;\n");
    for (size_t i = 0; i < n; i++)
        strbuf_addf(b, "        v[%u] = sol[%zu];\n", sys->qdd[i], i);
    for (size_t a = 0; a < r; a++)
        strbuf_addf(b, "        v[%u] = sol[%zu];\n", sys->lam[a], n + a);
    strbuf_add(b,
               "        return 0;\n"
               "    }\n"
               "    nh_unpack_symmetric(o, NQ, K, NT);\n"
               "    for (a = 0; a < NR; a++) {\n"
               "        double *row = K + (NQ + a) * NT;\n"
               "        for (i = 0; i < NQ; i++) {\n"
               "            K[i * NT + NQ + a] = -B[a * NQ + i];\n"
               "            row[i] = B[a * NQ + i];\n"
               "        }\n"
               "        for (b = 0; b < NR; b++)\n"
               "            row[NQ + b] = 0.0;\n"
               "    }\n"
               "    if (nh_lu(K, NT, perm) != 0)\n"
               "        return 1;\n"
               "    for (i = 0; i < NQ; i++)\n"
               "        x[i] = -h[i];\n"
               "    for (a = 0; a < NR; a++)\n"
               "        x[NQ + a] = -c[a];\n"
               "    nh_lu_solve(K, NT, perm, x, w);\n"
               "    if (!nh_finite(x, NT))\n"
               "        return 2;\n");
    cgen_scatter(b, sys->qdd, n, "x", 0);
    cgen_scatter(b, sys->lam, r, "x", n);
    strbuf_add(b, "    return 0;\n}\n\n");
    size_t N = n + r;
    cgen_stack(c, tape_nout(c->e->tape) + N * N + 3 * N +
                      (n * n + n + n * r + r * r + 2));
}

/* mult.c second_kind_compute */
static void cgen_second_kind(cgen_t *c)
{
    const nh_system_t *sys = c->sys;
    size_t n = sys->n, r = sys->r;
    strbuf_t *b = &c->code;
    cgen_full_head(c, "mult.c, second_kind_compute",
                   "NQ = %zu, NR = %zu, NU = %zu", n, r, cgen_upper(n));
    cgen_need(c, H_FINITE);
    cgen_need(c, H_UNPACK_SYMMETRIC);
    cgen_need(c, H_LU);
    cgen_need(c, H_LU_SOLVE);
    strbuf_add(b,
               "    double Mf[NQ * NQ], F[NQ], Y[NQ * NR + 1], H[NR * NR + 1];\n"
               "    double lam[NR + 1], w[NQ + NR], col[NQ];\n"
               "    double hmax = 0.0, mmax = 0.0;\n"
               "    int perm[NQ], permH[NR + 1], i, a, b, k;\n"
               "    const double *h = o + NU, *B = h + NQ, *c = B + NR * NQ;\n"
               "    nh_tape_main(v, o);\n"
               "    if (!nh_finite(o, NU + NQ + NR * NQ + NR))\n"
               "        return 2;\n"
               "    nh_unpack_symmetric(o, NQ, Mf, NQ);\n"
               "    if (nh_lu(Mf, NQ, perm) != 0)\n"
               "        return 1;\n"
               "    for (i = 0; i < NQ; i++)\n"
               "        F[i] = -h[i];\n"
               "    nh_lu_solve(Mf, NQ, perm, F, w);\n"
               "    for (a = 0; a < NR; a++) {\n"
               "        for (i = 0; i < NQ; i++)\n"
               "            col[i] = B[a * NQ + i];\n"
               "        nh_lu_solve(Mf, NQ, perm, col, w);\n"
               "        for (i = 0; i < NQ; i++)\n"
               "            Y[i * NR + a] = col[i];\n"
               "    }\n"
               "    for (a = 0; a < NR; a++) {\n"
               "        double s = c[a];\n"
               "        for (i = 0; i < NQ; i++)\n"
               "            s += B[a * NQ + i] * F[i];\n"
               "        lam[a] = -s;\n"
               "        for (b = 0; b < NR; b++) {\n"
               "            double t = 0.0;\n"
               "            for (i = 0; i < NQ; i++)\n"
               "                t += B[a * NQ + i] * Y[i * NR + b];\n"
               "            H[a * NR + b] = t;\n"
               "        }\n"
               "    }\n"
               "    for (k = 0; k < NR * NR; k++)\n"
               "        hmax = fmax(hmax, fabs(H[k]));\n"
               "    for (k = 0; k < NU; k++)\n"
               "        mmax = fmax(mmax, fabs(o[k]));\n"
               "    if (NR > 0) { /* (H is not written when NR = 0) */\n"
               "        if (!(hmax * mmax >= NH_RTOL) ||\n"
               "            nh_lu(H, NR, permH) != 0)\n"
               "            return 1;\n"
               "        nh_lu_solve(H, NR, permH, lam, w);\n"
               "    }\n"
               "    for (i = 0; i < NQ; i++) {\n"
               "        double s = F[i];\n"
               "        for (a = 0; a < NR; a++)\n"
               "            s += Y[i * NR + a] * lam[a];\n"
               "        w[i] = s;\n"
               "    }\n"
               "    if (!nh_finite(w, NQ) || !nh_finite(lam, NR))\n"
               "        return 2;\n");
    cgen_scatter(b, sys->qdd, n, "w", 0);
    cgen_scatter(b, sys->lam, r, "lam", 0);
    strbuf_add(b, "    return 0;\n}\n\n");
    cgen_stack(c, tape_nout(c->e->tape) + n * n + 4 * n + n * r + r * r +
                      2 * r + 3);
}

/* voronec.c voronec_compute */
static void cgen_voronec(cgen_t *c)
{
    const eom_t *e = c->e;
    const nh_system_t *sys = c->sys;
    size_t k = e->k, mi = e->mi;
    strbuf_t *b = &c->code;
    cgen_full_head(c, "voronec.c, voronec_compute",
                   "NK = %zu, NI = %zu, NU = %zu", k, mi, cgen_upper(mi));
    cgen_need(c, H_FINITE);
    cgen_need(c, H_SOLVE_SYMMETRIC);
    strbuf_add(b, "    double Mf[NI * NI + 1], x[NI + 1], wk[NI + 1];\n"
                  "    int perm[NI + 1], i;\n"
                  "    const double *vdep = o, *Mu = vdep + NK, *h = Mu + NU;\n"
                  "    const double *a = h + NI, *w = a + NK * NI;\n"
                  "    nh_tape_main(v, o);\n"
                  "    if (!nh_finite(o, NK + NU + NI + NK * NI + NK))\n"
                  "        return 2;\n");
    for (size_t nu = 0; nu < k; nu++)
        strbuf_addf(b, "    v[%u] = vdep[%zu];\n", sys->qd[e->dep[nu]], nu);
    strbuf_add(b, "    for (i = 0; i < NI; i++)\n"
                  "        x[i] = -h[i];\n"
                  "    if (nh_solve_symmetric(Mu, NI, x, Mf, wk, perm) != 0)\n"
                  "        return 1;\n"
                  "    if (!nh_finite(x, NI))\n"
                  "        return 2;\n");
    for (size_t i = 0; i < mi; i++)
        strbuf_addf(b, "    v[%u] = x[%zu];\n", sys->qdd[e->ind[i]], i);
    for (size_t nu = 0; nu < k; nu++)
        strbuf_addf(b,
                    "    {\n"
                    "        double s = w[%zu];\n"
                    "        int j;\n"
                    "        for (j = 0; j < NI; j++)\n"
                    "            s += a[%zu * NI + j] * x[j];\n"
                    "        if (!isfinite(s))\n"
                    "            return 2;\n"
                    "        v[%u] = s;\n"
                    "    }\n",
                    nu, nu, sys->qdd[e->dep[nu]]);
    if (k == 0)
        strbuf_add(b, "    (void)a;\n    (void)w;\n");
    cgen_clear_lambda(c, b);
    strbuf_add(b, "    return 0;\n}\n\n");
    cgen_stack(c, tape_nout(e->tape) + mi * mi + 3 * mi + 3);
}

/* The end both of maggi.c's compute functions share: G z' = x solved
 * (Gu packed, x the right side), z' = x, q'' = beta + Psi z' (Benenti eq.
 * 22), each q'' checked; the multipliers NaN. */
static void cgen_first_kind_end(cgen_t *c)
{
    const nh_system_t *sys = c->sys;
    strbuf_t *b = &c->code;
    strbuf_add(b, "    if (nh_solve_symmetric(Gu, NM, x, Gf, wk, perm) != 0)\n"
                  "        return 1;\n"
                  "    if (!nh_finite(x, NM))\n"
                  "        return 2;\n");
    cgen_scatter(b, sys->zd, sys->m, "x", 0);
    strbuf_add(b, "    for (i = 0; i < NQ; i++) {\n"
                  "        static const int qdd[NQ] = {");
    for (size_t i = 0; i < sys->n; i++)
        strbuf_addf(b, "%s%u", i ? ", " : "", sys->qdd[i]);
    strbuf_add(b, "};\n"
                  "        double t = beta[i];\n"
                  "        for (a = 0; a < NM; a++)\n"
                  "            t += Psi[i * NM + a] * x[a];\n"
                  "        if (!isfinite(t))\n"
                  "            return 2;\n"
                  "        v[qdd[i]] = t;\n"
                  "    }\n");
    cgen_clear_lambda(c, b);
    strbuf_add(b, "    return 0;\n}\n\n");
}

/* maggi.c maggi_compute_matrix (maggi) */
static void cgen_maggi(cgen_t *c)
{
    const eom_t *e = c->e;
    const nh_system_t *sys = c->sys;
    size_t n = sys->n, m = sys->m;
    strbuf_t *b = &c->code;
    cgen_full_head(c, "maggi.c, maggi_compute_matrix",
                   "NQ = %zu, NM = %zu, NUN = %zu, NUM = %zu", n, m,
                   cgen_upper(n), cgen_upper(m));
    cgen_need(c, H_FINITE);
    cgen_need(c, H_UNPACK_SYMMETRIC);
    cgen_need(c, H_SOLVE_SYMMETRIC);
    strbuf_addf(b,
                "    double po[%zu], Mf[NQ * NQ], f[NQ], MPsi[NQ * NM], "
                "Gu[NUM];\n"
                "    double Gf[NM * NM], x[NM], wk[NM];\n"
                "    int perm[NM], i, j, a, b, k;\n"
                "    const double *psi = o, *Mu = psi + NQ, *h = Mu + NUN;\n"
                "    const double *beta = h + NQ, *Psi = beta + NQ;\n"
                "    nh_tape_pre(v, po);\n",
                cgen_len(tape_nout(e->pre)));
    cgen_scatter(b, e->pre_var, e->npre, "po", 0);
    strbuf_add(b,
               "    nh_tape_main(v, o);\n"
               "    if (!nh_finite(o, NQ + NUN + NQ + NQ + NQ * NM))\n"
               "        return 2;\n"
               "    nh_unpack_symmetric(Mu, NQ, Mf, NQ);\n"
               "    for (i = 0; i < NQ; i++) {\n"
               "        const double *mi = Mf + i * NQ;\n"
               "        double s = -h[i];\n"
               "        for (j = 0; j < NQ; j++)\n"
               "            s -= mi[j] * beta[j];\n"
               "        f[i] = s;\n"
               "        for (b = 0; b < NM; b++) {\n"
               "            double t = 0.0;\n"
               "            for (j = 0; j < NQ; j++)\n"
               "                t += mi[j] * Psi[j * NM + b];\n"
               "            MPsi[i * NM + b] = t;\n"
               "        }\n"
               "    }\n"
               "    k = 0;\n"
               "    for (a = 0; a < NM; a++) {\n"
               "        double t = 0.0;\n"
               "        for (b = a; b < NM; b++) {\n"
               "            double g = 0.0;\n"
               "            for (i = 0; i < NQ; i++)\n"
               "                g += Psi[i * NM + a] * MPsi[i * NM + b];\n"
               "            Gu[k++] = g;\n"
               "        }\n"
               "        for (i = 0; i < NQ; i++)\n"
               "            t += Psi[i * NM + a] * f[i];\n"
               "        x[a] = t;\n"
               "    }\n");
    cgen_scatter(b, sys->qd, n, "psi", 0);
    cgen_first_kind_end(c);
    cgen_stack(c, tape_nout(e->pre) + tape_nout(e->tape) + n * n + n +
                      n * m + cgen_upper(m) + m * m + 2 * m);
}

/* maggi.c maggi_compute (gibbs_appell) */
static void cgen_gibbs(cgen_t *c)
{
    const nh_system_t *sys = c->sys;
    size_t n = sys->n, m = sys->m;
    strbuf_t *b = &c->code;
    cgen_full_head(c, "maggi.c, maggi_compute", "NQ = %zu, NM = %zu, NU = %zu",
                   n, m, cgen_upper(m));
    cgen_need(c, H_FINITE);
    cgen_need(c, H_SOLVE_SYMMETRIC);
    strbuf_add(b, "    double Gf[NM * NM], x[NM], wk[NM];\n"
                  "    int perm[NM], i, a;\n"
                  "    const double *psi = o, *Gu = psi + NQ, *rhs = Gu + NU;\n"
                  "    const double *beta = rhs + NM, *Psi = beta + NQ;\n"
                  "    nh_tape_main(v, o);\n"
                  "    if (!nh_finite(o, NQ + NU + NM + NQ + NQ * NM))\n"
                  "        return 2;\n");
    cgen_scatter(b, sys->qd, n, "psi", 0);
    strbuf_add(b, "    for (a = 0; a < NM; a++)\n"
                  "        x[a] = rhs[a];\n");
    cgen_first_kind_end(c);
    cgen_stack(c, tape_nout(c->e->tape) + m * m + 2 * m);
}

/* ---- what the tapes read ---------------------------------------------- */

/* Whether every variable tape T reads is in KNOWN: set by the caller of
 * the generated function (the state, the parameters, t) or written
 * before T runs.  nh's value vector holds every variable, so a tape that
 * read another one would read what an earlier call left there, which the
 * generated code cannot reproduce: a fault of the method, not of the
 * model, reported as an internal error. */
static bool cgen_reads_known(const tape_t *t, const bool *known)
{
    size_t nin;
    const uint32_t *in = tape_inputs(t, &nin);
    for (size_t j = 0; j < nin; j++)
        if (!known[in[j]])
            return false;
    return true;
}

static int cgen_check_inputs(cgen_t *c, diag_t *err)
{
    const eom_t *e = c->e;
    const nh_system_t *sys = c->sys;
    bool *known = xcalloc(e->nvars, sizeof *known);
    for (size_t k = 0; k < e->nstate; k++)
        known[e->state[k]] = true;
    for (size_t p = 0; p < sys->np; p++)
        known[sys->p[p]] = true;
    for (size_t u = 0; u < sys->ni; u++)
        known[sys->in[u]] = true;
    known[sys->t] = true;
    bool ok = !e->fast || cgen_reads_known(e->fast, known);
    bool *full = xcalloc(e->nvars, sizeof *full);
    memcpy(full, known, e->nvars * sizeof *full);
    if (e->method == EOM_MAGGI) {
        ok = ok && cgen_reads_known(e->pre, full);
        for (size_t i = 0; i < e->npre; i++)
            full[e->pre_var[i]] = true;
    }
    ok = ok && cgen_reads_known(e->tape, full);
    /* the residuals: after the velocities the method derives */
    const tape_t *vel = c->vel ? c->vel : e->pre;
    if (vel)
        ok = ok && cgen_reads_known(vel, known);
    for (size_t i = 0; i < sys->n; i++)
        known[sys->qd[i]] = true;
    ok = ok && cgen_reads_known(c->res, known);
    ok = ok && cgen_reads_known(c->mon, known); /* and L's, as the residuals */
    free(known);
    free(full);
    if (!ok)
        return diag_error(err, SRC_SPAN_NONE,
                          "internal error: the %s tapes read a variable "
                          "that the state does not determine",
                          e->name);
    return 0;
}

/* ---- the public functions -------------------------------------------------- */

/* A C string literal of S. */
static void cgen_string(strbuf_t *b, const char *s)
{
    strbuf_add(b, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            strbuf_addf(b, "\\%c", *s);
        else if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
            strbuf_addf(b, "\\%03o", (unsigned char)*s);
        else
            strbuf_addn(b, s, 1);
    }
    strbuf_add(b, "\"");
}

/* const char *const NAME_WHAT[] = {"a", "b", 0}; */
static void cgen_names(strbuf_t *b, const char *name, const char *what,
                       const char *const *names, size_t count)
{
    strbuf_addf(b, "const char *const %s_%s[] = {", name, what);
    for (size_t k = 0; k < count; k++) {
        strbuf_add(b, k % 6 ? ", " : k ? ",\n    " : "\n    ");
        cgen_string(b, names[k]);
    }
    strbuf_add(b, count ? ",\n    0\n};\n" : "0};\n");
}

/* "v[P] = p[K];" for the parameters, then the inputs after them
 * (LANGUAGE.md §7.2.1: p holds NAME_nparam + NAME_ninput values). */
static void cgen_load_params(const nh_system_t *sys, strbuf_t *b)
{
    for (size_t k = 0; k < sys->np; k++)
        strbuf_addf(b, "    v[%u] = p[%zu];\n", sys->p[k], k);
    for (size_t k = 0; k < sys->ni; k++)
        strbuf_addf(b, "    v[%u] = p[%zu];\n", sys->in[k], sys->np + k);
    if (sys->np + sys->ni == 0)
        strbuf_add(b, "    (void)p;\n");
}

/* nh_load: the state, the parameters and t into the value vector. */
static void cgen_load(cgen_t *c)
{
    const eom_t *e = c->e;
    const nh_system_t *sys = c->sys;
    strbuf_t *b = &c->api;
    strbuf_add(b, "/* The state, the parameters and t into the value vector. "
                  "*/\n"
                  "static void nh_load(double *v, double t, const double *y, "
                  "const double *p)\n{\n");
    for (size_t k = 0; k < e->nstate; k++)
        strbuf_addf(b, "    v[%u] = y[%zu];\n", e->state[k], k);
    cgen_load_params(sys, b);
    strbuf_addf(b, "    v[%u] = t;\n}\n\n", sys->t);
}

static void cgen_api(cgen_t *c)
{
    const eom_t *e = c->e;
    const nh_system_t *sys = c->sys;
    const char *name = c->opt->name;
    strbuf_t *b = &c->api;
    size_t nv = e->nvars;
    strbuf_addf(b,
                "/* Every variable after the state, the parameters and t "
                "(nh's accel). */\n"
                "static int nh_compute(double *v)\n{\n%s"
                "    return nh_full(v);\n}\n\n",
                e->fast && !c->opt->numeric_only
                    ? "    if (nh_fast(v) == 0)\n        return 0;\n"
                    : "");
    cgen_load(c);
    strbuf_addf(b, "int %s_values(double *v)\n{\n    return nh_compute(v);\n}\n\n",
                name);
    /* simulate's monitors on a completed value vector (nh: sim.c) */
    strbuf_addf(b, "void %s_monitors_vector(const double *v, double *out)\n"
                   "{\n    nh_tape_mon(v, out);\n}\n\n",
                name);
    /* the right-hand side on a value vector that holds the parameters:
     * the fast path on the state itself when it gives every derivative,
     * else (or when it falls back) the value vector's path */
    strbuf_add(b, "/* dy/dt at (t, y), with the parameters in v (scratch "
                  "otherwise). */\n"
                  "static int nh_rates(double t, const double *y, double *v, "
                  "double *dydt)\n"
                  "{\n"
                  "    int rc, k;\n");
    if (c->fast_rhs)
        strbuf_add(b, "    if (nh_fast_rates(t, y, v, dydt) == 0)\n"
                      "        return 0;\n");
    for (size_t k = 0; k < e->nstate; k++)
        strbuf_addf(b, "    v[%u] = y[%zu];\n", e->state[k], k);
    strbuf_addf(b,
                "    v[%u] = t;\n"
                "    rc = %s(v);\n"
                "    if (rc != 0) {\n"
                "        for (k = 0; k < %zu; k++)\n"
                "            dydt[k] = NAN;\n"
                "        return rc;\n"
                "    }\n",
                sys->t, c->fast_rhs ? "nh_full" : "nh_compute", e->nstate);
    for (size_t k = 0; k < e->nstate; k++)
        strbuf_addf(b, "    dydt[%zu] = v[%u];\n", k, e->deriv[k]);
    /* eom_rhs: every derivative it returns is finite (the state's own
     * entries among them); a failure fills dydt with NaN, as above */
    cgen_need(c, H_FINITE);
    strbuf_addf(b,
                "    if (!nh_finite(dydt, %zu)) {\n"
                "        for (k = 0; k < %zu; k++)\n"
                "            dydt[k] = NAN;\n"
                "        return 2;\n"
                "    }\n",
                e->nstate, e->nstate);
    strbuf_add(b, "    return 0;\n}\n\n");
    strbuf_addf(b,
                "int %s_rhs_vector(double t, const double *y, double *v, "
                "double *dydt)\n"
                "{\n"
                "    return nh_rates(t, y, v, dydt);\n"
                "}\n\n",
                name);
    /* the user's entry: a state that is not finite is a status too (nh
     * checks its state before it calls; the fast path returns the
     * state's own entries as they are) */
    strbuf_addf(b,
                "int %s_rhs_status(double t, const double *y, const double *p, "
                "double *dydt)\n"
                "{\n"
                "    double v[%zu];\n"
                "    int k;\n"
                "    if (!(t - t == 0) || !nh_finite(y, %zu)) {\n"
                "        for (k = 0; k < %zu; k++)\n"
                "            dydt[k] = NAN;\n"
                "        return 2;\n"
                "    }\n",
                name, nv, e->nstate, e->nstate);
    cgen_load_params(sys, b);
    strbuf_add(b, "    return nh_rates(t, y, v, dydt);\n}\n\n");
    strbuf_addf(b,
                "void %s_rhs(double t, const double *y, const double *p, double "
                "*dydt)\n"
                "{\n"
                "    (void)%s_rhs_status(t, y, p, dydt);\n"
                "}\n\n",
                name, name);
    /* the residuals: the velocities the state determines, then C */
    strbuf_addf(b,
                "void %s_residuals(double t, const double *y, const double *p, "
                "double *res)\n"
                "{\n"
                "    double v[%zu];\n",
                name, nv);
    const tape_t *vel = c->vel ? c->vel : e->pre;
    const uint32_t *vel_var = NULL;
    size_t nvel = 0;
    uint32_t *dep_qd = NULL;
    if (c->vel) {
        nvel = e->k;
        dep_qd = xcalloc(cgen_len(nvel), sizeof *dep_qd);
        for (size_t nu = 0; nu < nvel; nu++)
            dep_qd[nu] = sys->qd[e->dep[nu]];
        vel_var = dep_qd;
    } else if (e->pre) {
        nvel = e->npre;
        vel_var = e->pre_var;
    }
    if (vel)
        strbuf_addf(b, "    double u[%zu];\n", cgen_len(tape_nout(vel)));
    strbuf_add(b, "    nh_load(v, t, y, p);\n");
    if (vel) {
        strbuf_add(b, "    nh_tape_vel(v, u);\n");
        cgen_scatter(b, vel_var, nvel, "u", 0);
    }
    strbuf_add(b, "    nh_tape_res(v, res);\n}\n\n");
    free(dep_qd);
    if (eom_has_multipliers(e)) {
        strbuf_addf(b,
                    "int %s_multipliers(double t, const double *y, const double "
                    "*p, double *lambda)\n"
                    "{\n"
                    "    double v[%zu];\n"
                    "    int rc;\n"
                    "    nh_load(v, t, y, p);\n"
                    "    rc = nh_compute(v);\n",
                    name, nv);
        for (size_t a = 0; a < sys->r; a++)
            strbuf_addf(b, "    lambda[%zu] = rc ? NAN : v[%u];\n", a,
                        sys->lam[a]);
        if (sys->r == 0)
            strbuf_add(b, "    (void)lambda;\n");
        strbuf_add(b, "    return rc;\n}\n");
    }
    cgen_stack(c, nv + (vel ? tape_nout(vel) : 0));
}

/* ---- the file ----------------------------------------------------------------- */

/* The head comment and the data: sizes, names, defaults. */
static void cgen_head(cgen_t *c, strbuf_t *b)
{
    const eom_t *e = c->e;
    const nh_system_t *sys = c->sys;
    const expr_graph_t *g = sys->g;
    const char *name = c->opt->name;
    bool mult = eom_has_multipliers(e);
    strbuf_addf(b,
                "/*\n"
                " * %s.c — the equations of motion of an nh model, method %s, "
                "generated by\n"
                " * nh%s%s (`export c`, LANGUAGE.md §8.1).  Self-contained C99: "
                "needs <math.h>\n"
                " * and -lm only.\n"
                " *\n"
                " * The state y: %s_state_names (%s_nstate values).  The "
                "parameters p:\n"
                " * %s_param_names, in that order (%s_param_defaults), then "
                "the inputs\n"
                " * (%s_input_names, %s_ninput of them, LANGUAGE.md §7.2.1).  "
                "t is time.\n"
                " *\n"
                " *   void %s_rhs(double t, const double *y, const double *p, "
                "double *dydt);\n"
                " *       dy/dt at (t, y); NaN where the equations cannot be "
                "evaluated.\n"
                " *   int %s_rhs_status(double t, const double *y, const double "
                "*p,\n"
                " *                     double *dydt);\n"
                " *       the same, returning 0, or 1 when a matrix of the method "
                "is singular\n"
                " *       at the state, 2 when a value or the state is not "
                "finite.\n"
                " *   int %s_rhs_vector(double t, const double *y, double *v, "
                "double *dydt);\n"
                " *       the same on a value vector v (%s_nvalues doubles, "
                "the parameters\n"
                " *       set in it at %s_value_names' places, the rest "
                "scratch): the form for\n"
                " *       a loop.  t and y must be finite; dydt must not "
                "overlap y.\n"
                " *   void %s_residuals(double t, const double *y, const double "
                "*p, double *res);\n"
                " *       the constraints, %s_constraint_names: f(q, t) for a "
                "holonomic one,\n"
                " *       C(q, q', t) for the others, at the velocities the "
                "state determines.\n",
                name, e->name, c->opt->version ? " " : "",
                c->opt->version ? c->opt->version : "", name, name, name, name,
                name, name, name, name, name, name, name, name, name);
    if (mult)
        strbuf_addf(b,
                    " *   int %s_multipliers(double t, const double *y, const "
                    "double *p,\n"
                    " *                      double *lambda);\n"
                    " *       lambda of each constraint; the status as above.\n",
                    name);
    strbuf_addf(b,
                " *   int %s_values(double *v);\n"
                " *       v holds every variable of the model, %s_value_names; "
                "given the\n"
                " *       state, the parameters and t in it, fills in the rest "
                "(velocities,\n"
                " *       accelerations%s) as nh's `accel`; the status as "
                "above.\n"
                " *   void %s_monitors_vector(const double *v, double *out);\n"
                " *       on such a completed v: the holonomic constraints' "
                "values, every\n"
                " *       constraint at the velocity level, L and dL/dq_i' "
                "(what nh's\n"
                " *       simulate reports as max |C| and the energy drift).\n"
                " *\n"
                " * Compiled without floating-point contraction (-std=c99 with "
                "GCC, or\n"
                " * -ffp-contract=off) and with SSE arithmetic, it gives nh's "
                "numbers bit for\n"
                " * bit.\n"
                " */\n"
                "#include <math.h>\n\n",
                name, name, mult ? ", multipliers" : "", name);
    char rtol[48];
    tape_c_literal(LINALG_RTOL, rtol, sizeof rtol);
    strbuf_addf(b,
                "/* A pivot below this times the largest entry: singular (nh: "
                "LINALG_RTOL). */\n"
                "#define NH_RTOL %s\n\n",
                rtol);
    strbuf_addf(b, "const int %s_nstate = %zu;\n", name, e->nstate);
    strbuf_addf(b, "const int %s_nparam = %zu;\n", name, sys->np);
    strbuf_addf(b, "const int %s_ninput = %zu;\n", name, sys->ni);
    strbuf_addf(b, "const int %s_nconstraint = %zu;\n", name, sys->r);
    strbuf_addf(b, "const int %s_nvalues = %u;\n", name, e->nvars);
    strbuf_addf(b, "const char *const %s_method = \"%s\";\n", name, e->name);
    const char **names = xcalloc(cgen_len(e->nvars), sizeof *names);
    for (size_t k = 0; k < e->nstate; k++)
        names[k] = expr_var_name(g, e->state[k]);
    cgen_names(b, name, "state_names", names, e->nstate);
    cgen_names(b, name, "param_names", sys->pname, sys->np);
    strbuf_addf(b, "const double %s_param_defaults[] = {", name);
    for (size_t k = 0; k < sys->np; k++) {
        char lit[48];
        tape_c_literal(c->opt->params ? c->opt->params[k] : 0.0, lit,
                       sizeof lit);
        strbuf_addf(b, "%s%s", k ? ", " : "", lit);
    }
    strbuf_add(b, sys->np ? "};\n" : "0.0}; /* no parameters */\n");
    cgen_names(b, name, "input_names", sys->iname, sys->ni);
    strbuf_addf(b, "const double %s_input_defaults[] = {", name);
    for (size_t k = 0; k < sys->ni; k++) {
        char lit[48];
        tape_c_literal(c->opt->inputs ? c->opt->inputs[k] : 0.0, lit,
                       sizeof lit);
        strbuf_addf(b, "%s%s", k ? ", " : "", lit);
    }
    strbuf_add(b, sys->ni ? "};\n" : "0.0}; /* no inputs */\n");
    cgen_names(b, name, "constraint_names", sys->cname, sys->r);
    for (uint32_t k = 0; k < e->nvars; k++)
        names[k] = expr_var_name(g, k);
    cgen_names(b, name, "value_names", names, e->nvars);
    strbuf_add(b, "\n");
    free(names);
}

bool cgen_name_ok(const char *name)
{
    if (!name || !((*name >= 'a' && *name <= 'z') ||
                   (*name >= 'A' && *name <= 'Z') || *name == '_'))
        return false;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
    return strlen(name) <= 64;
}

bool cgen_name_from_path(const char *path, const char *ext, char *name,
                         size_t size)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base), le = strlen(ext);
    if (len >= le && strcmp(base + len - le, ext) == 0)
        len -= le;
    if (len == 0 || len >= size)
        return false;
    for (size_t i = 0; i < len; i++) {
        char ch = base[i];
        bool word = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '_';
        name[i] = word ? ch : '_';
    }
    name[len] = '\0';
    return cgen_name_ok(name);
}

static void cgen_free(cgen_t *c)
{
    strbuf_free(&c->tapes);
    strbuf_free(&c->code);
    strbuf_free(&c->api);
    tape_free(c->vel);
    tape_free(c->res);
    eom_velsolver_free(c->vs);
}

/* The refusals both texts share: a name that is not an identifier, a
 * model without coordinates, velocities solved numerically. */
static int cgen_refuse(const eom_t *e, const cgen_options_t *opt, diag_t *err)
{
    if (!cgen_name_ok(opt->name))
        return diag_error(err, SRC_SPAN_NONE, "'%s' cannot name C functions",
                          opt->name ? opt->name : "");
    if (e->sys->n == 0)
        return diag_error(err, SRC_SPAN_NONE,
                          "the model has no coordinates: there are no "
                          "equations to write");
    if (e->kin_numeric)
        /* The velocities without a kinematic equation come from a linear
         * solve at each evaluation (maggi.c); the file would need that
         * solve and its pivoting written out, which it does not have. */
        return diag_error(err, SRC_SPAN_NONE,
                          "%s solves the velocities without a kinematic "
                          "equation numerically at each evaluation (show "
                          "kinematics): that solve cannot be written as C; "
                          "give kinematic equations for them, or use "
                          "`equations multipliers`",
                          e->name);
    return 0;
}

/* Whether LEN operations are within the limit of OPT; else *err. */
static bool cgen_fits(size_t len, const cgen_options_t *opt, diag_t *err)
{
    size_t max_ops = opt->max_ops ? opt->max_ops : CGEN_MAX_INSTRUCTIONS;
    if (len <= max_ops)
        return true;
    diag_error(err, SRC_SPAN_NONE,
               "the model is too large to write as C: its equations take "
               "%zu operations, more than the limit of %zu",
               len, max_ops);
    return false;
}

char *cgen_text(eom_t *e, const cgen_options_t *opt, diag_t *err)
{
    const nh_system_t *sys = e->sys;
    if (cgen_refuse(e, opt, err) != 0)
        return NULL;
    cgen_t c = {.e = e, .sys = sys, .opt = opt};
    strbuf_init(&c.tapes);
    strbuf_init(&c.code);
    strbuf_init(&c.api);
    c.res = tape_compile(sys->g, sys->C, sys->r, e->nvars);
    c.mon = eom_monitor_tape(e);
    if (e->method == EOM_VORONEC || e->method == EOM_NAIVE)
        c.vel = tape_compile(sys->g, e->vdep, e->k, e->nvars);
    const tape_t *vel = c.vel ? c.vel : e->pre;
    bool pre = e->method == EOM_MAGGI;
    size_t len = tape_length(e->tape) + tape_length(c.res) +
                 (e->fast && !opt->numeric_only ? 2 * tape_length(e->fast)
                                                 : 0) +
                 (pre ? tape_length(e->pre) : 0) +
                 (vel ? tape_length(vel) : 0) + tape_length(c.mon) +
                 (opt->jacobian ? tape_length(e->tape) +
                                      (e->pre ? tape_length(e->pre) : 0)
                                : 0);
    if (!cgen_fits(len, opt, err)) {
        cgen_free(&c);
        return NULL;
    }
    if (cgen_check_inputs(&c, err) != 0) {
        cgen_free(&c);
        return NULL;
    }

    bool fast = e->fast && !opt->numeric_only;
    if (pre)
        cgen_tape(&c, e->pre, "nh_tape_pre", NULL);
    cgen_tape(&c, e->tape, "nh_tape_main", NULL);
    if (vel)
        cgen_tape(&c, vel, "nh_tape_vel", NULL);
    cgen_tape(&c, c.res, "nh_tape_res", NULL);
    cgen_tape(&c, c.mon, "nh_tape_mon", NULL);
    /* `export python`'s Jacobian (cgen_jac.h) calls the tapes'
     * derivatives: in the same file there */
    if (opt->jacobian)
        cgen_tangents(&c);
    if (fast)
        cgen_fast(&c);
    switch (e->method) {
    case EOM_LAGRANGE: cgen_lagrange(&c); break;
    case EOM_MULTIPLIERS: cgen_multipliers(&c); break;
    case EOM_SECOND_KIND: cgen_second_kind(&c); break;
    case EOM_VORONEC:
    case EOM_NAIVE: cgen_voronec(&c); break;
    case EOM_MAGGI: cgen_maggi(&c); break;
    case EOM_GIBBS_APPELL: cgen_gibbs(&c); break;
    case EOM_METHOD_COUNT: abort(); /* not a method */
    }
    cgen_api(&c);
    size_t stack = (c.stack + e->nvars) * sizeof(double);
    size_t max_stack = opt->max_stack ? opt->max_stack : CGEN_MAX_STACK;
    if (stack > max_stack) {
        diag_error(err, SRC_SPAN_NONE,
                   "the model is too large to write as C: one call would "
                   "need %zu KiB of stack, more than the limit of %zu KiB",
                   (stack + 1023) >> 10, max_stack >> 10);
        cgen_free(&c);
        return NULL;
    }

    strbuf_t out;
    strbuf_init(&out);
    cgen_head(&c, &out);
    tape_write_c_helpers(&out, c.tape_helpers);
    unsigned helpers = cgen_helper_closure(c.helpers);
    for (int h = 0; h < H_COUNT; h++)
        if (helpers & (1u << h)) {
            strbuf_add(&out, cgen_helpers[h].text);
            strbuf_add(&out, "\n");
        }
    strbuf_add(&out, c.tapes.data);
    strbuf_add(&out, c.code.data);
    strbuf_add(&out, c.api.data);
    if (opt->jacobian)
        cgen_jacobian(e, opt->name, &out);
    cgen_free(&c);
    return strbuf_take(&out);
}

char *cgen_tangent_text(eom_t *e, const cgen_options_t *opt, diag_t *err)
{
    if (cgen_refuse(e, opt, err) != 0)
        return NULL;
    cgen_t c = {.e = e, .sys = e->sys, .opt = opt};
    /* the constraints' Jacobians (cgen_constraints) */
    const tape_t *tjac = NULL, *tceff = NULL;
    if (e->sys->r > 0) {
        c.vs = eom_velsolver_new(e->sys);
        eom_velsolver_jacobian_tapes(c.vs, &tjac, &tceff);
    }
    if (!cgen_fits(tape_length(e->tape) + (e->pre ? tape_length(e->pre) : 0) +
                       (tjac ? tape_length(tjac) + tape_length(tceff) : 0),
                   opt, err)) {
        eom_velsolver_free(c.vs);
        return NULL;
    }
    strbuf_init(&c.tapes);
    strbuf_init(&c.code);
    strbuf_init(&c.api);
    cgen_tangents(&c);
    if (tjac)
        cgen_constraints(&c, tjac, tceff);
    const char *name = opt->name;
    strbuf_t out;
    strbuf_init(&out);
    strbuf_addf(&out,
                "/*\n"
                " * %s.c — the derivatives of an nh model's equations, "
                "method %s, generated by\n"
                " * nh%s%s for its own use (`set compile = on`, LANGUAGE.md "
                "§8.1): the\n"
                " * forward-mode derivatives of nh's tapes in k directions, "
                "as linearize,\n"
                " * eigen, sweep and the implicit integrators run them.  "
                "Self-contained C99.\n"
                " *\n"
                " *   void %s_tangent_main(v, dv, k, o, dout, w, dw), and "
                "_pre where the\n"
                " *       method has a first tape; w has "
                "%s_tangent_main_work doubles.\n"
                " *   With constraints, %s_constraint_jacobians(v, o) and "
                "%s_constraint_tangent(...):\n"
                " *       their Jacobians as nh's lyapunov takes them.\n"
                " */\n"
                "#include <math.h>\n\n",
                name, e->name, opt->version ? " " : "",
                opt->version ? opt->version : "", name, name, name, name);
    tape_write_c_helpers(&out, c.tape_helpers);
    strbuf_add(&out, c.tapes.data);
    strbuf_add(&out, c.api.data);
    cgen_free(&c);
    return strbuf_take(&out);
}
