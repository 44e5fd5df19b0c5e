/*
 * follow.c — families of steady motions by pseudo-arclength continuation
 * (follow.h, LANGUAGE.md §7.3).
 *
 * Keller's method (H. B. Keller, "Numerical solution of bifurcation and
 * nonlinear eigenvalue problems", in Applications of Bifurcation Theory,
 * 1977; E. L. Allgower & K. Georg, Introduction to Numerical Continuation
 * Methods, 1990, ch. 2 and 8): in the scaled variables w (u = σ w), from
 * a point w₀ with unit tangent t₀ (S J σ t₀ = 0, S the rows' scales),
 * the predictor w₀ + h t₀ is corrected by Newton's method on
 *
 *     S F(σ w) = 0,     t₀ · (w − w₀ − h t₀) = 0,
 *
 * the bordered system, whose Jacobian [S J σ; t₀ᵀ] is regular at regular
 * points and folds alike.  The steady equations may hold dependent rows
 * (a conserved energy), so the bordered system is overdetermined but
 * consistent: its Newton step is the minimum-norm least-squares one
 * (svd.h).  A simple branch point, where the Jacobian loses rank and
 * another family crosses, is where det [S_sel J σ; tᵀ] changes sign, with
 * S_sel a fixed choice of k rows that are independent at the first point
 * (Allgower & Georg §8.1); a sign change is confirmed by the smallest
 * singular value of the whole bordered matrix at the located point,
 * since a choice of rows may itself turn singular.
 *
 * Must not: print; change the system.
 */
#include "interp/analysis/follow.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/analysis/svd.h"
#include "interp/eom/linalg.h"

/* A point of the family as the continuation keeps it. */
typedef struct follow_pt {
    double *vars; /* nv: the full state */
    double *w;    /* K: scaled unknowns, then λ */
    double *t;    /* K: unit tangent */
    double *s;    /* m: the rows' scales there */
    double det;   /* of [S_sel J σ; tᵀ] */
    unsigned marks;
    follow_end_t end;
} follow_pt_t;

#define FOLLOW_QUEUE 4

struct follow {
    steady_t *st;
    follow_spec_t spec;
    const nh_system_t *sys;
    expr_graph_t *g;
    size_t nv, k, K, m;
    const uint32_t *unk;
    double *sigma;          /* K */
    const expr_t **dgiven;  /* nv: d(given value)/dλ, NULL where none */
    double lo, hi, lambda_sign;
    double h;               /* the current step */
    bool patient;           /* the corrector near a singular point (a
                               branch point being located): Newton's
                               method converges only linearly there */
    size_t *sel;            /* k rows for the branch test */
    follow_pt_t cur, first;
    follow_pt_t queue[FOLLOW_QUEUE];
    size_t nqueue, qhead;
    size_t count;           /* points returned */
    double arclen;
    bool ended;
    /* scratch */
    double *dirs, *F, *J, *M, *rhs, *dw;
    svd_t svd;
};

static void follow_pt_init(follow_t *f, follow_pt_t *p)
{
    p->vars = xcalloc(f->nv + 1, sizeof *p->vars);
    p->w = xcalloc(f->K + 1, sizeof *p->w);
    p->t = xcalloc(f->K + 1, sizeof *p->t);
    p->s = xcalloc(f->m + 1, sizeof *p->s);
}

static void follow_pt_free(follow_pt_t *p)
{
    free(p->vars);
    free(p->w);
    free(p->t);
    free(p->s);
}

static void follow_pt_copy(follow_t *f, follow_pt_t *dst,
                           const follow_pt_t *src)
{
    memcpy(dst->vars, src->vars, f->nv * sizeof *dst->vars);
    memcpy(dst->w, src->w, f->K * sizeof *dst->w);
    memcpy(dst->t, src->t, f->K * sizeof *dst->t);
    memcpy(dst->s, src->s, f->m * sizeof *dst->s);
    dst->det = src->det;
    dst->marks = src->marks;
    dst->end = src->end;
}

