/*
 * output.c — the statements that read the model and the state and print:
 * print, accel, show, compare, check (LANGUAGE.md §7).
 *
 * Must not: change the model, the state or the chosen equations (compare
 * prepares its own, temporary ones).
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "interp/analysis/check.h"
#include "interp/analysis/linearize.h"
#include "interp/analysis/react.h"
#include "interp/analysis/steady.h"
#include "interp/cli/stmts.h"
#include "interp/cli/work.h"
#include "interp/base/util.h"
#include "interp/eom/kinematics.h"
#include "interp/eom/velocity.h"
#include "interp/expr/display.h"
#include "interp/expr/simplify.h"
#include "interp/analysis/worksheet.h"

/* Values print as the shortest text that reads back to the same double,
 * except that -0 prints as 0: the simplifier's x + 0 = x keeps a sign that
 * IEEE addition would drop, and a physicist reads "-0" as noise. */
static const char *num(double x, char *buf, size_t size)
{
    return expr_format_number(x == 0 ? 0.0 : x, buf, size);
}

/* A full value vector of the current state, with the accelerations and
 * multipliers of the chosen equations when NEED_ACCEL. */
static int state_vars(ctx_t *s, lower_t *lw, bool need_accel,
                      src_span_t where, double *vars, diag_t *err)
{
    lower_fill_vars(lw, &s->model, vars);
    if (!need_accel)
        return 0;
    eom_t *e = ctx_eom(s, where, err);
    if (!e)
        return -1;
    if (eom_accel(e, vars, err) != 0)
        return ctx_state_error(s, lw, vars, where, err);
    return 0;
}

static int lambda_available(ctx_t *s, lower_t *lw, const value_t *v,
                            const ast_expr_t *e, diag_t *err)
{
    if (!lower_needs_lambda(lw, v))
        return 0;
    eom_t *eq = ctx_eom(s, e->span, err);
    if (!eq)
        return -1;
    if (!eom_has_multipliers(eq))
        return diag_error(err, e->span,
                          "the equations %s have no multipliers; choose "
                          "`equations multipliers` or `second_kind` for "
                          "lambda() and reaction()",
                          eom_method_name(eom_method(eq)));
    return 0;
}

/* The reactions of the dropped components that V (the value of E) reads
 * (LANGUAGE.md §4, react.h), into VARS, which the equations filled. */
static int dropped_reactions(ctx_t *s, lower_t *lw, const value_t *v,
                             const ast_expr_t *e, double *vars, diag_t *err)
{
    if (!lower_needs_dropped(lw, v))
        return 0;
    const uint32_t *dv;
    const char *const *dn;
    size_t nd = lower_dropped_reactions(lw, &dv, &dn);
    size_t nv = expr_graph_nvars(lower_graph(lw));
    bool *want = xcalloc(nv + 1, sizeof *want);
    for (size_t k = 0; k < nd; k++)
        for (unsigned c = 0; c < (v->dim ? v->dim : 1u); c++)
            want[dv[k]] |= expr_depends(lower_graph(lw), v->c[c], dv[k]);
    react_t *r = ctx_react(s, err);
    int rc = r ? react_fill(r, vars, want, err) : -1;
    free(want);
    if (rc != 0) {
        char st[1024], msg[DIAG_MSG_MAX];
        ctx_describe_state(s, vars, st, sizeof st);
        snprintf(msg, sizeof msg, "%s", err->msg);
        diag_clear(err);
        return diag_error(err, e->span, "%s%s", msg, st);
    }
    return 0;
}

/* Under a method whose state holds the velocities (all but maggi and
 * gibbs_appell), the speeds and their derivatives follow from q' and q''
 * through the kinematic equations (doc/language.md): found here, into
 * VARS, when V (the value of E) reads them. */
static int speeds_of_state(ctx_t *s, lower_t *lw, const value_t *v,
                           const ast_expr_t *e, double *vars, diag_t *err)
{
    const nh_system_t *sys = lower_system(lw);
    int method = s->model.method >= 0 ? s->model.method
                                      : (int)eom_default_method(sys);
    if (method == EOM_MAGGI || method == EOM_GIBBS_APPELL || sys->m == 0 ||
        !sys->psi)
        return 0;
    bool z = false, zd = false;
    for (unsigned k = 0; k < (v->dim ? v->dim : 1u); k++)
        for (size_t a = 0; a < sys->m; a++) {
            z |= expr_depends(sys->g, v->c[k], sys->z[a]);
            zd |= expr_depends(sys->g, v->c[k], sys->zd[a]);
        }
    if (!z && !zd)
        return 0;
    struct eom_velsolver *vs = ctx_velsolver(s, err);
    if (!vs)
        return -1;
    if (eom_velsolver_speed_rates(vs, vars, zd, err) != 0) {
        char st[1024], msg[DIAG_MSG_MAX];
        ctx_describe_state(s, vars, st, sizeof st);
        snprintf(msg, sizeof msg, "%s", err->msg);
        diag_clear(err);
        return diag_error(err, e->span,
                          "under %s the speeds follow from the velocities "
                          "through the kinematic equations, but %s%s",
                          eom_method_name((eom_method_t)method), msg, st);
    }
    return 0;
}

static int eval_value(ctx_t *s, lower_t *lw, const value_t *v,
                      const double *vars, const ast_expr_t *e, double *out,
                      diag_t *err)
{
    expr_graph_t *g = lower_graph(lw);
    unsigned n = v->dim ? v->dim : 1;
    for (unsigned k = 0; k < n; k++) {
        out[k] = expr_eval(g, v->c[k], vars);
        if (!isfinite(out[k])) {
            char st[1024], num[32];
            ctx_describe_state(s, vars, st, sizeof st);
            return diag_error(err, e->span,
                              "the value is not finite (%s: a division by "
                              "zero or a function outside its domain)%s",
                              expr_format_number(out[k], num, sizeof num),
                              st);
        }
    }
    return 0;
}

static int print_values(ctx_t *s, const ast_stmt_t *st, lower_t *lw,
                        double *vars, value_t *vals, double (*x)[3],
                        diag_t *err);

int output_print(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    lower_t *lw = ctx_lowered(s, err);
    if (!lw)
        return -1;
    size_t n = st->u.output.n;
    expr_graph_t *g = lower_graph(lw);
    size_t nv = expr_graph_nvars(g);
    /* On the heap, all three: a print may have as many items as a
     * statement holds, a model as many parameters as lines. */
    double *vars = xcalloc(nv ? nv : 1, sizeof *vars);
    value_t *vals = xcalloc(n ? n : 1, sizeof *vals);
    double (*x)[3] = xcalloc(n ? n : 1, sizeof *x);
    int rc = print_values(s, st, lw, vars, vals, x, err);
    free(vars);
    free(vals);
    free(x);
    return rc;
}

/* output_print's work, with room for the variables (VARS), the items'
 * values (VALS) and their numbers (X). */
