/*
 * check.c — the `check` analysis (see check.h).
 *
 * Structure: values with magnitudes (interp/expr/mag.h: "zero" means
 * small next to the terms it was computed from) at pseudo-random sample
 * points near the current state, then one pass per question: kind
 * and homogeneity of each constraint, the Pfaffian forms and Frobenius'
 * test, the rank of B, and Benenti's Theorem 11.6.
 *
 * Must not: print; declare variables in the graph or change the system.
 */
#include "interp/analysis/check.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_vector.h>

#include "interp/base/util.h"
#include "interp/eom/kinematics.h"
#include "interp/expr/mag.h"

enum {
    CHK_POINTS = EXPR_MAG_POINTS, /* sample points per numeric verdict */
    CHK_SYM_MAX_N = 40,  /* build dω∧ω symbolically up to this many dims */
};
#define CHK_RANK_TOL 1e-10 /* singular value below this * the largest: 0 */
/* Above this many products the wedge's components are not enumerated: the
 * test is evaluated in its equivalent restricted form (chk_restricted). */
#define CHK_WEDGE_MAX 2e6

/* Folds the classes of many quantities (all must vanish for YES). */
typedef struct chk_verdict {
    bool any_nonzero, any_unsure;
} chk_verdict_t;

static void verdict_add(chk_verdict_t *vd, double v, double m)
{
    int c = expr_mag_class(v, m);
    if (c == 2)
        vd->any_nonzero = true;
    else if (c == 1)
        vd->any_unsure = true;
}

/* YES: everything vanished at NPTS > 0 points. */
static check_tri_t verdict_zero(const chk_verdict_t *vd, size_t npts)
{
    if (vd->any_nonzero)
        return CHECK_NO;
    if (vd->any_unsure || npts == 0)
        return CHECK_UNKNOWN;
    return CHECK_YES;
}

/* ---- the analysis context ------------------------------------------- */

typedef struct chk {
    const nh_system_t *sys;
    expr_graph_t *g;
    size_t nv;         /* variables in the graph */
    size_t N;          /* n + 1: the coordinates and t */
    bool *vmask;       /* the velocities q' */
    const double *base;
    uint64_t seed;     /* the sample points' random numbers */
    bool *move;        /* what sample points move: q, q', parameters, t */
    expr_mag_t ev;
    double *pts;       /* CHK_POINTS * nv: the last chk_sample */
    double *scratch;   /* nv */
} chk_t;

/* The variable of x_i on the space of (q, t): q_i, then t (i = n). */
static uint32_t xvar(const chk_t *k, size_t i)
{
    return i < k->sys->n ? k->sys->q[i] : k->sys->t;
}

/* Up to CHK_POINTS points near the current state at which every one of
 * the NE expressions is finite (expr_mag_sample; coordinates,
 * velocities, t and parameters move).  Returns how many (in k->pts). */
static size_t chk_sample(chk_t *k, const expr_t *const *e, size_t ne)
{
    return expr_mag_sample(&k->ev, &k->seed, k->base, k->move, k->nv, e, ne,
                           k->pts);
}

/* Whether all NE expressions vanish identically: YES symbolically when
 * each folded to the constant 0, else decided at sample points. */
static check_tri_t chk_zero(chk_t *k, const expr_t *const *e, size_t ne,
                            check_how_t *how, size_t *npts)
{
    size_t np;
    int z = expr_mag_zero(&k->ev, &k->seed, k->base, k->move, k->nv, e, ne,
                          k->pts, &np);
    if (z == 1 && np == 0) {
        *how = CHECK_BY_SYMBOLIC;
        return CHECK_YES;
    }
    *how = CHECK_BY_NUMERIC;
    if (npts && np > *npts)
        *npts = np;
    return z == 1 ? CHECK_YES : z == 0 ? CHECK_NO : CHECK_UNKNOWN;
}

/* ---- kind, degree, homogeneity, time -------------------------------- */

/* C with every velocity set to 0: the b(q, t) of an affine constraint. */
static const expr_t *at_rest(chk_t *k, const expr_t *c)
{
    const nh_system_t *s = k->sys;
    const expr_t **repl = xcalloc(k->nv, sizeof *repl);
    const expr_t *zero = expr_num(k->g, 0);
    for (size_t i = 0; i < s->n; i++)
        repl[s->qd[i]] = zero;
    const expr_t *b = expr_subst(k->g, c, repl);
    free(repl);
    return b;
}

/* Homogeneity in the velocities, numerically: C(q, s q', t) = s^K C for
 * s = 2, 1/2, 3 at the sample points (Benenti §8: homogeneous constraints;
 * s > 0, so positive homogeneity, which is what Euler's identity
 * Σ q_i' ∂C/∂q_i' = K C of Thm 11.6's proof needs).  When *K is NAN it is
 * estimated from the first point where C is clearly nonzero. */
static check_tri_t homog_numeric(chk_t *k, const expr_t *c, double *K,
                                 size_t *npts)
{
    static const double scales[] = {2.0, 0.5, 3.0};
    const nh_system_t *s = k->sys;
    size_t np = chk_sample(k, &c, 1);
    if (np > *npts)
        *npts = np;
    double *sc = k->scratch;
    chk_verdict_t vd = {false, false};
    size_t used = 0;
    for (size_t p = 0; p < np; p++) {
        const double *pt = k->pts + p * k->nv;
        double m0, c0, v1[3], m1[3];
        expr_mag_begin(&k->ev, pt);
        c0 = expr_mag_get(&k->ev, c, &m0);
        memcpy(sc, pt, k->nv * sizeof *sc);
        bool ok = true;
        for (size_t j = 0; j < 3 && ok; j++) {
            for (size_t i = 0; i < s->n; i++)
                sc[s->qd[i]] = scales[j] * pt[s->qd[i]];
            expr_mag_begin(&k->ev, sc);
            v1[j] = expr_mag_get(&k->ev, c, &m1[j]);
            ok = isfinite(v1[j]) && isfinite(m1[j]);
        }
        if (!ok)
            continue;
        if (isnan(*K)) {
            /* C(2q') / C(q') = 2^K. */
            if (expr_mag_class(c0, m0) != 2 || expr_mag_class(v1[0], m1[0]) != 2 ||
                (c0 > 0) != (v1[0] > 0))
                continue;
            double est = log2(v1[0] / c0);
            double half = round(2 * est) / 2;
            *K = fabs(est - half) < 1e-6 ? half : est;
        }
        used++;
        for (size_t j = 0; j < 3; j++) {
            double f = pow(scales[j], *K);
            verdict_add(&vd, v1[j] - f * c0, m1[j] + f * m0);
        }
    }
    if (isnan(*K) && !vd.any_nonzero)
        return CHECK_UNKNOWN;
    return verdict_zero(&vd, used);
}

/* Fills the kind, degree, homogeneity and time dependence of constraint
 * A.  GRAD receives ∂C/∂q_i' (n entries) and *B the at-rest part. */