follow_t *follow_new(const nh_system_t *sys, steady_t *st,
                     const follow_spec_t *spec)
{
    follow_t *f = xcalloc(1, sizeof *f);
    f->st = st;
    f->spec = *spec;
    const size_t *rows;
    f->m = steady_rows(st, &rows);
    f->k = steady_unknowns(st, &f->unk);
    f->K = f->k + 1;
    f->sys = sys;
    f->g = sys->g;
    f->nv = expr_graph_nvars(sys->g);
    size_t K = f->K, m = f->m, nv = f->nv;
    f->sigma = xcalloc(K + 1, sizeof *f->sigma);
    f->dgiven = xcalloc(nv + 1, sizeof *f->dgiven);
    f->sel = xcalloc(K + 1, sizeof *f->sel);
    f->dirs = xcalloc(nv * K + 1, sizeof *f->dirs);
    f->F = xcalloc(m + 1, sizeof *f->F);
    f->J = xcalloc(m * K + 1, sizeof *f->J);
    f->M = xcalloc((m + 1) * K + 1, sizeof *f->M);
    f->rhs = xcalloc(m + 2, sizeof *f->rhs);
    f->dw = xcalloc(K + 1, sizeof *f->dw);
    follow_pt_init(f, &f->cur);
    follow_pt_init(f, &f->first);
    for (size_t q = 0; q < FOLLOW_QUEUE; q++)
        follow_pt_init(f, &f->queue[q]);
    if (f->spec.param && f->spec.given)
        for (uint32_t v = 0; v < nv; v++)
            if (f->spec.given[v])
                f->dgiven[v] = expr_diff(f->g, f->spec.given[v],
                                         f->spec.var);
    return f;
}

void follow_free(follow_t *f)
{
    if (!f)
        return;
    follow_pt_free(&f->cur);
    follow_pt_free(&f->first);
    for (size_t q = 0; q < FOLLOW_QUEUE; q++)
        follow_pt_free(&f->queue[q]);
    free(f->sigma);
    free(f->dgiven);
    free(f->sel);
    free(f->dirs);
    free(f->F);
    free(f->J);
    free(f->M);
    free(f->rhs);
    free(f->dw);
    svd_free(&f->svd);
    free(f);
}

/* ---- the map w -> state --------------------------------------------------- */

/* Writes the unknowns and λ of W into VARS (and the given values that
 * move with λ), then solves the dependent variables. */
static int follow_put(follow_t *f, double *vars, const double *w)
{
    for (size_t j = 0; j < f->k; j++)
        vars[f->unk[j]] = w[j] * f->sigma[j];
    vars[f->spec.var] = w[f->k] * f->sigma[f->k];
    if (f->spec.param && f->spec.given)
        for (uint32_t v = 0; v < f->nv; v++)
            if (f->spec.given[v])
                vars[v] = expr_eval(f->g, f->spec.given[v], vars);
    for (size_t j = 0; j < f->K; j++)
        if (!isfinite(w[j]))
            return -1;
    return steady_project(f->st, vars);
}

/* F and J (m × K, in w) at VARS (on the constraints). */
static int follow_eval(follow_t *f, double *vars, diag_t *err)
{
    size_t K = f->K, k = f->k;
    memset(f->dirs, 0, f->nv * K * sizeof *f->dirs);
    for (size_t j = 0; j < k; j++)
        f->dirs[(size_t)f->unk[j] * K + j] = f->sigma[j];
    f->dirs[(size_t)f->spec.var * K + k] = f->sigma[k];
    for (uint32_t v = 0; v < f->nv; v++)
        if (f->dgiven[v])
            f->dirs[(size_t)v * K + k] =
                f->sigma[k] * expr_eval(f->g, f->dgiven[v], vars);
    return steady_eval(f->st, vars, f->dirs, K, f->F, f->J, err);
}

/* The unit null vector of S J (the tangent) into T, oriented along REF
 * (or, without REF, with the sign of its λ component towards B); the
 * rank of S J into *RANK. */
static int follow_tangent(follow_t *f, const double *s, const double *ref,
                          double *t, size_t *rank)
{
    size_t m = f->m, K = f->K;
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < K; j++)
            f->M[i * K + j] = f->J[i * K + j] / s[i];
    if (svd_factor(&f->svd, f->M, m, K) != 0)
        return -1;
    if (rank)
        *rank = svd_rank(&f->svd, STEADY_RANK_RTOL);
    svd_null(&f->svd, t);
    double dot = 0.0;
    if (ref)
        for (size_t j = 0; j < K; j++)
            dot += t[j] * ref[j];
    else
        dot = t[f->k] * f->lambda_sign;
    if (dot < 0)
        for (size_t j = 0; j < K; j++)
            t[j] = -t[j];
    return 0;
}

