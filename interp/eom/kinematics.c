/*
 * kinematics.c — the kinematic equations of the methods on speeds,
 * completed from the constraints (kinematics.h).
 *
 * Why not an LU by nodes with pivots chosen at sample states: a pivot is
 * a ratio of leading minors, which may vanish where the determinant does
 * not.  The bicycle's front wheel rolls with N-frame components
 * (vF[1], vF[2]) = 0: its spin rate thF' enters them with coefficients
 * proportional to the cosine and the sine of the wheel's heading, so
 * whichever row is the pivot for thF', that pivot vanishes at some
 * heading, where the velocities are perfectly determined (tried: at
 * heading π/2 such a solve gave garbage).  Sample states only make it
 * unlikely that the pivot is small where it was tried; SymPy's LU on the
 * benchmark bicycle went further wrong, on a pivot that is identically
 * zero but not recognised as zero (sympy#24780), which expr_mag's
 * magnitudes recognise here.  The structure avoids both: in block
 * triangular form, det A is
 * the product of the diagonal blocks' determinants, so dividing by those
 * (Cramer's rule inside each block; a 1×1 block is its one entry)
 * divides by nothing that vanishes where A is regular.  The bicycle's
 * blocks: the pitch rate from the pitch constraint alone, x' and y' each
 * from a rear component (entry 1), then yaw and front spin rates
 * together from the front components (2×2).
 *
 * The sample states (expr_mag, as `check` samples) decide what the
 * structure cannot: which entries vanish identically, which rows to use
 * when there are more than velocities to solve, and the rank.
 *
 * Must not: print; change the system.
 */
#include "interp/eom/kinematics.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"
#include "interp/eom/common.h"
#include "interp/eom/linalg.h"
#include "interp/expr/mag.h"

struct eom_kin {
    const nh_system_t *sys;
    eom_kin_mode_t mode;
    size_t k;
    const expr_t **psi;        /* n */
    size_t *dep;               /* k coordinates, declaration order */
    size_t *rows;              /* k constraints */
    const expr_t **A, **b0;    /* k×k, k */
    size_t *order, *sizes;     /* symbolic: k, nblocks */
    size_t nblocks, largest;
    const expr_t **seq;        /* symbolic: k, by index into dep */
    size_t *rowof;             /* symbolic: k, the constraint of each */
    size_t nsamples;
};

/* ---- accessors ---------------------------------------------------------- */

eom_kin_mode_t eom_kin_mode(const eom_kin_t *k) { return k->mode; }

const expr_t *const *eom_kin_psi(const eom_kin_t *k) { return k->psi; }

size_t eom_kin_dependent(const eom_kin_t *k, const size_t **dep)
{
    *dep = k->dep;
    return k->k;
}

const size_t *eom_kin_rows(const eom_kin_t *k) { return k->rows; }

const expr_t *const *eom_kin_matrix(const eom_kin_t *k) { return k->A; }

const expr_t *const *eom_kin_offset(const eom_kin_t *k) { return k->b0; }

size_t eom_kin_blocks(const eom_kin_t *k, const size_t **order,
                      const size_t **sizes, const expr_t *const **seq)
{
    *order = k->order;
    *sizes = k->sizes;
    *seq = k->seq;
    return k->nblocks;
}

size_t eom_kin_row_of(const eom_kin_t *k, size_t j) { return k->rowof[j]; }

size_t eom_kin_largest_block(const eom_kin_t *k) { return k->largest; }

size_t eom_kin_samples(const eom_kin_t *k) { return k->nsamples; }

void eom_kin_free(eom_kin_t *k)
{
    if (!k)
        return;
    free(k->psi);
    free(k->dep);
    free(k->rows);
    free(k->A);
    free(k->b0);
    free(k->order);
    free(k->sizes);
    free(k->seq);
    free(k->rowof);
    free(k);
}

/* ---- structure: matching and blocks --------------------------------------- */

