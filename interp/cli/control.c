/*
 * control.c — the statements of transfer functions (LANGUAGE.md §7.2.1):
 * `transfer OUT from IN at s = VALUE` and `bode OUT from IN from W1 to
 * W2 [> "file"]`.
 *
 * Both read the linearization with inputs and outputs at the current
 * state (stability.h: A, B, C, D over every independent variable — G
 * does not depend on which variables make the state, so no VARS) and
 * evaluate G(s) = C (sI − A)⁻¹ B + D for one output and one input
 * (interp/analysis/transfer.h).  VALUE is a complex number: `i` is the
 * imaginary unit there, and only there.
 *
 * Must not: change the model, the state or the samples.
 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/analysis/transfer.h"
#include "interp/base/outfile.h"
#include "interp/base/util.h"
#include "interp/cli/stability.h"
#include "interp/cli/stmts.h"
#include "interp/run/plot.h"

static const char *control_num(double x, char *buf, size_t size)
{
    return expr_format_number(x == 0 ? 0.0 : x, buf, size);
}

/* The names of KIND's declarations (inputs or outputs), for "did you
 * mean" (NULL-terminated, malloc'ed). */
static const char **control_names(const model_t *m, model_kind_t kind)
{
    size_t n = kind == MODEL_INPUT ? m->inputs.n : m->outputs.n;
    const char **names = xcalloc(n + 1, sizeof *names);
    for (size_t k = 0; k < n; k++)
        names[k] = kind == MODEL_INPUT ? m->inputs.v[k].name
                                       : m->outputs.v[k].name;
    return names;
}

/* The index of the declaration of KIND (MODEL_INPUT or MODEL_OUTPUT)
 * that ID names; -1 with *err set at ID. */
static long control_find(const ctx_t *s, const ast_ident_t *id,
                         model_kind_t kind, diag_t *err)
{
    const model_t *m = &s->model;
    const char *what = kind == MODEL_INPUT ? "input" : "output";
    size_t idx;
    model_kind_t k = model_lookup(m, id->name, &idx, NULL);
    if (k == kind)
        return (long)idx;
    size_t n = kind == MODEL_INPUT ? m->inputs.n : m->outputs.n;
    const char *how = kind == MODEL_INPUT
                          ? "`input NAME` declares one, and a force or "
                            "torque applies it"
                          : "`output NAME = EXPR` declares one";
    if (k != MODEL_NONE)
        return diag_error(err, id->span, "'%s' is %s, not an %s; %s",
                          id->name, model_kind_name(k), what, how);
    if (n == 0)
        return diag_error(err, id->span,
                          "unknown %s '%s': the model has no %ss; %s", what,
                          id->name, what, how);
    const char **names = control_names(m, kind);
    const char *best = source_closest(id->name, names);
    int rc;
    if (best)
        rc = diag_error(err, id->span, "unknown %s '%s'; did you mean '%s'?",
                        what, id->name, best);
    else
        rc = diag_error(err, id->span, "unknown %s '%s' (the %ss are %s%s)",
                        what, id->name, what, names[0],
                        n > 1 ? ", ..." : "");
    free(names);
    return rc;
}

/* ---- the value of s: a complex constant ---------------------------------- */

/* Whether E holds the name `i`. */
static bool control_has_i(const ast_expr_t *e)
{
    if (!e)
        return false;
    if (e->kind == AST_NAME)
        return strcmp(e->name, "i") == 0;
    for (size_t k = 0; k < e->nargs; k++)
        if (control_has_i(e->args[k]))
            return true;
    return control_has_i(e->a) || control_has_i(e->b);
}

/* E as a complex number: the imaginary unit `i`, numbers, parameters and
 * inputs (real: ctx_eval_const evaluates a part without `i`), + - * /,
 * ^ with a real exponent, and exp, sqrt, sin, cos of a complex argument.
 * -1 with *err set at the part that is none of these. */