/* The determinant of the square matrix A (n×n, destroyed), by Gaussian
 * elimination with partial pivoting. */
static double follow_det(double *a, size_t n)
{
    double det = 1.0;
    for (size_t c = 0; c < n; c++) {
        size_t p = c;
        for (size_t r = c + 1; r < n; r++)
            if (fabs(a[r * n + c]) > fabs(a[p * n + c]))
                p = r;
        if (a[p * n + c] == 0.0)
            return 0.0;
        if (p != c) {
            for (size_t j = 0; j < n; j++) {
                double x = a[c * n + j];
                a[c * n + j] = a[p * n + j];
                a[p * n + j] = x;
            }
            det = -det;
        }
        det *= a[c * n + c];
        for (size_t r = c + 1; r < n; r++) {
            double l = a[r * n + c] / a[c * n + c];
            for (size_t j = c; j < n; j++)
                a[r * n + j] -= l * a[c * n + j];
        }
    }
    return det;
}

/* det [S_sel J σ; tᵀ] at the last follow_eval. */
static double follow_branch_det(follow_t *f, const double *s,
                                const double *t)
{
    size_t K = f->K, k = f->k;
    double *a = xcalloc(K * K + 1, sizeof *a);
    for (size_t r = 0; r < k; r++)
        for (size_t j = 0; j < K; j++)
            a[r * K + j] = f->J[f->sel[r] * K + j] / s[f->sel[r]];
    for (size_t j = 0; j < K; j++)
        a[k * K + j] = t[j];
    double d = follow_det(a, K);
    free(a);
    return d;
}

/* k rows of S J independent at the last follow_eval, for the branch
 * test; their count. */
static size_t follow_select_rows(follow_t *f, const double *s)
{
    size_t m = f->m, K = f->K;
    double *a = xcalloc(m * K + 1, sizeof *a);
    size_t *order = xcalloc(m + 1, sizeof *order);
    bool *kept = xcalloc(m + 1, sizeof *kept);
    double *basis = xcalloc(K * K + 1, sizeof *basis);
    size_t *piv = xcalloc(K + 1, sizeof *piv);
    for (size_t i = 0; i < m; i++) {
        order[i] = i;
        for (size_t j = 0; j < K; j++)
            a[i * K + j] = f->J[i * K + j] / s[i];
    }
    linalg_independent(a, K, 1, K, order, m, 1e-9, kept, basis, piv);
    size_t n = 0;
    for (size_t i = 0; i < m && n < f->k; i++)
        if (kept[i])
            f->sel[n++] = i;
    free(a);
    free(order);
    free(kept);
    free(basis);
    free(piv);
    return n;
}

/* Newton's method on S F(σ w) = 0, B · w = C from W (the state in VARS,
 * from BASE's other values), with the rows' scales S.  On success P gets
 * the point (vars, w; tangent and det computed when REF is given, along
 * it) and the iterations are returned; -1 when it does not converge or
 * the equations fail. */
static int follow_correct(follow_t *f, const double *base, const double *w0,
                          const double *b, double c, const double *s,
                          const double *ref, follow_pt_t *p)
{
    size_t m = f->m, K = f->K;
    diag_t tmp = {0};
    memcpy(p->vars, base, f->nv * sizeof *p->vars);
    memcpy(p->w, w0, K * sizeof *p->w);
    if (follow_put(f, p->vars, p->w) != 0)
        return -1;
    double last = INFINITY;
    int it;
    for (it = 0;; it++) {
        if (follow_eval(f, p->vars, &tmp) != 0)
            return -1;
        double mis = 0.0, border = -c;
        for (size_t j = 0; j < K; j++)
            border += b[j] * p->w[j];
        for (size_t i = 0; i < m; i++) {
            f->rhs[i] = -f->F[i] / s[i];
            mis = fmax(mis, fabs(f->rhs[i]));
            for (size_t j = 0; j < K; j++)
                f->M[i * K + j] = f->J[i * K + j] / s[i];
        }
        f->rhs[m] = -border;
        for (size_t j = 0; j < K; j++)
            f->M[m * K + j] = b[j];
        mis = fmax(mis, fabs(border));
        if (!isfinite(mis))
            return -1;
        if (mis <= 1e-2 * STEADY_RTOL)
            break;
        /* quadratic convergence halves the residual at least; once it
         * does not, the iteration is at rounding or lost */
        /* near a branch point the bordered system is nearly singular:
         * there the corrector takes what rounding leaves, to 1e-8 */
        double tol = f->patient ? 1e-8 : STEADY_RTOL;
        if (it >= 2 && !(mis <= (f->patient ? 0.95 : 0.5) * last)) {
            if (mis <= tol)
                break;
            return -1;
        }
        if (it >= (f->patient ? 60 : 12))
            return -1;
        last = mis;
        if (svd_factor(&f->svd, f->M, m + 1, K) != 0)
            return -1;
        svd_solve(&f->svd, f->rhs, 1e-13, f->dw);
        for (size_t j = 0; j < K; j++)
            p->w[j] += f->dw[j];
        if (follow_put(f, p->vars, p->w) != 0)
            return -1;
    }
    /* the point's own scales, tangent and determinant */
    if (steady_row_scales(f->st, p->vars, p->s, &tmp) != 0 ||
        follow_eval(f, p->vars, &tmp) != 0)
        return -1;
    double mis = 0.0;
    for (size_t i = 0; i < m; i++)
        mis = fmax(mis, fabs(f->F[i]) / p->s[i]);
    if (!(mis <= (f->patient ? 1e-8 : STEADY_RTOL)))
        return -1;
    if (ref) {
        if (follow_tangent(f, p->s, ref, p->t, NULL) != 0)
            return -1;
        p->det = follow_branch_det(f, p->s, p->t);
    }
    p->marks = 0;
    p->end = FOLLOW_GOING;
    return it;
}

