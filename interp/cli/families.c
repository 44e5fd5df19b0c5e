/*
 * families.c — the statements of steady motions and their families
 * (LANGUAGE.md §7.3): steady, follow and plot follow.
 *
 * steady reads its assignments as `initial` does (`=` a value, `~` an
 * unknown with its guess), hands them to interp/analysis/steady.h, and
 * makes the steady motion found the state and what `reset` returns to.
 * follow solves the steady motion at NAME = A, then walks the family
 * (interp/analysis/follow.h), running its statements at each point into
 * one table as a sweep does, with the `point` column; it puts the
 * parameter, the state, the remembered `initial`, the samples and the
 * settings back as they were, and keeps the table (and the state at each
 * point) for `plot follow`.
 *
 * Must not: change the model, the state or the samples, except steady
 * (the state and the remembered `initial`) and inside a follow (which
 * restores them).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp/analysis/follow.h"
#include "interp/analysis/linearize.h"
#include "interp/analysis/steady.h"
#include "interp/base/outfile.h"
#include "interp/base/util.h"
#include "interp/cli/stmts.h"
#include "interp/cli/work.h"
#include "interp/run/plot.h"

static const char *fam_num(double x, char *buf, size_t size)
{
    return expr_format_number(x == 0 ? 0.0 : x, buf, size);
}

/* Whether graph variable V is a variable of E's state. */
static bool fam_in_state(eom_t *e, uint32_t v)
{
    size_t ns = eom_state_size(e);
    const uint32_t *sv = eom_state_vars(e);
    for (size_t k = 0; k < ns; k++)
        if (sv[k] == v)
            return true;
    return false;
}

/* The speed whose variable the kinematic equation of coordinate I is
 * exactly (`kinematic thR' = u3`), or -1. */
static long fam_speed_of(const nh_system_t *sys, size_t i)
{
    if (!sys->psi || !sys->psi[i] || sys->psi[i]->op != EXPR_VAR)
        return -1;
    for (size_t a = 0; a < sys->m; a++)
        if (sys->z[a] == sys->psi[i]->var)
            return (long)a;
    return -1;
}

/* The assignments of ST (a steady statement) into VARS and HOW (one per
 * graph variable) and BVAR (the graph variable of each); VARS holds the
 * parameters, t = 0 and 0 for every coordinate, velocity and speed
 * first.  NODES (may be NULL; nvars entries) gets each given value as a
 * node, for a follow over a parameter.  Returns 0, or -1 with *err set
 * at the assignment at fault. */
static int fam_bindings(ctx_t *s, lower_t *lw, eom_t *e,
                        const ast_stmt_t *st, double *vars,
                        unsigned char *how, uint32_t *bvar,
                        const expr_t **nodes, diag_t *err)
{
    const nh_system_t *sys = lower_system(lw);
    expr_graph_t *g = lower_graph(lw);
    size_t n = sys->n, nz = sys->m, nv = expr_graph_nvars(g);
    model_t *m = &s->model;
    lower_fill_vars(lw, m, vars);
    memset(how, 0, nv);
    for (size_t i = 0; i < n; i++)
        vars[sys->q[i]] = vars[sys->qd[i]] = 0.0;
    for (size_t a = 0; a < nz; a++)
        vars[sys->z[a]] = 0.0;
    vars[sys->t] = 0.0;
    bool speeds_state = eom_method(e) == EOM_MAGGI ||
                        eom_method(e) == EOM_GIBBS_APPELL;
    for (size_t k = 0; k < st->u.bindings.n; k++) {
        const ast_binding_t *b = &st->u.bindings.items[k];
        const char *name = b->name.name;
        long qi = model_coord_index(m, name), zi = model_speed_index(m, name);
        long v = -1;
        bool is_t = false;
        if (qi >= 0 && b->primes <= 1) {
            v = b->primes ? sys->qd[qi] : sys->q[qi];
        } else if (zi >= 0 && b->primes == 0) {
            v = sys->z[zi];
        } else if (strcmp(name, "t") == 0 && b->primes == 0) {
            v = sys->t;
            is_t = true;
        } else if (qi >= 0 || zi >= 0) {
            return diag_error(err, b->name.span,
                              "steady names positions and velocities; in a "
                              "steady motion the accelerations follow (the "
                              "independent ones are 0)");
        } else {
            model_kind_t kind = model_lookup(m, name, NULL, NULL);
            if (kind == MODEL_PARAM)
                return diag_error(err, b->name.span,
                                  "'%s' is a parameter: change it with `set "
                                  "%s = ...`, or trace the steady motions "
                                  "over it with `follow %s from ... to ...: "
                                  "steady ...`",
                                  name, name, name);
            const char **cands = xcalloc(n + nz + 1, sizeof *cands);
            for (size_t j = 0; j < n + nz; j++)
                cands[j] = j < n ? sys->qname[j] : sys->zname[j - n];
            cands[n + nz] = NULL;
            const char *best = source_closest(name, cands);
            free(cands);
            if (kind == MODEL_NONE && best)
                return diag_error(err, b->name.span,
                                  "unknown name '%s'; did you mean '%s'?",
                                  name, best);
            return diag_error(err, b->name.span,
                              "steady names coordinates, velocities, speeds "
                              "and t; '%s' is %s",
                              name, model_kind_name(kind));
        }
        if (is_t && b->guess)
            return diag_error(err, b->span,
                              "t cannot be an unknown: give it with `=`");
        /* Only the state's variables: under maggi a velocity that is a
         * speed by its kinematic equation names that speed. */
        if (!is_t && !fam_in_state(e, (uint32_t)v)) {
            long za = qi >= 0 && b->primes == 1 && speeds_state
                          ? fam_speed_of(sys, (size_t)qi)
                          : -1;
            if (za >= 0) {
                v = sys->z[za];
            } else if (speeds_state && qi >= 0) {
                strbuf_t z;
                strbuf_init(&z);
                for (size_t a = 0; a < nz; a++)
                    strbuf_addf(&z, "%s%s", a ? ", " : "", sys->zname[a]);
                int rc = diag_error(err, b->name.span,
                                    "under %s the state holds the "
                                    "coordinates and the speeds (%s): name "
                                    "speeds, not %s'",
                                    eom_method_name(eom_method(e)),
                                    z.data ? z.data : "none", name);
                strbuf_free(&z);
                return rc;
            } else if (zi >= 0) {
                return diag_error(err, b->name.span,
                                  "'%s' is a speed, and the %s state holds "
                                  "velocities: name velocities (x'), or "
                                  "choose `equations maggi`",
                                  name, eom_method_name(eom_method(e)));
            } else {
                return diag_error(err, b->name.span,
                                  "%s' is not a variable of the %s state: "
                                  "the equations derive it from the "
                                  "constraints; leave it out",
                                  name, eom_method_name(eom_method(e)));
            }
        }
        double x;
        if (ctx_eval_const(s, lw, m, b->value, &x, err))
            return -1;
        bool twice = how[v] != STEADY_FREE;
        for (size_t j = 0; is_t && j < k; j++)
            twice |= bvar[j] == (uint32_t)v;
        if (twice)
            return diag_error(err, b->span, "'%s%s' is given twice", name,
                              b->primes ? "'" : "");
        vars[v] = x;
        if (!is_t)
            how[v] = b->guess ? STEADY_UNKNOWN : STEADY_GIVEN;
        bvar[k] = (uint32_t)v;
        if (nodes && !b->guess && !is_t) {
            value_t val;
            diag_t tmp = {0};
            if (lower_expr(lw, b->value, LOWER_CONST, &val, &tmp) == 0 &&
                val.dim == 0)
                nodes[v] = val.c[0];
        }
    }
    return 0;
}

