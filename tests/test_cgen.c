/*
 * test_cgen.c — the generated C (eom/cgen.h) against the tapes it comes
 * from, and the compile cache (run/native.h).
 *
 * For every example and every method that applies to it, the text is
 * compiled with -std=c99 -Wall -Wextra -pedantic -Werror and its
 * NAME_values, NAME_rhs_status, NAME_residuals and NAME_multipliers are
 * compared with eom_accel, eom_rhs and the constraints evaluated by the
 * tree, bit for bit, at random states (which include singular and
 * non-finite ones: the statuses must agree with nh's errors; a state
 * that is not finite is the user's entry's status 2), and the
 * derivatives' text (cgen_tangent_text, a file of its own) with
 * tape_eval_tangent.  Then the
 * cache: a cold and a warm attach, a tampered source, an object without
 * its source, folders it must refuse, compilers that fail, and a session
 * whose compile fails going on with the tapes.
 */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include <dirent.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "interp/cli/context.h"
#include "interp/cli/session.h"
#include "interp/eom/cgen.h"
#include "interp/eom/common.h" /* the numeric path alone: e->full_compute */
#include "interp/eom/velocity.h"
#include "interp/run/native.h"
#include "tests/cc_load.h"

typedef int (*values_fn)(double *v);
typedef int (*rhs_fn)(double t, const double *y, const double *p,
                      double *dydt);
typedef void (*res_fn)(double t, const double *y, const double *p,
                       double *res);
typedef int (*rhsv_fn)(double t, const double *y, double *v, double *dydt);

static uint64_t rng_state = 0x853c49e6748fea9bULL;
static double uniform(double lo, double hi)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

static bool same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

static const char *const methods[] = {"lagrange", "multipliers",
                                      "second_kind", "voronec", "naive",
                                      "maggi", "gibbs_appell"};

static FILE *sink;

static const char *srcdir(void)
{
    const char *d = getenv("srcdir");
    return d && *d ? d : ".";
}

/* The session's prepared equations for METHOD, or NULL. */
static eom_t *equations(session_t *s, const char *method)
{
    char text[64];
    snprintf(text, sizeof text, "equations %s\n", method);
    if (session_run_text(s, "<test>", text, strlen(text), false) != RUN_OK)
        return NULL;
    diag_t err = {0};
    return ctx_eom(session_ctx(s), SRC_SPAN_NONE, &err);
}

/* The status nh's error message stands for. */
static int status_of(const diag_t *err)
{
    return strstr(err->msg, "non-finite") ? CGEN_NONFINITE : CGEN_SINGULAR;
}

/* NAME_tangent_main and NAME_tangent_pre against tape_eval_tangent at
 * the value vector VA, in three random directions. */
static void check_tangents(void *h, eom_t *e, const double *va,
                           const char *what, int pt)
{
    enum { K = 3 };
    const tape_t *tapes[2] = {e->tape, e->pre};
    static const char *const fn[2] = {"m_tangent_main", "m_tangent_pre"};
    static const char *const nw[2] = {"m_tangent_main_work",
                                      "m_tangent_pre_work"};
    size_t nv = e->nvars;
    double *dv = calloc(nv * K + 1, sizeof *dv);
    for (size_t i = 0; i < nv * K; i++)
        dv[i] = uniform(-1, 1);
    for (int q = 0; q < 2; q++) {
        void (*tan)(const double *, const double *, long, double *, double *,
                    double *, double *);
        *(void **)&tan = cc_sym(h, fn[q]);
        const int *work = cc_sym(h, nw[q]);
        assert_true((tan != NULL) == (tapes[q] != NULL));
        if (!tapes[q])
            continue;
        assert_non_null(work);
        const tape_t *t = tapes[q];
        size_t no = tape_nout(t), ws = tape_work_size(t);
        double *o1 = calloc(no + 1, sizeof *o1), *o2 = calloc(no + 1, sizeof *o2);
        double *d1 = calloc(no * K + 1, sizeof *d1);
        double *d2 = calloc(no * K + 1, sizeof *d2);
        double *w = calloc(ws + 1, sizeof *w), *dw = calloc(ws * K + 1, sizeof *dw);
        double *V = calloc((size_t)*work + 1, sizeof *V);
        tape_eval_tangent(t, va, dv, K, o1, d1, w, dw);
        tan(va, dv, K, o2, d2, V, dw);
        for (size_t i = 0; i < no; i++)
            if (!same_bits(o1[i], o2[i]))
                fail_msg("%s, state %d: %s output %zu %.17g by nh, %.17g by C",
                         what, pt, fn[q], i, o1[i], o2[i]);
        for (size_t i = 0; i < no * K; i++)
            if (!same_bits(d1[i], d2[i]))
                fail_msg("%s, state %d: %s derivative %zu %.17g by nh, %.17g "
                         "by C", what, pt, fn[q], i, d1[i], d2[i]);
        free(o1);
        free(o2);
        free(d1);
        free(d2);
        free(w);
        free(dw);
        free(V);
    }
    free(dv);
}

/* NAME_constraint_jacobians and NAME_constraint_tangent against the
 * velsolver's tapes (eom_velsolver_jacobian_tapes) at the value vector
 * VA, the latter in three random directions: bit for bit. */
static void check_constraints(void *h, const nh_system_t *sys,
                              const double *va, const char *what, int pt)
{
    enum { K = 3 };
    void (*jac)(const double *, double *);
    void (*tan)(const double *, const double *, long, double *, double *,
                double *, double *);
    *(void **)&jac = cc_sym(h, "m_constraint_jacobians");
    *(void **)&tan = cc_sym(h, "m_constraint_tangent");
    const int *work = cc_sym(h, "m_constraint_tangent_work");
    assert_true((jac != NULL) == (sys->r > 0));
    assert_true((tan != NULL) == (sys->r > 0));
    assert_true((work != NULL) == (sys->r > 0));
    if (sys->r == 0)
        return;
    eom_velsolver_t *vs = eom_velsolver_new(sys);
    const tape_t *tapes[2];
    eom_velsolver_jacobian_tapes(vs, &tapes[0], &tapes[1]);
    size_t nv = expr_graph_nvars(sys->g);
    size_t n0 = tape_nout(tapes[0]), n1 = tape_nout(tapes[1]);
    size_t w0 = tape_work_size(tapes[0]), w1 = tape_work_size(tapes[1]);
    double *o1 = calloc(n0 + n1 + 1, sizeof *o1);
    double *o2 = calloc(n0 + n1 + 1, sizeof *o2);
    double *d1 = calloc(n1 * K + 1, sizeof *d1);
    double *d2 = calloc(n1 * K + 1, sizeof *d2);
    double *w = calloc(w0 + w1 + 1, sizeof *w);
    double *dw = calloc(w1 * K + 1, sizeof *dw);
    double *V = calloc((size_t)*work + 1, sizeof *V);
    double *dv = calloc(nv * K + 1, sizeof *dv);
    for (size_t i = 0; i < nv * K; i++)
        dv[i] = uniform(-1, 1);
    tape_eval(tapes[0], va, o1, w);
    jac(va, o2);
    tape_eval_tangent(tapes[1], va, dv, K, o1 + n0, d1, w, dw);
    tan(va, dv, K, o2 + n0, d2, V, dw);
    for (size_t i = 0; i < n0 + n1; i++)
        if (!same_bits(o1[i], o2[i]))
            fail_msg("%s, state %d: constraint Jacobians, output %zu %.17g "
                     "by nh, %.17g by C", what, pt, i, o1[i], o2[i]);
    for (size_t i = 0; i < n1 * K; i++)
        if (!same_bits(d1[i], d2[i]))
            fail_msg("%s, state %d: constraint tangent %zu %.17g by nh, "
                     "%.17g by C", what, pt, i, d1[i], d2[i]);
    free(o1);
    free(o2);
    free(d1);
    free(d2);
    free(w);
    free(dw);
    free(V);
    free(dv);
    eom_velsolver_free(vs);
}

/* Whether TEXT was seen by an earlier call (then it is not kept; else
 * it is, and owned here). */
static bool tangent_text_seen(const char *text)
{
    static char **seen;
    static size_t n;
    for (size_t i = 0; i < n; i++)
        if (strcmp(seen[i], text) == 0)
            return true;
    seen = realloc(seen, (n + 1) * sizeof *seen);
    seen[n++] = strdup(text);
    return false;
}