/* The point at arclength H from P along its tangent, into Q. */
static int follow_step_to(follow_t *f, const follow_pt_t *p, double h,
                          follow_pt_t *q)
{
    size_t K = f->K;
    double *wp = xcalloc(K + 1, sizeof *wp);
    double c = 0.0;
    for (size_t j = 0; j < K; j++) {
        wp[j] = p->w[j] + h * p->t[j];
        c += p->t[j] * wp[j];
    }
    int rc = follow_correct(f, p->vars, wp, p->t, c, p->s, p->t, q);
    free(wp);
    return rc;
}

int follow_first(follow_t *f, const double *vars, follow_point_t *out,
                 diag_t *err)
{
    size_t K = f->K, k = f->k;
    double a = f->spec.from, b = f->spec.to;
    f->lo = fmin(a, b);
    f->hi = fmax(a, b);
    f->lambda_sign = b >= a ? 1.0 : -1.0;
    f->h = f->spec.step;
    for (size_t j = 0; j < k; j++)
        f->sigma[j] = fmax(1.0, fabs(vars[f->unk[j]]));
    f->sigma[k] = 1.0;
    follow_pt_t *c = &f->cur;
    memcpy(c->vars, vars, f->nv * sizeof *c->vars);
    for (size_t j = 0; j < k; j++)
        c->w[j] = vars[f->unk[j]] / f->sigma[j];
    c->w[k] = vars[f->spec.var];
    if (steady_row_scales(f->st, c->vars, c->s, err) != 0 ||
        follow_eval(f, c->vars, err) != 0)
        return -1;
    size_t rank = 0;
    if (follow_tangent(f, c->s, NULL, c->t, &rank) != 0)
        return diag_error(err, SRC_SPAN_NONE,
                          "the steady equations' Jacobian is not finite here");
    if (rank < k)
        return diag_error(err, SRC_SPAN_NONE,
                          "the steady motions form a family of %zu "
                          "parameters here, not one: give %zu more values "
                          "with `=`",
                          K - rank, K - rank - 1);
    if (follow_select_rows(f, c->s) < k)
        return diag_error(err, SRC_SPAN_NONE,
                          "the steady equations have rank below the "
                          "number of unknowns here");
    c->det = follow_branch_det(f, c->s, c->t);
    c->marks = 0;
    c->end = a == b ? FOLLOW_LEFT : FOLLOW_GOING;
    follow_pt_copy(f, &f->first, c);
    f->count = 1;
    f->arclen = 0.0;
    f->ended = c->end != FOLLOW_GOING;
    out->lambda = c->w[k];
    out->marks = 0;
    out->end = c->end;
    return 0;
}

/* The point where the component J of w (the one that changes most along
 * P's tangent) is that of P's predictor at arclength H, into Q: the
 * family in its natural parameter there.  Near a branch point the
 * arclength condition's hyperplane holds the crossing family too (along
 * which that component is often constant: the straight running of a
 * bicycle at every speed, whose lean is 0), and the corrector would slide
 * onto it; fixing the component keeps to the family followed. */
