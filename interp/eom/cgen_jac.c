/*
 * cgen_jac.c — the exact Jacobian of the generated right-hand side, as C
 * text (cgen.h cgen_text with `jacobian`, for `export python`,
 * LANGUAGE.md §8.2).
 *
 * J = ∂f/∂y of y' = f(t, y) is what eom_tangent computes with one
 * direction per state entry (the implicit integrators' Jacobian): the
 * tapes' forward-mode derivatives (the nh_tan_main and nh_tan_pre that
 * the file carries already, cgen.c cgen_tangents) and the method's dense
 * solve differentiated implicitly.  The algebra after the tapes is
 * written here as a port of the family's tangent function, in its order:
 *
 *   lagrange, multipliers, second_kind   mult.c     mult_tangent
 *   voronec, naive                       voronec.c  voronec_tangent
 *   maggi, gibbs_appell                  maggi.c    maggi_tangent
 *
 * with a plain LU with partial pivoting of its own (nh_jac_lu: the
 * helpers of cgen.c are written only when the compute step needs them).
 * The values the derivatives are taken at (q'', λ, z', the derived
 * velocities) come from nh_compute, as eom_tangent's from the compute.
 * A change to one of those tangent functions must be made here too;
 * tests/export_python.sh compares the Jacobian with central differences
 * of the right-hand side on every method of the sphere and the bicycle.
 *
 * Must not: print; change the eom_t.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"
#include "interp/eom/cgen_jac.h"
#include "interp/eom/common.h"
#include "interp/expr/tape.h"

/* "static const int NAME[] = {a, b, …};" of COUNT variables or indices. */
static void jac_ints(strbuf_t *b, const char *name, const uint32_t *v32,
                     const size_t *vz, size_t count)
{
    strbuf_addf(b, "    static const int %s[%zu] = {", name,
                count ? count : 1);
    for (size_t k = 0; k < count; k++)
        strbuf_addf(b, "%s%s%lu", k ? "," : "", k % 16 == 15 ? "\n        "
                                                              : "",
                    (unsigned long)(v32 ? v32[k] : vz[k]));
    strbuf_add(b, count ? "};\n" : "0};\n");
}

/* The LU of the algebra (linalg.c's order is not needed: the Jacobian is
 * compared with differences, not bit for bit). */
static const char jac_lu[] =
    "/* A = LU with partial pivoting, in place (row-major n x n, perm the\n"
    " * rows); -1 when a pivot is 0 or not finite. */\n"
    "static int nh_jac_lu(double *a, int n, int *perm)\n"
    "{\n"
    "    int i, j, k;\n"
    "    for (k = 0; k < n; k++)\n"
    "        perm[k] = k;\n"
    "    for (k = 0; k < n; k++) {\n"
    "        int p = k;\n"
    "        double best = fabs(a[k * n + k]);\n"
    "        for (i = k + 1; i < n; i++)\n"
    "            if (fabs(a[i * n + k]) > best) {\n"
    "                best = fabs(a[i * n + k]);\n"
    "                p = i;\n"
    "            }\n"
    "        if (!(best > 0) || !isfinite(best))\n"
    "            return -1;\n"
    "        if (p != k) {\n"
    "            int s = perm[k];\n"
    "            perm[k] = perm[p];\n"
    "            perm[p] = s;\n"
    "            for (j = 0; j < n; j++) {\n"
    "                double t = a[k * n + j];\n"
    "                a[k * n + j] = a[p * n + j];\n"
    "                a[p * n + j] = t;\n"
    "            }\n"
    "        }\n"
    "        for (i = k + 1; i < n; i++) {\n"
    "            double f = a[i * n + k] / a[k * n + k];\n"
    "            a[i * n + k] = f;\n"
    "            for (j = k + 1; j < n; j++)\n"
    "                a[i * n + j] -= f * a[k * n + j];\n"
    "        }\n"
    "    }\n"
    "    return 0;\n"
    "}\n\n"
    "/* Solves LU X = P B for the K columns of B (n rows of k), W n doubles. */\n"
    "static void nh_jac_solve(const double *lu, int n, const int *perm,\n"
    "                         double *b, int k, double *w)\n"
    "{\n"
    "    int i, j, c;\n"
    "    for (c = 0; c < k; c++) {\n"
    "        for (i = 0; i < n; i++)\n"
    "            w[i] = b[perm[i] * k + c];\n"
    "        for (i = 0; i < n; i++)\n"
    "            for (j = 0; j < i; j++)\n"
    "                w[i] -= lu[i * n + j] * w[j];\n"
    "        for (i = n - 1; i >= 0; i--) {\n"
    "            for (j = i + 1; j < n; j++)\n"
    "                w[i] -= lu[i * n + j] * w[j];\n"
    "            w[i] /= lu[i * n + i];\n"
    "        }\n"
    "        for (i = 0; i < n; i++)\n"
    "            b[i * k + c] = w[i];\n"
    "    }\n"
    "}\n\n"
    "/* eom_upper_index: the packed upper triangle's entry (i, j). */\n"
    "static int nh_jac_up(int n, int i, int j)\n"
    "{\n"
    "    if (i > j) {\n"
    "        int t = i;\n"
    "        i = j;\n"
    "        j = t;\n"
    "    }\n"
    "    return i * (2 * n - i + 1) / 2 + (j - i);\n"
    "}\n\n";

