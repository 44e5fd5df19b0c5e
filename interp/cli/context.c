/*
 * context.c — the part of a session that statements use (context.h):
 * the derived objects built on demand and the helpers for messages.
 *
 * Must not: print except through the context's streams; exit().
 */
#include "interp/cli/context.h"

#include "interp/analysis/slips.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "interp/analysis/linearize.h"
#include "interp/analysis/react.h"
#include "interp/eom/velocity.h"
#include "interp/cli/work.h"
#include "interp/run/native.h"
#include "interp/run/plot.h"

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
    s->threads = work_default_threads();
    s->eom_method = -1;
    s->samples_cleared_at = SRC_SPAN_NONE;
    s->channel_fd[0] = s->channel_fd[1] = -1;
}

int ctx_check_output(const ctx_t *s, const char *path, src_span_t at,
                     diag_t *err)
{
    struct stat file, chan;
    if (stat(path, &file) != 0)
        return 0; /* a new file: none of the streams */
    for (int k = 0; k < 2; k++)
        if (s->channel_fd[k] >= 0 && fstat(s->channel_fd[k], &chan) == 0 &&
            file.st_dev == chan.st_dev && file.st_ino == chan.st_ino)
            return diag_error(err, at,
                              "cannot write '%s': it is the notebook's own "
                              "channel (nh --protocol's standard %s); write "
                              "to a file instead",
                              path, k == 0 ? "input" : "output");
    return 0;
}

int ctx_open_output(const ctx_t *s, outfile_t *of, const char *path,
                    bool regular, src_span_t at, diag_t *err)
{
    if (ctx_check_output(s, path, at, err) != 0)
        return -1;
    int e = regular ? outfile_open_regular(of, path) : outfile_open(of, path);
    if (e)
        return diag_error(err, at, "cannot write '%s': %s", path,
                          outfile_strerror(e));
    return 0;
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
    ctx_rows_free_lines(t);
    memset(t, 0, sizeof *t);
}

void ctx_rows_free_lines(ctx_rows_t *t)
{
    if (!t->line)
        return;
    for (size_t k = 0; k < t->nrows; k++)
        free(t->line[k]);
    free(t->line);
    t->line = NULL;
}

void ctx_row_set_line(ctx_rows_t *t, char *line)
{
    if (!t->line)
        t->line = xcalloc(t->cap, sizeof *t->line);
    free(t->line[t->nrows - 1]);
    t->line[t->nrows - 1] = line;
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
        size_t cap = t->cap ? 2 * t->cap : 16;
        t->data = xrealloc(t->data, cap * (t->ncols ? t->ncols : 1) *
                                        sizeof *t->data);
        if (t->line) {
            t->line = xrealloc(t->line, cap * sizeof *t->line);
            memset(t->line + t->cap, 0, (cap - t->cap) * sizeof *t->line);
        }
        t->cap = cap;
    }
    if (t->ncols)
        memcpy(t->data + t->nrows * t->ncols, t->cur,
               t->ncols * sizeof *t->data);
    t->nrows++;
    t->col = 0;
    return true;
}

void ctx_write_table(const ctx_t *s, const ctx_rows_t *t, size_t count,
                     FILE *out)
{
    if (s->shard_n)
        fprintf(out, "# nh --shard %u/%u: %zu points\n", s->shard_k,
                s->shard_n, count);
    if (t->line) { /* rows whose text the workers wrote */
        plot_table_head((const char *const *)t->titles, t->ncols, out);
        strbuf_t b;
        strbuf_init(&b);
        for (size_t k = 0; k < t->nrows; k++) {
            if (t->line[k]) {
                fputs(t->line[k], out);
                continue;
            }
            b.len = 0;
            plot_table_row(&b, t->data + k * t->ncols, t->ncols, 1);
            fwrite(b.data, 1, b.len, out);
        }
        strbuf_free(&b);
        return;
    }
    double **col = xcalloc(t->ncols + 1, sizeof *col);
    for (size_t c = 0; c < t->ncols; c++) {
        col[c] = xcalloc(t->nrows + 1, sizeof *col[c]);
        for (size_t k = 0; k < t->nrows; k++)
            col[c][k] = t->data[k * t->ncols + c];
    }
    plot_columns_t pc = {t->ncols, t->nrows,
                         (const char *const *)t->titles,
                         (const double *const *)col, NULL, false};
    plot_table(&pc, out);
    for (size_t c = 0; c < t->ncols; c++)
        free(col[c]);
    free(col);
}

