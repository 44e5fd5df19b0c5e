/*
 * maggi.c — the equations of motion on the state (q, z): maggi
 * (first_kind, kane) and gibbs_appell (LANGUAGE.md §5).
 *
 * Kinematic equations q' = ψ(q, z, t), linear in z or not (Benenti eq.
 * 19), Ψ = ∂ψ/∂z (his ψ^i_α, eq. 8).  Along a motion
 *   q'' = β + Ψ z',   β = Σ_j ∂ψ/∂q_j ψ_j + ∂ψ/∂t           (Benenti eq. 22)
 * and ideal constraints mean Ψᵀ R = 0 (eq. 26).  With M, h at q' = ψ:
 *   maggi (Benenti eq. 27, with a general L, forces in h):
 *     G z' = Ψᵀ(−h − M β),   G = Ψᵀ M Ψ                         (eq. 24)
 *   gibbs_appell (Benenti eqs. 66–68): ∂S/∂z_a' = Σ_i Q̃_i Ψ_ia with
 *     — particles: S = ½ Σ_ν m_ν |P_ν''|² (eq. 67), P_ν'' through q' = ψ
 *       (eq. 22), Q̃ = Q − ∂V/∂q all active forces;
 *     — otherwise the quadratic form of eq. 68 for a general L:
 *       S = ½ q''ᵀ M q'' + h0ᵀ q'' with q'' = β + Ψ z' (h0 = h without
 *       forces; ∂S/∂z' = Ψᵀ(MΨ z' + Mβ + h0), Benenti's eq. 68 with
 *       Γψψ − A generalised), Q̃ = Q.
 *     The equations are linear in z': G_ab = ∂²S/∂z_a'∂z_b' and the
 *     right side Σ_i Q̃_i Ψ_ia − ∂S/∂z_a'|_{z'=0}, both by differentiating
 *     S — a different road to the same motion as maggi, which the tests
 *     use as a check.
 *
 * Declared constraints are checked against ψ at sample points:
 * C(q, ψ(q, z, t), t) must vanish (f' for a holonomic f).  For a small
 * system G z' = rhs is solved from nodes on the fast tape of common.c
 * (mag_fast).
 *
 * Must not: allocate in the compute function; print.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interp/eom/common.h"
#include "interp/eom/methods.h"

static size_t mag_nupper(size_t n) { return n * (n + 1) / 2; }

/* Tape outputs: ψ (n), G upper, rhs (m), β (n), Ψ (n×m). */
static int maggi_compute(eom_t *e, double *vars, diag_t *err)
{
    const nh_system_t *sys = e->sys;
    size_t n = sys->n, m = sys->m, nu = mag_nupper(m);
    tape_eval(e->tape, vars, e->out, e->work);
    if (eom_check_finite(e->out, n + nu + m + n + n * m,
                         "psi, G and the forces", err))
        return -1;
    const double *psi = e->out, *Gu = psi + n, *rhs = Gu + nu;
    const double *beta = rhs + m, *Psi = beta + n;
    double *Gf = e->scratch, *x = Gf + m * m, *wk = x + m;
    for (size_t i = 0; i < n; i++)
        vars[sys->qd[i]] = psi[i];
    memcpy(x, rhs, m * sizeof *x);
    if (eom_solve_symmetric(Gu, m, x, Gf, wk, e->perm) != 0) {
        eom_unpack_symmetric(Gu, m, Gf, m);
        return eom_singular(err,
                            e->method == EOM_MAGGI
                                ? "matrix G = Psi^T M Psi"
                                : "matrix G = d2S/dz'dz' of the Gibbs function",
                            Gf, m, m, m);
    }
    if (eom_check_finite(x, m, "z'", err))
        return -1;
    for (size_t a = 0; a < m; a++)
        vars[sys->zd[a]] = x[a];
    for (size_t i = 0; i < n; i++) {
        double s = beta[i];
        for (size_t a = 0; a < m; a++)
            s += Psi[i * m + a] * x[a];
        if (!isfinite(s))
            return eom_check_finite(&s, 1, "q''", err);
        vars[sys->qdd[i]] = s;
    }
    eom_clear_lambda(e, vars);
    return 0;
}

