/*
 * react.c — the reactions of dropped components (see react.h).
 *
 * Must not: print; change the lowering it borrows.
 */
#include "interp/analysis/react.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_vector.h>

#include "interp/base/util.h"
#include "interp/expr/tape.h"

#define REACT_NONE UINT32_MAX
/* A singular value at most this fraction of the largest is zero: the
 * translation does not see that combination of reactions. */
#define REACT_RTOL 1e-10
/* ∂pos/∂s of a body that moves with the translation is I to rounding. */
#define REACT_MOVE_TOL 1e-9

struct react {
    lower_t *lw, *tr;
    const lower_translation_t *t;
    size_t r;          /* the translated lowering's rows */
    size_t nd;         /* LW's dropped components */
    const uint32_t *dvar;
    const char *const *dname;
    size_t *drow;      /* each one's row in the translated lowering */
    uint32_t *lam;     /* per translated row: LW's multiplier, or NONE */
    long *unknown;     /* per translated row: its dropped index, or -1 */
    uint32_t *from;    /* per translated variable: LW's, or NONE (0) */
    size_t ntv;
    tape_t *tape;
    size_t nout;
    double *out, *work, *tv;
};

void react_free(react_t *r)
{
    if (!r)
        return;
    lower_free(r->tr);
    tape_free(r->tape);
    free(r->drow);
    free(r->lam);
    free(r->unknown);
    free(r->from);
    free(r->out);
    free(r->work);
    free(r->tv);
    free(r);
}

static uint64_t react_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h ^ (h >> 29);
}

/* For each variable of graph TO, the variable of graph FROM of the same
 * name (x, x', m, lambda(c) ...), or REACT_NONE. */
static uint32_t *react_map(const expr_graph_t *from, const expr_graph_t *to)
{
    size_t nf = expr_graph_nvars(from), nt = expr_graph_nvars(to);
    size_t cap = 16;
    while (cap < 2 * nf)
        cap *= 2;
    uint32_t *slot = xcalloc(cap, sizeof *slot); /* variable + 1 */
    for (uint32_t v = 0; v < nf; v++) {
        size_t i = react_hash(expr_var_name(from, v)) & (cap - 1);
        while (slot[i])
            i = (i + 1) & (cap - 1);
        slot[i] = v + 1;
    }
    uint32_t *map = xcalloc(nt + 1, sizeof *map);
    for (uint32_t v = 0; v < nt; v++) {
        const char *nm = expr_var_name(to, v);
        map[v] = REACT_NONE;
        for (size_t i = react_hash(nm) & (cap - 1); slot[i];
             i = (i + 1) & (cap - 1))
            if (strcmp(expr_var_name(from, slot[i] - 1), nm) == 0) {
                map[v] = slot[i] - 1;
                break;
            }
    }
    free(slot);
    return map;
}

react_t *react_new(lower_t *lw, diag_t *err)
{
    react_t *r = xcalloc(1, sizeof *r);
    r->lw = lw;
    r->nd = lower_dropped_reactions(lw, &r->dvar, &r->dname);
    r->tr = lower_translated(lw, err);
    if (!r->tr) {
        react_free(r);
        return NULL;
    }
    r->t = lower_translation(r->tr);
    const nh_system_t *ts = lower_system(r->tr), *ls = lower_system(lw);
    expr_graph_t *tg = lower_graph(r->tr);
    r->r = ts->r;
    r->ntv = expr_graph_nvars(tg);
    r->from = react_map(lower_graph(lw), tg);
    r->drow = xcalloc(r->nd + 1, sizeof *r->drow);
    r->lam = xcalloc(r->r + 1, sizeof *r->lam);
    r->unknown = xcalloc(r->r + 1, sizeof *r->unknown);
    /* The translated lowering keeps every component: LW's rows and its
     * dropped ones, by name. */
    for (size_t a = 0; a < r->r; a++) {
        r->lam[a] = REACT_NONE;
        r->unknown[a] = -1;
        for (size_t k = 0; k < r->nd && r->unknown[a] < 0; k++)
            if (strcmp(r->dname[k], ts->cname[a]) == 0) {
                r->unknown[a] = (long)k;
                r->drow[k] = a;
            }
        for (size_t b = 0; b < ls->r && r->unknown[a] < 0; b++)
            if (strcmp(ls->cname[b], ts->cname[a]) == 0)
                r->lam[a] = ls->lam[b];
    }
    const lower_translation_t *t = r->t;
    size_t nm = t->nmoving;
    r->nout = 3 + 3 * r->r + 9 * nm;
    const expr_t **outs = xcalloc(r->nout, sizeof *outs);
    for (int d = 0; d < 3; d++)
        outs[d] = t->E[d];
    for (size_t k = 0; k < 3 * r->r; k++)
        outs[3 + k] = t->Bs[k];
    for (size_t k = 0; k < 9 * nm; k++)
        outs[3 + 3 * r->r + k] = t->J[k];
    r->tape = tape_compile(tg, outs, r->nout, (uint32_t)r->ntv);
    free(outs);
    if (!r->tape)
        nh_out_of_memory();
    r->out = xcalloc(r->nout, sizeof *r->out);
    r->work = xcalloc(tape_work_size(r->tape) + 1, sizeof *r->work);
    r->tv = xcalloc(r->ntv + 1, sizeof *r->tv);
    return r;
}