char *ctx_shard_path(const ctx_t *s, const char *name)
{
    if (!s->shard_n)
        return xstrdup(name);
    const char *slash = strrchr(name, '/');
    const char *base = slash ? slash + 1 : name;
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base)
        dot = base + strlen(base);
    strbuf_t b;
    strbuf_init(&b);
    strbuf_addn(&b, name, (size_t)(dot - name));
    strbuf_addf(&b, ".%u-of-%u%s", s->shard_k, s->shard_n, dot);
    return strbuf_take(&b);
}

void ctx_free_derived(ctx_t *s)
{
    ctx_free_eom(s);
    eom_velsolver_free(s->vs);
    s->vs = NULL;
    react_free(s->react);
    s->react = NULL;
}

void ctx_family_free(ctx_family_t *f)
{
    for (size_t k = 0; f->marks && k < f->rows.nrows; k++)
        free(f->marks[k]);
    free(f->marks);
    free(f->states);
    free(f->name);
    ctx_rows_free(&f->rows);
    memset(f, 0, sizeof *f);
}

void ctx_free(ctx_t *s)
{
    ctx_free_derived(s);
    ctx_rows_free(&s->sweep);
    ctx_family_free(&s->family);
    lower_free(s->lw);
    model_free(&s->model);
    sim_samples_free(&s->samples);
    free(s->samples_layout);
    free(s->plot_png);
    free(s->plot_pdf);
}

/* ---- samples ------------------------------------------------------------- */

void ctx_clear_samples(ctx_t *s, src_span_t span)
{
    if (s->samples.n)
        s->samples_cleared_at = span;
    sim_samples_clear(&s->samples);
}

/* The names of LW's variables in their order, NUL-separated (malloc'ed,
 * *LEN bytes). */
static char *layout_of(lower_t *lw, size_t *len)
{
    expr_graph_t *g = lower_graph(lw);
    strbuf_t b;
    strbuf_init(&b);
    for (uint32_t v = 0; v < expr_graph_nvars(g); v++) {
        const char *nm = expr_var_name(g, v);
        strbuf_addn(&b, nm, strlen(nm) + 1);
    }
    *len = b.len;
    return strbuf_take(&b);
}

static uint64_t layout_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h ^ (h >> 31);
}

/* Rows recorded with the variables of s->samples_layout, rewritten in
 * the order of LW's: a variable is found by its name (x, x', lambda(c),
 * m …), which a lowering of the same model gives it whatever its
 * number; one the rows lack is NaN (a parameter gets its value in
 * samples_layout_for). */
static void samples_remap(ctx_t *s, lower_t *lw)
{
    expr_graph_t *g = lower_graph(lw);
    size_t nv = expr_graph_nvars(g), ow = s->samples.width, n = s->samples.n;
    if ((double)n * (double)nv * sizeof(double) > (double)SIM_MAX_SAMPLE_BYTES) {
        sim_samples_clear(&s->samples); /* too wide to keep */
        return;
    }
    size_t cap = 16;
    while (cap < 2 * ow)
        cap *= 2;
    size_t *slot = xcalloc(cap, sizeof *slot); /* old column + 1 */
    const char *p = s->samples_layout;
    const char **oldname = xcalloc(ow + 1, sizeof *oldname);
    for (size_t c = 0; c < ow && p < s->samples_layout + s->samples_layout_len;
         c++, p += strlen(p) + 1) {
        oldname[c] = p;
        size_t i = layout_hash(p) & (cap - 1);
        while (slot[i])
            i = (i + 1) & (cap - 1);
        slot[i] = c + 1;
    }
    long *from = xcalloc(nv ? nv : 1, sizeof *from);
    for (uint32_t v = 0; v < nv; v++) {
        const char *nm = expr_var_name(g, v);
        from[v] = -1;
        for (size_t i = layout_hash(nm) & (cap - 1); slot[i];
             i = (i + 1) & (cap - 1))
            if (strcmp(oldname[slot[i] - 1], nm) == 0) {
                from[v] = (long)slot[i] - 1;
                break;
            }
    }
    double *data = xmalloc((n * nv > 0 ? n * nv : 1) * sizeof *data);
    for (size_t k = 0; k < n; k++)
        for (uint32_t v = 0; v < nv; v++)
            data[k * nv + v] =
                from[v] >= 0 ? s->samples.data[k * ow + (size_t)from[v]] : NAN;
    free(s->samples.data);
    s->samples.data = data;
    s->samples.cap = n;
    s->samples.width = nv;
    free(from);
    free(oldname);
    free(slot);
}

