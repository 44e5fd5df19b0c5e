/*
 * worksheet.c — S. Benenti's worksheets (seeds/001_1980ef68f09313b8.txt,
 * §12 "fogli di lavoro"; worksheet.h), step by step, symbolically and at
 * the state.
 *
 * Every object is built twice, side by side:
 *   symbolic  nodes of the system's graph, for the student to read.  The
 *             engine inverts a matrix only block by block (blocks of up
 *             to WS_BLOCK_MAX, by cofactors); past that, and for objects
 *             whose printed form would run to pages, the sheet says so
 *             and shows the numbers only;
 *   numeric   the values at the state: the base objects below evaluated
 *             through a tape, then small dense algebra (interp/linalg).
 *             The numbers never wait on a symbolic inverse, and they are
 *             what the tests compare with eom_accel.
 *
 * The base objects, for a model with kinetic energy T, potential V,
 * forces Q and constraints C^a(q, q', t) = 0:
 *   g_ij  = ∂²T/∂q'^i∂q'^j                                       (eq. 14)
 *   P_i   = Σ_j ∂²T/∂q'^i∂q^j q'^j + ∂²T/∂q'^i∂t − ∂T/∂q^i     (eqs. 69–70)
 *           — the binomial d/dt ∂T/∂q'^i − ∂T/∂q^i without the
 *           accelerations, which is Γ_jk,i q'^j q'^k when T is a
 *           quadratic form in q' (eqs. 16, 33)
 *   A_i   = Q_i − ∂V/∂q^i                                         (eq. 18)
 *   C^a_i = ∂C^a/∂q'^i                                             (eq. 8)
 *   c^a   = Σ_i q'^i ∂C^a/∂q^i + ∂C^a/∂t
 * so that Lagrange's equations read g q'' + P = A + R (eq. 41): common.c's
 * M q'' + h = Bᵀλ with M = g, h = P − A, B = [C^a_i], c as there.
 * A model given by a Lagrangian L (or whose potential depends on the
 * velocities) is taken in the Lagrangian form: T stands for L, the
 * potential forces sit inside P, and A holds the declared forces only.
 * Time is allowed although Benenti leaves it out "for reasons of space":
 * ∂T/∂t, ∂ψ/∂t and ∂C/∂t enter where the derivation puts them.  A
 * holonomic constraint f(q, t) = 0 enters through f' = 0 (eq. 12), as in
 * eom.c.
 *
 * Corrections to Benenti's text (see seeds/README.md), each checked
 * against the derivation written at the step that uses it:
 *   — preliminary, step 5, variant: "formula (59)" is eq. 16 (eq. 59 is
 *     Gauss's function);
 *   — first kind, step 7: the P_i come from step 5 of the preliminary
 *     sheet (the text says step 6, which it does not have);
 *   — second kind, step 6: X_a^i = H_ab C^bi (the text prints G_ab);
 *   — second kind, steps 10–12, and eqs. 49, 71: q'^i ∂C^a/∂q^i (the text
 *     prints ∂C/∂q'^i);
 *   — reduced sheet, step 12: dq'^i/dt = D^i (the text prints dq^i/dt).
 *
 * Must not: change the system or the caller's values; print anywhere but
 * the FILE given to worksheet_print.
 */
#include "interp/analysis/worksheet.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"
#include "interp/eom/eom.h"
#include "interp/eom/linalg.h"
#include "interp/expr/layout.h"
#include "interp/expr/mag.h"
#include "interp/expr/simplify.h"
#include "interp/expr/tape.h"

const char *const worksheet_names[] = {"preliminary", "first", "second",
                                       "second_reduced", NULL};

typedef enum ws_kind {
    WS_PRELIMINARY,
    WS_FIRST,
    WS_SECOND,
    WS_SECOND_REDUCED
} ws_kind_t;

/* Accepted names: the four of LANGUAGE.md §7, and the equation names a
 * student may type for the two kinds. */
static const struct {
    const char *name;
    ws_kind_t kind;
} ws_lookup_table[] = {
    {"preliminary", WS_PRELIMINARY}, {"first", WS_FIRST},
    {"second", WS_SECOND},           {"second_reduced", WS_SECOND_REDUCED},
    {"first_kind", WS_FIRST},        {"second_kind", WS_SECOND},
};

static const char *const ws_all_names[] = {
    "preliminary", "first", "second", "second_reduced", "first_kind",
    "second_kind", NULL};

/* Symbolic inverses go block by block, by cofactors, up to this size. */
#define WS_BLOCK_MAX 4
/* An object is tried symbolically when, printed as a tree, it has at most
 * WS_SYM_MAX_NODES nodes and no entry more than WS_ENTRY_MAX_NODES (the
 * display simplifier's work stays bounded); */
#define WS_SYM_MAX_NODES 20000
#define WS_ENTRY_MAX_NODES 4000
/* and, in its display form (interp/expr/simplify.h), when no entry prints
 * longer than this: the limit of `show accel` (doc/language.md) */
#define WS_TEXT_MAX 1000
/* A recurring subexpression is named when its display form is longer
 * than this; shorter, it is shown in full where it occurs. */
#define WS_ABBREV_INLINE 40
/* A row prints as [a, b, c] when it fits this width; else one entry per
 * line, named. */
#define WS_ROW_WIDTH 100

/* A name the printer puts for a subexpression that recurs (Benenti's
 * own device: his Δ for the bipendulum).  Replacing the printed text of a
 * parenthesised group by a name is sound: the group is a complete
 * subexpression, and its text reads back to the named node. */
typedef struct ws_abbrev {
    const expr_t *node;
    const char *name, *latex; /* "H", "det(G)"; "H", "\\det G" */
    const char *meaning;      /* what the name stands for, and where */
} ws_abbrev_t;

#define WS_ABBREV_MAX 16

struct worksheet {
    const nh_system_t *sys;
    ws_kind_t kind;
    src_span_t where;
    bool lagrangian_form;
    double *state; /* the caller's values, copied */
    worksheet_step_t *steps;
    size_t nsteps, cap;
    void **owned; /* everything the steps point at */
    size_t nowned, capowned;
    bool stopped;
    char why[DIAG_MSG_MAX];
    ws_abbrev_t abbrev[WS_ABBREV_MAX];
    size_t nabbrev;
};

/* ---- memory -------------------------------------------------------------- */

static void *ws_xalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        nh_out_of_memory();
    return p;
}

static void *ws_own(worksheet_t *ws, void *p)
{
    if (ws->nowned == ws->capowned) {
        size_t cap = ws->capowned ? 2 * ws->capowned : 32;
        void **q = realloc(ws->owned, cap * sizeof *q);
        if (!q)
            nh_out_of_memory();
        ws->owned = q;
        ws->capowned = cap;
    }
    ws->owned[ws->nowned++] = p;
    return p;
}

static const expr_t **ws_nodes(worksheet_t *ws, size_t count)
{
    return ws_own(ws, ws_xalloc(count, sizeof(const expr_t *)));
}

/* OUT[p][q] = Σ_k X[p][k] Y[q][k] (X·Yᵀ, P×K times Q×K), symbolically
 * into SYM when both X and Y have symbols (SYM is then non-NULL), and
 * numerically into VAL, summing k upwards in both. */
static void ws_abt(expr_graph_t *g, const expr_t *const *X, const double *Xv,
                   const expr_t *const *Y, const double *Yv, size_t P,
                   size_t Q, size_t K, const expr_t **sym, double *val)
{
    for (size_t p = 0; p < P; p++)
        for (size_t q = 0; q < Q; q++) {
            const expr_t *s = expr_num(g, 0.0);
            double sv = 0.0;
            for (size_t k = 0; k < K; k++) {
                if (sym && X && Y)
                    s = expr_add(g, s, expr_mul(g, X[p * K + k], Y[q * K + k]));
                sv += Xv[p * K + k] * Yv[q * K + k];
            }
            if (sym)
                sym[p * Q + q] = s;
            val[p * Q + q] = sv;
        }
}

static double *ws_vals(worksheet_t *ws, size_t count)
{
    return ws_own(ws, ws_xalloc(count, sizeof(double)));
}

