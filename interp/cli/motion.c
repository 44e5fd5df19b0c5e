/*
 * motion.c — the statements of motion: simulate (LANGUAGE.md §6), with
 * its events `until` and `sample at` (§6.1), table and plot (§7) over
 * the recorded samples.
 *
 * A sample row is the full value vector of the lowering current when it
 * was recorded (state, parameters, accelerations, multipliers), so table
 * and plot evaluate any expression on it with one tape per statement.
 * Must not: change the model or the samples except in simulate.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interp/eom/velocity.h"
#include "interp/run/plot.h"
#include "interp/analysis/react.h"
#include "interp/cli/motion.h"
#include "interp/cli/stmts.h"
#include "interp/run/dla.h"
#include "interp/expr/tape.h"
#include "interp/base/util.h"

/* Adds the statement's place to an error reported without one. */
static int at_statement(diag_t *err, src_span_t span)
{
    if (err->set && err->span.file == SRC_NO_FILE)
        err->span = span;
    return -1;
}

static int positive_option(ctx_t *s, lower_t *lw,
                           const ast_sim_option_t *o, const char *what,
                           double *out, diag_t *err)
{
    if (ctx_eval_const(s, lw, &s->model, o->value, out, err))
        return -1;
    if (!(*out > 0))
        return diag_error(err, o->value->span, "%s must be positive", what);
    return 0;
}

/* The event of `until` or `sample at` O: g = EXPR − VALUE into EV (a
 * node of LW's graph), both scalars, each an error at its place. */
static int event_option(lower_t *lw, const ast_sim_option_t *o,
                        sim_event_t *ev, diag_t *err)
{
    value_t ve, vv;
    if (lower_expr(lw, o->value, LOWER_QUERY, &ve, err) != 0)
        return -1;
    if (ve.dim != 0)
        return diag_error(err, o->value->span,
                          "an event's expression must be a scalar; write a "
                          "component, like P[1]");
    if (lower_expr(lw, o->target, LOWER_QUERY, &vv, err) != 0)
        return -1;
    if (vv.dim != 0)
        return diag_error(err, o->target->span,
                          "an event's value must be a scalar");
    ev->g = expr_sub(lower_graph(lw), ve.c[0], vv.c[0]);
    ev->dir = o->dir;
    ev->section = o->kind == SIM_OPT_SAMPLE_AT;
    return 0;
}

/* The text of an event as the summary names it: "theta = 0", then
 * " (rising)" or " (falling)" for DIR (0: nothing). */
static char *event_text(ctx_t *s, const ast_sim_option_t *o, int dir)
{
    char *e = ctx_span_text(s, o->value->span);
    char *v = ctx_span_text(s, o->target->span);
    size_t len = strlen(e) + strlen(v) + 16;
    char *t = xmalloc(len);
    snprintf(t, len, "%s = %s%s", e, v,
             dir > 0 ? " (rising)" : dir < 0 ? " (falling)" : "");
    free(e);
    free(v);
    return t;
}

