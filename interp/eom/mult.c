/*
 * mult.c — the equations of motion on the state (q, q'): lagrange,
 * multipliers and second_kind (LANGUAGE.md §5).
 *
 * All three compile one tape writing M (upper triangle), h, B and c
 * (common.c) and differ only in the dense algebra after it:
 *   lagrange     M q'' = −h                                (Benenti eq. 42, R = 0)
 *   multipliers  [M −Bᵀ; B 0] [q''; λ] = [−h; −c], i.e. M q'' + h = Bᵀλ
 *                (Chetaev's rule, Benenti eq. 36) and B q'' + c = 0
 *   second_kind  F = −M⁻¹h (eq. 44), H = B M⁻¹ Bᵀ (eq. 45),
 *                λ = −H⁻¹(B F + c) (eq. 43 with the ∂C/∂t term of a
 *                time-dependent constraint), q'' = F + M⁻¹Bᵀλ (eq. 48).
 * The multipliers' system is solved by those same blocks when M and H
 * are definite (two LDLᵀ of sizes n and r, not an LU of size n + r), by
 * LU of the whole otherwise.  Small systems (n, r <= EOM_FAST_MAX, short
 * tapes: eom_fast_pays) of lagrange and multipliers have the fast path of
 * common.c: the blocks built
 * from nodes and compiled with the rest.
 *
 * Must not: allocate in the compute functions (they run inside the ODE
 * right-hand side); print.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/eom/common.h"
#include "interp/eom/methods.h"
#include "interp/eom/linalg.h"

/* Layout of the tape outputs. */
static size_t mult_nupper(size_t n) { return n * (n + 1) / 2; }

static int mult_singular_M(eom_t *e, double *buf, diag_t *err)
{
    size_t n = e->sys->n;
    eom_unpack_symmetric(e->out, n, buf, n);
    return eom_singular(err, "mass matrix M", buf, n, n, n);
}

/* ---- lagrange ----------------------------------------------------------- */

static int lagrange_compute(eom_t *e, double *vars, diag_t *err)
{
    const nh_system_t *sys = e->sys;
    size_t n = sys->n;
    tape_eval(e->tape, vars, e->out, e->work);
    if (eom_check_finite(e->out, mult_nupper(n) + n, "M, h", err))
        return -1;
    double *Mf = e->scratch, *x = Mf + n * n, *w = x + n;
    const double *h = e->out + mult_nupper(n);
    for (size_t i = 0; i < n; i++)
        x[i] = -h[i];
    if (eom_solve_symmetric(e->out, n, x, Mf, w, e->perm) != 0)
        return mult_singular_M(e, Mf, err);
    if (eom_check_finite(x, n, "q''", err))
        return -1;
    for (size_t i = 0; i < n; i++)
        vars[sys->qdd[i]] = x[i];
    eom_clear_lambda(e, vars);
    return 0;
}

/* ---- multipliers ---------------------------------------------------------- */

/* The multipliers' system by its blocks, when M and H = B M⁻¹ Bᵀ are
 * definite (the usual case: M is a kinetic energy's Hessian and B has
 * full rank): with F = −M⁻¹h and Y = M⁻¹Bᵀ, M q'' + h = Bᵀλ gives
 * q'' = F + Yλ, and B q'' + c = 0 gives H λ = −(B F + c) — two LDLᵀ
 * factorisations of sizes n and r instead of an LU of size n + r (the
 * same algebra as Benenti's eqs. 43–48).  With M = L D Lᵀ, M⁻¹ = L⁻ᵀ D⁻¹
 * L⁻¹, so only the halves are needed: f = L⁻¹(−h) and z_a = L⁻¹B_aᵀ by
 * forward substitution, H_ab = z_a · D⁻¹ z_b, B_a F = z_a · D⁻¹ f, and
 * q'' = L⁻ᵀ D⁻¹ (f + Σ_a λ_a z_a) by one back substitution: r + 1
 * forward and one back substitution where full solves took r + 1 of
 * each.  Returns 0 with q'' in QDD and λ in LAM, or 1 when a
 * factorisation finds its matrix not definite (the caller then solves
 * the whole system by LU). */