static const char *ws_fmt(worksheet_t *ws, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static const char *ws_fmt(worksheet_t *ws, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = ws_own(ws, ws_xalloc((size_t)(len > 0 ? len : 0) + 1, 1));
    va_start(ap, fmt);
    vsnprintf(s, (size_t)len + 1, fmt, ap);
    va_end(ap);
    return s;
}

/* "a, b, c" of COUNT names. */
static const char *ws_join(worksheet_t *ws, const char *const *names,
                           size_t count)
{
    size_t len = 1;
    for (size_t k = 0; k < count; k++)
        len += strlen(names[k]) + 2;
    char *s = ws_own(ws, ws_xalloc(len, 1));
    for (size_t k = 0; k < count; k++) {
        if (k)
            strcat(s, ", ");
        strcat(s, names[k]);
    }
    return s;
}

/* Names with a suffix appended ("x1" → "x1''"), owned by the sheet. */
static const char **ws_suffixed(worksheet_t *ws, const char *const *names,
                                size_t count, const char *suffix)
{
    const char **out = ws_own(ws, ws_xalloc(count, sizeof *out));
    for (size_t k = 0; k < count; k++)
        out[k] = ws_fmt(ws, "%s%s", names[k], suffix);
    return out;
}

/* The LaTeX of variable V, owned by the sheet. */
static const char *ws_var_latex(worksheet_t *ws, uint32_t v)
{
    char *s = expr_to_latex(ws->sys->g, expr_var(ws->sys->g, v));
    return ws_own(ws, s);
}

/* Appends a step; the pointer is valid until the next push. */
static worksheet_step_t *ws_push(worksheet_t *ws, const char *number,
                                 const char *key, worksheet_shape_t shape,
                                 size_t rows, size_t cols, const char *title)
{
    if (ws->nsteps == ws->cap) {
        size_t cap = ws->cap ? 2 * ws->cap : 16;
        worksheet_step_t *p = realloc(ws->steps, cap * sizeof *p);
        if (!p)
            nh_out_of_memory();
        ws->steps = p;
        ws->cap = cap;
    }
    worksheet_step_t *st = &ws->steps[ws->nsteps++];
    memset(st, 0, sizeof *st);
    st->number = number;
    st->key = key;
    st->shape = shape;
    st->rows = rows;
    st->cols = cols;
    st->title = title;
    return st;
}

static void ws_stop(worksheet_t *ws, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void ws_stop(worksheet_t *ws, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ws->why, sizeof ws->why, fmt, ap);
    va_end(ap);
    ws->stopped = true;
}

/* Names NODE in print as NAME (LaTeX: LATEX) unless it is a leaf, or the
 * name is taken by a variable of the model (then with a suffix). */
static void ws_abbreviate(worksheet_t *ws, const expr_t *node,
                          const char *name, const char *latex,
                          const char *meaning)
{
    if (node->op == EXPR_VAR || node->op == EXPR_CONST ||
        ws->nabbrev == WS_ABBREV_MAX)
        return;
    const expr_graph_t *g = ws->sys->g;
    for (uint32_t v = 0; v < expr_graph_nvars(g); v++)
        if (strcmp(expr_var_name(g, v), name) == 0) {
            name = ws_fmt(ws, "%s_ws", name);
            break;
        }
    ws->abbrev[ws->nabbrev++] = (ws_abbrev_t){node, name, latex, meaning};
}

/* ---- numbers ------------------------------------------------------------- */

/* out[k] = the value of nodes[k] at VARS, through one tape. */
static void ws_eval(const worksheet_t *ws, const expr_t *const *nodes,
                    size_t count, const double *vars, double *out)
{
    if (count == 0)
        return;
    const nh_system_t *sys = ws->sys;
    tape_t *tp = tape_compile(sys->g, nodes, count, expr_graph_nvars(sys->g));
    if (!tp)
        nh_out_of_memory();
    double *work = ws_xalloc(tape_work_size(tp), sizeof *work);
    tape_eval(tp, vars, out, work);
    free(work);
    tape_free(tp);
}

/* Several arrays of nodes evaluated through one tape, so that what they
 * share is computed once. */
typedef struct ws_batch {
    const expr_t *const *nodes;
    size_t count;
    double *out;
} ws_batch_t;

static void ws_eval_batch(const worksheet_t *ws, const ws_batch_t *b,
                          size_t nb, const double *vars)
{
    size_t total = 0;
    for (size_t k = 0; k < nb; k++)
        total += b[k].count;
    const expr_t **all = ws_xalloc(total, sizeof *all);
    double *out = ws_xalloc(total, sizeof *out);
    size_t at = 0;
    for (size_t k = 0; k < nb; k++) {
        memcpy(all + at, b[k].nodes, b[k].count * sizeof *all);
        at += b[k].count;
    }
    ws_eval(ws, all, total, vars, out);
    at = 0;
    for (size_t k = 0; k < nb; k++) {
        memcpy(b[k].out, out + at, b[k].count * sizeof *out);
        at += b[k].count;
    }
    free(all);
    free(out);
}

static bool ws_finite(const double *v, size_t count)
{
    for (size_t k = 0; k < count; k++)
        if (!isfinite(v[k]))
            return false;
    return true;
}

/* inv = a⁻¹ for the n×n matrix A.  Returns -1 when A is singular by
 * linalg's relative pivot test, and then *rank holds its rank. */
static int ws_inverse(const double *a, size_t n, double *inv, size_t *rank)
{
    double *lu = ws_xalloc(n * n, sizeof *lu);
    double *col = ws_xalloc(n, sizeof *col), *w = ws_xalloc(n, sizeof *w);
    size_t *perm = ws_xalloc(n, sizeof *perm);
    memcpy(lu, a, n * n * sizeof *lu);
    int rc = 0;
    if (linalg_lu(lu, n, perm, LINALG_RTOL) != 0) {
        memcpy(lu, a, n * n * sizeof *lu);
        *rank = linalg_rank(lu, n, n, LINALG_RTOL);
        rc = -1;
    } else {
        for (size_t j = 0; j < n; j++) {
            for (size_t i = 0; i < n; i++)
                col[i] = i == j ? 1.0 : 0.0;
            linalg_lu_solve(lu, n, perm, col, w);
            for (size_t i = 0; i < n; i++)
                inv[i * n + j] = col[i];
        }
    }
    free(lu);
    free(col);
    free(w);
    free(perm);
    return rc;
}

/* ---- symbols ------------------------------------------------------------- */

/* The determinant of the k×k submatrix of A (n columns) on rows RI and
 * columns CI, by Laplace expansion along its first row (k ≤ WS_BLOCK_MAX:
 * at most 24 products). */
static const expr_t *ws_sym_det(expr_graph_t *g, const expr_t *const *a,
                                size_t n, const size_t *ri, const size_t *ci,
                                size_t k)
{
    if (k == 0)
        return expr_num(g, 1.0);
    if (k == 1)
        return a[ri[0] * n + ci[0]];
    const expr_t *s = expr_num(g, 0.0);
    size_t sub[WS_BLOCK_MAX];
    for (size_t j = 0; j < k; j++) {
        const expr_t *e = a[ri[0] * n + ci[j]];
        if (expr_is_const(e, 0.0))
            continue;
        size_t ns = 0;
        for (size_t jj = 0; jj < k; jj++)
            if (jj != j)
                sub[ns++] = ci[jj];
        const expr_t *t =
            expr_mul(g, e, ws_sym_det(g, a, n, ri + 1, sub, k - 1));
        s = j % 2 ? expr_sub(g, s, t) : expr_add(g, s, t);
    }
    return s;
}

static size_t ws_find_root(size_t *parent, size_t i)
{
    while (parent[i] != i)
        i = parent[i] = parent[parent[i]];
    return i;
}

/* A⁻¹ for the n×n symbolic matrix A, block by block: the coordinates
 * split into groups that A does not couple, and each group's block is
 * inverted by cofactors, (A⁻¹)_qp = (−1)^{p+q} minor_pq / det.  NULL when
 * a block is larger than WS_BLOCK_MAX or its determinant simplifies to 0
 * (the numbers then tell singular from not). */
static const expr_t **ws_sym_inverse(worksheet_t *ws, const expr_t *const *a,
                                     size_t n, const char *mat,
                                     const char *const *names,
                                     const char *step)
{
    expr_graph_t *g = ws->sys->g;
    size_t *parent = ws_xalloc(n, sizeof *parent);
    size_t *idx = ws_xalloc(n, sizeof *idx);
    for (size_t i = 0; i < n; i++)
        parent[i] = i;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (!expr_is_const(a[i * n + j], 0.0) ||
                !expr_is_const(a[j * n + i], 0.0))
                parent[ws_find_root(parent, i)] = ws_find_root(parent, j);
    const expr_t **inv = ws_nodes(ws, n * n);
    for (size_t k = 0; k < n * n; k++)
        inv[k] = expr_num(g, 0.0);
    bool ok = true;
    for (size_t root = 0; root < n && ok; root++) {
        if (ws_find_root(parent, root) != root)
            continue;
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (ws_find_root(parent, i) == root)
                idx[k++] = i;
        if (k > WS_BLOCK_MAX) {
            ok = false;
            break;
        }
        const expr_t *det = ws_sym_det(g, a, n, idx, idx, k);
        if (expr_is_const(det, 0.0)) {
            ok = false;
            break;
        }
        if (k >= 2 && k == n)
            ws_abbreviate(ws, det, ws_fmt(ws, "det(%s)", mat),
                          ws_fmt(ws, "\\det %s", mat),
                          ws_fmt(ws, "the determinant of %s, %s", mat, step));
        else if (k >= 2) {
            const char *nm[WS_BLOCK_MAX];
            for (size_t s = 0; s < k; s++)
                nm[s] = names[idx[s]];
            const char *blk = ws_join(ws, nm, k);
            ws_abbreviate(ws, det, ws_fmt(ws, "det(%s[%s])", mat, blk),
                          ws_fmt(ws, "\\det %s_{[%s]}", mat, blk),
                          ws_fmt(ws, "the determinant of the block %s of %s, "
                                     "%s", blk, mat, step));
        }
        size_t ri[WS_BLOCK_MAX], ci[WS_BLOCK_MAX];
        for (size_t p = 0; p < k; p++)
            for (size_t q = 0; q < k; q++) {
                size_t nr = 0, nc = 0;
                for (size_t s = 0; s < k; s++) {
                    if (s != p)
                        ri[nr++] = idx[s];
                    if (s != q)
                        ci[nc++] = idx[s];
                }
                const expr_t *minor = ws_sym_det(g, a, n, ri, ci, k - 1);
                if ((p + q) % 2)
                    minor = expr_neg(g, minor);
                inv[idx[q] * n + idx[p]] = expr_div(g, minor, det);
            }
    }
    free(parent);
    free(idx);
    return ok ? inv : NULL;
}

/* ---- the base objects ---------------------------------------------------- */

typedef struct ws_base {
    const expr_t **T;        /* [0]: T, or L in the Lagrangian form */
    const expr_t **dv;       /* for expr_dt: q → q', t → 1, the rest fixed */
    const expr_t **g, **P, **A; /* n×n, n, n */
    const expr_t **C, **Cl, **cq; /* r (f' for a holonomic f), r×n, r */
    bool *holonomic;         /* r */
    bool g_of_q;             /* g depends on q and the parameters only */
    bool quadratic;          /* T = ½ g_ij q'^i q'^j exactly */
} ws_base_t;

static void ws_derive(worksheet_t *ws, ws_base_t *b)
{
    const nh_system_t *sys = ws->sys;
    expr_graph_t *g = sys->g;
    size_t n = sys->n, r = sys->r;
    uint32_t nv = expr_graph_nvars(g);
    bool *vmask = ws_xalloc(nv, sizeof *vmask);
    for (size_t i = 0; i < n; i++)
        vmask[sys->qd[i]] = true;

    ws->lagrangian_form =
        !sys->T || (sys->V && expr_depends_any(g, sys->V, vmask));
    b->T = ws_nodes(ws, 1);
    b->T[0] = ws->lagrangian_form ? sys->L : sys->T;
    const expr_t *T = b->T[0];
    const expr_t *V = ws->lagrangian_form ? NULL : sys->V;

    b->dv = ws_nodes(ws, nv);
    for (size_t i = 0; i < n; i++)
        b->dv[sys->q[i]] = expr_var(g, sys->qd[i]);
    b->dv[sys->t] = expr_num(g, 1.0);

    b->g = ws_nodes(ws, n * n);
    b->P = ws_nodes(ws, n);
    b->A = ws_nodes(ws, n);
    /* repl: q' → 0, for the test that T is a quadratic form */
    const expr_t **zero = ws_xalloc(nv, sizeof *zero);
    for (size_t i = 0; i < n; i++)
        zero[sys->qd[i]] = expr_num(g, 0.0);
    b->quadratic = expr_is_const(expr_subst(g, T, zero), 0.0) &&
                   !expr_depends(g, T, sys->t);
    for (size_t i = 0; i < n; i++) {
        const expr_t *p = expr_diff(g, T, sys->qd[i]);
        for (size_t j = 0; j < n; j++)
            b->g[i * n + j] = expr_diff(g, p, sys->qd[j]);
        /* expr_dt with dv[q'] = NULL: d/dt ∂T/∂q'^i without the
         * accelerations (Benenti's remark after eq. 70). */
        b->P[i] = expr_sub(g, expr_dt(g, p, b->dv),
                           expr_diff(g, T, sys->q[i]));
        b->A[i] = V ? expr_sub(g, sys->Q[i], expr_diff(g, V, sys->q[i]))
                    : sys->Q[i];
        if (!expr_is_const(expr_subst(g, p, zero), 0.0))
            b->quadratic = false;
    }
    /* g depends on q only: no velocity, speed or time in it */
    bool *mask = ws_xalloc(nv, sizeof *mask);
    memcpy(mask, vmask, nv * sizeof *mask);
    for (size_t a = 0; a < sys->m; a++)
        mask[sys->z[a]] = true;
    mask[sys->t] = true;
    b->g_of_q = true;
    for (size_t k = 0; k < n * n; k++)
        if (expr_depends_any(g, b->g[k], mask))
            b->g_of_q = false;
    if (!b->g_of_q)
        b->quadratic = false;

    b->C = ws_nodes(ws, r);
    b->Cl = ws_nodes(ws, r * n);
    b->cq = ws_nodes(ws, r);
    b->holonomic = ws_own(ws, ws_xalloc(r, sizeof *b->holonomic));
    for (size_t a = 0; a < r; a++) {
        b->holonomic[a] = !expr_depends_any(g, sys->C[a], vmask);
        b->C[a] = b->holonomic[a] ? expr_dt(g, sys->C[a], b->dv) : sys->C[a];
        for (size_t i = 0; i < n; i++)
            b->Cl[a * n + i] = expr_diff(g, b->C[a], sys->qd[i]);
        /* Σ q'^i ∂C^a/∂q^i + ∂C^a/∂t: the part of dC^a/dt without q''
         * (Benenti's steps 10 print ∂C/∂q'; see the file comment). */
        b->cq[a] = expr_dt(g, b->C[a], b->dv);
    }
    free(vmask);
    free(mask);
    free(zero);
}

/* "f, h have no velocity: ..." for the holonomic constraints, or NULL. */
static const char *ws_holonomic_note(worksheet_t *ws, const ws_base_t *b)
{
    const nh_system_t *sys = ws->sys;
    const char **names = ws_xalloc(sys->r, sizeof *names);
    size_t k = 0;
    for (size_t a = 0; a < sys->r; a++)
        if (b->holonomic[a])
            names[k++] = sys->cname[a];
    const char *note =
        k == 0 ? NULL
        : k == 1
            ? ws_fmt(ws, "%s has no velocity: it enters as its time "
                         "derivative f' = 0 (eq. 12)", names[0])
            : ws_fmt(ws, "%s have no velocity: they enter as their time "
                         "derivatives f' = 0 (eq. 12)",
                     ws_join(ws, names, k));
    free(names);
    return note;
}

/* ---- the preliminary sheet (Benenti §12.1) ------------------------------- */

static void ws_preliminary(worksheet_t *ws, const ws_base_t *b)
{
    const nh_system_t *sys = ws->sys;
    expr_graph_t *g = sys->g;
    size_t n = sys->n, r = sys->r;
    const double *v = ws->state;
    worksheet_step_t *st;

    st = ws_push(ws, "1", "q", WORKSHEET_TEXT, 0, 0,
                 "the Lagrangian coordinates (q^i) of the holonomic system, "
                 "the constraints aside");
    st->note = ws_fmt(ws, "q = (%s), n = %zu", ws_join(ws, sys->qname, n), n);

    if (r == 0) {
        ws_push(ws, "2", "C", WORKSHEET_TEXT, 0, 0,
                "the constraints C^a(q, q') = 0: none declared, the system "
                "is holonomic");
    } else {
        double *cv = ws_vals(ws, r), *clv = ws_vals(ws, r * n);
        ws_eval(ws, b->C, r, v, cv);
        ws_eval(ws, b->Cl, r * n, v, clv);
        st = ws_push(ws, "2", "C", WORKSHEET_VECTOR, 1, r,
                     "C^a(q, q', t), the constraints C^a = 0 in implicit "
                     "form (eq. 6); at the state, their residuals");
        st->col_names = sys->cname;
        st->sym = b->C;
        st->val = cv;
        st->note = ws_holonomic_note(ws, b);
        double *tmp = ws_xalloc(r * n, sizeof *tmp);
        memcpy(tmp, clv, r * n * sizeof *tmp);
        size_t rank = linalg_rank(tmp, r, n, LINALG_RTOL);
        free(tmp);
        st = ws_push(ws, "", "C_i", WORKSHEET_MATRIX, r, n,
                     "C^a_i = ∂C^a/∂q'^i, one row per constraint (eq. 8)");
        st->row_names = sys->cname;
        st->col_names = sys->qname;
        st->sym = b->Cl;
        st->val = clv;
        st->note =
            rank == r
                ? ws_fmt(ws, "rank %zu of %zu at this state: a regular state "
                             "(eq. 7)", rank, r)
                : ws_fmt(ws, "rank %zu of %zu at this state: a singular "
                             "state (eq. 7), where the sheets of the second "
                             "kind cannot be completed", rank, r);
    }

    ws_push(ws, "3", "ideal", WORKSHEET_TEXT, 0, 0,
            "the constraints are ideal: R_i = λ_a C^a_i (Theorem 11.2; for "
            "nonlinear constraints this is Chetaev's rule), as nh assumes "
            "for every constraint");

    double *tv = ws_vals(ws, 1), *gv = ws_vals(ws, n * n);
    ws_eval(ws, b->T, 1, v, tv);
    ws_eval(ws, b->g, n * n, v, gv);
    st = ws_push(ws, "4", "T", WORKSHEET_SCALAR, 1, 1,
                 ws->lagrangian_form
                     ? "L, the Lagrangian (in the Lagrangian form T stands "
                       "for L)"
                     : "T, the kinetic energy (eq. 14)");
    st->sym = b->T;
    st->val = tv;
    st = ws_push(ws, "", "g", WORKSHEET_MATRIX, n, n,
                 ws->lagrangian_form
                     ? "g_ij = ∂²L/∂q'^i∂q'^j, the kinetic metric (eq. 14)"
                     : "g_ij = ∂²T/∂q'^i∂q'^j, the kinetic metric (eq. 14)");
    st->row_names = st->col_names = sys->qname;
    st->sym = b->g;
    st->val = gv;

    double *pv = ws_vals(ws, n);
    ws_eval(ws, b->P, n, v, pv);
    st = ws_push(ws, "5", "P", WORKSHEET_VECTOR, 1, n,
                 "P_i = d/dt ∂T/∂q'^i − ∂T/∂q^i without the accelerations, "
                 "from the Lagrangian binomials T_i = g_ij q''^j + P_i "
                 "(eqs. 69–70)");
    st->col_names = sys->qname;
    st->sym = b->P;
    st->val = pv;
    if (ws->lagrangian_form)
        st->note = "in the Lagrangian form P_i also holds the potential "
                   "forces, ∂V/∂q^i";

    /* The variant of step 5: Γ_jk,i = ½(∂_j g_ki + ∂_k g_ij − ∂_i g_jk),
     * eq. 16 (the text says "formula (59)"; eq. 59 is Gauss's function). */
    const char *ctitle = "Γ_jk,i = ½(∂_j g_ki + ∂_k g_ij − ∂_i g_jk), the "
                         "Christoffel symbols (the variant of step 5, eq. 16)";
    if (!b->g_of_q) {
        ws_push(ws, "", "Christoffel", WORKSHEET_TEXT, 0, 0,
                "the Christoffel symbols (the variant of step 5, eq. 16) are "
                "not those of a metric on Q here: g depends on the "
                "velocities, the speeds or t, and P_i replaces them");
        goto forces;
    }
    size_t count = 0;
    const expr_t **gam = ws_nodes(ws, n * n * n);
    const char **lab = ws_own(ws, ws_xalloc(n * n * n, sizeof *lab));
    const char **labx = ws_own(ws, ws_xalloc(n * n * n, sizeof *labx));
    const expr_t *half = expr_num(g, 0.5);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            for (size_t k = j; k < n; k++) {
                const expr_t *s = expr_add(
                    g, expr_diff(g, b->g[k * n + i], sys->q[j]),
                    expr_diff(g, b->g[i * n + j], sys->q[k]));
                s = expr_mul(g, half,
                             expr_sub(g, s,
                                      expr_diff(g, b->g[j * n + k],
                                                sys->q[i])));
                if (expr_is_const(s, 0.0))
                    continue;
                gam[count] = s;
                lab[count] = ws_fmt(ws, "Γ[%s, %s; %s]", sys->qname[j],
                                    sys->qname[k], sys->qname[i]);
                labx[count] = ws_fmt(ws, "\\Gamma_{%s %s, %s}",
                                     ws_var_latex(ws, sys->q[j]),
                                     ws_var_latex(ws, sys->q[k]),
                                     ws_var_latex(ws, sys->q[i]));
                count++;
            }
    if (count == 0) {
        st = ws_push(ws, "", "Christoffel", WORKSHEET_TEXT, 0, 0, ctitle);
        st->note = "all vanish: g is constant";
    } else {
        double *gmv = ws_vals(ws, count);
        ws_eval(ws, gam, count, v, gmv);
        st = ws_push(ws, "", "Christoffel", WORKSHEET_LIST, count, 1, ctitle);
        st->sym = gam;
        st->val = gmv;
        st->row_names = lab;
        st->row_latex = labx;
        st->note = "the nonzero ones, j ≤ k (they are symmetric in j, k)";
    }
    if (!b->quadratic)
        st->note = ws_fmt(ws,
                          "%s; T is not a quadratic form in the velocities "
                          "alone, so P_i holds more than Γ_jk,i q'^j q'^k",
                          st->note);

forces:;
    double *av = ws_vals(ws, n);
    ws_eval(ws, b->A, n, v, av);
    st = ws_push(ws, "A", "A", WORKSHEET_VECTOR, 1, n,
                 ws->lagrangian_form
                     ? "A_i = Q_i, the declared forces (Lagrangian form: the "
                       "potential forces are in P_i)"
                     : "A_i = Q_i − ∂V/∂q^i, the Lagrangian active forces "
                       "(eq. 18)");
    st->col_names = sys->qname;
    st->sym = b->A;
    st->val = av;
}

/* ---- the sheet of the first kind (Benenti §12.2) ------------------------- */

/* Benenti eq. 27 (Maggi's equations in explicit form), checked against
 * the Lagrange equations g q'' + P = A + R (eq. 41): along q' = ψ(q,z,t),
 * q'' = β + Ψ z' with β = ∂ψ/∂q ψ + ∂ψ/∂t and Ψ = ∂ψ/∂z (eq. 22);
 * projecting on the columns of Ψ, which annihilate R (eq. 26),
 * Ψᵀ g Ψ z' = Ψᵀ(A − P − g β), i.e. G z' = Ψᵀ(A − Γ − B) = Ψᵀ Φ. */
static void ws_first(worksheet_t *ws, const ws_base_t *b)
{
    const nh_system_t *sys = ws->sys;
    expr_graph_t *g = sys->g;
    size_t n = sys->n, m = sys->m;
    uint32_t nv = expr_graph_nvars(g);
    worksheet_step_t *st;

    /* q' = ψ: the substitution, the d/dt along it, and the state with
     * q' = ψ(q, z, t) (as eom_accel sets it for maggi) */
    const expr_t **repl = ws_xalloc(nv, sizeof *repl);
    const expr_t **dvp = ws_xalloc(nv, sizeof *dvp);
    for (size_t i = 0; i < n; i++) {
        repl[sys->qd[i]] = sys->psi[i];
        dvp[sys->q[i]] = sys->psi[i];
    }
    dvp[sys->t] = expr_num(g, 1.0);
    double *vs = ws_xalloc(nv, sizeof *vs);
    memcpy(vs, ws->state, nv * sizeof *vs);
    double *psiv = ws_vals(ws, n);
    ws_eval(ws, sys->psi, n, ws->state, psiv);
    for (size_t i = 0; i < n; i++)
        vs[sys->qd[i]] = psiv[i];

    /* symbolic base at q' = ψ; Psi[i*m + a] = ∂ψ^i/∂z^α */
    const expr_t **Psi = ws_nodes(ws, n * m), **gs = ws_nodes(ws, n * n);
    const expr_t **Gam = ws_nodes(ws, n), **As = ws_nodes(ws, n);
    const expr_t **beta = ws_nodes(ws, n);
    for (size_t i = 0; i < n; i++) {
        for (size_t a = 0; a < m; a++)
            Psi[i * m + a] = expr_diff(g, sys->psi[i], sys->z[a]);
        for (size_t j = 0; j < n; j++)
            gs[i * n + j] = expr_subst(g, b->g[i * n + j], repl);
        Gam[i] = expr_subst(g, b->P[i], repl);
        As[i] = expr_subst(g, b->A[i], repl);
        beta[i] = expr_dt(g, sys->psi[i], dvp);
    }
    free(repl);
    free(dvp);
    double *Psiv = ws_vals(ws, n * m), *gv = ws_xalloc(n * n, sizeof *gv);
    double *Gamv = ws_vals(ws, n), *Av = ws_vals(ws, n);
    double *betav = ws_xalloc(n, sizeof *betav);
    ws_eval_batch(ws,
                  (ws_batch_t[]){{Psi, n * m, Psiv},
                                 {gs, n * n, gv},
                                 {Gam, n, Gamv},
                                 {As, n, Av},
                                 {beta, n, betav}},
                  5, vs);

    /* 1. */
    st = ws_push(ws, "1", "psi", WORKSHEET_VECTOR, 1, n,
                 "ψ^i(q, z, t): the constraints in parametric form q'^i = "
                 "ψ^i (eq. 5)");
    st->col_names = sys->qname;
    st->sym = sys->psi;
    st->val = psiv;
    if (!ws_finite(psiv, n) || !ws_finite(Psiv, n * m) ||
        !ws_finite(gv, n * n) || !ws_finite(Gamv, n) || !ws_finite(Av, n) ||
        !ws_finite(betav, n)) {
        ws_stop(ws, "the objects of the first kind are not finite at this "
                    "state (a division by zero or a function outside its "
                    "domain)");
        goto done;
    }

    /* 2. the vectors ψ_α, one row per speed */
    const expr_t **psil = ws_nodes(ws, m * n);
    double *psilv = ws_vals(ws, m * n);
    for (size_t a = 0; a < m; a++)
        for (size_t i = 0; i < n; i++) {
            psil[a * n + i] = Psi[i * m + a];
            psilv[a * n + i] = Psiv[i * m + a];
        }
    st = ws_push(ws, "2", "psi_a", WORKSHEET_MATRIX, m, n,
                 "ψ_α = [∂ψ^i/∂z^α], one row per speed α (eq. 8)");
    st->row_names = sys->zname;
    st->col_names = sys->qname;
    st->sym = psil;
    st->val = psilv;

    /* 3. G_αβ = g_ij ψ^i_α ψ^j_β (eq. 24), g at q' = ψ */
    const expr_t **G = ws_nodes(ws, m * m);
    double *Gv = ws_vals(ws, m * m);
    for (size_t a = 0; a < m; a++)
        for (size_t c = 0; c < m; c++) {
            const expr_t *s = expr_num(g, 0.0);
            double sv = 0.0;
            for (size_t i = 0; i < n; i++) {
                const expr_t *gi = expr_num(g, 0.0);
                double giv = 0.0;
                for (size_t j = 0; j < n; j++) {
                    gi = expr_add(g, gi, expr_mul(g, gs[i * n + j],
                                                  Psi[j * m + c]));
                    giv += gv[i * n + j] * Psiv[j * m + c];
                }
                s = expr_add(g, s, expr_mul(g, Psi[i * m + a], gi));
                sv += Psiv[i * m + a] * giv;
            }
            G[a * m + c] = s;
            Gv[a * m + c] = sv;
        }
    st = ws_push(ws, "3", "G", WORKSHEET_MATRIX, m, m,
                 "G_αβ = g_ij ψ^i_α ψ^j_β = ψ_α · ψ_β (eq. 24; g at q' = ψ)");
    st->row_names = st->col_names = sys->zname;
    st->sym = G;
    st->val = Gv;

    /* 4. G^αβ */
    double *Giv = ws_vals(ws, m * m);
    size_t rank = 0;
    if (ws_inverse(Gv, m, Giv, &rank) != 0) {
        ws_stop(ws, "G_αβ is singular at this state (rank %zu of %zu): the "
                    "speeds do not parametrise the constraints here "
                    "(eq. 7)", rank, m);
        goto done;
    }
    const expr_t **Gi = ws_sym_inverse(ws, G, m, "G", sys->zname, "step 3");
    st = ws_push(ws, "4", "Ginv", WORKSHEET_MATRIX, m, m,
                 "G^αβ, the inverse of G_αβ");
    st->row_names = st->col_names = sys->zname;
    st->sym = Gi;
    st->sym_absent = "G has a block larger than 4×4: inverted at the state "
                     "only";
    st->val = Giv;

    /* 5. ψ^α = G^αβ ψ_β */
    const expr_t **psiu = Gi ? ws_nodes(ws, m * n) : NULL;
    double *psiuv = ws_vals(ws, m * n);
    for (size_t a = 0; a < m; a++)
        for (size_t i = 0; i < n; i++) {
            const expr_t *s = expr_num(g, 0.0);
            double sv = 0.0;
            for (size_t c = 0; c < m; c++) {
                if (Gi)
                    s = expr_add(g, s, expr_mul(g, Gi[a * m + c],
                                                Psi[i * m + c]));
                sv += Giv[a * m + c] * Psiv[i * m + c];
            }
            if (psiu)
                psiu[a * n + i] = s;
            psiuv[a * n + i] = sv;
        }
    st = ws_push(ws, "5", "psi^a", WORKSHEET_MATRIX, m, n,
                 "ψ^α = G^αβ ψ_β, one row per speed α");
    st->row_names = sys->zname;
    st->col_names = sys->qname;
    st->sym = psiu;
    st->sym_absent = "needs G^αβ of step 4";
    st->val = psiuv;

    /* 6. B_i = g_ij (∂ψ^j/∂q^h ψ^h + ∂ψ^j/∂t) */
    const expr_t **B = ws_nodes(ws, n);
    double *Bv = ws_vals(ws, n);
    for (size_t i = 0; i < n; i++) {
        const expr_t *s = expr_num(g, 0.0);
        double sv = 0.0;
        for (size_t j = 0; j < n; j++) {
            s = expr_add(g, s, expr_mul(g, gs[i * n + j], beta[j]));
            sv += gv[i * n + j] * betav[j];
        }
        B[i] = s;
        Bv[i] = sv;
    }
    st = ws_push(ws, "6", "B", WORKSHEET_VECTOR, 1, n,
                 "B_i = g_ij ∂ψ^j/∂q^h ψ^h (+ g_ij ∂ψ^j/∂t when ψ depends "
                 "on t)");
    st->col_names = sys->qname;
    st->sym = B;
    st->val = Bv;

    /* 7. Γ_i: P_i of preliminary step 5 at q' = ψ (the text says step 6) */
    st = ws_push(ws, "7", "Gamma", WORKSHEET_VECTOR, 1, n,
                 "Γ_i = Γ_jk,i ψ^j ψ^k: the P_i of preliminary step 5 with "
                 "q' = ψ");
    st->col_names = sys->qname;
    st->sym = Gam;
    st->val = Gamv;

    /* 8. Φ = A − B − Γ */
    const expr_t **Phi = ws_nodes(ws, n);
    double *Phiv = ws_vals(ws, n);
    for (size_t i = 0; i < n; i++) {
        Phi[i] = expr_sub(g, expr_sub(g, As[i], B[i]), Gam[i]);
        Phiv[i] = Av[i] - Bv[i] - Gamv[i];
    }
    st = ws_push(ws, "8", "Phi", WORKSHEET_VECTOR, 1, n,
                 "Φ_i = A_i − B_i − Γ_i");
    st->col_names = sys->qname;
    st->sym = Phi;
    st->val = Phiv;

    /* 9. Z^α = ψ^αi Φ_i (eqs. 29, 31) */
    const expr_t **Z = psiu ? ws_nodes(ws, m) : NULL;
    double *Zv = ws_vals(ws, m);
    for (size_t a = 0; a < m; a++) {
        const expr_t *s = expr_num(g, 0.0);
        double sv = 0.0;
        for (size_t i = 0; i < n; i++) {
            if (psiu)
                s = expr_add(g, s, expr_mul(g, psiu[a * n + i], Phi[i]));
            sv += psiuv[a * n + i] * Phiv[i];
        }
        if (Z)
            Z[a] = s;
        Zv[a] = sv;
    }
    st = ws_push(ws, "9", "Z", WORKSHEET_VECTOR, 1, m,
                 "Z^α = ⟨ψ^α, Φ⟩ = ψ^αi Φ_i (eqs. 29, 31)");
    st->col_names = sys->zname;
    st->sym = Z;
    st->sym_absent = "needs ψ^α of step 5";
    st->val = Zv;

    /* 10. the equations: q' = ψ, z' = Z (eq. 27); then q'' (eq. 22) */
    double *eqv = ws_vals(ws, n + m);
    const char **lab = ws_own(ws, ws_xalloc(n + m, sizeof *lab));
    const char **labx = ws_own(ws, ws_xalloc(n + m, sizeof *labx));
    for (size_t i = 0; i < n; i++) {
        eqv[i] = psiv[i];
        lab[i] = ws_fmt(ws, "%s'", sys->qname[i]);
        labx[i] = ws_var_latex(ws, sys->qd[i]);
    }
    for (size_t a = 0; a < m; a++) {
        eqv[n + a] = Zv[a];
        lab[n + a] = ws_fmt(ws, "%s'", sys->zname[a]);
        labx[n + a] = ws_var_latex(ws, sys->zd[a]);
    }
    st = ws_push(ws, "10", "dz", WORKSHEET_LIST, n + m, 1,
                 "dq^i/dt = ψ^i, dz^α/dt = Z^α: the equations of the first "
                 "kind (eq. 27)");
    st->row_names = lab;
    st->row_latex = labx;
    st->sym_absent = "the right sides are ψ^i of step 1 and Z^α of step 9";
    st->val = eqv;

    const expr_t **qdd = Z ? ws_nodes(ws, n) : NULL;
    double *qddv = ws_vals(ws, n);
    for (size_t i = 0; i < n; i++) {
        const expr_t *s = beta[i];
        double sv = betav[i];
        for (size_t a = 0; a < m; a++) {
            if (Z)
                s = expr_add(g, s, expr_mul(g, Psi[i * m + a], Z[a]));
            sv += Psiv[i * m + a] * Zv[a];
        }
        if (qdd)
            qdd[i] = s;
        qddv[i] = sv;
    }
    st = ws_push(ws, "", "qdd", WORKSHEET_LIST, n, 1,
                 "q''^i = ∂ψ^i/∂q^h ψ^h + ∂ψ^i/∂t + ψ^i_α dz^α/dt, the "
                 "accelerations along the motion (eq. 22)");
    st->row_names = ws_suffixed(ws, sys->qname, n, "''");
    const char **qlx = ws_own(ws, ws_xalloc(n, sizeof *qlx));
    for (size_t i = 0; i < n; i++)
        qlx[i] = ws_var_latex(ws, sys->qdd[i]);
    st->row_latex = qlx;
    st->sym = qdd;
    st->sym_absent = "needs Z^α of step 9";
    st->val = qddv;

    /* 11. the forces */
    st = ws_push(ws, "11", "A", WORKSHEET_VECTOR, 1, n,
                 ws->lagrangian_form
                     ? "A_i = Q_i at q' = ψ, the declared forces (Lagrangian "
                       "form: the potential forces are in Γ_i)"
                     : "A_i = Q_i − ∂V/∂q^i at q' = ψ, the Lagrangian forces "
                       "(eq. 18)");
    st->col_names = sys->qname;
    st->sym = As;
    st->val = Av;

done:
    free(vs);
    free(gv);
    free(betav);
}

/* ---- the sheets of the second kind (Benenti §12.3, §12.4) ---------------- */

/* Benenti eqs. 43–48, checked against the Lagrange equations with
 * multipliers: g q'' + P = A + λ_a C^a_i (eqs. 36, 41) gives
 * q'' = F + C^ai λ_a with F = g⁻¹(A − P) (eq. 44); the constraint's time
 * derivative, C^a_i q''^i + q'^i ∂C^a/∂q^i + ∂C^a/∂t = 0 (eq. 47 with
 * ∂C/∂q, not ∂C/∂q'), gives H^ab λ_b = −(C^a_i F^i + c^a) with
 * H^ab = C^ai C^b_i, so λ_a = −H_ab(C^b_i F^i + c^b) (eq. 43) and
 * q''^i = F^i − X_a^i (C^a_j F^j + c^a) with X_a^i = H_ab C^bi (H is
 * symmetric) — which is D^i = (δ^i_j − π_j^i) F^j − X_a^i c^a with
 * π_j^i = C^a_j X_a^i (eq. 48). */
static void ws_second(worksheet_t *ws, const ws_base_t *b, bool reduced)
{
    const nh_system_t *sys = ws->sys;
    expr_graph_t *g = sys->g;
    size_t n = sys->n, r = sys->r;
    const double *v = ws->state;
    const expr_t *zero = expr_num(g, 0.0);
    worksheet_step_t *st;
    size_t rank = 0;

    double *gv = ws_xalloc(n * n, sizeof *gv), *Pv = ws_xalloc(n, sizeof *Pv);
    double *Av = ws_vals(ws, n), *Clv = ws_vals(ws, r * n);
    double *cqv = ws_vals(ws, r);
    ws_eval_batch(ws,
                  (ws_batch_t[]){{b->g, n * n, gv},
                                 {b->P, n, Pv},
                                 {b->A, n, Av},
                                 {b->Cl, r * n, Clv},
                                 {b->cq, r, cqv}},
                  5, v);
    if (!ws_finite(gv, n * n) || !ws_finite(Pv, n) || !ws_finite(Av, n) ||
        !ws_finite(Clv, r * n) || !ws_finite(cqv, r)) {
        ws_stop(ws, "the objects of the second kind are not finite at this "
                    "state (a division by zero or a function outside its "
                    "domain)");
        goto done;
    }

    /* 1. g^ij */
    double *giv = ws_vals(ws, n * n);
    if (ws_inverse(gv, n, giv, &rank) != 0) {
        ws_stop(ws, "the kinetic metric g_ij is singular at this state "
                    "(rank %zu of %zu): the sheet needs its inverse", rank, n);
        goto done;
    }
    const expr_t **gi =
        ws_sym_inverse(ws, b->g, n, "g", sys->qname, "preliminary step 4");
    st = ws_push(ws, "1", "ginv", WORKSHEET_MATRIX, n, n,
                 "g^ij, the inverse of the kinetic metric g_ij (preliminary "
                 "step 4)");
    st->row_names = st->col_names = sys->qname;
    st->sym = gi;
    st->sym_absent = "g has a block larger than 4×4: inverted at the state "
                     "only";
    st->val = giv;

    /* 2. C^a_i */
    if (reduced) {
        st = ws_push(ws, "2", "C_i", WORKSHEET_VECTOR, 1, n,
                     "C_i = ∂C/∂q'^i (eq. 8)");
        st->col_names = sys->qname;
    } else {
        st = ws_push(ws, "2", "C_i", WORKSHEET_MATRIX, r, n,
                     "C^a_i = ∂C^a/∂q'^i, one row per constraint (eq. 8)");
        st->row_names = sys->cname;
        st->col_names = sys->qname;
    }
    st->sym = b->Cl;
    st->val = Clv;
    st->note = ws_holonomic_note(ws, b);

    /* 3. C^ai = g^ij C^a_j */
    const expr_t **Cu = gi ? ws_nodes(ws, r * n) : NULL;
    double *Cuv = ws_vals(ws, r * n);
    ws_abt(g, b->Cl, Clv, gi, giv, r, n, n, Cu, Cuv);
    if (reduced) {
        st = ws_push(ws, "3", "C^i", WORKSHEET_VECTOR, 1, n,
                     "C^i = g^ij C_j");
        st->col_names = sys->qname;
    } else {
        st = ws_push(ws, "3", "C^i", WORKSHEET_MATRIX, r, n,
                     "C^ai = g^ij C^a_j, one row per constraint");
        st->row_names = sys->cname;
        st->col_names = sys->qname;
    }
    st->sym = Cu;
    st->sym_absent = "needs g^ij of step 1";
    st->val = Cuv;

    /* 4. H^ab = C^ai C^b_i (eq. 45) */
    const expr_t **H = Cu ? ws_nodes(ws, r * r) : NULL;
    double *Hv = ws_vals(ws, r * r);
    ws_abt(g, Cu, Cuv, b->Cl, Clv, r, r, n, H, Hv);
    if (reduced)
        st = ws_push(ws, "4", "H", WORKSHEET_SCALAR, 1, 1,
                     "H = C^i C_i (eq. 45 for one constraint)");
    else {
        st = ws_push(ws, "4", "H", WORKSHEET_MATRIX, r, r,
                     "H^ab = g^ij C^a_i C^b_j = C^ai C^b_i (eq. 45)");
        st->row_names = st->col_names = sys->cname;
    }
    st->sym = H;
    st->sym_absent = "needs C^i of step 3";
    st->val = Hv;

    /* 5. H_ab (the reduced sheet goes straight to X = H⁻¹ C^i) */
    double *Hiv = ws_vals(ws, r * r);
    if (ws_inverse(Hv, r, Hiv, &rank) != 0) {
        ws_stop(ws, "H%s is singular at this state (rank %zu of %zu): the "
                    "rank of C^a_i drops, a singular state of the "
                    "constraints (eq. 7)", reduced ? "" : "^ab", rank, r);
        goto done;
    }
    const expr_t **Hi =
        H ? ws_sym_inverse(ws, H, r, "H", sys->cname, "step 4") : NULL;
    if (r == 1 && H)
        ws_abbreviate(ws, H[0], "H", "H",
                      reduced ? "the scalar H = C^i C_i of step 4"
                              : "H^11 of step 4");
    if (!reduced) {
        st = ws_push(ws, "5", "Hinv", WORKSHEET_MATRIX, r, r,
                     "H_ab, the inverse of H^ab");
        st->row_names = st->col_names = sys->cname;
        st->sym = Hi;
        st->sym_absent = H ? "H has a block larger than 4×4: inverted at the "
                             "state only"
                           : "needs H^ab of step 4";
        st->val = Hiv;
    }

    /* X_a^i = H_ab C^bi (step 6; the text prints G_ab for H_ab) */
    const expr_t **X = Hi && Cu ? ws_nodes(ws, r * n) : NULL;
    double *Xv = ws_vals(ws, r * n);
    for (size_t a = 0; a < r; a++)
        for (size_t i = 0; i < n; i++) {
            const expr_t *s = zero;
            double sv = 0.0;
            for (size_t c = 0; c < r; c++) {
                if (X)
                    s = expr_add(g, s, expr_mul(g, Hi[a * r + c],
                                                Cu[c * n + i]));
                sv += Hiv[a * r + c] * Cuv[c * n + i];
            }
            if (X)
                X[a * n + i] = s;
            Xv[a * n + i] = sv;
        }
    if (reduced) {
        st = ws_push(ws, "5", "X", WORKSHEET_VECTOR, 1, n,
                     "X^i = H⁻¹ C^i");
        st->col_names = sys->qname;
    } else {
        st = ws_push(ws, "6", "X", WORKSHEET_MATRIX, r, n,
                     "X_a^i = H_ab C^bi, one row per constraint");
        st->row_names = sys->cname;
        st->col_names = sys->qname;
    }
    st->sym = X;
    st->sym_absent = "needs H and C^i";
    st->val = Xv;

    /* π_i^j = C^a_i X_a^j, row i, column j */
    const expr_t **pi = X ? ws_nodes(ws, n * n) : NULL;
    double *piv = ws_vals(ws, n * n);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            const expr_t *s = zero;
            double sv = 0.0;
            for (size_t a = 0; a < r; a++) {
                if (X)
                    s = expr_add(g, s, expr_mul(g, b->Cl[a * n + i],
                                                X[a * n + j]));
                sv += Clv[a * n + i] * Xv[a * n + j];
            }
            if (pi)
                pi[i * n + j] = s;
            piv[i * n + j] = sv;
        }
    st = ws_push(ws, reduced ? "6" : "7", "pi", WORKSHEET_MATRIX, n, n,
                 reduced ? "π_i^j = C_i X^j (i the row, j the column)"
                         : "π_i^j = C^a_i X_a^j (i the row, j the column)");
    st->row_names = st->col_names = sys->qname;
    st->sym = pi;
    st->sym_absent = "needs X";
    st->val = piv;

    if (reduced) {
        const expr_t **dp = pi ? ws_nodes(ws, n * n) : NULL;
        double *dpv = ws_vals(ws, n * n);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++) {
                double d = i == j ? 1.0 : 0.0;
                if (dp)
                    dp[i * n + j] = expr_sub(g, expr_num(g, d), pi[i * n + j]);
                dpv[i * n + j] = d - piv[i * n + j];
            }
        st = ws_push(ws, "7", "delta_pi", WORKSHEET_MATRIX, n, n,
                     "δ_i^j − π_i^j (i the row, j the column)");
        st->row_names = st->col_names = sys->qname;
        st->sym = dp;
        st->sym_absent = "needs π";
        st->val = dpv;
    }

    /* Γ^i_hk q'^h q'^k = g^ij P_j;  A^i = g^ij A_j;  F = A^i − Γ^i (eq. 44) */
    const expr_t **Gu = gi ? ws_nodes(ws, n) : NULL;
    const expr_t **Au = gi ? ws_nodes(ws, n) : NULL;
    const expr_t **F = gi ? ws_nodes(ws, n) : NULL;
    double *Guv = ws_vals(ws, n), *Auv = ws_vals(ws, n), *Fv = ws_vals(ws, n);
    for (size_t i = 0; i < n; i++) {
        const expr_t *s = zero, *sa = zero;
        double sv = 0.0, sav = 0.0;
        for (size_t j = 0; j < n; j++) {
            if (gi) {
                s = expr_add(g, s, expr_mul(g, gi[i * n + j], b->P[j]));
                sa = expr_add(g, sa, expr_mul(g, gi[i * n + j], b->A[j]));
            }
            sv += giv[i * n + j] * Pv[j];
            sav += giv[i * n + j] * Av[j];
        }
        if (gi) {
            Gu[i] = s;
            Au[i] = sa;
            F[i] = expr_sub(g, sa, s);
        }
        Guv[i] = sv;
        Auv[i] = sav;
        Fv[i] = sav - sv;
    }
    st = ws_push(ws, "8", "Gamma", WORKSHEET_VECTOR, 1, n,
                 "Γ^i_hk q'^h q'^k = g^ij P_j (P_j: preliminary step 5)");
    st->col_names = sys->qname;
    st->sym = Gu;
    st->sym_absent = "needs g^ij of step 1";
    st->val = Guv;
    st = ws_push(ws, "9", "F", WORKSHEET_VECTOR, 1, n,
                 "F^i = A^i − Γ^i_hk q'^h q'^k, with A^i = g^ij A_j (eq. 44)");
    st->col_names = sys->qname;
    st->sym = F;
    st->sym_absent = "needs g^ij of step 1";
    st->val = Fv;

    /* (δ^i_j − π_j^i) F^j = F^i − X_a^i (C^a_j F^j): the contraction runs
     * over π's first (row) index, as eq. 48 shows.  The numbers go through
     * π as the sheet does; the symbols take the regrouped right side,
     * which prints far shorter: kF^a = C^a_j F^j. */
    const expr_t **kF = X && F ? ws_nodes(ws, r) : NULL;
    for (size_t a = 0; kF && a < r; a++) {
        const expr_t *s = zero;
        for (size_t j = 0; j < n; j++)
            s = expr_add(g, s, expr_mul(g, b->Cl[a * n + j], F[j]));
        kF[a] = s;
    }
    const expr_t **dpF = kF ? ws_nodes(ws, n) : NULL;
    double *dpFv = ws_vals(ws, n);
    for (size_t i = 0; i < n; i++) {
        const expr_t *s = dpF ? F[i] : zero;
        double sv = Fv[i];
        for (size_t j = 0; j < n; j++)
            sv -= piv[j * n + i] * Fv[j];
        for (size_t a = 0; dpF && a < r; a++)
            s = expr_sub(g, s, expr_mul(g, X[a * n + i], kF[a]));
        if (dpF)
            dpF[i] = s;
        dpFv[i] = sv;
    }
    if (!reduced) {
        st = ws_push(ws, "", "dpF", WORKSHEET_VECTOR, 1, n,
                     "(δ^i_j − π_j^i) F^j");
        st->col_names = sys->qname;
        st->sym = dpF;
        st->sym_absent = "needs π and F";
        st->val = dpFv;
    }

    /* 10. q'^i ∂C^a/∂q^i (+ ∂C^a/∂t) — the text prints ∂C/∂q'^i */
    if (reduced) {
        st = ws_push(ws, "10", "cq", WORKSHEET_SCALAR, 1, 1,
                     "q'^i ∂C/∂q^i (+ ∂C/∂t when C depends on t)");
    } else {
        st = ws_push(ws, "10", "cq", WORKSHEET_VECTOR, 1, r,
                     "q'^i ∂C^a/∂q^i (+ ∂C^a/∂t when C^a depends on t)");
        st->col_names = sys->cname;
    }
    st->sym = b->cq;
    st->val = cqv;

    /* 11. X_a^i q'^j ∂C^a/∂q^j, and D^i */
    const expr_t **Xc = X ? ws_nodes(ws, n) : NULL;
    const expr_t **D = Xc && dpF ? ws_nodes(ws, n) : NULL;
    double *Xcv = ws_vals(ws, n), *Dv = ws_vals(ws, n);
    for (size_t i = 0; i < n; i++) {
        const expr_t *s = zero;
        double sv = 0.0;
        for (size_t a = 0; a < r; a++) {
            if (Xc)
                s = expr_add(g, s, expr_mul(g, X[a * n + i], b->cq[a]));
            sv += Xv[a * n + i] * cqv[a];
        }
        if (Xc)
            Xc[i] = s;
        if (D) {
            /* regrouped: F^i − X_a^i (C^a_j F^j + q'^j ∂C^a/∂q^j) */
            const expr_t *d = F[i];
            for (size_t a = 0; a < r; a++)
                d = expr_sub(g, d, expr_mul(g, X[a * n + i],
                                            expr_add(g, kF[a], b->cq[a])));
            D[i] = d;
        }
        Xcv[i] = sv;
        Dv[i] = dpFv[i] - sv;
    }
    if (!reduced) {
        st = ws_push(ws, "11", "Xc", WORKSHEET_VECTOR, 1, n,
                     "X_a^i q'^j ∂C^a/∂q^j");
        st->col_names = sys->qname;
        st->sym = Xc;
        st->sym_absent = "needs X";
        st->val = Xcv;
    }
    st = ws_push(ws, reduced ? "11" : "12", "D", WORKSHEET_VECTOR, 1, n,
                 reduced ? "D^i = (δ^i_ℓ − π_ℓ^i) F^ℓ − q'^ℓ ∂C/∂q^ℓ X^i "
                           "(eq. 71)"
                         : "D^i = (δ^i_j − π_j^i) F^j − X_a^i q'^ℓ "
                           "∂C^a/∂q^ℓ (eq. 48)");
    st->col_names = sys->qname;
    st->sym = D;
    st->sym_absent = "needs the steps before";
    st->val = Dv;

    /* 12./13. the equations */
    st = ws_push(ws, reduced ? "12" : "13", "qdd", WORKSHEET_LIST, n, 1,
                 "dq^i/dt = q'^i, dq'^i/dt = D^i: the equations of the "
                 "second kind (eq. 48)");
    st->row_names = ws_suffixed(ws, sys->qname, n, "''");
    const char **qlx = ws_own(ws, ws_xalloc(n, sizeof *qlx));
    for (size_t i = 0; i < n; i++)
        qlx[i] = ws_var_latex(ws, sys->qdd[i]);
    st->row_latex = qlx;
    st->sym_absent = "the right sides are the D^i above";
    st->val = Dv;

    /* A: the forces, covariant and contravariant (his closing remark) */
    st = ws_push(ws, "A", "A", WORKSHEET_VECTOR, 1, n,
                 ws->lagrangian_form
                     ? "A_i = Q_i, the declared forces (Lagrangian form: the "
                       "potential forces are in P_i)"
                     : "A_i = Q_i − ∂V/∂q^i, the Lagrangian forces (eq. 18)");
    st->col_names = sys->qname;
    st->sym = b->A;
    st->val = Av;
    st = ws_push(ws, "", "A^i", WORKSHEET_VECTOR, 1, n,
                 "A^i = g^ij A_j, the contravariant forces");
    st->col_names = sys->qname;
    st->sym = Au;
    st->sym_absent = "needs g^ij of step 1";
    st->val = Auv;

    /* λ_a = −H_ab (F^i C^b_i + q'^i ∂C^b/∂q^i) (eq. 43); R_i = λ_a C^a_i */
    const expr_t **lam = kF && Hi ? ws_nodes(ws, r) : NULL;
    double *lamv = ws_vals(ws, r);
    for (size_t a = 0; a < r; a++) {
        const expr_t *s = zero;
        double sv = 0.0;
        for (size_t c = 0; c < r; c++) {
            const expr_t *k = lam ? expr_add(g, kF[c], b->cq[c]) : zero;
            double kv = cqv[c];
            for (size_t i = 0; i < n; i++)
                kv += Fv[i] * Clv[c * n + i];
            if (lam)
                s = expr_sub(g, s, expr_mul(g, Hi[a * r + c], k));
            sv -= Hiv[a * r + c] * kv;
        }
        if (lam)
            lam[a] = s;
        lamv[a] = sv;
    }
    if (reduced) {
        st = ws_push(ws, "λ", "lambda", WORKSHEET_SCALAR, 1, 1,
                     "λ = −H⁻¹ (F^i C_i + q'^i ∂C/∂q^i), the multiplier "
                     "(eq. 43)");
    } else {
        st = ws_push(ws, "λ", "lambda", WORKSHEET_VECTOR, 1, r,
                     "λ_a = −H_ab (F^i C^b_i + q'^i ∂C^b/∂q^i), the "
                     "multipliers (eq. 43)");
        st->col_names = sys->cname;
    }
    st->sym = lam;
    st->sym_absent = "needs H_ab and F";
    st->val = lamv;
    const expr_t **R = lam ? ws_nodes(ws, n) : NULL;
    double *Rv = ws_vals(ws, n);
    for (size_t i = 0; i < n; i++) {
        const expr_t *s = zero;
        double sv = 0.0;
        for (size_t a = 0; a < r; a++) {
            if (R)
                s = expr_add(g, s, expr_mul(g, lam[a], b->Cl[a * n + i]));
            sv += lamv[a] * Clv[a * n + i];
        }
        if (R)
            R[i] = s;
        Rv[i] = sv;
    }
    st = ws_push(ws, "", "R", WORKSHEET_VECTOR, 1, n,
                 "R_i = λ_a C^a_i, the reactions (eqs. 36, 49)");
    st->col_names = sys->qname;
    st->sym = R;
    st->sym_absent = "needs λ";
    st->val = Rv;