/* Compares the compiled text of E with the tapes at random states;
 * NUMERIC: both without the fast path (which small systems take first,
 * so that at regular states the numeric path would go unchecked). */
static void check_method(session_t *s, eom_t *e, const char *what,
                         bool numeric)
{
    ctx_t *ctx = session_ctx(s);
    lower_t *lw = ctx->lw;
    const nh_system_t *sys = lower_system(lw);
    size_t nv = expr_graph_nvars(sys->g), ns = eom_state_size(e);
    const uint32_t *sv = eom_state_vars(e);
    /* p: the parameters, then the inputs (LANGUAGE.md §7.2.1) */
    size_t np = sys->np, ni = sys->ni;
    double *params = calloc(np + ni + 1, sizeof *params);
    for (size_t k = 0; k < np; k++)
        params[k] = ctx->model.params.v[k].value;
    for (size_t k = 0; k < ni; k++)
        params[np + k] = ctx->model.inputs.v[k].value;
    cgen_options_t opt = {.name = "m", .params = params,
                          .inputs = params + np, .numeric_only = numeric};
    eom_compute_fn compute = e->compute;
    int32_t *fast_dydt = e->fast_dydt;
    if (numeric && e->fast) {
        e->compute = e->full_compute;
        e->fast_dydt = NULL;
    }
    diag_t err = {0};
    char *text = cgen_text(e, &opt, &err);
    if (!text)
        fail_msg("%s: %s", what, err.msg);
    /* the derivatives: a file of their own, compiled beside the
     * equations at -O1 as the compile cache does (the same tapes with
     * and without the fast path, so checked once; the same text of
     * another example, once) */
    char *ttext = NULL;
    void *h, *ht = NULL;
    if (!numeric) {
        ttext = cgen_tangent_text(e, &opt, &err);
        if (!ttext)
            fail_msg("%s: %s", what, err.msg);
        if (tangent_text_seen(ttext)) {
            free(ttext);
            ttext = NULL;
        }
    }
    if (ttext) {
        cc_load_pair(text, CC_LOAD_STRICT, &h, ttext, CC_LOAD_STRICT_O1, &ht);
        if (!ht)
            fail_msg("%s: the derivatives' C does not compile cleanly", what);
    } else {
        h = cc_load(text, CC_LOAD_STRICT);
    }
    if (!h)
        fail_msg("%s: the generated C does not compile cleanly", what);
    assert_null(cc_sym(h, "m_tangent_main"));
    values_fn values;
    rhs_fn rhs, mult;
    res_fn res;
    rhsv_fn rhsv;
    void (*monv)(const double *v, double *out);
    *(void **)&values = cc_sym(h, "m_values");
    *(void **)&rhs = cc_sym(h, "m_rhs_status");
    *(void **)&res = cc_sym(h, "m_residuals");
    *(void **)&mult = cc_sym(h, "m_multipliers");
    *(void **)&rhsv = cc_sym(h, "m_rhs_vector");
    *(void **)&monv = cc_sym(h, "m_monitors_vector");
    assert_non_null(rhsv);
    assert_non_null(monv);
    assert_non_null(values);
    assert_non_null(rhs);
    assert_non_null(res);
    assert_true((mult != NULL) == eom_has_multipliers(e));
    const double *defaults = cc_sym(h, "m_param_defaults");
    for (size_t k = 0; k < sys->np; k++)
        assert_true(same_bits(defaults[k], params[k]));
    const int *ninput = cc_sym(h, "m_ninput");
    const double *idefaults = cc_sym(h, "m_input_defaults");
    assert_int_equal(*ninput, (int)ni);
    for (size_t k = 0; k < ni; k++)
        assert_true(same_bits(idefaults[k], params[np + k]));

    double *base = calloc(nv, sizeof *base), *va = calloc(nv, sizeof *va);
    double *vc = calloc(nv, sizeof *vc), *y = calloc(ns + 1, sizeof *y);
    double *d1 = calloc(ns + 1, sizeof *d1), *d2 = calloc(ns + 1, sizeof *d2);
    double *r = calloc(sys->r + 1, sizeof *r), *lam = calloc(sys->r + 1, sizeof *lam);
    lower_fill_vars(lw, &ctx->model, base);
    int ok = 0, failed = 0;
    for (int pt = 0; pt < 160; pt++) {
        memcpy(va, base, nv * sizeof *va);
        double t = uniform(0, 2);
        for (size_t k = 0; k < ns; k++)
            va[sv[k]] = y[k] = pt == 0 ? 0.0 : uniform(-1.6, 1.6);
        if (pt == 1 && sys->np > 0)
            va[sys->p[0]] = params[0] = NAN; /* a value that is not finite */
        else if (sys->np > 0)
            va[sys->p[0]] = params[0] = base[sys->p[0]];
        /* the inputs at random values: read from p after the parameters */
        for (size_t k = 0; k < ni; k++)
            va[sys->in[k]] = params[np + k] = pt == 0 ? 0.0
                                                      : uniform(-1, 1);
        va[sys->t] = t;
        memcpy(vc, va, nv * sizeof *vc);
        diag_clear(&err);
        int rc_nh = eom_accel(e, va, &err);
        int rc_c = values(vc);
        if ((rc_nh != 0) != (rc_c != 0) ||
            (rc_nh != 0 && rc_c != status_of(&err)))
            fail_msg("%s, state %d: nh says %s, the C %d", what, pt,
                     rc_nh ? err.msg : "ok", rc_c);
        if (rc_nh == 0) {
            for (size_t k = 0; k < nv; k++)
                if (!same_bits(va[k], vc[k]))
                    fail_msg("%s, state %d: %s = %.17g by nh, %.17g by C", what,
                             pt, expr_var_name(sys->g, (uint32_t)k), va[k],
                             vc[k]);
            /* simulate's monitors on the completed vector: the C and
             * the tape alike */
            const tape_t *mt = eom_monitor_tape(e);
            size_t nm = tape_nout(mt);
            double *m1 = calloc(nm + 1, sizeof *m1);
            double *m2 = calloc(nm + 1, sizeof *m2);
            double *mw = calloc(tape_work_size(mt) + 1, sizeof *mw);
            tape_eval(mt, va, m1, mw);
            monv(vc, m2);
            for (size_t k = 0; k < nm; k++)
                if (!same_bits(m1[k], m2[k]))
                    fail_msg("%s, state %d: monitor %zu %.17g by nh, %.17g "
                             "by C", what, pt, k, m1[k], m2[k]);
            free(m1);
            free(m2);
            free(mw);
            /* the derivatives of the main and first tapes in three
             * random directions: as the tapes give them, bit for bit */
            if (ht && pt % 8 == 3) {
                check_tangents(ht, e, va, what, pt);
                check_constraints(ht, sys, va, what, pt);
            }
            ok++;
        } else {
            failed++;
        }
        /* the right-hand side on nh's path and the user's */
        double *scratch = calloc(nv, sizeof *scratch);
        memcpy(scratch, base, nv * sizeof *scratch);
        if (sys->np > 0)
            scratch[sys->p[0]] = params[0];
        for (size_t k = 0; k < ni; k++)
            scratch[sys->in[k]] = params[np + k];
        diag_clear(&err);
        int r1 = eom_rhs(e, t, y, d1, scratch, &err);
        int r2 = rhs(t, y, params, d2);
        assert_true((r1 != 0) == (r2 != 0));
        for (size_t k = 0; k < ns && r1 == 0; k++)
            if (!same_bits(d1[k], d2[k]))
                fail_msg("%s, state %d: dydt[%zu] %.17g by nh, %.17g by C",
                         what, pt, k, d1[k], d2[k]);
        for (size_t k = 0; k < ns && r1 != 0; k++)
            assert_true(isnan(d2[k]));
        /* on a value vector that holds the parameters (nh's own path) */
        memcpy(scratch, base, nv * sizeof *scratch);
        if (sys->np > 0)
            scratch[sys->p[0]] = params[0];
        for (size_t k = 0; k < ni; k++)
            scratch[sys->in[k]] = params[np + k];
        assert_true((rhsv(t, y, scratch, d2) != 0) == (r1 != 0));
        for (size_t k = 0; k < ns && r1 == 0; k++)
            assert_true(same_bits(d1[k], d2[k]));
        free(scratch);
        /* the user's entry on a state that is not finite: status 2 and
         * NaN, whichever entry it is (the last is a velocity that the
         * multipliers' fast path returns as it is) */
        if (pt == 2 || pt == 3) {
            double keep = y[ns - 1];
            y[ns - 1] = pt == 2 ? NAN : -INFINITY;
            assert_int_equal(rhs(t, y, params, d2), 2);
            for (size_t k = 0; k < ns; k++)
                assert_true(isnan(d2[k]));
            y[ns - 1] = keep;
            assert_int_equal(rhs(NAN, y, params, d2), 2);
        }
        if (rc_nh == 0) {
            /* the constraints at the velocities nh completed */
            res(t, y, params, r);
            for (size_t a = 0; a < sys->r; a++) {
                double want = expr_eval(sys->g, sys->C[a], va);
                if (!same_bits(want, r[a]))
                    fail_msg("%s, state %d: C[%zu] %.17g by nh, %.17g by C",
                             what, pt, a, want, r[a]);
            }
            if (mult) {
                assert_int_equal(mult(t, y, params, lam), 0);
                for (size_t a = 0; a < sys->r; a++)
                    assert_true(same_bits(lam[a], va[sys->lam[a]]));
            }
        }
    }
    /* random states are regular; a NaN parameter is not */
    assert_true(ok > 100);
    assert_true(failed >= (sys->np > 0 ? 1 : 0));
    free(base);
    free(va);
    free(vc);
    free(y);
    free(d1);
    free(d2);
    free(r);
    free(lam);
    free(params);
    cc_unload(h);
    free(text);
    if (ht)
        cc_unload(ht);
    free(ttext);
    e->compute = compute;
    e->fast_dydt = fast_dydt;
}