static int multipliers_blocks(eom_t *e, double *qdd, double *lam)
{
    size_t n = e->sys->n, r = e->sys->r, nu = mult_nupper(n);
    const double *Mu = e->out, *h = Mu + nu, *B = h + n, *c = B + r * n;
    double *Mf = e->scratch;   /* n×n */
    double *f = Mf + n * n;    /* n: L⁻¹(−h), then D⁻¹ of it */
    double *Z = f + n;         /* r rows of n: z_a */
    double *H = Z + n * r;     /* r×r */
    double *Zd = H + r * r;    /* r rows of n: D⁻¹ z_a */
    eom_unpack_lower(Mu, n, Mf);
    if (linalg_ldlt(Mf, n, LINALG_RTOL) != 0)
        return 1;
    for (size_t i = 0; i < n; i++)
        f[i] = -h[i];
    linalg_ldlt_forward(Mf, n, f);
    for (size_t a = 0; a < r; a++) {
        double *za = Z + a * n;
        memcpy(za, B + a * n, n * sizeof *za);
        linalg_ldlt_forward(Mf, n, za);
    }
    /* D⁻¹ f and D⁻¹ z_a, then H and B F */
    for (size_t i = 0; i < n; i++) {
        double d = Mf[i * n + i];
        f[i] *= d;
        for (size_t a = 0; a < r; a++)
            Zd[a * n + i] = Z[a * n + i] * d;
    }
    for (size_t a = 0; a < r; a++) {
        const double *za = Z + a * n;
        double s = c[a];
        for (size_t i = 0; i < n; i++)
            s += za[i] * f[i];
        lam[a] = -s;
        for (size_t b = 0; b <= a; b++) {
            const double *zb = Zd + b * n;
            double t = 0.0;
            for (size_t i = 0; i < n; i++)
                t += za[i] * zb[i];
            H[a * r + b] = t; /* the lower triangle */
        }
    }
    /* H is definite if anything; M's values are finite (checked) */
    double hmax = 0.0, mmax = 0.0;
    for (size_t a = 0; a < r; a++)
        if (H[a * r + a] > hmax)
            hmax = H[a * r + a];
    for (size_t k = 0; k < nu; k++)
        if (fabs(Mu[k]) > mmax)
            mmax = fabs(Mu[k]);
    if (r > 0 &&
        (eom_schur_negligible(hmax, mmax) || linalg_ldlt(H, r, LINALG_RTOL) != 0))
        return 1; /* r = 0: an unconstrained model, H is empty */
    linalg_ldlt_solve(H, r, lam);
    /* q'' = L⁻ᵀ (D⁻¹ f + Σ_a λ_a D⁻¹ z_a) */
    for (size_t i = 0; i < n; i++) {
        double s = f[i];
        for (size_t a = 0; a < r; a++)
            s += Zd[a * n + i] * lam[a];
        qdd[i] = s;
    }
    linalg_ldlt_back(Mf, n, qdd);
    return 0;
}

static int multipliers_compute(eom_t *e, double *vars, diag_t *err)
{
    const nh_system_t *sys = e->sys;
    size_t n = sys->n, r = sys->r, N = n + r;
    size_t nu = mult_nupper(n);
    tape_eval(e->tape, vars, e->out, e->work);
    if (eom_check_finite(e->out, nu + n + r * n + r, "M, h, B, c", err))
        return -1;
    const double *h = e->out + nu, *B = h + n, *c = B + r * n;
    double *K = e->scratch, *x = K + N * N, *w = x + N;
    double *sol = e->scratch + e->nscratch - N; /* q'' then λ */
    if (multipliers_blocks(e, sol, sol + n) == 0) {
        if (eom_check_finite(sol, N, "q'' and lambda", err))
            return -1;
        for (size_t i = 0; i < n; i++)
            vars[sys->qdd[i]] = sol[i];
        for (size_t a = 0; a < r; a++)
            vars[sys->lam[a]] = sol[n + a];
        return 0;
    }
    eom_unpack_symmetric(e->out, n, K, N);
    for (size_t a = 0; a < r; a++) {
        double *row = K + (n + a) * N;
        for (size_t i = 0; i < n; i++) {
            K[i * N + n + a] = -B[a * n + i];
            row[i] = B[a * n + i];
        }
        for (size_t b = 0; b < r; b++)
            row[n + b] = 0.0;
    }
    if (linalg_lu(K, N, e->perm, LINALG_RTOL) != 0) {
        /* Name the culprit: B short of rank, else M, else the whole. */
        if (eom_check_independent(e->sys, B, K, err))
            return -1;
        eom_unpack_symmetric(e->out, n, K, n);
        if (eom_rank(K, n, n) < n)
            return mult_singular_M(e, K, err);
        eom_unpack_symmetric(e->out, n, K, N);
        for (size_t a = 0; a < r; a++)
            for (size_t i = 0; i < n; i++) {
                K[i * N + n + a] = -B[a * n + i];
                K[(n + a) * N + i] = B[a * n + i];
            }
        for (size_t a = 0; a < r; a++)
            for (size_t b = 0; b < r; b++)
                K[(n + a) * N + n + b] = 0.0;
        return eom_singular(err, "matrix [M -B^T; B 0]", K, N, N, N);
    }
    for (size_t i = 0; i < n; i++)
        x[i] = -h[i];
    for (size_t a = 0; a < r; a++)
        x[n + a] = -c[a];
    linalg_lu_solve(K, N, e->perm, x, w);
    if (eom_check_finite(x, N, "q'' and lambda", err))
        return -1;
    for (size_t i = 0; i < n; i++)
        vars[sys->qdd[i]] = x[i];
    for (size_t a = 0; a < r; a++)
        vars[sys->lam[a]] = x[n + a];
    return 0;
}