static int follow_step_natural(follow_t *f, const follow_pt_t *p, double h,
                               follow_pt_t *q)
{
    size_t K = f->K, j = 0;
    for (size_t i = 1; i < K; i++)
        if (fabs(p->t[i]) > fabs(p->t[j]))
            j = i;
    double *wp = xcalloc(K + 1, sizeof *wp), *e = xcalloc(K + 1, sizeof *e);
    for (size_t i = 0; i < K; i++)
        wp[i] = p->w[i] + h * p->t[i];
    e[j] = 1.0;
    int rc = follow_correct(f, p->vars, wp, e, wp[j], p->s, p->t, q);
    free(wp);
    free(e);
    return rc;
}

/* ---- locating marks ---------------------------------------------------- */

/* The value whose sign change a mark is: t's λ component (a fold), or
 * the determinant (a branch point). */
static double follow_g(const follow_t *f, const follow_pt_t *p, int which)
{
    return which == FOLLOW_FOLD ? p->t[f->k] : p->det;
}

/* Locates the zero of follow_g between P (at 0) and Q (at arclength H
 * from P along P's tangent) by the Illinois method; the point into OUT.
 * Returns 0, or -1 when a corrector fails (OUT then holds Q). */
static int follow_locate(follow_t *f, const follow_pt_t *p,
                         const follow_pt_t *q, double h, int which,
                         follow_pt_t *out)
{
    double a = 0.0, b = h;
    double ga = follow_g(f, p, which), gb = follow_g(f, q, which);
    int side = 0;
    bool branch = which == FOLLOW_BRANCH;
    follow_pt_t trial;
    follow_pt_init(f, &trial);
    follow_pt_copy(f, out, q);
    f->patient = branch;
    int rc = 0;
    for (int it = 0; it < 80; it++) {
        /* a fold: the Illinois method on t's λ component, smooth there;
         * a branch point: bisection, since near it the corrector may land
         * on either family and the determinant is not smooth */
        double x = branch ? 0.5 * (a + b) : (a * gb - b * ga) / (gb - ga);
        if (!(x > a && x < b))
            x = 0.5 * (a + b);
        if ((branch ? follow_step_natural(f, p, x, &trial)
                    : follow_step_to(f, p, x, &trial)) < 0) {
            /* at a branch point itself the bordered system is singular:
             * the bracket's end found last is the point */
            rc = branch && it > 0 ? 0 : -1;
            break;
        }
        follow_pt_copy(f, out, &trial);
        double gx = follow_g(f, &trial, which);
        double scale = which == FOLLOW_FOLD ? 1.0 : fmax(fabs(ga), fabs(gb));
        if (fabs(gx) <= 1e-13 * scale ||
            b - a <= (branch ? 1e-10 : 1e-13) * h)
            break;
        if ((gx > 0) == (gb > 0)) {
            b = x;
            gb = gx;
            if (side == 1)
                ga *= 0.5;
            side = 1;
        } else {
            a = x;
            ga = gx;
            if (side == -1)
                gb *= 0.5;
            side = -1;
        }
    }
    f->patient = false;
    follow_pt_free(&trial);
    return rc;
}

/* The smallest singular value of [S_R J σ; tᵀ] relative to its largest,
 * with the rows R: all of them (SEL false) or the k chosen for the
 * determinant (SEL true), at the last follow_eval (at P). */
static double follow_smin(follow_t *f, const follow_pt_t *p, bool sel)
{
    size_t K = f->K, rows = sel ? f->k : f->m;
    for (size_t r = 0; r < rows; r++) {
        size_t i = sel ? f->sel[r] : r;
        for (size_t j = 0; j < K; j++)
            f->M[r * K + j] = f->J[i * K + j] / p->s[i];
    }
    for (size_t j = 0; j < K; j++)
        f->M[rows * K + j] = p->t[j];
    if (svd_factor(&f->svd, f->M, rows + 1, K) != 0)
        return INFINITY;
    double smin = INFINITY;
    for (size_t j = 0; j < K; j++)
        smin = fmin(smin, f->svd.s[j]);
    return smin / svd_max(&f->svd);
}