/* Augmenting path from row I (Kuhn's algorithm) in the k×k pattern NZ:
 * MATCH[j] is the row matched to column j or SIZE_MAX. */
static bool kin_augment(const bool *nz, size_t k, size_t i, size_t *match,
                        bool *seen)
{
    for (size_t j = 0; j < k; j++) {
        if (!nz[i * k + j] || seen[j])
            continue;
        seen[j] = true;
        if (match[j] == SIZE_MAX ||
            kin_augment(nz, k, match[j], match, seen)) {
            match[j] = i;
            return true;
        }
    }
    return false;
}

/* Tarjan's strongly connected components on the velocities: j uses l
 * when the row matched to j has an entry in column l.  A component is
 * emitted after every component it uses, so the emission order is an
 * order of solution.  T holds the state of the search. */
typedef struct kin_tarjan {
    const bool *nz;
    const size_t *match;
    size_t k, counter, sp, nout, nblocks;
    size_t *index, *low, *stack, *out, *sizes;
    bool *on;
} kin_tarjan_t;

static void kin_strong(kin_tarjan_t *t, size_t j)
{
    t->index[j] = t->low[j] = ++t->counter;
    t->stack[t->sp++] = j;
    t->on[j] = true;
    size_t row = t->match[j];
    for (size_t l = 0; l < t->k; l++) {
        if (l == j || !t->nz[row * t->k + l])
            continue;
        if (!t->index[l]) {
            kin_strong(t, l);
            if (t->low[l] < t->low[j])
                t->low[j] = t->low[l];
        } else if (t->on[l] && t->index[l] < t->low[j]) {
            t->low[j] = t->index[l];
        }
    }
    if (t->low[j] != t->index[j])
        return;
    size_t start = t->nout, l;
    do {
        l = t->stack[--t->sp];
        t->on[l] = false;
        t->out[t->nout++] = l;
    } while (l != j);
    /* within a block, the velocities in declaration order */
    for (size_t a = start + 1; a < t->nout; a++)
        for (size_t b = a; b > start && t->out[b - 1] > t->out[b]; b--) {
            size_t x = t->out[b];
            t->out[b] = t->out[b - 1];
            t->out[b - 1] = x;
        }
    t->sizes[t->nblocks++] = t->nout - start;
}

/* The determinant of the rows s−p..s−1 of the s×(s+1) matrix M and its
 * columns in MASK (p of them, in increasing order), by Laplace expansion
 * along the first of those rows; MEMO (2^(s+1) entries) keeps each. */
static const expr_t *kin_minor(expr_graph_t *g, const expr_t *const *M,
                               size_t s, unsigned mask, const expr_t **memo)
{
    if (memo[mask])
        return memo[mask];
    size_t p = (size_t)__builtin_popcount(mask);
    if (p == 0)
        return memo[mask] = expr_num(g, 1.0);
    size_t row = s - p;
    const expr_t *terms[EOM_KIN_BLOCK_MAX + 2];
    size_t nt = 0, pos = 0;
    for (size_t c = 0; c <= s; c++) {
        if (!(mask & (1u << c)))
            continue;
        const expr_t *a = M[row * (s + 1) + c];
        if (!expr_is_const(a, 0.0)) {
            const expr_t *t =
                expr_mul(g, a, kin_minor(g, M, s, mask & ~(1u << c), memo));
            terms[nt++] = pos % 2 ? expr_neg(g, t) : t;
        }
        pos++;
    }
    return memo[mask] = expr_sum(g, terms, nt);
}

/* Cramer's rule for the s×s system whose augmented matrix [A | b] is M
 * (s rows of s + 1): X[j] = det(A with column j replaced by b) / det A. */
