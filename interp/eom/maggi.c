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
 * ψ is completed from the constraints where the user gave no kinematic
 * equation (kinematics.c): symbolically, and then the dependent ψ are
 * nodes like the given ones, or numerically: the first tape gives ψ_I and
 * the rows A q_D' + b0 = 0 of the constraints solved for the dependent
 * velocities, the compute step solves them, and Ψ_D, β_D follow from the
 * constraints differentiated along the motion, B q'' + c = 0 for every
 * z', i.e. B Ψ = 0 and B β + c = 0 (their q_D columns A, factored once).
 * maggi takes β_D from B β + c = 0 in the symbolic case too (solved by
 * ψ_D's blocks), gibbs_appell the derivative of ψ_D: the two agree.
 *
 * Declared constraints are checked against ψ at sample points:
 * C(q, ψ(q, z, t), t) must vanish (f' for a holonomic f).  For a small
 * system G z' = rhs is solved from nodes on the fast tape of common.c
 * (mag_fast).
 *
 * Kane's form (eom_kane): F_r + F*_r = 0 with F_r = Σ_i Q̃_i Ψ_ir and
 * F*_r = −Σ_i (M q'' + h0 − ∂V/∂q)_i Ψ_ir, q'' = β + Ψ z'.  That is
 * Kane and Levinson's F*_r = Σ −m a·∂v/∂u_r (− (I·α + ω×I·ω)·∂ω/∂u_r for a
 * body): for each particle m a·∂P/∂q_i = d/dt ∂T/∂q_i' − ∂T/∂q_i
 * (Lagrange's identity), the partial velocity is ∂v/∂z_r = Σ_i ∂P/∂q_i
 * Ψ_ir, and M q'' + h0 = d/dt ∂T/∂q' − ∂T/∂q + ∂V/∂q; the sum is Ψᵀ(Q −
 * M q'' − h) = 0, maggi's equation (eq. 27).
 *
 * Must not: allocate in the compute function; print.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"
#include "interp/eom/common.h"
#include "interp/eom/kinematics.h"
#include "interp/eom/linalg.h"
#include "interp/eom/methods.h"
#include "interp/expr/mag.h"

static size_t mag_nupper(size_t n) { return n * (n + 1) / 2; }

/* Whether the dependent velocities are finite: VAL holds ψ for every
 * coordinate (BY_COORD), or the solution of A (one per dependent one).
 * When one is not, the constraints solved for them are singular here, or
 * not defined: *err names it.  Returns 0 or -1. */
static int mag_kin_finite(const eom_t *e, const double *val, bool by_coord,
                          diag_t *err)
{
    const nh_system_t *sys = e->sys;
    size_t k = e->kin_k;
    for (size_t j = 0; j < k; j++) {
        double v = val[by_coord ? e->kin_dep[j] : j];
        if (isfinite(v))
            continue;
        char names[256];
        size_t len = 0;
        const size_t *rows = eom_kin_rows(e->kin);
        names[0] = '\0';
        for (size_t i = 0; i < k && len + 1 < sizeof names; i++) {
            int w = snprintf(names + len, sizeof names - len, "%s%s",
                             i ? ", " : "", sys->cname[rows[i]]);
            len = w < 0 ? len
                        : len + (size_t)w < sizeof names ? len + (size_t)w
                                                         : sizeof names - 1;
        }
        return diag_error(err, SRC_SPAN_NONE,
                          "%s' is not finite: the constraints it is solved "
                          "from (%s) do not determine the velocities "
                          "without a kinematic equation here, or are not "
                          "defined",
                          sys->qname[e->kin_dep[j]], names);
    }
    return 0;
}

/* q' = ψ into VARS: the first tape, and, for dependent velocities solved
 * at each evaluation, A q_D' = −b0 from its other outputs (A factored
 * into e->kin_lu for mag_kin_complete). */
static int mag_run_kin(eom_t *e, double *vars, diag_t *err)
{
    const nh_system_t *sys = e->sys;
    if (!e->kin_numeric && e->kin_k) {
        /* checked before they go into VARS, so that a caller that
         * looks at the state after the error sees the state, not the
         * velocities that failed */
        tape_eval(e->pre, vars, e->pre_out, e->pre_work);
        if (mag_kin_finite(e, e->pre_out, true, err))
            return -1;
        for (size_t i = 0; i < e->npre; i++)
            vars[e->pre_var[i]] = e->pre_out[i];
        return 0;
    }
    eom_run_pre(e, vars);
    if (!e->kin_numeric)
        return 0;
    size_t k = e->kin_k;
    const double *A = e->pre_out + e->npre, *b0 = A + k * k;
    double *lu = e->kin_lu, *x = e->kin_x, *wk = x + k;
    if (eom_check_finite(A, k * k + k,
                         "the constraints solved for the dependent "
                         "velocities",
                         err))
        return -1;
    memcpy(lu, A, k * k * sizeof *lu);
    if (linalg_lu(lu, k, e->kin_perm, LINALG_RTOL) != 0) {
        memcpy(lu, A, k * k * sizeof *lu);
        return eom_singular(err,
                            "matrix dC/dq' of the velocities without a "
                            "kinematic equation",
                            lu, k, k, k);
    }
    for (size_t i = 0; i < k; i++)
        x[i] = -b0[i];
    linalg_lu_solve(lu, k, e->kin_perm, x, wk);
    if (mag_kin_finite(e, x, false, err))
        return -1;
    for (size_t j = 0; j < k; j++)
        vars[sys->qd[e->kin_dep[j]]] = x[j];
    return 0;
}

/* Ψ_D and β_D of dependent velocities solved at each evaluation: the main
 * tape gives, after Ψ, c (k) and the independent columns of B (k × nI)
 * of the rows solved; B Ψ = 0 and B β + c = 0 with the factors of A. */
static void mag_kin_complete(eom_t *e, const double *extra, double *beta,
                             double *Psi)
{
    const nh_system_t *sys = e->sys;
    size_t n = sys->n, m = sys->m, k = e->kin_k, ni = n - k;
    const double *c = extra, *BI = extra + k;
    double *x = e->kin_x, *wk = x + k;
    for (size_t a = 0; a <= m; a++) {
        /* a < m: column a of Ψ; a == m: β */
        for (size_t i = 0; i < k; i++) {
            double s = a == m ? c[i] : 0.0;
            for (size_t l = 0; l < ni; l++) {
                size_t il = e->kin_ind[l];
                s += BI[i * ni + l] * (a == m ? beta[il] : Psi[il * m + a]);
            }
            x[i] = -s;
        }
        linalg_lu_solve(e->kin_lu, k, e->kin_perm, x, wk);
        for (size_t j = 0; j < k; j++) {
            size_t d = e->kin_dep[j];
            if (a == m)
                beta[d] = x[j];
            else
                Psi[d * m + a] = x[j];
        }
    }
}

/* The singular G: maggi's or the Gibbs function's. */
static const char *mag_g_name(const eom_t *e)
{
    return e->method == EOM_MAGGI
               ? "matrix G = Psi^T M Psi"
               : "matrix G = d2S/dz'dz' of the Gibbs function";
}

/* gibbs_appell's tape outputs: ψ (n), G upper, rhs (m), β (n), Ψ (n×m). */
static int maggi_compute(eom_t *e, double *vars, diag_t *err)
{
    const nh_system_t *sys = e->sys;
    size_t n = sys->n, m = sys->m, nu = mag_nupper(m);
    tape_eval(e->tape, vars, e->out, e->work);
    if (e->kin_k && mag_kin_finite(e, e->out, true, err))
        return -1;
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
        return eom_singular(err, mag_g_name(e), Gf, m, m, m);
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

/* maggi's tape outputs: q' (= ψ, set by e->pre), M upper, h, β, Ψ, and,
 * for dependent velocities solved at each evaluation, c and B's
 * independent columns of the rows solved (mag_kin_complete).
 * G = ΨᵀMΨ and Ψᵀ(−h − Mβ) (Benenti eqs. 24, 27) are formed here in
 * numbers: as nodes, each product M_ij·Ψ_ja would hold all the factors
 * of Ψ_ja (for the N-trailer ψ_i is a product of i cosines: N³ operands
 * for G), where the numbers cost n²·m per call.  gibbs_appell with
 * velocities solved at each evaluation uses it too, with ∂²S/∂q''∂q''
 * for M and ∂S/∂q''|q''=0 − Q̃ for h (see gibbs_numeric). */
static int maggi_compute_matrix(eom_t *e, double *vars, diag_t *err)
{
    const nh_system_t *sys = e->sys;
    size_t n = sys->n, m = sys->m, nun = mag_nupper(n), num = mag_nupper(m);
    size_t nkin = e->kin_numeric ? e->kin_k * (1 + n - e->kin_k) : 0;
    if (mag_run_kin(e, vars, err) != 0)
        return -1;
    tape_eval(e->tape, vars, e->out, e->work);
    if (eom_check_finite(e->out, n + nun + n + n + n * m + nkin,
                         "psi, M, h and beta", err))
        return -1;
    const double *psi = e->out, *Mu = psi + n, *h = Mu + nun;
    double *beta = e->out + n + nun + n, *Psi = beta + n;
    if (e->kin_numeric)
        mag_kin_complete(e, Psi + n * m, beta, Psi);
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
        return eom_singular(err, mag_g_name(e), Gf, m, m, m);
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

/* ---- derivatives --------------------------------------------------------- */

/* The derivatives of the two computes (eom_tangent).  Both end in
 * G z' = rhs and q'' = β + Ψ z' (Benenti eq. 22), so
 *   G dz' = drhs − dG z',   dq'' = dβ + dΨ z' + Ψ dz'.
 * gibbs_appell's tape gives G and rhs (and ψ, read with the substitution
 * q' = ψ already made); maggi's gives M, h, β at the velocities q',
 * which its first tape sets to ψ: the derivatives of ψ go into those
 * rows of DVARS before the second tape reads them.  There, with
 * E = M q'' + h at the solution (the constraint forces, not 0),
 * drhs − dG z' = −(dΨᵀE + Ψᵀ(dM q'' + M dβ + M dΨ z' + dh)). */
static int maggi_tangent(eom_t *e, double *vars, double *dvars, size_t k,
                         diag_t *err)
{
    const nh_system_t *sys = e->sys;
    /* the blocks after the first (eom_tangent): the values are in VARS,
     * G factored, E kept */
    if (!e->t_again && e->compute(e, vars, err) != 0)
        return -1;
    size_t n = sys->n, m = sys->m, nun = mag_nupper(n), num = mag_nupper(m);
    bool maggi = e->method == EOM_MAGGI;
    if (maggi)
        eom_tangent_pre(e, vars, dvars, k);
    eom_tangent_tape(e, vars, dvars, k);
    const double *out = e->t_out, *dout = e->t_dout;
    /* outputs: maggi q' M h β Ψ; gibbs_appell ψ G rhs β Ψ */
    size_t o_mid = n + (maggi ? nun + n : num + m);
    const double *Psi = out + o_mid + n;
    const double *dbeta = dout + o_mid * k, *dPsi = dbeta + n * k;
    /* what stays from block to block first, the right sides last */
    double *G = e->t_scratch, *E = G + m * m, *MPsi = E + n;
    double *zd = MPsi + n * m, *qdd = zd + m, *w = qdd + n;
    double *rhs = w + 2 * m;
    for (size_t a = 0; a < m; a++)
        zd[a] = vars[sys->zd[a]];
    for (size_t i = 0; i < n; i++)
        qdd[i] = vars[sys->qdd[i]];
    if (maggi) {
        const double *M = out + n, *h = M + nun;
        const double *dM = dout + n * k, *dh = dM + nun * k;
        for (size_t i = 0; i < n && !e->t_again; i++) {
            double s = h[i];
            for (size_t l = 0; l < n; l++)
                s += M[eom_upper_index(n, i, l)] * qdd[l];
            E[i] = s;
            for (size_t b = 0; b < m; b++) {
                double t = 0.0;
                for (size_t l = 0; l < n; l++)
                    t += M[eom_upper_index(n, i, l)] * Psi[l * m + b];
                MPsi[i * m + b] = t;
            }
        }
        for (size_t a = 0; a < m && !e->t_again; a++)
            for (size_t b = 0; b < m; b++) {
                double t = 0.0;
                for (size_t i = 0; i < n; i++)
                    t += Psi[i * m + a] * MPsi[i * m + b];
                G[a * m + b] = t;
            }
        for (size_t j = 0; j < k; j++) {
            /* F_i = dM q'' + M (dβ + dΨ z') + dh, row by row */
            for (size_t a = 0; a < m; a++)
                rhs[a * k + j] = 0.0;
            for (size_t i = 0; i < n; i++) {
                double f = dh[i * k + j];
                for (size_t l = 0; l < n; l++) {
                    double ddq = dbeta[l * k + j];
                    for (size_t b = 0; b < m; b++)
                        ddq += dPsi[(l * m + b) * k + j] * zd[b];
                    f += dM[eom_upper_index(n, i, l) * k + j] * qdd[l] +
                         M[eom_upper_index(n, i, l)] * ddq;
                }
                for (size_t a = 0; a < m; a++)
                    rhs[a * k + j] -= dPsi[(i * m + a) * k + j] * E[i] +
                                      Psi[i * m + a] * f;
            }
        }
    } else {
        const double *Gu = out + n, *dG = dout + n * k, *drhs = dG + num * k;
        for (size_t a = 0; a < m && !e->t_again; a++)
            for (size_t b = 0; b < m; b++)
                G[a * m + b] = Gu[eom_upper_index(m, a, b)];
        for (size_t a = 0; a < m; a++)
            for (size_t j = 0; j < k; j++) {
                double s = drhs[a * k + j];
                for (size_t b = 0; b < m; b++)
                    s -= dG[eom_upper_index(m, a, b) * k + j] * zd[b];
                rhs[a * k + j] = s;
            }
        /* q' = ψ: the tape's first outputs */
        for (size_t i = 0; i < n; i++)
            memcpy(dvars + (size_t)sys->qd[i] * k, dout + i * k,
                   k * sizeof *dvars);
    }
    if (eom_tangent_solve(e, G, m, rhs, k, w, e->t_perm,
                          maggi ? "matrix G = Psi^T M Psi"
                                : "matrix G = d2S/dz'dz' of the Gibbs function",
                          err) != 0)
        return -1;
    for (size_t a = 0; a < m; a++)
        memcpy(dvars + (size_t)sys->zd[a] * k, rhs + a * k,
               k * sizeof *dvars);
    for (size_t i = 0; i < n; i++) {
        double *d = dvars + (size_t)sys->qdd[i] * k;
        for (size_t j = 0; j < k; j++) {
            double s = dbeta[i * k + j];
            for (size_t b = 0; b < m; b++)
                s += dPsi[(i * m + b) * k + j] * zd[b] +
                     Psi[i * m + b] * rhs[b * k + j];
            d[j] = s;
        }
    }
    return 0;
}

/* ---- requirements -------------------------------------------------------- */

/* A small deterministic generator for the sample points (no global
 * state: the caller holds the seed). */
static double mag_random(uint64_t *s, double lo, double hi)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = (double)(*s >> 11) * (1.0 / 9007199254740992.0);
    return lo + (hi - lo) * u;
}

/* The first constraint that C(q, ψ, t) = 0 fails at one of 8 sample
 * points made by POINT (k from 0), as evaluated by the tape TP of
 * mag_check_constraints into OUT; its index, with its value in *BAD, or
 * r when every one holds.  *VALID: how many points could be evaluated
 * (the others are singular for the solve, or outside the domain). */
typedef void (*mag_point_fn)(const eom_t *e, double *vars, uint64_t *seed);

static size_t mag_failing(eom_t *e, tape_t *tp, double *out, double *work,
                          double *vars, mag_point_fn point, double *bad,
                          size_t *valid)
{
    const nh_system_t *sys = e->sys;
    size_t n = sys->n, r = sys->r;
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    *valid = 0;
    for (int pt = 0; pt < 8; pt++) {
        point(e, vars, &seed);
        diag_t ignored = {0};
        if (mag_run_kin(e, vars, &ignored) != 0)
            continue; /* singular for the solve, or outside the domain */
        tape_eval(tp, vars, out, work);
        bool any = false;
        for (size_t a = 0; a < r; a++) {
            double scale = 1.0;
            for (size_t i = 0; i < n; i++)
                scale += fabs(out[r + a * n + i] * vars[sys->qd[i]]);
            if (!isfinite(out[a]) || !isfinite(scale))
                continue; /* outside the model's domain: skip */
            any = true;
            if (fabs(out[a]) > 1e-8 * scale) {
                *bad = out[a];
                return a;
            }
        }
        *valid += any;
    }
    return r;
}

/* Sample points far from any state: every variable in [-1, 1], the
 * coordinates in [-1.3, 1.7], the parameters in [0.5, 1.5] (away from a
 * degenerate 0), t in [0, 1]. */
static void mag_point_wide(const eom_t *e, double *vars, uint64_t *seed)
{
    const nh_system_t *sys = e->sys;
    for (uint32_t v = 0; v < e->nvars; v++)
        vars[v] = mag_random(seed, -1.0, 1.0);
    for (size_t i = 0; i < sys->n; i++)
        vars[sys->q[i]] = mag_random(seed, -1.3, 1.7);
    for (size_t p = 0; p < sys->np; p++)
        vars[sys->p[p]] = mag_random(seed, 0.5, 1.5);
    vars[sys->t] = mag_random(seed, 0.0, 1.0);
}

/* Sample points near the state e->near (eom_prepare_at): coordinates
 * and t moved by at most EXPR_MAG_NEAR of (1 + |value|), as the lowering
 * judges a component near the state (mag.h); the speeds in [-1, 1], the
 * parameters at their values. */
static void mag_point_near(const eom_t *e, double *vars, uint64_t *seed)
{
    const nh_system_t *sys = e->sys;
    const double *b = e->near;
    for (uint32_t v = 0; v < e->nvars; v++)
        vars[v] = isfinite(b[v]) ? b[v] : 0.0;
    for (size_t i = 0; i < sys->n; i++) {
        double q = vars[sys->q[i]];
        vars[sys->q[i]] = q + EXPR_MAG_NEAR * (1 + fabs(q)) *
                                  mag_random(seed, -1.0, 1.0);
    }
    for (size_t a = 0; a < sys->m; a++)
        vars[sys->z[a]] = mag_random(seed, -1.0, 1.0);
    double t = vars[sys->t];
    vars[sys->t] = t + EXPR_MAG_NEAR * (1 + fabs(t)) *
                           mag_random(seed, -1.0, 1.0);
}

/* C(q, ψ, t) = 0 for every constraint, checked at sample points.  The
 * first tape e->pre writes q' = ψ (maggi's, which its every call runs),
 * a second reads C and B there: substituting ψ would flatten its
 * products into every term (for the N-trailer, r·n substitutions of
 * O(N) nodes each).  The scale of each value is Σ_i |B_ai ψ_i|, its
 * velocity terms.  The rows solved for the dependent velocities hold by
 * construction; any other that fails over-determines the velocities.
 * A constraint that fails far from the state but holds at every point
 * near it, when there is one (eom_prepare_at), holds where the motion
 * is: one written with sqrt, abs or norm (a contact whose height is
 * r*sin(theta), LANGUAGE.md §4.1) can hold on one side of a fold only;
 * an analytic one that fails somewhere fails near every state. */
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
        nh_out_of_memory();
    double *out = eom_alloc(nout, sizeof *out);
    double *work = eom_alloc(tape_work_size(tp), sizeof *work);
    double *vars = eom_alloc(e->nvars, sizeof *vars);
    double bad = 0, near_bad;
    size_t valid, near_valid;
    size_t a = mag_failing(e, tp, out, work, vars, mag_point_wide, &bad,
                           &valid);
    if (a < r && e->near &&
        mag_failing(e, tp, out, work, vars, mag_point_near, &near_bad,
                    &near_valid) == r &&
        near_valid > 0)
        a = r; /* it holds where the motion is */
    int rc = 0;
    if (a < r)
        rc = diag_error(err, sys->cspan[a],
                        "constraint %s does not hold for the kinematic "
                        "equations: C(q, psi(q, z, t), t) = %.6g at a "
                        "sample point%s",
                        sys->cname[a], bad,
                        e->kin_k ? " (with the velocities that have no "
                                   "kinematic equation solved from the "
                                   "other constraints: the kinematic "
                                   "equations and the constraints "
                                   "over-determine the velocities)"
                                 : "");
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
        val[o] = e->psi[i];
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
    /* The fast path pays when its one tape is about as short as what it
     * replaces: the full path's tapes and its numbers (G = ΨᵀMΨ, its
     * right side and its solve, some n²m + nm² operations).  ψ solved
     * from the constraints can make it far longer: the bicycle's Cramer
     * quotients, substituted into G and multiplied out, gave a fast tape
     * of 52383 instructions against 2877, 276 µs a call against 11 µs.
     * Then the full path alone is kept. */
    const expr_t **outs = eom_alloc(2 * m + nval, sizeof *outs);
    memcpy(outs, diag, m * sizeof *outs);
    memcpy(outs + m, piv, m * sizeof *outs);
    memcpy(outs + 2 * m, val, nval * sizeof *outs);
    tape_t *trial = tape_compile(g, outs, 2 * m + nval, e->nvars);
    if (!trial)
        nh_out_of_memory();
    size_t full = tape_length(e->tape) + (e->pre ? tape_length(e->pre) : 0) +
                  n * n * m + n * m * m;
    if (tape_length(trial) <= 2 * full) {
        size_t sizes[1] = {m};
        eom_fast_install(e, 1, sizes, diag, piv, val, var, nval, true);
    }
    tape_free(trial);
    free(outs);
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



void eom_maggi_rows(const eom_t *e, const expr_t **rowl, const expr_t **rowr)
{
    const nh_system_t *sys = e->sys;
    size_t m = sys->m;
    if (e->method != EOM_MAGGI) {
        memcpy(rowl, e->rowl, m * sizeof *rowl);
        memcpy(rowr, e->rowr, m * sizeof *rowr);
        return;
    }
    /* maggi's rows: G and rhs as nodes (its tape has M, h and β), at the
     * velocities q', shown with ψ in */
    const expr_t **G = eom_alloc(m * m + 1, sizeof *G);
    const expr_t **rhs = eom_alloc(m + 1, sizeof *rhs);
    mag_system(e, e->beta, G, rhs);
    mag_rows(e, G, rhs, rowl, rowr);
    const expr_t **repl = eom_subst_velocities(sys, e->psi);
    for (size_t a = 0; a < m; a++) {
        rowl[a] = expr_subst(sys->g, rowl[a], repl);
        rowr[a] = expr_subst(sys->g, rowr[a], repl);
    }
    free(repl);
    free(G);
    free(rhs);
}

static char *maggi_describe(const eom_t *e, bool latex)
{
    const nh_system_t *sys = e->sys;
    eom_buf_t b = eom_buf_start(e);
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
    if (e->kin_numeric)
        eom_buf_heading(&b, latex,
                        "the rows are formed at each evaluation: the "
                        "velocities without a kinematic equation are solved "
                        "from the constraints numerically (show kinematics)");
    size_t m = sys->m;
    const expr_t **rowl = eom_alloc(m + 1, sizeof *rowl);
    const expr_t **rowr = eom_alloc(m + 1, sizeof *rowr);
    size_t first = e->kin_numeric ? m : 0;
    if (!e->kin_numeric)
        eom_maggi_rows(e, rowl, rowr);
    for (size_t i = first; i < e->nrows; i++) {
        if (i == m)
            eom_buf_heading(&b, latex, "kinematic equations:");
        if (i < m)
            eom_buf_row(&b, sys->g, rowl[i], rowr[i], latex);
        else
            eom_buf_row(&b, sys->g, e->rowl[i], e->rowr[i], latex);
    }
    if (e->kin_k)
        eom_buf_heading(&b, latex,
                        "and the velocities without a kinematic equation, "
                        "from the constraints (show kinematics)");
    free(rowl);
    free(rowr);
    return eom_buf_finish(&b, latex);
}

/* ---- Kane's form ------------------------------------------------------------ */

int eom_kane(const eom_t *e, const expr_t **Fr, const expr_t **Frs,
             bool *potential_in_inertia, diag_t *err)
{
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    size_t n = sys->n, m = sys->m;
    if (e->method != EOM_MAGGI && e->method != EOM_GIBBS_APPELL)
        return diag_error(err, SRC_SPAN_NONE,
                          "Kane's form needs the equations on speeds "
                          "(maggi, gibbs_appell)");
    if (e->kin_numeric)
        return diag_error(err, SRC_SPAN_NONE,
                          "Kane's form is shown in closed form, but the "
                          "velocities without a kinematic equation are "
                          "solved numerically at each evaluation (%zu of "
                          "them depend on each other, more than %d)",
                          eom_kin_largest_block(e->kin), EOM_KIN_BLOCK_MAX);
    bool keep = expr_graph_keep_domains(g, false);
    /* V goes to the active forces when it is a function of (q, t); with
     * `lagrangian` (or a velocity-dependent V) it stays in h0. */
    bool *vmask = eom_velocity_mask(sys);
    bool vpot = sys->V && !expr_depends_any(g, sys->V, vmask);
    free(vmask);
    *potential_in_inertia = !vpot && (sys->V || !sys->T);
    const expr_t **repl = eom_subst_velocities(sys, e->psi);
    const expr_t **dv = eom_dvar(sys, NULL);
    const expr_t **beta = eom_alloc(n, sizeof *beta);
    const expr_t **acc = eom_alloc(n, sizeof *acc);
    const expr_t **Ei = eom_alloc(n, sizeof *Ei);
    const expr_t **Qt = eom_alloc(n, sizeof *Qt);
    const expr_t **t = eom_alloc(n + m + 2, sizeof *t);
    if (e->beta) /* maggi's: β_D from the constraints differentiated */
        memcpy(beta, e->beta, n * sizeof *beta);
    else
        eom_dt_forward(g, e->psi, n, dv, beta); /* along q', z fixed */
    for (size_t i = 0; i < n; i++) {
        /* q'' = β + Ψ z' (Benenti eq. 22) */
        t[0] = beta[i];
        for (size_t a = 0; a < m; a++)
            t[1 + a] = expr_mul(g, e->Psi[i * m + a],
                                expr_var(g, sys->zd[a]));
        acc[i] = expr_sum(g, t, m + 1);
    }
    for (size_t i = 0; i < n; i++) {
        const expr_t *dV = vpot ? expr_diff(g, sys->V, sys->q[i]) : NULL;
        for (size_t j = 0; j < n; j++)
            t[j] = expr_mul(g, e->d.M[i * n + j], acc[j]);
        t[n] = e->d.h0[i];
        t[n + 1] = dV ? expr_neg(g, dV) : expr_num(g, 0.0);
        Ei[i] = expr_sum(g, t, n + 2);
        Qt[i] = dV ? expr_sub(g, sys->Q[i], dV) : sys->Q[i];
    }
    for (size_t r = 0; r < m; r++) {
        for (size_t i = 0; i < n; i++)
            t[i] = expr_mul(g, Qt[i], e->Psi[i * m + r]);
        Fr[r] = expr_subst(g, expr_sum(g, t, n), repl);
        for (size_t i = 0; i < n; i++)
            t[i] = expr_mul(g, Ei[i], e->Psi[i * m + r]);
        Frs[r] = expr_subst(g, expr_neg(g, expr_sum(g, t, n)), repl);
    }
    free(repl);
    free(dv);
    free(beta);
    free(acc);
    free(Ei);
    free(Qt);
    free(t);
    expr_graph_keep_domains(g, keep);
    return 0;
}

char *eom_describe_kane(const eom_t *e, bool latex)
{
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    size_t m = sys->m;
    const expr_t **Fr = eom_alloc(m + 1, sizeof *Fr);
    const expr_t **Frs = eom_alloc(m + 1, sizeof *Frs);
    bool vin = false;
    diag_t err = {0};
    eom_buf_t b = eom_buf_start(e);
    if (eom_kane(e, Fr, Frs, &vin, &err) != 0) {
        free(Fr);
        free(Frs);
        return NULL;
    }
    eom_buf_heading(&b, latex,
                    "Kane's equations F_r + F*_r = 0, for each speed r: "
                    "F_r = sum_i Q_i Psi_ir, the generalized active force "
                    "(%s), F*_r = -sum_i (M q'' + h)_i Psi_ir, the "
                    "generalized inertia force, at q' = psi, "
                    "q'' = beta + Psi z'",
                    vin ? "the potential of the lagrangian is in F*_r"
                        : "potential forces included");
    for (size_t r = 0; r < m; r++) {
        char *zl = expr_to_latex(g, expr_var(g, sys->z[r]));
        char text[256], tex[256];
        snprintf(text, sizeof text, "F_%s", sys->zname[r]);
        snprintf(tex, sizeof tex, "F_{%s}", zl);
        eom_buf_object(&b, g, text, tex, Fr[r], latex);
        snprintf(text, sizeof text, "F*_%s", sys->zname[r]);
        snprintf(tex, sizeof tex, "F^{*}_{%s}", zl);
        eom_buf_object(&b, g, text, tex, Frs[r], latex);
        free(zl);
    }
    free(Fr);
    free(Frs);
    return eom_buf_finish(&b, latex);
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
                                                e->psi[i]));
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

static void mag_release(eom_t *e)
{
    eom_kin_free(e->kin);
    free(e->kin_ind);
    free(e->kin_lu);
    free(e->kin_x);
    free(e->kin_perm);
}

/* The first tape when the dependent velocities are solved at each
 * evaluation: ψ_I into q_I', then A (k×k) and b0 (k) for mag_run_kin. */
static void mag_compile_kin(eom_t *e)
{
    const nh_system_t *sys = e->sys;
    size_t n = sys->n, k = e->kin_k, ni = n - k;
    const expr_t *const *A = eom_kin_matrix(e->kin);
    const expr_t *const *b0 = eom_kin_offset(e->kin);
    const expr_t **outs = eom_alloc(ni + k * k + k, sizeof *outs);
    uint32_t *var = eom_alloc(ni + 1, sizeof *var);
    e->kin_ind = eom_alloc(ni + 1, sizeof *e->kin_ind);
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        if (e->psi[i]) {
            e->kin_ind[o] = i;
            var[o] = sys->qd[i];
            outs[o++] = e->psi[i];
        }
    for (size_t i = 0; i < k * k; i++)
        outs[o++] = A[i];
    for (size_t i = 0; i < k; i++)
        outs[o++] = b0[i];
    eom_compile_pre(e, outs, var, ni, o);
    e->kin_lu = eom_alloc(k * k, sizeof *e->kin_lu);
    e->kin_x = eom_alloc(2 * k, sizeof *e->kin_x);
    e->kin_perm = eom_alloc(k, sizeof *e->kin_perm);
    free(outs);
    free(var);
}

/* gibbs_appell with the dependent velocities solved at each evaluation:
 * ψ_D is no node to build S through, so S is built in the accelerations
 * q'' (the particles' P'' = d/dt P' along q', q''), and z' enters through
 * q'' = β + Ψ z' in numbers: ∂S/∂z' = Ψᵀ ∂S/∂q'', and S being quadratic
 * in q'', G = Ψᵀ W Ψ and the right side Ψᵀ(Q̃ − W β − s0) with
 * W = ∂²S/∂q''∂q'' and s0 = ∂S/∂q''|q''=0 — maggi's computation with W
 * for M and s0 − Q̃ for h.  In eq. 68's form S = ½ q''ᵀM q'' + h0ᵀ q'',
 * so W = M and s0 − Q = h.  W full (n×n), HL (n). */
static void gibbs_numeric(eom_t *e, const expr_t **W, const expr_t **HL)
{
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    size_t n = sys->n;
    if (!e->S_particles) {
        memcpy(W, e->d.M, n * n * sizeof *W);
        memcpy(HL, e->d.h, n * sizeof *HL);
        return;
    }
    const expr_t **dv1 = eom_dvar(sys, NULL);
    const expr_t **dv2 = eom_dvar(sys, NULL);
    const expr_t **zero = eom_alloc(e->nvars, sizeof *zero);
    for (size_t i = 0; i < n; i++) {
        dv2[sys->qd[i]] = expr_var(g, sys->qdd[i]);
        zero[sys->qdd[i]] = expr_num(g, 0.0);
    }
    const expr_t *S = expr_num(g, 0.0), *half = expr_num(g, 0.5);
    for (size_t p = 0; p < sys->nparticles; p++) {
        const nh_particle_t *P = &sys->particles[p];
        const expr_t *a2 = expr_num(g, 0.0);
        for (size_t c = 0; c < P->dim; c++) {
            const expr_t *acc = expr_dt(g, expr_dt(g, P->pos[c], dv1), dv2);
            a2 = expr_add(g, a2, expr_mul(g, acc, acc));
        }
        S = expr_add(g, S, expr_mul(g, half, expr_mul(g, P->mass, a2)));
    }
    e->S = S;
    for (size_t i = 0; i < n; i++) {
        const expr_t *dS = expr_diff(g, S, sys->qdd[i]);
        for (size_t j = i; j < n; j++) {
            W[i * n + j] = expr_diff(g, dS, sys->qdd[j]);
            W[j * n + i] = W[i * n + j];
        }
        const expr_t *q = sys->Q[i];
        if (sys->V)
            q = expr_sub(g, q, expr_diff(g, sys->V, sys->q[i]));
        HL[i] = expr_sub(g, expr_subst(g, dS, zero), q);
    }
    free(dv1);
    free(dv2);
    free(zero);
}

int eom_prepare_maggi(eom_t *e, src_span_t where, diag_t *err)
{
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    e->kin = eom_kin_new(sys, e->name, e->kin_block_max, where, err);
    if (!e->kin)
        return -1;
    e->release = mag_release;
    e->psi = eom_kin_psi(e->kin);
    e->kin_k = eom_kin_dependent(e->kin, &e->kin_dep);
    e->kin_numeric = eom_kin_mode(e->kin) == EOM_KIN_NUMERIC;
    size_t n = sys->n, m = sys->m, k = e->kin_k, ni = n - k;
    bool numeric = e->kin_numeric;
    /* q' = ψ: for the check below, and for each of maggi's calls */
    if (numeric)
        mag_compile_kin(e);
    else
        eom_compile_pre(e, e->psi, sys->qd, n, n);
    if (mag_check_constraints(e, err) != 0)
        return -1;
    const expr_t **repl = eom_subst_velocities(sys, e->psi);
    /* ψ with 0 for the velocities solved at each evaluation: their Ψ and
     * β rows are the compute step's (mag_kin_complete) */
    const expr_t **psi0 = eom_alloc(n, sizeof *psi0);
    for (size_t i = 0; i < n; i++)
        psi0[i] = e->psi[i] ? e->psi[i] : expr_num(g, 0.0);

    /* Ψ and β (Benenti eqs. 8, 22).  maggi reads M, h and β at the
     * velocities q', which its first tape sets to ψ (eom_run_pre):
     * substituted, ψ's products would be flattened into every term that
     * has a velocity (N³ operands for the N-trailer, whose ψ_i is a
     * product of i cosines).  gibbs_appell builds S through q' = ψ, or,
     * with velocities solved at each evaluation, as maggi reads M. */
    bool maggi = e->method == EOM_MAGGI, matrix = maggi || numeric;
    e->Psi = eom_alloc(n * m, sizeof *e->Psi);
    const expr_t **beta = eom_alloc(n, sizeof *beta);
    const expr_t **dv = eom_dvar(sys, matrix ? NULL : e->psi);
    for (size_t i = 0; i < n; i++)
        for (size_t a = 0; a < m; a++)
            e->Psi[i * m + a] = expr_diff(g, psi0[i], sys->z[a]);
    /* maggi: β_D of velocities solved symbolically from the constraints
     * differentiated, B β + c = 0, by the blocks ψ_D was solved by — not
     * the derivative of ψ_D's Cramer quotients: the bicycle's tape 1338
     * instructions instead of 1637 (a right-hand side 2.8 µs instead of
     * 4.7), its shown rows 9 % shorter.  gibbs_appell keeps the
     * derivative of ψ_D: a second road, which the tests compare with
     * this one. */
    bool implicit = maggi && !numeric && e->kin_k;
    const expr_t **psiI = eom_alloc(n, sizeof *psiI);
    for (size_t i = 0; i < n; i++)
        psiI[i] = implicit && !sys->psi[i] ? expr_num(g, 0.0) : psi0[i];
    eom_dt_forward(g, psiI, n, dv, beta); /* dv[z] = NULL */
    free(psiI);
    if (implicit) {
        eom_derive_c(sys, &e->d);
        eom_kin_beta(e->kin, e->d.B, e->d.c, beta);
    }

    const expr_t **G = eom_alloc(m * m, sizeof *G);
    const expr_t **rhs = eom_alloc(m, sizeof *rhs);
    const expr_t **W = NULL, **HL = NULL;
    if (!maggi && numeric) {
        e->S_particles = mag_particle_form(sys);
        W = eom_alloc(n * n, sizeof *W);
        HL = eom_alloc(n, sizeof *HL);
        gibbs_numeric(e, W, HL);
    } else if (!maggi) {
        e->S_particles = mag_particle_form(sys);
        const expr_t **dvz = eom_dvar(sys, e->psi);
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
    size_t nkin = numeric ? k + k * ni : 0;
    size_t nout = matrix ? n + nun + n + n + n * m + nkin
                         : n + nu + m + n + n * m;
    const expr_t **outs = eom_alloc(nout, sizeof *outs);
    size_t o = 0;
    if (matrix) {
        /* q' = ψ by e->pre; M, h, β at q' and Ψ (maggi_compute_matrix) */
        const expr_t *const *Mx = W ? W : e->d.M;
        const expr_t *const *hx = HL ? HL : e->d.h;
        for (size_t i = 0; i < n; i++)
            outs[o++] = expr_var(g, sys->qd[i]);
        for (size_t i = 0; i < n; i++)
            for (size_t j = i; j < n; j++)
                outs[o++] = Mx[i * n + j];
        for (size_t i = 0; i < n; i++)
            outs[o++] = hx[i];
    } else {
        for (size_t i = 0; i < n; i++)
            outs[o++] = e->psi[i];
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
    if (numeric) {
        /* c and the independent columns of B of the rows solved */
        const size_t *rows = eom_kin_rows(e->kin);
        const expr_t **dvq = eom_dvar(sys, NULL);
        for (size_t i = 0; i < k; i++)
            outs[o++] = expr_dt(g, e->d.Ceff[rows[i]], dvq);
        for (size_t i = 0; i < k; i++)
            for (size_t l = 0; l < ni; l++)
                outs[o++] = e->d.B[rows[i] * n + e->kin_ind[l]];
        free(dvq);
    }
    eom_compile(e, outs, nout);
    free(outs);
    bool small = !numeric && m <= EOM_FAST_MAX && eom_fast_pays(e);
    /* maggi: G and its right side as nodes only for the fast path (and
     * for show: describe) */
    if (maggi && small)
        mag_system(e, beta, G, rhs);

    /* Rows for describe: Σ_b G_ab z_b' = rhs_a, then q_i' = ψ_i for the
     * given ψ (maggi builds the first m in maggi_describe, from e->beta;
     * none when the velocities are solved at each evaluation). */
    e->nrows = m + ni;
    e->rowl = eom_alloc(e->nrows, sizeof *e->rowl);
    e->rowr = eom_alloc(e->nrows, sizeof *e->rowr);
    if (!matrix)
        mag_rows(e, G, rhs, e->rowl, e->rowr);
    for (size_t i = 0, r = m; i < n; i++)
        if (sys->psi[i]) {
            e->rowl[r] = expr_var(g, sys->qd[i]);
            e->rowr[r++] = sys->psi[i];
        }

    eom_set_state(e, sys->z, sys->zd, m);
    if (matrix) {
        if (maggi) {
            e->beta = eom_alloc(n, sizeof *e->beta);
            memcpy(e->beta, beta, n * sizeof *beta);
        }
        eom_alloc_scratch(e, n * n + n + n * m + nu + m * m + 2 * m, m);
        e->compute = maggi_compute_matrix;
    } else {
        eom_alloc_scratch(e, m * m + 2 * m, m);
        e->compute = maggi_compute;
    }
    e->describe = maggi_describe;
    e->tangent = maggi_tangent;
    if (small) {
        /* One tape, so ψ goes in, and what cancels then does (the
         * sphere's maggi tape computes Lemos eq. 16). */
        if (maggi) {
            for (size_t k2 = 0; k2 < m * m; k2++)
                G[k2] = expr_subst(g, G[k2], repl);
            for (size_t a = 0; a < m; a++)
                rhs[a] = expr_subst(g, rhs[a], repl);
            for (size_t i = 0; i < n; i++)
                beta[i] = expr_subst(g, beta[i], repl);
        }
        mag_fast(e, G, rhs, beta);
    }
    free(G);
    free(rhs);
    free(W);
    free(HL);
    free(beta);
    free(psi0);
    free(dv);
    free(repl);
    return 0;
}