/* Whether the determinant's sign change located at P is a branch point:
 * the bordered matrix of all the rows is singular there as that of the
 * chosen rows is (to the precision the location reached, which near a
 * branch point is limited: the corrector may land on either family), not
 * only the chosen rows' (which a row that turns dependent on the others
 * makes singular alone). */
static bool follow_singular(follow_t *f, const follow_pt_t *p)
{
    diag_t tmp = {0};
    double *vars = xcalloc(f->nv + 1, sizeof *vars);
    memcpy(vars, p->vars, f->nv * sizeof *vars);
    bool ok = follow_eval(f, vars, &tmp) == 0;
    free(vars);
    if (!ok)
        return false;
    double all = follow_smin(f, p, false), chosen = follow_smin(f, p, true);
    return all <= 1e-6 || all <= 10.0 * chosen;
}

/* ---- the next point ------------------------------------------------------ */

static void follow_push(follow_t *f, const follow_pt_t *p)
{
    if (f->nqueue < FOLLOW_QUEUE)
        follow_pt_copy(f, &f->queue[(f->qhead + f->nqueue++) % FOLLOW_QUEUE],
                       p);
}

static void follow_pop(follow_t *f, double *vars, follow_point_t *out)
{
    follow_pt_t *p = &f->queue[f->qhead];
    memcpy(vars, p->vars, f->nv * sizeof *vars);
    out->lambda = p->w[f->k] * f->sigma[f->k];
    out->marks = p->marks;
    out->end = p->end;
    f->qhead = (f->qhead + 1) % FOLLOW_QUEUE;
    f->nqueue--;
    f->count++;
    if (out->end == FOLLOW_GOING && f->count >= FOLLOW_MAX_POINTS) {
        out->end = FOLLOW_LIMIT;
        f->ended = true;
        f->nqueue = 0;
    }
    if (out->end != FOLLOW_GOING) {
        f->ended = true;
        f->nqueue = 0;
    }
}

/* The distance from W to the segment [A, B] (K entries). */
static double follow_segment_distance(size_t K, const double *w,
                                      const double *a, const double *b)
{
    double ab = 0.0, aw = 0.0;
    for (size_t j = 0; j < K; j++) {
        ab += (b[j] - a[j]) * (b[j] - a[j]);
        aw += (w[j] - a[j]) * (b[j] - a[j]);
    }
    double x = ab > 0 ? fmin(1.0, fmax(0.0, aw / ab)) : 0.0, d = 0.0;
    for (size_t j = 0; j < K; j++) {
        double e = a[j] + x * (b[j] - a[j]) - w[j];
        d += e * e;
    }
    return sqrt(d);
}