static void chk_kind(chk_t *k, size_t a, check_constraint_t *out,
                     const expr_t **grad, const expr_t **bpart)
{
    const nh_system_t *s = k->sys;
    expr_graph_t *g = k->g;
    const expr_t *c = s->C[a];
    check_how_t how;

    out->points = 0;
    out->poly_degree = expr_degree(g, c, k->vmask);

    /* Time: ∂C/∂t ≠ 0 structurally, then numerically. */
    out->time_dependent = false;
    out->t_cancels = false;
    if (expr_depends(g, c, s->t)) {
        const expr_t *dt = expr_diff(g, c, s->t);
        check_tri_t z = chk_zero(k, &dt, 1, &how, &out->points);
        out->t_cancels = z == CHECK_YES;
        out->time_dependent = z != CHECK_YES;
    }

    out->integrable = out->exact = out->in_system = CHECK_NA;
    out->integrable_how = out->exact_how = CHECK_BY_NONE;
    *bpart = NULL;
    if (!expr_depends_any(g, c, k->vmask)) {
        /* f(q, t) = 0: homogeneous of degree 0 in q' (trivially). */
        out->kind = CHECK_HOLONOMIC;
        out->kind_how = CHECK_BY_SYMBOLIC;
        out->homogeneous = CHECK_YES;
        out->homogeneous_how = CHECK_BY_SYMBOLIC;
        out->degree = 0;
        return;
    }

    for (size_t i = 0; i < s->n; i++)
        grad[i] = expr_diff(g, c, s->qd[i]);

    /* Linear in q' (up to a term without q'): polynomial of degree 1, or
     * every second derivative ∂²C/∂q_i'∂q_j' vanishes. */
    check_tri_t lin;
    check_how_t lin_how = CHECK_BY_SYMBOLIC;
    if (out->poly_degree == 1) {
        lin = CHECK_YES;
    } else {
        size_t nh = s->n * (s->n + 1) / 2, j = 0;
        const expr_t **h = xmalloc(nh * sizeof *h);
        for (size_t i = 0; i < s->n; i++)
            for (size_t l = i; l < s->n; l++)
                h[j++] = expr_diff(g, grad[i], s->qd[l]);
        lin = chk_zero(k, h, nh, &lin_how, &out->points);
        free(h);
    }

    if (lin == CHECK_YES) {
        const expr_t *b = at_rest(k, c);
        *bpart = b;
        check_tri_t bz = chk_zero(k, &b, 1, &how, &out->points);
        out->kind = bz == CHECK_YES ? CHECK_LINEAR : CHECK_AFFINE;
        /* a nonzero b is only shown, so only b = 0 seen at points makes
         * the kind a numeric verdict */
        out->kind_how = lin_how == CHECK_BY_NUMERIC ||
                                (bz == CHECK_YES && how == CHECK_BY_NUMERIC)
                            ? CHECK_BY_NUMERIC
                            : CHECK_BY_SYMBOLIC;
        if (out->kind == CHECK_LINEAR) {
            out->homogeneous = CHECK_YES;
            out->degree = 1;
        } else {
            /* Σ a_i q_i' + b with b ≠ 0: C(q, s q') = s Σ a_i q_i' + b. */
            out->homogeneous = bz == CHECK_NO ? CHECK_NO : CHECK_UNKNOWN;
            out->degree = NAN;
        }
        out->homogeneous_how = out->kind_how;
        return;
    }

    out->kind = CHECK_NONLINEAR;
    out->kind_how = CHECK_BY_SYMBOLIC; /* a nonzero seen is proof enough */
    out->degree = NAN;
    /* C(q, 0, t) ≠ 0 rules out every degree but 0, and the part without
     * velocities does not hide under large velocity terms the way it can
     * in the scaling test (1e200 x'^2 − v0). */
    const expr_t *rest = at_rest(k, c);
    if (!expr_is_const(rest, 0) && out->poly_degree > 0 &&
        chk_zero(k, &rest, 1, &how, &out->points) == CHECK_NO) {
        out->degree = out->poly_degree;
        out->homogeneous = CHECK_NO;
        out->homogeneous_how = CHECK_BY_NUMERIC;
        return;
    }
    if (out->poly_degree >= 0) {
        /* Euler's identity Σ q_i' ∂C/∂q_i' − d C = 0 (Benenti, proof of
         * Thm 11.6) when the simplifier settles it. */
        int d = out->poly_degree;
        const expr_t **terms = xmalloc((s->n + 1) * sizeof *terms);
        for (size_t i = 0; i < s->n; i++)
            terms[i] = expr_mul(g, expr_var(g, s->qd[i]), grad[i]);
        terms[s->n] = expr_mul(g, expr_num(g, -d), c);
        const expr_t *euler = expr_sum(g, terms, s->n + 1);
        free(terms);
        out->degree = d;
        if (expr_is_const(euler, 0)) {
            out->homogeneous = CHECK_YES;
            out->homogeneous_how = CHECK_BY_SYMBOLIC;
            return;
        }
    }
    out->homogeneous = homog_numeric(k, c, &out->degree, &out->points);
    out->homogeneous_how = CHECK_BY_NUMERIC;
}

/* ---- Pfaffian forms and Frobenius' test ------------------------------ */

/* ω = Σ a_i dx_i on x = (q, t); dω = Σ_{i<j} W_ij dx_i ∧ dx_j with
 * W_ij = ∂a_j/∂x_i − ∂a_i/∂x_j. */
typedef struct chk_form {
    size_t con;         /* the constraint */
    bool tested;        /* linear or affine (holonomic: ω = df) */
    const expr_t **a;   /* N */
    const expr_t **w;   /* N*N, i < j filled */
    bool w_zero;        /* every W_ij folded to 0 */
} chk_form_t;

static void form_build(chk_t *k, chk_form_t *f, size_t con,
                       const expr_t *const *grad, const expr_t *b)
{
    const nh_system_t *s = k->sys;
    size_t N = k->N;
    f->con = con;
    f->a = xmalloc(N * sizeof *f->a);
    f->w = xcalloc(N * N, sizeof *f->w);
    if (grad) {
        /* Castellano eq. 11: Σ a_k dq_k + a_t dt, a_t = b. */
        f->tested = true;
        for (size_t i = 0; i < s->n; i++)
            f->a[i] = grad[i];
        f->a[s->n] = b;
    } else {
        f->tested = false; /* df = Σ ∂f/∂q_i dq_i + ∂f/∂t dt */
        for (size_t i = 0; i < N; i++)
            f->a[i] = expr_diff(k->g, s->C[con], xvar(k, i));
    }
    f->w_zero = true;
    for (size_t i = 0; i < N; i++)
        for (size_t j = i + 1; j < N; j++) {
            const expr_t *w = expr_sub(k->g, expr_diff(k->g, f->a[j], xvar(k, i)),
                                       expr_diff(k->g, f->a[i], xvar(k, j)));
            f->w[i * N + j] = w;
            if (!expr_is_const(w, 0))
                f->w_zero = false;
        }
}

static void form_free(chk_form_t *f)
{
    free(f->a);
    free(f->w);
}

/* The expressions of forms F[0..nf) (coefficients and W), for sampling. */
static const expr_t **form_exprs(const chk_t *k, const chk_form_t *f,
                                 size_t nf, size_t *ne)
{
    size_t N = k->N, per = N + N * (N - 1) / 2, j = 0;
    const expr_t **e = xmalloc(nf * per * sizeof *e);
    for (size_t q = 0; q < nf; q++) {
        for (size_t i = 0; i < N; i++)
            e[j++] = f[q].a[i];
        for (size_t i = 0; i < N; i++)
            for (size_t l = i + 1; l < N; l++)
                e[j++] = f[q].w[i * N + l];
    }
    *ne = j;
    return e;
}

/* Values and magnitudes of a form at the point of ev_begin: A[i], W[i*N+j]
 * antisymmetric. */
static void form_eval(chk_t *k, const chk_form_t *f, double *a, double *am,
                      double *w, double *wm)
{
    size_t N = k->N;
    for (size_t i = 0; i < N; i++)
        a[i] = expr_mag_get(&k->ev, f->a[i], &am[i]);
    for (size_t i = 0; i < N; i++) {
        w[i * N + i] = wm[i * N + i] = 0;
        for (size_t j = i + 1; j < N; j++) {
            double m, v = expr_mag_get(&k->ev, f->w[i * N + j], &m);
            w[i * N + j] = v;
            w[j * N + i] = -v;
            wm[i * N + j] = wm[j * N + i] = m;
        }
    }
}