static int print_values(ctx_t *s, const ast_stmt_t *st, lower_t *lw,
                        double *vars, value_t *vals, double (*x)[3],
                        diag_t *err)
{
    size_t n = st->u.output.n;
    bool need_accel = false;
    for (size_t i = 0; i < n; i++) {
        if (lower_expr(lw, st->u.output.items[i], LOWER_QUERY, &vals[i], err))
            return -1;
        if (lambda_available(s, lw, &vals[i], st->u.output.items[i], err))
            return -1;
        need_accel |= lower_needs_accel(lw, &vals[i]);
    }
    if (state_vars(s, lw, need_accel, st->span, vars, err))
        return -1;
    for (size_t i = 0; i < n; i++)
        if (dropped_reactions(s, lw, &vals[i], st->u.output.items[i], vars,
                              err) ||
            speeds_of_state(s, lw, &vals[i], st->u.output.items[i], vars,
                            err))
            return -1;
    /* Evaluate all before printing any: a failing print prints nothing. */
    for (size_t i = 0; i < n; i++)
        if (eval_value(s, lw, &vals[i], vars, st->u.output.items[i], x[i], err))
            return -1;
    char buf[40];
    if (s->row) {
        /* inside a sweep: columns TEXT, or TEXT[1], TEXT[2], ... */
        int rc = 0;
        for (size_t i = 0; i < n && rc == 0; i++) {
            char *text = ctx_span_text(s, st->u.output.items[i]->span);
            for (unsigned k = 0; k < (vals[i].dim ? vals[i].dim : 1u) &&
                                 rc == 0;
                 k++) {
                strbuf_t title;
                strbuf_init(&title);
                strbuf_addf(&title, vals[i].dim ? "%s[%u]" : "%s", text,
                            k + 1);
                rc = ctx_row_add(s, title.data, false, x[i][k],
                                 st->u.output.items[i]->span, err);
                strbuf_free(&title);
            }
            free(text);
        }
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        char *text = ctx_span_text(s, st->u.output.items[i]->span);
        fprintf(s->out, "%s = ", text);
        free(text);
        if (vals[i].dim == 0) {
            fprintf(s->out, "%s\n", num(x[i][0], buf, sizeof buf));
            continue;
        }
        fputc('[', s->out);
        for (unsigned k = 0; k < vals[i].dim; k++)
            fprintf(s->out, "%s%s", k ? ", " : "", num(x[i][k], buf, sizeof buf));
        fputs("]\n", s->out);
    }
    return 0;
}

/* One value of `accel`: a line NAME = VALUE, or inside a sweep a column
 * NAME. */
static int accel_value(ctx_t *s, const char *name, double v, src_span_t at,
                       diag_t *err)
{
    if (s->row)
        return ctx_row_add(s, name, false, v, at, err);
    char buf[40];
    fprintf(s->out, "%s = %s\n", name, num(v, buf, sizeof buf));
    return 0;
}

/* The accelerations of E at VARS, as `accel` prints them. */
static int print_accel(ctx_t *s, const nh_system_t *sys, eom_t *e,
                       const double *vars, src_span_t at, diag_t *err)
{
    expr_graph_t *g = sys->g;
    eom_method_t m = eom_method(e);
    int rc = 0;
    if (m == EOM_MAGGI || m == EOM_GIBBS_APPELL)
        for (size_t i = 0; i < sys->m && rc == 0; i++)
            rc = accel_value(s, expr_var_name(g, sys->zd[i]),
                             vars[sys->zd[i]], at, err);
    for (size_t i = 0; i < sys->n && rc == 0; i++)
        rc = accel_value(s, expr_var_name(g, sys->qdd[i]), vars[sys->qdd[i]],
                         at, err);
    if (eom_has_multipliers(e))
        for (size_t a = 0; a < sys->r && rc == 0; a++)
            rc = accel_value(s, expr_var_name(g, sys->lam[a]),
                             vars[sys->lam[a]], at, err);
    return rc;
}

int output_accel(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    lower_t *lw = ctx_lowered(s, err);
    if (!lw)
        return -1;
    size_t nv = expr_graph_nvars(lower_graph(lw));
    double *vars = xcalloc(nv ? nv : 1, sizeof *vars);
    int rc = state_vars(s, lw, true, st->span, vars, err);
    if (rc == 0)
        rc = print_accel(s, lower_system(lw), s->eom, vars, st->span, err);
    free(vars);
    return rc;
}

/* ---- show ------------------------------------------------------------ */

/* E (a node of the session's graph) in its display form (§7.1). */
static void put_simplified(ctx_t *s, simp_t *sp, const expr_t *e, bool latex)
{
    char *t = simp_format(sp, simp_simplify(sp, simp_import(sp, e)), latex);
    fputs(t, s->out);
    free(t);
}

/* A name in LaTeX (\theta, \mathrm{mass}) or as it is. */
static void put_name(ctx_t *s, const char *name, bool latex)
{
    if (!latex) {
        fputs(name, s->out);
        return;
    }
    char *t = expr_latex_name(name);
    fputs(t, s->out);
    free(t);
}

/* The start of a row "LABEL = " / "LABEL &= ". */
static void put_label(ctx_t *s, const char *label, bool latex)
{
    put_name(s, label, latex);
    fputs(latex ? " &= " : " = ", s->out);
}

/* A list line: "coordinates: a, b" or "&\text{coordinates:}\ a,\ b". */
static void put_list(ctx_t *s, const char *what, const char *const *names,
                     size_t n, bool latex)
{
    fprintf(s->out, latex ? "&\\text{%s:}\\ " : "%s:", what);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? (latex ? ",\\ " : ",") : "", s->out);
        fputs(latex ? "" : " ", s->out);
        put_name(s, names[i], latex);
    }
}

/* Lines of a report that is text or one LaTeX align*: rows ("x'' = ..."
 * or "\ddot{x} &= ...") and remarks (LaTeX comments).  A LaTeX row ends
 * with \\ when something follows it. */
typedef struct report {
    FILE *out;
    bool latex, open_row;
} report_t;

static void report_begin(report_t *r, FILE *out, bool latex)
{
    r->out = out;
    r->latex = latex;
    r->open_row = false;
    if (latex)
        fputs("\\begin{align*}\n", out);
}

static void report_close_row(report_t *r)
{
    if (r->open_row)
        fputs(r->latex ? " \\\\\n" : "\n", r->out);
    r->open_row = false;
}

/* A row to be written by the caller (the \\ of the one before put). */
static void report_start_row(report_t *r)
{
    report_close_row(r);
    r->open_row = true;
}