/* The examples are checked in CGEN_EXAMPLES_PARTS programs built from
 * this file, side by side under make -j (they take most of its time:
 * every example and method compiled twice): test_cgen_exK checks the
 * examples whose place in name order is K - 1 modulo the parts, and
 * test_cgen, built without CGEN_EXAMPLES_PART, everything else. */
#define CGEN_EXAMPLES_PARTS 4
#ifndef CGEN_EXAMPLES_PART
#define CGEN_EXAMPLES_PART 0 /* test_cgen: everything but the examples */
#endif

static int nh_file(const struct dirent *de)
{
    size_t len = strlen(de->d_name);
    return len >= 4 && strcmp(de->d_name + len - 3, ".nh") == 0;
}

/* Every example of part PART (0 ... CGEN_EXAMPLES_PARTS - 1), every
 * method that applies. */
static void check_examples(int part)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/examples", srcdir());
    struct dirent **list;
    int n = scandir(dir, &list, nh_file, alphasort);
    assert_true(n >= 15);
    int pairs = 0, mine = 0;
    for (int i = 0; i < n; i++) {
        const char *name = list[i]->d_name;
        if (i % CGEN_EXAMPLES_PARTS != part)
            continue;
        mine++;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        session_t *s = session_new(true, sink, sink);
        if (session_run_file(s, path) != RUN_OK)
            fail_msg("%s does not run", path);
        for (size_t m = 0; m < sizeof methods / sizeof *methods; m++) {
            eom_t *e = equations(s, methods[m]);
            if (!e)
                continue;
            char what[512];
            snprintf(what, sizeof what, "%s, %s", name, methods[m]);
            check_method(s, e, what, false);
            pairs++;
        }
        session_free(s);
    }
    for (int i = 0; i < n; i++)
        free(list[i]);
    free(list);
    /* every example has a method that applies */
    assert_true(mine >= 3 && pairs >= mine);
}

static void test_examples_bit_for_bit(void **state)
{
    (void)state;
    check_examples(CGEN_EXAMPLES_PART - 1);
}

/* A session on the rolling sphere with METHOD. */
static const char sphere[] =
    "param m = 1, R = 1\n"
    "coord phi, theta, psi, x, y\n"
    "speed u1, u2, u3\n"
    "kinetic T = m/2*(x'^2 + y'^2) + m*R^2/5*(phi'^2 + theta'^2 + psi'^2 + "
    "2*phi'*psi'*cos(theta))\n"
    "constraint roll_x: x' = R*theta'*sin(phi) - R*psi'*sin(theta)*cos(phi)\n"
    "constraint roll_y: y' = -R*theta'*cos(phi) - R*psi'*sin(theta)*sin(phi)\n"
    "kinematic phi' = u1\n"
    "kinematic theta' = u2\n"
    "kinematic psi' = u3\n"
    "kinematic x' = R*u2*sin(phi) - R*u3*sin(theta)*cos(phi)\n"
    "kinematic y' = -R*u2*cos(phi) - R*u3*sin(theta)*sin(phi)\n"
    "initial theta = 1, phi' = 0.7, theta' = 0.3, psi' = 1.1, u1 = 0.7, "
    "u2 = 0.3, u3 = 1.1\n";

static session_t *sphere_session(const char *method, eom_t **e)
{
    session_t *s = session_new(true, sink, sink);
    assert_int_equal(session_run_text(s, "<t>", sphere, strlen(sphere), false),
                     RUN_OK);
    *e = equations(s, method);
    assert_non_null(*e);
    return s;
}

static void fresh_cache(void);
static void remove_cache(void);

/* The compile cache's code (its own flags: -march=native) on nh's path,
 * eom_rhs and eom_accel, against the tapes at random states. */
static void check_native(session_t *s, eom_t *e, const char *what)
{
    ctx_t *ctx = session_ctx(s);
    const nh_system_t *sys = lower_system(ctx->lw);
    size_t nv = expr_graph_nvars(sys->g), ns = eom_state_size(e);
    const uint32_t *sv = eom_state_vars(e);
    diag_t err = {0};
    assert_int_equal(native_attach(e, NULL, NULL, NULL, &err), 0);
    eom_native_fn values = e->native;
    eom_native_rhs_fn rhs = e->native_rhs;
    double *a = calloc(nv, sizeof *a), *b = calloc(nv, sizeof *b);
    double *y = calloc(ns, sizeof *y), *d1 = calloc(ns, sizeof *d1);
    double *d2 = calloc(ns, sizeof *d2);
    for (int pt = 0; pt < 100; pt++) {
        lower_fill_vars(ctx->lw, &ctx->model, a);
        for (size_t k = 0; k < ns; k++)
            a[sv[k]] = y[k] = uniform(-1.6, 1.6);
        memcpy(b, a, nv * sizeof *a);
        int r1 = values(a);
        int r2 = e->compute(e, b, &err);
        assert_true((r1 != 0) == (r2 != 0));
        for (size_t k = 0; k < nv && r1 == 0; k++)
            if (!same_bits(a[k], b[k]))
                fail_msg("%s (cached): %s differs", what,
                         expr_var_name(sys->g, (uint32_t)k));
        lower_fill_vars(ctx->lw, &ctx->model, a);
        memcpy(b, a, nv * sizeof *a);
        r1 = rhs(0.5, y, a, d1);
        e->native_rhs = NULL; /* the tapes */
        r2 = eom_rhs(e, 0.5, y, d2, b, &err);
        e->native_rhs = rhs;
        assert_true((r1 != 0) == (r2 != 0));
        for (size_t k = 0; k < ns && r1 == 0; k++)
            assert_true(same_bits(d1[k], d2[k]));
    }
    free(a);
    free(b);
    free(y);
    free(d1);
    free(d2);
}

/* The identifiers TEXT defines at file scope (a line that begins with a
 * letter: the name before its first '(', '[', '=' or ';'), into NAMES
 * (at most MAX); their number. */
static size_t file_scope_names(const char *text, char names[][64],
                               size_t max)
{
    size_t n = 0;
    for (const char *l = text; *l && n < max; l = strchr(l, '\n') + 1) {
        const char *end = strpbrk(l, "([=;\n");
        if (((*l >= 'a' && *l <= 'z') || (*l >= 'A' && *l <= 'Z')) && end &&
            *end != '\n') {
            const char *e = end;
            while (e > l && e[-1] == ' ')
                e--;
            const char *b = e;
            while (b > l && (isalnum((unsigned char)b[-1]) || b[-1] == '_'))
                b--;
            if (e > b && (size_t)(e - b) < 64) {
                memcpy(names[n], b, (size_t)(e - b));
                names[n++][e - b] = '\0';
            }
        }
        if (!strchr(l, '\n'))
            break;
    }
    return n;
}