/* maggi's tape outputs: q' (= ψ, set by e->pre), M upper, h, β, Ψ.
 * G = ΨᵀMΨ and Ψᵀ(−h − Mβ) (Benenti eqs. 24, 27) are formed here in
 * numbers: as nodes, each product M_ij·Ψ_ja would hold all the factors
 * of Ψ_ja (for the N-trailer ψ_i is a product of i cosines: N³ operands
 * for G), where the numbers cost n²·m per call. */
static int maggi_compute_matrix(eom_t *e, double *vars, diag_t *err)
{
    const nh_system_t *sys = e->sys;
    size_t n = sys->n, m = sys->m, nun = mag_nupper(n), num = mag_nupper(m);
    eom_run_pre(e, vars);
    tape_eval(e->tape, vars, e->out, e->work);
    if (eom_check_finite(e->out, n + nun + n + n + n * m,
                         "psi, M, h and beta", err))
        return -1;
    const double *psi = e->out, *Mu = psi + n, *h = Mu + nun;
    const double *beta = h + n, *Psi = beta + n;
    double *Mf = e->scratch;      /* n×n */
    double *f = Mf + n * n;       /* n: −h − Mβ */
    double *MPsi = f + n;         /* n×m */
    double *Gu = MPsi + n * m;    /* m(m+1)/2 */
    double *Gf = Gu + num;        /* m×m */
    double *x = Gf + m * m;       /* m */
    double *wk = x + m;           /* m */
    eom_unpack_symmetric(Mu, n, Mf, n);
    for (size_t i = 0; i < n; i++) {
        const double *mi = Mf + i * n;
        double s = -h[i];
        for (size_t j = 0; j < n; j++)
            s -= mi[j] * beta[j];
        f[i] = s;
        for (size_t b = 0; b < m; b++) {
            double t = 0.0;
            for (size_t j = 0; j < n; j++)
                t += mi[j] * Psi[j * m + b];
            MPsi[i * m + b] = t;
        }
    }
    size_t k = 0;
    for (size_t a = 0; a < m; a++) {
        for (size_t b = a; b < m; b++) {
            double t = 0.0;
            for (size_t i = 0; i < n; i++)
                t += Psi[i * m + a] * MPsi[i * m + b];
            Gu[k++] = t;
        }
        double t = 0.0;
        for (size_t i = 0; i < n; i++)
            t += Psi[i * m + a] * f[i];
        x[a] = t;
    }
    for (size_t i = 0; i < n; i++)
        vars[sys->qd[i]] = psi[i];
    if (eom_solve_symmetric(Gu, m, x, Gf, wk, e->perm) != 0) {
        eom_unpack_symmetric(Gu, m, Gf, m);
        return eom_singular(err, "matrix G = Psi^T M Psi", Gf, m, m, m);
    }
    if (eom_check_finite(x, m, "z'", err))
        return -1;
    for (size_t a = 0; a < m; a++)
        vars[sys->zd[a]] = x[a];
    for (size_t i = 0; i < n; i++) {
        double t = beta[i];
        for (size_t a = 0; a < m; a++)
            t += Psi[i * m + a] * x[a];
        if (!isfinite(t))
            return eom_check_finite(&t, 1, "q''", err);
        vars[sys->qdd[i]] = t;
    }
    eom_clear_lambda(e, vars);
    return 0;
}

/* ---- requirements -------------------------------------------------------- */