static void report_remark(report_t *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void report_remark(report_t *r, const char *fmt, ...)
{
    report_close_row(r);
    if (r->latex)
        fputs("% ", r->out);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(r->out, fmt, ap);
    va_end(ap);
    fputc('\n', r->out);
}

static void report_end(report_t *r)
{
    if (r->open_row)
        fputc('\n', r->out);
    r->open_row = false;
    if (r->latex)
        fputs("\\end{align*}\n", r->out);
}

/* Text for \text{}: '_' escaped. */
static void put_text_latex(ctx_t *s, const char *t)
{
    for (; *t; t++) {
        if (*t == '_' || *t == '#' || *t == '%' || *t == '&' || *t == '$')
            fputc('\\', s->out);
        fputc(*t, s->out);
    }
}

static void show_model(ctx_t *s, lower_t *lw, bool latex)
{
    const model_t *m = &s->model;
    const nh_system_t *sys = lower_system(lw);
    expr_graph_t *g = lower_graph(lw);
    simp_t *sp = simp_new(g);
    char buf[40];
    FILE *o = s->out;
    report_t rep;
    report_begin(&rep, o, latex);
    report_start_row(&rep);
    if (sys->n)
        put_list(s, "coordinates", sys->qname, sys->n, latex);
    else
        fputs(latex ? "&\\text{coordinates: none}" : "coordinates: none", o);
    if (sys->m) {
        report_start_row(&rep);
        put_list(s, "speeds", sys->zname, sys->m, latex);
    }
    if (m->params.n) {
        report_start_row(&rep);
        fputs(latex ? "&\\text{parameters:}\\ " : "parameters:", o);
        for (size_t i = 0; i < m->params.n; i++) {
            fputs(i ? (latex ? ",\\ " : ",") : "", o);
            fputs(latex ? "" : " ", o);
            put_name(s, m->params.v[i].name, latex);
            fprintf(o, " = %s", num(m->params.v[i].value, buf, sizeof buf));
        }
    }
    if (m->inputs.n) { /* §7.2.1, with their values as parameters */
        report_start_row(&rep);
        fputs(latex ? "&\\text{inputs:}\\ " : "inputs:", o);
        for (size_t i = 0; i < m->inputs.n; i++) {
            fputs(i ? (latex ? ",\\ " : ",") : "", o);
            fputs(latex ? "" : " ", o);
            put_name(s, m->inputs.v[i].name, latex);
            fprintf(o, " = %s", num(m->inputs.v[i].value, buf, sizeof buf));
        }
    }
    /* Frames, bodies and gravity as declared (LANGUAGE.md §4.1); in LaTeX
     * as comments, since they are statements, not formulas. */
    const char *lead = latex ? "% " : "";
    if (m->frames.n || m->bodies.n || m->gravity)
        report_close_row(&rep); /* they are lines of their own */
    for (size_t i = 0; i < m->frames.n; i++) {
        char *t = ctx_span_text(s, m->frames.v[i].decl);
        fprintf(o, "%s%s%s\n", lead, t,
                m->frames.v[i].parent ? "" : " (inertial)");
        free(t);
    }
    for (size_t i = 0; i < m->bodies.n; i++) {
        char *t = ctx_span_text(s, m->bodies.v[i].decl);
        fprintf(o, "%s%s\n", lead, t);
        free(t);
    }
    if (m->gravity) {
        char *t = ctx_span_text(s, m->gravity_span);
        fprintf(o, "%s%s\n", lead, t);
        free(t);
    }
    if (m->lagrangian.name) {
        report_start_row(&rep);
        if (!latex)
            fputs("lagrangian ", o);
        put_label(s, m->lagrangian.name, latex);
        put_simplified(s, sp, sys->L, latex);
    } else {
        if (sys->T) {
            report_start_row(&rep);
            if (!latex)
                fputs("kinetic ", o);
            put_label(s, m->kinetic.name ? m->kinetic.name : "T", latex);
            put_simplified(s, sp, sys->T, latex);
        }
        if (sys->V && (m->potential.name || m->gravity)) {
            report_start_row(&rep);
            if (!latex)
                fputs("potential ", o);
            put_label(s, m->potential.name ? m->potential.name : "V", latex);
            put_simplified(s, sp, sys->V, latex);
        }
    }
    for (size_t i = 0; i < sys->n; i++)
        if (!expr_is_const(sys->Q[i], 0)) {
            report_start_row(&rep);
            if (latex) {
                fputs("Q_{", o);
                put_name(s, sys->qname[i], true);
                fputs("} &= ", o);
            } else {
                fprintf(o, "force %s = ", sys->qname[i]);
            }
            put_simplified(s, sp, sys->Q[i], latex);
        }
    for (size_t a = 0; a < sys->r; a++) {
        report_start_row(&rep);
        if (latex) {
            fputs("\\text{", o);
            put_text_latex(s, sys->cname[a]);
            fputs(":}\\quad 0 &= ", o);
        } else {
            fprintf(o, "constraint %s: 0 = ", sys->cname[a]);
        }
        put_simplified(s, sp, sys->C[a], latex);
    }
    if (sys->psi)
        for (size_t i = 0; i < sys->n; i++)
            if (sys->psi[i]) {
                report_start_row(&rep);
                if (!latex)
                    fputs("kinematic ", o);
                put_label(s, expr_var_name(g, sys->qd[i]), latex);
                put_simplified(s, sp, sys->psi[i], latex);
            }
    for (size_t i = 0; i < m->outputs.n; i++) {
        value_t v;
        diag_t tmp = {0};
        if (lower_expr(lw, m->outputs.v[i].value, LOWER_QUERY, &v, &tmp) != 0
            || v.dim != 0)
            continue; /* (checked when declared: not expected) */
        report_start_row(&rep);
        if (!latex)
            fputs("output ", o);
        put_label(s, m->outputs.v[i].name, latex);
        put_simplified(s, sp, v.c[0], latex);
    }
    int method = m->method >= 0 ? m->method : (int)eom_default_method(sys);
    report_start_row(&rep);
    if (latex) {
        fputs("&\\text{equations: ", o);
        put_text_latex(s, eom_method_name(method));
        fprintf(o, "%s}", m->method >= 0 ? "" : " (the default)");
    } else {
        fprintf(o, "equations: %s%s", eom_method_name(method),
                m->method >= 0 ? "" : " (the default)");
    }
    report_end(&rep);
    /* what animate draws (LANGUAGE.md §7.5): not mechanics, so last */
    for (size_t i = 0; i < m->draws.n; i++) {
        char *t = ctx_span_text(s, m->draws.v[i].span);
        fprintf(o, "%s%s\n", lead, t);
        free(t);
    }
    simp_free(sp);
}

/* show mass: M_ij = ∂²L/∂q_i'∂q_j' (LANGUAGE.md §5); in LaTeX a pmatrix
 * (§7.1) — or, when a row of it would be wider than TeX can set (one
 * line of more than SIMP_LATEX_MAX_CHARS characters), its entries on and
 * above the diagonal one per line, M_{ij} &= …. */
static void show_mass(ctx_t *s, lower_t *lw, bool latex)
{
    const nh_system_t *sys = lower_system(lw);
    expr_graph_t *g = lower_graph(lw);
    size_t n = sys->n;
    simp_t *sp = simp_new(g);
    char **text = xcalloc(n * n + 1, sizeof *text);
    bool wide = false;
    for (size_t i = 0; i < n; i++) {
        const expr_t *dLi = expr_diff(g, sys->L, sys->qd[i]);
        size_t row = 0;
        for (size_t j = 0; j < n; j++) {
            const expr_t *e = expr_diff(g, dLi, sys->qd[j]);
            text[i * n + j] =
                simp_format(sp, simp_simplify(sp, simp_import(sp, e)), latex);
            row += strlen(text[i * n + j]) + 3;
        }
        wide |= latex && row > SIMP_LATEX_MAX_CHARS;
    }
    if (wide) {
        fputs("\\begin{align*}\n"
              "% M is symmetric: its entries on and above the diagonal\n",
              s->out);
        bool first = true;
        for (size_t i = 0; i < n; i++)
            for (size_t j = i; j < n; j++) {
                fprintf(s->out, "%sM_{%zu%s%zu} &= %s", first ? "" : " \\\\\n",
                        i + 1, n > 9 ? "," : "", j + 1, text[i * n + j]);
                first = false;
            }
        fputs("\n\\end{align*}\n", s->out);
    } else {
        if (latex)
            fputs("\\begin{align*}\nM &= \\begin{pmatrix}\n", s->out);
        for (size_t i = 0; i < n; i++) {
            fputs(latex ? "" : "[", s->out);
            for (size_t j = 0; j < n; j++) {
                if (j)
                    fputs(latex ? " & " : ", ", s->out);
                fputs(text[i * n + j], s->out);
            }
            fputs(latex ? (i + 1 < n ? " \\\\\n" : "\n") : "]\n", s->out);
        }
        if (latex)
            fputs("\\end{pmatrix}\n\\end{align*}\n", s->out);
    }
    for (size_t k = 0; k < n * n; k++)
        free(text[k]);
    free(text);
    simp_free(sp);
}

/* `show e` writes a DAG out as a tree, which can be exponentially larger
 * (a let chain doubling each line): past this many terms it refuses. */
#define SHOW_MAX_TERMS 200000
/* ... and an expression nested deeper than this: the simplifier and the
 * printers recurse through it (a chain of 150 000 lets, each the sine of
 * the one before, overflowed the stack). */
#define SHOW_MAX_DEPTH 10000

/* The number of nodes of E written out as a tree, saturating at LIMIT
 * (MEMO: one entry per node id, 0 = not computed; sizes stored + 1). */
static size_t tree_size(const expr_t *e, size_t *memo, size_t limit)
{
    if (memo[e->id])
        return memo[e->id] - 1;
    size_t n = 1;
    for (uint32_t i = 0; i < e->nargs && n < limit; i++) {
        n += tree_size(e->args[i], memo, limit);
        if (n > limit)
            n = limit;
    }
    memo[e->id] = n + 1;
    return n;
}


/* An error when one of the NE expressions E (NULL entries skipped) is
 * nested too deeply to show: it is named PREFIX NAMES[i] SUFFIX ("F*_u1",
 * "x'").  Size is no reason to refuse here: long rows are shown with
 * named subexpressions (LANGUAGE.md §7.1), but the simplifier and the
 * printers recurse by depth. */
static int show_too_deep(const expr_t *const *E, size_t ne,
                         const char *prefix, const char *const *names,
                         const char *suffix, src_span_t at, diag_t *err)
{
    for (size_t i = 0; i < ne; i++)
        if (E[i] && E[i]->height > SHOW_MAX_DEPTH)
            return diag_error(err, at,
                              "%s%s%s is nested too deeply to show (more "
                              "than %d levels)",
                              prefix, names[i], suffix, SHOW_MAX_DEPTH);
    return 0;
}

/* The equations on speeds for show kinematics and show kane: the chosen
 * ones when they are maggi or gibbs_appell, else maggi prepared for the
 * purpose (*OWN, which the caller frees). */
static eom_t *speeds_eom(ctx_t *s, lower_t *lw, src_span_t at, eom_t **own,
                         diag_t *err)
{
    int m = s->model.method;
    *own = NULL;
    if (m == EOM_MAGGI || m == EOM_GIBBS_APPELL)
        return ctx_eom(s, at, err);
    return *own = eom_prepare(lower_system(lw), EOM_MAGGI, at, err);
}

/* Writes the describer's text TEXT (malloc'ed, consumed) on OUT. */
static void put_text(ctx_t *s, char *text)
{
    fputs(text, s->out);
    if (text[0] && text[strlen(text) - 1] != '\n')
        fputc('\n', s->out);
    free(text);
}

/* ---- show accel ------------------------------------------------------ */

/* A solved acceleration longer than this (as text) is not shown: it says
 * so, and the equations it comes from follow (LANGUAGE.md §7.1; the limit
 * is stated in doc/language.md). */
#define SHOW_SOLVED_MAX 1000

/* show kinematics: q' = ψ, the given equations and the velocities the
 * constraints determine (kinematics.h). */
static int show_kinematics(ctx_t *s, lower_t *lw, const ast_stmt_t *st,
                           diag_t *err)
{
    eom_t *own, *e = speeds_eom(s, lw, st->span, &own, err);
    if (!e)
        return -1;
    const eom_kin_t *kin = eom_kinematics(e);
    const nh_system_t *sys = lower_system(lw);
    const size_t *order, *sizes, *dep;
    const expr_t *const *seq;
    size_t k = eom_kin_dependent(kin, &dep);
    const expr_t **rows = xcalloc(sys->n + 1, sizeof *rows);
    for (size_t i = 0; i < sys->n; i++)
        rows[i] = sys->psi[i];
    eom_kin_blocks(kin, &order, &sizes, &seq);
    for (size_t j = 0; eom_kin_mode(kin) == EOM_KIN_SYMBOLIC && j < k; j++)
        rows[dep[j]] = seq[j];
    int rc = show_too_deep(rows, sys->n, "", sys->qname, "'", st->span, err);
    /* (long rows: named subexpressions, LANGUAGE.md §7.1) */
    if (rc == 0)
        put_text(s, eom_kin_describe(kin, st->u.show.latex));
    free(rows);
    eom_free(own);
    return rc;
}

/* show kane: Kane's F_r and F*_r for each speed (eom_kane). */
static int show_kane(ctx_t *s, lower_t *lw, const ast_stmt_t *st,
                     diag_t *err)
{
    eom_t *own, *e = speeds_eom(s, lw, st->span, &own, err);
    if (!e)
        return -1;
    const nh_system_t *sys = lower_system(lw);
    size_t m = sys->m;
    const expr_t **F = xcalloc(2 * m + 1, sizeof *F);
    bool vin;
    /* (rows too long for a line are shown with named subexpressions,
     * LANGUAGE.md §7.1: no size is refused here) */
    int rc = eom_kane(e, F, F + m, &vin, err);
    if (rc != 0)
        err->span = st->span;
    else if ((rc = show_too_deep(F, m, "F_", sys->zname, "", st->span,
                                 err)) == 0)
        rc = show_too_deep(F + m, m, "F*_", sys->zname, "", st->span, err);
    if (rc == 0)
        put_text(s, eom_describe_kane(e, st->u.show.latex));
    free(F);
    eom_free(own);
    return rc;
}

/* The variables `show accel` lists for E: z' of every speed (maggi,
 * gibbs_appell) or q'' of every coordinate, then lambda of every
 * constraint where the method has multipliers; into V, the count
 * returned. */
static size_t accel_vars(const nh_system_t *sys, eom_t *e, uint32_t *v)
{
    size_t k = 0;
    eom_method_t m = eom_method(e);
    if (m == EOM_MAGGI || m == EOM_GIBBS_APPELL) {
        for (size_t a = 0; a < sys->m; a++)
            v[k++] = sys->zd[a];
        return k;
    }
    for (size_t i = 0; i < sys->n; i++)
        v[k++] = sys->qdd[i];
    if (eom_has_multipliers(e))
        for (size_t a = 0; a < sys->r; a++)
            v[k++] = sys->lam[a];
    return k;
}

/* show accel (ONLY == NULL), show x'' (ONLY = the variable's node), or
 * show of an expression EV that holds accelerations: the solved forms
 * (eom_solved), each a row "x'' = ..." (or EV's value alone) laid out as
 * display.h lays out rows (named subexpressions when one is too long for
 * a line), and the equations they come from when they are not solved. */
static int show_solved(ctx_t *s, lower_t *lw, const ast_stmt_t *st,
                       const expr_t *only, const value_t *ev, diag_t *err)
{
    eom_t *e = ctx_eom(s, st->span, err);
    if (!e)
        return -1;
    bool latex = st->u.show.latex;
    const nh_system_t *sys = lower_system(lw);
    expr_graph_t *g = lower_graph(lw);
    uint32_t nv = expr_graph_nvars(g);
    simp_t *sp = simp_new(g);
    const expr_t **val = xcalloc(nv + 1, sizeof *val);
    char why[256];
    int solved = eom_solved(e, sp, val, why, sizeof why);
    bool show_system = false;
    if (solved == 0 && ev) {
        /* an expression: the solved forms put in */
        unsigned n = ev->dim ? ev->dim : 1;
        strbuf_t b;
        strbuf_init(&b);
        report_t r;
        report_begin(&r, s->out, latex);
        /* (the display graph may have gained variables while solving:
         * expr_subst reads one entry for each) */
        uint32_t dnv = expr_graph_nvars(simp_graph(sp));
        const expr_t **dval = xcalloc(dnv + 1, sizeof *dval);
        memcpy(dval, val, nv * sizeof *dval);
        for (unsigned k = 0; k < n && !show_system; k++) {
            const expr_t *in = simp_import(sp, ev->c[k]);
            const expr_t *d = expr_subst(simp_graph(sp), in, dval);
            /* where the expression is defined, not the solved forms
             * (they hold where the system is regular) */
            char *t = simp_format(sp, simp_simplify_within(sp, d, in),
                                  latex);
            if (strlen(t) > SHOW_SOLVED_MAX) {
                report_remark(&r, "the expression is too long to show "
                                  "solved (%zu characters; the limit is "
                                  "%d); the equations it comes from:",
                              strlen(t), SHOW_SOLVED_MAX);
                show_system = true;
            }
            if (n > 1)
                strbuf_add(&b, k ? (latex ? " & " : ", ")
                                 : (latex ? "\\begin{pmatrix}" : "["));
            strbuf_add(&b, t);
            free(t);
        }
        free(dval);
        if (n > 1)
            strbuf_add(&b, latex ? "\\end{pmatrix}" : "]");
        char *t = strbuf_take(&b);
        if (!show_system) {
            fputs(t, s->out);
            r.open_row = true;
        }
        free(t);
        report_end(&r);
    } else {
        display_t *d = display_new(sp, latex);
        for (size_t i = 0; i < sys->n; i++)
            display_may_drop(d, sys->q[i]);
        if (solved != 0) {
            char head[512];
            snprintf(head, sizeof head,
                     "the accelerations are not solved symbolically: %s; "
                     "the equations they come from:",
                     why);
            display_heading(d, head);
            show_system = true;
        } else {
            uint32_t *vars =
                xcalloc(sys->n + sys->m + sys->r + 1, sizeof *vars);
            size_t nvar = only ? 1 : accel_vars(sys, e, vars);
            if (only)
                vars[0] = only->var;
            for (size_t i = 0; i < nvar; i++) {
                const char *name = expr_var_name(g, vars[i]);
                if (!val[vars[i]]) {
                    char head[256];
                    snprintf(head, sizeof head,
                             "%s is not an unknown of the equations %s",
                             name, eom_method_name(eom_method(e)));
                    display_heading(d, head);
                    continue;
                }
                char *l = expr_latex_name(name);
                display_object(d, name, l, val[vars[i]]);
                free(l);
            }
            free(vars);
        }
        char *t = display_finish(d);
        fputs(t, s->out);
        free(t);
    }
    if (show_system)
        put_text(s, eom_describe(e, latex));
    free(val);
    simp_free(sp);
    return 0;
}

/* show reduced, show voronec: from the chosen equations when they are
 * voronec or naive, else from Voronec's equations prepared for the
 * purpose (an error when the constraints are not in explicit form). */
static int show_voronec(ctx_t *s, lower_t *lw, const ast_stmt_t *st,
                        bool reduced, diag_t *err)
{
    eom_t *own = NULL, *e = NULL;
    int m = s->model.method;
    if (m == EOM_VORONEC || m == EOM_NAIVE)
        e = ctx_eom(s, st->span, err);
    else
        e = own = eom_prepare(lower_system(lw), EOM_VORONEC, st->span, err);
    if (!e)
        return -1;
    bool latex = st->u.show.latex;
    if (reduced) {
        simp_t *sp = simp_new(lower_graph(lw));
        fputs(latex ? "\\begin{align*}\n\\bar{L} &= " : "Lbar = ", s->out);
        put_simplified(s, sp, eom_reduced_lagrangian(e), latex);
        fputs(latex ? "\n\\end{align*}\n" : "\n", s->out);
        simp_free(sp);
    } else {
        char *text = eom_describe_voronec(e, latex);
        fputs(text, s->out);
        if (text[0] && text[strlen(text) - 1] != '\n')
            fputc('\n', s->out);
        free(text);
    }
    eom_free(own);
    return 0;
}

/* The reports `show` prints by name (below), for completion. */
const char *const output_show_subjects[] = {
    "model", "eom", "accel", "mass", "reduced", "voronec", "kinematics",
    "kane", NULL};

int output_show(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    lower_t *lw = ctx_lowered(s, err);
    if (!lw)
        return -1;
    const ast_expr_t *e = st->u.show.expr;
    bool latex = st->u.show.latex;
    if (latex)
        s->out_kind = CTX_OUT_LATEX;
    if (e->kind == AST_NAME &&
        model_lookup(&s->model, e->name, NULL, NULL) == MODEL_NONE) {
        const char *w = e->name;
        if (strcmp(w, "model") == 0) {
            show_model(s, lw, latex);
            return 0;
        }
        if (strcmp(w, "mass") == 0) {
            show_mass(s, lw, latex);
            return 0;
        }
        if (strcmp(w, "eom") == 0) {
            eom_t *eq = ctx_eom(s, st->span, err);
            if (!eq)
                return -1;
            char *text = eom_describe(eq, latex);
            fputs(text, s->out);
            if (text[0] && text[strlen(text) - 1] != '\n')
                fputc('\n', s->out);
            free(text);
            return 0;
        }
        if (strcmp(w, "reduced") == 0 || strcmp(w, "voronec") == 0)
            return show_voronec(s, lw, st, w[0] == 'r', err);
        if (strcmp(w, "kinematics") == 0)
            return show_kinematics(s, lw, st, err);
        if (strcmp(w, "kane") == 0)
            return show_kane(s, lw, st, err);
        if (strcmp(w, "accel") == 0)
            return show_solved(s, lw, st, NULL, NULL, err);
    }
    value_t v;
    if (lower_expr(lw, e, LOWER_QUERY, &v, err))
        return -1;
    if (lambda_available(s, lw, &v, e, err))
        return -1;
    if (lower_needs_accel(lw, &v)) {
        /* x'', lambda(c), z' alone: its row; else the value, solved */
        const expr_t *x = v.dim == 0 ? expr_unguarded(v.c[0]) : NULL;
        if (x && x->op == EXPR_VAR)
            return show_solved(s, lw, st, x, NULL, err);
        return show_solved(s, lw, st, NULL, &v, err);
    }
    expr_graph_t *g = lower_graph(lw);
    for (unsigned k = 0; k < (v.dim ? v.dim : 1); k++)
        if (v.c[k]->height > SHOW_MAX_DEPTH)
            return diag_error(err, e->span,
                              "this expression is nested too deeply to show "
                              "(more than %d levels); print its value "
                              "instead",
                              SHOW_MAX_DEPTH);
    size_t *memo = xcalloc(expr_graph_count(g) + 1, sizeof *memo);
    for (unsigned k = 0; k < (v.dim ? v.dim : 1); k++)
        if (tree_size(v.c[k], memo, SHOW_MAX_TERMS) >= SHOW_MAX_TERMS) {
            free(memo);
            return diag_error(err, e->span,
                              "this expression is too large to show (more "
                              "than %d terms written out); print its value "
                              "instead",
                              SHOW_MAX_TERMS);
        }
    free(memo);
    /* LaTeX: a formula in an align* (so it compiles as it is, §7.1), a
     * vector a pmatrix row */
    simp_t *sp = simp_new(g);
    if (latex)
        fputs("\\begin{align*}\n", s->out);
    if (v.dim == 0) {
        put_simplified(s, sp, v.c[0], latex);
    } else {
        fputs(latex ? "\\begin{pmatrix}" : "[", s->out);
        for (unsigned k = 0; k < v.dim; k++) {
            if (k)
                fputs(latex ? " & " : ", ", s->out);
            put_simplified(s, sp, v.c[k], latex);
        }
        fputs(latex ? "\\end{pmatrix}" : "]", s->out);
    }
    simp_free(sp);
    fputs(latex ? "\n\\end{align*}\n" : "\n", s->out);
    return 0;
}

/* ---- compare --------------------------------------------------------- */

/* xorshift64*: a fixed seed, so compare prints the same every run. */
static double rnd(uint64_t *st)
{
    *st ^= *st >> 12;
    *st ^= *st << 25;
    *st ^= *st >> 27;
    return (double)((*st * 2685821657736338717ULL) >> 11) * 0x1.0p-53;
}

/* Each sample solves both equations on a fresh random state: the cap keeps
 * one compare to seconds on large models (fuzz finding 007). */
#define COMPARE_MAX_SAMPLES 1000

/* The relative difference compare reports: |a − b| / max(1, |a|, |b|). */
static double rel_diff(double a, double b)
{
    double scale = fmax(1.0, fmax(fabs(a), fabs(b)));
    return fabs(a - b) / scale;
}

/* Whether compare draws another random state after TRIES draws of which
 * DONE were usable, SAMPLES wanted.  It stops at 20 SAMPLES + 100 draws
 * and, sooner, once 100 draws have failed while fewer than one in 20 was
 * usable: at that rate the run could not finish within the first limit,
 * and each failed draw on a large model costs a factorisation or more
 * (a 124-coordinate model whose every state is singular took 72 s under
 * the sanitizers to say so: fuzz finding 015). */
static bool compare_keep_drawing(long done, long tries, long samples)
{
    if (tries >= 20 * samples + 100)
        return false;
    return tries - done < 100 || 20 * done >= tries;
}

/* The random draws of `compare … samples N`: draw K is made from its own
 * seed (compare_seed), so that it is the same whether it runs here or on
 * a worker process, and the draws are taken in the order of K whatever
 * the number of workers (LANGUAGE.md §1.2: `set threads`): the result is
 * the same, bit for bit (tests/test_work.c). */
typedef struct compare_draws {
    ctx_t *s;
    lower_t *lw;
    eom_t *ea, *eb;
    const double *base;        /* the current state's variables */
    double *vars, *va, *vb;    /* scratch: a draw, each method's values */
    bool *given;               /* scratch: velocities given (n) */
    bool speeds;               /* a method on speeds: speeds drawn */
    sim_projector_t *proj;     /* onto the holonomic constraints, or NULL */
    eom_velsolver_t *vel;      /* the dependent velocities */
} compare_draws_t;

/* Draw K's generator state: splitmix64 of K after a fixed seed, never 0
 * (xorshift's fixed point). */
static uint64_t compare_seed(uint64_t k)
{
    uint64_t z = 0x9E3779B97F4A7C15ULL * (k + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return z ? z : 1;
}

/* Draw K: true with *WORST the largest relative difference of the two
 * methods' accelerations there, false when the draw is not usable (not
 * consistent with the constraints, or singular for either method). */
static bool compare_draw(compare_draws_t *d, uint64_t k, double *worst)
{
    const nh_system_t *sys = lower_system(d->lw);
    size_t nb1 = expr_graph_nvars(lower_graph(d->lw));
    nb1 = nb1 ? nb1 : 1;
    uint64_t seed = compare_seed(k);
    double *vars = d->vars;
    memcpy(vars, d->base, nb1 * sizeof *vars);
    for (size_t i = 0; i < sys->n; i++) {
        vars[sys->q[i]] = d->base[sys->q[i]] + 2 * rnd(&seed) - 1;
        vars[sys->qd[i]] = 2 * rnd(&seed) - 1;
        d->given[i] = false;
    }
    for (size_t i = 0; i < sys->m; i++)
        vars[sys->z[i]] = 2 * rnd(&seed) - 1;
    diag_t tmp = {0};
    if (d->proj && sim_projector_run(d->proj, vars, &tmp))
        return false;
    if (d->speeds && sys->psi) {
        /* Draw the speeds and take the velocities from psi; those
         * without a kinematic equation from the constraints. */
        for (size_t i = 0; i < sys->n; i++) {
            if (!sys->psi[i])
                continue;
            vars[sys->qd[i]] =
                expr_eval(lower_graph(d->lw), sys->psi[i], vars);
            d->given[i] = true;
        }
    }
    if (eom_velsolver_run(d->vel, vars, d->given, &tmp))
        return false;
    memcpy(d->va, vars, nb1 * sizeof *vars);
    memcpy(d->vb, vars, nb1 * sizeof *vars);
    if (eom_accel(d->ea, d->va, &tmp) || eom_accel(d->eb, d->vb, &tmp))
        return false;
    double w = 0;
    for (size_t i = 0; i < sys->n; i++)
        w = fmax(w, rel_diff(d->va[sys->qdd[i]], d->vb[sys->qdd[i]]));
    *worst = w;
    return true;
}

/* A worker's draw (work.h): a byte, 1 when usable, then its worst
 * difference. */
static int compare_work_draw(void *arg, size_t k, strbuf_t *out,
                             diag_t *err)
{
    (void)err;
    double w = 0;
    char ok = compare_draw(arg, k, &w) ? 1 : 0;
    strbuf_addn(out, &ok, 1);
    strbuf_addn(out, (const char *)&w, sizeof w);
    return 0;
}

/* Takes the draws 0, 1, … in order until SAMPLES are usable or
 * compare_keep_drawing says stop, here or — under `set threads = N`, N
 * > 1 — on N workers a batch at a time (the draws of a batch past the
 * stop are not counted: the same draws are counted as in a serial run).
 * *DONE, *TRIES and *WORST as the loop leaves them.  Returns 0, or -1
 * with *err set when the workers could not run. */
static int compare_run_draws(compare_draws_t *d, long samples, long *done,
                             long *tries, double *worst,
                             const ast_stmt_t *st, diag_t *err)
{
    ctx_t *s = d->s;
    long max_tries = 20 * samples + 100;
    while (*done < samples && compare_keep_drawing(*done, *tries, samples) &&
           !nh_stop_due(&s->stop)) {
        if (s->threads <= 1 || samples - *done < 2) {
            double w;
            if (compare_draw(d, (uint64_t)(*tries)++, &w)) {
                *worst = fmax(*worst, w);
                ++*done;
            }
            continue;
        }
        /* a batch: the draws still wanted, at least two per worker */
        long batch = samples - *done;
        if (batch < 2 * (long)s->threads)
            batch = 2 * (long)s->threads;
        if (batch > max_tries - *tries)
            batch = max_tries - *tries;
        work_result_t res;
        if (work_run((size_t)*tries, (size_t)(*tries + batch), s->threads,
                     true, compare_work_draw, d, &s->stop, &res,
                     err) != 0) {
            if (err->span.file == SRC_NO_FILE)
                err->span = st->span;
            return -1;
        }
        for (size_t k = (size_t)*tries; k < res.first_fail; k++) {
            if (!(*done < samples &&
                  compare_keep_drawing(*done, *tries, samples)))
                break;
            const strbuf_t *b = &res.out[k];
            if (b->len != 1 + sizeof(double)) {
                work_result_free(&res);
                return diag_error(err, st->span,
                                  "a worker process gave a draw of the "
                                  "wrong length");
            }
            ++*tries;
            double w;
            memcpy(&w, b->data + 1, sizeof w);
            if (b->data[0]) {
                *worst = fmax(*worst, w);
                ++*done;
            }
        }
        bool short_batch = res.first_fail < res.n;
        work_result_free(&res);
        if (short_batch) /* stopped (Ctrl-C, the time limit) */
            break;
    }
    return 0;
}

int output_compare(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    int ma = ctx_lookup_method(&st->u.compare.a, err);
    if (ma < 0)
        return -1;
    int mb = ctx_lookup_method(&st->u.compare.b, err);
    if (mb < 0)
        return -1;
    lower_t *lw = ctx_lowered(s, err);
    if (!lw)
        return -1;
    const nh_system_t *sys = lower_system(lw);
    long samples = 0;
    if (st->u.compare.samples) {
        value_t v;
        if (lower_expr(lw, st->u.compare.samples, LOWER_CONST, &v, err))
            return -1;
        size_t nv0 = expr_graph_nvars(lower_graph(lw));
        double *vv = xcalloc(nv0 ? nv0 : 1, sizeof *vv);
        lower_fill_vars(lw, &s->model, vv);
        double x = v.dim ? NAN : expr_eval(lower_graph(lw), v.c[0], vv);
        free(vv);
        if (!(x >= 1 && x <= COMPARE_MAX_SAMPLES && x == floor(x)))
            return diag_error(err, st->u.compare.samples->span,
                              "samples must be a whole number from 1 to %d",
                              COMPARE_MAX_SAMPLES);
        samples = (long)x;
    }
    eom_t *ea = ctx_prepare_here(s, lw, (eom_method_t)ma,
                                 st->u.compare.a.span, err);
    if (!ea)
        return -1;
    eom_t *eb = ctx_prepare_here(s, lw, (eom_method_t)mb,
                                 st->u.compare.b.span, err);
    if (!eb || ctx_compile(s, ea, false, st->u.compare.a.span, err) != 0 ||
        ctx_compile(s, eb, false, st->u.compare.b.span, err) != 0) {
        eom_free(ea);
        eom_free(eb);
        return -1;
    }
    size_t nv = expr_graph_nvars(lower_graph(lw));
    /* on the heap: the base state, the two equations' and a draw's */
    size_t nb1 = nv ? nv : 1;
    double *base = xcalloc(4 * nb1, sizeof *base);
    double *va = base + nb1, *vb = base + 2 * nb1, *vars = base + 3 * nb1;
    bool *given = xcalloc(sys->n + 1, sizeof *given);
    lower_fill_vars(lw, &s->model, base);
    const char *na = st->u.compare.a.name, *nb = st->u.compare.b.name;
    char b1[40], b2[40], b3[40];
    int rc = 0;
    if (!samples) {
        memcpy(va, base, nb1 * sizeof *va);
        memcpy(vb, base, nb1 * sizeof *vb);
        if (eom_accel(ea, va, err) || eom_accel(eb, vb, err)) {
            rc = ctx_state_error(s, lw, base, st->span, err);
            goto done;
        }
        double worst = 0;
        for (size_t i = 0; i < sys->n; i++) {
            double a = va[sys->qdd[i]], b = vb[sys->qdd[i]];
            fprintf(s->out, "%s'': %s = %s, %s = %s, diff = %s\n",
                    sys->qname[i], na, num(a, b1, sizeof b1), nb,
                    num(b, b2, sizeof b2), num(a - b, b3, sizeof b3));
            worst = fmax(worst, rel_diff(a, b));
        }
        fprintf(s->out, "max |diff| = %s\n", num(worst, b1, sizeof b1));
        goto done;
    }
    /* Random states consistent with the constraints: coordinates drawn
     * around the current state and pulled back onto the holonomic
     * constraints, velocities drawn in [-1, 1], then the velocities the
     * constraints determine solved for.  Singular draws are skipped. */
    bool holonomic = false;
    for (size_t a = 0; a < sys->r && !holonomic; a++) {
        holonomic = true;
        for (size_t i = 0; i < sys->n && holonomic; i++)
            holonomic = !expr_depends(lower_graph(lw), sys->C[a], sys->qd[i]);
    }
    compare_draws_t d = {
        .s = s,
        .lw = lw,
        .ea = ea,
        .eb = eb,
        .base = base,
        .vars = vars,
        .va = va,
        .vb = vb,
        .given = given,
        .speeds = ma == EOM_MAGGI || ma == EOM_GIBBS_APPELL ||
                  mb == EOM_MAGGI || mb == EOM_GIBBS_APPELL,
        /* derived and compiled once for all the draws (fuzz finding 015) */
        .proj = holonomic ? sim_projector_new(sys) : NULL,
        .vel = eom_velsolver_new(sys),
    };
    double worst = 0;
    long done_n = 0, tries = 0;
    rc = compare_run_draws(&d, samples, &done_n, &tries, &worst, st, err);
    sim_projector_free(d.proj);
    eom_velsolver_free(d.vel);
    if (rc != 0)
        goto done;
    if (done_n < samples && nh_stop_due(&s->stop)) {
        rc = diag_error(err, st->span, "%s after %ld of %ld random states",
                        nh_stop_reason(&s->stop), done_n, samples);
        goto done;
    }
    if (done_n < samples) {
        rc = diag_error(err, st->span,
                        "only %ld of %ld random states could be made "
                        "consistent with the constraints and regular for "
                        "both equations",
                        done_n, samples);
        goto done;
    }
    fprintf(s->out, "max |diff| = %s\n", num(worst, b1, sizeof b1));
done:
    free(base);
    free(given);
    eom_free(ea);
    eom_free(eb);
    return rc;
}

/* ---- check ----------------------------------------------------------- */

/* check's last lines (LANGUAGE.md §7.3): an independent velocity that is
 * an inertial component of a cyclic coordinate's motion (a sleigh's x'
 * when y' is the dependent one) cannot stay constant on a motion that
 * turns, so steady and follow cannot find such motions in that chart:
 * named, with the advice to use speeds.  Said only when the chosen
 * equations can be prepared and differentiated at the state; nothing
 * otherwise (check's other lines do not need them). */
static void output_check_inertial(ctx_t *s, lower_t *lw, double *vars)
{
    const nh_system_t *sys = lower_system(lw);
    diag_t err = {0};
    if (sys->n == 0 || sys->r == 0)
        return;
    struct lin *l = ctx_lin(s, SRC_SPAN_NONE, &err);
    if (!l)
        return;
    const model_t *m = &s->model;
    size_t n = sys->n;
    bool have = m->q0_how.n == n && m->qd0_how.n == n;
    bool *flags = xcalloc(4 * n + 1, sizeof *flags);
    for (size_t i = 0; i < n && have; i++) {
        flags[i] = m->q0_how.v[i] == MODEL_INIT_GIVEN;
        flags[n + i] = m->q0_how.v[i] == MODEL_INIT_GUESS;
        flags[2 * n + i] = m->qd0_how.v[i] == MODEL_INIT_GIVEN;
        flags[3 * n + i] = m->qd0_how.v[i] == MODEL_INIT_GUESS;
    }
    uint32_t vel[8], turn[8];
    size_t cons[8];
    long k = -1;
    if (lin_choose(l, vars, flags, flags + n, flags + 2 * n, flags + 3 * n,
                   &err) == 0)
        k = steady_inertial(sys, l, vars, vel, turn, cons, 8, &err);
    free(flags);
    expr_graph_t *g = sys->g;
    for (long j = 0; j < k; j++) {
        const char *coord = "";
        for (size_t i = 0; i < n; i++)
            if (sys->qd[i] == vel[j])
                coord = sys->qname[i];
        fprintf(s->out,
                "%s is independent and an inertial component of %s's "
                "motion (its coefficient in %s turns with %s): on a motion "
                "that turns it changes, so steady and follow cannot hold it; "
                "to find such motions, make speeds the state (speed, "
                "kinematic %s = ..., equations maggi)\n",
                expr_var_name(g, vel[j]), coord, sys->cname[cons[j]],
                expr_var_name(g, turn[j]), expr_var_name(g, vel[j]));
    }
}

int output_check(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    lower_t *lw = ctx_lowered(s, err);
    if (!lw)
        return -1;
    const nh_system_t *sys = lower_system(lw);
    size_t nv = expr_graph_nvars(lower_graph(lw));
    double *vars = xcalloc(nv ? nv : 1, sizeof *vars);
    lower_fill_vars(lw, &s->model, vars);
    check_report_t rep;
    int rc = check_analyse(sys, vars, &rep, err);
    if (rc != 0) {
        free(vars);
        if (err->set && err->span.file == SRC_NO_FILE)
            err->span = st->span;
        return -1;
    }
    char *text = check_format(sys, &rep);
    fputs(text, s->out);
    free(text);
    check_report_free(&rep);
    output_check_inertial(s, lw, vars);
    free(vars);
    return 0;
}

/* ---- worksheet ------------------------------------------------------- */

int output_worksheet(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    lower_t *lw = ctx_lowered(s, err);
    if (!lw)
        return -1;
    size_t nv = expr_graph_nvars(lower_graph(lw));
    double *vars = xcalloc(nv ? nv : 1, sizeof *vars);
    lower_fill_vars(lw, &s->model, vars);
    bool latex = st->u.worksheet.latex;
    if (latex)
        s->out_kind = CTX_OUT_LATEX;
    int rc = worksheet_run(lower_system(lw), vars, st->u.worksheet.name.name,
                           latex, st->u.worksheet.name.span, s->out, err);
    free(vars);
    if (rc != 0) {
        if (err->set && err->span.file == SRC_NO_FILE)
            err->span = st->span;
        return -1;
    }
    return 0;
}
