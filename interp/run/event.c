/*
 * event.c — the event function, the interpolant of a step and the root
 * finder of `until` and `sample at` (event.h, LANGUAGE.md §6.1).
 *
 * Why Newton on re-integrated steps, seeded by an interpolant.  The time
 * of an event must be that of the integrator's solution to 1e-12
 * relative, and GSL's steppers have no dense output.  A trial time t in
 * the step [t0, t1] is therefore probed by integrating again from
 * (t0, y0) to t (sim.c): the result is the integrator's solution there,
 * to its tolerance, and the probe costs one step.  Bracketing methods on
 * such probes (bisection, Illinois) need 5–40 of them per event; Newton's
 * method with the exact rate dg/dt (the event function's total time
 * derivative, LANGUAGE.md §3.3, evaluated on the completed value vector)
 * needs one or two when it starts close.  The start comes from the
 * Hermite interpolant of the step (and of the step before it), built from
 * the states and rates the steppers computed: its zero is within
 * ~h⁶/5000·|y⁽⁶⁾| of the event, and the Newton correction from a probe
 * there has an error |g''/2g'|·δ², below the tolerance when δ is — so
 * most events cost the one probe.  The bracket of the step is kept, so a
 * Newton step that leaves it, or converges slowly (a tangential
 * crossing, a discontinuous g), gives way to the Illinois point.
 *
 * Must not: print; allocate after the constructors.
 */
#include "interp/run/event.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"
#include "interp/expr/tape.h"

/* ---- the event function ------------------------------------------------- */

struct event_fn {
    tape_t *tg;     /* g alone: what a step's end needs */
    tape_t *tgd;    /* g and its rate: what a probe needs */
    double *work;
    double out[2];
    bool completion; /* g reads a variable eom_accel writes */
    bool rate;
    /* event_fn_eval_along: the derivatives of g's inputs along the
     * motion (a row of one per variable of the graph), which of them is
     * the state's (its index, or -1), and the tangent's buffers */
    double *dvars, *dwork, dout[1];
    const uint32_t *in;
    size_t nin;
    long *in_state;
};

event_fn_t *event_fn_new(const nh_system_t *sys, const expr_t *g,
                         const uint32_t *sv, size_t ns)
{
    expr_graph_t *gr = sys->g;
    size_t nv = expr_graph_nvars(gr);
    event_fn_t *f = xcalloc(1, sizeof *f);
    /* What the ODE state and the caller fill in: the state, t and the
     * parameters; anything else g reads is written by eom_accel. */
    bool *input = xcalloc(nv + 1, sizeof *input);
    for (size_t k = 0; k < ns; k++)
        input[sv[k]] = true;
    for (size_t k = 0; k < sys->np; k++)
        input[sys->p[k]] = true;
    input[sys->t] = true;
    f->tg = tape_compile(gr, &g, 1, nv);
    f->in = tape_inputs(f->tg, &f->nin);
    for (size_t k = 0; k < f->nin; k++)
        f->completion |= !input[f->in[k]];
    free(input);
    f->dvars = xcalloc(nv + 1, sizeof *f->dvars);
    f->dwork = xcalloc(tape_work_size(f->tg) + 1, sizeof *f->dwork);
    f->in_state = xcalloc(f->nin + 1, sizeof *f->in_state);
    for (size_t k = 0; k < f->nin; k++) {
        f->in_state[k] = -1;
        for (size_t j = 0; j < ns; j++)
            if (sv[j] == f->in[k])
                f->in_state[k] = (long)j;
        if (f->in[k] == sys->t)
            f->dvars[f->in[k]] = 1.0;
    }
    /* dg/dt: q → q', q' → q'', z → z', t → 1; parameters constant.  An
     * acceleration or a multiplier in g has no rate here (no q''' or λ'). */
    bool accel = false;
    for (size_t i = 0; i < sys->n; i++)
        accel |= expr_depends(gr, g, sys->qdd[i]);
    for (size_t a = 0; a < sys->m; a++)
        accel |= expr_depends(gr, g, sys->zd[a]);
    for (size_t a = 0; a < sys->r; a++)
        accel |= expr_depends(gr, g, sys->lam[a]);
    const expr_t *outs[2] = {g, NULL};
    if (!accel) {
        const expr_t **dvar = xcalloc(nv + 1, sizeof *dvar);
        for (size_t i = 0; i < sys->n; i++) {
            dvar[sys->q[i]] = expr_var(gr, sys->qd[i]);
            dvar[sys->qd[i]] = expr_var(gr, sys->qdd[i]);
        }
        for (size_t a = 0; a < sys->m; a++)
            dvar[sys->z[a]] = expr_var(gr, sys->zd[a]);
        dvar[sys->t] = expr_num(gr, 1.0);
        outs[1] = expr_dt(gr, g, dvar);
        free(dvar);
        f->rate = true;
    }
    f->tgd = tape_compile(gr, outs, f->rate ? 2 : 1, nv);
    size_t w = tape_work_size(f->tg);
    if (tape_work_size(f->tgd) > w)
        w = tape_work_size(f->tgd);
    f->work = xcalloc(w + 1, sizeof *f->work);
    return f;
}