static int mag_check_psi(const eom_t *e, src_span_t where, diag_t *err)
{
    const nh_system_t *sys = e->sys;
    const char *meth = e->name;
    if (sys->m == 0)
        return diag_error(err, where,
                          "no speeds declared: %s needs `speed` declarations "
                          "and a `kinematic` equation q' = psi(q, z, t) for "
                          "every coordinate",
                          meth);
    if (!sys->psi)
        return diag_error(err, where,
                          "no kinematic equations: %s needs `kinematic %s' = "
                          "...` for every coordinate",
                          meth, sys->n ? sys->qname[0] : "q");
    for (size_t i = 0; i < sys->n; i++)
        if (!sys->psi[i])
            return diag_error(err, where,
                              "coordinate %s has no kinematic equation: %s "
                              "needs `kinematic %s' = ...` for every "
                              "coordinate",
                              sys->qname[i], meth, sys->qname[i]);
    bool *mask = eom_alloc(e->nvars, sizeof *mask);
    for (size_t i = 0; i < sys->n; i++) {
        mask[sys->qd[i]] = true;
        mask[sys->qdd[i]] = true;
    }
    for (size_t a = 0; a < sys->m; a++)
        mask[sys->zd[a]] = true;
    int rc = 0;
    for (size_t i = 0; i < sys->n && rc == 0; i++)
        if (expr_depends_any(sys->g, sys->psi[i], mask))
            rc = diag_error(err, sys->psi_span ? sys->psi_span[i] : where,
                            "the kinematic equation of %s depends on a "
                            "velocity: it must read %s' = psi(q, z, t)",
                            sys->qname[i], sys->qname[i]);
    free(mask);
    return rc;
}

/* A small deterministic generator for the sample points (no global
 * state: the caller holds the seed). */
static double mag_random(uint64_t *s, double lo, double hi)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = (double)(*s >> 11) * (1.0 / 9007199254740992.0);
    return lo + (hi - lo) * u;
}

/* C(q, ψ, t) = 0 for every constraint, checked at sample points.  The
 * first tape e->pre writes q' = ψ (maggi's, which its every call runs),
 * a second reads C and B there: substituting ψ would flatten its
 * products into every term (for the N-trailer, r·n substitutions of
 * O(N) nodes each).  The scale of each value is Σ_i |B_ai ψ_i|, its
 * velocity terms. */
static int mag_check_constraints(eom_t *e, diag_t *err)
{
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    size_t n = sys->n, r = sys->r;
    if (r == 0)
        return 0;
    size_t nout = r + r * n;
    const expr_t **outs = eom_alloc(nout, sizeof *outs);
    for (size_t a = 0; a < r; a++) {
        outs[a] = e->d.Ceff[a];
        for (size_t i = 0; i < n; i++)
            outs[r + a * n + i] = e->d.B[a * n + i];
    }
    tape_t *tp = tape_compile(g, outs, nout, e->nvars);
    if (!tp)
        abort();
    const double *qd = e->pre_out; /* ψ, after eom_run_pre */
    double *out = eom_alloc(nout, sizeof *out);
    double *work = eom_alloc(tape_work_size(tp), sizeof *work);
    double *vars = eom_alloc(e->nvars, sizeof *vars);
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    int rc = 0;
    for (int pt = 0; pt < 8 && rc == 0; pt++) {
        for (uint32_t v = 0; v < e->nvars; v++)
            vars[v] = mag_random(&seed, -1.0, 1.0);
        for (size_t i = 0; i < n; i++)
            vars[sys->q[i]] = mag_random(&seed, -1.3, 1.7);
        for (size_t p = 0; p < sys->np; p++)
            vars[sys->p[p]] = mag_random(&seed, 0.5, 1.5);
        vars[sys->t] = mag_random(&seed, 0.0, 1.0);
        eom_run_pre(e, vars);
        tape_eval(tp, vars, out, work);
        for (size_t a = 0; a < r && rc == 0; a++) {
            double scale = 1.0;
            for (size_t i = 0; i < n; i++)
                scale += fabs(out[r + a * n + i] * qd[i]);
            if (!isfinite(out[a]) || !isfinite(scale))
                continue; /* outside the model's domain: skip */
            if (fabs(out[a]) > 1e-8 * scale)
                rc = diag_error(err, sys->cspan[a],
                                "constraint %s does not hold for the "
                                "kinematic equations: C(q, psi(q, z, t), "
                                "t) = %.6g at a sample point",
                                sys->cname[a], out[a]);
        }
    }
    tape_free(tp);
    free(out);
    free(work);
    free(vars);
    free(outs);
    return rc;
}

/* maggi's G = ΨᵀMΨ (eq. 24) and rhs = Ψᵀ(−h − Mβ) (eq. 27) as nodes,
 * with M, h and β at the velocities q' (G full, m×m); sums built from
 * their terms at once (added one by one, a sum of k terms is copied k
 * times). */