/* No file name collides with the file's own helpers (issue 31: `export c
 * "nh.c"` defined nh_values twice, "nh_fast.c" nh_fast_rhs).  A public
 * name is NAME_SUFFIX; a helper is static, and would collide with the
 * file whose NAME is the helper less "_SUFFIX": so no helper may end in
 * "_" and a public suffix.  Checked on the sphere under every method
 * (each writes its own helpers: the fast path's, the solves', the
 * tangents'), and the two names of the issue compile. */
static void test_names_cannot_collide(void **state)
{
    (void)state;
    static char names[4096][64];
    for (size_t m = 1; m < sizeof methods / sizeof *methods; m++) {
        eom_t *e;
        session_t *s = sphere_session(methods[m], &e);
        diag_t err = {0};
        cgen_options_t opt = {.name = "m"};
        char *text = cgen_text(e, &opt, &err);
        assert_non_null(text);
        size_t n = file_scope_names(text, names, 4096);
        size_t npublic = 0, nhelper = 0;
        for (size_t i = 0; i < n; i++) {
            if (strncmp(names[i], "m_", 2) != 0)
                continue;
            npublic++;
            const char *suffix = names[i] + 1; /* "_values" */
            for (size_t j = 0; j < n; j++) {
                size_t lj = strlen(names[j]), ls = strlen(suffix);
                if (strncmp(names[j], "m_", 2) == 0 || lj <= ls)
                    continue;
                if (strcmp(names[j] + lj - ls, suffix) == 0)
                    fail_msg("%s: the helper %s would collide with the "
                             "file named %.*s.c",
                             methods[m], names[j], (int)(lj - ls), names[j]);
            }
        }
        for (size_t j = 0; j < n; j++)
            nhelper += strncmp(names[j], "nh_", 3) == 0;
        assert_true(npublic >= 15);
        assert_true(nhelper >= 5);
        free(text);
        if (strcmp(methods[m], "maggi") == 0 ||
            strcmp(methods[m], "multipliers") == 0) {
            static const char *const bad[] = {"nh", "nh_fast", "nh_tape",
                                              "nh_tan"};
            for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
                opt.name = bad[k];
                text = cgen_text(e, &opt, &err);
                void *h = cc_load(text, CC_LOAD_STRICT);
                if (!h)
                    fail_msg("%s, %s.c: the C does not compile", methods[m],
                             bad[k]);
                cc_unload(h);
                free(text);
            }
        }
        session_free(s);
    }
}

/* Every method on the sphere (all apply), with and without the fast
 * path, at the sphere's singular states too (theta = 0: the reduced mass
 * matrix is singular); and as the compile cache builds it. */
static void test_sphere_every_method(void **state)
{
    (void)state;
    fresh_cache();
    for (size_t m = 0; m < sizeof methods / sizeof *methods; m++) {
        eom_t *e;
        if (strcmp(methods[m], "lagrange") == 0)
            continue; /* the sphere has constraints */
        session_t *s = sphere_session(methods[m], &e);
        check_method(s, e, methods[m], false);
        check_method(s, e, methods[m], true);
        check_native(s, e, methods[m]);
        session_free(s);
    }
    remove_cache();
}

/* The limits, the name, a model without coordinates. */
static void test_refusals(void **state)
{
    (void)state;
    eom_t *e;
    session_t *s = sphere_session("voronec", &e);
    diag_t err = {0};
    cgen_options_t opt = {.name = "m", .max_ops = 10};
    assert_null(cgen_text(e, &opt, &err));
    const char *ops = "the model is too large to write as C: its equations take";
    assert_non_null(strstr(err.msg, ops));
    diag_clear(&err);
    opt = (cgen_options_t){.name = "m", .max_stack = 64};
    assert_null(cgen_text(e, &opt, &err));
    const char *stack = "the model is too large to write as C: one call would need";
    assert_non_null(strstr(err.msg, stack));
    diag_clear(&err);
    opt = (cgen_options_t){.name = "2d"};
    assert_null(cgen_text(e, &opt, &err));
    assert_string_equal(err.msg, "'2d' cannot name C functions");
    assert_true(cgen_name_ok("sphere_2"));
    assert_false(cgen_name_ok("a-b"));
    assert_false(cgen_name_ok(""));
    /* the same model and method: the same bytes (the cache's key) */
    opt = (cgen_options_t){.name = "m"};
    char *a = cgen_text(e, &opt, &err), *b = cgen_text(e, &opt, &err);
    assert_string_equal(a, b);
    free(a);
    free(b);
    session_free(s);
}

/* ---- the cache ----------------------------------------------------------- */

static char cache[64];

static void fresh_cache(void)
{
    snprintf(cache, sizeof cache, "/tmp/nh-cache-XXXXXX");
    assert_non_null(mkdtemp(cache));
    setenv("XDG_CACHE_HOME", cache, 1);
    unsetenv("CC");
}

static void remove_cache(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "chmod -R u+w %s; rm -rf %s", cache, cache);
    assert_int_equal(system(cmd), 0);
}

/* The one file of the cache ending in SUFFIX, into PATH. */
static void cache_file(const char *suffix, char *path, size_t size)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s/nh", cache);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *de;
    int found = 0;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name), sl = strlen(suffix);
        if (len == 64 + sl && strcmp(de->d_name + 64, suffix) == 0) {
            snprintf(path, size, "%s/%s", dir, de->d_name);
            found++;
        }
    }
    closedir(d);
    assert_int_equal(found, 1);
}

/* dl_iterate_phdr: whether an object whose name ends in "/" + DATA's
 * base name is loaded, and its name into the buffer after it. */
static int loaded_as(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    char *want = data;
    const char *base = strrchr(want, '/');
    size_t ln = strlen(info->dlpi_name), lb = strlen(base);
    if (ln >= lb && strcmp(info->dlpi_name + ln - lb, base) == 0) {
        snprintf(want + strlen(want) + 1, 512, "%s", info->dlpi_name);
        return 1;
    }
    return 0;
}

/* The name under which the object at PATH (a path in the cache) was
 * loaded, into NAME: through the cache folder's descriptor
 * (/proc/self/fd/N/HASH.so), not through the path, whose folders could
 * change after they were checked (issue 31). */
static void loaded_name(const char *path, char *name, size_t size)
{
    char buf[NATIVE_PATH + 520];
    snprintf(buf, NATIVE_PATH, "%s", path);
    assert_int_equal(dl_iterate_phdr(loaded_as, buf), 1);
    snprintf(name, size, "%s", buf + strlen(buf) + 1);
}

/* nh's accel on the tapes and on the attached code agree. */
static void check_attached(eom_t *e, session_t *s)
{
    ctx_t *ctx = session_ctx(s);
    size_t nv = expr_graph_nvars(lower_system(ctx->lw)->g);
    double *a = calloc(nv, sizeof *a), *b = calloc(nv, sizeof *b);
    lower_fill_vars(ctx->lw, &ctx->model, a);
    memcpy(b, a, nv * sizeof *a);
    diag_t err = {0};
    assert_true(eom_has_native(e));
    assert_int_equal(eom_accel(e, a, &err), 0);
    eom_set_native(e, NULL, NULL, NULL, NULL);
    assert_false(eom_has_native(e));
    assert_int_equal(eom_accel(e, b, &err), 0);
    assert_memory_equal(a, b, nv * sizeof *a);
    free(a);
    free(b);
}