/* mult.c mult_tangent: K du = −(dK u − db), K = [M −Bᵀ; B 0]. */
static void jac_mult(const eom_t *e, strbuf_t *b)
{
    const nh_system_t *sys = e->sys;
    size_t n = sys->n, r = e->method == EOM_LAGRANGE ? 0 : sys->r;
    strbuf_addf(b, "    enum { NQ = %zu, NR = %zu, NT = %zu, NU = %zu };\n",
                n, r, n + r, n * (n + 1) / 2);
    jac_ints(b, "qdd", sys->qdd, NULL, n);
    jac_ints(b, "lam", sys->lam, NULL, r);
    strbuf_add(
        b,
        "    const double *M = o, *B = M + NU + NQ;\n"
        "    const double *dM = dout, *dh = dM + NU * NK, *dB = dh + NQ * NK;\n"
        "    const double *dc = dB + NR * NQ * NK;\n"
        "    double *Km = scr, *rhs = Km + NT * NT, *u = rhs + NT * NK;\n"
        "    double *wk = u + NT;\n"
        "    int perm[NT + 1], i, l, a, bb, j;\n"
        "    (void)B;\n    (void)dB;\n    (void)dc;\n    (void)lam;\n    (void)bb;\n"
        "    (void)a;\n"
        "    for (i = 0; i < NQ; i++) {\n"
        "        for (l = 0; l < NQ; l++)\n"
        "            Km[i * NT + l] = M[nh_jac_up(NQ, i, l)];\n"
        "        for (a = 0; a < NR; a++) {\n"
        "            Km[i * NT + NQ + a] = -B[a * NQ + i];\n"
        "            Km[(NQ + a) * NT + i] = B[a * NQ + i];\n"
        "        }\n"
        "        u[i] = v[qdd[i]];\n"
        "    }\n"
        "    for (a = 0; a < NR; a++) {\n"
        "        for (bb = 0; bb < NR; bb++)\n"
        "            Km[(NQ + a) * NT + NQ + bb] = 0.0;\n"
        "        u[NQ + a] = v[lam[a]];\n"
        "    }\n"
        "    if (nh_jac_lu(Km, NT, perm) != 0)\n"
        "        goto fail;\n"
        "    for (j = 0; j < NK; j++) {\n"
        "        for (i = 0; i < NQ; i++) {\n"
        "            double s = dh[i * NK + j];\n"
        "            for (l = 0; l < NQ; l++)\n"
        "                s += dM[nh_jac_up(NQ, i, l) * NK + j] * u[l];\n"
        "            for (a = 0; a < NR; a++)\n"
        "                s -= dB[(a * NQ + i) * NK + j] * u[NQ + a];\n"
        "            rhs[i * NK + j] = -s;\n"
        "        }\n"
        "        for (a = 0; a < NR; a++) {\n"
        "            double s = dc[a * NK + j];\n"
        "            for (i = 0; i < NQ; i++)\n"
        "                s += dB[(a * NQ + i) * NK + j] * u[i];\n"
        "            rhs[(NQ + a) * NK + j] = -s;\n"
        "        }\n"
        "    }\n"
        "    nh_jac_solve(Km, NT, perm, rhs, NK, wk);\n"
        "    for (i = 0; i < NQ; i++)\n"
        "        for (j = 0; j < NK; j++)\n"
        "            dv[qdd[i] * NK + j] = rhs[i * NK + j];\n"
        "    for (a = 0; a < NR; a++)\n"
        "        for (j = 0; j < NK; j++)\n"
        "            dv[lam[a] * NK + j] = rhs[(NQ + a) * NK + j];\n");
}