/* ---- second kind ------------------------------------------------------- */

static int second_kind_compute(eom_t *e, double *vars, diag_t *err)
{
    const nh_system_t *sys = e->sys;
    size_t n = sys->n, r = sys->r;
    size_t nu = mult_nupper(n);
    tape_eval(e->tape, vars, e->out, e->work);
    if (eom_check_finite(e->out, nu + n + r * n + r, "M, h, B, c", err))
        return -1;
    const double *h = e->out + nu, *B = h + n, *c = B + r * n;
    double *Mf = e->scratch;        /* n×n, factored */
    double *F = Mf + n * n;         /* n */
    double *Y = F + n;              /* n×r: column a is M⁻¹ B_aᵀ */
    double *H = Y + n * r;          /* r×r */
    double *lam = H + r * r;        /* r */
    double *w = lam + r;            /* n + r */
    double *col = w + n + r;        /* n */
    double *diagbuf = col + n;      /* n×n or r×n */
    size_t *permH = e->perm + n;

    eom_unpack_symmetric(e->out, n, Mf, n);
    if (linalg_lu(Mf, n, e->perm, LINALG_RTOL) != 0)
        return mult_singular_M(e, diagbuf, err);
    /* F = −M⁻¹h (Benenti eq. 44 with A and Γ folded into h). */
    for (size_t i = 0; i < n; i++)
        F[i] = -h[i];
    linalg_lu_solve(Mf, n, e->perm, F, w);
    for (size_t a = 0; a < r; a++) {
        for (size_t i = 0; i < n; i++)
            col[i] = B[a * n + i];
        linalg_lu_solve(Mf, n, e->perm, col, w);
        for (size_t i = 0; i < n; i++)
            Y[i * r + a] = col[i];
    }
    /* H^ab = B_a M⁻¹ B_bᵀ (eq. 45), λ = −H⁻¹(B F + c) (eqs. 43, 47). */
    for (size_t a = 0; a < r; a++) {
        double s = c[a];
        for (size_t i = 0; i < n; i++)
            s += B[a * n + i] * F[i];
        lam[a] = -s;
        for (size_t b = 0; b < r; b++) {
            double t = 0.0;
            for (size_t i = 0; i < n; i++)
                t += B[a * n + i] * Y[i * r + b];
            H[a * r + b] = t;
        }
    }
    /* H is judged against the mass matrix's scale, not only against its
     * own entries (eom_schur_negligible). */
    double hmax = 0.0, mmax = 0.0;
    for (size_t k = 0; k < r * r; k++)
        hmax = fmax(hmax, fabs(H[k]));
    for (size_t k = 0; k < nu; k++)
        mmax = fmax(mmax, fabs(e->out[k]));
    if (r > 0 && (eom_schur_negligible(hmax, mmax) ||
                  linalg_lu(H, r, permH, LINALG_RTOL) != 0)) {
        if (eom_check_independent(e->sys, B, diagbuf, err))
            return -1;
        if (eom_schur_negligible(hmax, mmax))
            return diag_error(err, SRC_SPAN_NONE,
                              "the matrix H = B M^-1 B^T is negligible against "
                              "the mass matrix (largest entries %.3g and %.3g): "
                              "the constraints' gradient B vanishes",
                              hmax, mmax);
        for (size_t a = 0; a < r; a++)
            for (size_t b = 0; b < r; b++) {
                double t = 0.0;
                for (size_t i = 0; i < n; i++)
                    t += B[a * n + i] * Y[i * r + b];
                diagbuf[a * r + b] = t;
            }
        return eom_singular(err, "matrix H = B M^-1 B^T", diagbuf, r, r, r);
    }
    linalg_lu_solve(H, r, permH, lam, w);
    /* q'' = F + M⁻¹Bᵀλ (eq. 48). */
    for (size_t i = 0; i < n; i++) {
        double s = F[i];
        for (size_t a = 0; a < r; a++)
            s += Y[i * r + a] * lam[a];
        w[i] = s;
    }
    if (eom_check_finite(w, n, "q''", err) ||
        eom_check_finite(lam, r, "lambda", err))
        return -1;
    for (size_t i = 0; i < n; i++)
        vars[sys->qdd[i]] = w[i];
    for (size_t a = 0; a < r; a++)
        vars[sys->lam[a]] = lam[a];
    return 0;
}

/* ---- derivatives --------------------------------------------------------- */