int motion_simulate(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    lower_t *lw = ctx_lowered(s, err);
    if (!lw)
        return -1;
    const nh_system_t *sys = lower_system(lw);
    sim_options_t o = {0};
    o.rtol = s->rtol;
    o.atol = s->atol;
    o.step = s->step;
    o.integrator = s->integrator;
    o.max_steps = s->max_steps;
    o.stop = &s->stop;
    if (ctx_eval_const(s, lw, &s->model, st->u.simulate.to, &o.t_end, err))
        return -1;
    const ast_sim_option_t *seen[SIM_OPT_SAMPLE_AT + 1] = {NULL};
    const ast_sim_option_t *event = NULL; /* until or sample at */
    sim_event_t ev = {0};
    double dla_h = 0; /* integrator dla's fixed step (0: the sample step) */
    for (size_t i = 0; i < st->u.simulate.noptions; i++) {
        const ast_sim_option_t *opt = &st->u.simulate.options[i];
        if (seen[opt->kind] && opt->kind == SIM_OPT_UNTIL)
            return diag_error(err, opt->span,
                              "a run stops at one event: `until` is given "
                              "twice");
        if (seen[opt->kind] && opt->kind == SIM_OPT_SAMPLE_AT)
            return diag_error(err, opt->span,
                              "a run records one section: `sample at` is "
                              "given twice");
        if (seen[opt->kind])
            return diag_error(err, opt->span, "this option is given twice");
        seen[opt->kind] = opt;
        switch (opt->kind) {
        case SIM_OPT_STEP:
            if (positive_option(s, lw, opt, "step", &o.step, err))
                return -1;
            break;
        case SIM_OPT_RTOL:
            if (positive_option(s, lw, opt, "rtol", &o.rtol, err))
                return -1;
            break;
        case SIM_OPT_ATOL:
            if (positive_option(s, lw, opt, "atol", &o.atol, err))
                return -1;
            break;
        case SIM_OPT_INTEGRATOR:
            if (!ctx_integrator_known(opt->ident.name))
                return ctx_unknown_integrator(opt->ident.name,
                                                  opt->ident.span, err);
            o.integrator = opt->ident.name;
            if (opt->h.name && strcmp(opt->ident.name, "dla") != 0)
                return diag_error(err, opt->h.span,
                                  "a fixed step `h` belongs to integrator "
                                  "dla (LANGUAGE.md §6.2)");
            if (opt->h.name && strcmp(opt->h.name, "h") != 0)
                return diag_error(err, opt->h.span,
                                  "unexpected '%s': integrator dla takes "
                                  "`h STEP`, its fixed step",
                                  opt->h.name);
            if (opt->h.name &&
                positive_option(s, lw, opt, "h", &dla_h, err))
                return -1;
            break;
        case SIM_OPT_PROJECT:
            o.project = true;
            break;
        case SIM_OPT_UNTIL:
        case SIM_OPT_SAMPLE_AT:
            /* LANGUAGE.md §6.1; together they are refused
             * (doc/language.md, "Events") */
            if (event)
                return diag_error(err, opt->span,
                                  "`until` and `sample at` do not go "
                                  "together: a section's samples are its "
                                  "crossings only; stop it with `simulate "
                                  "to`");
            event = opt;
            if (event_option(lw, opt, &ev, err) != 0)
                return -1;
            break;
        }
    }
    if (event && ev.section && seen[SIM_OPT_STEP])
        return diag_error(err, seen[SIM_OPT_STEP]->span,
                          "`step` does not go with `sample at`: the samples "
                          "are the crossings (LANGUAGE.md §6.1)");
    if (event && strcmp(o.integrator, "dla") == 0)
        return diag_error(err, event->span,
                          "events are located on an adaptive integrator's "
                          "solution; integrator dla takes fixed steps "
                          "(doc/language.md, \"Events\"): use another "
                          "integrator with until and sample at");
    if (event)
        o.event = &ev;
    double t0 = s->model.t;
    char num[40];
    if (o.t_end == t0)
        return diag_error(err, st->u.simulate.to->span,
                          "the motion is already at t = %s: simulate to a "
                          "later (or earlier) time",
                          expr_format_number(t0, num, sizeof num));
    if (o.step == 0)
        o.step = sim_default_step(t0, o.t_end);
    o.progress = s->quiet ? NULL : stderr;

    eom_t *e = ctx_eom(s, st->span, err);
    /* the implicit integrators' Jacobian: the compiled derivatives */
    if (!e || ctx_compile(s, e,
                          sim_integrator_implicit(o.integrator) &&
                              !o.jacobian_differences,
                          st->span, err) != 0)
        return -1;
    if (event && !eom_has_multipliers(e)) {
        value_t v = {.dim = 0, .c = {ev.g}};
        if (lower_needs_lambda(lw, &v))
            return diag_error(err, event->value->span,
                              "the equations %s have no multipliers: an "
                              "event's expression cannot hold lambda or "
                              "reaction",
                              eom_method_name(eom_method(e)));
    }
    size_t nv = expr_graph_nvars(lower_graph(lw));
    double *vars = xcalloc(nv ? nv : 1, sizeof *vars);
    lower_fill_vars(lw, &s->model, vars);
    /* LANGUAGE.md §6: a state off the constraints (after `set` of a
     * parameter they use, or a constraint declared since `initial`) is an
     * error, unless `project` pulls it back first.  The drift that the
     * last run left is accepted: that run reported it as max |C|. */
    if (!o.project) {
        char names[512];
        double v = eom_constraint_violation(sys, vars, names, sizeof names);
        if (!(v <= fmax(EOM_STATE_RTOL, s->model.state_drift))) {
            free(vars);
            return diag_error(err, st->span,
                              "the state violates %s: `reset` or `initial` "
                              "solves it again, `simulate ... project` pulls "
                              "it back first",
                              names);
        }
    }
    ctx_samples_sync(s, lw); /* rows of kept samples, in lw's layout */
    /* A section's rows are crossings of one section: a run of another
     * kind (a grid, another section) starts the samples afresh
     * (doc/language.md, "Events"). */
    char *section = event && ev.section ? event_text(s, event, ev.dir) : NULL;
    bool other_kind = (section == NULL) != (s->samples.section == NULL) ||
                      (section && strcmp(section, s->samples.section) != 0);
    if (s->samples.n && (s->samples_generation != s->model.generation ||
                         s->samples_method != (int)eom_method(e) ||
                         other_kind))
        sim_samples_clear(&s->samples); /* another model, method or kind */
    sim_summary_t sum = {0};
    int rc = strcmp(o.integrator, "dla") == 0
                 ? dla_run(e, sys, vars, &o, dla_h ? dla_h : o.step,
                           &s->samples, &sum, err)
                 : sim_run(e, sys, vars, &o, &s->samples, &sum, err);
    s->samples_generation = s->model.generation;
    s->samples_method = eom_method(e);
    free(s->samples.section);
    s->samples.section = s->samples.n ? section : NULL;
    if (!s->samples.n)
        free(section);
    /* A failed run leaves VARS at its last sample (LANGUAGE.md §6), so
     * that the next simulate continues the same trajectory. */
    if (rc == 0 || sum.samples > 0) {
        /* The speeds of a state that holds the velocities follow them
         * (doc/language.md), so that another method goes on from here */
        eom_method_t m = eom_method(e);
        if (m != EOM_MAGGI && m != EOM_GIBBS_APPELL && sys->m > 0 &&
            sys->psi) {
            diag_t ignored = {0};
            struct eom_velsolver *vs = ctx_velsolver(s, &ignored);
            if (vs)
                eom_velsolver_speeds(vs, vars, &ignored);
        }
        lower_store_state(lw, vars, &s->model);
        s->model.state_drift = eom_constraint_violation(sys, vars, NULL, 0);
    }
    if (rc != 0 && nh_stop_due(&s->stop)) {
        /* Ctrl-C (or the time limit): the message says where the session
         * is left, the last sample (LANGUAGE.md §6; doc/language.md) —
         * or the state it started from, when the run recorded none — and
         * how far the integration had come. */
        char reached[40], where[DIAG_MSG_MAX - 200];
        lower_fill_vars(lw, &s->model, vars);
        ctx_describe_state(s, vars, where, sizeof where);
        diag_clear(err);
        diag_error(err, st->span,
                   "%s at t = %s; the state is left at the %s,%s",
                   nh_stop_reason(&s->stop),
                   expr_format_number(sum.t_reached, reached, sizeof reached),
                   s->samples.n ? "last sample" : "start", where);
        free(vars);
        return -1;
    }
    if (rc != 0) {
        /* the event's expression is to blame where it is not finite
         * (LANGUAGE.md §6.1); else a declaration that cannot be evaluated
         * where the run stopped (§4) */
        if (sum.event_failed)
            err->span = event->value->span;
        else
            ctx_blame_declaration(s, lw, vars, st->span, err);
        free(vars);
        return at_statement(err, st->span);
    }
    free(vars);
    if (!s->quiet) {
        char b1[40], b2[40], b3[40];
        char *what = event ? event_text(s, event, event->dir) : NULL;
        if (event && !ev.section && sum.event_hit) {
            char *hit = event_text(s, event, sum.event_dir);
            fprintf(s->out, "stopped at %s at t = %s: %zu samples, %zu steps, "
                            "max |C| = %s",
                    hit, expr_format_number(s->model.t, b1, sizeof b1),
                    sum.samples, sum.steps,
                    expr_format_number(sum.max_residual, b2, sizeof b2));
            free(hit);
        } else if (event && !ev.section) {
            fprintf(s->out, "simulated to t = %s, T first (no %s): %zu "
                            "samples, %zu steps, max |C| = %s",
                    expr_format_number(s->model.t, b1, sizeof b1), what,
                    sum.samples, sum.steps,
                    expr_format_number(sum.max_residual, b2, sizeof b2));
        } else if (event) {
            fprintf(s->out, "simulated to t = %s: %zu %s of %s, %zu steps, "
                            "max |C| = %s",
                    expr_format_number(s->model.t, b1, sizeof b1),
                    sum.crossings, sum.crossings == 1 ? "crossing" : "crossings",
                    what, sum.steps,
                    expr_format_number(sum.max_residual, b2, sizeof b2));
        } else {
            fprintf(s->out, "simulated to t = %s: %zu samples, %zu steps, "
                            "max |C| = %s",
                    expr_format_number(s->model.t, b1, sizeof b1), sum.samples,
                    sum.steps,
                    expr_format_number(sum.max_residual, b2, sizeof b2));
        }
        free(what);
        if (sum.energy_conserved)
            fprintf(s->out, ", energy drift = %s",
                    expr_format_number(sum.energy_drift, b3, sizeof b3));
        fputc('\n', s->out);
    }
    return 0;
}

