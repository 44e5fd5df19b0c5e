/*
 * stability.c — the statements of linear stability (LANGUAGE.md §7.2):
 * linearize, eigen, sweep and plot sweep; and lyapunov (§7.4), whose
 * variables are linearize's.
 *
 * linearize and eigen read the current state and the chosen equations
 * (interp/analysis/linearize.h does the mathematics); sweep runs a few
 * statements once per value of a parameter and collects what print,
 * eigen, accel and lyapunov give into one table (context.h: ctx_rows_t), then puts
 * the parameter, the state, the remembered `initial`, the samples and
 * the settings back as they were.
 *
 * Must not: change the model, the state or the samples, except inside a
 * sweep (which restores them).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp/analysis/linearize.h"
#include "interp/analysis/lyapunov.h"
#include "interp/eom/velocity.h"
#include "interp/analysis/steady.h"
#include "interp/base/outfile.h"
#include "interp/base/util.h"
#include "interp/analysis/transfer.h"
#include "interp/cli/stability.h"
#include "interp/cli/stmts.h"
#include "interp/cli/work.h"
#include "interp/run/plot.h"

/* The restriction of A to VARS: a nonzero entry of A[VARS, others] above
 * this fraction of A's largest entry means a variable left out feeds the
 * kept ones (§7.2). */
#define STAB_FEED_RTOL 1e-9

static const char *stab_num(double x, char *buf, size_t size)
{
    return expr_format_number(x == 0 ? 0.0 : x, buf, size);
}

void stability_free(stab_t *r)
{
    free(r->keep);
    free(r->Bf);
    free(r->Cf);
    free(r->Df);
    free(r->B);
    free(r->C);
    free(r->D);
    free(r->Af);
    free(r->A);
    free(r->feeds);
    free(r->rate);
    free(r->drifts);
}

/* Whether the state is an equilibrium or a steady motion (§7.3, the
 * notion `steady` solves for, steady.h): every independent variable but
 * the cyclic coordinates (found from A's columns) keeps its value, as
 * far as the variables kept see it (R->keep: the restriction's motion is
 * theirs; the disc's steady turn restricted to its lean, lean rate, yaw
 * rate and spin rate does not depend on x' and y' left out).  Marks in
 * R->drifts those that are not cyclic coordinates, change — their rate
 * above 1e-9 of its equation's scale (steady_scales), the measure
 * `steady`'s residual uses — and are kept or feed a kept row (above
 * 1e-9 of A's largest entry, STAB_FEED_RTOL). */
static void stab_steady(stab_t *r, const double *full, const double *vars)
{
    size_t N = r->nfull;
    bool *cyclic = xcalloc(N + 1, sizeof *cyclic);
    double *scale = xcalloc(N + 1, sizeof *scale);
    steady_cyclic(r->sys, r->all, N, full, cyclic);
    steady_scales(r->all, N, full, vars, scale);
    for (size_t j = 0; j < N; j++)
    {
        if (cyclic[j] || !(fabs(r->rate[j]) > STAB_FEED_RTOL * scale[j]))
            continue;
        for (size_t a = 0; a < r->m; a++) {
            size_t i = r->keep[a];
            if (i == j || fabs(full[i * N + j]) > STAB_FEED_RTOL * r->scale) {
                r->drifts[j] = true;
                r->ndrifts++;
                break;
            }
        }
    }
    free(cyclic);
    free(scale);
}

/* Turns an error of the analysis (span NONE) into one at the statement,
 * with the state. */
static int stab_at(ctx_t *s, const ast_stmt_t *st, const double *vars,
                   diag_t *err)
{
    char state[1024], msg[DIAG_MSG_MAX];
    ctx_describe_state(s, vars, state, sizeof state);
    snprintf(msg, sizeof msg, "%s", err->msg);
    diag_clear(err);
    return diag_error(err, st->span, "%s%s", msg, state);
}

/* The graph variable that the VARS entry E names (a coordinate, its
 * velocity, a speed); -1 with *err set when it names none. */
static long stab_var_of(ctx_t *s, lower_t *lw, const ast_expr_t *e,
                        diag_t *err)
{
    const nh_system_t *sys = lower_system(lw);
    const ast_expr_t *base = e;
    unsigned primes = 0;
    while (base->kind == AST_PRIME) {
        base = base->a;
        primes++;
    }
    if (base->kind != AST_NAME)
        return diag_error(err, e->span,
                          "the variables are named, as coordinates, "
                          "velocities and speeds (phi, phi'); this is an "
                          "expression");
    long qi = model_coord_index(&s->model, base->name);
    long zi = model_speed_index(&s->model, base->name);
    if (qi >= 0 && primes <= 1)
        return primes ? sys->qd[qi] : sys->q[qi];
    if (zi >= 0 && primes == 0)
        return sys->z[zi];
    if (qi >= 0 || zi >= 0)
        return diag_error(err, e->span,
                          "an acceleration is not a variable of the state; "
                          "name coordinates, velocities and speeds");
    model_kind_t k = model_lookup(&s->model, base->name, NULL, NULL);
    if (k == MODEL_NONE) {
        size_t n = sys->n, nz = sys->m;
        const char **cands = xcalloc(n + nz + 1, sizeof *cands);
        for (size_t j = 0; j < n + nz; j++)
            cands[j] = j < n ? sys->qname[j] : sys->zname[j - n];
        cands[n + nz] = NULL;
        const char *best = source_closest(base->name, cands);
        free(cands);
        if (best)
            return diag_error(err, base->span,
                              "unknown name '%s'; did you mean '%s'?",
                              base->name, best);
        return diag_error(err, base->span, "unknown name '%s'", base->name);
    }
    return diag_error(err, base->span,
                      "'%s' is %s, not a variable of the state (a "
                      "coordinate, a velocity or a speed)",
                      base->name, model_kind_name(k));
}

/* The dependent variables as text: "theta, x', y'" or "none". */
static void stab_dep_text(const stab_t *r, expr_graph_t *g, strbuf_t *b)
{
    for (size_t k = 0; k < r->ndep; k++)
        strbuf_addf(b, "%s%s", k ? ", " : "", expr_var_name(g, r->dep[k]));
    if (!r->ndep)
        strbuf_addf(b, "none");
}

/* The outputs of the model as nodes (§7.2.1), into H (nout entries);
 * an output that no longer lowers to a scalar (a let it reads was
 * declared again) is an error at its declaration. */