/* Exactness (dω = 0, i.e. ∂a_i/∂x_j symmetric) and Frobenius' test for
 * the form alone: dω ∧ ω = 0, whose component on dx_i∧dx_j∧dx_k (i<j<k)
 * is W_ij a_k − W_ik a_j + W_jk a_i. */
static void form_alone(chk_t *k, const chk_form_t *f, check_constraint_t *c)
{
    size_t N = k->N;
    if (f->w_zero) {
        c->exact = c->integrable = CHECK_YES;
        c->exact_how = c->integrable_how = CHECK_BY_SYMBOLIC;
        return;
    }
    expr_graph_t *g = k->g;
    bool sym0 = false;
    if (N <= CHK_SYM_MAX_N) {
        sym0 = true;
        for (size_t i = 0; i < N && sym0; i++)
            for (size_t j = i + 1; j < N && sym0; j++)
                for (size_t l = j + 1; l < N && sym0; l++) {
                    const expr_t *t[3] = {
                        expr_mul(g, f->w[i * N + j], f->a[l]),
                        expr_neg(g, expr_mul(g, f->w[i * N + l], f->a[j])),
                        expr_mul(g, f->w[j * N + l], f->a[i])};
                    sym0 = expr_is_const(expr_sum(g, t, 3), 0);
                }
    }
    size_t ne;
    const expr_t **e = form_exprs(k, f, 1, &ne);
    size_t np = chk_sample(k, e, ne);
    free(e);
    if (np > c->points)
        c->points = np;
    double *a = xmalloc(N * sizeof *a), *am = xmalloc(N * sizeof *am);
    double *w = xmalloc(N * N * sizeof *w), *wm = xmalloc(N * N * sizeof *wm);
    size_t *nza = xmalloc(N * sizeof *nza);
    size_t *nzw = xmalloc(N * (N - 1) * sizeof *nzw + 1);
    chk_verdict_t ex = {false, false}, in = {false, false};
    for (size_t p = 0; p < np; p++) {
        expr_mag_begin(&k->ev, k->pts + p * k->nv);
        form_eval(k, f, a, am, w, wm);
        /* dω ∧ ω on dx_i dx_j dx_l (i < j < l) is
         * w_ij a_l − w_il a_j + w_jl a_i; a component none of whose three
         * terms has a magnitude is 0 with magnitude 0, which decides
         * nothing, so only the triples made of a pair where dω has a
         * magnitude and an index where ω has one are visited (each once
         * per way of making it: the verdict does not count).  The
         * dense loop over all N³/6 triples took seconds at N = 141. */
        size_t na = 0, nw = 0;
        for (size_t i = 0; i < N; i++)
            if (!(am[i] == 0))
                nza[na++] = i;
        for (size_t i = 0; i < N; i++)
            for (size_t j = i + 1; j < N; j++) {
                verdict_add(&ex, w[i * N + j], wm[i * N + j]);
                if (!(wm[i * N + j] == 0)) {
                    nzw[nw++] = i;
                    nzw[nw++] = j;
                }
            }
        for (size_t pw = 0; pw < nw; pw += 2)
            for (size_t pa = 0; pa < na; pa++) {
                size_t x = nzw[pw], y = nzw[pw + 1], z = nza[pa], t;
                if (z == x || z == y)
                    continue;
                if (z < y) { /* sort x < y < z (x < y already) */
                    t = y, y = z, z = t;
                    if (y < x)
                        t = x, x = y, y = t;
                }
                double v = w[x * N + y] * a[z] - w[x * N + z] * a[y] +
                           w[y * N + z] * a[x];
                double m = wm[x * N + y] * am[z] + wm[x * N + z] * am[y] +
                           wm[y * N + z] * am[x];
                verdict_add(&in, v, m);
            }
    }
    free(nzw);
    free(nza);
    free(a);
    free(am);
    free(w);
    free(wm);
    c->exact = verdict_zero(&ex, np);
    c->exact_how = CHECK_BY_NUMERIC;
    if (sym0) {
        c->integrable = CHECK_YES;
        c->integrable_how = CHECK_BY_SYMBOLIC;
    } else {
        c->integrable = verdict_zero(&in, np);
        c->integrable_how = CHECK_BY_NUMERIC;
    }
    if (c->exact == CHECK_YES && c->integrable == CHECK_UNKNOWN)
        c->integrable = CHECK_YES; /* dω = 0 gives dω ∧ ω = 0 */
}

/* Singular value decomposition of the ROWS×COLS row-major matrix M (rows
 * >= cols): singular values S (cols, decreasing) and right vectors V
 * (cols×cols row-major, column j the j-th vector). */
static void chk_svd(const double *m, size_t rows, size_t cols, double *s,
                    double *v)
{
    gsl_matrix *A = gsl_matrix_alloc(rows, cols);
    gsl_matrix *V = gsl_matrix_alloc(cols, cols);
    gsl_vector *S = gsl_vector_alloc(cols);
    gsl_vector *work = gsl_vector_alloc(cols);
    if (!A || !V || !S || !work)
        nh_out_of_memory();
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            gsl_matrix_set(A, i, j, m[i * cols + j]);
    gsl_linalg_SV_decomp(A, V, S, work);
    for (size_t j = 0; j < cols; j++) {
        s[j] = gsl_vector_get(S, j);
        for (size_t i = 0; i < cols; i++)
            v[i * cols + j] = gsl_matrix_get(V, i, j);
    }
    gsl_vector_free(work);
    gsl_vector_free(S);
    gsl_matrix_free(V);
    gsl_matrix_free(A);
}

/* Determinant of the R×R row-major matrix M (destroyed): Gaussian
 * elimination with partial pivoting. */
static double det_small(double *m, size_t r)
{
    double det = 1;
    for (size_t c = 0; c < r; c++) {
        size_t piv = c;
        for (size_t i = c + 1; i < r; i++)
            if (fabs(m[i * r + c]) > fabs(m[piv * r + c]))
                piv = i;
        if (m[piv * r + c] == 0)
            return 0;
        if (piv != c) {
            for (size_t j = 0; j < r; j++) {
                double t = m[c * r + j];
                m[c * r + j] = m[piv * r + j];
                m[piv * r + j] = t;
            }
            det = -det;
        }
        det *= m[c * r + c];
        for (size_t i = c + 1; i < r; i++) {
            double f = m[i * r + c] / m[c * r + c];
            for (size_t j = c; j < r; j++)
                m[i * r + j] -= f * m[c * r + j];
        }
    }
    return det;
}

/* C(n, k) as a double (only compared with a bound). */
static double binom(size_t n, size_t k)
{
    double b = 1;
    for (size_t i = 0; i < k; i++)
        b = b * (double)(n - i) / (double)(i + 1);
    return b;
}

/* dω ∧ Ω, Ω = ω^1 ∧ … ∧ ω^R, component by component at one point.  The
 * component on dx_I (I increasing, |I| = R+2) is
 *   Σ_{p<q} (−1)^{p+q−1} W_{I_p I_q} det A[:, I∖{I_p, I_q}]
 * (moving dx_{I_p} and dx_{I_q} to the front); its magnitude uses the
 * Hadamard bound Π_a |A_a,K| of each determinant. */