static void mag_system(const eom_t *e, const expr_t *const *beta,
                       const expr_t **G, const expr_t **rhs)
{
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    size_t n = sys->n, m = sys->m;
    const expr_t *const *M = e->d.M;
    const expr_t **MPsi = eom_alloc(n * m, sizeof *MPsi);
    const expr_t **f = eom_alloc(n, sizeof *f);
    const expr_t **t = eom_alloc(n + 1, sizeof *t);
    for (size_t i = 0; i < n; i++) {
        for (size_t b = 0; b < m; b++) {
            for (size_t j = 0; j < n; j++)
                t[j] = expr_mul(g, M[i * n + j], e->Psi[j * m + b]);
            MPsi[i * m + b] = expr_sum(g, t, n);
        }
        t[0] = e->d.h[i];
        for (size_t j = 0; j < n; j++)
            t[1 + j] = expr_mul(g, M[i * n + j], beta[j]);
        f[i] = expr_neg(g, expr_sum(g, t, n + 1));
    }
    for (size_t a = 0; a < m; a++) {
        for (size_t b = a; b < m; b++) {
            for (size_t i = 0; i < n; i++)
                t[i] = expr_mul(g, e->Psi[i * m + a], MPsi[i * m + b]);
            G[a * m + b] = expr_sum(g, t, n);
            G[b * m + a] = G[a * m + b];
        }
        for (size_t i = 0; i < n; i++)
            t[i] = expr_mul(g, e->Psi[i * m + a], f[i]);
        rhs[a] = expr_sum(g, t, n);
    }
    free(MPsi);
    free(f);
    free(t);
}

/* The fast path (eom.h): G z' = rhs by nodes, q' = ψ, and
 * q'' = β + Ψ z' (Benenti eq. 22). */
static void mag_fast(eom_t *e, const expr_t *const *G,
                     const expr_t *const *rhs, const expr_t *const *beta)
{
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    size_t n = sys->n, m = sys->m, nval = n + m + n;
    const expr_t **A = eom_alloc(m * m, sizeof *A);
    const expr_t **b = eom_alloc(m, sizeof *b);
    const expr_t **diag = eom_alloc(m, sizeof *diag);
    const expr_t **piv = eom_alloc(m, sizeof *piv);
    const expr_t **z = eom_alloc(m, sizeof *z);
    const expr_t **val = eom_alloc(nval, sizeof *val);
    uint32_t *var = eom_alloc(nval, sizeof *var);
    memcpy(A, G, m * m * sizeof *A);
    memcpy(b, rhs, m * sizeof *b);
    eom_expand(g, A, m * m);
    eom_expand(g, b, m);
    for (size_t a = 0; a < m; a++)
        diag[a] = A[a * m + a];
    eom_ldlt_nodes(g, A, m, b, 1, piv, z);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        val[o] = sys->psi[i];
        var[o++] = sys->qd[i];
    }
    for (size_t a = 0; a < m; a++) {
        val[o] = z[a];
        var[o++] = sys->zd[a];
    }
    for (size_t i = 0; i < n; i++) {
        const expr_t *s = beta[i];
        for (size_t a = 0; a < m; a++)
            s = expr_add(g, s, expr_mul(g, e->Psi[i * m + a], z[a]));
        val[o] = s;
        var[o++] = sys->qdd[i];
    }
    size_t sizes[1] = {m};
    eom_fast_install(e, 1, sizes, diag, piv, val, var, nval, true);
    free(A);
    free(b);
    free(diag);
    free(piv);
    free(z);
    free(val);
    free(var);
}

/* ---- describe --------------------------------------------------------------- */

/* Rows Σ_b G_ab z_b' = rhs_a into ROWL, ROWR (m each). */
static void mag_rows(const eom_t *e, const expr_t *const *G,
                     const expr_t *const *rhs, const expr_t **rowl,
                     const expr_t **rowr)
{
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    size_t m = sys->m;
    const expr_t **t = eom_alloc(m + 1, sizeof *t);
    for (size_t a = 0; a < m; a++) {
        for (size_t b = 0; b < m; b++)
            t[b] = expr_mul(g, G[a * m + b], expr_var(g, sys->zd[b]));
        rowl[a] = expr_sum(g, t, m);
        rowr[a] = rhs[a];
    }
    free(t);
}