void motion_columns_free(motion_columns_t *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->titles[i]);
        free(c->col[i]);
    }
    free(c->titles);
    free(c->col);
    memset(c, 0, sizeof *c);
}

int motion_lower_item(lower_t *lw, const motion_item_t *item, value_t *v,
                      diag_t *err)
{
    if (lower_expr(lw, item->e, LOWER_QUERY, v, err))
        return -1;
    if (v->dim == item->dim)
        return 0;
    if (!item->what)
        return diag_error(err, item->e->span,
                          "a column must be a scalar; write its "
                          "components, like P[1], P[2]");
    if (item->dim == 0)
        return diag_error(err, item->e->span,
                          "%s must be a scalar, not a %u-vector", item->what,
                          v->dim);
    if (v->dim == 0)
        return diag_error(err, item->e->span,
                          "%s must be a 3-vector (a point or a direction "
                          "in space), not a scalar",
                          item->what);
    return diag_error(err, item->e->span,
                      "%s must be a 3-vector (a point or a direction in "
                      "space), not a %u-vector: write [x, y, 0]",
                      item->what, v->dim);
}

int motion_columns(ctx_t *s, src_span_t span, const motion_item_t *items,
                   size_t nitems, motion_columns_t *out, diag_t *err)
{
    memset(out, 0, sizeof *out);
    lower_t *lw = ctx_samples_ready(s, span, err);
    if (!lw)
        return -1;
    /* one column per scalar, one per component of a vector */
    size_t n = 0;
    for (size_t i = 0; i < nitems; i++)
        n += items[i].dim ? items[i].dim : 1;
    const expr_t **nodes = xcalloc(n + 1, sizeof *nodes);
    const ast_expr_t **exprs = xcalloc(n + 1, sizeof *exprs);
    size_t nv = expr_graph_nvars(lower_graph(lw));
    bool *want = xcalloc(nv + 1, sizeof *want); /* dropped reactions */
    const ast_expr_t *wanting = NULL, *speeding = NULL;
    const nh_system_t *sys = lower_system(lw);
    bool speeds_state = s->samples_method == EOM_MAGGI ||
                        s->samples_method == EOM_GIBBS_APPELL,
         rates = false;
    int rc = 0;
    for (size_t i = 0, c = 0; i < nitems && rc == 0; i++) {
        value_t v;
        if (motion_lower_item(lw, &items[i], &v, err)) {
            rc = -1;
            break;
        }
        if (lower_needs_lambda(lw, &v) &&
            (s->samples_method != EOM_MULTIPLIERS &&
             s->samples_method != EOM_SECOND_KIND)) {
            rc = diag_error(err, items[i].e->span,
                            "the samples were made with the equations %s, "
                            "which have no multipliers",
                            eom_method_name((eom_method_t)s->samples_method));
            break;
        }
        size_t ncomp = v.dim ? v.dim : 1;
        for (size_t j = 0; j < ncomp; j++, c++) {
            nodes[c] = v.c[j];
            exprs[c] = items[i].e;
        }
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        /* LANGUAGE.md §4: a dropped component's reaction is found at
         * each sample from what the equations recorded (react.h) */
        const uint32_t *dv;
        const char *const *dn;
        size_t nd = lower_dropped_reactions(lw, &dv, &dn);
        for (size_t k = 0; k < nd; k++)
            if (expr_depends(lower_graph(lw), nodes[i], dv[k])) {
                want[dv[k]] = true;
                if (!wanting)
                    wanting = exprs[i];
            }
        /* the speeds follow from the velocities (doc/language.md) */
        for (size_t a = 0; a < sys->m && sys->psi && !speeds_state; a++) {
            bool z = expr_depends(lower_graph(lw), nodes[i], sys->z[a]),
                 zd = expr_depends(lower_graph(lw), nodes[i], sys->zd[a]);
            if ((z || zd) && !speeding)
                speeding = exprs[i];
            rates |= zd;
        }
    }
    struct eom_velsolver *vs = NULL;
    struct react *rx = NULL;
    if (rc == 0 && speeding && !(vs = ctx_velsolver(s, err)))
        rc = -1;
    if (rc == 0 && wanting && !(rx = ctx_react(s, err)))
        rc = -1;
    if (rc) {
        free(nodes);
        free(exprs);
        free(want);
        return -1;
    }
    expr_graph_t *g = lower_graph(lw);
    tape_t *tp = tape_compile(g, nodes, n, expr_graph_nvars(g));
    double *work = xcalloc(tape_work_size(tp) + 1, sizeof *work);
    double *scratch = xcalloc(s->samples.width + 1, sizeof *scratch);
    double *vals = xcalloc(n + 1, sizeof *vals);
    out->n = n;
    out->titles = xcalloc(n + 1, sizeof *out->titles);
    out->col = xcalloc(n + 1, sizeof *out->col);
    for (size_t i = 0, c = 0; i < nitems; i++) {
        char *text = ctx_span_text(s, items[i].e->span);
        if (!items[i].dim) {
            out->titles[c++] = text;
            continue;
        }
        for (unsigned j = 0; j < items[i].dim; j++) {
            size_t len = strlen(text) + 16;
            out->titles[c] = xmalloc(len);
            snprintf(out->titles[c++], len, "%s[%u]", text, j + 1);
        }
        free(text);
    }
    for (size_t i = 0; i < n; i++)
        out->col[i] = xcalloc(s->samples.n + 1, sizeof *out->col[i]);
    for (size_t k = 0; k < s->samples.n && rc == 0; k++) {
        const double *row = s->samples.data + k * s->samples.width;
        if (rx || vs) {
            memcpy(scratch, row, s->samples.width * sizeof *scratch);
            row = scratch;
        }
        if (vs && eom_velsolver_speed_rates(vs, scratch, rates, err) != 0) {
            char state[1024], msg[DIAG_MSG_MAX];
            ctx_describe_state(s, scratch, state, sizeof state);
            snprintf(msg, sizeof msg, "%s", err->msg);
            diag_clear(err);
            rc = diag_error(err, speeding->span,
                            "under %s the speeds follow from the velocities "
                            "through the kinematic equations, but %s in "
                            "sample %zu%s",
                            eom_method_name((eom_method_t)s->samples_method),
                            msg, k + 1, state);
            break;
        }
        if (rx) {
            if (react_fill(rx, scratch, want, err) != 0) {
                char state[1024], msg[DIAG_MSG_MAX];
                ctx_describe_state(s, row, state, sizeof state);
                snprintf(msg, sizeof msg, "%s", err->msg);
                diag_clear(err);
                rc = diag_error(err, wanting->span, "%s in sample %zu%s",
                                msg, k + 1, state);
                break;
            }
        }
        tape_eval(tp, row, vals, work);
        for (size_t i = 0; i < n; i++) {
            if (!isfinite(vals[i])) {
                char state[1024], num[32];
                ctx_describe_state(s, row, state, sizeof state);
                rc = diag_error(err, exprs[i]->span,
                                "the value is not finite (%s) in sample %zu%s",
                                expr_format_number(vals[i], num, sizeof num),
                                k + 1, state);
                break;
            }
            out->col[i][k] = vals[i] == 0 ? 0.0 : vals[i];
        }
    }
    free(work);
    free(scratch);
    free(vals);
    free(want);
    free(nodes);
    free(exprs);
    tape_free(tp);
    if (rc)
        motion_columns_free(out);
    return rc;
}