static void wedge_at(size_t N, size_t R, const double *A, const double *Am,
                     const double *w, const double *wm, chk_verdict_t *vd,
                     double *tmp)
{
    size_t S = R + 2;
    size_t *I = xmalloc(S * sizeof *I), *K = xmalloc((R ? R : 1) * sizeof *K);
    for (size_t i = 0; i < S; i++)
        I[i] = i;
    for (;;) {
        double v = 0, m = 0;
        for (size_t p = 0; p < S; p++)
            for (size_t q = p + 1; q < S; q++) {
                size_t nk = 0;
                for (size_t i = 0; i < S; i++)
                    if (i != p && i != q)
                        K[nk++] = I[i];
                double had = 1;
                for (size_t a = 0; a < R; a++) {
                    double row = 0;
                    for (size_t j = 0; j < R; j++) {
                        tmp[a * R + j] = A[a * N + K[j]];
                        row += Am[a * N + K[j]] * Am[a * N + K[j]];
                    }
                    had *= sqrt(row);
                }
                double d = R ? det_small(tmp, R) : 1;
                double sign = (p + q) % 2 ? 1 : -1; /* (−1)^{p+q−1} */
                v += sign * w[I[p] * N + I[q]] * d;
                m += wm[I[p] * N + I[q]] * had;
            }
        verdict_add(vd, v, m);
        /* next increasing S-subset of 0..N-1 */
        size_t i = S;
        while (i > 0 && I[i - 1] == N - S + i - 1)
            i--;
        if (i == 0)
            break;
        I[i - 1]++;
        for (size_t j = i; j < S; j++)
            I[j] = I[j - 1] + 1;
    }
    free(I);
    free(K);
}

/* The same condition in its restricted form, for systems too large to
 * enumerate: with the ω^a independent, dω ∧ Ω = 0 exactly when dω
 * vanishes on pairs of vectors of the distribution {ω^a = 0}, i.e.
 * Zᵀ W Z = 0 for Z (N×D, row-major) a basis of the null space of A (from
 * the SVD).  The magnitude of entry (k, l) is (|Z|ᵀ Wm |Z|)_kl, ZA = |Z|.
 * Both as products through WZ = W Z and WZA = Wm |Z| (N×D scratch, one
 * row for each row of W that has an entry, listed in ROWS): N² + nnz D +
 * rows D² per form, where the sums written entry by entry cost N² D² (a
 * 141-coordinate model with 100 constraints took 12 s). */
static void restricted_at(size_t N, size_t D, const double *Z,
                          const double *ZA, const double *w,
                          const double *wm, chk_verdict_t *vd, double *WZ,
                          double *WZA, size_t *rows)
{
    size_t nr = 0; /* the rows of W with an entry: the others add 0 */
    for (size_t i = 0; i < N; i++) {
        double *r = WZ + nr * D, *ra = WZA + nr * D;
        bool any = false;
        for (size_t j = 0; j < N; j++) {
            double wij = w[i * N + j], mij = wm[i * N + j];
            if (wij == 0 && mij == 0)
                continue; /* dω is sparse: most pairs never meet */
            if (!any)
                for (size_t k = 0; k < D; k++)
                    r[k] = ra[k] = 0;
            any = true;
            const double *zj = Z + j * D, *aj = ZA + j * D;
            for (size_t k = 0; k < D; k++) {
                r[k] += wij * zj[k];
                ra[k] += mij * aj[k];
            }
        }
        if (any)
            rows[nr++] = i;
    }
    for (size_t k = 0; k < D; k++)
        for (size_t l = k + 1; l < D; l++) {
            double v = 0, m = 0;
            for (size_t p = 0; p < nr; p++) {
                size_t i = rows[p];
                v += Z[i * D + k] * WZ[p * D + l];
                m += ZA[i * D + k] * WZA[p * D + l];
            }
            verdict_add(vd, v, m);
        }
}

/* Picks a maximal independent subset of the R rows of A (R×N) in order,
 * by modified Gram–Schmidt: a row is kept when what is left of it after
 * removing the kept directions is above CHK_RANK_TOL of its norm.  Writes
 * the kept indices to KEEP and returns how many.  Q (R×N) is scratch. */
static size_t independent_rows(const double *A, size_t R, size_t N,
                               size_t *keep, double *Q)
{
    size_t nk = 0;
    for (size_t a = 0; a < R; a++) {
        double *q = Q + nk * N, norm0 = 0, norm = 0;
        memcpy(q, A + a * N, N * sizeof *q);
        for (size_t j = 0; j < N; j++)
            norm0 += q[j] * q[j];
        for (size_t b = 0; b < nk; b++) {
            const double *u = Q + b * N;
            double d = 0;
            for (size_t j = 0; j < N; j++)
                d += u[j] * q[j];
            for (size_t j = 0; j < N; j++)
                q[j] -= d * u[j];
        }
        for (size_t j = 0; j < N; j++)
            norm += q[j] * q[j];
        if (!(norm > 0) || !(sqrt(norm) > CHK_RANK_TOL * sqrt(norm0)))
            continue;
        for (size_t j = 0; j < N; j++)
            q[j] /= sqrt(norm);
        keep[nk++] = a;
    }
    return nk;
}

/* Frobenius' test for the system: for each tested form ω^a,
 * dω^a ∧ ω^1 ∧ … ∧ ω^R = 0 at sample points.  Where some forms are
 * combinations of others, Ω is the product of an independent subset
 * (which spans the same forms, so the ideal and the test are the same);
 * an (R'+2)-form on N < R'+2 dimensions vanishes. */
static void chk_system(chk_t *k, chk_form_t *f, size_t R,
                       check_report_t *rep)
{
    size_t N = k->N;
    bool all_exact = true;
    for (size_t q = 0; q < R; q++)
        all_exact = all_exact && f[q].w_zero;
    rep->system_culprit = SIZE_MAX;
    if (all_exact) {
        /* every dω^a = 0 */
        rep->system_integrable = CHECK_YES;
        rep->system_how = CHECK_BY_SYMBOLIC;
        for (size_t q = 0; q < R; q++)
            if (f[q].tested)
                rep->c[f[q].con].in_system = CHECK_YES;
        return;
    }
    size_t ne;
    const expr_t **e = form_exprs(k, f, R, &ne);
    size_t np = chk_sample(k, e, ne);
    free(e);

    double *A = xmalloc(R * N * sizeof *A), *Am = xmalloc(R * N * sizeof *Am);
    double *S = xmalloc(R * N * sizeof *S), *Sm = xmalloc(R * N * sizeof *Sm);
    double *w = xmalloc(R * N * N * sizeof *w);
    double *wm = xmalloc(R * N * N * sizeof *wm);
    double *pad = xmalloc(N * N * sizeof *pad), *sv = xmalloc(N * sizeof *sv);
    double *Z = xmalloc(N * N * sizeof *Z);
    double *Zn = xmalloc(N * N * sizeof *Zn), *Za = xmalloc(N * N * sizeof *Za);
    double *WZ = xmalloc(N * N * sizeof *WZ), *WZA = xmalloc(N * N * sizeof *WZA);
    double *tmp = xmalloc((R * R + 1) * sizeof *tmp);
    size_t *keep = xmalloc(R * sizeof *keep), *rows = xmalloc(N * sizeof *rows);
    chk_verdict_t *vd = xcalloc(R, sizeof *vd);
    for (size_t p = 0; p < np; p++) {
        expr_mag_begin(&k->ev, k->pts + p * k->nv);
        for (size_t q = 0; q < R; q++)
            form_eval(k, &f[q], A + q * N, Am + q * N, w + q * N * N,
                      wm + q * N * N);
        size_t Ri = independent_rows(A, R, N, keep, pad);
        if (Ri + 2 > N)
            continue; /* dω ∧ Ω is an (Ri+2)-form: zero */
        for (size_t i = 0; i < Ri; i++) {
            memcpy(S + i * N, A + keep[i] * N, N * sizeof *S);
            memcpy(Sm + i * N, Am + keep[i] * N, N * sizeof *Sm);
        }
        bool enumerate = binom(N, Ri + 2) * binom(Ri + 2, 2) * (double)Ri *
                             (double)Ri * (double)Ri <=
                         CHK_WEDGE_MAX;
        size_t D = N - Ri;
        if (!enumerate) {
            memset(pad, 0, N * N * sizeof *pad);
            memcpy(pad, S, Ri * N * sizeof *S);
            chk_svd(pad, N, N, sv, Z);
            /* the null space: Z's last D columns, packed N×D */
            for (size_t i = 0; i < N; i++)
                for (size_t c = 0; c < D; c++) {
                    Zn[i * D + c] = Z[i * N + Ri + c];
                    Za[i * D + c] = fabs(Zn[i * D + c]);
                }
        }
        for (size_t q = 0; q < R; q++) {
            if (!f[q].tested)
                continue;
            if (enumerate)
                wedge_at(N, Ri, S, Sm, w + q * N * N, wm + q * N * N, &vd[q],
                         tmp);
            else
                restricted_at(N, D, Zn, Za, w + q * N * N, wm + q * N * N,
                              &vd[q], WZ, WZA, rows);
        }
    }
    rep->system_integrable = CHECK_YES;
    rep->system_how = CHECK_BY_NUMERIC;
    for (size_t q = 0; q < R; q++) {
        if (!f[q].tested)
            continue;
        check_tri_t t = verdict_zero(&vd[q], np);
        check_constraint_t *c = &rep->c[f[q].con];
        c->in_system = t;
        if (np > c->points)
            c->points = np;
        if (t == CHECK_NO) {
            if (rep->system_integrable != CHECK_NO)
                rep->system_culprit = f[q].con;
            rep->system_integrable = CHECK_NO;
        } else if (t == CHECK_UNKNOWN &&
                   rep->system_integrable == CHECK_YES) {
            rep->system_integrable = CHECK_UNKNOWN;
        }
    }
    free(vd);
    free(rows);
    free(keep);
    free(tmp);
    free(WZA);
    free(WZ);
    free(Za);
    free(Zn);
    free(Z);
    free(sv);
    free(pad);
    free(wm);
    free(w);
    free(Sm);
    free(S);
    free(Am);
    free(A);
}