static void test_cache_cold_warm_tampered(void **state)
{
    (void)state;
    fresh_cache();
    eom_t *e;
    session_t *s = sphere_session("maggi", &e);
    native_info_t info;
    diag_t err = {0};
    assert_int_equal(native_attach(e, "test", NULL, &info, &err), 0);
    assert_false(info.cached);
    check_attached(e, s);
    assert_int_equal(native_attach(e, "test", NULL, &info, &err), 0);
    assert_true(info.cached);
    char name[600];
    loaded_name(info.path, name, sizeof name);
    assert_memory_equal(name, "/proc/self/fd/", 14);
    assert_string_equal(strrchr(name, '/'), strrchr(info.path, '/'));
    check_attached(e, s);
    /* the folder is private */
    char dir[128];
    snprintf(dir, sizeof dir, "%s/nh", cache);
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);

    /* a source that is not the text: not used, compiled again */
    char c[256], so[256];
    cache_file(".c", c, sizeof c);
    cache_file(".so", so, sizeof so);
    FILE *f = fopen(c, "a");
    fputs("/* changed */\n", f);
    fclose(f);
    assert_int_equal(native_attach(e, "test", NULL, &info, &err), 0);
    assert_false(info.cached);
    check_attached(e, s);
    /* an object without its source: not loaded, compiled again */
    assert_int_equal(unlink(c), 0);
    assert_int_equal(native_attach(e, "test", NULL, &info, &err), 0);
    assert_false(info.cached);
    /* a source that others may write: not trusted */
    assert_int_equal(chmod(c, 0666), 0);
    assert_int_equal(native_attach(e, "test", NULL, &info, &err), 0);
    assert_false(info.cached);
    assert_int_equal(native_attach(e, "test", NULL, &info, &err), 0);
    assert_true(info.cached);
    session_free(s);
    remove_cache();
}

static void test_cache_refuses_folders(void **state)
{
    (void)state;
    fresh_cache();
    char dir[256], buf[NATIVE_PATH];
    diag_t err = {0};
    snprintf(dir, sizeof dir, "%s/nh", cache);
    assert_int_equal(native_cache_dir(buf, sizeof buf, &err), 0);
    assert_string_equal(buf, dir);
    /* writable by others */
    assert_int_equal(chmod(dir, 0777), 0);
    assert_int_equal(native_cache_dir(buf, sizeof buf, &err), -1);
    char want[512];
    snprintf(want, sizeof want, "the compile cache '%s' is refused: others may write to it (it must be a folder of your own that only you may write)", dir);
    assert_string_equal(err.msg, want);
    /* a symbolic link, even to a private folder */
    assert_int_equal(rmdir(dir), 0);
    char target[128];
    snprintf(target, sizeof target, "%s/real", cache);
    assert_int_equal(mkdir(target, 0700), 0);
    assert_int_equal(symlink(target, dir), 0);
    diag_clear(&err);
    assert_int_equal(native_cache_dir(buf, sizeof buf, &err), -1);
    assert_non_null(strstr(err.msg, "the compile cache '"));
    assert_non_null(strstr(err.msg, "is refused: it is not a folder"));
    /* another user's folder (only root can make one) */
    if (geteuid() == 0) {
        unlink(dir);
        assert_int_equal(mkdir(dir, 0700), 0);
        assert_int_equal(chown(dir, 65534, 65534), 0);
        diag_clear(&err);
        assert_int_equal(native_cache_dir(buf, sizeof buf, &err), -1);
        assert_non_null(strstr(err.msg, "it belongs to another user"));
    }
    /* a base that cannot be made, a base that is a file, a long name */
    setenv("XDG_CACHE_HOME", "/nonexistent/nh-test", 1);
    diag_clear(&err);
    assert_int_equal(native_cache_dir(buf, sizeof buf, &err), -1);
    const char *base = "cannot create the compile cache's folder '/nonexistent/nh-test': No such file or directory";
    assert_string_equal(err.msg, base);
    char file[160];
    snprintf(file, sizeof file, "%s/file", cache);
    fclose(fopen(file, "w"));
    setenv("XDG_CACHE_HOME", file, 1);
    diag_clear(&err);
    assert_int_equal(native_cache_dir(buf, sizeof buf, &err), -1);
    snprintf(want, sizeof want, "cannot create the compile cache '%s/nh': Not a directory", file);
    assert_string_equal(err.msg, want);
    char *longname = malloc(NATIVE_PATH + 8);
    memset(longname, 'a', NATIVE_PATH + 7);
    longname[0] = '/';
    longname[NATIVE_PATH + 7] = '\0';
    setenv("XDG_CACHE_HOME", longname, 1);
    free(longname);
    diag_clear(&err);
    assert_int_equal(native_cache_dir(buf, sizeof buf, &err), -1);
    assert_string_equal(err.msg, "the compile cache's folder name is too long");
    /* a relative XDG_CACHE_HOME is ignored: HOME's .cache */
    setenv("XDG_CACHE_HOME", "relative", 1);
    char home[160];
    snprintf(home, sizeof home, "%s/home", cache);
    assert_int_equal(mkdir(home, 0700), 0);
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("HOME", home, 1);
    diag_clear(&err);
    assert_int_equal(native_cache_dir(buf, sizeof buf, &err), 0);
    snprintf(dir, sizeof dir, "%s/.cache/nh", home);
    assert_string_equal(buf, dir);
    if (old_home)
        setenv("HOME", old_home, 1);
    free(old_home);
    remove_cache();
}

/* A script standing in for the compiler: SCRIPT's body, "$out" the file
 * after -o. */
static void fake_cc(const char *body, char *path, size_t size)
{
    snprintf(path, size, "%s/fakecc", cache);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\nout=\nwhile [ $# -gt 0 ]; do\n"
               "  [ \"$1\" = -o ] && out=$2\n  shift\ndone\n%s\n", body);
    fclose(f);
    assert_int_equal(chmod(path, 0755), 0);
    setenv("CC", path, 1);
}

static void test_compilers_that_fail(void **state)
{
    (void)state;
    fresh_cache();
    eom_t *e;
    session_t *s = sphere_session("voronec", &e);
    diag_t err = {0};
    /* none */
    setenv("CC", "/nonexistent/cc", 1);
    char buf[NATIVE_PATH];
    assert_false(native_compiler(buf, sizeof buf));
    assert_int_equal(native_attach(e, NULL, NULL, NULL, &err), 1);
    assert_false(eom_has_native(e));
    /* one that fails, with and without a message */
    setenv("CC", "false", 1);
    assert_true(native_compiler(buf, sizeof buf));
    assert_int_equal(native_attach(e, NULL, NULL, NULL, &err), -1);
    const char *failed = "the C compiler 'false' failed on the generated code: exit status 1";
    assert_string_equal(err.msg, failed);
    char cc[160];
    fake_cc("echo \"x.c:1:2: warning: w\"; echo \"x.c:3:4: error: "
            "something is wrong\"; exit 1",
            cc, sizeof cc);
    diag_clear(&err);
    assert_int_equal(native_attach(e, NULL, NULL, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "failed on the generated code: x.c:3:4: "
                                    "error: something is wrong"));
    /* one that writes no shared object, one that writes an empty one */
    fake_cc("echo garbage > \"$out\"", cc, sizeof cc);
    diag_clear(&err);
    assert_int_equal(native_attach(e, NULL, NULL, NULL, &err), -1);
    /* "cannot load the compiled equations 'HASH.so': ... file too short" */
    assert_non_null(strstr(err.msg, "cannot load the compiled equations '"));
    assert_non_null(strstr(err.msg, ".so': "));
    fake_cc("echo 'int x;' > \"$out.c\"; cc -shared -fPIC -o \"$out\" "
            "\"$out.c\"; rm -f \"$out.c\"",
            cc, sizeof cc);
    diag_clear(&err);
    assert_int_equal(native_attach(e, NULL, NULL, NULL, &err), -1);
    /* "the compiled equations 'HASH.so' have no nh_model_values" */
    assert_non_null(strstr(err.msg, "the compiled equations '"));
    assert_non_null(strstr(err.msg, ".so' have no nh_model_values"));
    /* one that says it succeeded and writes nothing (issue 31: reported
     * as "cannot write to the compile cache") */
    static const char *const silent[] = {"true", "cc -fsyntax-only"};
    for (int k = 0; k < 2; k++) {
        setenv("CC", silent[k], 1);
        diag_clear(&err);
        assert_int_equal(native_attach(e, NULL, NULL, NULL, &err), -1);
        char want[256];
        snprintf(want, sizeof want, "the C compiler '%s' succeeded but wrote no shared object (is it a C compiler that links with -shared?)", k ? "cc" : "true");
        assert_string_equal(err.msg, want);
    }
    /* the compiler runs in the cache folder on relative names */
    fake_cc("echo \"x.c:1:1: error: in $(pwd): -o $out\"; exit 1", cc,
            sizeof cc);
    diag_clear(&err);
    assert_int_equal(native_attach(e, NULL, NULL, NULL, &err), -1);
    char want[512];
    snprintf(want, sizeof want, "failed on the generated code: x.c:1:1: error: in %s/nh: -o tmp-", cache);
    assert_non_null(strstr(err.msg, want));
    /* ... so a compiler given by a relative path is found from nh's */
    char *cwd = getcwd(NULL, 0);
    assert_int_equal(chdir(cache), 0);
    setenv("CC", "./fakecc", 1);
    diag_clear(&err);
    assert_int_equal(native_attach(e, NULL, NULL, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "the C compiler './fakecc' failed on the generated code: x.c:1:1: error: in "));
    assert_int_equal(chdir(cwd), 0);
    free(cwd);
    /* a stop request while it runs */
    fake_cc("sleep 5", cc, sizeof cc);
    nh_stop_t stop = {0, nh_clock() - 1.0};
    diag_clear(&err);
    assert_int_equal(native_attach(e, NULL, &stop, NULL, &err), -1);
    assert_string_equal(err.msg, "stopped: the statement ran past its time limit (while compiling)");
    /* a folder nh cannot write to (permissions do not bind root) */
    unsetenv("CC");
    if (geteuid() != 0) {
        char dir[128];
        snprintf(dir, sizeof dir, "%s/nh", cache);
        assert_int_equal(chmod(dir, 0500), 0);
        diag_clear(&err);
        assert_int_equal(native_attach(e, NULL, NULL, NULL, &err), -1);
        /* "cannot write to the compile cache 'DIR': Permission denied" */
        assert_non_null(strstr(err.msg, "cannot write to the compile cache '"));
        assert_int_equal(chmod(dir, 0700), 0);
    }
    /* nothing is left behind but what succeeded */
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls %s/nh | grep -q tmp-", cache);
    assert_int_not_equal(system(cmd), 0);
    session_free(s);
    remove_cache();
}