/* voronec.c voronec_tangent: M̄ dx = −(dM̄ x + dh̄), the dependent
 * velocities from the tape, dq_ν'' = dw_ν + Σ_j (da_νj x_j + a_νj dx_j). */
static void jac_voronec(const eom_t *e, strbuf_t *b)
{
    const nh_system_t *sys = e->sys;
    size_t kd = e->k, mi = e->mi;
    uint32_t *qdd_ind = xcalloc(mi + 1, sizeof *qdd_ind);
    uint32_t *qd_dep = xcalloc(kd + 1, sizeof *qd_dep);
    uint32_t *qdd_dep = xcalloc(kd + 1, sizeof *qdd_dep);
    for (size_t i = 0; i < mi; i++)
        qdd_ind[i] = sys->qdd[e->ind[i]];
    for (size_t v = 0; v < kd; v++) {
        qd_dep[v] = sys->qd[e->dep[v]];
        qdd_dep[v] = sys->qdd[e->dep[v]];
    }
    strbuf_addf(b, "    enum { KD = %zu, MI = %zu, NU = %zu };\n", kd, mi,
                mi * (mi + 1) / 2);
    jac_ints(b, "qdd_ind", qdd_ind, NULL, mi);
    jac_ints(b, "qd_dep", qd_dep, NULL, kd);
    jac_ints(b, "qdd_dep", qdd_dep, NULL, kd);
    free(qdd_ind);
    free(qd_dep);
    free(qdd_dep);
    strbuf_add(
        b,
        "    const double *Mu = o + KD, *a = Mu + NU + MI;\n"
        "    const double *dvdep = dout, *dM = dvdep + KD * NK;\n"
        "    const double *dh = dM + NU * NK, *da = dh + MI * NK;\n"
        "    const double *dw = da + KD * MI * NK;\n"
        "    double *A = scr, *x = A + MI * MI, *dx = x + MI, *wk = dx + MI * NK;\n"
        "    int perm[MI + 1], i, l, j, nu;\n"
        "    (void)a;\n    (void)da;\n    (void)dw;\n    (void)dvdep;\n    (void)nu;\n"
        "    (void)qd_dep;\n    (void)qdd_dep;\n"
        "    for (i = 0; i < MI; i++) {\n"
        "        x[i] = v[qdd_ind[i]];\n"
        "        for (l = 0; l < MI; l++)\n"
        "            A[i * MI + l] = Mu[nh_jac_up(MI, i, l)];\n"
        "    }\n"
        "    for (i = 0; i < MI; i++)\n"
        "        for (j = 0; j < NK; j++) {\n"
        "            double s = dh[i * NK + j];\n"
        "            for (l = 0; l < MI; l++)\n"
        "                s += dM[nh_jac_up(MI, i, l) * NK + j] * x[l];\n"
        "            dx[i * NK + j] = -s;\n"
        "        }\n"
        "    if (MI > 0) {\n"
        "        if (nh_jac_lu(A, MI, perm) != 0)\n"
        "            goto fail;\n"
        "        nh_jac_solve(A, MI, perm, dx, NK, wk);\n"
        "    }\n"
        "    for (i = 0; i < MI; i++)\n"
        "        for (j = 0; j < NK; j++)\n"
        "            dv[qdd_ind[i] * NK + j] = dx[i * NK + j];\n"
        "    for (nu = 0; nu < KD; nu++)\n"
        "        for (j = 0; j < NK; j++) {\n"
        "            double s = dw[nu * NK + j];\n"
        "            for (l = 0; l < MI; l++)\n"
        "                s += da[(nu * MI + l) * NK + j] * x[l] +\n"
        "                     a[nu * MI + l] * dx[l * NK + j];\n"
        "            dv[qd_dep[nu] * NK + j] = dvdep[nu * NK + j];\n"
        "            dv[qdd_dep[nu] * NK + j] = s;\n"
        "        }\n");
}