static void samples_layout_for(ctx_t *s, lower_t *lw)
{
    size_t len;
    char *cur = layout_of(lw, &len);
    /* Rows of no known layout (recorded by a caller that did not sync
     * first) are taken as they are. */
    if (s->samples.n && s->samples_layout &&
        !(len == s->samples_layout_len &&
          memcmp(cur, s->samples_layout, len) == 0))
        samples_remap(s, lw);
    free(s->samples_layout);
    s->samples_layout = cur;
    s->samples_layout_len = len;
    /* The parameters the model does not read take their current value
     * in every row. */
    const nh_system_t *sys = lower_system(lw);
    const model_t *m = &s->model;
    for (size_t i = 0; i < sys->np && s->samples.n; i++) {
        if (lower_model_reads(lw, MODEL_PARAM, i))
            continue;
        long j = i < m->params.n && m->params.v[i].name == sys->pname[i]
                     ? (long)i
                     : model_find(m, MODEL_PARAM, sys->pname[i]);
        if (j < 0)
            continue;
        for (size_t k = 0; k < s->samples.n; k++)
            s->samples.data[k * s->samples.width + sys->p[i]] =
                m->params.v[j].value;
    }
}

void ctx_samples_sync(ctx_t *s, lower_t *lw)
{
    samples_layout_for(s, lw);
    s->samples_cleared_at = SRC_SPAN_NONE;
}

lower_t *ctx_samples_ready(ctx_t *s, src_span_t span, diag_t *err)
{
    if (s->samples.n == 0) {
        if (s->samples_cleared_at.file == SRC_NO_FILE) {
            diag_error(err, span,
                       "no samples recorded: run `simulate to T` first");
            return NULL;
        }
        char place[256];
        ctx_where_text(s, s->samples_cleared_at, place, sizeof place);
        diag_error(err, span,
                   "no samples: the declaration at %s changed the model, "
                   "which clears the samples recorded before it; run "
                   "`simulate to T` again",
                   place);
        return NULL;
    }
    lower_t *lw = ctx_lowered(s, err);
    if (!lw)
        return NULL;
    if (s->samples_generation != s->model.generation) {
        diag_error(err, span,
                   "the samples belong to a model that has changed since: "
                   "simulate again");
        return NULL;
    }
    samples_layout_for(s, lw);
    if (s->samples.n == 0) {
        diag_error(err, span,
                   "no samples: the samples recorded before the last "
                   "declarations would take more than %zu MiB laid out "
                   "for the model now; run `simulate to T` again",
                   (size_t)SIM_MAX_SAMPLE_BYTES >> 20);
        return NULL;
    }
    return lw;
}

void ctx_drop_lowering(ctx_t *s)
{
    ctx_free_derived(s);
    lower_free(s->lw);
    s->lw = NULL;
}

void ctx_note_dropped(ctx_t *s, const lower_t *old, const lower_t *lw,
                      const char *name)
{
    int was[3] = {0, 0, 0}, now[3];
    unsigned dim = lower_dropped(lw, name, now);
    if (old && lower_dropped(old, name, was) != dim)
        was[0] = was[1] = was[2] = 0;
    for (unsigned k = 0; k < dim && !s->quiet; k++) {
        if (now[k] && !was[k])
            fprintf(s->out,
                    "note: %s[%u] is dropped: it vanishes identically "
                    "(%s)\n",
                    name, k + 1,
                    now[k] == 1 ? "it simplifies to 0 = 0"
                                : "zero at every sample state near the "
                                  "state, as check tests a quantity");
        else if (was[k] && !now[k])
            fprintf(s->out,
                    "note: %s[%u] is kept again: it does not vanish near "
                    "the state\n",
                    name, k + 1);
    }
}