/* lagrange, multipliers and second_kind solve the same system K u = b:
 * u = (q'', λ), K = [M −Bᵀ; B 0], b = (−h, −c) (lagrange: M q'' = −h).
 * Differentiated along a direction, K du = −(dK u − db): the rows
 * dM q'' − dBᵀλ + dh and dB q'' + dc, with dM, dh, dB, dc the tape's
 * derivatives (eom_tangent_tape). */
static int mult_tangent(eom_t *e, double *vars, double *dvars, size_t k,
                        diag_t *err)
{
    const nh_system_t *sys = e->sys;
    size_t n = sys->n, r = e->method == EOM_LAGRANGE ? 0 : sys->r;
    size_t N = n + r, nu = mult_nupper(n);
    /* The values come with the derivatives: K u = b is solved here, with
     * the factorization the derivatives reuse, instead of by the compute
     * (whose path — blocks, or the fast tape — differs only in rounding);
     * the compute runs only to report a state it finds singular. */
    eom_tangent_tape(e, vars, dvars, k);
    const double *M = e->t_out, *h = M + nu, *B = h + n, *c = B + r * n;
    const double *dM = e->t_dout, *dh = dM + nu * k, *dB = dh + n * k;
    const double *dc = dB + r * n * k;
    /* K, u and w where they stay from block to block (eom_tangent) */
    double *K = e->t_scratch, *u = K + N * N, *w = u + N, *rhs = w + 2 * N;
    if (e->t_again)
        goto derivatives; /* K factored and u solved at this state */
    if (eom_check_finite(M, nu + n + (r ? r * n + r : 0),
                         r ? "M, h, B, c" : "M, h", err))
        return -1;
    /* (M's upper triangle row by row: M_il at base_min(i,l) + |l − i|,
     * base_0 = 0, base_{l+1} = base_l + n − l) */
    for (size_t i = 0, bi = 0; i < n; bi += n - i, i++) {
        for (size_t l = 0, bl = 0; l < i; bl += n - l, l++)
            K[i * N + l] = M[bl + i - l];
        for (size_t l = i; l < n; l++)
            K[i * N + l] = M[bi + l - i];
        for (size_t a = 0; a < r; a++) {
            K[i * N + n + a] = -B[a * n + i];
            K[(n + a) * N + i] = B[a * n + i];
        }
        u[i] = -h[i];
    }
    for (size_t a = 0; a < r; a++) {
        for (size_t b = 0; b < r; b++)
            K[(n + a) * N + n + b] = 0.0;
        u[n + a] = -c[a];
    }
    if (N > 0 && linalg_lu(K, N, e->t_perm, LINALG_RTOL) != 0) {
        if (e->compute(e, vars, err) != 0)
            return -1; /* its error names the matrix at fault */
        return diag_error(err, SRC_SPAN_NONE, "the %s is singular",
                          r ? "matrix [M -B^T; B 0]" : "mass matrix M");
    }
    if (N > 0)
        linalg_lu_solve(K, N, e->t_perm, u, w);
    if (eom_check_finite(u, N, r ? "q'' and lambda" : "q''", err))
        return -1;
    for (size_t i = 0; i < n; i++)
        vars[sys->qdd[i]] = u[i];
    for (size_t a = 0; a < r; a++)
        vars[sys->lam[a]] = u[n + a];
    if (e->method == EOM_LAGRANGE)
        eom_clear_lambda(e, vars);
derivatives:
    /* (dM_il at the packed places of M's, as above) */
    for (size_t i = 0, bi = 0; i < n; bi += n - i, i++)
        for (size_t j = 0; j < k; j++) {
            double s = dh[i * k + j];
            for (size_t l = 0, bl = 0; l < i; bl += n - l, l++)
                s += dM[(bl + i - l) * k + j] * u[l];
            for (size_t l = i; l < n; l++)
                s += dM[(bi + l - i) * k + j] * u[l];
            for (size_t a = 0; a < r; a++)
                s -= dB[(a * n + i) * k + j] * u[n + a];
            rhs[i * k + j] = -s;
        }
    for (size_t a = 0; a < r; a++)
        for (size_t j = 0; j < k; j++) {
            double s = dc[a * k + j];
            for (size_t i = 0; i < n; i++)
                s += dB[(a * n + i) * k + j] * u[i];
            rhs[(n + a) * k + j] = -s;
        }
    linalg_lu_solve_many(K, N, e->t_perm, rhs, k, w);
    for (size_t i = 0; i < n; i++)
        memcpy(dvars + (size_t)sys->qdd[i] * k, rhs + i * k,
               k * sizeof *dvars);
    for (size_t a = 0; a < r; a++)
        memcpy(dvars + (size_t)sys->lam[a] * k, rhs + (n + a) * k,
               k * sizeof *dvars);
    return 0;
}

/* ---- describe ----------------------------------------------------------- */