static void kin_cramer(expr_graph_t *g, const expr_t *const *M, size_t s,
                       const expr_t **x)
{
    unsigned full = (1u << (s + 1)) - 1, rhs = 1u << s;
    const expr_t **memo = eom_alloc((size_t)full + 1, sizeof *memo);
    const expr_t *inv =
        expr_pow(g, kin_minor(g, M, s, full & ~rhs, memo), expr_num(g, -1.0));
    for (size_t j = 0; j < s; j++) {
        /* the columns in increasing order put b last: moving it back to
         * position j crosses the s − 1 − j columns after j */
        const expr_t *dj = kin_minor(g, M, s, full & ~(1u << j), memo);
        if ((s - 1 - j) % 2)
            dj = expr_neg(g, dj);
        x[j] = expr_mul(g, dj, inv);
    }
    free(memo);
}

/* β_D from the constraints' second derivative (kinematics.h). */
void eom_kin_beta(const eom_kin_t *kin, const expr_t *const *B,
                  const expr_t *const *c, const expr_t **beta)
{
    const nh_system_t *sys = kin->sys;
    expr_graph_t *g = sys->g;
    size_t n = sys->n, k = kin->k, bm = EOM_KIN_BLOCK_MAX;
    bool *known = eom_alloc(n, sizeof *known);
    for (size_t i = 0; i < n; i++)
        known[i] = true;
    for (size_t j = 0; j < k; j++)
        known[kin->dep[j]] = false;
    const expr_t **M = eom_alloc((bm + 1) * (bm + 2), sizeof *M);
    const expr_t **x = eom_alloc(bm + 1, sizeof *x);
    const expr_t **terms = eom_alloc(n + 1, sizeof *terms);
    size_t at = 0;
    for (size_t b = 0; b < kin->nblocks; b++) {
        size_t s = kin->sizes[b];
        const size_t *cols = kin->order + at;
        for (size_t bi = 0; bi < s; bi++) {
            size_t row = kin->rowof[cols[bi]];
            /* B_D β_D = −(c + Σ over the known β) */
            size_t nt = 0;
            terms[nt++] = c[row];
            for (size_t i = 0; i < n; i++)
                if (known[i] && !expr_is_const(B[row * n + i], 0.0))
                    terms[nt++] = expr_mul(g, B[row * n + i], beta[i]);
            M[bi * (s + 1) + s] = expr_neg(g, expr_sum(g, terms, nt));
            for (size_t bj = 0; bj < s; bj++)
                M[bi * (s + 1) + bj] = B[row * n + kin->dep[cols[bj]]];
        }
        kin_cramer(g, M, s, x);
        for (size_t bj = 0; bj < s; bj++) {
            beta[kin->dep[cols[bj]]] = x[bj];
            known[kin->dep[cols[bj]]] = true;
        }
        at += s;
    }
    free(M);
    free(x);
    free(terms);
    free(known);
}

/* ---- sample states -------------------------------------------------------- */

/* The values of the NE × K matrix E at the sample points PTS (NPTS of
 * them, NV variables each) into VAL (npts × ne × k), and whether each
 * entry is not identically zero into NZ (ne × k): a structural zero, or
 * zero next to its own terms at every point, is zero. */
static void kin_values(const expr_graph_t *g, const expr_t *const *E,
                       size_t ne, size_t k, const double *pts, size_t npts,
                       size_t nv, double *val, bool *nz)
{
    expr_mag_t ev = {.g = g};
    for (size_t e = 0; e < ne * k; e++)
        nz[e] = false;
    for (size_t s = 0; s < npts; s++) {
        expr_mag_begin(&ev, pts + s * nv);
        for (size_t e = 0; e < ne * k; e++) {
            double m;
            double v = expr_mag_get(&ev, E[e], &m);
            val[s * ne * k + e] = v;
            if (!expr_is_const(E[e], 0.0) && expr_mag_class(v, m) != 0)
                nz[e] = true;
        }
    }
    for (size_t s = 0; s < npts; s++)
        for (size_t e = 0; e < ne * k; e++)
            if (!nz[e] || !isfinite(val[s * ne * k + e]))
                val[s * ne * k + e] = 0.0;
    expr_mag_free(&ev);
}