void ctx_drops_refresh(ctx_t *s, const model_t *at)
{
    if (!s->lw || s->lw_generation != s->model.generation)
        return;
    const model_t *m = at ? at : &s->model;
    if (lower_drops_hold(s->lw, m))
        return;
    diag_t err = {0};
    lower_t *lw = lower_model(m, s->src, &err);
    if (!lw) { /* it lowered before: its error is the next statement's */
        ctx_drop_lowering(s);
        return;
    }
    for (size_t a = 0; a < s->model.constraints.n; a++)
        ctx_note_dropped(s, s->lw, lw, s->model.constraints.v[a].name);
    ctx_free_derived(s);
    lower_free(s->lw);
    s->lw = lw;
}

void ctx_drop_large_lowering(ctx_t *s)
{
    if (s->lw && expr_graph_count(lower_graph(s->lw)) >
                     SESSION_REBUILD_NODES)
        ctx_drop_lowering(s);
}

lower_t *ctx_lowered(ctx_t *s, diag_t *err)
{
    if (s->lw && s->lw_generation == s->model.generation) {
        lower_set_stop(s->lw, &s->stop);
        return s->lw;
    }
    lower_t *lw = lower_model(&s->model, s->src, err);
    if (!lw)
        return NULL;
    lower_set_stop(lw, &s->stop);
    ctx_free_derived(s);
    lower_free(s->lw);
    s->lw = lw;
    s->lw_generation = s->model.generation;
    return lw;
}

/* A warning at the kinetic energy's (or the Lagrangian's) declaration
 * when its mass matrix has a negative eigenvalue at the state where the
 * equations are first evaluated after the model changed (LANGUAGE.md §4,
 * slips.h): no method reports it, and the motion is then nonsense. */
/* Whether the symmetric matrix of the six entries I = [Ixx, Iyy, Izz,
 * Ixy, Iyz, Izx] is positive semidefinite beyond rounding: its principal
 * minors (the diagonal, the three 2×2, the determinant) are not below
 * zero (Sylvester's criterion for semidefinite matrices). */
static bool inertia_semidefinite(const double I[6])
{
    double big = 0;
    for (int k = 0; k < 6; k++)
        big = fmax(big, fabs(I[k]));
    double tol = 1e-12 * big;
    double xx = I[0], yy = I[1], zz = I[2], xy = I[3], yz = I[4], zx = I[5];
    double det = xx * (yy * zz - yz * yz) - xy * (xy * zz - yz * zx) +
                 zx * (xy * yz - yy * zx);
    return xx >= -tol && yy >= -tol && zz >= -tol &&
           xx * yy - xy * xy >= -tol * big && yy * zz - yz * yz >= -tol * big &&
           zz * xx - zx * zx >= -tol * big && det >= -tol * big * big;
}

/* A warning at AT: WHAT where the equations are first evaluated (the
 * state STATE), "a sign?". */
static void warn_at(ctx_t *s, src_span_t at, const char *what,
                    const char *state)
{
    diag_t w = {0};
    diag_error(&w, at, "%s where the equations are first evaluated%s: a "
                       "sign?",
               what, state);
    fflush(s->out);
    diag_print_warning(s->err, s->src, &w);
}

/* The particles' and the bodies' masses and inertias at VARS: a negative
 * mass, or an inertia that is not positive semidefinite, makes a kinetic
 * energy that is not (issue 31: only a `kinetic` was looked at). */
static void warn_masses(ctx_t *s, const nh_system_t *sys, const double *vars)
{
    const model_t *m = &s->model;
    char st[1024], what[DIAG_MSG_MAX], num[32];
    ctx_describe_state(s, vars, st, sizeof st);
    for (size_t i = 0; i < sys->nparticles && i < m->particles.n; i++) {
        double v = expr_eval(sys->g, sys->particles[i].mass, vars);
        if (isfinite(v) && v < 0) {
            snprintf(what, sizeof what, "the mass of particle %s is "
                                        "negative (%s)",
                     sys->particles[i].name,
                     expr_format_number(v, num, sizeof num));
            warn_at(s, m->particles.v[i].mass->span, what, st);
        }
    }
    for (size_t i = 0; i < sys->nbodies && i < m->bodies.n; i++) {
        const nh_body_t *b = &sys->bodies[i];
        double v = expr_eval(sys->g, b->mass, vars), I[6];
        bool finite = true;
        for (int k = 0; k < 6; k++)
            finite &= isfinite(I[k] = expr_eval(sys->g, b->inertia[k], vars)) != 0;
        if (isfinite(v) && v < 0) {
            snprintf(what, sizeof what, "the mass of body %s is negative (%s)",
                     b->name, expr_format_number(v, num, sizeof num));
            warn_at(s, m->bodies.v[i].mass->span, what, st);
        }
        if (finite && !inertia_semidefinite(I)) {
            snprintf(what, sizeof what,
                     "the inertia of body %s is not positive semidefinite "
                     "(a negative moment, or products of inertia too large "
                     "for the moments)",
                     b->name);
            warn_at(s, m->bodies.v[i].inertia->span, what, st);
        }
    }
}