done:
    free(gv);
    free(Pv);
}

/* ---- build --------------------------------------------------------------- */

static int ws_lookup(const char *which, ws_kind_t *kind)
{
    if (!which)
        return -1;
    for (size_t k = 0; k < sizeof ws_lookup_table / sizeof ws_lookup_table[0];
         k++)
        if (strcmp(which, ws_lookup_table[k].name) == 0) {
            *kind = ws_lookup_table[k].kind;
            return 0;
        }
    return -1;
}

/* What `first` needs: speeds, and a kinematic equation for every
 * coordinate, consistent with the constraints (eom's maggi checks that). */
static int ws_check_first(const nh_system_t *sys, src_span_t where,
                          diag_t *err)
{
    if (sys->m == 0)
        return diag_error(err, where,
                          "worksheet first needs the constraints in "
                          "parametric form q' = psi(q, z, t) (Benenti eq. "
                          "5): declare the parameters z with `speed` and "
                          "give `kinematic %s' = ...` for every coordinate",
                          sys->n ? sys->qname[0] : "q");
    for (size_t i = 0; i < sys->n; i++)
        if (!sys->psi || !sys->psi[i])
            return diag_error(err, where,
                              "worksheet first needs a kinematic equation "
                              "for every coordinate, and %s has none: add "
                              "`kinematic %s' = ...` (Benenti eq. 5)",
                              sys->qname[i], sys->qname[i]);
    eom_t *e = eom_prepare(sys, EOM_MAGGI, where, err);
    if (!e)
        return -1;
    eom_free(e);
    return 0;
}