/* maggi.c maggi_tangent: G dz' = drhs − dG z', dq'' = dβ + dΨ z' + Ψ dz';
 * maggi's drhs − dG z' = −(dΨᵀE + Ψᵀ(dM q'' + M dβ + M dΨ z' + dh)). */
static void jac_maggi(const eom_t *e, strbuf_t *b)
{
    const nh_system_t *sys = e->sys;
    size_t n = sys->n, m = sys->m;
    bool maggi = e->method == EOM_MAGGI;
    strbuf_addf(b, "    enum { NQ = %zu, NM = %zu, NUN = %zu, NUM = %zu, "
                   "MAGGI = %d };\n",
                n, m, n * (n + 1) / 2, m * (m + 1) / 2, maggi ? 1 : 0);
    jac_ints(b, "qd", sys->qd, NULL, n);
    jac_ints(b, "qdd", sys->qdd, NULL, n);
    jac_ints(b, "zd", sys->zd, NULL, m);
    strbuf_add(
        b,
        "    const int omid = NQ + (MAGGI ? NUN + NQ : NUM + NM);\n"
        "    const double *Psi = o + omid + NQ;\n"
        "    const double *dbeta = dout + omid * NK, *dPsi = dbeta + NQ * NK;\n"
        "    double *G = scr, *rhs = G + NM * NM, *wk = rhs + NM * NK;\n"
        "    double *E = wk + NM, *MPsi = E + NQ, *z = MPsi + NQ * NM;\n"
        "    double *qa = z + NM;\n"
        "    int perm[NM + 1], i, l, a, bb, j;\n"
        "    for (a = 0; a < NM; a++)\n"
        "        z[a] = v[zd[a]];\n"
        "    for (i = 0; i < NQ; i++)\n"
        "        qa[i] = v[qdd[i]];\n"
        "    if (MAGGI) {\n"
        "        const double *M = o + NQ, *h = M + NUN;\n"
        "        const double *dM = dout + NQ * NK, *dh = dM + NUN * NK;\n"
        "        for (i = 0; i < NQ; i++) {\n"
        "            double s = h[i];\n"
        "            for (l = 0; l < NQ; l++)\n"
        "                s += M[nh_jac_up(NQ, i, l)] * qa[l];\n"
        "            E[i] = s;\n"
        "            for (bb = 0; bb < NM; bb++) {\n"
        "                double t = 0.0;\n"
        "                for (l = 0; l < NQ; l++)\n"
        "                    t += M[nh_jac_up(NQ, i, l)] * Psi[l * NM + bb];\n"
        "                MPsi[i * NM + bb] = t;\n"
        "            }\n"
        "        }\n"
        "        for (a = 0; a < NM; a++)\n"
        "            for (bb = 0; bb < NM; bb++) {\n"
        "                double t = 0.0;\n"
        "                for (i = 0; i < NQ; i++)\n"
        "                    t += Psi[i * NM + a] * MPsi[i * NM + bb];\n"
        "                G[a * NM + bb] = t;\n"
        "            }\n"
        "        for (j = 0; j < NK; j++) {\n"
        "            for (a = 0; a < NM; a++)\n"
        "                rhs[a * NK + j] = 0.0;\n"
        "            for (i = 0; i < NQ; i++) {\n"
        "                double f = dh[i * NK + j];\n"
        "                for (l = 0; l < NQ; l++) {\n"
        "                    double ddq = dbeta[l * NK + j];\n"
        "                    for (bb = 0; bb < NM; bb++)\n"
        "                        ddq += dPsi[(l * NM + bb) * NK + j] * z[bb];\n"
        "                    f += dM[nh_jac_up(NQ, i, l) * NK + j] * qa[l] +\n"
        "                         M[nh_jac_up(NQ, i, l)] * ddq;\n"
        "                }\n"
        "                for (a = 0; a < NM; a++)\n"
        "                    rhs[a * NK + j] -= dPsi[(i * NM + a) * NK + j] * E[i] +\n"
        "                                       Psi[i * NM + a] * f;\n"
        "            }\n"
        "        }\n"
        "    } else {\n"
        "        const double *Gu = o + NQ, *dG = dout + NQ * NK;\n"
        "        const double *drhs = dG + NUM * NK;\n"
        "        for (a = 0; a < NM; a++)\n"
        "            for (bb = 0; bb < NM; bb++)\n"
        "                G[a * NM + bb] = Gu[nh_jac_up(NM, a, bb)];\n"
        "        for (a = 0; a < NM; a++)\n"
        "            for (j = 0; j < NK; j++) {\n"
        "                double s = drhs[a * NK + j];\n"
        "                for (bb = 0; bb < NM; bb++)\n"
        "                    s -= dG[nh_jac_up(NM, a, bb) * NK + j] * z[bb];\n"
        "                rhs[a * NK + j] = s;\n"
        "            }\n"
        "        for (i = 0; i < NQ; i++)\n"
        "            for (j = 0; j < NK; j++)\n"
        "                dv[qd[i] * NK + j] = dout[i * NK + j];\n"
        "    }\n"
        "    if (NM > 0) {\n"
        "        if (nh_jac_lu(G, NM, perm) != 0)\n"
        "            goto fail;\n"
        "        nh_jac_solve(G, NM, perm, rhs, NK, wk);\n"
        "    }\n"
        "    for (a = 0; a < NM; a++)\n"
        "        for (j = 0; j < NK; j++)\n"
        "            dv[zd[a] * NK + j] = rhs[a * NK + j];\n"
        "    for (i = 0; i < NQ; i++)\n"
        "        for (j = 0; j < NK; j++) {\n"
        "            double s = dbeta[i * NK + j];\n"
        "            for (bb = 0; bb < NM; bb++)\n"
        "                s += dPsi[(i * NM + bb) * NK + j] * z[bb] +\n"
        "                     Psi[i * NM + bb] * rhs[bb * NK + j];\n"
        "            dv[qdd[i] * NK + j] = s;\n"
        "        }\n");
}