static void warn_indefinite(ctx_t *s, lower_t *lw)
{
    if (s->definite_generation == s->model.generation + 1)
        return;
    s->definite_generation = s->model.generation + 1; /* 0: never looked */
    const model_energy_t *en = s->model.lagrangian.name ? &s->model.lagrangian
                                                        : &s->model.kinetic;
    const nh_system_t *sys = lower_system(lw);
    size_t nv = expr_graph_nvars(lower_graph(lw));
    double *vars = xcalloc(nv ? nv : 1, sizeof *vars);
    lower_fill_vars(lw, &s->model, vars);
    warn_masses(s, sys, vars);
    if (en->name && slip_indefinite(sys, sys->L, vars)) {
        char st[1024];
        ctx_describe_state(s, vars, st, sizeof st);
        diag_t w = {0};
        diag_error(&w, en->value->span,
                   "%s %s is not positive definite in the velocities where "
                   "the equations are first evaluated (the matrix of its "
                   "second derivatives by them has a negative "
                   "eigenvalue)%s: a sign?",
                   en == &s->model.kinetic ? "the kinetic energy"
                                           : "the Lagrangian",
                   en->name, st);
        fflush(s->out);
        diag_print_warning(s->err, s->src, &w);
    }
    free(vars);
}

eom_t *ctx_prepare_here(ctx_t *s, lower_t *lw, eom_method_t method,
                        src_span_t where, diag_t *err)
{
    size_t nv = expr_graph_nvars(lower_graph(lw));
    double *vars = xmalloc((nv + 1) * sizeof *vars);
    lower_fill_vars(lw, &s->model, vars);
    eom_t *e = eom_prepare_at(lower_system(lw), method, where, vars, err);
    free(vars);
    return e;
}