static int control_complex(ctx_t *s, lower_t *lw, const ast_expr_t *e,
                           double complex *z, diag_t *err)
{
    if (!control_has_i(e)) {
        double x;
        if (ctx_eval_const(s, lw, &s->model, e, &x, err) != 0)
            return -1;
        *z = x;
        return 0;
    }
    double complex a, b;
    switch (e->kind) {
    case AST_NAME: /* `i` itself */
        *z = I;
        return 0;
    case AST_NEG:
    case AST_POS:
        if (control_complex(s, lw, e->a, &a, err) != 0)
            return -1;
        *z = e->kind == AST_NEG ? -a : a;
        return 0;
    case AST_ADD:
    case AST_SUB:
    case AST_MUL:
    case AST_DIV:
        if (control_complex(s, lw, e->a, &a, err) != 0 ||
            control_complex(s, lw, e->b, &b, err) != 0)
            return -1;
        if (e->kind == AST_DIV && b == 0)
            return diag_error(err, e->b->span, "division by zero");
        *z = e->kind == AST_ADD   ? a + b
             : e->kind == AST_SUB ? a - b
             : e->kind == AST_MUL ? a * b
                                  : a / b;
        return 0;
    case AST_POW: {
        if (control_has_i(e->b))
            return diag_error(err, e->b->span,
                              "an exponent of a complex s must be real");
        double x;
        if (control_complex(s, lw, e->a, &a, err) != 0 ||
            ctx_eval_const(s, lw, &s->model, e->b, &x, err) != 0)
            return -1;
        /* a whole exponent by repeated products: i^2 is -1 exactly */
        if (x == floor(x) && fabs(x) <= 64) {
            double complex p = 1;
            for (int k = 0; k < (int)fabs(x); k++)
                p *= a;
            *z = x < 0 ? 1 / p : p;
        } else {
            *z = cpow(a, x);
        }
        return 0;
    }
    case AST_CALL: {
        static const char *const fns[] = {"exp", "sqrt", "sin", "cos", NULL};
        size_t f = 0;
        while (fns[f] && strcmp(fns[f], e->name) != 0)
            f++;
        if (!fns[f] || e->nargs != 1)
            return diag_error(err, e->span,
                              "in a complex s, i may be used in + - * / ^ "
                              "and exp(), sqrt(), sin(), cos() of one "
                              "argument");
        if (control_complex(s, lw, e->args[0], &a, err) != 0)
            return -1;
        *z = f == 0 ? cexp(a) : f == 1 ? csqrt(a) : f == 2 ? csin(a)
                                                           : ccos(a);
        return 0;
    }
    default:
        return diag_error(err, e->span,
                          "s is a complex number, as 2*i or -0.5 + 3*i; "
                          "this is %s",
                          e->kind == AST_VECTOR ? "a vector" : "no number");
    }
}

/* ---- the statements -------------------------------------------------------- */

/* The linearization with inputs and outputs, and the output and input
 * ST names (their indices into *OUT, *IN).  Returns 0, or -1 with *err
 * set (R freed). */
static int control_setup(ctx_t *s, const ast_stmt_t *st, stab_t *r,
                         size_t *out, size_t *in, diag_t *err)
{
    long o = control_find(s, &st->u.transfer.out, MODEL_OUTPUT, err);
    if (o < 0)
        return -1;
    long u = control_find(s, &st->u.transfer.in, MODEL_INPUT, err);
    if (u < 0)
        return -1;
    if (stability_compute(s, st, NULL, 0, true, r, err) != 0)
        return -1;
    *out = (size_t)o;
    *in = (size_t)u;
    return 0;
}

/* G(s) of the pair: the whole A, B's column IN, C's row OUT, D's entry. */
static int control_eval(const stab_t *r, size_t out, size_t in, double sre,
                        double sim, double *gre, double *gim, diag_t *err)
{
    size_t N = r->nfull;
    return tf_eval(r->Af, N, r->Bf + in, r->ni, r->Cf + out * N,
                   r->Df[out * r->ni + in], sre, sim, gre, gim, err);
}