/* Whether body or particle I moves as one with the translation at the
 * state of the last evaluation: ∂pos/∂s is I (its first dim rows). */
static bool react_moves(const react_t *r, size_t i, double *worst)
{
    const double *J = r->out + 3 + 3 * r->r + 9 * i;
    bool ok = true;
    for (unsigned k = 0; k < r->t->moving_dim[i]; k++)
        for (unsigned j = 0; j < 3; j++) {
            double want = k == j ? 1.0 : 0.0, got = J[3 * k + j];
            if (!(fabs(got - want) <= REACT_MOVE_TOL)) {
                ok = false;
                *worst = got;
            }
        }
    return ok;
}

/* The error for dropped component K, not determined: A (ROWS × nd, as
 * before the SVD) and WITH (nd), how much each other component shares
 * the directions the translation does not see with it. */
static int react_undetermined(const react_t *r, size_t k, const double *A,
                              size_t rows, const double *with, diag_t *err)
{
    size_t nd = r->nd;
    double col = 0;
    for (size_t d = 0; d < rows; d++)
        col = fmax(col, fabs(A[d * nd + k]));
    if (!(col > 0))
        return diag_error(err, SRC_SPAN_NONE,
                          "lambda(%s) is not determined: it is found by "
                          "moving the whole system by a translation "
                          "(doc/language.md), and that does not move %s",
                          r->dname[k], r->dname[k]);
    strbuf_t b;
    strbuf_init(&b);
    for (size_t j = 0; j < nd; j++)
        if (j != k && with[j] > 1e-6)
            strbuf_addf(&b, "%slambda(%s)", b.len ? ", " : "", r->dname[j]);
    int rc = diag_error(err, SRC_SPAN_NONE,
                        "lambda(%s) is not determined: it is found by moving "
                        "the whole system by a translation "
                        "(doc/language.md), which moves it only together "
                        "with %s (the momentum balance of the whole system "
                        "gives their sum, not each)",
                        r->dname[k], b.len ? b.data : "the others");
    strbuf_free(&b);
    return rc;
}