/* ---- rank of B at the current state --------------------------------- */

/* The rank of B (its entries E, r×n) at the point of expr_mag_begin,
 * with Bᵀ padded to ROWS × r in BT and the singular values in SV and V
 * (chk_svd); SIZE_MAX when an entry is not finite (its row in *CULPRIT). */
static size_t rank_here(chk_t *k, const expr_t *const *e, size_t rows,
                        double *bt, double *sv, double *V, size_t *culprit)
{
    size_t n = k->sys->n, r = k->sys->r;
    memset(bt, 0, rows * r * sizeof *bt);
    for (size_t a = 0; a < r; a++)
        for (size_t i = 0; i < n; i++) {
            double v = expr_mag_get(&k->ev, e[a * n + i], NULL);
            if (!isfinite(v)) {
                *culprit = a;
                return SIZE_MAX;
            }
            bt[i * r + a] = v;
        }
    chk_svd(bt, rows, r, sv, V);
    size_t rank = 0;
    for (size_t j = 0; j < r; j++)
        if (sv[j] > CHK_RANK_TOL * sv[0])
            rank++;
    return rank;
}

static void chk_rank(chk_t *k, check_report_t *rep)
{
    const nh_system_t *s = k->sys;
    size_t n = s->n, r = s->r;
    rep->b_finite = true;
    rep->rank = 0;
    rep->singular = false;
    rep->dof = (long)n - (long)r;
    if (r == 0)
        return;
    /* Bᵀ padded with zero rows to max(n, r) × r, so that the SVD's V (r×r)
     * holds the combination of rows of B that vanishes when singular. */
    size_t rows = n > r ? n : r;
    double *bt = xcalloc(rows * r, sizeof *bt);
    const expr_t **e = xmalloc(r * n * sizeof *e + 1);
    for (size_t a = 0; a < r; a++) {
        bool hol = !expr_depends_any(k->g, s->C[a], k->vmask);
        /* a holonomic f: the row of f' = Σ ∂f/∂q_i q_i' + ∂f/∂t */
        for (size_t i = 0; i < n; i++)
            e[a * n + i] = expr_diff(k->g, s->C[a], hol ? s->q[i] : s->qd[i]);
    }
    double *sv = xmalloc(r * sizeof *sv), *V = xmalloc(r * r * sizeof *V);
    expr_mag_begin(&k->ev, k->base);
    size_t rank = rank_here(k, e, rows, bt, sv, V, &rep->b_culprit);
    if (rank == SIZE_MAX) {
        rep->b_finite = false;
    } else {
        rep->sigma_max = sv[0];
        rep->sigma_min = sv[r - 1];
        rep->rank = rank;
        rep->singular = rank < r;
    }
    if (rep->singular) {
        /* weight of row a in the dependencies: the norm of e_a's
         * component in the left null space of B (columns rank..r-1 of V) */
        rep->dependency = xmalloc(r * sizeof *rep->dependency);
        for (size_t a = 0; a < r; a++) {
            double w = 0;
            for (size_t j = rep->rank; j < r; j++)
                w += V[a * r + j] * V[a * r + j];
            rep->dependency[a] = sqrt(w);
        }
        /* Dependent at this state only, or at every state: then the
         * constraints are not independent (LANGUAGE.md §4). */
        size_t np = chk_sample(k, e, r * n), low = 0, culprit;
        for (size_t p = 0; p < np; p++) {
            expr_mag_begin(&k->ev, k->pts + p * k->nv);
            size_t rk = rank_here(k, e, rows, bt, sv, V, &culprit);
            low += rk != SIZE_MAX && rk < r;
        }
        rep->dependent_everywhere = np > 0 && low == np;
        rep->dependent_points = np;
    }
    free(V);
    free(sv);
    free(e);
    free(bt);
}

/* ---- energy: Benenti Theorem 11.6 ----------------------------------- */

static void chk_energy(chk_t *k, check_report_t *rep)
{
    const nh_system_t *s = k->sys;
    check_how_t how;
    size_t np = 0;

    rep->force_culprit = SIZE_MAX;
    rep->forces_workless = false;
    for (size_t i = 0; i < s->n && rep->force_culprit == SIZE_MAX; i++)
        if (chk_zero(k, &s->Q[i], 1, &how, &np) != CHECK_YES)
            rep->force_culprit = i;
    if (rep->force_culprit != SIZE_MAX) {
        /* Forces that do no work (Σ Q_i q_i' = 0 identically, e.g.
         * gyroscopic ones) leave dE/dt = 0 as well. */
        const expr_t **t = xmalloc((s->n ? s->n : 1) * sizeof *t);
        for (size_t i = 0; i < s->n; i++)
            t[i] = expr_mul(k->g, s->Q[i], expr_var(k->g, s->qd[i]));
        const expr_t *pw = expr_sum(k->g, t, s->n);
        free(t);
        rep->forces_workless = chk_zero(k, &pw, 1, &how, &np) == CHECK_YES;
    }

    rep->L_time_dependent = false;
    if (expr_depends(k->g, s->L, s->t)) {
        const expr_t *dl = expr_diff(k->g, s->L, s->t);
        rep->L_time_dependent = chk_zero(k, &dl, 1, &how, &np) != CHECK_YES;
    }
    rep->time_culprit = rep->inhomog_culprit = SIZE_MAX;
    for (size_t a = 0; a < s->r; a++) {
        if (rep->c[a].time_dependent && rep->time_culprit == SIZE_MAX)
            rep->time_culprit = a;
        if (rep->c[a].homogeneous != CHECK_YES &&
            rep->inhomog_culprit == SIZE_MAX)
            rep->inhomog_culprit = a;
    }
    /* Thm 11.6: homogeneous ideal constraints do no work, so with only
     * potential forces and nothing depending on t the energy
     * E = Σ q_i' ∂L/∂q_i' − L is a first integral. */
    rep->energy_conserved =
        (rep->force_culprit == SIZE_MAX || rep->forces_workless) &&
        !rep->L_time_dependent && rep->time_culprit == SIZE_MAX &&
        rep->inhomog_culprit == SIZE_MAX;
}