/* Σ_j M_ij q_j'' + h0_i: the left side of row i. */
static const expr_t *mult_lhs(const eom_t *e, size_t i)
{
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    size_t n = sys->n;
    const expr_t *s = e->d.h0[i];
    for (size_t j = 0; j < n; j++)
        s = expr_add(g, s, expr_mul(g, e->d.M[i * n + j],
                                    expr_var(g, sys->qdd[j])));
    return s;
}

/* Q_i + Σ_a λ_a B_ai. */
static const expr_t *mult_rhs(const eom_t *e, size_t i, bool with_lambda)
{
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    const expr_t *s = sys->Q[i];
    if (with_lambda)
        for (size_t a = 0; a < sys->r; a++)
            s = expr_add(g, s, expr_mul(g, expr_var(g, sys->lam[a]),
                                        e->d.B[a * sys->n + i]));
    return s;
}

/* Σ_i B_ai q_i'' + c_a. */
static const expr_t *mult_constraint_row(const eom_t *e, size_t a)
{
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    const expr_t *s = e->d.c[a];
    for (size_t i = 0; i < sys->n; i++)
        s = expr_add(g, s, expr_mul(g, e->d.B[a * sys->n + i],
                                    expr_var(g, sys->qdd[i])));
    return s;
}

/* The LaTeX of index I of an object: coordinate I's name (\\theta), or
 * constraint I - n's in roman (\\mathrm{roll\\_x}).  Malloc'ed. */
static char *mult_index_latex(const eom_t *e, size_t i)
{
    const nh_system_t *sys = e->sys;
    if (i < sys->n)
        return eom_latex_var(sys->g, sys->q[i]);
    const char *nm = sys->cname[i - sys->n];
    char *t = eom_alloc(2 * strlen(nm) + 16, 1);
    size_t k = (size_t)sprintf(t, "\\mathrm{");
    for (; *nm; nm++) {
        if (*nm == '_')
            t[k++] = '\\';
        t[k++] = *nm;
    }
    strcpy(t + k, "}");
    return t;
}

/* The object SYM[I] or SYM[I, J] into B as a row; I and J index the
 * coordinates, then the constraints (mult_index_latex); J may be -1. */
static void mult_object(eom_buf_t *b, const eom_t *e, const char *sym,
                        size_t i, long j, const expr_t *v, bool latex)
{
    const nh_system_t *sys = e->sys;
    const char *ti = i < sys->n ? sys->qname[i] : sys->cname[i - sys->n];
    const char *tj = j < 0                 ? NULL
                     : (size_t)j < sys->n ? sys->qname[j]
                                          : sys->cname[(size_t)j - sys->n];
    char *li = mult_index_latex(e, i);
    char *lj = j < 0 ? NULL : mult_index_latex(e, (size_t)j);
    strbuf_t text, tex; /* on the heap: a name may be as long as a line */
    strbuf_init(&text);
    strbuf_init(&tex);
    strbuf_addf(&text, "%s[%s%s%s]", sym, ti, tj ? ", " : "", tj ? tj : "");
    strbuf_addf(&tex, "%s_{%s%s%s}", sym, li, lj ? "," : "", lj ? lj : "");
    eom_buf_object(b, sys->g, text.data, tex.data, v, latex);
    strbuf_free(&text);
    strbuf_free(&tex);
    free(li);
    free(lj);
}

static char *mult_describe(const eom_t *e, bool latex)
{
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    size_t n = sys->n, r = sys->r;
    eom_buf_t b = eom_buf_start(e);
    switch (e->method) {
    case EOM_LAGRANGE:
        eom_buf_heading(&b, latex,
                        "lagrange: d/dt dL/dq_i' - dL/dq_i = Q_i, "
                        "i.e. sum_j M_ij q_j'' + h_i = Q_i");
        for (size_t i = 0; i < n; i++)
            eom_buf_row(&b, g, mult_lhs(e, i), mult_rhs(e, i, false), latex);
        break;
    case EOM_MULTIPLIERS:
        eom_buf_heading(&b, latex,
                        "multipliers: sum_j M_ij q_j'' + h_i = Q_i + "
                        "sum_a lambda_a B_ai, with B_ai = dC^a/dq_i'");
        for (size_t i = 0; i < n; i++)
            eom_buf_row(&b, g, mult_lhs(e, i), mult_rhs(e, i, true), latex);
        eom_buf_heading(&b, latex,
                        "constraints: sum_i B_ai q_i'' + c_a = 0");
        for (size_t a = 0; a < r; a++)
            eom_buf_row(&b, g, mult_constraint_row(e, a), expr_num(g, 0.0),
                        latex);
        break;
    default: /* second kind: Benenti's objects, then his recipe */
        eom_buf_heading(&b, latex,
                        "second_kind (Benenti eqs. 43-48): the objects");
        for (size_t i = 0; i < n; i++)
            for (size_t j = i; j < n; j++) {
                const expr_t *mij = e->d.M[i * n + j];
                if (expr_is_const(mij, 0.0))
                    continue;
                mult_object(&b, e, "M", i, (long)j, mij, latex);
            }
        for (size_t i = 0; i < n; i++)
            mult_object(&b, e, "h", i, -1, e->d.h[i], latex);
        for (size_t a = 0; a < r; a++) {
            for (size_t i = 0; i < n; i++) {
                const expr_t *bai = e->d.B[a * n + i];
                if (expr_is_const(bai, 0.0))
                    continue;
                mult_object(&b, e, "B", n + a, (long)i, bai, latex);
            }
            mult_object(&b, e, "c", n + a, -1, e->d.c[a], latex);
        }
        eom_buf_heading(&b, latex,
                        "F = -M^-1 h;  H = B M^-1 B^T;  "
                        "lambda = -H^-1 (B F + c);  q'' = F + M^-1 B^T lambda");
        break;
    }
    return eom_buf_finish(&b, latex);
}