/* ---- errors ---------------------------------------------------------------- */

static int kin_check_given(const nh_system_t *sys, const char *meth,
                           src_span_t where, diag_t *err)
{
    if (sys->m == 0)
        return diag_error(err, where,
                          "no speeds declared: %s needs `speed` "
                          "declarations and kinematic equations q' = "
                          "psi(q, z, t) for the velocities the constraints "
                          "do not determine",
                          meth);
    if (!sys->psi)
        return diag_error(err, where,
                          "no kinematic equations: %s needs `kinematic %s' "
                          "= ...` for the independent velocities (the "
                          "constraints determine the others)",
                          meth, sys->n ? sys->qname[0] : "q");
    bool *mask = eom_velocity_mask(sys);
    for (size_t i = 0; i < sys->n; i++)
        mask[sys->qdd[i]] = true;
    for (size_t a = 0; a < sys->m; a++)
        mask[sys->zd[a]] = true;
    int rc = 0;
    for (size_t i = 0; i < sys->n && rc == 0; i++)
        if (sys->psi[i] && expr_depends_any(sys->g, sys->psi[i], mask))
            rc = diag_error(err, sys->psi_span ? sys->psi_span[i] : where,
                            "the kinematic equation of %s depends on a "
                            "velocity: it must read %s' = psi(q, z, t)",
                            sys->qname[i], sys->qname[i]);
    free(mask);
    return rc;
}

/* The velocities of DEP not kept in KEPT (K entries), as "x', y'". */
static void kin_names(strbuf_t *b, const nh_system_t *sys, const size_t *dep,
                      const bool *kept, size_t k, bool kinematic)
{
    size_t c = 0;
    for (size_t j = 0; j < k; j++) {
        if (kept[j])
            continue;
        const char *q = sys->qname[dep[j]];
        if (kinematic)
            strbuf_addf(b, "%s`kinematic %s' = ...`", c ? ", " : "", q);
        else
            strbuf_addf(b, "%s%s'", c ? ", " : "", q);
        c++;
    }
}

/* The velocities are not all determined: SEL (k flags) marks those that
 * are, at the best sample.  The error names the others — at a constraint
 * that holds one of them but is not linear in it, if there is one, since
 * that is why it is not solved for. */
static int kin_undetermined(const nh_system_t *sys, const char *meth,
                            const eom_derived_t *d, const size_t *dep,
                            size_t k, const bool *sel, const bool *dmask,
                            src_span_t where, diag_t *err)
{
    expr_graph_t *g = sys->g;
    size_t n = sys->n;
    for (size_t a = 0; a < sys->r; a++)
        for (size_t j = 0; j < k; j++) {
            const expr_t *bj = d->B[a * n + dep[j]];
            if (sel[j] || expr_is_const(bj, 0.0) ||
                !expr_depends_any(g, bj, dmask))
                continue;
            const char *q = sys->qname[dep[j]];
            return diag_error(err, sys->cspan[a],
                              "constraint %s is not linear in %s', which has "
                              "no kinematic equation: %s solves such "
                              "velocities from the constraints, linearly; "
                              "give `kinematic %s' = ...`",
                              sys->cname[a], q, meth, q);
        }
    strbuf_t names, fix, det;
    strbuf_init(&names);
    strbuf_init(&fix);
    strbuf_init(&det);
    bool *none = eom_alloc(k, sizeof *none);
    size_t nund = 0;
    for (size_t j = 0; j < k; j++) {
        none[j] = !sel[j];
        nund += !sel[j];
    }
    kin_names(&names, sys, dep, sel, k, false);
    kin_names(&fix, sys, dep, sel, k, true);
    kin_names(&det, sys, dep, none, k, false);
    int rc = diag_error(err, where,
                        "the constraints do not determine %s, which %s no "
                        "kinematic equation%s%s%s: %s needs %s",
                        names.data, nund > 1 ? "have" : "has",
                        det.len ? " (they determine " : "",
                        det.len ? det.data : "", det.len ? ")" : "", meth,
                        fix.data);
    free(none);
    strbuf_free(&det);
    strbuf_free(&names);
    strbuf_free(&fix);
    return rc;
}