int react_fill(react_t *r, double *vars, const bool *want, diag_t *err)
{
    size_t nd = r->nd;
    if (nd == 0)
        return 0;
    bool any = false;
    for (size_t k = 0; k < nd; k++)
        any |= !want || want[r->dvar[k]];
    if (!any)
        return 0;
    /* s = s' = s'' = 0: the motion of the model */
    for (size_t v = 0; v < r->ntv; v++)
        r->tv[v] = r->from[v] != REACT_NONE ? vars[r->from[v]] : 0.0;
    for (size_t a = 0; a < r->r; a++)
        if (r->unknown[a] >= 0)
            r->tv[lower_system(r->tr)->lam[a]] = 0.0;
    tape_eval(r->tape, r->tv, r->out, r->work);
    const lower_translation_t *t = r->t;
    for (size_t i = 0; i < t->nmoving; i++) {
        double worst = 0;
        if (!react_moves(r, i, &worst))
            return diag_error(err, SRC_SPAN_NONE,
                              "the reactions of dropped components are "
                              "found by moving the whole system by a "
                              "translation (doc/language.md), but %s moves "
                              "%.6g times it: its position is built from "
                              "more than one position that moves",
                              t->moving[i], worst);
    }
    /* A x = b: A[d][k] = ∂C/∂s_d' of dropped component k, b_d = E_d less
     * the rows' reactions; rows padded with zeros to nd for the SVD. */
    size_t rows = nd > 3 ? nd : 3;
    double *A = xcalloc(rows * nd, sizeof *A);
    double b[3];
    bool finite = true;
    for (int d = 0; d < 3; d++) {
        double s = r->out[d];
        for (size_t a = 0; a < r->r; a++) {
            double B = r->out[3 + 3 * a + (size_t)d];
            if (r->unknown[a] >= 0)
                A[(size_t)d * nd + (size_t)r->unknown[a]] = B;
            else if (B != 0)
                s -= (r->lam[a] != REACT_NONE ? vars[r->lam[a]] : NAN) * B;
        }
        b[d] = s;
        finite &= isfinite(s);
    }
    double *A0 = xmalloc(rows * nd * sizeof *A0); /* A before the SVD */
    memcpy(A0, A, rows * nd * sizeof *A0);
    gsl_matrix_view Av = gsl_matrix_view_array(A, rows, nd);
    gsl_matrix *V = gsl_matrix_alloc(nd, nd);
    gsl_vector *S = gsl_vector_alloc(nd), *w = gsl_vector_alloc(nd);
    if (!V || !S || !w)
        nh_out_of_memory();
    double *x = xcalloc(nd, sizeof *x), *nullw = xcalloc(nd, sizeof *nullw);
    int rc = 0;
    if (gsl_linalg_SV_decomp(&Av.matrix, V, S, w) != GSL_SUCCESS) {
        rc = diag_error(err, SRC_SPAN_NONE,
                        "the reactions of the dropped components: the "
                        "singular value decomposition did not converge");
        goto done;
    }
    double smax = gsl_vector_get(S, 0), tol = REACT_RTOL * smax;
    for (size_t i = 0; i < nd; i++) {
        double si = gsl_vector_get(S, i);
        if (!(si > tol) || !(smax > 0)) {
            for (size_t k = 0; k < nd; k++)
                nullw[k] += gsl_matrix_get(V, k, i) * gsl_matrix_get(V, k, i);
            continue;
        }
        double ub = 0; /* uᵢᵀ b; U is in A now, b zero past row 3 */
        for (size_t d = 0; d < 3; d++)
            ub += gsl_matrix_get(&Av.matrix, d, i) * b[d];
        for (size_t k = 0; k < nd; k++)
            x[k] += gsl_matrix_get(V, k, i) * ub / si;
    }
    for (size_t k = 0; k < nd; k++) {
        bool wanted = !want || want[r->dvar[k]];
        bool known = nullw[k] <= 1e-12;
        vars[r->dvar[k]] = known && finite ? x[k] : NAN;
        if (!wanted || rc)
            continue;
        if (!known) {
            /* the weights of the others in the same null directions */
            double *with = xcalloc(nd, sizeof *with);
            for (size_t i = 0; i < nd; i++) {
                double si = gsl_vector_get(S, i);
                if (si > tol && smax > 0)
                    continue;
                double vk = gsl_matrix_get(V, k, i);
                for (size_t j = 0; j < nd; j++)
                    with[j] += fabs(vk * gsl_matrix_get(V, j, i));
            }
            rc = react_undetermined(r, k, A0, 3, with, err);
            free(with);
        } else if (!finite) {
            rc = diag_error(err, SRC_SPAN_NONE,
                            "lambda(%s) is not finite: the momentum "
                            "balance of the whole system is not finite at "
                            "the state",
                            r->dname[k]);
        }
    }
done:
    free(x);
    free(nullw);
    free(A);
    free(A0);
    gsl_matrix_free(V);
    gsl_vector_free(S);
    gsl_vector_free(w);
    return rc;
}