/* ---- the fast path -------------------------------------------------------- */

/* The column of the velocity that stands alone in constraint A — a
 * constant nonzero coefficient there, none in the other rows — preferring
 * the one written on its left side (x' = …), else the last declared; n
 * when none does. */
static size_t mult_alone(const eom_t *e, size_t a)
{
    const nh_system_t *sys = e->sys;
    size_t n = sys->n;
    long left = sys->cleft ? sys->cleft[a] : NH_CLEFT_NONE;
    if (left >= 0 && eom_velocity_alone(e, a, (size_t)left))
        return (size_t)left;
    for (size_t j = n; j-- > 0;)
        if (eom_velocity_alone(e, a, j))
            return j;
    return n;
}

/* FIRST (when not NULL) + Σ_u ROW[u]·COL[u·STRIDE], u < N, as one sum
 * node (the terms in that order); T holds N + 1 terms. */
static const expr_t *mult_dot(expr_graph_t *g, const expr_t *first,
                              const expr_t *const *row,
                              const expr_t *const *col, size_t stride,
                              size_t n, const expr_t **t)
{
    size_t k = 0;
    if (first)
        t[k++] = first;
    for (size_t u = 0; u < n; u++)
        t[k++] = expr_mul(g, row[u], col[u * stride]);
    return expr_sum(g, t, k);
}

/* The multipliers eliminated (the null-space method), when every
 * constraint a has a velocity q_{d_a}' alone in it (mult_alone), with the
 * constant coefficient β_a: B q'' + c = 0 then gives the dependent
 * accelerations q_D'' = Ñ q_I'' + p, Ñ_aj = −B_{a,I_j}/β_a,
 * p_a = −c_a/β_a, i.e. q'' = N q_I'' + p with N = [I; Ñ] (rows in
 * coordinate order).  Since N spans the null space of B, Nᵀ applied to
 * M q'' + h = Bᵀλ leaves
 *     M̄ q_I'' = −Nᵀ(h + M p),  M̄ = NᵀMN,
 * one definite system of size n − r where the blocks solve two (n and r)
 * and chain the second's divisions after the first's; the dependent rows
 * then give λ_a = (M q'' + h)_{d_a}/β_a.  The same q'' and λ (the system
 * [M −Bᵀ; B 0] has one solution), computed otherwise.  Returns false,
 * building nothing, when some constraint has no such velocity. */