/* The doubles of the algebra's scratch, by family (as the comments of
 * the texts above lay it out). */
static size_t jac_scratch(const eom_t *e, size_t k)
{
    const nh_system_t *sys = e->sys;
    size_t n = sys->n, r = sys->r, m = sys->m;
    switch (e->method) {
    case EOM_LAGRANGE:
    case EOM_MULTIPLIERS:
    case EOM_SECOND_KIND:
        return (n + r) * (n + r) + (n + r) * k + 2 * (n + r) + 1;
    case EOM_VORONEC:
    case EOM_NAIVE:
        return e->mi * e->mi + e->mi + e->mi * k + e->mi + 1;
    default:
        return m * m + m * k + m + n + n * m + m + n + 1;
    }
}

void cgen_jacobian(const eom_t *e, const char *name, strbuf_t *b)
{
    const tape_t *t = e->tape, *pre = e->method == EOM_MAGGI ? e->pre : NULL;
    size_t nv = e->nvars, k = e->nstate;
    size_t no = tape_nout(t), nw = tape_c_tangent_values(t),
           ndw = (tape_work_size(t) + 1) * k;
    size_t npo = pre ? tape_nout(pre) : 0,
           npw = pre ? tape_c_tangent_values(pre) : 0,
           npdw = pre ? (tape_work_size(pre) + 1) * k : 0;
    size_t scr = jac_scratch(e, k);
    /* v, dv, o, dout, w, dw, then the first tape's, then the scratch */
    size_t work = nv + nv * k + no + no * k + nw + ndw + npo + npo * k + npw +
                  npdw + scr;
    strbuf_add(b, jac_lu);
    strbuf_addf(b,
                "/* The Jacobian of the right-hand side at (t, y), row-major "
                "(row i: the\n"
                " * derivatives of dy_i/dt by y_0 ... y_%zu), exact: the "
                "tapes' forward-mode\n"
                " * derivatives and the method's solve differentiated "
                "implicitly (nh:\n"
                " * eom_tangent).  WORK holds %s_jacobian_work doubles.  "
                "Returns 0, or the\n"
                " * status of %s_rhs_status (JAC then NaN). */\n"
                "const int %s_jacobian_work = %zu;\n\n"
                "static int nh_jacobian(double t, const double *y, const "
                "double *p,\n"
                "                       double *jac, double *work)\n"
                "{\n"
                "    enum { NV = %zu, NK = %zu, NO = %zu, NW = %zu, NDW = "
                "%zu,\n"
                "           NPO = %zu, NPW = %zu, NPDW = %zu };\n"
                "    double *v = work, *dv = v + NV, *o = dv + NV * NK;\n"
                "    double *dout = o + NO, *w = dout + NO * NK, *dw = w + "
                "NW;\n"
                "    double *po = dw + NDW, *pdo = po + NPO, *pw = pdo + NPO * "
                "NK;\n"
                "    double *pdw = pw + NPW, *scr = pdw + NPDW;\n",
                k ? k - 1 : 0, name, name, name, work, nv, k, no, nw, ndw,
                npo, npw, npdw);
    jac_ints(b, "state", e->state, NULL, k);
    jac_ints(b, "deriv", e->deriv, NULL, k);
    if (pre)
        jac_ints(b, "pre_var", e->pre_var, NULL, e->npre);
    strbuf_add(b, "    int rc, s_, c_;\n"
                  "    (void)po;\n    (void)pdo;\n    (void)pw;\n    (void)pdw;\n"
                  "    nh_load(v, t, y, p);\n"
                  "    rc = nh_compute(v);\n"
                  "    if (rc != 0)\n"
                  "        goto fail;\n"
                  "    for (s_ = 0; s_ < NV * NK; s_++)\n"
                  "        dv[s_] = 0.0;\n"
                  "    for (s_ = 0; s_ < NK; s_++)\n"
                  "        dv[state[s_] * NK + s_] = 1.0;\n");
    if (pre)
        strbuf_addf(b, "    nh_tan_pre(v, dv, NK, po, pdo, pw, pdw);\n"
                       "    for (s_ = 0; s_ < %zu; s_++) {\n"
                       "        v[pre_var[s_]] = po[s_];\n"
                       "        for (c_ = 0; c_ < NK; c_++)\n"
                       "            dv[pre_var[s_] * NK + c_] = pdo[s_ * NK + c_];\n"
                       "    }\n",
                    e->npre);
    strbuf_add(b, "    nh_tan_main(v, dv, NK, o, dout, w, dw);\n"
                  "    rc = 1;\n"
                  "    {\n");
    switch (e->method) {
    case EOM_LAGRANGE:
    case EOM_MULTIPLIERS:
    case EOM_SECOND_KIND: jac_mult(e, b); break;
    case EOM_VORONEC:
    case EOM_NAIVE: jac_voronec(e, b); break;
    case EOM_MAGGI:
    case EOM_GIBBS_APPELL: jac_maggi(e, b); break;
    case EOM_METHOD_COUNT: abort(); /* not a method */
    }
    strbuf_add(b, "    }\n"
                  "    for (s_ = 0; s_ < NK; s_++)\n"
                  "        for (c_ = 0; c_ < NK; c_++) {\n"
                  "            double d = dv[deriv[s_] * NK + c_];\n"
                  "            if (!isfinite(d)) {\n"
                  "                rc = 2;\n"
                  "                goto fail;\n"
                  "            }\n"
                  "            jac[s_ * NK + c_] = d;\n"
                  "        }\n"
                  "    return 0;\n"
                  "fail:\n"
                  "    for (s_ = 0; s_ < NK * NK; s_++)\n"
                  "        jac[s_] = NAN;\n"
                  "    return rc;\n"
                  "}\n\n");
    strbuf_addf(b,
                "int %s_jacobian(double t, const double *y, const double *p, "
                "double *jac,\n"
                "        double *work)\n"
                "{\n"
                "    return nh_jacobian(t, y, p, jac, work);\n"
                "}\n",
                name);
}