void event_fn_free(event_fn_t *f)
{
    if (!f)
        return;
    tape_free(f->tg);
    tape_free(f->tgd);
    free(f->work);
    free(f->dvars);
    free(f->dwork);
    free(f->in_state);
    free(f);
}

bool event_fn_needs_completion(const event_fn_t *f) { return f->completion; }

bool event_fn_has_rate(const event_fn_t *f) { return f->rate; }

void event_fn_eval(event_fn_t *f, const double *vars, double *g, double *dg)
{
    if (!dg || !f->rate) {
        tape_eval(f->tg, vars, f->out, f->work);
        *g = f->out[0];
        if (dg)
            *dg = NAN;
        return;
    }
    tape_eval(f->tgd, vars, f->out, f->work);
    *g = f->out[0];
    *dg = f->out[1];
}

void event_fn_eval_along(event_fn_t *f, const double *vars,
                         const double *ydot, double *g, double *dg)
{
    for (size_t k = 0; k < f->nin; k++)
        if (f->in_state[k] >= 0)
            f->dvars[f->in[k]] = ydot[f->in_state[k]];
    tape_eval_tangent(f->tg, vars, f->dvars, 1, f->out, f->dout, f->work,
                      f->dwork);
    *g = f->out[0];
    *dg = f->dout[0];
}

/* ---- the interpolant ------------------------------------------------------ */

void event_interp_init(event_interp_t *ip, size_t ns)
{
    memset(ip, 0, sizeof *ip);
    ip->ns = ns;
    ip->c = xcalloc(6 * (ns ? ns : 1), sizeof *ip->c);
}

void event_interp_free(event_interp_t *ip)
{
    free(ip->c);
    memset(ip, 0, sizeof *ip);
}

/* The divided differences of the confluent Newton form on the nodes
 * z = (t0, t0, t1, t1[, t2, t2]): f[z_i, z_i] is the rate there. */
void event_interp_build(event_interp_t *ip, size_t nodes, const double *t,
                        const double *const *y, const double *const *f)
{
    size_t m = 2 * nodes;
    ip->nodes = nodes;
    for (size_t i = 0; i < m; i++)
        ip->z[i] = t[i / 2];
    for (size_t k = 0; k < ip->ns; k++) {
        double d[6] = {0};
        for (size_t i = 0; i < m; i++)
            d[i] = y[i / 2][k];
        double *c = ip->c + 6 * k;
        c[0] = d[0];
        /* column j: d[i] ← f[z_{i-j} .. z_i], from the bottom up */
        for (size_t j = 1; j < m; j++) {
            for (size_t i = m - 1; i >= j; i--) {
                if (j == 1 && i % 2 == 1)
                    d[i] = f[i / 2][k];
                else
                    d[i] = (d[i] - d[i - 1]) / (ip->z[i] - ip->z[i - j]);
                if (i == j)
                    break;
            }
            c[j] = d[j];
        }
    }
}

void event_interp_eval(const event_interp_t *ip, double t, double *y)
{
    size_t m = 2 * ip->nodes;
    for (size_t k = 0; k < ip->ns; k++) {
        const double *c = ip->c + 6 * k;
        double v = c[m - 1];
        for (size_t j = m - 1; j-- > 0;)
            v = v * (t - ip->z[j]) + c[j];
        y[k] = v;
    }
}