static bool mult_fast_reduced(eom_t *e)
{
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    size_t n = sys->n, r = sys->r, mi = n - r;
    size_t *dep = eom_alloc(r, sizeof *dep);
    long *row = eom_alloc(n, sizeof *row); /* the constraint of a dependent */
    for (size_t i = 0; i < n; i++)
        row[i] = -1;
    for (size_t a = 0; a < r; a++) {
        dep[a] = mult_alone(e, a);
        if (dep[a] == n) {
            free(dep);
            free(row);
            return false;
        }
        row[dep[a]] = (long)a;
    }
    /* N (n×mi) and p (n), by coordinate */
    const expr_t **N = eom_alloc(n * mi, sizeof *N);
    const expr_t **p = eom_alloc(n, sizeof *p);
    const expr_t *zero = expr_num(g, 0.0), *one = expr_num(g, 1.0);
    size_t *ind = eom_alloc(mi, sizeof *ind);
    for (size_t i = 0, k = 0; i < n; i++)
        if (row[i] < 0)
            ind[k++] = i;
    for (size_t i = 0; i < n; i++) {
        if (row[i] < 0) {
            for (size_t j = 0; j < mi; j++)
                N[i * mi + j] = ind[j] == i ? one : zero;
            p[i] = zero;
            continue;
        }
        size_t a = (size_t)row[i];
        const expr_t *ib = expr_num(g, -1.0 / e->d.B[a * n + i]->value);
        for (size_t j = 0; j < mi; j++)
            N[i * mi + j] = expr_mul(g, ib, e->d.B[a * n + ind[j]]);
        p[i] = expr_mul(g, ib, e->d.c[a]);
    }
    eom_expand(g, p, n); /* an input: the sphere's c cancels in part */
    /* MN (n×mi), g = h + M p (n), then M̄ = Nᵀ(MN) and −Nᵀg */
    const expr_t **MN = eom_alloc(n * mi, sizeof *MN);
    const expr_t **gv = eom_alloc(n, sizeof *gv);
    const expr_t **t = eom_alloc(n + 1, sizeof *t);
    for (size_t s = 0; s < n; s++) {
        const expr_t *const *Ms = e->d.M + s * n;
        for (size_t j = 0; j < mi; j++)
            MN[s * mi + j] = mult_dot(g, NULL, Ms, N + j, mi, n, t);
        gv[s] = mult_dot(g, e->d.h[s], Ms, p, 1, n, t);
    }
    const expr_t **Mbar = eom_alloc(mi * mi, sizeof *Mbar);
    const expr_t **rhs = eom_alloc(mi, sizeof *rhs);
    for (size_t j = 0; j < mi; j++) {
        for (size_t k = 0; k <= j; k++) {
            for (size_t u = 0; u < n; u++)
                t[u] = expr_mul(g, N[u * mi + j], MN[u * mi + k]);
            Mbar[j * mi + k] = Mbar[k * mi + j] = expr_sum(g, t, n);
        }
        for (size_t u = 0; u < n; u++)
            t[u] = expr_mul(g, N[u * mi + j], gv[u]);
        rhs[j] = expr_neg(g, expr_sum(g, t, n));
    }
    eom_expand(g, Mbar, mi * mi);
    eom_expand(g, rhs, mi);
    const expr_t **diag = eom_alloc(mi, sizeof *diag);
    const expr_t **piv = eom_alloc(mi, sizeof *piv);
    const expr_t **qi = eom_alloc(mi, sizeof *qi);
    for (size_t j = 0; j < mi; j++)
        diag[j] = Mbar[j * mi + j];
    eom_ldlt_nodes(g, Mbar, mi, rhs, 1, piv, qi);
    /* the values: q'' by coordinate, then λ */
    const expr_t **val = eom_alloc(n + r, sizeof *val);
    uint32_t *var = eom_alloc(n + r, sizeof *var);
    for (size_t i = 0; i < n; i++) {
        t[0] = p[i];
        for (size_t j = 0; j < mi; j++)
            t[1 + j] = expr_mul(g, N[i * mi + j], qi[j]);
        val[i] = expr_sum(g, t, mi + 1);
        var[i] = sys->qdd[i];
    }
    for (size_t a = 0; a < r; a++) {
        size_t d = dep[a];
        const expr_t *const *Md = e->d.M + d * n;
        t[0] = e->d.h[d];
        for (size_t u = 0; u < n; u++)
            t[1 + u] = expr_mul(g, Md[u], val[u]);
        val[n + a] = expr_mul(g, expr_num(g, 1.0 / e->d.B[a * n + d]->value),
                              expr_sum(g, t, n + 1));
        var[n + a] = sys->lam[a];
    }
    eom_fast_install(e, 1, &mi, diag, piv, val, var, n + r, false);
    free(dep);
    free(row);
    free(N);
    free(p);
    free(ind);
    free(MN);
    free(gv);
    free(t);
    free(Mbar);
    free(rhs);
    free(diag);
    free(piv);
    free(qi);
    free(val);
    free(var);
    return true;
}

/* lagrange (NCON = 0): M q'' = −h by nodes.  multipliers: the blocks of
 * multipliers_blocks by nodes — F = −M⁻¹h, Y = M⁻¹Bᵀ, H = BY,
 * λ = −H⁻¹(BF + c), q'' = F + Yλ — with two factored matrices. */
