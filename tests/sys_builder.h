/*
 * sys_builder.h — test scaffolding: build an nh_system_t (interp/mech/system.h)
 * without the language front end, from expressions written as strings in
 * a small subset of the language (numbers, names, q' q'' z', + - * / ^,
 * unary minus, parentheses, the functions of LANGUAGE.md §3.4 of one or
 * two arguments, pi).
 *
 *   sb_t *b = sb_new();
 *   sb_param(b, "m", 1.0);
 *   sb_coord(b, "x"); sb_coord(b, "y");
 *   sb_kinetic(b, "m/2*(x'^2 + y'^2)");
 *   sb_constraint(b, "c1", "x' - y'");   // C = x' - y', written x' = y'
 *   const nh_system_t *sys = sb_system(b);
 *   double *vars = sb_vars(b);           // parameters filled in
 *
 * Declare every coordinate, speed and parameter before the expressions
 * that use them.  Variables are declared in the order of the calls
 * (q, q', q'' per coordinate; z, z' per speed; one multiplier
 * "lambda(NAME)" per constraint; t first of all).
 *
 * Ownership: the builder owns the graph, the system and every array;
 * sb_free releases them all (the vars vectors too).  A malformed string
 * aborts the test program with a message: it is a bug in the test.
 */
#ifndef NH_TESTS_SYS_BUILDER_H
#define NH_TESTS_SYS_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "interp/expr/expr.h"
#include "interp/mech/system.h"

typedef struct sb sb_t;

sb_t *sb_new(void);
void sb_free(sb_t *b); /* accepts NULL */
expr_graph_t *sb_graph(sb_t *b);

/* Declarations; each returns the index of the new object. */
size_t sb_coord(sb_t *b, const char *name);
size_t sb_speed(sb_t *b, const char *name);
size_t sb_param(sb_t *b, const char *name, double value);

/* Energies: kinetic and potential add up; lagrangian excludes them. */
void sb_kinetic(sb_t *b, const char *text);
void sb_potential(sb_t *b, const char *text);
void sb_lagrangian(sb_t *b, const char *text);
/* A generalized force on coordinate NAME (adds up). */
void sb_force(sb_t *b, const char *coord, const char *text);
/* A particle: mass and position (DIM = 2 or 3 strings), optional force
 * (NULL or DIM strings); adds m/2 |P'|² to T and F·∂P/∂q_i to Q_i. */
void sb_particle(sb_t *b, const char *name, const char *mass, size_t dim,
                 const char *const *pos, const char *const *force);
/* A constraint C = 0 (TEXT is C); returns its index. */
size_t sb_constraint(sb_t *b, const char *name, const char *text);
/* A kinematic equation coord' = TEXT. */
void sb_kinematic(sb_t *b, const char *coord, const char *text);

/* Parses TEXT into a node of the builder's graph. */
const expr_t *sb_expr(sb_t *b, const char *text);

/* Finishes the system (after the last declaration).  The builder keeps
 * ownership; calling it again returns the same system. */
const nh_system_t *sb_system(sb_t *b);

/* A fresh value vector (expr_graph_nvars entries, owned by the builder),
 * zero except the parameters. */
double *sb_vars(sb_t *b);
/* The variable of a name as the parser resolves it ("x", "x'", "x''",
 * "u1", "u1'", "m", "t"); aborts when unknown. */
uint32_t sb_var(sb_t *b, const char *name);

/* ---- closed forms shared by the suites ------------------------------ */

/* The nonholonomic bipendulum's accelerations (q = x1, y1, x2, y2) by
 * Benenti eqs. 80–82 (right as printed, seeds/README.md), for masses
 * M1, M2 and constant forces A = (Ax1, Ay1, Ax2, Ay2), at positions Q and
 * velocities QD. */
void sb_bipendulum_benenti(double m1, double m2, const double A[4],
                           const double q[4], const double qd[4],
                           double qdd[4]);

/* The derivation of p, M, h0 and h from the particles and bodies
 * (eom_particle_form) against the derivation from L, compiled and
 * evaluated at TRIALS random states of VARS (coordinates in [-1.5, 1.5],
 * velocities in [-2, 2], t in [0, 3], from SEED; the rest as given):
 * the largest of |by the particles - from L| / (1 + |from L|), and in
 * WHERE (SIZE bytes) the object and index where it is ("h0[2]"). */
double sb_forms_differ(const nh_system_t *sys, double *vars, uint64_t seed,
                       int trials, char *where, size_t size);

#endif