eom_t *ctx_eom(ctx_t *s, src_span_t where, diag_t *err)
{
    lower_t *lw = ctx_lowered(s, err);
    if (!lw)
        return NULL;
    warn_indefinite(s, lw);
    const nh_system_t *sys = lower_system(lw);
    int method = s->model.method >= 0 ? s->model.method
                                      : (int)eom_default_method(sys);
    if (s->eom && s->eom_generation == s->model.generation &&
        s->eom_method == method)
        return s->eom;
    eom_t *e = ctx_prepare_here(s, lw, (eom_method_t)method, where, err);
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

struct react *ctx_react(ctx_t *s, diag_t *err)
{
    lower_t *lw = ctx_lowered(s, err);
    if (!lw)
        return NULL;
    if (!s->react)
        s->react = react_new(lw, err);
    return s->react;
}

struct lin *ctx_lin(ctx_t *s, src_span_t where, diag_t *err)
{
    eom_t *e = ctx_eom(s, where, err);
    if (!e || ctx_compile(s, e, true, where, err) != 0)
        return NULL;
    if (!s->lin)
        s->lin = lin_new(lower_system(s->lw), e);
    return s->lin;
}

int ctx_set_compile(ctx_t *s, const ast_expr_t *value, diag_t *err)
{
    const char *v = value->kind == AST_NAME ? value->name : NULL;
    if (!v || (strcmp(v, "on") != 0 && strcmp(v, "off") != 0))
        return diag_error(err, value->span, "compile is on or off");
    s->compile = strcmp(v, "on") == 0;
    if (!s->compile && s->eom)
        eom_set_native(s->eom, NULL, NULL, NULL, NULL);
    char cc[NATIVE_PATH];
    if (s->compile && !native_compiler(cc, sizeof cc) && !s->quiet) {
        diag_t note = {0};
        diag_error(&note, value->span,
                   "no C compiler found (cc on the PATH, or $CC): simulate "
                   "and compare run on the tapes");
        fflush(s->out);
        diag_print_note(s->err, s->src, &note);
    }
    return 0;
}

int ctx_compile(ctx_t *s, eom_t *e, bool tangents, src_span_t where,
                diag_t *err)
{
    if (!s->compile) {
        eom_set_native(e, NULL, NULL, NULL, NULL);
        return 0;
    }
    unsigned bit = 1u << eom_method(e);
    if (s->compile_failed_generation != s->model.generation)
        s->compile_failed = s->compile_failed_tangents = 0;
    if (s->compile_failed & bit)
        return 0;
    /* the derivatives, in a file of their own, when first needed (with
     * the equations when they are not compiled yet: side by side) */
    tangents = tangents && !(s->compile_failed_tangents & bit);
    int rc = 0;
    if (tangents && !eom_tangents_native(e))
        rc = native_attach_tangents(e, PACKAGE_VERSION, &s->stop, NULL, err);
    else if (!eom_has_native(e))
        rc = native_attach(e, PACKAGE_VERSION, &s->stop, NULL, err);
    if (rc >= 0)
        return 0; /* compiled, or no compiler (the note was at `set`) */
    if (!nh_stop_due(&s->stop)) { /* an interrupted compile is tried again */
        s->compile_failed_generation = s->model.generation;
        if (eom_has_native(e))
            s->compile_failed_tangents |= bit;
        else
            s->compile_failed |= bit;
    }
    if (err->span.file == SRC_NO_FILE)
        err->span = where;
    return -1;
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

bool ctx_blame_declaration(ctx_t *s, lower_t *lw, const double *vars,
                           src_span_t where, diag_t *err)
{
    char st[1024], what[256], place[256];
    src_span_t decl;
    if (!lower_find_undefined(lw, vars, &decl, what, sizeof what))
        return false;
    ctx_describe_state(s, vars, st, sizeof st);
    ctx_where_text(s, where, place, sizeof place);
    diag_clear(err);
    diag_error(err, decl,
               "%s (a division by zero or a function outside its domain), "
               "and the equations of the statement at %s need it%s",
               what, place, st);
    return true;
}

int ctx_state_error(ctx_t *s, lower_t *lw, const double *vars,
                    src_span_t where, diag_t *err)
{
    if (ctx_blame_declaration(s, lw, vars, where, err))
        return -1;
    char st[1024], msg[DIAG_MSG_MAX];
    ctx_describe_state(s, vars, st, sizeof st);
    snprintf(msg, sizeof msg, "%s", err->msg);
    diag_clear(err);
    /* The default state, before any `initial`, is all zero, and there
     * Euler angles and the like are singular: say so, and what to do. */
    const nh_system_t *sys = lower_system(lw);
    bool zero = vars[sys->t] == 0;
    for (size_t i = 0; i < sys->n && zero; i++)
        zero = vars[sys->q[i]] == 0 && vars[sys->qd[i]] == 0;
    for (size_t i = 0; i < sys->m && zero; i++)
        zero = vars[sys->z[i]] == 0;
    if (zero && slip_singular_here(sys, sys->L, vars))
        return diag_error(err, where,
                          "%s%s; this is the all-zero state, the default "
                          "before any `initial`, and the coordinates are "
                          "singular there (as Euler angles are at theta = "
                          "0): give a state with `initial`",
                          msg, st);
    return diag_error(err, where, "%s%s", msg, st);
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
    /* on the heap: a million parameters are a million variables */
    double *vars = xcalloc(nv ? nv : 1, sizeof *vars);
    lower_fill_vars(lw, m, vars);
    double x = expr_eval(g, v.c[0], vars);
    free(vars);
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


const char *const ctx_integrators[] = {
    "rk2",    "rk4",    "rkf45",  "rkck",  "rk8pd", "msadams", "rk1imp",
    "rk2imp", "rk4imp", "bsimp",  "msbdf", "dla",   NULL};

bool ctx_integrator_known(const char *name)
{
    return sim_integrator_known(name) || strcmp(name, "dla") == 0;
}

int ctx_unknown_integrator(const char *name, src_span_t span,
                               diag_t *err)
{
    const char *best = source_closest(name, ctx_integrators);
    if (best)
        return diag_error(err, span,
                          "unknown integrator '%s'; did you mean '%s'?", name,
                          best);
    return diag_error(err, span,
                      "the integrators are rk2, rk4, rkf45, rkck, rk8pd, "
                      "msadams, rk1imp, rk2imp, rk4imp, bsimp, msbdf and "
                      "dla");
}