static int stab_outputs(ctx_t *s, lower_t *lw, const expr_t **h,
                        diag_t *err)
{
    const model_t *m = &s->model;
    for (size_t k = 0; k < m->outputs.n; k++) {
        value_t v;
        if (lower_expr(lw, m->outputs.v[k].value, LOWER_QUERY, &v, err) != 0)
            return -1;
        if (v.dim != 0)
            return diag_error(err, m->outputs.v[k].value->span,
                              "output %s is no longer a scalar",
                              m->outputs.v[k].name);
        h[k] = v.c[0];
    }
    return 0;
}

int stability_compute(ctx_t *s, const ast_stmt_t *st,
                      ast_expr_t *const *items, size_t nitems, bool io,
                      stab_t *r, diag_t *err)
{
    memset(r, 0, sizeof *r);
    lower_t *lw = ctx_lowered(s, err);
    if (!lw)
        return -1;
    const nh_system_t *sys = lower_system(lw);
    if (sys->n == 0)
        return diag_error(err, st->span,
                          "the model has no coordinates: there is nothing "
                          "to linearize");
    lin_t *l = ctx_lin(s, st->span, err);
    if (!l)
        return -1;
    expr_graph_t *g = lower_graph(lw);
    r->sys = sys;
    size_t nv = expr_graph_nvars(g), n = sys->n;
    double *vars = xcalloc(nv + 1, sizeof *vars);
    lower_fill_vars(lw, &s->model, vars);
    /* How the last `initial` gave each name: its choice of the dependent
     * ones is the linearization's (§7.2). */
    const model_t *m = &s->model;
    bool have = m->q0_how.n == n && m->qd0_how.n == n;
    bool *flags = xcalloc(4 * n + 1, sizeof *flags);
    bool *gq = flags, *uq = flags + n, *gv = flags + 2 * n, *uv = flags + 3 * n;
    for (size_t i = 0; i < n && have; i++) {
        gq[i] = m->q0_how.v[i] == MODEL_INIT_GIVEN;
        uq[i] = m->q0_how.v[i] == MODEL_INIT_GUESS;
        gv[i] = m->qd0_how.v[i] == MODEL_INIT_GIVEN;
        uv[i] = m->qd0_how.v[i] == MODEL_INIT_GUESS;
    }
    int rc = lin_choose(l, vars, gq, uq, gv, uv, err);
    free(flags);
    double *full = NULL;
    r->io = io;
    r->ni = io ? sys->ni : 0;
    r->nout = io ? m->outputs.n : 0;
    const expr_t **h = xcalloc(r->nout + 1, sizeof *h);
    if (rc == 0 && io && stab_outputs(s, lw, h, err) != 0) {
        free(h);
        free(vars);
        return -1;
    }
    if (rc == 0) {
        r->nfull = lin_size(l);
        r->all = lin_vars(l);
        r->ndep = lin_dependent(l, &r->dep);
        full = xcalloc(r->nfull * r->nfull + 1, sizeof *full);
        if (io) {
            size_t N = r->nfull;
            r->Bf = xcalloc(N * r->ni + 1, sizeof *r->Bf);
            r->Cf = xcalloc(r->nout * N + 1, sizeof *r->Cf);
            r->Df = xcalloc(r->nout * r->ni + 1, sizeof *r->Df);
            const char **hn = xcalloc(r->nout + 1, sizeof *hn);
            for (size_t k = 0; k < r->nout; k++)
                hn[k] = m->outputs.v[k].name;
            rc = lin_io(l, vars, h, hn, r->nout, full, r->Bf, r->Cf, r->Df,
                        err);
            free(hn);
        } else {
            rc = lin_matrix(l, vars, full, err);
        }
    }
    free(h);
    if (rc != 0) {
        stab_at(s, st, vars, err);
        free(vars);
        free(full);
        stability_free(r);
        return -1;
    }
    size_t N = r->nfull;
    r->rate = xcalloc(N + 1, sizeof *r->rate);
    r->drifts = xcalloc(N + 1, sizeof *r->drifts);
    lin_rates(l, vars, r->rate);
    r->time_dependent = lin_time_dependent(l);
    r->keep = xcalloc(N + 1, sizeof *r->keep);
    r->feeds = xcalloc(N + 1, sizeof *r->feeds);
    bool *kept = xcalloc(N + 1, sizeof *kept);
    if (nitems == 0) {
        for (size_t j = 0; j < N; j++)
            r->keep[j] = j;
        r->m = N;
    }
    for (size_t i = 0; i < nitems && rc == 0; i++) {
        const ast_expr_t *e = items[i];
        long v = stab_var_of(s, lw, e, err);
        if (v < 0) {
            rc = -1;
            break;
        }
        size_t j = 0;
        while (j < N && r->all[j] != (uint32_t)v)
            j++;
        if (j < N && kept[j]) {
            rc = diag_error(err, e->span, "'%s' is named twice",
                            expr_var_name(g, (uint32_t)v));
        } else if (j < N) {
            kept[j] = true;
            r->keep[r->m++] = j;
        } else {
            bool dependent = false;
            for (size_t k = 0; k < r->ndep; k++)
                dependent |= r->dep[k] == (uint32_t)v;
            strbuf_t b;
            strbuf_init(&b);
            if (r->ndep) {
                strbuf_addf(&b, " (the dependent variables are ");
                stab_dep_text(r, g, &b);
                strbuf_addf(&b, ")");
            }
            if (dependent)
                rc = diag_error(err, e->span,
                                "'%s' is dependent: the constraints "
                                "determine it%s",
                                expr_var_name(g, (uint32_t)v), b.data);
            else
                rc = diag_error(err, e->span,
                                "'%s' is not a variable of the %s state: "
                                "the equations derive it from the "
                                "others%s",
                                expr_var_name(g, (uint32_t)v),
                                eom_method_name(eom_method(s->eom)),
                                b.data ? b.data : "");
            strbuf_free(&b);
        }
    }
    if (rc == 0) {
        for (size_t k = 0; k < N * N; k++)
            r->scale = fmax(r->scale, fabs(full[k]));
        stab_steady(r, full, vars);
        r->A = xcalloc(r->m * r->m + 1, sizeof *r->A);
        for (size_t a = 0; a < r->m; a++)
            for (size_t b = 0; b < r->m; b++)
                r->A[a * r->m + b] = full[r->keep[a] * N + r->keep[b]];
        for (size_t j = 0; j < N && nitems; j++)
            for (size_t a = 0; a < r->m && !kept[j]; a++)
                if (fabs(full[r->keep[a] * N + j]) >
                    STAB_FEED_RTOL * r->scale) {
                    r->feeds[j] = true;
                    r->nfeeds++;
                    break;
                }
        if (io) {
            /* B's kept rows, C's kept columns (§7.2.1: restricted by
             * VARS like A) */
            size_t ni = r->ni, no = r->nout, M = r->m;
            r->B = xcalloc(M * ni + 1, sizeof *r->B);
            r->C = xcalloc(no * M + 1, sizeof *r->C);
            r->D = xcalloc(no * ni + 1, sizeof *r->D);
            for (size_t a = 0; a < M; a++)
                for (size_t u = 0; u < ni; u++)
                    r->B[a * ni + u] = r->Bf[r->keep[a] * ni + u];
            for (size_t o = 0; o < no; o++) {
                for (size_t a = 0; a < M; a++)
                    r->C[o * M + a] = r->Cf[o * N + r->keep[a]];
                for (size_t u = 0; u < ni; u++)
                    r->D[o * ni + u] = r->Df[o * ni + u];
            }
            r->Af = full;
            full = NULL;
        }
    }
    free(kept);
    free(full);
    free(vars);
    if (rc != 0)
        stability_free(r);
    return rc;
}