static int write_columns(ctx_t *s, const ast_stmt_t *st, bool plot,
                         diag_t *err)
{
    /* x first when given */
    const ast_expr_t *x = plot ? st->u.output.vs : NULL;
    size_t nitems = st->u.output.n + (x ? 1 : 0);
    motion_item_t *items = xcalloc(nitems, sizeof *items);
    if (x)
        items[0].e = x;
    for (size_t i = 0; i < st->u.output.n; i++)
        items[i + (x ? 1 : 0)].e = st->u.output.items[i];
    motion_columns_t c;
    int crc = motion_columns(s, st->span, items, nitems, &c, err);
    free(items);
    if (crc)
        return -1;
    /* plot: x defaults to t, put in front */
    if (plot && !st->u.output.vs) {
        const nh_system_t *sys = lower_system(s->lw);
        c.titles = xrealloc(c.titles, (c.n + 1) * sizeof *c.titles);
        c.col = xrealloc(c.col, (c.n + 1) * sizeof *c.col);
        memmove(c.titles + 1, c.titles, c.n * sizeof *c.titles);
        memmove(c.col + 1, c.col, c.n * sizeof *c.col);
        c.titles[0] = xstrdup("t");
        c.col[0] = xcalloc(s->samples.n, sizeof *c.col[0]);
        for (size_t k = 0; k < s->samples.n; k++)
            c.col[0][k] = s->samples.data[k * s->samples.width + sys->t];
        c.n++;
    }
    plot_columns_t pc = {c.n, s->samples.n, (const char *const *)c.titles,
                         (const double *const *)c.col, NULL,
                         s->samples.section != NULL};
    /* `table > "file"` is the session's redirection of s->out, as for
     * every printing statement; `plot` names its own file, whose
     * extension chooses the image; without one, a notebook gets SVG. */
    const char *file = st->to_file.name;
    int rc = 0;
    if (plot && !file && s->svg_plots) {
        s->out_kind = CTX_OUT_SVG;
        free(s->plot_png);
        free(s->plot_pdf);
        rc = plot_draw_svg(&pc, s->out, &s->plot_png, &s->plot_pdf, err);
    } else if (plot && file &&
               ctx_check_output(s, file, st->to_file.span, err)) {
        rc = -1;
    } else if (plot) {
        rc = plot_draw(&pc, file, s->out, err);
    } else {
        plot_table(&pc, s->out);
    }
    motion_columns_free(&c);
    if (rc != 0 && err->set && err->span.file == SRC_NO_FILE)
        err->span = file ? st->to_file.span : st->span;
    return rc;
}

int motion_table(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    return write_columns(s, st, false, err);
}

int motion_plot(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    return write_columns(s, st, true, err);
}
