/*
 * mag.c — values with magnitudes, and sample points (see mag.h).
 *
 * Must not: build nodes; print.
 */
#include "interp/expr/mag.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"

void expr_mag_free(expr_mag_t *ev)
{
    free(ev->val);
    free(ev->mag);
    free(ev->stamp);
    free(ev->stack);
    free(ev->argv);
}

/* Makes room for every node of the graph so far (nodes built after
 * expr_mag_begin are new, hence not stamped). */
static void mag_reserve(expr_mag_t *ev)
{
    size_t count = expr_graph_count(ev->g);
    if (count > ev->cap) {
        size_t old = ev->cap;
        ev->val = xrealloc(ev->val, count * sizeof *ev->val);
        ev->mag = xrealloc(ev->mag, count * sizeof *ev->mag);
        ev->stamp = xrealloc(ev->stamp, count * sizeof *ev->stamp);
        memset(ev->stamp + old, 0, (count - old) * sizeof *ev->stamp);
        ev->cap = count;
    }
}

void expr_mag_begin(expr_mag_t *ev, const double *vars)
{
    mag_reserve(ev);
    if (++ev->cur == 0) {
        memset(ev->stamp, 0, ev->cap * sizeof *ev->stamp);
        ev->cur = 1;
    }
    ev->vars = vars;
}

static void mag_node(expr_mag_t *ev, const expr_t *x)
{
    double v, m;
    size_t n = x->nargs;
    xgrow(&ev->argv, &ev->acap, n, sizeof *ev->argv);
    for (size_t i = 0; i < n; i++)
        ev->argv[i] = ev->val[x->args[i]->id];
    switch (x->op) {
    case EXPR_CONST:
        v = x->value;
        m = fabs(v);
        break;
    case EXPR_VAR:
        v = ev->vars[x->var];
        m = fabs(v);
        break;
    case EXPR_ADD:
        v = expr_apply(x->op, ev->argv, n);
        m = 0;
        for (size_t i = 0; i < n; i++)
            m += ev->mag[x->args[i]->id];
        break;
    case EXPR_MUL:
        v = expr_apply(x->op, ev->argv, n);
        m = 1;
        for (size_t i = 0; i < n; i++)
            m *= ev->mag[x->args[i]->id];
        break;
    case EXPR_POW:
        v = expr_apply(x->op, ev->argv, n);
        m = ev->argv[1] > 0 ? pow(ev->mag[x->args[0]->id], ev->argv[1])
                            : fabs(v);
        break;
    default:
        v = expr_apply(x->op, ev->argv, n);
        m = fabs(v);
        break;
    }
    if (!(m >= fabs(v))) /* also when m is NaN */
        m = fabs(v);
    ev->val[x->id] = v;
    ev->mag[x->id] = m;
    ev->stamp[x->id] = ev->cur;
}

/* An explicit stack, not recursion: derivatives can make deep graphs. */
double expr_mag_get(expr_mag_t *ev, const expr_t *e, double *mag)
{
    if (e->id >= ev->cap)
        mag_reserve(ev);
    if (ev->stamp[e->id] != ev->cur) {
        ev->sn = 0;
        xgrow(&ev->stack, &ev->scap, 1, sizeof *ev->stack);
        ev->stack[ev->sn++] = e;
        while (ev->sn) {
            const expr_t *x = ev->stack[ev->sn - 1];
            if (ev->stamp[x->id] == ev->cur) {
                ev->sn--;
                continue;
            }
            bool ready = true;
            for (uint32_t i = 0; i < x->nargs; i++) {
                const expr_t *a = x->args[i];
                if (ev->stamp[a->id] != ev->cur) {
                    xgrow(&ev->stack, &ev->scap, ev->sn + 1,
                          sizeof *ev->stack);
                    ev->stack[ev->sn++] = a;
                    ready = false;
                }
            }
            if (ready) {
                mag_node(ev, x);
                ev->sn--;
            }
        }
    }
    if (mag)
        *mag = ev->mag[e->id];
    return ev->val[e->id];
}

int expr_mag_class(double v, double m)
{
    if (!isfinite(v) || !isfinite(m))
        return 1;
    if (fabs(v) <= EXPR_MAG_ZERO * m)
        return 0;
    return fabs(v) > EXPR_MAG_NONZERO * m ? 2 : 1;
}

double expr_mag_random(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-52 - 1.0;
}