int follow_next(follow_t *f, double *vars, follow_point_t *out, diag_t *err)
{
    if (f->nqueue > 0) {
        follow_pop(f, vars, out);
        return 1;
    }
    if (f->ended)
        return 0;
    size_t K = f->K, k = f->k;
    follow_pt_t *c = &f->cur;
    follow_pt_t next, mark1, mark2;
    follow_pt_init(f, &next);
    follow_pt_init(f, &mark1);
    follow_pt_init(f, &mark2);
    int rc = 1;
    double h = f->h;
    /* a step: shorter until the corrector converges, the tangent turns
     * little and the point is no farther than the step */
    for (;;) {
        if (nh_stop_due(f->spec.stop)) {
            rc = diag_error(err, SRC_SPAN_NONE, "%s",
                            nh_stop_reason(f->spec.stop));
            goto out;
        }
        if (h < FOLLOW_MIN_STEP * f->spec.step) {
            char num[40];
            rc = diag_error(err, SRC_SPAN_NONE,
                            "the family could not be followed past %s = %s: "
                            "the corrector did not converge even with steps "
                            "of %g",
                            expr_var_name(f->g, f->spec.var),
                            expr_format_number(c->w[k] * f->sigma[k], num,
                                               sizeof num),
                            h);
            goto out;
        }
        int it = follow_step_to(f, c, h, &next);
        double turn = 0.0, dist = 0.0;
        for (size_t j = 0; j < K && it >= 0; j++) {
            turn += next.t[j] * c->t[j];
            dist += (next.w[j] - c->w[j]) * (next.w[j] - c->w[j]);
        }
        if (it >= 0 && turn >= FOLLOW_MAX_TURN && sqrt(dist) <= 2.0 * h) {
            f->h = it <= 2 ? fmin(f->spec.step, 2.0 * h)
                   : it <= 4 ? h
                             : 0.7 * h;
            break;
        }
        h *= 0.5;
    }
    /* marks in (c, next], located */
    size_t nmarks = 0;
    follow_pt_t *marks[2] = {&mark1, &mark2};
    if ((c->t[k] > 0) != (next.t[k] > 0) && c->t[k] != 0.0 &&
        follow_locate(f, c, &next, h, FOLLOW_FOLD, marks[nmarks]) == 0) {
        marks[nmarks]->marks = FOLLOW_FOLD;
        nmarks++;
    }
    if ((c->det > 0) != (next.det > 0) && c->det != 0.0) {
        follow_pt_t *m = marks[nmarks];
        if (follow_locate(f, c, &next, h, FOLLOW_BRANCH, m) == 0 &&
            follow_singular(f, m)) {
            m->marks = FOLLOW_BRANCH;
            nmarks++;
        } else {
            /* the rows chosen turned singular, not the equations:
             * choose again here */
            diag_t tmp = {0};
            double *v = xcalloc(f->nv + 1, sizeof *v);
            memcpy(v, next.vars, f->nv * sizeof *v);
            if (follow_eval(f, v, &tmp) == 0) {
                follow_select_rows(f, next.s);
                next.det = follow_branch_det(f, next.s, next.t);
            }
            free(v);
        }
    }
    /* in order along the family */
    if (nmarks == 2) {
        double d0 = 0, d1 = 0;
        for (size_t j = 0; j < K; j++) {
            d0 += (marks[0]->w[j] - c->w[j]) * (marks[0]->w[j] - c->w[j]);
            d1 += (marks[1]->w[j] - c->w[j]) * (marks[1]->w[j] - c->w[j]);
        }
        if (d1 < d0) {
            follow_pt_t *x = marks[0];
            marks[0] = marks[1];
            marks[1] = x;
        }
    }
    /* λ leaving [A, B]: the last point there exactly */
    double lam = next.w[k] * f->sigma[k];
    bool left = lam > f->hi || lam < f->lo;
    for (size_t i = 0; i < nmarks; i++) {
        double lm = marks[i]->w[k] * f->sigma[k];
        if (lm > f->hi || lm < f->lo)
            nmarks = i; /* past the end: dropped, and those after */
    }
    for (size_t i = 0; i < nmarks; i++)
        follow_push(f, marks[i]);
    if (left) {
        double bound = lam > f->hi ? f->hi : f->lo;
        double lc = c->w[k] * f->sigma[k];
        double x = (bound - lc) / (lam - lc);
        if (!(x >= 0 && x <= 1))
            x = 0.5;
        double *wg = xcalloc(K + 1, sizeof *wg), *e = xcalloc(K + 1, sizeof *e);
        for (size_t j = 0; j < K; j++)
            wg[j] = c->w[j] + x * (next.w[j] - c->w[j]);
        e[k] = 1.0;
        int it = follow_correct(f, c->vars, wg, e, bound / f->sigma[k], c->s,
                                c->t, &mark1);
        free(wg);
        free(e);
        if (it < 0) {
            char num[40];
            rc = diag_error(err, SRC_SPAN_NONE,
                            "the steady equations could not be solved at "
                            "%s = %s, where the family leaves the range",
                            expr_var_name(f->g, f->spec.var),
                            expr_format_number(bound, num, sizeof num));
            goto out;
        }
        mark1.w[k] = bound / f->sigma[k];
        mark1.end = FOLLOW_LEFT;
        mark1.marks = 0;
        follow_push(f, &mark1);
    } else {
        /* the family closed on itself: back at the first point */
        double d = follow_segment_distance(K, f->first.w, c->w, next.w);
        f->arclen += h;
        double dot = 0.0;
        for (size_t j = 0; j < K; j++)
            dot += next.t[j] * f->first.t[j];
        if (f->arclen > 4.0 * f->spec.step && d <= 0.25 * h && dot > 0.5) {
            follow_pt_t back;
            follow_pt_init(f, &back);
            follow_pt_copy(f, &back, &f->first);
            back.end = FOLLOW_CLOSED;
            back.marks = 0;
            follow_push(f, &back);
            follow_pt_free(&back);
        } else {
            follow_push(f, &next);
        }
    }
    follow_pt_copy(f, c, &next);
    follow_pop(f, vars, out);
out:
    follow_pt_free(&next);
    follow_pt_free(&mark1);
    follow_pt_free(&mark2);
    return rc;
}