/* ---- the root finder ------------------------------------------------------- */

/* The safety factor on the estimated error of a Newton correction. */
#define EVENT_NEWTON_SAFETY 4.0

static bool event_inside(double x, double a, double b)
{
    return a < b ? x > a && x < b : x > b && x < a;
}

int event_locate(event_probe_fn probe, void *ctx, double ta, double ga,
                 double tb, double gb, double guess, double tol, double gtol,
                 size_t max_probes, event_root_t *root)
{
    /* a, b: the bracket; fa, fb: the values regula falsi uses there
     * (Illinois halves the retained end's); side: which end the last
     * probe replaced (-1 a, +1 b, 0 none yet). */
    double a = ta, b = tb, fa = ga, fb = gb, x = guess;
    double last_newton = INFINITY;
    int side = 0;
    bool newton_ok = true;
    /* the bracket's width two probes ago: when it has not halved since,
     * the next probe is the midpoint (a jump, a multiple zero), so that
     * it at least halves every other probe */
    double width[2] = {INFINITY, INFINITY};
    memset(root, 0, sizeof *root);
    root->t = NAN;
    root->newton = NAN;
    while (root->probes < max_probes) {
        bool slow = fabs(b - a) > 0.5 * width[root->probes % 2];
        width[root->probes % 2] = fabs(b - a);
        if (slow && !newton_ok) {
            x = 0.5 * (a + b);
        } else if (!newton_ok || !event_inside(x, a, b)) {
            /* the Illinois point, or the midpoint when it falls on an end */
            x = (a * fb - b * fa) / (fb - fa);
            if (!event_inside(x, a, b))
                x = 0.5 * (a + b);
        }
        if (!event_inside(x, a, b)) {
            /* the bracket holds no double between its ends */
            root->newton = 0.0;
            return 0;
        }
        double g, dg;
        root->probes++;
        root->t = x;
        if (probe(ctx, x, &g, &dg) != 0)
            return -1;
        root->g = g;
        root->dg = dg;
        if (g == 0) {
            root->newton = 0.0;
            return 0;
        }
        if (isnan(g))
            return -1;
        double newton = isfinite(dg) && dg != 0 ? -g / dg : NAN;
        root->newton = newton;
        /* the time that g's own accuracy GTOL leaves open */
        if (isfinite(newton) && gtol > 0)
            tol = fmax(tol, gtol / fabs(dg));
        if (isfinite(newton)) {
            /* the curvature from the divided differences of the probe and
             * the bracket's ends (their true values ga, gb are those of
             * the probes or of the step's ends that made them) */
            double ka = (g - ga) / (x - ta), kb = (gb - g) / (tb - x);
            double g2 = fmax(fabs(2.0 * (dg - ka) / (x - ta)),
                             fabs(2.0 * (kb - dg) / (tb - x)));
            double err = EVENT_NEWTON_SAFETY * fabs(g2 / (2.0 * dg)) *
                         newton * newton;
            if (isfinite(err) && err <= tol && fabs(newton) <= fabs(b - a))
                return 0;
        }
        /* the bracket: the probe replaces the end of its own sign */
        if ((g > 0) == (ga > 0)) {
            a = x;
            ta = x;
            ga = g;
            fa = g;
            if (side == -1)
                fb *= 0.5;
            side = -1;
        } else {
            b = x;
            tb = x;
            gb = g;
            fb = g;
            if (side == +1)
                fa *= 0.5;
            side = +1;
        }
        if (fabs(b - a) <= tol) {
            root->newton = 0.0;
            return 0;
        }
        newton_ok = isfinite(newton) && fabs(newton) <= 0.5 * last_newton;
        last_newton = isfinite(newton) ? fabs(newton) : INFINITY;
        if (newton_ok)
            x = x + newton;
    }
    return -1;
}

double event_seed(event_probe_fn probe, void *ctx, double ta, double ga,
                  double tb, double gb)
{
    event_root_t r;
    double res = 4.0 * DBL_EPSILON * fmax(fabs(ta), fabs(tb));
    if (event_locate(probe, ctx, ta, ga, tb, gb, NAN, res, 0.0, 200, &r) !=
        0)
        return NAN;
    return r.t;
}