/* ---- the completion --------------------------------------------------------- */

/* Independence at a sample state: the tolerance of the velocity solvers
 * (velocity.c), whose choice of what `initial` solves for this follows. */
#define KIN_RTOL 1e-10

/* Sample points: coordinates, speeds and t moved around a fixed base,
 * the parameters fixed in [0.5, 1.5] (away from a degenerate 0). */
static size_t kin_points(const nh_system_t *sys, const expr_t *const *E,
                         size_t ne, double *pts)
{
    expr_graph_t *g = sys->g;
    size_t nv = expr_graph_nvars(g);
    double *base = eom_alloc(nv, sizeof *base);
    bool *move = eom_alloc(nv, sizeof *move);
    uint64_t seed = 0x6b616e65ULL; /* "kane" */
    for (size_t i = 0; i < sys->n; i++) {
        base[sys->q[i]] = 0.8 * expr_mag_random(&seed);
        move[sys->q[i]] = true;
    }
    for (size_t a = 0; a < sys->m; a++) {
        base[sys->z[a]] = expr_mag_random(&seed);
        move[sys->z[a]] = true;
    }
    for (size_t p = 0; p < sys->np; p++)
        base[sys->p[p]] = 1.0 + 0.5 * expr_mag_random(&seed);
    base[sys->t] = 0.5;
    move[sys->t] = true;
    expr_mag_t ev = {.g = g};
    size_t npts = expr_mag_sample(&ev, &seed, base, move, nv, E, ne, pts);
    expr_mag_free(&ev);
    free(base);
    free(move);
    return npts;
}

