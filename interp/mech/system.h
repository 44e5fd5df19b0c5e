/*
 * system.h — a mechanical system as expression-graph nodes: what the
 * equations of motion (eom.h), check (check.h) and the simulation need to
 * know of a model, and nothing of its syntax.
 *
 * The interpreter builds one nh_system_t each time the model changes: it
 * declares the graph variables (for every coordinate q, q', q''; for every
 * speed z, z'; every parameter; t; one multiplier per constraint) and
 * lowers the declarations into nodes.  A value vector `vars` of
 * expr_graph_nvars(g) doubles then holds a full state: coordinates,
 * velocities, speeds, parameters and t as inputs, and q'', z', lambda as
 * outputs written by eom_accel.
 *
 * Ownership: the interpreter owns the system and its graph and arrays; the
 * eom and check modules borrow it and must not outlive it.
 */
#ifndef NH_SYSTEM_H
#define NH_SYSTEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interp/expr/expr.h"
#include "lang/source.h"

/* The print ranks of the variables (expr_var_set_rank), which order the
 * factors of a printed product as LANGUAGE.md §7.1 asks: numbers,
 * parameters, t, coordinates, velocities and speeds, accelerations (q''
 * and z'), multipliers.  The display of equations also splits rows by
 * them: the terms with an acceleration go on the left. */
enum {
    NH_RANK_PARAM = 1,
    NH_RANK_TIME,
    NH_RANK_COORD,
    NH_RANK_VELOCITY,
    NH_RANK_ACCEL,
    NH_RANK_MULTIPLIER
};

typedef struct nh_particle {
    const char *name;
    src_span_t span;
    const expr_t *mass;
    size_t dim;                /* 2 or 3 */
    const expr_t *pos[3];      /* position as functions of q (and t) */
    const expr_t *force[3];    /* sum of `force P = ...`; NULL entries = 0 */
} nh_particle_t;

/* A rigid body (LANGUAGE.md §4.1): what the equations need of it. */
typedef struct nh_body {
    const char *name;
    const expr_t *mass;
    const expr_t *pos[3];      /* centre of mass, inertial axes: of q, t */
    const expr_t *axis[3][3];  /* the axes of wloc and inertia: the
                                * body's frame's unit vectors, or its
                                * parent's (rigid_body_axes) */
    const expr_t *omega[3];    /* angular velocity, inertial axes, and */
    const expr_t *wloc[3];     /* the same on those axes: both linear in
                                * q' (composed along the body's frames) */
    const expr_t *waxes[3];    /* the angular velocity of those axes, on
                                * them: wloc, or the parent frame's */
    const expr_t *inertia[6];  /* [Ixx, Iyy, Izz, Ixy, Iyz, Izx] about the
                                * centre of mass, on those axes */
} nh_body_t;
/* nh_system_t.cleft of a constraint without a velocity written alone on
 * its left side, and of a vector constraint's component (LANGUAGE.md §4). */
enum { NH_CLEFT_NONE = -1, NH_CLEFT_COMPONENT = -2 };

typedef struct nh_system {
    expr_graph_t *g;

    size_t n;                  /* coordinates, in declaration order */
    const char *const *qname;  /* "x" */
    const uint32_t *q, *qd, *qdd; /* variables of q_i, q_i', q_i'' */

    size_t m;                  /* speeds (0: none declared) */
    const char *const *zname;
    const uint32_t *z, *zd;    /* variables of z_a, z_a' */

    size_t np;                 /* parameters */
    const char *const *pname;
    const uint32_t *p;

    /* Inputs (LANGUAGE.md §7.2.1): variables that enter as parameters
     * do (a derivative of 0), what `linearize` differentiates by for B;
     * never in the kinetic energy (the lowering refuses it). */
    size_t ni;
    const char *const *iname;
    const uint32_t *in;

    uint32_t t;                /* the variable of time */

    /* The Lagrangian L(q, q', t) = T - V, and its parts when the model
     * gave them (T, V are NULL when the model used `lagrangian`). */
    const expr_t *L, *T, *V;
    bool T_only_particles;     /* T is exactly the particles' energy */
    bool T_only_bodies;        /* T is exactly the bodies' and particles'
                                * energies, with at least one body */

    /* Generalized forces Q_i (n entries, never NULL): `force` on
     * coordinates plus dot(F, ∂P/∂q_i) of forces on particles.  Potential
     * forces are not in Q: they are in L. */
    const expr_t *const *Q;

    size_t r;                  /* constraints C^a(q, q', t) = 0 */
    const expr_t *const *C;
    const char *const *cname;  /* user's name or "c1", "c2", ... */
    const src_span_t *cspan;   /* where each was declared */
    const uint32_t *lam;       /* the multiplier variable of each */
    const long *cleft;         /* the coordinate whose velocity alone is
                                  each one's written left side (x' = …),
                                  Voronec's dependent velocity; else
                                  NH_CLEFT_NONE, or NH_CLEFT_COMPONENT
                                  for a component of a vector
                                  constraint, which has no written sides
                                  of its own */

    /* Kinematic equations q_i' = psi_i(q, z, t): NULL when none was
     * declared, else n entries with NULL for a coordinate that has none
     * (maggi and gibbs_appell report it). */
    const expr_t *const *psi;
    const src_span_t *psi_span;

    size_t nparticles;
    const nh_particle_t *particles;

    size_t nbodies;
    const nh_body_t *bodies;
} nh_system_t;

#endif