/* One attempt: a point near BASE moved by SPREAD (expr_mag_sample) into
 * PT, evaluated there; whether every one of the NE expressions is finite
 * at it (their values then stay in EV). */
static bool mag_try(expr_mag_t *ev, uint64_t *seed, const double *base,
                    const bool *move, size_t nv, const expr_t *const *e,
                    size_t ne, double *pt, double spread)
{
    memcpy(pt, base, nv * sizeof *pt);
    for (size_t v = 0; v < nv; v++) {
        if (!move[v])
            continue;
        double b = isfinite(base[v]) ? base[v] : 0;
        pt[v] = b + spread * (1 + fabs(b)) * expr_mag_random(seed);
    }
    expr_mag_begin(ev, pt);
    bool ok = true;
    for (size_t j = 0; j < ne && ok; j++) {
        double m;
        double v = expr_mag_get(ev, e[j], &m);
        ok = isfinite(v) && isfinite(m);
    }
    return ok;
}

/* expr_mag_sample with the moves of the attempts cycling through the
 * NS spreads SPREADS. */
static size_t mag_sample(expr_mag_t *ev, uint64_t *seed, const double *base,
                         const bool *move, size_t nv, const expr_t *const *e,
                         size_t ne, double *pts, const double *spreads,
                         size_t ns)
{
    size_t got = 0;
    for (int tries = 0; tries < EXPR_MAG_TRIES && got < EXPR_MAG_POINTS;
         tries++)
        if (mag_try(ev, seed, base, move, nv, e, ne, pts + got * nv,
                    spreads[(size_t)tries % ns]))
            got++;
    return got;
}

size_t expr_mag_sample(expr_mag_t *ev, uint64_t *seed, const double *base,
                       const bool *move, size_t nv, const expr_t *const *e,
                       size_t ne, double *pts)
{
    static const double spreads[] = {1.0, 0.5, 0.2, 0.05};
    return mag_sample(ev, seed, base, move, nv, e, ne, pts, spreads, 4);
}

/* expr_mag_zero and expr_mag_zero_near: the points of mag_sample, each
 * judged as it is found (the values are the same ones); with EARLY, the
 * search ends at the first point where an expression is clearly not
 * zero, as the verdict is then 0 whatever the other points give. */
static int mag_zero(expr_mag_t *ev, uint64_t *seed, const double *base,
                    const bool *move, size_t nv, const expr_t *const *e,
                    size_t ne, double *pts, size_t *npts,
                    const double *spreads, size_t ns, bool early)
{
    bool all_const0 = true;
    for (size_t j = 0; j < ne && all_const0; j++)
        all_const0 = expr_is_const(e[j], 0);
    *npts = 0;
    if (all_const0)
        return 1;
    size_t got = 0;
    bool any_nonzero = false, any_unsure = false;
    for (int tries = 0; tries < EXPR_MAG_TRIES && got < EXPR_MAG_POINTS &&
                        !(early && any_nonzero);
         tries++) {
        if (!mag_try(ev, seed, base, move, nv, e, ne, pts + got * nv,
                     spreads[(size_t)tries % ns]))
            continue;
        got++;
        for (size_t j = 0; j < ne; j++) { /* stamped: no evaluation */
            double m, v = expr_mag_get(ev, e[j], &m);
            int c = expr_mag_class(v, m);
            any_nonzero |= c == 2;
            any_unsure |= c == 1;
        }
    }
    *npts = got;
    if (any_nonzero)
        return 0;
    return any_unsure || got == 0 ? -1 : 1;
}

int expr_mag_zero(expr_mag_t *ev, uint64_t *seed, const double *base,
                  const bool *move, size_t nv, const expr_t *const *e,
                  size_t ne, double *pts, size_t *npts)
{
    static const double spreads[] = {1.0, 0.5, 0.2, 0.05};
    return mag_zero(ev, seed, base, move, nv, e, ne, pts, npts, spreads, 4,
                    false);
}

int expr_mag_zero_near(expr_mag_t *ev, uint64_t *seed, const double *base,
                       const bool *move, size_t nv, const expr_t *const *e,
                       size_t ne, double *pts, size_t *npts)
{
    static const double spreads[] = {EXPR_MAG_NEAR};
    return mag_zero(ev, seed, base, move, nv, e, ne, pts, npts, spreads, 1,
                    true);
}