static int kin_solve(eom_kin_t *kin, const char *meth, size_t block_max,
                     src_span_t where, diag_t *err)
{
    const nh_system_t *sys = kin->sys;
    expr_graph_t *g = sys->g;
    size_t n = sys->n, r = sys->r, k = kin->k, nv = expr_graph_nvars(g);
    const size_t *dep = kin->dep;
    eom_derived_t d = {0};
    bool *dmask = eom_alloc(nv, sizeof *dmask);
    for (size_t j = 0; j < k; j++)
        dmask[sys->qd[dep[j]]] = true;
    if (r > 0) {
        const expr_t **dv = eom_dvar(sys, NULL);
        bool *vmask = eom_velocity_mask(sys);
        eom_derive_rows(sys, &d, dv, vmask);
        free(dv);
        free(vmask);
    }
    /* q_I' = ψ_I, q_D' = 0 */
    const expr_t **repl = eom_alloc(nv, sizeof *repl);
    for (size_t i = 0; i < n; i++)
        repl[sys->qd[i]] = kin->psi[i] ? kin->psi[i] : expr_num(g, 0.0);

    /* The rows that can be solved: affine in the dependent velocities. */
    size_t *elig = eom_alloc(r + 1, sizeof *elig), ne = 0;
    for (size_t a = 0; a < r; a++) {
        bool involves = false, linear = true;
        for (size_t j = 0; j < k; j++) {
            const expr_t *bj = d.B[a * n + dep[j]];
            involves |= !expr_is_const(bj, 0.0);
            linear &= !expr_depends_any(g, bj, dmask);
        }
        if (involves && linear)
            elig[ne++] = a;
    }
    const expr_t **E = eom_alloc(ne * k + 1, sizeof *E);
    for (size_t i = 0; i < ne; i++)
        for (size_t j = 0; j < k; j++)
            E[i * k + j] = expr_subst(g, d.B[elig[i] * n + dep[j]], repl);

    double *pts = eom_alloc(EXPR_MAG_POINTS * nv, sizeof *pts);
    size_t npts = ne ? kin_points(sys, E, ne * k, pts) : 0;
    kin->nsamples = npts;
    double *val = eom_alloc(npts * ne * k + 1, sizeof *val);
    bool *nz = eom_alloc(ne * k + 1, sizeof *nz);
    kin_values(g, E, ne, k, pts, npts, nv, val, nz);

    /* The rank of the rows at the sample states, up to the first where
     * it is k (a regular one: then it is k at almost every state). */
    size_t big = ne > k ? ne : k;
    double *basis = eom_alloc(big * big + 1, sizeof *basis);
    size_t *piv = eom_alloc(big + 1, sizeof *piv);
    size_t *order = eom_alloc(big + 1, sizeof *order);
    for (size_t i = 0; i < big; i++)
        order[i] = i;
    size_t best = 0, rbest = 0;
    for (size_t s = 0; s < npts && rbest < k; s++) {
        size_t rs = linalg_independent(val + s * ne * k, k, 1, k, order, ne,
                                       KIN_RTOL, NULL, basis, piv);
        if (rs > rbest || s == 0) {
            rbest = rs;
            best = s;
        }
    }
    int rc = 0;
    bool *sel = eom_alloc(k, sizeof *sel);
    bool *use = eom_alloc(ne + 1, sizeof *use);
    size_t *sel_rows = eom_alloc(k, sizeof *sel_rows), nsel = 0;
    if (npts == 0 || rbest < k) {
        /* which velocities are determined: the columns independent at the
         * best sample, from the last declared backwards (the rule of
         * `initial`, so the ones named are those a user adds first) */
        for (size_t j = 0; j < k; j++)
            order[j] = k - 1 - j;
        if (npts)
            linalg_independent(val + best * ne * k, 1, k, ne, order, k,
                               KIN_RTOL, sel, basis, piv);
        rc = kin_undetermined(sys, meth, &d, dep, k, sel, dmask, where, err);
        goto done;
    }
    /* k rows independent at that state, in declaration order */
    linalg_independent(val + best * ne * k, k, 1, k, order, ne, KIN_RTOL, use,
                       basis, piv);
    for (size_t i = 0; i < ne; i++)
        if (use[i])
            sel_rows[nsel++] = i;
    if (nsel != k)
        abort(); /* the rank there is k */

    kin->rows = eom_alloc(k, sizeof *kin->rows);
    kin->A = eom_alloc(k * k, sizeof *kin->A);
    kin->b0 = eom_alloc(k, sizeof *kin->b0);
    bool *pat = eom_alloc(k * k, sizeof *pat);
    for (size_t i = 0; i < k; i++) {
        size_t e = sel_rows[i];
        kin->rows[i] = elig[e];
        kin->b0[i] = expr_subst(g, d.Ceff[elig[e]], repl);
        for (size_t j = 0; j < k; j++) {
            kin->A[i * k + j] = E[e * k + j];
            pat[i * k + j] = nz[e * k + j];
        }
    }

    /* Block triangular form: rows matched to velocities, then blocks. */
    size_t *match = eom_alloc(k, sizeof *match);
    bool *seen = eom_alloc(k, sizeof *seen);
    bool perfect = true;
    for (size_t j = 0; j < k; j++)
        match[j] = SIZE_MAX;
    /* a greedy matching first (the diagonal of a triangular pattern in
     * one pass), then augmenting paths for the rows left */
    bool *rowm = eom_alloc(k, sizeof *rowm);
    for (size_t i = 0; i < k; i++)
        for (size_t j = 0; j < k && !rowm[i]; j++)
            if (pat[i * k + j] && match[j] == SIZE_MAX) {
                match[j] = i;
                rowm[i] = true;
            }
    for (size_t i = 0; i < k && perfect; i++) {
        if (rowm[i])
            continue;
        memset(seen, 0, k * sizeof *seen);
        perfect = kin_augment(pat, k, i, match, seen);
    }
    free(rowm);
    kin->order = eom_alloc(k, sizeof *kin->order);
    kin->sizes = eom_alloc(k, sizeof *kin->sizes);
    if (perfect) {
        kin_tarjan_t t = {.nz = pat, .match = match, .k = k};
        t.index = eom_alloc(k, sizeof *t.index);
        t.low = eom_alloc(k, sizeof *t.low);
        t.stack = eom_alloc(k, sizeof *t.stack);
        t.on = eom_alloc(k, sizeof *t.on);
        t.out = kin->order;
        t.sizes = kin->sizes;
        for (size_t j = 0; j < k; j++)
            if (!t.index[j])
                kin_strong(&t, j);
        kin->nblocks = t.nblocks;
        free(t.index);
        free(t.low);
        free(t.stack);
        free(t.on);
        for (size_t b = 0; b < kin->nblocks; b++)
            if (kin->sizes[b] > kin->largest)
                kin->largest = kin->sizes[b];
    } else {
        kin->largest = k; /* cannot happen: rank k needs a matching */
    }

    if (!perfect || kin->largest > block_max) {
        kin->mode = EOM_KIN_NUMERIC;
        goto blocks_done;
    }
    kin->mode = EOM_KIN_SYMBOLIC;
    kin->seq = eom_alloc(k, sizeof *kin->seq);
    kin->rowof = eom_alloc(k, sizeof *kin->rowof);
    for (size_t j = 0; j < k; j++)
        kin->rowof[j] = kin->rows[match[j]];
    {
        const expr_t **M = eom_alloc((block_max + 1) * (block_max + 2),
                                     sizeof *M);
        const expr_t **x = eom_alloc(block_max + 1, sizeof *x);
        const expr_t **terms = eom_alloc(k + 1, sizeof *terms);
        bool *solved = eom_alloc(k, sizeof *solved);
        size_t at = 0;
        for (size_t b = 0; b < kin->nblocks; b++) {
            size_t s = kin->sizes[b];
            const size_t *cols = kin->order + at;
            for (size_t bi = 0; bi < s; bi++) {
                size_t row = match[cols[bi]];
                /* b = −b0 − Σ over the velocities solved before */
                size_t nt = 0;
                terms[nt++] = kin->b0[row];
                for (size_t l = 0; l < k; l++)
                    if (solved[l] && pat[row * k + l])
                        terms[nt++] = expr_mul(g, kin->A[row * k + l],
                                               expr_var(g, sys->qd[dep[l]]));
                M[bi * (s + 1) + s] = expr_neg(g, expr_sum(g, terms, nt));
                for (size_t bj = 0; bj < s; bj++)
                    M[bi * (s + 1) + bj] =
                        pat[row * k + cols[bj]] ? kin->A[row * k + cols[bj]]
                                                : expr_num(g, 0.0);
            }
            kin_cramer(g, M, s, x);
            for (size_t bj = 0; bj < s; bj++) {
                kin->seq[cols[bj]] = x[bj];
                solved[cols[bj]] = true;
            }
            at += s;
        }
        /* ψ_D in (q, z, t): each velocity with those solved before in */
        const expr_t **sub = eom_alloc(nv, sizeof *sub);
        for (size_t o = 0; o < k; o++) {
            size_t j = kin->order[o];
            kin->psi[dep[j]] = expr_subst(g, kin->seq[j], sub);
            sub[sys->qd[dep[j]]] = kin->psi[dep[j]];
        }
        free(sub);
        free(M);
        free(x);
        free(terms);
        free(solved);
    }
blocks_done:
    free(match);
    free(seen);
    free(pat);
done:
    free(sel);
    free(use);
    free(sel_rows);
    free(basis);
    free(piv);
    free(order);
    free(val);
    free(nz);
    free(pts);
    free(E);
    free(elig);
    free(repl);
    free(dmask);
    eom_derived_free(&d);
    return rc;
}