static void mult_fast(eom_t *e, size_t ncon)
{
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    size_t n = sys->n, r = ncon, nval = n + r;
    const expr_t **M = eom_alloc(n * n, sizeof *M);
    const expr_t **rhs = eom_alloc((1 + r) * n, sizeof *rhs);
    const expr_t **sol = eom_alloc((1 + r) * n, sizeof *sol);
    const expr_t **diag = eom_alloc(n + r, sizeof *diag);
    const expr_t **piv = eom_alloc(n + r, sizeof *piv);
    const expr_t **val = eom_alloc(nval, sizeof *val);
    uint32_t *var = eom_alloc(nval, sizeof *var);
    memcpy(M, e->d.M, n * n * sizeof *M);
    eom_expand(g, M, n * n);
    for (size_t i = 0; i < n; i++) {
        diag[i] = M[i * n + i];
        rhs[i] = expr_neg(g, e->d.h[i]);
    }
    for (size_t a = 0; a < r; a++)
        for (size_t i = 0; i < n; i++)
            rhs[(1 + a) * n + i] = e->d.B[a * n + i];
    eom_expand(g, rhs, (1 + r) * n);
    eom_ldlt_nodes(g, M, n, rhs, 1 + r, piv, sol);
    const expr_t *const *F = sol, *const *Y = sol + n;
    const expr_t **q = val; /* q'' */
    for (size_t i = 0; i < n; i++)
        q[i] = F[i];
    if (r > 0) {
        const expr_t **H = eom_alloc(r * r, sizeof *H);
        const expr_t **bl = eom_alloc(r, sizeof *bl);
        const expr_t **lam = val + n;
        /* terms of a sum over i (n + 1) or over a (r + 1) */
        const expr_t **t = eom_alloc((n > r ? n : r) + 1, sizeof *t);
        for (size_t a = 0; a < r; a++) {
            const expr_t *const *Ba = e->d.B + a * n;
            for (size_t b = 0; b < r; b++)
                H[a * r + b] = mult_dot(g, NULL, Ba, Y + b * n, 1, n, t);
            bl[a] = expr_neg(g, mult_dot(g, e->d.c[a], Ba, F, 1, n, t));
        }
        for (size_t a = 0; a < r; a++)
            diag[n + a] = H[a * r + a];
        eom_ldlt_nodes(g, H, r, bl, 1, piv + n, lam);
        for (size_t i = 0; i < n; i++) {
            t[0] = F[i];
            for (size_t a = 0; a < r; a++)
                t[1 + a] = expr_mul(g, Y[a * n + i], lam[a]);
            q[i] = expr_sum(g, t, r + 1);
        }
        free(H);
        free(bl);
        free(t);
    }
    for (size_t i = 0; i < n; i++)
        var[i] = sys->qdd[i];
    for (size_t a = 0; a < r; a++)
        var[n + a] = sys->lam[a];
    size_t sizes[2] = {n, r};
    eom_fast_install(e, r > 0 ? 2 : 1, sizes, diag, piv, val, var, nval,
                     r == 0);
    free(M);
    free(rhs);
    free(sol);
    free(diag);
    free(piv);
    free(val);
    free(var);
}

/* ---- prepare ------------------------------------------------------------ */

int eom_prepare_mult(eom_t *e, src_span_t where, diag_t *err)
{
    const nh_system_t *sys = e->sys;
    size_t n = sys->n, r = sys->r;
    if (e->method == EOM_LAGRANGE && r > 0)
        return diag_error(err, where,
                          "the model has constraints (%s%s): lagrange "
                          "ignores them; use `equations multipliers`",
                          sys->cname[0], r > 1 ? ", ..." : "");
    eom_derive_c(sys, &e->d);
    size_t nu = mult_nupper(n);
    bool constrained = e->method != EOM_LAGRANGE;
    size_t nout = nu + n + (constrained ? r * n + r : 0);
    const expr_t **outs = eom_alloc(nout, sizeof *outs);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i; j < n; j++)
            outs[k++] = e->d.M[i * n + j];
    for (size_t i = 0; i < n; i++)
        outs[k++] = e->d.h[i];
    if (constrained) {
        for (size_t a = 0; a < r; a++)
            for (size_t i = 0; i < n; i++)
                outs[k++] = e->d.B[a * n + i];
        for (size_t a = 0; a < r; a++)
            outs[k++] = e->d.c[a];
    }
    eom_compile(e, outs, nout);
    free(outs);

    size_t N = n + r;
    switch (e->method) {
    case EOM_LAGRANGE:
        e->compute = lagrange_compute;
        eom_alloc_scratch(e, n * n + 2 * n, n);
        break;
    case EOM_MULTIPLIERS: {
        /* the LU of the whole system, or the blocks; then the solution */
        size_t lu = N * N + 2 * N, blocks = n * n + n + 2 * n * r + r * r;
        e->compute = multipliers_compute;
        eom_alloc_scratch(e, (lu > blocks ? lu : blocks) + N, N);
        break;
    }
    default: {
        e->compute = second_kind_compute;
        size_t big = n * n > r * n ? n * n : r * n;
        if (r * r > big)
            big = r * r;
        eom_alloc_scratch(e, n * n + n + n * r + r * r + r + (n + r) + n + big,
                          N);
        break;
    }
    }
    e->describe = mult_describe;
    e->tangent = mult_tangent;
    eom_set_state(e, sys->qd, sys->qdd, n);
    if (e->method == EOM_LAGRANGE && eom_fast_pays(e))
        mult_fast(e, 0);
    else if (e->method == EOM_MULTIPLIERS && r <= EOM_FAST_MAX &&
             eom_fast_pays(e) && (r == 0 || !mult_fast_reduced(e)))
        mult_fast(e, r);
    return 0;
}