static char *maggi_describe(const eom_t *e, bool latex)
{
    const nh_system_t *sys = e->sys;
    eom_buf_t b = {0};
    if (e->method == EOM_MAGGI)
        eom_buf_heading(&b, latex,
                        "maggi (Benenti eq. 27): sum_b G_ab z_b' = "
                        "[Psi^T (-h - M beta)]_a, G = Psi^T M Psi, "
                        "at q' = psi");
    else
        eom_buf_heading(&b, latex,
                        "gibbs_appell (Benenti eqs. 66-68): dS/dz_a' = "
                        "sum_i Q_i Psi_ia, S %s; rows: sum_b G_ab z_b' = "
                        "sum_i Q_i Psi_ia - dS/dz_a'|z'=0",
                        e->S_particles ? "= 1/2 sum m |P''|^2 of the particles"
                                       : "= Benenti's quadratic form (eq. 68)");
    /* maggi's rows: G and rhs as nodes (its tape has M, h and β), at
     * the velocities q', shown with ψ in. */
    const expr_t **repl = NULL;
    const expr_t **rowl = e->rowl, **rowr = e->rowr;
    if (e->method == EOM_MAGGI) {
        size_t m = sys->m;
        const expr_t **G = eom_alloc(m * m + 1, sizeof *G);
        const expr_t **rhs = eom_alloc(m + 1, sizeof *rhs);
        rowl = eom_alloc(e->nrows, sizeof *rowl);
        rowr = eom_alloc(e->nrows, sizeof *rowr);
        memcpy(rowl, e->rowl, e->nrows * sizeof *rowl);
        memcpy(rowr, e->rowr, e->nrows * sizeof *rowr);
        mag_system(e, e->beta, G, rhs);
        mag_rows(e, G, rhs, rowl, rowr);
        free(G);
        free(rhs);
        repl = eom_subst_velocities(sys, sys->psi);
    }
    for (size_t i = 0; i < e->nrows; i++) {
        if (i == sys->m)
            eom_buf_heading(&b, latex, "kinematic equations:");
        const expr_t *l = rowl[i], *r = rowr[i];
        if (repl && i < sys->m) {
            l = expr_subst(sys->g, l, repl);
            r = expr_subst(sys->g, r, repl);
        }
        eom_buf_row(&b, sys->g, l, r, latex);
    }
    if (repl) {
        free(repl);
        free(rowl);
        free(rowr);
    }
    if (!b.s)
        eom_buf_puts(&b, "");
    return b.s;
}

/* ---- prepare ------------------------------------------------------------------ */

/* Whether gibbs_appell can build S from the particles. */
static bool mag_particle_form(const nh_system_t *sys)
{
    if (!sys->T || !sys->T_only_particles || sys->nparticles == 0)
        return false;
    if (!sys->V)
        return true;
    for (size_t i = 0; i < sys->n; i++)
        if (expr_depends(sys->g, sys->V, sys->qd[i]))
            return false; /* a velocity-dependent potential: use L */
    return true;
}