int control_transfer(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    const ast_ident_t *sv = &st->u.transfer.svar;
    if (!sv->name || strcmp(sv->name, "s") != 0)
        return diag_error(err, sv->span,
                          "transfer evaluates G at `s = VALUE`; this names "
                          "'%s'",
                          sv->name ? sv->name : "");
    lower_t *lw = ctx_lowered(s, err);
    if (!lw)
        return -1;
    size_t out, in;
    double complex z;
    /* the names and s first: their errors are the user's to fix before
     * anything is computed */
    if (control_find(s, &st->u.transfer.out, MODEL_OUTPUT, err) < 0 ||
        control_find(s, &st->u.transfer.in, MODEL_INPUT, err) < 0 ||
        control_complex(s, lw, st->u.transfer.s, &z, err) != 0)
        return -1;
    if (!isfinite(creal(z)) || !isfinite(cimag(z)))
        return diag_error(err, st->u.transfer.s->span,
                          "s is not finite");
    stab_t r;
    if (control_setup(s, st, &r, &out, &in, err) != 0)
        return -1;
    double gre, gim;
    int rc = control_eval(&r, out, in, creal(z), cimag(z), &gre, &gim, err);
    if (rc != 0) {
        err->span = st->u.transfer.s->span;
    } else {
        char n1[40], n2[40];
        fprintf(s->out, "G = %s", control_num(gre, n1, sizeof n1));
        if (gim != 0)
            fprintf(s->out, " %c %s*i", gim > 0 ? '+' : '-',
                    control_num(fabs(gim), n2, sizeof n2));
        fputc('\n', s->out);
        stability_warn_state(s, st, &r);
    }
    stability_free(&r);
    return rc;
}

/* Whether FILE names a CSV file (its extension, any case). */
static bool control_csv(const char *file)
{
    size_t n = file ? strlen(file) : 0;
    return n >= 4 && strcasecmp(file + n - 4, ".csv") == 0;
}

int control_bode(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    lower_t *lw = ctx_lowered(s, err);
    if (!lw)
        return -1;
    double w1, w2;
    if (control_find(s, &st->u.transfer.out, MODEL_OUTPUT, err) < 0 ||
        control_find(s, &st->u.transfer.in, MODEL_INPUT, err) < 0 ||
        ctx_eval_const(s, lw, &s->model, st->u.transfer.w1, &w1, err) != 0 ||
        ctx_eval_const(s, lw, &s->model, st->u.transfer.w2, &w2, err) != 0)
        return -1;
    char n1[40], n2[40];
    if (!(w1 > 0) || !isfinite(w1))
        return diag_error(err, st->u.transfer.w1->span,
                          "the frequencies of a Bode plot are positive "
                          "(rad/s, on a log scale); this is %s",
                          control_num(w1, n1, sizeof n1));
    if (!(w2 > w1) || !isfinite(w2))
        return diag_error(err, st->u.transfer.w2->span,
                          "the range goes up: %s is not above %s",
                          control_num(w2, n1, sizeof n1),
                          control_num(w1, n2, sizeof n2));
    const char *file = st->to_file.name;
    stab_t r;
    size_t out, in;
    if (control_setup(s, st, &r, &out, &in, err) != 0)
        return -1;
    size_t npts = tf_bode_points(w1, w2), N = r.nfull;
    double *w = xcalloc(3 * npts, sizeof *w), *mag = w + npts,
           *phase = mag + npts;
    int rc = tf_bode(r.Af, N, r.Bf + in, r.ni, r.Cf + out * N,
                     r.Df[out * r.ni + in], w1, w2, w, mag, phase, err);
    if (rc != 0)
        err->span = st->span;
    static const char *const titles[] = {"w (rad/s)", "magnitude (dB)",
                                         "phase (deg)"};
    const double *cols[] = {w, mag, phase};
    plot_columns_t pc = {.ncols = 3, .nrows = npts, .titles = titles,
                         .col = cols};
    plot_style_t style = {true, true};
    if (rc == 0 && control_csv(file)) {
        outfile_t of = {0};
        int e = outfile_open(&of, file);
        if (e) {
            rc = diag_error(err, st->to_file.span, "cannot write '%s': %s",
                            file, strerror(e));
        } else {
            plot_table(&pc, of.f);
            e = outfile_commit(&of);
            if (e)
                rc = diag_error(err, st->to_file.span,
                                "cannot write '%s': %s", file, strerror(e));
        }
    } else if (rc == 0 && !file && s->svg_plots) {
        /* a notebook's inline figure, with plot's PNG and PDF beside it */
        s->out_kind = CTX_OUT_SVG;
        free(s->plot_png);
        free(s->plot_pdf);
        rc = plot_draw_svg_styled(&pc, &style, s->out, &s->plot_png,
                                  &s->plot_pdf, err);
    } else if (rc == 0) {
        rc = plot_draw_styled(&pc, &style, file, s->out, err);
    }
    if (rc != 0 && err->set && err->span.file == SRC_NO_FILE)
        err->span = file ? st->to_file.span : st->span;
    if (rc == 0)
        stability_warn_state(s, st, &r);
    free(w);
    stability_free(&r);
    return rc;
}