static worksheet_t *worksheet_derive(const nh_system_t *sys,
                                     const double *vars, const char *which,
                                     src_span_t where, diag_t *err);

worksheet_t *worksheet_build(const nh_system_t *sys, const double *vars,
                             const char *which, src_span_t where,
                             diag_t *err)
{
    /* the steps are derived expressions, tested for 0 as they are built:
     * what cancels leaves no guard (expr_graph_keep_domains) */
    bool keep = expr_graph_keep_domains(sys->g, false);
    worksheet_t *ws = worksheet_derive(sys, vars, which, where, err);
    expr_graph_keep_domains(sys->g, keep);
    return ws;
}

static worksheet_t *worksheet_derive(const nh_system_t *sys,
                                     const double *vars, const char *which,
                                     src_span_t where, diag_t *err)
{
    ws_kind_t kind;
    if (ws_lookup(which, &kind) != 0) {
        const char *best = which ? source_closest(which, ws_all_names) : NULL;
        if (best)
            diag_error(err, where, "unknown worksheet '%s'; did you mean "
                                   "'%s'?", which, best);
        else
            diag_error(err, where,
                       "unknown worksheet '%s'; the worksheets are "
                       "preliminary, first, second and second_reduced",
                       which ? which : "");
        return NULL;
    }
    if (kind == WS_FIRST && ws_check_first(sys, where, err) != 0)
        return NULL;
    if (kind == WS_SECOND && sys->r == 0) {
        diag_error(err, where,
                   "worksheet second needs at least one constraint, and the "
                   "model has none: without constraints D^i = F^i are "
                   "Lagrange's equations (see `worksheet preliminary`)");
        return NULL;
    }
    if (kind == WS_SECOND_REDUCED && sys->r != 1) {
        if (sys->r == 0)
            diag_error(err, where,
                       "worksheet second_reduced is for a single constraint "
                       "(Benenti §12.4), and the model has none");
        else
            diag_error(err, where,
                       "worksheet second_reduced is for a single constraint "
                       "(Benenti §12.4), and the model has %zu (%s%s): use "
                       "`worksheet second`",
                       sys->r, sys->cname[0], sys->r > 1 ? ", ..." : "");
        return NULL;
    }

    worksheet_t *ws = ws_xalloc(1, sizeof *ws);
    ws->sys = sys;
    ws->kind = kind;
    ws->where = where;
    uint32_t nv = expr_graph_nvars(sys->g);
    ws->state = ws_xalloc(nv, sizeof *ws->state);
    memcpy(ws->state, vars, nv * sizeof *ws->state);
    ws_base_t b;
    ws_derive(ws, &b);
    switch (kind) {
    case WS_PRELIMINARY: ws_preliminary(ws, &b); break;
    case WS_FIRST: ws_first(ws, &b); break;
    case WS_SECOND: ws_second(ws, &b, false); break;
    case WS_SECOND_REDUCED: ws_second(ws, &b, true); break;
    }
    return ws;
}