/* The Gibbs function S in the variables z' (see the file comment). */
static const expr_t *gibbs_function(eom_t *e, const expr_t *const *beta,
                                    const expr_t *const *Mt,
                                    const expr_t *const *repl,
                                    const expr_t *const *dvz)
{
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    size_t n = sys->n, m = sys->m;
    const expr_t *S = expr_num(g, 0.0);
    const expr_t *half = expr_num(g, 0.5);
    if (e->S_particles) {
        /* Benenti eq. 67 with the accelerations of eq. 22. */
        for (size_t p = 0; p < sys->nparticles; p++) {
            const nh_particle_t *P = &sys->particles[p];
            const expr_t *a2 = expr_num(g, 0.0);
            for (size_t c = 0; c < P->dim; c++) {
                const expr_t *v = expr_diff(g, P->pos[c], sys->t);
                for (size_t i = 0; i < n; i++)
                    v = expr_add(g, v, expr_mul(g,
                                                expr_diff(g, P->pos[c],
                                                          sys->q[i]),
                                                sys->psi[i]));
                const expr_t *acc = expr_dt(g, v, dvz);
                a2 = expr_add(g, a2, expr_mul(g, acc, acc));
            }
            S = expr_add(g, S, expr_mul(g, half, expr_mul(g, P->mass, a2)));
        }
        return S;
    }
    /* Eq. 68's quadratic form for a general L: ½ q''ᵀM q'' + h0ᵀ q''. */
    const expr_t **acc = eom_alloc(n, sizeof *acc);
    for (size_t i = 0; i < n; i++) {
        const expr_t *s = beta[i];
        for (size_t a = 0; a < m; a++)
            s = expr_add(g, s, expr_mul(g, e->Psi[i * m + a],
                                        expr_var(g, sys->zd[a])));
        acc[i] = s;
    }
    for (size_t i = 0; i < n; i++) {
        const expr_t *mi = expr_num(g, 0.0);
        for (size_t j = 0; j < n; j++)
            mi = expr_add(g, mi, expr_mul(g, Mt[i * n + j], acc[j]));
        const expr_t *term =
            expr_add(g, expr_mul(g, half, mi),
                     expr_subst(g, e->d.h0[i], repl));
        S = expr_add(g, S, expr_mul(g, acc[i], term));
    }
    free(acc);
    return S;
}