/* The number of files in the cache folder. */
static int cache_count(void)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s/nh", cache);
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

/* A compiler that fails on the derivatives (their -O1) and runs cc on
 * the equations. */
static void cc_failing_derivatives(void)
{
    char path[160];
    snprintf(path, sizeof path, "%s/fakecc", cache);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\n"
          "for a in \"$@\"; do\n"
          "  if [ \"$a\" = -O1 ]; then\n"
          "    echo 'x.c:1:1: error: no derivatives today'; exit 1\n"
          "  fi\n"
          "done\n"
          "exec cc \"$@\"\n",
          f);
    fclose(f);
    assert_int_equal(chmod(path, 0755), 0);
    setenv("CC", path, 1);
}

/* A compiler that says it succeeded on the derivatives (their -O1) and
 * writes nothing, and runs cc on the equations. */
static void cc_silent_derivatives(char *path, size_t size)
{
    snprintf(path, size, "%s/fakecc", cache);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\n"
          "for a in \"$@\"; do\n"
          "  [ \"$a\" = -O1 ] && exit 0\n"
          "done\n"
          "exec cc \"$@\"\n",
          f);
    fclose(f);
    assert_int_equal(chmod(path, 0755), 0);
    setenv("CC", path, 1);
}

/* Whether the cached text beside the object SO (HASH.so: HASH.c) holds
 * WHAT. */
static bool cached_text_has(const char *so, const char *what)
{
    char path[NATIVE_PATH];
    size_t len = strlen(so);
    assert_true(len > 3 && strcmp(so + len - 3, ".so") == 0);
    snprintf(path, sizeof path, "%.*s.c", (int)(len - 3), so);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[1024];
    bool found = false;
    while (fgets(line, sizeof line, f))
        found = found || (strstr(line, "built by nh's compile cache") &&
                          strstr(line, what));
    fclose(f);
    return found;
}

static bool cpu_has_avx2(void)
{
#if defined(__GNUC__) && defined(__x86_64__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
#else
    return false;
#endif
}

/* The derivatives are a file of their own: compiled beside the equations
 * when both are needed at once, found in the cache apart from them, and
 * a compile of them that fails is an error at the statement that needed
 * them, after which that statement runs on the tapes while the compiled
 * equations stay. */
static void test_tangents_apart(void **state)
{
    (void)state;
    fresh_cache();
    eom_t *e;
    session_t *s = sphere_session("maggi", &e);
    native_info_t info;
    diag_t err = {0};
    /* both at once: two texts, two objects */
    assert_int_equal(native_attach_tangents(e, "test", NULL, &info, &err), 0);
    assert_true(eom_has_native(e));
    assert_true(eom_tangents_native(e));
    assert_false(info.cached);
    assert_false(info.tangents_cached);
    assert_string_not_equal(info.path, info.tangents_path);
    assert_int_equal(cache_count(), 4);
    /* the derivatives with -mavx2 exactly where the processor has AVX2
     * (the flag in the cached text's comment, so in its key), the
     * equations without */
    assert_true(cached_text_has(info.tangents_path, " -mavx2 ") ==
                cpu_has_avx2());
    assert_false(cached_text_has(info.path, " -mavx2 "));
    /* the equations alone clear the derivatives; they come back from
     * the cache */
    eom_set_native(e, NULL, NULL, NULL, NULL);
    assert_int_equal(native_attach(e, "test", NULL, &info, &err), 0);
    assert_true(info.cached);
    assert_true(eom_has_native(e));
    assert_false(eom_tangents_native(e));
    assert_int_equal(native_attach_tangents(e, "test", NULL, &info, &err), 0);
    assert_true(info.tangents_cached);
    assert_string_equal(info.path, ""); /* the equations were there */
    assert_true(eom_tangents_native(e));
    session_free(s);
    remove_cache();

    /* a stop request while both compile: both killed, nothing attached,
     * nothing left behind */
    fresh_cache();
    s = sphere_session("voronec", &e);
    char cc[160];
    fake_cc("sleep 5", cc, sizeof cc);
    nh_stop_t stop = {0, nh_clock() - 1.0};
    double t0 = nh_clock();
    diag_clear(&err);
    assert_int_equal(native_attach_tangents(e, NULL, &stop, NULL, &err), -1);
    assert_true(nh_clock() - t0 < 4);
    assert_string_equal(err.msg, "stopped: the statement ran past its time "
                                 "limit (while compiling)");
    assert_false(eom_has_native(e));
    assert_false(eom_tangents_native(e));
    assert_int_equal(cache_count(), 0);
    unsetenv("CC");
    session_free(s);
    remove_cache();

    /* a compiler that writes no object for the derivatives: an error that
     * says so (issue 31), the equations attached and kept */
    fresh_cache();
    s = sphere_session("voronec", &e);
    cc_silent_derivatives(cc, sizeof cc);
    diag_clear(&err);
    assert_int_equal(native_attach(e, NULL, NULL, NULL, &err), 0);
    assert_int_equal(native_attach_tangents(e, NULL, NULL, NULL, &err), -1);
    char want[512];
    snprintf(want, sizeof want, "the C compiler '%s' succeeded but wrote no shared object (is it a C compiler that links with -shared?)", cc);
    assert_string_equal(err.msg, want);
    assert_true(eom_has_native(e));
    assert_false(eom_tangents_native(e));
    assert_int_equal(cache_count(), 2); /* the equations' HASH.c, .so */
    unsetenv("CC");
    session_free(s);
    remove_cache();

    /* a compiler that refuses -mavx2: the derivatives compiled without
     * it, and attached (on a machine without AVX2 it is never asked) */
    fresh_cache();
    s = sphere_session("multipliers", &e);
    snprintf(cc, sizeof cc, "%s/noavx2cc", cache);
    FILE *f = fopen(cc, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\n"
          "for a in \"$@\"; do\n"
          "  if [ \"$a\" = -mavx2 ]; then\n"
          "    echo 'cc: error: unrecognized command-line option -mavx2'\n"
          "    exit 1\n"
          "  fi\n"
          "done\n"
          "exec cc \"$@\"\n",
          f);
    fclose(f);
    assert_int_equal(chmod(cc, 0755), 0);
    setenv("CC", cc, 1);
    diag_clear(&err);
    assert_int_equal(native_attach_tangents(e, NULL, NULL, &info, &err), 0);
    assert_true(eom_has_native(e));
    assert_true(eom_tangents_native(e));
    assert_true(e->native_jac != NULL); /* the constraints' Jacobians */
    assert_false(cached_text_has(info.tangents_path, " -mavx2 "));
    assert_int_equal(cache_count(), 4);
    unsetenv("CC");
    session_free(s);
    remove_cache();

    /* a session whose derivatives do not compile, first needed by
     * simulate with an implicit integrator, then by linearize; and one
     * whose first statement needs both */
    static const char *const first[] = {
        "simulate to 1\nsimulate to 2 integrator msbdf\n",
        "linearize\n",
    };
    for (int k = 0; k < 2; k++) {
        fresh_cache();
        cc_failing_derivatives();
        char *errs;
        size_t len;
        FILE *ferr = open_memstream(&errs, &len);
        s = session_new(true, sink, ferr);
        assert_int_equal(session_run_text(s, "<t>", sphere, strlen(sphere),
                                          false),
                         RUN_OK);
        const char *set = "equations maggi\nset compile = on\n";
        assert_int_equal(session_run_text(s, "<t>", set, strlen(set), false),
                         RUN_OK);
        assert_int_equal(session_run_text(s, "<t>", first[k],
                                          strlen(first[k]), false),
                         RUN_ERROR);
        eom_t *em = session_ctx(s)->eom;
        assert_true(eom_has_native(em));
        assert_false(eom_tangents_native(em));
        const char *again = "linearize\nsimulate to 3 integrator msbdf\n";
        assert_int_equal(session_run_text(s, "<t>", again, strlen(again),
                                          false),
                         RUN_OK);
        assert_true(eom_has_native(em));
        assert_false(eom_tangents_native(em));
        session_free(s);
        fclose(ferr);
        assert_non_null(strstr(errs, "failed on the generated code: x.c:1:1: "
                                     "error: no derivatives today"));
        free(errs);
        unsetenv("CC");
        remove_cache();
    }
}