eom_kin_t *eom_kin_new(const nh_system_t *sys, const char *method,
                       size_t block_max, src_span_t where, diag_t *err)
{
    if (kin_check_given(sys, method, where, err) != 0)
        return NULL;
    if (block_max > EOM_KIN_BLOCK_MAX)
        block_max = EOM_KIN_BLOCK_MAX;
    size_t n = sys->n;
    eom_kin_t *kin = eom_alloc(1, sizeof *kin);
    kin->sys = sys;
    kin->psi = eom_alloc(n + 1, sizeof *kin->psi);
    kin->dep = eom_alloc(n + 1, sizeof *kin->dep);
    for (size_t i = 0; i < n; i++) {
        kin->psi[i] = sys->psi[i];
        if (!sys->psi[i])
            kin->dep[kin->k++] = i;
    }
    kin->mode = EOM_KIN_GIVEN;
    if (kin->k == 0)
        return kin;
    /* derived equations are defined where their formulas are (as in
     * eom_prepare): no guards from what cancels */
    bool keep = expr_graph_keep_domains(sys->g, false);
    int rc = kin_solve(kin, method, block_max, where, err);
    expr_graph_keep_domains(sys->g, keep);
    if (rc != 0) {
        eom_kin_free(kin);
        return NULL;
    }
    return kin;
}