int eom_prepare_maggi(eom_t *e, src_span_t where, diag_t *err)
{
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    if (mag_check_psi(e, where, err) != 0)
        return -1;
    size_t n = sys->n, m = sys->m;
    /* q' = ψ: for the check below, and for each of maggi's calls */
    eom_compile_pre(e, sys->psi, sys->qd, n);
    if (mag_check_constraints(e, err) != 0)
        return -1;
    const expr_t **repl = eom_subst_velocities(sys, sys->psi);

    /* Ψ and β (Benenti eqs. 8, 22).  maggi reads M, h and β at the
     * velocities q', which its first tape sets to ψ (eom_run_pre):
     * substituted, ψ's products would be flattened into every term that
     * has a velocity (N³ operands for the N-trailer, whose ψ_i is a
     * product of i cosines).  gibbs_appell builds S through q' = ψ. */
    bool maggi = e->method == EOM_MAGGI;
    e->Psi = eom_alloc(n * m, sizeof *e->Psi);
    const expr_t **beta = eom_alloc(n, sizeof *beta);
    const expr_t **dv = eom_dvar(sys, maggi ? NULL : sys->psi);
    for (size_t i = 0; i < n; i++)
        for (size_t a = 0; a < m; a++)
            e->Psi[i * m + a] = expr_diff(g, sys->psi[i], sys->z[a]);
    eom_dt_forward(g, sys->psi, n, dv, beta); /* dv[z] = NULL */

    const expr_t **G = eom_alloc(m * m, sizeof *G);
    const expr_t **rhs = eom_alloc(m, sizeof *rhs);
    if (!maggi) {
        e->S_particles = mag_particle_form(sys);
        const expr_t **dvz = eom_dvar(sys, sys->psi);
        const expr_t **zd0 = eom_alloc(e->nvars, sizeof *zd0);
        for (size_t a = 0; a < m; a++) {
            dvz[sys->z[a]] = expr_var(g, sys->zd[a]);
            zd0[sys->zd[a]] = expr_num(g, 0.0);
        }
        /* M at q' = ψ, for the quadratic form of eq. 68 */
        const expr_t **Mt = eom_alloc(n * n, sizeof *Mt);
        for (size_t i = 0; i < n; i++)
            for (size_t j = i; j < n; j++) {
                Mt[i * n + j] = expr_subst(g, e->d.M[i * n + j], repl);
                Mt[j * n + i] = Mt[i * n + j];
            }
        e->S = gibbs_function(e, beta, Mt, repl, dvz);
        free(Mt);
        /* Q̃: all active forces (eq. 66); potential ones only when S came
         * from the particles (else they are in S through h0). */
        const expr_t **Qt = eom_alloc(n, sizeof *Qt);
        for (size_t i = 0; i < n; i++) {
            const expr_t *q = sys->Q[i];
            if (e->S_particles && sys->V)
                q = expr_sub(g, q, expr_diff(g, sys->V, sys->q[i]));
            Qt[i] = expr_subst(g, q, repl);
        }
        for (size_t a = 0; a < m; a++) {
            const expr_t *dS = expr_diff(g, e->S, sys->zd[a]);
            for (size_t b = a; b < m; b++) {
                G[a * m + b] = expr_diff(g, dS, sys->zd[b]);
                G[b * m + a] = G[a * m + b];
            }
            const expr_t *s = expr_neg(g, expr_subst(g, dS, zd0));
            for (size_t i = 0; i < n; i++)
                s = expr_add(g, s, expr_mul(g, Qt[i], e->Psi[i * m + a]));
            rhs[a] = s;
        }
        free(Qt);
        free(dvz);
        free(zd0);
    }

    size_t nu = mag_nupper(m), nun = mag_nupper(n);
    size_t nout = maggi ? n + nun + n + n + n * m : n + nu + m + n + n * m;
    const expr_t **outs = eom_alloc(nout, sizeof *outs);
    size_t o = 0;
    if (maggi) {
        /* q' = ψ by e->pre; M, h, β at q' and Ψ (maggi_compute_matrix) */
        for (size_t i = 0; i < n; i++)
            outs[o++] = expr_var(g, sys->qd[i]);
        for (size_t i = 0; i < n; i++)
            for (size_t j = i; j < n; j++)
                outs[o++] = e->d.M[i * n + j];
        for (size_t i = 0; i < n; i++)
            outs[o++] = e->d.h[i];
    } else {
        for (size_t i = 0; i < n; i++)
            outs[o++] = sys->psi[i];
        for (size_t a = 0; a < m; a++)
            for (size_t b = a; b < m; b++)
                outs[o++] = G[a * m + b];
        for (size_t a = 0; a < m; a++)
            outs[o++] = rhs[a];
    }
    for (size_t i = 0; i < n; i++)
        outs[o++] = beta[i];
    for (size_t i = 0; i < n * m; i++)
        outs[o++] = e->Psi[i];
    eom_compile(e, outs, nout);
    free(outs);
    bool small = m <= EOM_FAST_MAX && eom_fast_pays(e);
    /* maggi: G and its right side as nodes only for the fast path (and
     * for show: describe) */
    if (maggi && small)
        mag_system(e, beta, G, rhs);

    /* Rows for describe: Σ_b G_ab z_b' = rhs_a, then q_i' = ψ_i (maggi
     * builds the first m in maggi_describe, from e->beta). */
    e->nrows = m + n;
    e->rowl = eom_alloc(e->nrows, sizeof *e->rowl);
    e->rowr = eom_alloc(e->nrows, sizeof *e->rowr);
    if (!maggi)
        mag_rows(e, G, rhs, e->rowl, e->rowr);
    for (size_t i = 0; i < n; i++) {
        e->rowl[m + i] = expr_var(g, sys->qd[i]);
        e->rowr[m + i] = sys->psi[i];
    }

    eom_set_state(e, sys->z, sys->zd, m);
    if (maggi) {
        e->beta = eom_alloc(n, sizeof *e->beta);
        memcpy(e->beta, beta, n * sizeof *beta);
        eom_alloc_scratch(e, n * n + n + n * m + nu + m * m + 2 * m, m);
        e->compute = maggi_compute_matrix;
    } else {
        eom_alloc_scratch(e, m * m + 2 * m, m);
        e->compute = maggi_compute;
    }
    e->describe = maggi_describe;
    if (small) {
        /* One tape, so ψ goes in, and what cancels then does (the
         * sphere's maggi tape computes Lemos eq. 16). */
        if (maggi) {
            for (size_t k = 0; k < m * m; k++)
                G[k] = expr_subst(g, G[k], repl);
            for (size_t a = 0; a < m; a++)
                rhs[a] = expr_subst(g, rhs[a], repl);
            for (size_t i = 0; i < n; i++)
                beta[i] = expr_subst(g, beta[i], repl);
        }
        mag_fast(e, G, rhs, beta);
    }
    free(G);
    free(rhs);
    free(beta);
    free(dv);
    free(repl);
    return 0;
}
