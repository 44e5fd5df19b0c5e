/*
 * mag.h — deciding numerically whether an expression vanishes: values
 * evaluated together with a magnitude (the size of the terms a value is
 * computed from), and sample points near a base point.
 *
 * A quantity that is zero in exact arithmetic comes out as rounding noise
 * of order DBL_EPSILON times its magnitude, so "zero" means small next to
 * its own terms, whatever the model's units.  `check` decides its
 * verdicts this way, and the lowering uses it to drop the components of a
 * vector constraint that vanish identically (LANGUAGE.md §4).
 *
 * Ownership: an expr_mag_t is the caller's value (zero it and set .g);
 * expr_mag_free releases its buffers.  It borrows the graph and the
 * variables of expr_mag_begin.  Must not: change the graph (it reads only
 * nodes that exist), print.
 */
#ifndef NH_EXPR_MAG_H
#define NH_EXPR_MAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interp/expr/expr.h"

enum {
    EXPR_MAG_POINTS = 8,  /* sample points per numeric verdict */
    EXPR_MAG_TRIES = 400, /* attempts to find them */
};
#define EXPR_MAG_ZERO 1e-8    /* |v| <= EXPR_MAG_ZERO * magnitude: zero */
#define EXPR_MAG_NONZERO 1e-5 /* |v| > EXPR_MAG_NONZERO * magnitude: not */
/* The moves of expr_mag_zero_near, relative to 1 + |base|. */
#define EXPR_MAG_NEAR 0.01

typedef struct expr_mag {
    const expr_graph_t *g; /* set by the caller */
    const double *vars;
    double *val, *mag;
    uint32_t *stamp;
    uint32_t cur;
    size_t cap;
    const expr_t **stack;
    size_t sn, scap;
    double *argv;
    size_t acap;
} expr_mag_t;

void expr_mag_free(expr_mag_t *ev);

/* Starts evaluating at VARS (expr_graph_nvars doubles, borrowed until the
 * next call): forgets every value computed before. */
void expr_mag_begin(expr_mag_t *ev, const double *vars);

/* The value of E at the variables of expr_mag_begin, its magnitude in
 * *MAG (may be NULL): the sum of the magnitudes for +, their product for
 * *, mag(base)^p for a positive power, |value| for the other ops. */
double expr_mag_get(expr_mag_t *ev, const expr_t *e, double *mag);

/* 0: zero; 2: clearly not zero; 1: in between (or not finite). */
int expr_mag_class(double v, double m);

/* Uniform in [-1, 1) from the splitmix64 state *S. */
double expr_mag_random(uint64_t *s);

/* Collects up to EXPR_MAG_POINTS points near BASE (NV values) at which
 * every one of the NE expressions is finite, into PTS (EXPR_MAG_POINTS *
 * NV doubles): each variable v with MOVE[v] set moves by up to SPREAD *
 * (1 + |BASE[v]|) (a value that is not finite counts as 0), with SPREAD
 * shrinking from 1 to 0.05 over the attempts so that a narrow domain
 * (sqrt(l^2 - x^2)) is still found; the others keep BASE's value.
 * Random numbers come from *SEED.  Returns how many were found. */
size_t expr_mag_sample(expr_mag_t *ev, uint64_t *seed, const double *base,
                       const bool *move, size_t nv, const expr_t *const *e,
                       size_t ne, double *pts);

/* Whether all NE expressions vanish identically near BASE (as
 * expr_mag_sample): 1 when each is the constant 0 (*NPTS = 0) or each is
 * zero at every sample point (*NPTS of them, at least one), 0 when one is
 * clearly not zero at a point, -1 when undecided (no point, or a value
 * neither clearly zero nor clearly not). */
int expr_mag_zero(expr_mag_t *ev, uint64_t *seed, const double *base,
                  const bool *move, size_t nv, const expr_t *const *e,
                  size_t ne, double *pts, size_t *npts);

/* The same, with every move at most EXPR_MAG_NEAR * (1 + |BASE[v]|): a
 * verdict on the region of BASE, not on a neighbourhood wide enough to
 * test a property of the model.  An expression that is analytic where it
 * is defined vanishes near BASE only if it vanishes identically; one made
 * with sqrt, abs or norm (the height r*|sin(theta)| of a contact) can
 * vanish on one side of a fold and not on the other, and the lowering
 * drops a constraint's component where the motion is (LANGUAGE.md §4).
 * It stops at the first point where one is clearly not zero (*NPTS
 * counts the points up to it): the lowering asks it before every
 * statement that moved the state, of every component it judged. */
int expr_mag_zero_near(expr_mag_t *ev, uint64_t *seed, const double *base,
                       const bool *move, size_t nv, const expr_t *const *e,
                       size_t ne, double *pts, size_t *npts);

#endif
