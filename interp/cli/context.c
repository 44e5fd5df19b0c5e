/*
 * context.c — the part of a session that statements use (context.h):
 * the derived objects built on demand and the helpers for messages.
 *
 * Must not: print except through the context's streams; exit().
 */
#include "interp/cli/context.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/analysis/linearize.h"
#include "interp/eom/velocity.h"

void ctx_init(ctx_t *s, const source_set_t *src, bool quiet, FILE *out,
              FILE *err)
{
    memset(s, 0, sizeof *s);
    s->src = src;
    model_init(&s->model);
    s->quiet = quiet;
    s->out = out;
    s->err = err;
    s->rtol = 1e-10;
    s->atol = 1e-12;
    s->step = 0; /* 0: (T − t)/1000 */
    snprintf(s->integrator, sizeof s->integrator, "rk8pd");
    s->eom_method = -1;
}

void ctx_set_eom(ctx_t *s, eom_t *e)
{
    lin_free(s->lin);
    s->lin = NULL;
    eom_free(s->eom);
    s->eom = e;
}

/* Frees the equations (and the linearization that borrows them). */
static void ctx_free_eom(ctx_t *s)
{
    ctx_set_eom(s, NULL);
}

void ctx_rows_free(ctx_rows_t *t)
{
    for (size_t c = 0; c < t->ncols; c++)
        free(t->titles[c]);
    free(t->titles);
    free(t->dashed);
    free(t->data);
    free(t->cur);
    memset(t, 0, sizeof *t);
}

int ctx_row_add(ctx_t *s, const char *title, bool dashed, double value,
                src_span_t where, diag_t *err)
{
    ctx_rows_t *t = s->row;
    if (t->nrows == 0) {
        t->titles = xrealloc(t->titles, (t->col + 1) * sizeof *t->titles);
        t->dashed = xrealloc(t->dashed, (t->col + 1) * sizeof *t->dashed);
        t->titles[t->col] = xstrdup(title);
        t->dashed[t->col] = dashed;
        t->ncols = t->col + 1;
    } else if (t->col >= t->ncols) {
        return diag_error(err, where,
                          "this statement gives more values than at the "
                          "sweep's first value (%zu columns)",
                          t->ncols);
    }
    if (t->col == t->curcap) {
        t->curcap = t->curcap ? 2 * t->curcap : 16;
        t->cur = xrealloc(t->cur, t->curcap * sizeof *t->cur);
    }
    t->cur[t->col++] = value == 0 ? 0.0 : value; /* -0 reads as 0 */
    return 0;
}

bool ctx_row_end(ctx_rows_t *t)
{
    if (t->col != t->ncols) {
        t->col = 0;
        return false;
    }
    if (t->nrows == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 16;
        t->data = xrealloc(t->data, t->cap * (t->ncols ? t->ncols : 1) *
                                        sizeof *t->data);
    }
    if (t->ncols)
        memcpy(t->data + t->nrows * t->ncols, t->cur,
               t->ncols * sizeof *t->data);
    t->nrows++;
    t->col = 0;
    return true;
}

void ctx_free_derived(ctx_t *s)
{
    ctx_free_eom(s);
    eom_velsolver_free(s->vs);
    s->vs = NULL;
}

void ctx_free(ctx_t *s)
{
    ctx_free_derived(s);
    ctx_rows_free(&s->sweep);
    lower_free(s->lw);
    model_free(&s->model);
    sim_samples_free(&s->samples);
}

void ctx_drop_lowering(ctx_t *s)
{
    ctx_free_derived(s);
    lower_free(s->lw);
    s->lw = NULL;
}

void ctx_drop_large_lowering(ctx_t *s)
{
    if (s->lw && expr_graph_count(lower_graph(s->lw)) >
                     SESSION_REBUILD_NODES)
        ctx_drop_lowering(s);
}

lower_t *ctx_lowered(ctx_t *s, diag_t *err)
{
    if (s->lw && s->lw_generation == s->model.generation)
        return s->lw;
    lower_t *lw = lower_model(&s->model, s->src, err);
    if (!lw)
        return NULL;
    ctx_free_derived(s);
    lower_free(s->lw);
    s->lw = lw;
    s->lw_generation = s->model.generation;
    return lw;
}

eom_t *ctx_eom(ctx_t *s, src_span_t where, diag_t *err)
{
    lower_t *lw = ctx_lowered(s, err);
    if (!lw)
        return NULL;
    const nh_system_t *sys = lower_system(lw);
    int method = s->model.method >= 0 ? s->model.method
                                      : (int)eom_default_method(sys);
    if (s->eom && s->eom_generation == s->model.generation &&
        s->eom_method == method)
        return s->eom;
    eom_t *e = eom_prepare(sys, (eom_method_t)method, where, err);
    if (!e)
        return NULL;
    ctx_free_eom(s);
    s->eom = e;
    s->eom_generation = s->model.generation;
    s->eom_method = method;
    return e;
}