/* ---- kinematic equations ------------------------------------------- */

/* With speeds: the completion maggi and gibbs_appell make (kinematics.h),
 * or why they cannot. */
static void chk_kinematics(const nh_system_t *sys, check_report_t *rep)
{
    if (sys->m == 0)
        return;
    rep->kin = true;
    diag_t err = {0};
    eom_kin_t *kin = eom_kin_new(sys, "maggi", EOM_KIN_BLOCK_MAX,
                                 SRC_SPAN_NONE, &err);
    if (!kin) {
        snprintf(rep->kin_error, sizeof rep->kin_error, "%s", err.msg);
        return;
    }
    const size_t *dep, *order, *sizes;
    const expr_t *const *seq;
    size_t k = eom_kin_dependent(kin, &dep);
    rep->kin_mode = (int)eom_kin_mode(kin);
    rep->kin_k = k;
    rep->kin_samples = eom_kin_samples(kin);
    rep->kin_largest = eom_kin_largest_block(kin);
    rep->kin_dep = xcalloc(k + 1, sizeof *rep->kin_dep);
    rep->kin_rows = xcalloc(k + 1, sizeof *rep->kin_rows);
    if (k) {
        memcpy(rep->kin_dep, dep, k * sizeof *dep);
        memcpy(rep->kin_rows, eom_kin_rows(kin), k * sizeof *dep);
    }
    if (rep->kin_mode == EOM_KIN_SYMBOLIC) {
        rep->kin_nblocks = eom_kin_blocks(kin, &order, &sizes, &seq);
        rep->kin_order = xcalloc(k, sizeof *rep->kin_order);
        rep->kin_sizes = xcalloc(k, sizeof *rep->kin_sizes);
        rep->kin_row_of = xcalloc(k, sizeof *rep->kin_row_of);
        memcpy(rep->kin_order, order, k * sizeof *order);
        memcpy(rep->kin_sizes, sizes, rep->kin_nblocks * sizeof *sizes);
        for (size_t j = 0; j < k; j++)
            rep->kin_row_of[j] = eom_kin_row_of(kin, j);
    }
    eom_kin_free(kin);
}

/* ---- entry points --------------------------------------------------- */

static int check_analyse_derived(const nh_system_t *sys, const double *vars,
                                 check_report_t *out, diag_t *err);

int check_analyse(const nh_system_t *sys, const double *vars,
                  check_report_t *out, diag_t *err)
{
    /* the tests ask whether derived expressions are identically 0: what
     * cancels leaves no guard (expr_graph_keep_domains) */
    bool keep = !sys || !sys->g || expr_graph_keep_domains(sys->g, false);
    int rc = check_analyse_derived(sys, vars, out, err);
    if (sys && sys->g)
        expr_graph_keep_domains(sys->g, keep);
    return rc;
}

static int check_analyse_derived(const nh_system_t *sys, const double *vars,
                                 check_report_t *out, diag_t *err)
{
    memset(out, 0, sizeof *out);
    if (!sys || !vars || !sys->g || !sys->L || !sys->Q ||
        (sys->r && !sys->C))
        return diag_error(err, SRC_SPAN_NONE,
                          "check: the system is incomplete (no Lagrangian, "
                          "forces or constraints)");
    for (size_t a = 0; a < sys->r; a++)
        if (!sys->C[a])
            return diag_error(err, SRC_SPAN_NONE,
                              "check: constraint %zu has no expression",
                              a + 1);
    for (size_t i = 0; i < sys->n; i++)
        if (!sys->Q[i])
            return diag_error(err, SRC_SPAN_NONE,
                              "check: coordinate %zu has no force entry",
                              i + 1);

    chk_t k = {0};
    k.sys = sys;
    k.g = sys->g;
    k.nv = expr_graph_nvars(sys->g);
    k.N = sys->n + 1;
    k.vmask = xcalloc(k.nv ? k.nv : 1, sizeof *k.vmask);
    for (size_t i = 0; i < sys->n; i++)
        k.vmask[sys->qd[i]] = true;
    k.base = vars;
    k.seed = 0x6e68636865636bULL; /* "nhcheck": a fixed seed */
    k.move = xcalloc(k.nv ? k.nv : 1, sizeof *k.move);
    for (size_t i = 0; i < sys->n; i++)
        k.move[sys->q[i]] = k.move[sys->qd[i]] = true;
    for (size_t i = 0; i < sys->np; i++)
        k.move[sys->p[i]] = true;
    k.move[sys->t] = true;
    k.ev.g = sys->g;
    k.pts = xmalloc(CHK_POINTS * (k.nv ? k.nv : 1) * sizeof *k.pts);
    k.scratch = xmalloc((k.nv ? k.nv : 1) * sizeof *k.scratch);

    out->n = sys->n;
    out->r = sys->r;
    out->c = xcalloc(sys->r ? sys->r : 1, sizeof *out->c);

    const expr_t **grad = xmalloc(sys->r * sys->n * sizeof *grad);
    const expr_t **bpart = xcalloc(sys->r ? sys->r : 1, sizeof *bpart);
    chk_form_t *forms = xcalloc(sys->r ? sys->r : 1, sizeof *forms);
    size_t R = 0;
    for (size_t a = 0; a < sys->r; a++) {
        check_constraint_t *c = &out->c[a];
        chk_kind(&k, a, c, grad + a * sys->n, &bpart[a]);
        if (c->kind == CHECK_NONLINEAR)
            continue;
        bool tested = c->kind != CHECK_HOLONOMIC;
        form_build(&k, &forms[R], a, tested ? grad + a * sys->n : NULL,
                   bpart[a]);
        if (tested) {
            out->npfaff++;
            form_alone(&k, &forms[R], c);
        }
        R++;
    }
    out->nforms = R;
    out->system_integrable = CHECK_NA;
    out->system_culprit = SIZE_MAX;
    if (out->npfaff)
        chk_system(&k, forms, R, out);
    for (size_t q = 0; q < R; q++)
        form_free(&forms[q]);
    free(forms);
    free(bpart);
    free(grad);

    chk_rank(&k, out);
    chk_energy(&k, out);
    chk_kinematics(sys, out);

    free(k.scratch);
    free(k.pts);
    free(k.vmask);
    free(k.move);
    expr_mag_free(&k.ev);
    return 0;
}

void check_report_free(check_report_t *rep)
{
    if (!rep)
        return;
    free(rep->c);
    free(rep->dependency);
    free(rep->kin_dep);
    free(rep->kin_rows);
    free(rep->kin_order);
    free(rep->kin_sizes);
    free(rep->kin_row_of);
    rep->c = NULL;
    rep->dependency = NULL;
    rep->kin_dep = rep->kin_rows = rep->kin_order = rep->kin_sizes = NULL;
    rep->kin_row_of = NULL;
}

/* ---- the report as text --------------------------------------------- */