static void stab_warn(ctx_t *s, const ast_stmt_t *st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prints a warning at ST. */
static void stab_warn(ctx_t *s, const ast_stmt_t *st, const char *fmt, ...)
{
    char msg[DIAG_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_t w = {0};
    diag_error(&w, st->span, "%s", msg);
    fflush(s->out);
    diag_print_warning(s->err, s->src, &w);
}

/* The warnings of the state: A holds at this instant only when the
 * equations depend on t or when the state is neither an equilibrium nor
 * a steady motion; then its eigenvalues need not decide stability. */
void stability_warn_state(ctx_t *s, const ast_stmt_t *st, const stab_t *r)
{
    expr_graph_t *g = r->sys->g;
    if (r->time_dependent)
        stab_warn(s, st,
                  "the equations depend on t: A is the linearization at "
                  "this instant, and its eigenvalues need not decide "
                  "stability");
    if (!r->ndrifts)
        return;
    strbuf_t b;
    strbuf_init(&b);
    char num[40];
    for (size_t j = 0, k = 0; j < r->nfull; j++)
        if (r->drifts[j])
            strbuf_addf(&b, "%s%s (rate %s)", k++ ? ", " : "",
                        expr_var_name(g, r->all[j]),
                        stab_num(r->rate[j], num, sizeof num));
    stab_warn(s, st,
              "the state is neither an equilibrium nor a steady motion: "
              "%s %s, and in a steady motion only the cyclic coordinates "
              "move; A changes along the motion and its eigenvalues need "
              "not decide stability (`steady` finds steady motions)",
              b.data, r->ndrifts > 1 ? "change" : "changes");
    strbuf_free(&b);
}

/* The warning of §7.2: left-out variables feed the kept ones. */
void stability_warn_feeds(ctx_t *s, const ast_stmt_t *st, const stab_t *r)
{
    if (!r->nfeeds)
        return;
    expr_graph_t *g = r->sys->g;
    strbuf_t b;
    strbuf_init(&b);
    for (size_t j = 0, k = 0; j < r->nfull; j++)
        if (r->feeds[j])
            strbuf_addf(&b, "%s%s", k++ ? ", " : "",
                        expr_var_name(g, r->all[j]));
    stab_warn(s, st,
              "%s %s left out but %s the variables kept: the eigenvalues of "
              "the restriction are not eigenvalues of the motion",
              b.data, r->nfeeds > 1 ? "are" : "is",
              r->nfeeds > 1 ? "feed" : "feeds");
    strbuf_free(&b);
}

/* Rows of the ROWS×COLS matrix X, one per line, `[a, b, …]`. */
static void stab_print_rows(ctx_t *s, const double *x, size_t rows,
                            size_t cols)
{
    char num[40];
    for (size_t a = 0; a < rows; a++) {
        fputc('[', s->out);
        for (size_t c = 0; c < cols; c++)
            fprintf(s->out, "%s%s", c ? ", " : "",
                    stab_num(x[a * cols + c], num, sizeof num));
        fputs("]\n", s->out);
    }
}

/* The names of a list line: "inputs: Tphi, Tdelta". */
static void stab_print_names(ctx_t *s, const char *what,
                             const char *const *names, size_t n)
{
    fprintf(s->out, "%s:", what);
    for (size_t k = 0; k < n; k++)
        fprintf(s->out, "%s %s", k ? "," : "", names[k]);
    fputc('\n', s->out);
}

int stability_linearize(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    stab_t r;
    const model_t *m = &s->model;
    bool io = m->inputs.n > 0 || m->outputs.n > 0;
    if (stability_compute(s, st, st->u.output.items, st->u.output.n, io, &r,
                          err) != 0)
        return -1;
    expr_graph_t *g = r.sys->g;
    strbuf_t b;
    strbuf_init(&b);
    stab_dep_text(&r, g, &b);
    fprintf(s->out, "dependent: %s\nvariables:", b.data);
    strbuf_free(&b);
    for (size_t a = 0; a < r.m; a++)
        fprintf(s->out, "%s %s", a ? "," : "",
                expr_var_name(g, r.all[r.keep[a]]));
    fputs(r.m ? "\n" : " none\n", s->out);
    stab_print_rows(s, r.A, r.m, r.m);
    /* §7.2.1: B (a row per variable, a column per input), then C (a row
     * per output, a column per variable) and D (a row per output, a
     * column per input; none without inputs) */
    if (r.ni) {
        stab_print_names(s, "inputs", r.sys->iname, r.ni);
        stab_print_rows(s, r.B, r.m, r.ni);
    }
    if (r.nout) {
        const char **names = xcalloc(r.nout, sizeof *names);
        for (size_t k = 0; k < r.nout; k++)
            names[k] = m->outputs.v[k].name;
        stab_print_names(s, "outputs", names, r.nout);
        free(names);
        stab_print_rows(s, r.C, r.nout, r.m);
        if (r.ni)
            stab_print_rows(s, r.D, r.nout, r.ni);
    }
    stability_warn_state(s, st, &r);
    stability_warn_feeds(s, st, &r);
    stability_free(&r);
    return 0;
}

int stability_eigen(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    stab_t r;
    if (stability_compute(s, st, st->u.output.items, st->u.output.n, false,
                          &r, err) != 0)
        return -1;
    size_t m = r.m;
    double *re = xcalloc(2 * m + 1, sizeof *re), *im = re + m;
    bool *one = xcalloc(m + 1, sizeof *one);
    int rc = 0;
    if (lin_eigen(r.A, m, re, im) != 0)
        rc = diag_error(err, st->span,
                        "the eigenvalues could not be computed (GSL's QR "
                        "iteration did not converge)");
    char n1[40], n2[40];
    if (rc == 0 && s->row && !s->eig_seen.set) {
        /* a follow's marks (LANGUAGE.md §7.3): stability and Hopf points
         * from the first eigen at each point */
        lin_verdict_t v = lin_classify(re, m, r.scale, one);
        double tol = LIN_AXIS_RTOL * fmax(1.0, r.scale);
        s->eig_seen.set = true;
        s->eig_seen.verdict = (int)v;
        s->eig_seen.unstable = s->eig_seen.unstable_pairs = 0;
        for (size_t k = 0; k < m; k++) {
            s->eig_seen.unstable += re[k] > tol;
            s->eig_seen.unstable_pairs += re[k] > tol && im[k] > 0;
        }
    }
    if (rc == 0 && s->row) {
        /* a sweep's columns: re(eig1), im(eig1), ...; only at its first
         * value does a left-out variable get the warning */
        for (size_t k = 0; k < m && rc == 0; k++) {
            char title[48];
            snprintf(title, sizeof title, "re(eig%zu)", k + 1);
            rc = ctx_row_add(s, title, false, re[k], st->span, err);
            snprintf(title, sizeof title, "im(eig%zu)", k + 1);
            if (rc == 0)
                rc = ctx_row_add(s, title, true, im[k], st->span, err);
        }
        if (rc == 0) { /* muted after the sweep's first value */
            stability_warn_state(s, st, &r);
            stability_warn_feeds(s, st, &r);
        }
    } else if (rc == 0 && m == 0) {
        fprintf(s->out, "no eigenvalues: the constraints leave no "
                        "independent variable\n");
    } else if (rc == 0) {
        for (size_t k = 0; k < m; k++) {
            fprintf(s->out, "eig%zu = %s", k + 1,
                    stab_num(re[k], n1, sizeof n1));
            if (im[k] != 0)
                fprintf(s->out, " %c %s*i", im[k] > 0 ? '+' : '-',
                        stab_num(fabs(im[k]), n2, sizeof n2));
            fputc('\n', s->out);
        }
        lin_verdict_t v = lin_classify(re, m, r.scale, one);
        strbuf_t b;
        strbuf_init(&b);
        size_t count = 0;
        for (size_t k = 0; k < m; k++)
            if (one[k])
                strbuf_addf(&b, "%seig%zu", count++ ? ", " : "", k + 1);
        switch (v) {
        case LIN_STABLE:
            fprintf(s->out, "asymptotically stable: every eigenvalue has a "
                            "negative real part\n");
            break;
        case LIN_UNSTABLE:
            fprintf(s->out, "unstable: %s %s a positive real part\n",
                    b.data, count > 1 ? "have" : "has");
            break;
        case LIN_NEITHER:
            fprintf(s->out,
                    "neither asymptotically stable nor unstable: %s %s on "
                    "the imaginary axis, where the linearization does not "
                    "decide\n",
                    b.data, count > 1 ? "are" : "is");
            break;
        }
        strbuf_free(&b);
        stability_warn_state(s, st, &r);
        stability_warn_feeds(s, st, &r);
    }
    free(re);
    free(one);
    stability_free(&r);
    return rc;
}

/* ---- sweep --------------------------------------------------------------- */

/* What a sweep may run, and the function that runs it (§7.2: initial
 * re-solves the state for each value; print, eigen, accel and lyapunov write the
 * rows).  Declarations would change the model at every value, and the
 * statements that print tables, plots or reports of their own have no
 * place in a row. */
static stmt_fn stab_inner(const ctx_t *s, ast_stmt_kind_t kind)
{
    /* steady runs through the table (ctx_t.lookup): its module runs
     * eigen and print inside a follow, so naming it here would make a
     * circle of modules */
    if (kind == STMT_STEADY)
        return s->lookup ? s->lookup(kind) : NULL;
    switch (kind) {
    case STMT_INITIAL: return decl_initial;
    case STMT_RESET: return decl_reset;
    case STMT_SIMULATE: return motion_simulate;
    case STMT_SET: return decl_set;
    case STMT_PRINT: return output_print;
    case STMT_EIGEN: return stability_eigen;
    case STMT_ACCEL: return output_accel;
    case STMT_LYAPUNOV: return stability_lyapunov;
    default: return NULL;
    }
}

static bool stab_writes_row(ast_stmt_kind_t kind)
{
    return kind == STMT_PRINT || kind == STMT_EIGEN || kind == STMT_ACCEL ||
           kind == STMT_LYAPUNOV;
}

/* The statements of sweep ST checked before anything runs. */
static int stab_check_body(const ctx_t *s, const ast_stmt_t *st,
                           diag_t *err)
{
    const char *name = st->u.sweep.axes[0].name.name;
    if (st->u.sweep.n == 0)
        return diag_error(err, st->u.sweep.head,
                          "a sweep needs statements after ':' (initial, "
                          "simulate, print, eigen, accel, ...)");
    bool rows = false;
    for (size_t i = 0; i < st->u.sweep.n; i++) {
        const ast_stmt_t *in = st->u.sweep.body[i];
        if (in->kind == STMT_SWEEP)
            return diag_error(err, in->u.sweep.head,
                              "a sweep inside a sweep is not allowed: run "
                              "the sweeps one after the other");
        if (in->kind == STMT_FOLLOW)
            return diag_error(err, in->u.follow.head,
                              "a follow inside a sweep is not allowed: a "
                              "follow is itself a table over a parameter "
                              "(follow it for each value in turn, or sweep "
                              "steady instead)");
        if (!stab_inner(s, in->kind))
            return diag_error(err, in->span,
                              "%s has no place inside a sweep, which runs "
                              "initial, reset, simulate, set, steady, "
                              "print, eigen, accel and lyapunov",
                              ast_stmt_keyword(in->kind));
        if (in->to_file.name)
            return diag_error(err, in->to_file.span,
                              "inside a sweep the rows go where the sweep "
                              "writes: `sweep ... > \"file.csv\": ...`");
        for (size_t b = 0; in->kind == STMT_SET && b < in->u.bindings.n;
             b++)
            for (size_t x = 0; x < st->u.sweep.naxes; x++) {
                const ast_ident_t *set = &in->u.bindings.items[b].name;
                const char *swept = st->u.sweep.axes[x].name.name;
                if (strcmp(set->name, swept) == 0)
                    return diag_error(err, set->span,
                                      "the sweep sets '%s' itself", swept);
            }
        rows |= stab_writes_row(in->kind);
    }
    if (!rows)
        return diag_error(err, st->u.sweep.head,
                          "the statements write no row: a sweep gives the "
                          "values of print, eigen, accel and lyapunov, one "
                          "row per "
                          "value of %s",
                          name);
    return 0;
}

/* The settings a statement inside may change (`set rtol = ...`). */
typedef struct stab_settings {
    double rtol, atol, step;
    size_t max_steps;
    char integrator[32];
    unsigned threads;
    bool quiet;
} stab_settings_t;

static void stab_save_settings(const ctx_t *s, stab_settings_t *k)
{
    k->rtol = s->rtol;
    k->atol = s->atol;
    k->step = s->step;
    k->max_steps = s->max_steps;
    k->threads = s->threads;
    memcpy(k->integrator, s->integrator, sizeof k->integrator);
    k->quiet = s->quiet;
}

static void stab_restore_settings(ctx_t *s, const stab_settings_t *k)
{
    s->rtol = k->rtol;
    s->atol = k->atol;
    s->step = k->step;
    s->max_steps = k->max_steps;
    memcpy(s->integrator, k->integrator, sizeof k->integrator);
    s->quiet = k->quiet;
}

/* The number of values from A to B by S of range AX, checked (§7.2 and
 * doc/limits.md); 0 with *err set. */
static size_t stab_count(const ast_sweep_axis_t *ax, double a, double b,
                         double h, diag_t *err)
{
    char na[40], nb[40];
    if (h == 0) {
        diag_error(err, ax->step->span, "the step must not be 0");
        return 0;
    }
    if ((b - a) * h < 0) {
        diag_error(err, ax->step->span,
                   "the step goes away from %s: from %s to %s it must be "
                   "%s",
                   stab_num(b, nb, sizeof nb), stab_num(a, na, sizeof na),
                   nb, h > 0 ? "negative" : "positive");
        return 0;
    }
    /* As simulate's step (sim.c): a step below four spacings of the
     * doubles near the range repeats values (1e16 + 1 is 1e16). */
    double top = fmax(fabs(a), fabs(b));
    double res = 4.0 * (nextafter(top, INFINITY) - top);
    if (a != b && fabs(h) < res) {
        char nh[40], nr[40];
        diag_error(err, ax->step->span,
                   "the step %s is finer than the values themselves near "
                   "%s (doubles there are %s apart), so values would "
                   "repeat: use a larger step",
                   stab_num(h, nh, sizeof nh),
                   stab_num(fabs(a) > fabs(b) ? a : b, na, sizeof na),
                   stab_num(res / 4.0, nr, sizeof nr));
        return 0;
    }
    /* a range a whole number of steps long reaches B despite rounding */
    double k = floor((b - a) / h + 1e-9);
    if (!(k + 1 <= SWEEP_MAX_VALUES)) {
        diag_error(err, ax->step->span,
                   "the sweep would take %.0f values; at most %d (take a "
                   "larger step or a shorter range)",
                   k + 1, SWEEP_MAX_VALUES);
        return 0;
    }
    return (size_t)k + 1;
}

/* Value K of the range: A + K·S, and B itself when that is B to
 * rounding (0.1·3 is not 0.3). */
static double stab_value(double a, double b, double h, size_t k)
{
    double v = a + (double)k * h;
    return fabs(v - b) <= 1e-9 * fabs(h) ? b : v;
}

/* A sweep's ranges, evaluated: parameter index, A, B, S and the count of
 * each (a grid has several; LANGUAGE.md §1.2). */
typedef struct stab_range {
    size_t param;
    double a, b, h;
    size_t count;
} stab_range_t;

/* Checks and evaluates the ranges of sweep ST into R (st->u.sweep.naxes
 * entries); the number of grid points into *TOTAL.  Returns 0, or -1
 * with *err set. */
static int stab_ranges(ctx_t *s, lower_t *lw, const ast_stmt_t *st,
                       stab_range_t *r, size_t *total, diag_t *err)
{
    double points = 1;
    for (size_t x = 0; x < st->u.sweep.naxes; x++) {
        const ast_sweep_axis_t *ax = &st->u.sweep.axes[x];
        const ast_ident_t *name = &ax->name;
        model_kind_t kind = model_lookup(&s->model, name->name, &r[x].param,
                                         NULL);
        if (kind != MODEL_PARAM) {
            const char *best = lower_suggest(lw, name->name);
            if (kind == MODEL_NONE && best)
                return diag_error(err, name->span,
                                  "unknown name '%s'; did you mean '%s'?",
                                  name->name, best);
            if (kind == MODEL_NONE)
                return diag_error(err, name->span,
                                  "unknown name '%s': a sweep runs over a "
                                  "parameter",
                                  name->name);
            return diag_error(err, name->span,
                              "a sweep runs over a parameter; '%s' is %s",
                              name->name, model_kind_name(kind));
        }
        for (size_t y = 0; y < x; y++)
            if (r[y].param == r[x].param)
                return diag_error(err, name->span,
                                  "'%s' has a range already in this sweep",
                                  name->name);
        if (ctx_eval_const(s, lw, &s->model, ax->from, &r[x].a, err) ||
            ctx_eval_const(s, lw, &s->model, ax->to, &r[x].b, err) ||
            ctx_eval_const(s, lw, &s->model, ax->step, &r[x].h, err))
            return -1;
        r[x].count = stab_count(ax, r[x].a, r[x].b, r[x].h, err);
        if (r[x].count == 0)
            return -1;
        points *= (double)r[x].count;
    }
    if (!(points <= SWEEP_MAX_VALUES))
        return diag_error(err, st->u.sweep.head,
                          "the grid would take %.0f points; at most %d (take "
                          "larger steps or shorter ranges)",
                          points, SWEEP_MAX_VALUES);
    *total = (size_t)points;
    return 0;
}

/* The values of grid point K (row-major: the last range varies fastest)
 * into V. */
static void stab_point(const stab_range_t *r, size_t naxes, size_t k,
                       double *v)
{
    for (size_t x = naxes; x-- > 0;) {
        v[x] = stab_value(r[x].a, r[x].b, r[x].h, k % r[x].count);
        k /= r[x].count;
    }
}

/* "a = 1, b = 2": where a grid point failed. */
static void stab_point_text(const ast_stmt_t *st, const double *v, char *buf,
                            size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t x = 0; x < st->u.sweep.naxes && len < size; x++) {
        char num[40];
        len += (size_t)snprintf(buf + len, size - len, "%s%s = %s",
                                x ? ", " : "", st->u.sweep.axes[x].name.name,
                                stab_num(v[x], num, sizeof num));
    }
}

/* One sweep as it runs: what each point starts from and how the points
 * are shared out. */
typedef struct stab_sweep {
    ctx_t *s;
    const ast_stmt_t *st;
    const stab_range_t *range;
    size_t naxes;
    const model_t *start;             /* the model the sweep found */
    const stab_settings_t *settings; /* the settings it found */
    ctx_rows_t *rows;                 /* the rows so far */
    unsigned shard_k, shard_n;        /* --shard K/N; shard_n 0: none */
} stab_sweep_t;

/* The grid point of the LOCAL-th row this run computes: every point, or
 * under --shard K/N those whose index i has i mod N = K - 1 (§1.2). */
static size_t stab_global(const stab_sweep_t *w, size_t local)
{
    return w->shard_n ? (size_t)(w->shard_k - 1) + local * w->shard_n : local;
}

/* Runs the statements at row LOCAL, adding one row to w->rows: from the
 * state, parameters, settings and (no) samples the sweep started with,
 * so that a point's row depends on its values alone and points can run
 * in any order, on any worker, with the same bytes (doc/language.md).
 * Returns 0, or -1 with *err set to "at NAME = VALUE: …". */
static int stab_run_point(stab_sweep_t *w, size_t local, diag_t *err)
{
    ctx_t *s = w->s;
    const ast_stmt_t *st = w->st;
    size_t k = stab_global(w, local);
    double v[SWEEP_MAX_AXES];
    stab_point(w->range, w->naxes, k, v);
    model_free(&s->model);
    model_clone(&s->model, w->start);
    sim_samples_free(&s->samples);
    stab_restore_settings(s, w->settings);
    s->quiet = true; /* initial's and simulate's summaries */
    int rc = 0;
    if (nh_stop_due(&s->stop))
        rc = diag_error(err, st->u.sweep.head, "%s",
                        nh_stop_reason(&s->stop));
    for (size_t x = 0; x < w->naxes && rc == 0; x++)
        model_set_param_value(&s->model, w->range[x].param, v[x]);
    s->row = w->rows;
    if (rc == 0 && w->shard_n)
        rc = ctx_row_add(s, "index", false, (double)k, st->u.sweep.head,
                         err);
    for (size_t x = 0; x < w->naxes && rc == 0; x++)
        rc = ctx_row_add(s, st->u.sweep.axes[x].name.name, false, v[x],
                         st->u.sweep.head, err);
    for (size_t i = 0; i < st->u.sweep.n && rc == 0; i++) {
        const ast_stmt_t *in = st->u.sweep.body[i];
        ctx_drops_refresh(s, NULL); /* as before a statement */
        rc = stab_inner(s, in->kind)(s, in, err);
    }
    if (rc == 0 && !ctx_row_end(w->rows))
        rc = diag_error(err, st->u.sweep.head,
                        "the statements gave fewer values than at the "
                        "sweep's first value (%zu columns)",
                        w->rows->ncols);
    s->row = NULL;
    if (rc != 0) {
        w->rows->col = 0;
        if (err->set) {
            /* §7.2: the value and the error, at the statement that
             * failed */
            char msg[DIAG_MSG_MAX], where[256];
            snprintf(msg, sizeof msg, "%s", err->msg);
            stab_point_text(st, v, where, sizeof where);
            src_span_t at =
                err->span.file == SRC_NO_FILE ? st->span : err->span;
            diag_clear(err);
            diag_error(err, at, "at %s: %s", where, msg);
        }
    }
    return rc;
}

/* A worker's point (work.h): its row's values as bytes, then the row's
 * text as the table writes it (plot_table_row: formatting the numbers
 * was the largest part of what the parent did alone, doc/scale.md). */
static int stab_work_point(void *arg, size_t local, strbuf_t *out,
                           diag_t *err)
{
    stab_sweep_t *w = arg;
    if (stab_run_point(w, local, err) != 0)
        return -1;
    /* the row goes out, not into this process's table: the caller
     * runs some items itself (work.h), and takes every row in order */
    ctx_rows_t *t = w->rows;
    const double *row = t->data + (t->nrows - 1) * t->ncols;
    strbuf_addn(out, (const char *)row, t->ncols * sizeof *t->data);
    plot_table_row(out, row, t->ncols, 1);
    t->nrows--;
    return 0;
}

/* Appends the workers' rows to ROWS in order, up to the first that
 * failed (whose error goes into *err).  Returns 0 or -1. */
static int stab_take_rows(ctx_rows_t *rows, const work_result_t *res,
                          size_t first, diag_t *err)
{
    for (size_t k = first; k < res->first_fail; k++) {
        const strbuf_t *b = &res->out[k];
        size_t nb = rows->ncols * sizeof *rows->data;
        if (b->len <= nb || b->data[b->len - 1] != '\n') {
            diag_error(err, SRC_SPAN_NONE,
                       "a worker process gave a row of the wrong length");
            return -1;
        }
        rows->col = 0;
        for (size_t c = 0; c < rows->ncols; c++) {
            double x;
            memcpy(&x, b->data + c * sizeof x, sizeof x);
            if (rows->col == rows->curcap) {
                rows->curcap = rows->curcap ? 2 * rows->curcap : 16;
                rows->cur = xrealloc(rows->cur,
                                     rows->curcap * sizeof *rows->cur);
            }
            rows->cur[rows->col++] = x;
        }
        ctx_row_end(rows);
        char *line = xmalloc(b->len - nb + 1);
        memcpy(line, b->data + nb, b->len - nb);
        line[b->len - nb] = '\0';
        ctx_row_set_line(rows, line);
    }
    if (res->first_fail < res->n) {
        *err = res->fail;
        return -1;
    }
    return 0;
}

int stability_sweep(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    lower_t *lw = ctx_lowered(s, err);
    if (!lw)
        return -1;
    size_t naxes = st->u.sweep.naxes, count = 0;
    if (naxes > SWEEP_MAX_AXES)
        return diag_error(err, st->u.sweep.axes[SWEEP_MAX_AXES].span,
                          "a grid has at most %d ranges", SWEEP_MAX_AXES);
    stab_range_t range[SWEEP_MAX_AXES];
    if (stab_ranges(s, lw, st, range, &count, err) != 0 ||
        stab_check_body(s, st, err) != 0)
        return -1;
    outfile_t of = {0};
    char *path = NULL;
    if (st->to_file.name) {
        path = ctx_shard_path(s, st->to_file.name);
        if (ctx_open_output(s, &of, path, false, st->to_file.span, err) !=
            0) {
            free(path);
            return -1;
        }
    }

    /* What the statements may change, kept to be put back. */
    model_t saved;
    model_clone(&saved, &s->model);
    sim_samples_t samples = s->samples;
    unsigned long samples_generation = s->samples_generation;
    int samples_method = s->samples_method;
    memset(&s->samples, 0, sizeof s->samples);
    stab_settings_t settings;
    stab_save_settings(s, &settings);

    ctx_rows_t rows = {0};
    stab_sweep_t w = {s, st, range, naxes, &saved, &settings, &rows,
                      s->shard_k, s->shard_n};
    size_t local_n = count;
    if (s->shard_n)
        local_n = count > s->shard_k - 1
                      ? (count - s->shard_k) / s->shard_n + 1
                      : 0;
    /* The first row runs here, with the statements' warnings (a
     * restricted eigen's, set's) and the columns it fixes; the others
     * muted, on the workers when there are several (§1.2). */
    FILE *err_stream = s->err, *mute = NULL;
    int rc = local_n > 0 ? stab_run_point(&w, 0, err) : 0;
    if (rc == 0 && local_n > 1) {
        if ((mute = fopen("/dev/null", "w")))
            s->err = mute;
        if (s->threads > 1) {
            work_result_t res;
            rc = work_run(1, local_n, s->threads, true, stab_work_point, &w,
                          &s->stop, &res, err);
            if (rc == 0) {
                rc = stab_take_rows(&rows, &res, 1, err);
                work_result_free(&res);
            }
            if (rc != 0 && err->span.file == SRC_NO_FILE)
                err->span = st->u.sweep.head;
        } else {
            for (size_t k = 1; k < local_n && rc == 0; k++)
                rc = stab_run_point(&w, k, err);
        }
    }
    s->err = err_stream;
    if (mute)
        fclose(mute);

    /* Everything back as it was; the rows before a failure stay. */
    model_free(&s->model);
    s->model = saved;
    sim_samples_free(&s->samples);
    s->samples = samples;
    s->samples_generation = samples_generation;
    s->samples_method = samples_method;
    stab_restore_settings(s, &settings);
    ctx_rows_free(&s->sweep);
    s->sweep = rows;

    /* Under --shard a table is written with its header even when the
     * shard has no point of it, so that --merge finds every shard. */
    if (rows.nrows > 0 || (s->shard_n && rc == 0))
        ctx_write_table(s, &rows, count, st->to_file.name ? of.f : s->out);
    ctx_rows_free_lines(&s->sweep); /* written: the numbers stay */
    if (st->to_file.name) {
        if (rows.nrows == 0 && !(s->shard_n && rc == 0)) {
            outfile_abort(&of);
        } else {
            int e = outfile_commit(&of);
            if (e && rc == 0)
                rc = diag_error(err, st->to_file.span,
                                "cannot write '%s': %s", path,
                                outfile_strerror(e));
        }
    }
    free(path);
    return rc;
}

/* Reorders, row by row, the M eigenvalues in the columns RE[j], IM[j]
 * (NROWS rows) so that each column follows one eigenvalue continuously:
 * the CSV's order (by real part) swaps two eigenvalues where their real
 * parts cross, which drawn as lines would join unrelated points.  Each
 * column's next value is predicted linearly from its last two, and the
 * closest pair of (prediction, value) is matched first, greedily. */
static void stab_follow(double **re, double **im, size_t m, size_t nrows)
{
    double *yr = xcalloc(2 * m + 1, sizeof *yr), *yi = yr + m;
    bool *used = xcalloc(2 * m + 1, sizeof *used), *done = used + m;
    for (size_t k = 1; k < nrows; k++) {
        for (size_t i = 0; i < m; i++) {
            yr[i] = re[i][k];
            yi[i] = im[i][k];
            used[i] = done[i] = false;
        }
        for (size_t step = 0; step < m; step++) {
            double best = INFINITY;
            size_t bj = 0, bi = 0;
            for (size_t j = 0; j < m; j++) {
                if (done[j])
                    continue;
                double pr = re[j][k - 1], pi = im[j][k - 1];
                if (k >= 2) {
                    pr += re[j][k - 1] - re[j][k - 2];
                    pi += im[j][k - 1] - im[j][k - 2];
                }
                for (size_t i = 0; i < m; i++) {
                    double d = hypot(yr[i] - pr, yi[i] - pi);
                    if (!used[i] && !(d >= best)) {
                        best = d;
                        bj = j;
                        bi = i;
                    }
                }
            }
            done[bj] = used[bi] = true;
            re[bj][k] = yr[bi];
            im[bj][k] = yi[bi];
        }
    }
    free(yr);
    free(used);
}

int stability_plot_sweep(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    const ctx_rows_t *t = &s->sweep;
    if (t->nrows == 0)
        return diag_error(err, st->span,
                          "no sweep to plot: run `sweep NAME from A to B "
                          "step S: ...` first");
    double **col = xcalloc(t->ncols + 1, sizeof *col);
    for (size_t c = 0; c < t->ncols; c++) {
        col[c] = xcalloc(t->nrows + 1, sizeof *col[c]);
        for (size_t k = 0; k < t->nrows; k++)
            col[c][k] = t->data[k * t->ncols + c];
    }
    /* Each eigen's columns re(eig1), im(eig1), ... re(eigM), im(eigM):
     * its eigenvalues followed continuously. */
    for (size_t c = 0; c + 1 < t->ncols;) {
        size_t m = 0;
        while (c + 2 * m + 1 < t->ncols && t->dashed[c + 2 * m + 1] &&
               strncmp(t->titles[c + 2 * m], "re(eig", 6) == 0 &&
               (m == 0 || strcmp(t->titles[c + 2 * m], "re(eig1)") != 0))
            m++;
        if (m == 0) {
            c++;
            continue;
        }
        double **re = xcalloc(2 * m, sizeof *re), **im = re + m;
        for (size_t j = 0; j < m; j++) {
            re[j] = col[c + 2 * j];
            im[j] = col[c + 2 * j + 1];
        }
        stab_follow(re, im, m, t->nrows);
        free(re);
        c += 2 * m;
    }
    plot_columns_t pc = {t->ncols, t->nrows, (const char *const *)t->titles,
                         (const double *const *)col, t->dashed, false};
    const char *file = st->to_file.name;
    int rc;
    if (!file && s->svg_plots) {
        s->out_kind = CTX_OUT_SVG;
        free(s->plot_png);
        free(s->plot_pdf);
        rc = plot_draw_svg(&pc, s->out, &s->plot_png, &s->plot_pdf, err);
    } else if (file && ctx_check_output(s, file, st->to_file.span, err)) {
        rc = -1;
    } else {
        rc = plot_draw(&pc, file, s->out, err);
    }
    for (size_t c = 0; c < t->ncols; c++)
        free(col[c]);
    free(col);
    if (rc != 0 && err->set && err->span.file == SRC_NO_FILE)
        err->span = file ? st->to_file.span : st->span;
    return rc;
}

/* ---- lyapunov (LANGUAGE.md §7.4) ------------------------------------------ */

/* The sum of the exponents and the time average of tr A agree to the
 * integration's accuracy: a difference above this times rtol (and above
 * 1e-11), relative to max(1, the largest |exponent|), is warned about
 * (the examples agree to 1e-13..3e-11 at rtol 1e-10:
 * tests/lyapunov_examples.sh). */
#define STAB_SUM_RTOL 10.0

int stability_lyapunov(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    lower_t *lw = ctx_lowered(s, err);
    if (!lw)
        return -1;
    const nh_system_t *sys = lower_system(lw);
    if (sys->n == 0)
        return diag_error(err, st->span,
                          "the model has no coordinates: there is nothing "
                          "to integrate");
    double T, S, t0 = s->model.t;
    char num[40], n2[40];
    if (ctx_eval_const(s, lw, &s->model, st->u.lyapunov.to, &T, err) != 0)
        return -1;
    if (!isfinite(T))
        return diag_error(err, st->u.lyapunov.to->span,
                          "the final time must be finite");
    if (T == t0)
        return diag_error(err, st->u.lyapunov.to->span,
                          "the motion is already at t = %s: lyapunov to a "
                          "later (or earlier) time",
                          expr_format_number(t0, num, sizeof num));
    if (st->u.lyapunov.step) {
        if (ctx_eval_const(s, lw, &s->model, st->u.lyapunov.step, &S, err))
            return -1;
        if (!(S > 0) || !isfinite(S))
            return diag_error(err, st->u.lyapunov.step->span,
                              "step must be positive");
    } else {
        S = sim_default_step(t0, T);
    }
    if (!lyap_integrator_ok(s->integrator))
        return diag_error(err, st->span,
                          "lyapunov integrates the tangent vectors with an "
                          "explicit method (an implicit one would need "
                          "second derivatives): `set integrator = rk8pd` "
                          "(or rk2, rk4, rkf45, rkck), not %s",
                          s->integrator);
    eom_t *e = ctx_eom(s, st->span, err);
    /* the tangent flow: the derivatives, compiled beside the equations */
    if (!e || ctx_compile(s, e, true, st->span, err) != 0)
        return -1;
    size_t nv = expr_graph_nvars(lower_graph(lw));
    double *vars = xcalloc(nv + 1, sizeof *vars);
    lower_fill_vars(lw, &s->model, vars);
    /* as simulate: a state off the constraints is an error (§6) */
    char names[512];
    double viol = eom_constraint_violation(sys, vars, names, sizeof names);
    if (!(viol <= fmax(EOM_STATE_RTOL, s->model.state_drift))) {
        free(vars);
        return diag_error(err, st->span,
                          "the state violates %s: `reset` or `initial` "
                          "solves it again",
                          names);
    }
    stab_t r;
    if (stability_compute(s, st, st->u.lyapunov.vars, st->u.lyapunov.nvars,
                          false, &r, err) != 0) {
        free(vars);
        return -1;
    }
    if (r.m == 0) {
        stability_free(&r);
        free(vars);
        return diag_error(err, st->span,
                          "no exponents: the constraints leave no "
                          "independent variable");
    }
    lin_t *l = ctx_lin(s, st->span, err);
    lyap_options_t o = {.t_end = T, .step = S, .rtol = s->rtol,
                        .atol = s->atol, .integrator = s->integrator,
                        .keep = st->u.lyapunov.nvars ? r.keep : NULL,
                        .nkeep = r.m,
                        .progress = s->quiet || s->row ? NULL : stderr,
                        .stop = &s->stop, .max_steps = s->max_steps};
    double *ex = xcalloc(r.m + 1, sizeof *ex);
    lyap_summary_t sum;
    int rc = l ? lyap_run(l, e, sys, vars, &o, ex, &sum, err) : -1;
    if (rc != 0) {
        /* a declaration that cannot be evaluated where it failed is to
         * blame (LANGUAGE.md §4); else the statement */
        if (err->set && err->span.file == SRC_NO_FILE)
            err->span = st->span;
        stability_free(&r);
        free(ex);
        free(vars);
        return -1;
    }
    lower_store_state(lw, vars, &s->model);
    s->model.state_drift = eom_constraint_violation(sys, vars, NULL, 0);
    free(vars);
    double big = 0.0;
    for (size_t j = 0; j < r.m; j++)
        big = fmax(big, fabs(ex[j]));
    if (s->row) {
        /* a sweep's columns: lyap1 … lyapM, their sum, the mean
         * divergence (a map of exponents over a grid, on its workers) */
        for (size_t j = 0; j < r.m && rc == 0; j++) {
            char title[48];
            snprintf(title, sizeof title, "lyap%zu", j + 1);
            rc = ctx_row_add(s, title, false, ex[j], st->span, err);
        }
        if (rc == 0)
            rc = ctx_row_add(s, "sum", false, sum.sum, st->span, err);
        if (rc == 0)
            rc = ctx_row_add(s, "divergence", false, sum.divergence,
                             st->span, err);
    }
    for (size_t j = 0; j < r.m && !s->row; j++) {
        fprintf(s->out, "lyap%zu = %s\n", j + 1,
                stab_num(ex[j], num, sizeof num));
    }
    if (!s->row)
        fprintf(s->out, "sum = %s, mean divergence = %s\n",
                stab_num(sum.sum, num, sizeof num),
                stab_num(sum.divergence, n2, sizeof n2));
    if (!s->quiet && !s->row) {
        fprintf(s->out, "to t = %s: %zu steps, %zu orthonormalisations",
                stab_num(T, num, sizeof num), sum.steps,
                sum.orthonormalisations);
        if (sum.charts)
            fprintf(s->out, ", %zu %s of the dependent variables",
                    sum.charts, sum.charts == 1 ? "change" : "changes");
        fputc('\n', s->out);
    }
    double tol = fmax(STAB_SUM_RTOL * s->rtol, 1e-11) * fmax(1.0, big);
    if (rc == 0 && !(fabs(sum.sum - sum.divergence) <= tol))
        stab_warn(s, st,
                  "the sum of the exponents and the mean divergence differ "
                  "by %s, more than the tolerances allow: the integration "
                  "is not accurate enough (a smaller rtol, or a smaller "
                  "step between orthonormalisations)",
                  stab_num(fabs(sum.sum - sum.divergence), num, sizeof num));
    if (rc == 0 && r.nfeeds) {
        expr_graph_t *g = r.sys->g;
        strbuf_t b;
        strbuf_init(&b);
        for (size_t j = 0, k = 0; j < r.nfull; j++)
            if (r.feeds[j])
                strbuf_addf(&b, "%s%s", k++ ? ", " : "",
                            expr_var_name(g, r.all[j]));
        stab_warn(s, st,
                  "%s %s left out but %s the variables kept at the start: "
                  "the exponents of the restriction need not be exponents "
                  "of the motion",
                  b.data, r.nfeeds > 1 ? "are" : "is",
                  r.nfeeds > 1 ? "feed" : "feeds");
        strbuf_free(&b);
    }
    stability_free(&r);
    free(ex);
    return rc;
}