/* The folders above the cache are checked on the way down (issue 31: a
 * parent that another user may write let the cache be swapped between
 * the check and the use): one that every user may write is refused
 * unless it is sticky, as /tmp is; one its group may write is accepted
 * (a umask of 002 makes every folder so); a link on the way is the
 * user's to make, and the folder it leads to is the one checked. */
static void test_cache_checks_the_path(void **state)
{
    (void)state;
    fresh_cache();
    char open_dir[160], base[200], buf[NATIVE_PATH], want[1024];
    snprintf(open_dir, sizeof open_dir, "%s/open", cache);
    assert_int_equal(mkdir(open_dir, 0700), 0);
    assert_int_equal(chmod(open_dir, 0777), 0);
    snprintf(base, sizeof base, "%s/base", open_dir);
    setenv("XDG_CACHE_HOME", base, 1);
    diag_t err = {0};
    assert_int_equal(native_cache_dir(buf, sizeof buf, &err), -1);
    snprintf(want, sizeof want, "the compile cache '%s/nh' is refused: the folder '%s' above it: every user may write to it (every folder above the cache must be root's or yours, and not writable by every user unless it is sticky as /tmp is)", base, open_dir);
    assert_string_equal(err.msg, want);
    /* reached through a link of the user's own: the target is checked */
    char link[200];
    snprintf(link, sizeof link, "%s/link", cache);
    assert_int_equal(symlink(base, link), 0);
    setenv("XDG_CACHE_HOME", link, 1);
    diag_clear(&err);
    assert_int_equal(native_cache_dir(buf, sizeof buf, &err), -1);
    snprintf(want, sizeof want, "the compile cache '%s/nh' is refused: the folder '%s' above it: every user may write to it", link, open_dir);
    assert_non_null(strstr(err.msg, want));
    /* and so is everything under it: no attach, no compile */
    eom_t *e;
    session_t *s = sphere_session("voronec", &e);
    diag_clear(&err);
    assert_int_equal(native_attach(e, NULL, NULL, NULL, &err), -1);
    assert_non_null(strstr(err.msg, want));
    assert_int_equal(native_attach_tangents(e, NULL, NULL, NULL, &err), -1);
    assert_false(eom_has_native(e));
    session_free(s);
    /* sticky: others cannot rename what is not theirs */
    assert_int_equal(chmod(open_dir, 01777), 0);
    diag_clear(&err);
    assert_int_equal(native_cache_dir(buf, sizeof buf, &err), 0);
    assert_int_equal(chmod(open_dir, 0775), 0);
    diag_clear(&err);
    assert_int_equal(native_cache_dir(buf, sizeof buf, &err), 0);
    /* another user's folder above (only root can make one) */
    if (geteuid() == 0) {
        assert_int_equal(chmod(open_dir, 0755), 0);
        assert_int_equal(chown(open_dir, 65534, 65534), 0);
        diag_clear(&err);
        assert_int_equal(native_cache_dir(buf, sizeof buf, &err), -1);
        snprintf(want, sizeof want, "the folder '%s' above it: it belongs to another user", open_dir);
        assert_non_null(strstr(err.msg, want));
    }
    remove_cache();
}

/* The pids in FILE, once it holds N lines (the compilers that started),
 * into PIDS. */
static void wait_for_pids(const char *file, int n, long *pids)
{
    for (int i = 0; i < 1000; i++) {
        FILE *f = fopen(file, "r");
        int got = 0;
        while (f && got < n && fscanf(f, "%ld", &pids[got]) == 1)
            got++;
        if (f)
            fclose(f);
        if (got == n)
            return;
        struct timespec nap = {0, 10000000}; /* 10 ms */
        nanosleep(&nap, NULL);
    }
    fail_msg("the compilers did not start");
}

static volatile sig_atomic_t interrupts;
static nh_stop_t *interrupt_stop;

/* A handler of nh's own, as the REPL's: it raises the stop. */
static void on_interrupt(int sig)
{
    (void)sig;
    interrupts++;
    interrupt_stop->raised = 1;
}

/* SIGTERM, SIGHUP, or SIGINT outside the REPL while the two compilers
 * (equations and derivatives) run: both are killed, the temporaries are
 * removed, and then nh ends by the signal as it would have (issue 31:
 * tmp-*.c, .log and .so stayed for good and cc went on).  A SIGINT that
 * a handler of nh's own takes (the REPL's Ctrl-C) stops the compile
 * with an error and nh goes on; an ignored SIGHUP (nohup) does not stop
 * it.  Temporaries that an nh killed by SIGKILL left are swept on the
 * next use of the cache, when they are older than ten minutes (a
 * younger one may be another nh's). */