/* ---- show kinematics ------------------------------------------------------ */

static void kin_row_names(strbuf_t *b, const eom_kin_t *kin)
{
    const nh_system_t *sys = kin->sys;
    for (size_t i = 0; i < kin->k; i++)
        strbuf_addf(b, "%s%s", i ? ", " : "", sys->cname[kin->rows[i]]);
}

char *eom_kin_describe(const eom_kin_t *kin, bool latex)
{
    const nh_system_t *sys = kin->sys;
    expr_graph_t *g = sys->g;
    eom_buf_t b = {0};
    b.sys = sys;
    eom_buf_heading(&b, latex, "kinematic equations q' = psi(q, z, t)%s:",
                    kin->k ? " given" : "");
    for (size_t i = 0; i < sys->n; i++)
        if (sys->psi[i])
            eom_buf_row(&b, g, expr_var(g, sys->qd[i]), sys->psi[i], latex);
    strbuf_t rows;
    strbuf_init(&rows);
    kin_row_names(&rows, kin);
    if (kin->mode == EOM_KIN_SYMBOLIC) {
        eom_buf_heading(&b, latex,
                        "the other velocities, solved from the constraints "
                        "%s in this order (each may use those above it):",
                        rows.data);
        for (size_t o = 0; o < kin->k; o++) {
            size_t j = kin->order[o];
            eom_buf_row(&b, g, expr_var(g, sys->qd[kin->dep[j]]),
                        kin->seq[j], latex);
        }
    } else if (kin->mode == EOM_KIN_NUMERIC) {
        eom_buf_heading(&b, latex,
                        "the other velocities, solved at each evaluation "
                        "from the constraints %s (%zu of these velocities "
                        "depend on each other, more than %d to solve "
                        "symbolically):",
                        rows.data, kin->largest, EOM_KIN_BLOCK_MAX);
        size_t k = kin->k;
        const expr_t **t = eom_alloc(k + 1, sizeof *t);
        for (size_t i = 0; i < k; i++) {
            t[0] = kin->b0[i];
            for (size_t j = 0; j < k; j++)
                t[1 + j] = expr_mul(g, kin->A[i * k + j],
                                    expr_var(g, sys->qd[kin->dep[j]]));
            eom_buf_row(&b, g, expr_num(g, 0.0), expr_sum(g, t, k + 1),
                        latex);
        }
        free(t);
    }
    strbuf_free(&rows);
    return eom_buf_finish(&b, latex);
}