void worksheet_free(worksheet_t *ws)
{
    if (!ws)
        return;
    for (size_t k = 0; k < ws->nowned; k++)
        free(ws->owned[k]);
    free(ws->owned);
    free(ws->steps);
    free(ws->state);
    free(ws);
}

size_t worksheet_count(const worksheet_t *ws) { return ws->nsteps; }

const worksheet_step_t *worksheet_step(const worksheet_t *ws, size_t k)
{
    return k < ws->nsteps ? &ws->steps[k] : NULL;
}

const worksheet_step_t *worksheet_find(const worksheet_t *ws, const char *key)
{
    for (size_t k = 0; k < ws->nsteps; k++)
        if (strcmp(ws->steps[k].key, key) == 0)
            return &ws->steps[k];
    return NULL;
}

bool worksheet_stopped(const worksheet_t *ws, const char **why)
{
    if (why)
        *why = ws->stopped ? ws->why : NULL;
    return ws->stopped;
}

/* ---- print --------------------------------------------------------------- */

/* What each step is for, in one line (LANGUAGE.md §7.1), and the LaTeX
 * of the object it shows; by sheet and key ("second" covers both sheets
 * of the second kind). */
static const struct {
    int kind; /* ws_kind_t; -1: any sheet */
    const char *key, *latex, *purpose;
} ws_steps_info[] = {
    {WS_PRELIMINARY, "q", NULL,
     "the coordinates: every later object is a function of them"},
    {WS_PRELIMINARY, "C", "C^{a}",
     "the constraints themselves; at the state, how far it is from them"},
    {-1, "C_i", "C^{a}_{i}",
     "the gradients of the constraints in the velocities: the directions "
     "of the reactions R_i = λ_a C^a_i"},
    {WS_PRELIMINARY, "ideal", NULL,
     "why the reactions have that form: the assumption every sheet "
     "rests on"},
    {WS_PRELIMINARY, "T", "T",
     "the energy whose metric and binomials make the equations"},
    {WS_PRELIMINARY, "g", "g_{ij}",
     "the inertia: it multiplies the accelerations in T_i = g_ij q''^j + "
     "P_i"},
    {WS_PRELIMINARY, "P", "P_{i}",
     "the rest of the binomials: the velocity and position terms the "
     "accelerations balance"},
    {WS_PRELIMINARY, "Christoffel", NULL,
     "P_i written as Γ_jk,i q'^j q'^k when g depends on the coordinates "
     "only"},
    {WS_PRELIMINARY, "A", "A_{i}",
     "the active forces: the right sides of Lagrange's equations"},
    {WS_FIRST, "psi", "\\psi^{i}",
     "the velocities as functions of the speeds: the constraints solved "
     "once for all"},
    {WS_FIRST, "psi_a", "\\psi^{i}_{\\alpha}",
     "the directions the system may move in, one per speed: Maggi's "
     "equations project onto them"},
    {WS_FIRST, "G", "G_{\\alpha\\beta}",
     "the inertia of the speeds: g restricted to the allowed directions"},
    {WS_FIRST, "Ginv", "G^{\\alpha\\beta}",
     "to solve for the speeds' rates: it turns projected forces into z'"},
    {WS_FIRST, "psi^a", "\\psi^{\\alpha i}",
     "the dual directions: a force dotted with them gives a speed's rate"},
    {WS_FIRST, "B", "B_{i}",
     "the inertia of the constraints' own turning: ψ changes along the "
     "motion"},
    {WS_FIRST, "Gamma", "\\Gamma_{i}",
     "the velocity terms of the binomials along the allowed motion"},
    {WS_FIRST, "Phi", "\\Phi_{i}",
     "the net force along the motion: active minus inertia terms"},
    {WS_FIRST, "Z", "Z^{\\alpha}",
     "the rates of the speeds: the right sides the integrator takes"},
    {WS_FIRST, "dz", NULL,
     "the equations of motion of the first kind, as the integrator takes "
     "them"},
    {WS_FIRST, "qdd", NULL,
     "the accelerations of the coordinates, to compare with other methods"},
    {WS_FIRST, "A", "A_{i}",
     "the active forces along the allowed motion: the first term of Φ_i"},
    {WS_SECOND, "ginv", "g^{ij}",
     "to raise indices: it turns forces and constraint gradients into "
     "accelerations"},
    {WS_SECOND, "C^i", "C^{ai}",
     "the acceleration each multiplier would cause: the raised gradients"},
    {WS_SECOND, "H", "H^{ab}",
     "how each reaction changes each constraint's acceleration: the matrix "
     "of the multipliers"},
    {WS_SECOND, "Hinv", "H_{ab}", "to solve for the multipliers"},
    {WS_SECOND, "X", "X_{a}^{i}",
     "the acceleration a unit of each multiplier causes, once the "
     "constraints hold"},
    {WS_SECOND, "pi", "\\pi_{i}^{j}",
     "the projector onto the forbidden directions: π removes the part of an "
     "acceleration the constraints forbid"},
    {WS_SECOND, "delta_pi", "\\delta^{i}_{j} - \\pi_{j}^{i}",
     "the projector onto the allowed directions: it keeps the part the "
     "constraints allow"},
    {WS_SECOND, "Gamma", "\\Gamma^{i}",
     "the velocity terms of the binomials as accelerations"},
    {WS_SECOND, "F", "F^{i}",
     "the free acceleration: what the system would do without the "
     "constraints"},
    {WS_SECOND, "dpF", "\\left(\\delta^{i}_{j} - \\pi_{j}^{i}\\right) F^{j}",
     "the free acceleration with its forbidden part removed"},
    {WS_SECOND, "cq", "\\dot{q}^{i} \\partial_{i} C^{a}",
     "how the constraints change along the motion at fixed acceleration: "
     "what the reactions must cancel"},
    {WS_SECOND, "Xc", "X_{a}^{i} \\dot{q}^{j} \\partial_{j} C^{a}",
     "the acceleration the reactions add to cancel that change"},
    {WS_SECOND, "D", "D^{i}",
     "the constrained acceleration: the right sides of q'' = D"},
    {WS_SECOND, "qdd", NULL,
     "the equations of motion of the second kind, as the integrator takes "
     "them"},
    {WS_SECOND, "A", "A_{i}",
     "the active forces; raised, they are the first term of F^i"},
    {WS_SECOND, "A^i", "A^{i}",
     "the active forces as accelerations, the first term of F^i"},
    {WS_SECOND, "lambda", "\\lambda_{a}",
     "the multipliers: the size of each reaction"},
    {WS_SECOND, "R", "R_{i}", "the reactions: the forces the constraints exert"},
};