struct eom_velsolver *ctx_velsolver(ctx_t *s, diag_t *err)
{
    lower_t *lw = ctx_lowered(s, err);
    if (!lw)
        return NULL;
    if (!s->vs)
        s->vs = eom_velsolver_new(lower_system(lw));
    return s->vs;
}

struct lin *ctx_lin(ctx_t *s, src_span_t where, diag_t *err)
{
    eom_t *e = ctx_eom(s, where, err);
    if (!e)
        return NULL;
    if (!s->lin)
        s->lin = lin_new(lower_system(s->lw), e);
    return s->lin;
}

void ctx_describe_state(ctx_t *s, const double *vars, char *buf,
                            size_t size)
{
    strbuf_t b;
    strbuf_init(&b);
    char num[40];
    const nh_system_t *sys = s->lw ? lower_system(s->lw) : NULL;
    if (!sys) {
        snprintf(buf, size, "%s", "");
        return;
    }
    strbuf_addf(&b, " at t = %s%s",
                expr_format_number(vars[sys->t], num, sizeof num),
                sys->n + sys->m ? "; state:" : ""); /* an empty model */
    for (size_t i = 0; i < sys->n; i++)
        strbuf_addf(&b, "%s %s = %s", i ? "," : "", sys->qname[i],
                    expr_format_number(vars[sys->q[i]], num, sizeof num));
    for (size_t i = 0; i < sys->n; i++)
        strbuf_addf(&b, ", %s' = %s", sys->qname[i],
                    expr_format_number(vars[sys->qd[i]], num, sizeof num));
    for (size_t i = 0; i < sys->m; i++)
        strbuf_addf(&b, ", %s = %s", sys->zname[i],
                    expr_format_number(vars[sys->z[i]], num, sizeof num));
    snprintf(buf, size, "%s", b.data ? b.data : "");
    strbuf_free(&b);
}

char *ctx_span_text(const ctx_t *s, src_span_t span)
{
    size_t len;
    const char *text = source_text(s->src, span.file, &len);
    strbuf_t b;
    strbuf_init(&b);
    bool space = false;
    for (uint32_t i = span.begin; i < span.end && i < len; i++) {
        char c = text[i];
        if (c == '#') {
            while (i < span.end && text[i] != '\n')
                i++;
            space = true;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            space = true;
            continue;
        }
        if (space && b.len)
            strbuf_addn(&b, " ", 1);
        space = false;
        strbuf_addn(&b, &c, 1);
    }
    return strbuf_take(&b);
}


void ctx_where_text(const ctx_t *s, src_span_t sp, char *buf,
                       size_t size)
{
    if (sp.file == SRC_NO_FILE) {
        snprintf(buf, size, "an earlier statement");
        return;
    }
    unsigned line, col;
    source_line_col(s->src, sp.file, sp.begin, &line, &col);
    snprintf(buf, size, "%s:%u:%u", source_name(s->src, sp.file), line, col);
}

/* NAME may be declared as KIND: it is new, or already of that kind.  The
 * built-in names t and pi are never free. */

int ctx_eval_const(ctx_t *s, lower_t *lw, const model_t *m,
                      const ast_expr_t *e, double *out, diag_t *err)
{
    value_t v;
    if (lower_expr(lw, e, LOWER_CONST, &v, err) != 0)
        return -1;
    if (v.dim != 0)
        return diag_error(err, e->span, "a number is needed here, not a "
                                        "vector");
    expr_graph_t *g = lower_graph(lw);
    size_t nv = expr_graph_nvars(g);
    double vars[nv ? nv : 1];
    lower_fill_vars(lw, m, vars);
    double x = expr_eval(g, v.c[0], vars);
    if (!isfinite(x)) {
        char num[32];
        return diag_error(err, e->span, "this value is not finite (%s)",
                          expr_format_number(x, num, sizeof num));
    }
    (void)s;
    *out = x;
    return 0;
}


int ctx_lookup_method(const ast_ident_t *id, diag_t *err)
{
    int m = eom_method_lookup(id->name);
    if (m >= 0)
        return m;
    const char *best = source_closest(id->name, eom_method_names);
    if (best)
        return diag_error(err, id->span,
                          "unknown equations '%s'; did you mean '%s'?",
                          id->name, best);
    return diag_error(err, id->span,
                      "unknown equations '%s'; the methods are lagrange, "
                      "multipliers, second_kind, voronec, naive, maggi "
                      "(first_kind, kane) and gibbs_appell",
                      id->name);
}


int ctx_unknown_integrator(const char *name, src_span_t span,
                               diag_t *err)
{
    const char *best = source_closest(name, sim_integrators);
    if (best)
        return diag_error(err, span,
                          "unknown integrator '%s'; did you mean '%s'?", name,
                          best);
    return diag_error(err, span,
                      "the integrators are rk2, rk4, rkf45, rkck, rk8pd, "
                      "msadams, rk1imp, rk2imp, rk4imp, bsimp and msbdf");
}