/* Rewrites an error of the velocity solvers (span: a constraint's
 * declaration) to point at AT, saying where the constraint is; errors
 * without a place get AT. */
static int fam_at(ctx_t *s, src_span_t at, diag_t *err)
{
    char msg[DIAG_MSG_MAX], place[256];
    snprintf(msg, sizeof msg, "%s", err->msg);
    bool placed = err->span.file != SRC_NO_FILE;
    if (placed)
        ctx_where_text(s, err->span, place, sizeof place);
    diag_clear(err);
    if (placed)
        return diag_error(err, at, "%s (the constraint is declared at %s)",
                          msg, place);
    return diag_error(err, at, "%s", msg);
}

/* The steady motion of statement ST (STEADY: its bindings) from the
 * values and guesses in VARS and HOW (fam_bindings), solved into VARS.
 * The engine SD is made for the current equations.  Errors point at the
 * assignment at fault or at AT. */
static int fam_solve(ctx_t *s, lower_t *lw, steady_t *sd,
                     const ast_stmt_t *st, const uint32_t *bvar,
                     double *vars, const unsigned char *how, src_span_t at,
                     diag_t *err)
{
    steady_fault_t f = steady_begin(sd, vars, how, err);
    if (f == STEADY_CONSTRAINTS)
        return fam_at(s, at, err);
    if (f == STEADY_DEPENDENT) {
        /* the assignment the user most likely meant the constraints to
         * solve: one they determine also when nothing is named */
        const ast_binding_t *blame = NULL;
        for (int pass = 0; pass < 2 && !blame; pass++)
            for (size_t k = 0; k < st->u.bindings.n && !blame; k++) {
                bool natural = false;
                if (steady_named_dependent(sd, bvar[k], &natural) &&
                    (natural || pass == 1))
                    blame = &st->u.bindings.items[k];
            }
        char msg[DIAG_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", err->msg);
        diag_clear(err);
        return diag_error(err, blame ? blame->name.span : at,
                          "'%s%s' is dependent: %s; leave it out (steady "
                          "solves it with the constraints)",
                          blame ? blame->name.name : "?",
                          blame && blame->primes ? "'" : "", msg);
    }
    if (f == STEADY_CYCLIC) {
        const ast_binding_t *blame = NULL;
        for (size_t k = 0; k < st->u.bindings.n && !blame; k++)
            if (st->u.bindings.items[k].guess &&
                steady_is_cyclic(sd, bvar[k]))
                blame = &st->u.bindings.items[k];
        diag_clear(err);
        return diag_error(err, blame ? blame->name.span : at,
                          "'%s' is a cyclic coordinate: the steady equations "
                          "do not depend on it (it moves along the motion), "
                          "so it cannot be an unknown; give it with `=` or "
                          "leave it out",
                          blame ? blame->name.name : "?");
    }
    if (f == STEADY_OK)
        f = steady_solve(sd, vars, err);
    if (f == STEADY_EQUATIONS)
        return ctx_state_error(s, lw, vars, at, err);
    if (f != STEADY_OK) {
        char msg[DIAG_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", err->msg);
        diag_clear(err);
        return diag_error(err, at, "%s", msg);
    }
    return 0;
}

/* Makes VARS (a steady motion of the equations of L) the state and what
 * `reset` returns to: the independent variables given, the dependent
 * ones guessed (so that reset, linearize and eigen choose them again). */
static void fam_store(ctx_t *s, lower_t *lw, lin_t *l, const double *vars)
{
    const nh_system_t *sys = lower_system(lw);
    model_t *m = &s->model;
    size_t n = sys->n;
    const uint32_t *dep;
    size_t nd = lin_dependent(l, &dep);
    lower_store_state(lw, vars, m);
    for (size_t i = 0; i < n && i < m->q0.n; i++) {
        bool dq = false, dv = false;
        for (size_t k = 0; k < nd; k++) {
            dq |= dep[k] == sys->q[i];
            dv |= dep[k] == sys->qd[i];
        }
        m->q0.v[i] = vars[sys->q[i]];
        m->qd0.v[i] = vars[sys->qd[i]];
        m->q0_how.v[i] = dq ? MODEL_INIT_GUESS : MODEL_INIT_GIVEN;
        bool state = false;
        size_t ns = eom_state_size(s->eom);
        const uint32_t *sv = eom_state_vars(s->eom);
        for (size_t k = 0; k < ns; k++)
            state |= sv[k] == sys->qd[i];
        m->qd0_how.v[i] = dv      ? MODEL_INIT_GUESS
                          : state ? MODEL_INIT_GIVEN
                                  : MODEL_INIT_FREE;
    }
    bool speeds = eom_method(s->eom) == EOM_MAGGI ||
                  eom_method(s->eom) == EOM_GIBBS_APPELL;
    for (size_t a = 0; a < sys->m && a < m->z0.n; a++) {
        m->z0.v[a] = vars[sys->z[a]];
        m->z0_how.v[a] = speeds ? MODEL_INIT_GIVEN : MODEL_INIT_FREE;
    }
    m->t0 = vars[sys->t];
    m->state_drift = 0;
    sim_samples_clear(&s->samples);
}

/* The summary of §7.3: the unknowns, the residual, the cyclic
 * coordinates and their rates. */
static void fam_summary(ctx_t *s, expr_graph_t *g, const steady_report_t *r,
                        const double *vars)
{
    char num[40];
    strbuf_t b;
    strbuf_init(&b);
    strbuf_addf(&b, "%s: ", r->equilibrium ? "equilibrium" : "steady motion");
    for (size_t j = 0; j < r->nunknown; j++)
        strbuf_addf(&b, "%s%s = %s", j ? ", " : "",
                    expr_var_name(g, r->unknown[j]),
                    fam_num(vars[r->unknown[j]], num, sizeof num));
    if (!r->nunknown)
        strbuf_addf(&b, "no unknowns");
    strbuf_addf(&b, " (residual %s; %zu steady equation%s of rank %zu)",
                fam_num(r->residual, num, sizeof num), r->nequation,
                r->nequation == 1 ? "" : "s", r->rank);
    size_t nvar = 0, ncon = 0;
    for (size_t c = 0; c < r->ncyclic; c++)
        *(r->constant[c] ? &ncon : &nvar) += 1;
    if (r->ncyclic)
        strbuf_addf(&b, "; cyclic: ");
    else
        strbuf_addf(&b, "; no cyclic coordinates");
    for (size_t c = 0, k = 0; c < r->ncyclic; c++)
        if (r->constant[c])
            strbuf_addf(&b, "%s%s (rate %s)", k++ ? ", " : "",
                        expr_var_name(g, r->cyclic[c]),
                        fam_num(r->rate[c], num, sizeof num));
    for (size_t c = 0, k = 0; c < r->ncyclic; c++)
        if (!r->constant[c])
            strbuf_addf(&b, "%s%s", ncon || k++ ? ", " : "",
                        expr_var_name(g, r->cyclic[c]));
    if (nvar)
        strbuf_addf(&b, " (%s not constant: %s with the others)",
                    nvar > 1 ? "rates" : "rate",
                    nvar > 1 ? "they turn" : "it turns");
    fprintf(s->out, "%s\n", b.data);
    strbuf_free(&b);
}

/* The engine for the current equations: NULL with *err set. */
typedef struct fam_engine {
    lower_t *lw;
    const nh_system_t *sys;
    eom_t *e;
    lin_t *l;
    eom_velsolver_t *vs;
} fam_engine_t;

static int fam_engine(ctx_t *s, src_span_t at, fam_engine_t *x, diag_t *err)
{
    x->lw = ctx_lowered(s, err);
    if (!x->lw)
        return -1;
    x->sys = lower_system(x->lw);
    if (x->sys->n == 0)
        return diag_error(err, at,
                          "the model has no coordinates: there is no motion "
                          "to make steady");
    x->e = ctx_eom(s, at, err);
    if (!x->e)
        return -1;
    x->l = ctx_lin(s, at, err);
    if (!x->l)
        return -1;
    x->vs = ctx_velsolver(s, err);
    return x->vs ? 0 : -1;
}

int family_steady(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    fam_engine_t x;
    if (fam_engine(s, st->span, &x, err) != 0)
        return -1;
    size_t nv = expr_graph_nvars(lower_graph(x.lw));
    double *vars = xcalloc(nv + 1, sizeof *vars);
    unsigned char *how = xcalloc(nv + 1, sizeof *how);
    uint32_t *bvar = xcalloc(st->u.bindings.n + 1, sizeof *bvar);
    steady_t *sd = NULL;
    int rc = fam_bindings(s, x.lw, x.e, st, vars, how, bvar, NULL, err);
    if (rc == 0) {
        sd = steady_new(x.sys, x.e, x.l, x.vs);
        rc = fam_solve(s, x.lw, sd, st, bvar, vars, how, st->span, err);
    }
    if (rc == 0) {
        fam_store(s, x.lw, x.l, vars);
        if (!s->quiet && !s->row)
            fam_summary(s, lower_graph(x.lw), steady_report(sd), vars);
    }
    steady_free(sd);
    free(vars);
    free(how);
    free(bvar);
    return rc;
}

/* ---- follow ---------------------------------------------------------------- */

/* What a follow may run after its steady: the statements that write a
 * row's values (through the table, ctx_t.lookup). */
static bool fam_inner(ast_stmt_kind_t kind)
{
    return kind == STMT_PRINT || kind == STMT_EIGEN || kind == STMT_ACCEL;
}

static int fam_check_body(const ast_stmt_t *st, diag_t *err)
{
    for (size_t i = 1; i < st->u.follow.n; i++) {
        const ast_stmt_t *in = st->u.follow.body[i];
        if (in->kind == STMT_FOLLOW)
            return diag_error(err, in->u.follow.head,
                              "a follow inside a follow is not allowed: run "
                              "them one after the other");
        if (in->kind == STMT_SWEEP)
            return diag_error(err, in->u.sweep.head,
                              "a sweep inside a follow is not allowed");
        if (in->kind == STMT_STEADY)
            return diag_error(err, in->span,
                              "a follow has one steady, its first "
                              "statement: the family's points are its "
                              "solutions");
        if (!fam_inner(in->kind))
            return diag_error(err, in->span,
                              "%s has no place inside a follow, which runs "
                              "print, eigen and accel at each point",
                              ast_stmt_keyword(in->kind));
        if (in->to_file.name)
            return diag_error(err, in->to_file.span,
                              "inside a follow the rows go where the follow "
                              "writes: `follow ... > \"file.csv\": ...`");
    }
    return 0;
}

/* The settings a statement inside may change. */
typedef struct fam_settings {
    double rtol, atol, step;
    size_t max_steps;
    char integrator[32];
    bool quiet;
} fam_settings_t;

/* The marks of the `point` column as text ("fold hopf"), into BUF. */
static void fam_mark_text(unsigned marks, const char *stability, bool hopf,
                          strbuf_t *b)
{
    if (marks & FOLLOW_FOLD)
        strbuf_addf(b, "%sfold", b->len ? " " : "");
    if (marks & FOLLOW_BRANCH)
        strbuf_addf(b, "%sbranch", b->len ? " " : "");
    if (hopf)
        strbuf_addf(b, "%shopf", b->len ? " " : "");
    if (stability)
        strbuf_addf(b, "%s%s", b->len ? " " : "", stability);
}

/* The table as CSV: the rows' columns and the point column. */
static void fam_write(const ctx_family_t *fam, FILE *out)
{
    const ctx_rows_t *t = &fam->rows;
    double **col = xcalloc(t->ncols + 1, sizeof *col);
    for (size_t c = 0; c < t->ncols; c++) {
        col[c] = xcalloc(t->nrows + 1, sizeof *col[c]);
        for (size_t k = 0; k < t->nrows; k++)
            col[c][k] = t->data[k * t->ncols + c];
    }
    /* plot_table writes the numbers; the point column is appended to
     * each line it wrote, so both go through one buffer */
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem)
        nh_out_of_memory();
    plot_columns_t pc = {t->ncols, t->nrows, (const char *const *)t->titles,
                         (const double *const *)col, NULL, false};
    plot_table(&pc, mem);
    fclose(mem);
    const char *p = buf;
    for (size_t line = 0; p && *p; line++) {
        const char *nl = strchr(p, '\n');
        size_t l = nl ? (size_t)(nl - p) : strlen(p);
        fwrite(p, 1, l, out);
        if (line == 0)
            fputs(",point\n", out);
        else
            fprintf(out, ",%s\n",
                    line - 1 < t->nrows ? fam->marks[line - 1] : "");
        p = nl ? nl + 1 : NULL;
    }
    free(buf);
    for (size_t c = 0; c < t->ncols; c++)
        free(col[c]);
    free(col);
}

/* A point of a traced family, and what the first eigen at it found. */
typedef struct fam_point {
    double lambda;
    unsigned marks; /* follow's FOLLOW_* marks */
    bool eig_set;
    size_t unstable, unstable_pairs;
} fam_point_t;

/* What the statements at each point need. */
typedef struct fam_run {
    ctx_t *s;
    lower_t *lw;
    const ast_stmt_t *st;
    expr_graph_t *g;
    const uint32_t *unk;
    size_t k;
    size_t pi;
    bool param;
    fam_point_t *pts;
    const double *states; /* nv per point */
    size_t nv;
    ctx_rows_t *rows;
} fam_run_t;

/* Runs the statements at point P on its state, adding its row to
 * r->rows and what eigen found to r->pts[P].  0, or -1 with *err set
 * ("at NAME = VALUE: …" is added by the caller). */
static int fam_run_point(fam_run_t *r, size_t p, diag_t *err)
{
    ctx_t *s = r->s;
    const ast_stmt_t *st = r->st;
    const double *vars = r->states + p * r->nv;
    double lam = r->pts[p].lambda;
    lower_store_state(r->lw, vars, &s->model);
    if (r->param)
        model_set_param_value(&s->model, r->pi, lam);
    s->eig_seen.set = false;
    s->row = r->rows;
    int rc = ctx_row_add(s, st->u.follow.name.name, false, lam,
                         st->u.follow.head, err);
    for (size_t j = 0; j < r->k && rc == 0; j++)
        rc = ctx_row_add(s, expr_var_name(r->g, r->unk[j]), false,
                         vars[r->unk[j]], st->u.follow.head, err);
    for (size_t i = 1; i < st->u.follow.n && rc == 0; i++) {
        const ast_stmt_t *in = st->u.follow.body[i];
        rc = s->lookup(in->kind)(s, in, err);
    }
    if (rc == 0 && !ctx_row_end(r->rows))
        rc = diag_error(err, st->u.follow.head,
                        "the statements gave fewer values than at the "
                        "family's first point (%zu columns)",
                        r->rows->ncols);
    s->row = NULL;
    if (rc != 0) {
        r->rows->col = 0;
        return -1;
    }
    r->pts[p].eig_set = s->eig_seen.set;
    r->pts[p].unstable = s->eig_seen.unstable;
    r->pts[p].unstable_pairs = s->eig_seen.unstable_pairs;
    return 0;
}

/* A worker's point (work.h): the row's values, then what eigen found. */
static int fam_work_point(void *arg, size_t p, strbuf_t *out, diag_t *err)
{
    fam_run_t *r = arg;
    if (fam_run_point(r, p, err) != 0) {
        char msg[DIAG_MSG_MAX], num[40];
        snprintf(msg, sizeof msg, "%s", err->msg);
        src_span_t at =
            err->span.file == SRC_NO_FILE ? r->st->span : err->span;
        diag_clear(err);
        diag_error(err, at, "at %s = %s: %s", r->st->u.follow.name.name,
                   fam_num(r->pts[p].lambda, num, sizeof num), msg);
        return -1;
    }
    /* the row goes out, not into this process's table: the caller
     * runs some items itself (work.h), and takes every row in order */
    ctx_rows_t *t = r->rows;
    strbuf_addn(out, (const char *)(t->data + (t->nrows - 1) * t->ncols),
                t->ncols * sizeof *t->data);
    t->nrows--;
    double eig[3] = {r->pts[p].eig_set, (double)r->pts[p].unstable,
                     (double)r->pts[p].unstable_pairs};
    strbuf_addn(out, (const char *)eig, sizeof eig);
    return 0;
}

/* The workers' rows appended in order up to the first that failed; the
 * number of points with rows. */
static size_t fam_take_rows(fam_run_t *r, const work_result_t *res)
{
    ctx_rows_t *rows = r->rows;
    size_t p = 1;
    for (; p < res->first_fail; p++) {
        const strbuf_t *b = &res->out[p];
        size_t want = rows->ncols * sizeof(double) + 3 * sizeof(double);
        if (b->len != want)
            break; /* cannot be: the same code fixed the columns */
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
        double eig[3];
        memcpy(eig, b->data + rows->ncols * sizeof(double), sizeof eig);
        r->pts[p].eig_set = eig[0] != 0;
        r->pts[p].unstable = (size_t)eig[1];
        r->pts[p].unstable_pairs = (size_t)eig[2];
    }
    return p;
}

int family_follow(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    const ast_ident_t *name = &st->u.follow.name;
    const ast_stmt_t *sst = st->u.follow.body[0];
    fam_engine_t x;
    if (fam_engine(s, st->u.follow.head, &x, err) != 0)
        return -1;
    expr_graph_t *g = lower_graph(x.lw);
    const nh_system_t *sys = x.sys;
    size_t nv = expr_graph_nvars(g);

    /* NAME: a parameter, or a coordinate or speed the follow gives */
    size_t pi = 0;
    model_kind_t kind = model_lookup(&s->model, name->name, &pi, NULL);
    long lvar = -1;
    bool param = kind == MODEL_PARAM;
    if (param) {
        for (size_t j = 0; j < sys->np && lvar < 0; j++)
            if (strcmp(sys->pname[j], name->name) == 0)
                lvar = sys->p[j];
    } else if (kind == MODEL_COORD || kind == MODEL_SPEED) {
        long qi = model_coord_index(&s->model, name->name);
        long zi = model_speed_index(&s->model, name->name);
        lvar = qi >= 0 ? (long)sys->q[qi] : (long)sys->z[zi];
        if (!fam_in_state(x.e, (uint32_t)lvar))
            return diag_error(err, name->span,
                              "'%s' is not a variable of the %s state, so "
                              "the steady cannot give it; a follow runs "
                              "over a parameter or a coordinate",
                              name->name, eom_method_name(eom_method(x.e)));
    }
    if (lvar < 0) {
        const char *best = lower_suggest(x.lw, name->name);
        if (kind == MODEL_NONE && best)
            return diag_error(err, name->span,
                              "unknown name '%s'; did you mean '%s'?",
                              name->name, best);
        return diag_error(err, name->span,
                          "a follow runs over a parameter or a coordinate "
                          "the steady gives; '%s' is %s",
                          name->name,
                          kind == MODEL_NONE ? "not declared"
                                             : model_kind_name(kind));
    }
    for (size_t k = 0; k < sst->u.bindings.n; k++) {
        const ast_binding_t *b = &sst->u.bindings.items[k];
        if (!param && b->primes == 0 &&
            strcmp(b->name.name, name->name) == 0 && b->guess)
            return diag_error(err, b->span,
                              "'%s' is the family's parameter: the follow "
                              "gives it its values, so it cannot be an "
                              "unknown of the steady",
                              name->name);
    }
    double a, bnd, h = 0;
    if (ctx_eval_const(s, x.lw, &s->model, st->u.follow.from, &a, err) ||
        ctx_eval_const(s, x.lw, &s->model, st->u.follow.to, &bnd, err))
        return -1;
    if (st->u.follow.step) {
        char na[40], nb[40];
        if (ctx_eval_const(s, x.lw, &s->model, st->u.follow.step, &h, err))
            return -1;
        if (h == 0)
            return diag_error(err, st->u.follow.step->span,
                              "the step must not be 0");
        if ((bnd - a) * h < 0)
            return diag_error(err, st->u.follow.step->span,
                              "the step goes away from %s: from %s to %s it "
                              "must be %s",
                              fam_num(bnd, nb, sizeof nb),
                              fam_num(a, na, sizeof na), nb,
                              h > 0 ? "negative" : "positive");
        h = fabs(h);
    } else {
        h = a == bnd ? 1.0 : fabs(bnd - a) / 100.0;
    }
    if (fam_check_body(st, err) != 0)
        return -1;
    outfile_t of = {0};
    if (st->to_file.name &&
        ctx_open_output(s, &of, st->to_file.name, false, st->to_file.span,
                        err) != 0)
        return -1;

    /* What the statements may change, kept to be put back. */
    model_t saved;
    model_clone(&saved, &s->model);
    sim_samples_t samples = s->samples;
    unsigned long samples_generation = s->samples_generation;
    int samples_method = s->samples_method;
    memset(&s->samples, 0, sizeof s->samples);
    fam_settings_t set = {s->rtol, s->atol, s->step, s->max_steps, {0},
                          s->quiet};
    memcpy(set.integrator, s->integrator, sizeof set.integrator);
    s->quiet = true;

    ctx_family_t fam = {0};
    fam.width = nv;
    fam.generation = s->model.generation;
    fam.name = xstrdup(name->name);
    size_t capm = 0;
    double *vars = xcalloc(nv + 1, sizeof *vars);
    unsigned char *how = xcalloc(nv + 1, sizeof *how);
    uint32_t *bvar = xcalloc(sst->u.bindings.n + 1, sizeof *bvar);
    const expr_t **nodes = xcalloc(nv + 1, sizeof *nodes);
    steady_t *sd = NULL;
    follow_t *fo = NULL;
    FILE *err_stream = s->err, *mute = NULL;
    int rc = 0;
    double lam = a;
    follow_point_t pt = {a, 0, FOLLOW_GOING};
    bool have_prev = false;
    int prev_unstable = 0;
    size_t prev_pairs = 0;

    /* The first point: the steady motion at NAME = A. */
    if (param)
        model_set_param_value(&s->model, pi, a);
    rc = fam_bindings(s, x.lw, x.e, sst, vars, how, bvar,
                      param ? nodes : NULL, err);
    if (rc == 0 && !param) {
        vars[lvar] = a;
        how[lvar] = STEADY_GIVEN;
    }
    if (rc == 0) {
        sd = steady_new(sys, x.e, x.l, x.vs);
        rc = fam_solve(s, x.lw, sd, sst, bvar, vars, how, sst->span, err);
    }
    if (rc == 0) {
        follow_spec_t spec = {(uint32_t)lvar, param, a, bnd, h,
                              param ? nodes : NULL, &s->stop};
        fo = follow_new(sys, sd, &spec);
        if (follow_first(fo, vars, &pt, err) != 0)
            rc = diag_error(err, st->u.follow.head, "%s", err->msg);
        fam_store(s, x.lw, x.l, vars);
    }
    const uint32_t *unk = NULL;
    size_t k = sd ? steady_unknowns(sd, &unk) : 0;

    /* The family first: the continuation is sequential, and the
     * statements at a point (print, eigen, accel) read its state alone,
     * so they run afterwards, on worker processes when there are several
     * (LANGUAGE.md §1.2), with the rows in the family's order. */
    fam_point_t *pts = NULL;
    size_t npts = 0, cappts = 0;
    int cont_rc = rc;
    diag_t cont_err = {0};
    if (rc != 0)
        cont_err = *err;
    while (cont_rc == 0) {
        xgrow(&pts, &cappts, npts + 1, sizeof *pts);
        pts[npts].lambda = pt.lambda;
        pts[npts].marks = pt.marks;
        if (npts + 1 > capm) {
            capm = 2 * (npts + 1) + 16;
            fam.states = xrealloc(fam.states, capm * nv * sizeof *fam.states);
        }
        memcpy(fam.states + npts * nv, vars, nv * sizeof *vars);
        npts++;
        if (pt.end != FOLLOW_GOING)
            break;
        int more = follow_next(fo, vars, &pt, &cont_err);
        if (more < 0) {
            cont_rc = -1;
            char msg[DIAG_MSG_MAX];
            snprintf(msg, sizeof msg, "%s", cont_err.msg);
            diag_clear(&cont_err);
            diag_error(&cont_err, st->u.follow.head, "%s", msg);
        }
        if (more <= 0)
            break;
    }

    fam_run_t run = {s,   x.lw,       st, g,  unk, k,
                     pi,  param,      pts, fam.states, nv, &fam.rows};
    size_t done = 0; /* points with their rows */
    int stmt_rc = 0;
    bool prefixed = false; /* the workers' errors say their point */
    rc = 0;
    if (npts > 0) {
        stmt_rc = fam_run_point(&run, 0, err);
        if (stmt_rc == 0)
            done = 1;
    }
    if (stmt_rc == 0 && npts > 1) {
        if ((mute = fopen("/dev/null", "w")))
            s->err = mute;
        if (s->threads > 1) {
            work_result_t res;
            stmt_rc = work_run(1, npts, s->threads, true, fam_work_point,
                               &run, &s->stop, &res, err);
            if (stmt_rc == 0) {
                done = fam_take_rows(&run, &res);
                if (res.first_fail < npts) {
                    *err = res.fail;
                    if (err->span.file == SRC_NO_FILE)
                        err->span = st->u.follow.head;
                    stmt_rc = -1;
                    prefixed = true;
                }
                work_result_free(&res);
            }
        } else {
            for (size_t p = 1; p < npts && stmt_rc == 0; p++) {
                stmt_rc = fam_run_point(&run, p, err);
                if (stmt_rc == 0)
                    done = p + 1;
            }
        }
    }
    if (stmt_rc != 0) { /* the first failure in the family's order */
        rc = -1;
        lam = pts[done < npts ? done : npts - 1].lambda;
    } else if (cont_rc != 0) {
        rc = -1;
        *err = cont_err;
        lam = npts ? pts[npts - 1].lambda : a;
    }

    /* the point column: the continuation's marks, and what eigen found
     * from one point to the next */
    fam.marks = xcalloc(done + 1, sizeof *fam.marks);
    for (size_t p = 0; p < done; p++) {
        const char *stab = NULL;
        bool hopf = false;
        if (pts[p].eig_set) {
            int unstable = pts[p].unstable > 0;
            if (have_prev && unstable != prev_unstable)
                stab = unstable ? "unstable" : "stable";
            hopf = have_prev && pts[p].unstable_pairs != prev_pairs;
            prev_unstable = unstable;
            prev_pairs = pts[p].unstable_pairs;
            have_prev = true;
        }
        strbuf_t mk;
        strbuf_init(&mk);
        fam_mark_text(pts[p].marks, stab, hopf, &mk);
        fam.marks[p] = mk.data ? strbuf_take(&mk) : xstrdup("");
        strbuf_free(&mk);
    }
    free(pts);
    s->err = err_stream;
    if (mute)
        fclose(mute);
    if (rc != 0 && err->set && !prefixed) {
        /* the value and the error, at the statement that failed */
        char msg[DIAG_MSG_MAX], num[40];
        snprintf(msg, sizeof msg, "%s", err->msg);
        src_span_t at = err->span.file == SRC_NO_FILE ? st->span : err->span;
        diag_clear(err);
        diag_error(err, at, "at %s = %s: %s", name->name,
                   fam_num(lam, num, sizeof num), msg);
    }

    /* Everything back as it was; the rows before a failure stay. */
    model_free(&s->model);
    s->model = saved;
    sim_samples_free(&s->samples);
    s->samples = samples;
    s->samples_generation = samples_generation;
    s->samples_method = samples_method;
    s->rtol = set.rtol;
    s->atol = set.atol;
    s->step = set.step;
    s->max_steps = set.max_steps;
    memcpy(s->integrator, set.integrator, sizeof set.integrator);
    s->quiet = set.quiet;
    /* marks of a row dropped by a failure are not kept */
    ctx_family_free(&s->family);
    s->family = fam;
    if (fam.rows.nrows > 0)
        fam_write(&s->family, st->to_file.name ? of.f : s->out);
    if (st->to_file.name) {
        if (fam.rows.nrows == 0) {
            outfile_abort(&of);
        } else {
            int e = outfile_commit(&of);
            if (e && rc == 0)
                rc = diag_error(err, st->to_file.span,
                                "cannot write '%s': %s", st->to_file.name,
                                outfile_strerror(e));
        }
    }
    if (rc == 0 && !set.quiet && pt.end != FOLLOW_LEFT) {
        diag_t note = {0};
        diag_error(&note, st->u.follow.head,
                   pt.end == FOLLOW_CLOSED
                       ? "the family closed on itself after %zu points"
                       : "the family was cut after %zu points (the limit)",
                   fam.rows.nrows);
        fflush(s->out);
        diag_print_note(s->err, s->src, &note);
    }
    follow_free(fo);
    steady_free(sd);
    free(vars);
    free(how);
    free(bvar);
    free(nodes);
    return rc;
}

/* ---- plot follow ------------------------------------------------------------- */

int family_plot_follow(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    const ctx_family_t *fam = &s->family;
    const ctx_rows_t *t = &fam->rows;
    if (t->nrows == 0)
        return diag_error(err, st->span,
                          "no follow to plot: run `follow NAME from A to B: "
                          "steady ...` first");
    size_t nitems = st->u.output.n;
    /* the grammar gives `vs` only after columns */
    const ast_expr_t *vs = st->u.output.vs;
    size_t ncols = nitems ? nitems + 1 : t->ncols;
    double **col = xcalloc(ncols + 1, sizeof *col);
    char **titles = xcalloc(ncols + 1, sizeof *titles);
    bool *dashed = xcalloc(ncols + 1, sizeof *dashed);
    int rc = 0;
    if (!nitems) {
        for (size_t c = 0; c < t->ncols; c++) {
            col[c] = xcalloc(t->nrows + 1, sizeof *col[c]);
            titles[c] = xstrdup(t->titles[c]);
            dashed[c] = t->dashed[c];
            for (size_t k = 0; k < t->nrows; k++)
                col[c][k] = t->data[k * t->ncols + c];
        }
    } else {
        /* expressions of the state at each point, NAME on x unless vs */
        lower_t *lw = ctx_lowered(s, err);
        if (!lw)
            rc = -1;
        else if (s->model.generation != fam->generation ||
                 expr_graph_nvars(lower_graph(lw)) != fam->width)
            rc = diag_error(err, st->span,
                            "the model changed since the follow: run it "
                            "again to plot expressions of its points");
        /* on the heap: a plot may have as many items as a statement
         * holds (issue 31) */
        const ast_expr_t **ex = xcalloc(nitems + 1, sizeof *ex);
        ex[0] = vs;
        for (size_t i = 0; i < nitems; i++)
            ex[i + 1] = st->u.output.items[i];
        const expr_t **nodes = xcalloc(nitems + 1, sizeof *nodes);
        for (size_t i = 0; i < nitems + 1 && rc == 0; i++) {
            if (!ex[i]) {
                nodes[i] = NULL;
                continue;
            }
            value_t v;
            if (lower_expr(lw, ex[i], LOWER_QUERY, &v, err) != 0) {
                rc = -1;
                break;
            }
            if (v.dim != 0)
                rc = diag_error(err, ex[i]->span,
                                "a column must be a scalar; write its "
                                "components, like P[1], P[2]");
            nodes[i] = v.c[0];
        }
        for (size_t i = 0; i < nitems + 1 && rc == 0; i++) {
            col[i] = xcalloc(t->nrows + 1, sizeof *col[i]);
            titles[i] = ex[i] ? ctx_span_text(s, ex[i]->span)
                              : xstrdup(fam->name);
            for (size_t k = 0; k < t->nrows && rc == 0; k++) {
                const double *row = fam->states + k * fam->width;
                double val = ex[i] ? expr_eval(lower_graph(lw), nodes[i], row)
                                   : t->data[k * t->ncols];
                if (!isfinite(val)) {
                    char num[40];
                    rc = diag_error(err, ex[i]->span,
                                    "the value is not finite (%s) at the "
                                    "follow's point %zu",
                                    fam_num(val, num, sizeof num), k + 1);
                }
                col[i][k] = val == 0 ? 0.0 : val;
            }
        }
        free(ex);
        free(nodes);
    }
    if (rc == 0) {
        plot_columns_t pc = {ncols, t->nrows, (const char *const *)titles,
                             (const double *const *)col, dashed, false};
        const char *file = st->to_file.name;
        if (!file && s->svg_plots) {
            s->out_kind = CTX_OUT_SVG;
            free(s->plot_png);
            free(s->plot_pdf);
            rc = plot_draw_svg(&pc, s->out, &s->plot_png, &s->plot_pdf,
                               err);
        } else if (file && ctx_check_output(s, file, st->to_file.span, err)) {
            rc = -1;
        } else {
            rc = plot_draw(&pc, file, s->out, err);
        }
        if (rc != 0 && err->set && err->span.file == SRC_NO_FILE)
            err->span = file ? st->to_file.span : st->span;
    }
    for (size_t c = 0; c < ncols; c++) {
        free(col[c]);
        free(titles[c]);
    }
    free(col);
    free(titles);
    free(dashed);
    return rc;
}