/* The entry of ws_steps_info for KEY in a sheet of KIND, or -1. */
static int ws_step_info(ws_kind_t kind, const char *key)
{
    int k = kind == WS_SECOND_REDUCED ? WS_SECOND : (int)kind;
    for (size_t i = 0; i < sizeof ws_steps_info / sizeof *ws_steps_info; i++)
        if ((ws_steps_info[i].kind == k || ws_steps_info[i].kind == -1) &&
            strcmp(ws_steps_info[i].key, key) == 0)
            return (int)i;
    return -1;
}

/* A growing string. */
typedef struct ws_str {
    char *s;
    size_t len, cap;
} ws_str_t;

static void ws_str_putn(ws_str_t *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *t = realloc(b->s, cap);
        if (!t)
            nh_out_of_memory();
        b->s = t;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void ws_str_puts(ws_str_t *b, const char *s)
{
    ws_str_putn(b, s, strlen(s));
}

typedef struct ws_printer {
    const worksheet_t *ws;
    FILE *out;
    bool latex;
    bool open_row;     /* LaTeX: a row written that has no \\ yet */
    size_t rows;       /* LaTeX: rows in the display open now */
    bool prose;        /* LaTeX: and they are text (ws_line), not formulas */
    expr_mag_t mag;    /* the values' magnitudes (ws_value) */
    simp_t *sp;        /* the display of the symbols */
    uint64_t *memo;    /* tree sizes by node id */
    bool *named;       /* abbreviated nodes, by id */
    size_t nmemo;
    const expr_t *sym[WS_ABBREV_MAX]; /* an abbreviation's display symbol,
                                         NULL when shown in full */
    char *shown[WS_ABBREV_MAX];       /* its display form, when short */
    bool used[WS_ABBREV_MAX];         /* in the step being printed */
} ws_printer_t;

/* Values print as the shortest text that reads back to the same double,
 * and -0 as 0 (as output.c does). */
static const char *ws_num(double x, char *buf, size_t size)
{
    return expr_format_number(x == 0 ? 0.0 : x, buf, size);
}

/* Values of this size next to the terms they come from, or less, are
 * rounding: shown as 0 (LANGUAGE.md §7.1 asks for no noise like 2.7e-22
 * where the value is exactly 0), and the sheet says so. */
#define WS_ROUNDING 1e-12

/* Entry K of ST's values as the sheet shows it: 0 when its symbolic form
 * is 0, or when it is within WS_ROUNDING of the magnitude of the terms
 * that form is computed from (mag.h, every velocity counted as large as
 * the largest) or of the object's largest value. */
static double ws_val(ws_printer_t *p, const worksheet_step_t *st, size_t k)
{
    double v = st->val[k];
    if (!isfinite(v) || v == 0)
        return v == 0 ? 0.0 : v;
    double scale = 0;
    size_t count = st->rows * st->cols;
    if (!st->sym) {
        /* values that repeat an earlier object's (the right sides of the
         * equations are the D^i above) have its terms */
        for (size_t j = 0; j < p->ws->nsteps; j++) {
            const worksheet_step_t *o = &p->ws->steps[j];
            if (o == st || !o->sym || o->rows * o->cols != count ||
                memcmp(o->val, st->val, count * sizeof *st->val) != 0)
                continue;
            st = o;
            break;
        }
    }
    if (st->sym && st->sym[k]) {
        const expr_t *e = expr_unguarded(st->sym[k]);
        if (expr_is_const(e, 0.0))
            return 0.0; /* exactly 0: what was computed is rounding */
        /* (a guard's magnitude is its value's: its value's terms) */
        expr_mag_get(&p->mag, e, &scale);
    }
    /* and the object's largest value: its entries are of a size */
    for (size_t i = 0; i < count; i++)
        if (isfinite(st->val[i]) && fabs(st->val[i]) > scale)
            scale = fabs(st->val[i]);
    return isfinite(scale) && fabs(v) <= WS_ROUNDING * scale ? 0.0 : v;
}

/* The number of nodes of E printed as a tree, an abbreviated child
 * counting one, saturating past LIMIT. */
static uint64_t ws_tree_size(ws_printer_t *p, const expr_t *e, uint64_t limit)
{
    if (e->height > limit) /* a tree has at least as many nodes as levels:
                              the recursion stays within LIMIT */
        return limit + 1;
    if (e->id < p->nmemo && p->memo[e->id])
        return p->memo[e->id];
    uint64_t s = 1;
    for (uint32_t k = 0; k < e->nargs && s <= limit; k++) {
        const expr_t *a = e->args[k];
        s += a->id < p->nmemo && p->named[a->id] ? 1
                                                 : ws_tree_size(p, a, limit);
    }
    if (s > limit)
        s = limit + 1;
    if (e->id < p->nmemo)
        p->memo[e->id] = s;
    return s;
}

static void ws_new_display(ws_printer_t *p);

/* A line of the sheet: in LaTeX, typeset text. */
static void ws_line(ws_printer_t *p, const char *indent, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void ws_line(ws_printer_t *p, const char *indent, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (!p->latex) {
        fputs(indent, p->out);
        vfprintf(p->out, fmt, ap);
        fputc('\n', p->out);
        va_end(ap);
        return;
    }
    /* LaTeX: typeset text (LANGUAGE.md §7.1), rows of the display, a
     * title (no indent) in bold, broken into lines of the page */
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    char *text = ws_xalloc((size_t)(n > 0 ? n : 0) + 1, 1);
    vsnprintf(text, (size_t)(n > 0 ? n : 0) + 1, fmt, ap);
    va_end(ap);
    char *tex = layout_prose_lines(text, indent[0] == '\0',
                                   LAYOUT_LINE_PT - 10.0);
    /* text in a display of its own: no alignment column narrows it */
    if (p->rows && !p->prose)
        ws_new_display(p);
    p->prose = true;
    if (p->open_row)
        fputs(" \\\\\n", p->out);
    fputs("&", p->out);
    fputs(tex, p->out);
    p->open_row = true;
    p->rows++;
    free(tex);
    free(text);
}

/* LaTeX: a display of its own for what follows (each step is one), so
 * that a sheet breaks across pages between steps. */
static void ws_new_display(ws_printer_t *p)
{
    if (!p->latex || p->rows == 0)
        return;
    fputs(p->open_row ? "\n\\end{align*}\n\\begin{align*}\n"
                      : "\\end{align*}\n\\begin{align*}\n",
          p->out);
    p->open_row = false;
    p->rows = 0;
}

/* A LaTeX row of the sheet's align* (the \\ is written before the next). */
static void ws_row(ws_printer_t *p, const char *text)
{
    if (p->rows && p->prose)
        ws_new_display(p);
    p->prose = false;
    if (p->open_row)
        fputs(" \\\\\n", p->out);
    fputs(text, p->out);
    p->open_row = true;
    p->rows++;
}

/* E in its display form (simplify.h), as text or LaTeX; the
 * abbreviations it holds marked used.  No conditions: the sheet's
 * objects hold where its matrices are regular (said once, at the top),
 * and their factors cancel freely. */
static char *ws_expr_str(ws_printer_t *p, const expr_t *e)
{
    simp_t *sp = p->sp;
    const expr_t *d = simp_simplify_within(sp, simp_import(sp, e), NULL);
    for (size_t a = 0; a < p->ws->nabbrev; a++)
        if (p->sym[a] &&
            expr_depends(simp_graph(sp), d, p->sym[a]->var))
            p->used[a] = true;
    return simp_format(sp, d, p->latex);
}

/* The longest display text of the step's entries, or 0 when its tree is
 * beyond reading (WS_SYM_MAX_NODES) and it is not tried; TEXT (count
 * entries) receives the texts, or is left NULL. */
static size_t ws_step_texts(ws_printer_t *p, const worksheet_step_t *st,
                            char **text)
{
    size_t count = st->rows * st->cols;
    uint64_t total = 0;
    for (size_t k = 0; k < count; k++) {
        uint64_t one = ws_tree_size(p, st->sym[k], WS_SYM_MAX_NODES);
        total += one;
        if (one > WS_ENTRY_MAX_NODES || total > WS_SYM_MAX_NODES)
            return 0;
    }
    size_t longest = 1;
    for (size_t k = 0; k < count; k++) {
        text[k] = ws_expr_str(p, st->sym[k]);
        if (strlen(text[k]) > longest)
            longest = strlen(text[k]);
    }
    return longest;
}

static void ws_free_texts(char **text, size_t count)
{
    for (size_t k = 0; k < count; k++)
        free(text[k]);
}

/* LaTeX: entries as a pmatrix (a vector a row, a matrix its rows): the
 * symbolic TEXT, or the values when TEXT is NULL. */
static void ws_pmatrix(ws_printer_t *p, ws_str_t *b,
                       const worksheet_step_t *st, char *const *text)
{
    char buf[40];
    ws_str_puts(b, "\\begin{pmatrix}");
    for (size_t r = 0; r < st->rows; r++) {
        for (size_t c = 0; c < st->cols; c++) {
            if (c)
                ws_str_puts(b, " & ");
            ws_str_puts(b, text ? text[r * st->cols + c]
                                : ws_num(ws_val(p, st, r * st->cols + c),
                                         buf, sizeof buf));
        }
        if (r + 1 < st->rows)
            ws_str_puts(b, " \\\\ ");
    }
    ws_str_puts(b, "\\end{pmatrix}");
}

/* The symbols of ST (text mode). */
static void ws_print_symbols_text(ws_printer_t *p, const worksheet_step_t *st,
                                  char *const *text)
{
    FILE *out = p->out;
    if (st->shape == WORKSHEET_SCALAR) {
        fprintf(out, "   %s\n", text[0]);
        return;
    }
    if (st->shape == WORKSHEET_LIST) {
        for (size_t r = 0; r < st->rows; r++)
            fprintf(out, "   %s = %s\n", st->row_names[r], text[r]);
        return;
    }
    bool narrow = true;
    ws_str_t *rows = ws_xalloc(st->rows, sizeof *rows);
    for (size_t r = 0; r < st->rows; r++) {
        ws_str_puts(&rows[r], "[");
        for (size_t c = 0; c < st->cols; c++) {
            if (c)
                ws_str_puts(&rows[r], ", ");
            ws_str_puts(&rows[r], text[r * st->cols + c]);
        }
        ws_str_puts(&rows[r], "]");
        narrow = narrow && rows[r].len <= WS_ROW_WIDTH;
    }
    if (narrow) {
        for (size_t r = 0; r < st->rows; r++)
            fprintf(out, "   %s\n", rows[r].s);
    } else {
        /* one named entry per line, the zeros left out */
        bool zeros = false;
        for (size_t r = 0; r < st->rows; r++)
            for (size_t c = 0; c < st->cols; c++) {
                const char *t = text[r * st->cols + c];
                if (strcmp(t, "0") == 0) {
                    zeros = true;
                    continue;
                }
                if (st->shape == WORKSHEET_VECTOR)
                    fprintf(out, "   %s: %s\n", st->col_names[c], t);
                else
                    fprintf(out, "   [%s, %s]: %s\n", st->row_names[r],
                            st->col_names[c], t);
            }
        if (zeros)
            fputs("   (the other entries are 0)\n", out);
    }
    for (size_t r = 0; r < st->rows; r++)
        free(rows[r].s);
    free(rows);
}

/* The values of ST at the state (text mode). */
static void ws_print_values_text(ws_printer_t *p, const worksheet_step_t *st)
{
    FILE *out = p->out;
    char buf[40];
    if (st->shape == WORKSHEET_SCALAR) {
        fprintf(out, "   at the state: %s\n",
                ws_num(ws_val(p, st, 0), buf, sizeof buf));
        return;
    }
    if (st->shape == WORKSHEET_LIST) {
        fputs("   at the state:\n", out);
        for (size_t r = 0; r < st->rows; r++)
            fprintf(out, "   %s = %s\n", st->row_names[r],
                    ws_num(ws_val(p, st, r), buf, sizeof buf));
        return;
    }
    bool one_line = st->shape == WORKSHEET_VECTOR;
    fputs(one_line ? "   at the state: " : "   at the state:\n", out);
    for (size_t r = 0; r < st->rows; r++) {
        fputs(one_line ? "[" : "   [", out);
        for (size_t c = 0; c < st->cols; c++)
            fprintf(out, "%s%s", c ? ", " : "",
                    ws_num(ws_val(p, st, r * st->cols + c), buf,
                           sizeof buf));
        fputs("]\n", out);
    }
}

/* A row "LEFT &= RIGHT" of the sheet, or, when it would be wider than the
 * page, RIGHT on a line of its own after LEFT ("&LEFT \\\\ &\\quad {}=
 * RIGHT"). */
static void ws_row_fit(ws_printer_t *p, const char *left, const char *right)
{
    ws_str_t b = {0};
    double wl = layout_width(left), wr = layout_width(right);
    if (wl + 14.0 + wr <= LAYOUT_LINE_PT || wl > LAYOUT_LINE_PT / 2) {
        ws_str_puts(&b, left);
        ws_str_puts(&b, " &= ");
        ws_str_puts(&b, right);
    } else {
        ws_str_puts(&b, "&");
        ws_str_puts(&b, left);
        ws_str_puts(&b, " \\\\\n&\\quad {}= ");
        ws_str_puts(&b, right);
    }
    ws_row(p, b.s);
    free(b.s);
}

/* The display node of symbolic entry K of ST (memoised by the display). */
static const expr_t *ws_node(ws_printer_t *p, const worksheet_step_t *st,
                             size_t k)
{
    simp_t *sp = p->sp;
    return simp_simplify_within(sp, simp_import(sp, st->sym[k]), NULL);
}

/* The row "LEFT &= entry K TAIL" of symbolic TEXT, its right side broken
 * between terms onto lines of its own when it is wider than the page;
 * false (nothing written) when even so a term would not fit. */
static bool ws_row_sym(ws_printer_t *p, const char *left,
                       const worksheet_step_t *st, size_t k, const char *text,
                       const char *tail)
{
    ws_str_t r = {0};
    ws_str_puts(&r, text);
    ws_str_puts(&r, tail);
    double wl = layout_width(left), wr = layout_width(r.s);
    if (wl + 14.0 + wr <= LAYOUT_LINE_PT ||
        (wl <= LAYOUT_LINE_PT / 2 && wr <= LAYOUT_LINE_PT - 24.0)) {
        ws_row_fit(p, left, r.s);
        free(r.s);
        return true;
    }
    free(r.s);
    bool fits;
    char *lines = layout_latex_lines(simp_graph(p->sp), ws_node(p, st, k),
                                     24.0, LAYOUT_LINE_PT, &fits);
    bool tail_fits = layout_width(tail) <= LAYOUT_LINE_PT - 24.0;
    if (fits && tail_fits) {
        ws_str_t b = {0};
        ws_str_puts(&b, "&");
        ws_str_puts(&b, left);
        ws_str_puts(&b, " \\\\\n&\\quad {}= ");
        ws_str_puts(&b, lines);
        if (*tail) {
            ws_str_puts(&b, " \\\\\n&\\quad {}");
            ws_str_puts(&b, tail);
        }
        ws_row(p, b.s);
        free(b.s);
    }
    free(lines);
    return fits && tail_fits;
}

/* A matrix or vector too wide for a pmatrix on the page: its entries one
 * a row, [LABEL]_{r,c} = TEXT (symbolic, or the value when TEXT is NULL),
 * the zeros left out and said. */
static void ws_entries_latex(ws_printer_t *p, const worksheet_step_t *st,
                             const char *label, char *const *text,
                             bool at_state)
{
    char buf[80];
    bool zeros = false;
    for (size_t r = 0; r < st->rows; r++)
        for (size_t c = 0; c < st->cols; c++) {
            size_t k = r * st->cols + c;
            char num[40];
            const char *t = text ? text[k]
                                 : ws_num(ws_val(p, st, k), num, sizeof num);
            if (strcmp(t, "0") == 0) {
                zeros = true;
                continue;
            }
            ws_str_t l = {0};
            ws_str_puts(&l, "\\left[");
            ws_str_puts(&l, label ? label : "\\cdot");
            if (st->shape == WORKSHEET_VECTOR)
                snprintf(buf, sizeof buf, "\\right]_{%zu}", c + 1);
            else
                snprintf(buf, sizeof buf, "\\right]_{%zu,%zu}", r + 1, c + 1);
            ws_str_puts(&l, buf);
            if (text) {
                if (!ws_row_sym(p, l.s, st, k, t, ""))
                    ws_line(p, "   ", "(entry %zu,%zu is too wide to "
                                      "typeset: see its value)",
                            r + 1, c + 1);
            } else {
                ws_str_t rt = {0};
                ws_str_puts(&rt, t);
                if (at_state)
                    ws_str_puts(&rt, " \\quad \\text{at the state}");
                ws_row_fit(p, l.s, rt.s);
                free(rt.s);
            }
            free(l.s);
        }
    if (zeros)
        ws_line(p, "   ", "(the other entries are 0)");
}

/* ST in LaTeX: LABEL &= symbols &= values (at the state); a list as its
 * rows, each with its value; a matrix too wide for the page as its
 * entries. */
static void ws_print_step_latex(ws_printer_t *p, const worksheet_step_t *st,
                                char *const *text, const char *label)
{
    char buf[40];
    ws_str_t b = {0};
    if (st->shape == WORKSHEET_LIST) {
        for (size_t r = 0; r < st->rows; r++) {
            b.len = 0;
            ws_str_puts(&b, " = ");
            ws_str_puts(&b, ws_num(ws_val(p, st, r), buf, sizeof buf));
            if (text && ws_row_sym(p, st->row_latex[r], st, r, text[r], b.s))
                continue;
            ws_row_fit(p, st->row_latex[r], b.s + 3);
        }
        free(b.s);
        return;
    }
    const char *lab = label ? label : "";
    if (text) {
        if (st->shape == WORKSHEET_SCALAR) {
            if (!ws_row_sym(p, lab, st, 0, text[0], ""))
                ws_line(p, "   ", "(too wide to typeset: see its value)");
        } else {
            ws_pmatrix(p, &b, st, text);
            if (layout_width(b.s) + layout_width(lab) + 14.0 <=
                LAYOUT_LINE_PT)
                ws_row_fit(p, lab, b.s);
            else
                ws_entries_latex(p, st, label, text, false);
        }
        b.len = 0;
    }
    /* the values under the symbols (or after the label when there are
     * none), "at the state" after them */
    const char *left = text ? "" : lab;
    if (st->shape == WORKSHEET_SCALAR) {
        ws_str_puts(&b, ws_num(ws_val(p, st, 0), buf, sizeof buf));
        ws_str_puts(&b, " \\quad \\text{at the state}");
        ws_row_fit(p, left, b.s);
    } else {
        ws_pmatrix(p, &b, st, NULL);
        double wm = layout_width(b.s) + 14.0;
        if (wm + layout_width(" \\quad \\text{at the state}") <=
            LAYOUT_LINE_PT - 10.0) {
            ws_str_puts(&b, " \\quad \\text{at the state}");
            ws_row_fit(p, left, b.s);
        } else if (wm <= LAYOUT_LINE_PT - 10.0) {
            ws_line(p, "   ", "at the state:");
            ws_row_fit(p, left, b.s);
        } else {
            ws_entries_latex(p, st, label, NULL, true);
        }
    }
    free(b.s);
}

/* One step: title, purpose, remark; the symbols where they fit the
 * limit (WS_TEXT_MAX characters an entry), and the values. */
static void ws_print_step(ws_printer_t *p, const worksheet_step_t *st)
{
    const worksheet_t *ws = p->ws;
    int info = ws_step_info(ws->kind, st->key);
    if (*st->number)
        ws_new_display(p); /* a step continued ("") stays in its own */
    if (*st->number)
        ws_line(p, "", "%s. %s", st->number, st->title);
    else
        ws_line(p, "   ", "%s", st->title);
    if (info >= 0)
        ws_line(p, "   ", "purpose: %s", ws_steps_info[info].purpose);
    if (st->note)
        ws_line(p, "   ", "%s", st->note);
    if (st->shape == WORKSHEET_TEXT)
        return;
    memset(p->used, 0, sizeof p->used);
    size_t count = st->rows * st->cols;
    char **text = ws_xalloc(count + 1, sizeof *text);
    size_t longest = st->sym ? ws_step_texts(p, st, text) : 0;
    bool fits = longest > 0 && longest <= WS_TEXT_MAX;
    if (!st->sym && st->sym_absent)
        ws_line(p, "   ", "(%s)", st->sym_absent);
    else if (st->sym && longest == 0)
        ws_line(p, "   ", "(too long to show symbolically: shown at the "
                          "state only)");
    else if (st->sym && !fits)
        ws_line(p, "   ", "(too long to show symbolically, %zu characters "
                          "where the limit is %d: shown at the state only)",
                longest, WS_TEXT_MAX);
    if (p->latex) {
        const char *label = info >= 0 ? ws_steps_info[info].latex : NULL;
        ws_print_step_latex(p, st, fits ? text : NULL, label);
    } else {
        if (fits)
            ws_print_symbols_text(p, st, text);
        ws_print_values_text(p, st);
    }
    if (fits)
        for (size_t a = 0; a < ws->nabbrev; a++)
            if (p->used[a])
                ws_line(p, "   ", "where %s is %s", ws->abbrev[a].name,
                        ws->abbrev[a].meaning);
    ws_free_texts(text, count);
    free(text);
}

/* "q = (a, b) = (1, 2)": the N names and the values of their variables
 * VAR in V. */
static void ws_names_values(ws_str_t *b, const char *what,
                            const char *const *names, const uint32_t *var,
                            size_t n, const double *v)
{
    char buf[40];
    ws_str_puts(b, what);
    ws_str_puts(b, " = (");
    for (size_t i = 0; i < n; i++) {
        ws_str_puts(b, i ? ", " : "");
        ws_str_puts(b, names[i]);
    }
    ws_str_puts(b, ") = (");
    for (size_t i = 0; i < n; i++) {
        ws_str_puts(b, i ? ", " : "");
        ws_str_puts(b, ws_num(v[var[i]], buf, sizeof buf));
    }
    ws_str_puts(b, ")");
}

static void ws_print_heading(ws_printer_t *p)
{
    const worksheet_t *ws = p->ws;
    const nh_system_t *sys = ws->sys;
    const double *v = ws->state;
    static const char *const titles[] = {
        "Benenti's preliminary worksheet (foglio di lavoro preliminare, §12)",
        "Benenti's worksheet of the first kind (foglio di lavoro di prima "
        "specie, §12): Maggi's equations in explicit form, eq. 27",
        "Benenti's worksheet of the second kind (foglio di lavoro di seconda "
        "specie, §12): eqs. 43-48",
        "Benenti's reduced worksheet of the second kind, for one constraint "
        "(foglio di lavoro di seconda specie ridotto, §12): eq. 71",
    };
    char buf[40];
    ws_str_t b = {0};
    ws_line(p, "", "%s", titles[ws->kind]);
    ws_names_values(&b, "q", sys->qname, sys->q, sys->n, v);
    ws_line(p, "   ", "%s", b.s);
    b.len = 0;
    if (ws->kind == WS_FIRST) {
        ws_names_values(&b, "z", sys->zname, sys->z, sys->m, v);
        ws_str_puts(&b, ", and q' = psi(q, z, t)");
    } else {
        ws_str_puts(&b, "q' = (");
        for (size_t i = 0; i < sys->n; i++) {
            ws_str_puts(&b, i ? ", " : "");
            ws_str_puts(&b, ws_num(v[sys->qd[i]], buf, sizeof buf));
        }
        ws_str_puts(&b, ")");
    }
    ws_line(p, "   ", "%s", b.s);
    b.len = 0;
    if (sys->r) {
        ws_str_puts(&b, "constraints: ");
        for (size_t a = 0; a < sys->r; a++) {
            ws_str_puts(&b, a ? ", " : "");
            ws_str_puts(&b, sys->cname[a]);
        }
        ws_line(p, "   ", "%s", b.s);
        b.len = 0;
    }
    ws_str_puts(&b, "t = ");
    ws_str_puts(&b, ws_num(v[sys->t], buf, sizeof buf));
    for (size_t k = 0; k < sys->np; k++) {
        ws_str_puts(&b, k ? ", " : "; ");
        ws_str_puts(&b, sys->pname[k]);
        ws_str_puts(&b, " = ");
        ws_str_puts(&b, ws_num(v[sys->p[k]], buf, sizeof buf));
    }
    ws_line(p, "   ", "%s", b.s);
    free(b.s);
    if (ws->kind != WS_PRELIMINARY)
        ws_line(p, "   ", "the objects below hold where the sheet's matrices "
                          "(%s) are invertible, and simplify there",
                ws->kind == WS_FIRST ? "G" : "g and H");
    ws_line(p, "   ", "values within 1e-12 of the size of the terms they "
                      "are computed from are rounding, shown as 0");
    if (ws->lagrangian_form)
        ws_line(p, "   ", "%s: T stands for L below (the Lagrangian form), "
                          "so the potential forces sit in P_i and A_i holds "
                          "the declared forces only",
                sys->T ? "the potential depends on the velocities"
                       : "the model gives a Lagrangian L, not T and V");
}

/* Abbreviations: a recurring subexpression (det(G), H) whose display form
 * is short is shown in full where it occurs, so that it cancels with what
 * it meets (det(g) of the rolling sphere is 4*m^2*R^4*sin(theta)^2/25);
 * a long one is a display symbol, named. */
static void ws_abbreviations(ws_printer_t *p)
{
    const worksheet_t *ws = p->ws;
    for (size_t a = 0; a < ws->nabbrev; a++) {
        const expr_t *e = ws->abbrev[a].node;
        if (ws_tree_size(p, e, WS_SYM_MAX_NODES) <= WS_ENTRY_MAX_NODES) {
            const expr_t *d =
                simp_simplify_within(p->sp, simp_import(p->sp, e), NULL);
            char *t = simp_format(p->sp, d, false);
            bool shortish = strlen(t) <= WS_ABBREV_INLINE;
            free(t);
            if (shortish)
                continue;
        }
        p->named[e->id] = true;
        p->sym[a] = simp_symbol(p->sp, e, ws->abbrev[a].name,
                                ws->abbrev[a].latex);
    }
}

int worksheet_print(const worksheet_t *ws, bool latex, FILE *out, diag_t *err)
{
    const expr_graph_t *g = ws->sys->g;
    ws_printer_t p;
    memset(&p, 0, sizeof p);
    p.ws = ws;
    p.out = out;
    p.latex = latex;
    p.sp = simp_new(g);
    p.nmemo = expr_graph_count(g);
    p.memo = ws_xalloc(p.nmemo, sizeof *p.memo);
    p.named = ws_xalloc(p.nmemo, sizeof *p.named);
    ws_abbreviations(&p);
    /* the magnitudes of the values' terms at the state with every
     * velocity as large as the largest: a velocity that is rounding
     * itself (x' = 1e-17 solved from a constraint) makes no term small */
    const nh_system_t *sys = ws->sys;
    uint32_t nv = expr_graph_nvars(g);
    double *scaled = ws_xalloc(nv + 1, sizeof *scaled);
    memcpy(scaled, ws->state, nv * sizeof *scaled);
    double vmax = 0;
    for (size_t i = 0; i < sys->n; i++)
        vmax = fmax(vmax, fabs(ws->state[sys->qd[i]]));
    for (size_t a = 0; a < sys->m; a++)
        vmax = fmax(vmax, fabs(ws->state[sys->z[a]]));
    if (!(vmax > 0) || !isfinite(vmax))
        vmax = 1;
    for (size_t i = 0; i < sys->n; i++)
        scaled[sys->qd[i]] = copysign(vmax, ws->state[sys->qd[i]]);
    for (size_t a = 0; a < sys->m; a++)
        scaled[sys->z[a]] = copysign(vmax, ws->state[sys->z[a]]);
    p.mag.g = g;
    expr_mag_begin(&p.mag, scaled);
    /* LaTeX: a display per step, allowed to break across pages */
    if (latex)
        fputs("{\\allowdisplaybreaks\n\\begin{align*}\n", out);
    ws_print_heading(&p);
    for (size_t k = 0; k < ws->nsteps; k++)
        ws_print_step(&p, &ws->steps[k]);
    if (latex)
        fputs(p.open_row ? "\n\\end{align*}\n}\n" : "\\end{align*}\n}\n",
              out);
    expr_mag_free(&p.mag);
    free(scaled);
    free(p.memo);
    free(p.named);
    simp_free(p.sp);
    if (ws->stopped)
        return diag_error(err, ws->where, "%s", ws->why);
    return 0;
}

int worksheet_run(const nh_system_t *sys, const double *vars,
                  const char *which, bool latex, src_span_t where, FILE *out,
                  diag_t *err)
{
    worksheet_t *ws = worksheet_build(sys, vars, which, where, err);
    if (!ws)
        return -1;
    int rc = worksheet_print(ws, latex, out, err);
    worksheet_free(ws);
    return rc;
}