static const char *cname(const nh_system_t *sys, size_t a)
{
    return sys->cname && sys->cname[a] ? sys->cname[a] : "?";
}

static void add_how(strbuf_t *b, check_how_t how, size_t points)
{
    if (how == CHECK_BY_SYMBOLIC)
        strbuf_add(b, "symbolically");
    else
        strbuf_addf(b, "numerically at %zu points", points);
}

static void add_number(strbuf_t *b, double v)
{
    char buf[40];
    strbuf_add(b, expr_format_number(v, buf, sizeof buf));
}

static void add_expr(strbuf_t *b, const nh_system_t *sys, const expr_t *e)
{
    char *s = expr_to_text(sys->g, e);
    strbuf_add(b, s);
    free(s);
}

/* Whether a form involves t: then f is a function of (q, t). */
static bool form_has_t(const check_constraint_t *c)
{
    return c->time_dependent || c->kind == CHECK_AFFINE;
}

static void format_constraint(strbuf_t *b, const nh_system_t *sys,
                              const check_report_t *rep, size_t a)
{
    const check_constraint_t *c = &rep->c[a];
    strbuf_addf(b, "%s: ", cname(sys, a));
    switch (c->kind) {
    case CHECK_HOLONOMIC:
        strbuf_add(b, "holonomic (no velocities");
        if (sys->C[a]->op == EXPR_CONST)
            strbuf_add(b, expr_is_const(sys->C[a], 0)
                              ? "; C is 0: it constrains nothing"
                              : "; C is a nonzero constant: it can never "
                                "hold");
        strbuf_add(b, ")");
        break;
    case CHECK_LINEAR:
        strbuf_add(b, "linear");
        break;
    case CHECK_AFFINE: {
        strbuf_add(b, "affine (b = ");
        /* at_rest() once more: the node is shared, nothing new is built */
        const expr_t **repl =
            xcalloc(expr_graph_nvars(sys->g), sizeof *repl);
        for (size_t i = 0; i < sys->n; i++)
            repl[sys->qd[i]] = expr_num(sys->g, 0);
        add_expr(b, sys, expr_subst(sys->g, sys->C[a], repl));
        free(repl);
        strbuf_add(b, ")");
        break;
    }
    case CHECK_NONLINEAR:
        strbuf_add(b, "nonlinear in the velocities");
        if (c->poly_degree >= 0)
            strbuf_addf(b, " (polynomial of degree %d)", c->poly_degree);
        break;
    }
    if (c->kind != CHECK_HOLONOMIC && c->kind_how == CHECK_BY_NUMERIC)
        strbuf_addf(b, " (numerically at %zu points)", c->points);

    if (c->kind != CHECK_HOLONOMIC) {
        if (c->homogeneous == CHECK_YES) {
            strbuf_add(b, ", homogeneous (degree ");
            add_number(b, c->degree);
            if (c->kind == CHECK_NONLINEAR &&
                c->homogeneous_how == CHECK_BY_NUMERIC)
                strbuf_addf(b, "; numerically at %zu points", c->points);
            strbuf_add(b, ")");
        } else if (c->homogeneous == CHECK_NO) {
            strbuf_add(b, ", not homogeneous");
        } else {
            strbuf_add(b, ", homogeneity undecided");
        }
    }
    strbuf_add(b, c->time_dependent ? ", time-dependent"
                  : c->t_cancels    ? ", time-independent (t cancels)"
                                    : ", time-independent");

    if (c->kind == CHECK_NONLINEAR) {
        strbuf_add(b, ", no integrability test (not linear in the "
                      "velocities)");
    } else if (c->kind != CHECK_HOLONOMIC) {
        const char *f = form_has_t(c) ? "f(q, t)" : "f(q)";
        if (c->exact == CHECK_YES) {
            strbuf_add(b, ", integrable and exact (dω = 0, ");
            add_how(b, c->exact_how, c->points);
            strbuf_addf(b, "): holonomic, it is df = 0 for some %s", f);
        } else if (c->integrable == CHECK_YES) {
            strbuf_add(b, ", integrable (Frobenius: dω∧ω = 0, ");
            add_how(b, c->integrable_how, c->points);
            strbuf_add(b, ") but not exact (dω ≠ 0): holonomic in disguise "
                          "(exact after an integrating factor)");
        } else if (c->integrable == CHECK_NO) {
            strbuf_add(b, ", not integrable (Frobenius: dω∧ω ≠ 0, ");
            add_how(b, c->integrable_how, c->points);
            strbuf_add(b, ")");
        } else {
            strbuf_addf(b, ", integrability undecided (Frobenius test "
                           "inconclusive at %zu points)",
                        c->points);
        }
    }
    strbuf_add(b, "\n");
}

static void format_system(strbuf_t *b, const nh_system_t *sys,
                          const check_report_t *rep)
{
    /* One Pfaffian constraint alone: its own line said it all. */
    if (rep->system_integrable == CHECK_NA || rep->nforms < 2)
        return;
    strbuf_add(b, "Pfaffian constraints together (");
    bool first = true;
    for (size_t a = 0; a < rep->r; a++)
        if (rep->c[a].kind != CHECK_NONLINEAR) {
            strbuf_addf(b, "%s%s", first ? "" : ", ", cname(sys, a));
            first = false;
        }
    strbuf_add(b, "): ");
    size_t pts = 0;
    for (size_t a = 0; a < rep->r; a++)
        if (rep->c[a].points > pts)
            pts = rep->c[a].points;
    switch (rep->system_integrable) {
    case CHECK_YES:
        strbuf_add(b, "integrable (Frobenius: dω^a∧ω^1∧…∧ω^R = 0 for "
                      "every a, ");
        add_how(b, rep->system_how, pts);
        strbuf_add(b, "): holonomic in disguise as a system\n");
        break;
    case CHECK_NO:
        strbuf_addf(b, "not integrable (Frobenius: dω^a∧ω^1∧…∧ω^R ≠ 0 "
                       "for %s, ",
                    cname(sys, rep->system_culprit));
        add_how(b, rep->system_how, pts);
        strbuf_add(b, "): genuinely nonholonomic\n");
        break;
    default:
        strbuf_add(b, "integrability undecided (Frobenius test "
                      "inconclusive)\n");
        break;
    }
}

static void format_rank(strbuf_t *b, const nh_system_t *sys,
                        const check_report_t *rep)
{
    if (rep->r == 0) {
        strbuf_add(b, "no constraints: rank B = 0\n");
    } else if (!rep->b_finite) {
        strbuf_addf(b, "B = ∂C/∂q' is not finite at the current state (the "
                       "row of %s): the state is outside its domain\n",
                    cname(sys, rep->b_culprit));
    } else if (!rep->singular) {
        strbuf_addf(b, "rank B = %zu at the current state (regular)\n",
                    rep->rank);
    } else {
        size_t involved = 0, last = 0;
        for (size_t a = 0; a < rep->r; a++)
            if (fabs(rep->dependency[a]) > 1e-6) {
                involved++;
                last = a;
            }
        if (rep->dependent_everywhere)
            strbuf_addf(b, "rank B = %zu < %zu at the current state and at "
                           "%zu sample states: the constraints are not "
                           "independent, ",
                        rep->rank, rep->r, rep->dependent_points);
        else
            strbuf_addf(b, "rank B = %zu < %zu at the current state: "
                           "singular state, ",
                        rep->rank, rep->r);
        if (involved == 1) {
            strbuf_addf(b, "the row of %s is zero", cname(sys, last));
        } else {
            strbuf_add(b, "the rows of ");
            bool first = true;
            for (size_t a = 0; a < rep->r; a++)
                if (fabs(rep->dependency[a]) > 1e-6) {
                    strbuf_addf(b, "%s%s", first ? "" : ", ", cname(sys, a));
                    first = false;
                }
            strbuf_add(b, " are dependent");
        }
        strbuf_add(b, rep->dependent_everywhere
                          ? "; remove one of them, or write them so that "
                            "they are independent\n"
                          : "; choose another state to integrate from\n");
    }
    if (rep->dof < 0)
        strbuf_addf(b, "degrees of freedom: n − r = %ld: more constraints "
                       "(%zu) than coordinates (%zu)\n",
                    rep->dof, rep->r, rep->n);
    else if (rep->b_finite && rep->singular)
        strbuf_addf(b, "degrees of freedom: %ld (n = %zu, r = %zu); n − "
                       "rank B = %zu at this state\n",
                    rep->dof, rep->n, rep->r, rep->n - rep->rank);
    else
        strbuf_addf(b, "degrees of freedom: %ld (n = %zu, r = %zu)\n",
                    rep->dof, rep->n, rep->r);
}