static void test_compile_killed(void **state)
{
    (void)state;
    fresh_cache();
    eom_t *e;
    session_t *s = sphere_session("voronec", &e);
    char cc[160], pidfile[160];
    snprintf(pidfile, sizeof pidfile, "%s/ccpid", cache);
    /* a compiler that waits, or with "$GO" runs cc */
    snprintf(cc, sizeof cc, "%s/fakecc", cache);
    FILE *f = fopen(cc, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\necho $$ >> %s\n"
               "[ -n \"$GO\" ] && sleep 0.5 && exec cc \"$@\"\n"
               "exec sleep 30\n",
            pidfile);
    fclose(f);
    assert_int_equal(chmod(cc, 0755), 0);
    setenv("CC", cc, 1);
    static const int sigs[] = {SIGTERM, SIGHUP, SIGINT, SIGINT, SIGINT,
                               SIGHUP};
    for (int k = 0; k < 6; k++) {
        int sig = sigs[k];
        /* k = 4: Ctrl-C at a terminal, to the compilers as well */
        bool handled = k == 3 || k == 4, group = k == 4, ignored = k == 5;
        if (ignored)
            setenv("GO", "1", 1);
        unlink(pidfile);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            if (group)
                setpgid(0, 0);
            nh_stop_t stop = {0};
            if (handled) {
                interrupt_stop = &stop;
                signal(SIGINT, on_interrupt);
            }
            if (ignored)
                signal(SIGHUP, SIG_IGN);
            diag_t err = {0};
            int rc = native_attach_tangents(e, NULL, &stop, NULL, &err);
            if (handled)
                _exit(rc == -1 && interrupts == 1 &&
                              strcmp(err.msg, "interrupted (while "
                                              "compiling)") == 0
                          ? 7
                          : 8);
            if (ignored)
                _exit(rc == 0 && eom_tangents_native(e) ? 9 : 10);
            _exit(3);
        }
        long pids[2];
        wait_for_pids(pidfile, 2, pids);
        assert_int_equal(kill(group ? -pid : pid, sig), 0);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (handled || ignored) {
            assert_true(WIFEXITED(status));
            assert_int_equal(WEXITSTATUS(status), handled ? 7 : 9);
        } else {
            assert_true(WIFSIGNALED(status));
            assert_int_equal(WTERMSIG(status), sig);
        }
        for (int i = 0; i < 2; i++) /* gone, and reaped */
            assert_int_equal(kill((pid_t)pids[i], 0), -1);
        char cmd[256];
        snprintf(cmd, sizeof cmd, "ls %s/nh | grep -q tmp-", cache);
        assert_int_not_equal(system(cmd), 0);
        assert_int_equal(cache_count(), ignored ? 4 : 0);
    }
    unsetenv("GO");
    /* stale temporaries: the old removed, the young kept, as is what is
     * not a temporary */
    unsetenv("CC");
    char old[200], young[200], other[200];
    snprintf(old, sizeof old, "%s/nh/tmp-old123.c", cache);
    snprintf(young, sizeof young, "%s/nh/tmp-new123.log", cache);
    snprintf(other, sizeof other, "%s/nh/notes.txt", cache);
    fclose(fopen(old, "w"));
    fclose(fopen(young, "w"));
    fclose(fopen(other, "w"));
    struct timespec times[2] = {{time(NULL) - 1200, 0},
                                {time(NULL) - 1200, 0}};
    assert_int_equal(utimensat(AT_FDCWD, old, times, 0), 0);
    assert_int_equal(utimensat(AT_FDCWD, other, times, 0), 0);
    diag_t err = {0};
    assert_int_equal(native_attach(e, NULL, NULL, NULL, &err), 0);
    assert_int_equal(access(old, F_OK), -1);
    assert_int_equal(access(young, F_OK), 0);
    assert_int_equal(access(other, F_OK), 0);
    session_free(s);
    remove_cache();
}

/* `set compile = on` in a session: the same output as the tapes
 * (linearize and eigen on the compiled derivatives among it), the
 * summaries included (max |C| and the energy drift to 17 digits: the
 * compiled monitors, and a sample that takes them from the step that
 * ended on it, with and without projection); a compile that fails is an
 * error once, then the tapes run. */
static void test_session_compile(void **state)
{
    (void)state;
    fresh_cache();
    const char *run = "simulate to 3\nprint phi, theta, psi, x, y, theta''\n";
    const char *runs = "simulate to 3\nsimulate to 7 step 0.37\n"
                       "simulate to 8 project\nprint phi, theta, x, y\n"
                       "linearize\neigen\n";
    static const char *const methods[] = {"voronec", "multipliers"};
    for (size_t m = 0; m < 2; m++) {
        char *outs[2];
        for (int compiled = 0; compiled < 2; compiled++) {
            size_t len;
            FILE *out = open_memstream(&outs[compiled], &len);
            session_t *s = session_new(false, out, sink);
            assert_int_equal(session_run_text(s, "<t>", sphere,
                                              strlen(sphere), false),
                             RUN_OK);
            char set[80];
            snprintf(set, sizeof set, "equations %s\n%s", methods[m],
                     compiled ? "set compile = on\n" : "");
            assert_int_equal(session_run_text(s, "<t>", set, strlen(set),
                                              false),
                             RUN_OK);
            const char *r = m == 0 ? run : runs;
            assert_int_equal(session_run_text(s, "<t>", r, strlen(r), false),
                             RUN_OK);
            assert_true(eom_has_native(session_ctx(s)->eom) ==
                        (compiled == 1));
            /* linearize and eigen differentiate the compiled tapes;
             * simulate (rk8pd) alone does not compile the derivatives */
            assert_true(eom_tangents_native(session_ctx(s)->eom) ==
                        (compiled == 1 && m == 1));
            /* and with them the constraints' Jacobians, which lyapunov
             * takes at every evaluation */
            assert_true((session_ctx(s)->eom->native_jac != NULL) ==
                        (compiled == 1 && m == 1));
            session_free(s);
            fclose(out);
        }
        assert_non_null(strstr(outs[0], "max |C| = "));
        assert_string_equal(outs[0], outs[1]);
        free(outs[0]);
        free(outs[1]);
    }

    setenv("CC", "false", 1);
    char *errs;
    size_t len;
    FILE *err = open_memstream(&errs, &len);
    session_t *s = session_new(true, sink, err);
    session_run_text(s, "<t>", sphere, strlen(sphere), false);
    const char *set = "equations multipliers\nset compile = on\n";
    assert_int_equal(session_run_text(s, "<t>", set, strlen(set), false),
                     RUN_OK);
    assert_int_equal(session_run_text(s, "<t>", run, strlen(run), false),
                     RUN_ERROR);
    assert_int_equal(session_run_text(s, "<t>", run, strlen(run), false),
                     RUN_OK);
    assert_false(eom_has_native(session_ctx(s)->eom));
    session_free(s);
    fclose(err);
    assert_non_null(strstr(errs, "error: the C compiler 'false' failed"));
    free(errs);
    unsetenv("CC");

    /* a compile stopped by the time limit (or Ctrl-C) is tried again */
    char cc[160];
    fake_cc("sleep 5", cc, sizeof cc);
    s = session_new(true, sink, sink);
    session_run_text(s, "<t>", sphere, strlen(sphere), false);
    assert_int_equal(session_run_text(s, "<t>", set, strlen(set), false),
                     RUN_OK);
    session_set_time_limit(s, 0.05);
    assert_int_equal(session_run_text(s, "<t>", run, strlen(run), false),
                     RUN_ERROR);
    assert_false(eom_has_native(session_ctx(s)->eom));
    unsetenv("CC");
    session_set_time_limit(s, 0);
    assert_int_equal(session_run_text(s, "<t>", run, strlen(run), false),
                     RUN_OK);
    assert_true(eom_has_native(session_ctx(s)->eom));
    session_free(s);

    /* no compiler: a note at `set`, and the tapes */
    char *old_path = strdup(getenv("PATH"));
    setenv("PATH", "/nonexistent", 1);
    err = open_memstream(&errs, &len);
    s = session_new(false, sink, err);
    session_run_text(s, "<t>", sphere, strlen(sphere), false);
    assert_int_equal(session_run_text(s, "<t>", set, strlen(set), false),
                     RUN_OK);
    assert_int_equal(session_run_text(s, "<t>", run, strlen(run), false),
                     RUN_OK);
    assert_false(eom_has_native(session_ctx(s)->eom));
    session_free(s);
    fclose(err);
    setenv("PATH", old_path, 1);
    free(old_path);
    assert_non_null(strstr(errs, "<t>:2:15: note: no C compiler found (cc on the PATH, or $CC): simulate and compare run on the tapes"));
    free(errs);
    remove_cache();
}

int main(void)
{
    sink = fopen("/dev/null", "w");
    const struct CMUnitTest examples[] = {
        cmocka_unit_test(test_examples_bit_for_bit),
    };
    const struct CMUnitTest others[] = {
        cmocka_unit_test(test_sphere_every_method),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_names_cannot_collide),
        cmocka_unit_test(test_cache_cold_warm_tampered),
        cmocka_unit_test(test_cache_refuses_folders),
        cmocka_unit_test(test_compilers_that_fail),
        cmocka_unit_test(test_tangents_apart),
        cmocka_unit_test(test_cache_checks_the_path),
        cmocka_unit_test(test_compile_killed),
        cmocka_unit_test(test_session_compile),
    };
    int rc = CGEN_EXAMPLES_PART ? cmocka_run_group_tests(examples, NULL, NULL)
                                : cmocka_run_group_tests(others, NULL, NULL);
    fclose(sink);
    return rc;
}