static void format_energy(strbuf_t *b, const nh_system_t *sys,
                          const check_report_t *rep)
{
    if (rep->energy_conserved) {
        strbuf_add(b, "energy: conserved (Benenti Thm 11.6: ");
        strbuf_add(b, rep->forces_workless
                          ? "the non-potential forces do no work "
                            "(Σ Q_i q_i' = 0)"
                          : "no forces but potential ones");
        strbuf_add(b, ", L and the constraints independent of t, the "
                      "constraints homogeneous in the velocities): "
                      "E = Σ q_i' ∂L/∂q_i' − L");
        if (sys->T && sys->V)
            strbuf_add(b, " = T + V when T is quadratic in the velocities");
        strbuf_add(b, "\n");
        return;
    }
    strbuf_add(b, "energy: not conserved in general (Benenti Thm 11.6 "
                  "does not apply): ");
    const char *sep = "";
    if (rep->force_culprit != SIZE_MAX && !rep->forces_workless) {
        size_t i = rep->force_culprit;
        strbuf_addf(b, "the force on %s is not potential (Q = ",
                    sys->qname[i]);
        add_expr(b, sys, sys->Q[i]);
        strbuf_add(b, ")");
        sep = "; ";
    }
    if (rep->L_time_dependent) {
        strbuf_addf(b, "%sL depends on t", sep);
        sep = "; ";
    }
    if (rep->time_culprit != SIZE_MAX) {
        strbuf_addf(b, "%sthe constraint %s depends on t", sep,
                    cname(sys, rep->time_culprit));
        sep = "; ";
    }
    if (rep->inhomog_culprit != SIZE_MAX) {
        const check_constraint_t *c = &rep->c[rep->inhomog_culprit];
        strbuf_addf(b, "%sthe constraint %s is %s", sep,
                    cname(sys, rep->inhomog_culprit),
                    c->homogeneous == CHECK_NO
                        ? "not homogeneous in the velocities"
                        : "not known to be homogeneous in the velocities");
        if (c->kind == CHECK_AFFINE)
            strbuf_add(b, " (affine)");
    }
    strbuf_add(b, "\n");
}

/* "x', y'" for the coordinates IDX[0..n). */
static void add_velocities(strbuf_t *b, const nh_system_t *sys,
                           const size_t *idx, size_t n)
{
    for (size_t j = 0; j < n; j++)
        strbuf_addf(b, "%s%s'", j ? ", " : "", sys->qname[idx[j]]);
}

static void format_kinematics(strbuf_t *b, const nh_system_t *sys,
                              const check_report_t *rep)
{
    if (!rep->kin)
        return;
    if (rep->kin_error[0]) {
        strbuf_addf(b,
                    "kinematics: maggi and gibbs_appell cannot complete "
                    "the kinematic equations: %s\n",
                    rep->kin_error);
        return;
    }
    size_t n = sys->n, k = rep->kin_k;
    if (k == 0) {
        strbuf_add(b, "kinematics: every coordinate has a kinematic "
                      "equation (maggi and gibbs_appell check the "
                      "constraints against them)\n");
        return;
    }
    bool *dep = xcalloc(n + 1, sizeof *dep), *used = xcalloc(sys->r + 1,
                                                              sizeof *used);
    for (size_t j = 0; j < k; j++) {
        dep[rep->kin_dep[j]] = true;
        used[rep->kin_rows[j]] = true;
    }
    if (k < n) {
        strbuf_add(b, "kinematics: ");
        for (size_t i = 0, c = 0; i < n; i++)
            if (!dep[i])
                strbuf_addf(b, "%s%s'", c++ ? ", " : "", sys->qname[i]);
        strbuf_add(b, n - k > 1 ? " from their kinematic equations\n"
                                : " from its kinematic equation\n");
    }
    strbuf_add(b, "kinematics: ");
    add_velocities(b, sys, rep->kin_dep, k);
    bool one = k == 1;
    strbuf_addf(b, " %s no kinematic equation: the constraint%s ",
                one ? "has" : "have", one ? "" : "s");
    for (size_t j = 0; j < k; j++)
        strbuf_addf(b, "%s%s", j ? ", " : "", cname(sys, rep->kin_rows[j]));
    strbuf_addf(b,
                " %s linear in %s and determine%s %s (regular at %zu "
                "sample states): maggi and gibbs_appell solve %s from "
                "%s\n",
                one ? "is" : "are", one ? "it" : "them", one ? "s" : "",
                one ? "it" : "them", rep->kin_samples, one ? "it" : "them",
                one ? "it" : "those");
    if (rep->kin_mode == EOM_KIN_SYMBOLIC) {
        strbuf_add(b, "kinematics: solved symbolically, in this order: ");
        for (size_t bl = 0, at = 0; bl < rep->kin_nblocks; bl++) {
            size_t s = rep->kin_sizes[bl];
            strbuf_add(b, bl ? "; " : "");
            for (size_t j = 0; j < s; j++)
                strbuf_addf(b, "%s%s'", j ? ", " : "",
                            sys->qname[rep->kin_dep[rep->kin_order[at + j]]]);
            strbuf_add(b, s > 1 ? " together from " : " from ");
            /* the block's constraints, in declaration order */
            for (size_t a = 0, c = 0; a < sys->r; a++)
                for (size_t j = 0; j < s; j++)
                    if (rep->kin_row_of[rep->kin_order[at + j]] == a)
                        strbuf_addf(b, "%s%s", c++ ? ", " : "", cname(sys, a));
            if (s > 1)
                strbuf_add(b, " (Cramer's rule)");
            at += s;
        }
        strbuf_add(b, "; each divides only by its block's determinant, "
                      "which vanishes only where the constraints do not "
                      "determine these velocities\n");
    } else {
        strbuf_addf(b,
                    "kinematics: solved numerically at each evaluation: %zu "
                    "of them depend on each other, more than %d to solve "
                    "symbolically\n",
                    rep->kin_largest, EOM_KIN_BLOCK_MAX);
    }
    for (size_t a = 0; a < sys->r; a++)
        if (!used[a])
            strbuf_addf(b,
                        "kinematics: constraint %s is not solved for "
                        "them; maggi and gibbs_appell check it against "
                        "q' = psi\n",
                        cname(sys, a));
    free(dep);
    free(used);
}

char *check_format(const nh_system_t *sys, const check_report_t *rep)
{
    strbuf_t b;
    strbuf_init(&b);
    for (size_t a = 0; a < rep->r; a++)
        format_constraint(&b, sys, rep, a);
    format_system(&b, sys, rep);
    format_rank(&b, sys, rep);
    format_energy(&b, sys, rep);
    format_kinematics(&b, sys, rep);
    return strbuf_take(&b);
}
