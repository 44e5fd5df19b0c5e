/*
 * rigid.h — the kinematics of frames and rigid bodies on expression nodes
 * (LANGUAGE.md §4.1): a frame's unit vectors and angular velocity, a
 * frame turned from another, the velocity of a body's material point and
 * a body's kinetic energy.
 *
 * A frame is kept as its three unit vectors with components on the
 * inertial axes, its angular velocity on the inertial axes, and the same
 * angular velocity on its own axes.  A turned frame is built from its
 * parent in a few nodes: the unit vectors by the rotation of the parent's
 * (Rodrigues' formula), the angular velocity by composition along the
 * chain, omega(A) = omega(P) + ANGLE'·axis — never by differentiating a
 * rotation matrix — and its components on A's own axes by turning the
 * parent's, w_A = Rᵀ w_P + ANGLE'·u.  So a frame costs O(1) new nodes,
 * shared through hash-consing, and a body's rotational energy reads w_A
 * without a dot product with unit vectors that grow along the chain.
 * The composed omega(A) on the inertial axes is a sum that grows by a
 * term a frame (N² terms for a chain of N): rigid_turn leaves it to
 * rigid_omega, for the frames whose omega() is asked for, and the
 * equations take the body's angular velocity as Σ_i w_A,i A.e_i, three
 * terms whatever the chain (rigid_omega_axes; issue 31).
 *
 * Ownership: nodes belong to the caller's graph; the structs are the
 * caller's values.  Must not: know names, spans or the model; print.
 */
#ifndef NH_RIGID_H
#define NH_RIGID_H

#include "interp/expr/expr.h"

typedef struct rigid_frame {
    const expr_t *axis[3][3]; /* axis[i][c]: component c (inertial) of the
                               * unit vector i (x, y, z) */
    const expr_t *omega[3];   /* angular velocity, inertial components
                               * (NULL until rigid_omega made them) */
    const expr_t *wloc[3];    /* the same on the frame's own axes */
    /* The turn from the parent, for rigid_body_axes: the index of its
     * axis when that is x, y or z (-1 for another axis, or none), the
     * parent's unit vectors and own-axes angular velocity, the rate. */
    int turn;
    const expr_t *paxis[3][3], *pwloc[3], *rate;
    const expr_t *u[3]; /* the turn's axis on the parent's axes */
} rigid_frame_t;

/* The inertial frame: unit vectors [1,0,0], [0,1,0], [0,0,1], at rest. */
void rigid_inertial(expr_graph_t *g, rigid_frame_t *out);

/* The frame turned from P by ANGLE (right-handed) about the unit vector
 * U, given by its components on P's axes (normalised by the caller); RATE
 * is ANGLE's time derivative.  When U is a coordinate axis (one component
 * 1, the others 0) the formulas fold to the plane rotation: for z,
 * A.x = cos·P.x + sin·P.y, A.y = −sin·P.x + cos·P.y, A.z = P.z. */
void rigid_turn(expr_graph_t *g, const rigid_frame_t *p,
                const expr_t *const u[3], const expr_t *angle,
                const expr_t *rate, rigid_frame_t *out);

/* F's omega on the inertial axes, composed: omega(P) + ANGLE'·axis from
 * its parent P's, which must have them (the inertial frame's are 0). */
void rigid_omega(expr_graph_t *g, const rigid_frame_t *p, rigid_frame_t *f);

/* F's angular velocity on the inertial axes as Σ_i w_i F.e_i from its
 * own-axes components: the same vector, in three terms, into OUT. */
void rigid_omega_axes(expr_graph_t *g, const rigid_frame_t *f,
                      const expr_t *out[3]);

/* dot(a, b) of two N-vectors; a × b of two 3-vectors into OUT (which may
 * not alias A or B). */
const expr_t *rigid_dot(expr_graph_t *g, const expr_t *const *a,
                        const expr_t *const *b, unsigned n);
void rigid_cross(expr_graph_t *g, const expr_t *const a[3],
                 const expr_t *const b[3], const expr_t *out[3]);

/* The velocity of the material point at X of a body whose centre of
 * mass G moves with GDOT, in frame F: GDOT + omega(F) × (X − G) (F's
 * omega made by rigid_omega). */
void rigid_point_velocity(expr_graph_t *g, const rigid_frame_t *f,
                          const expr_t *const x[3], const expr_t *const G[3],
                          const expr_t *const Gdot[3], const expr_t *out[3]);

/* I·V for the symmetric matrix I of the six entries [Ixx, Iyy, Izz, Ixy,
 * Iyz, Izx] and a 3-vector V, into OUT (which may not alias V). */
void rigid_inertia_times(expr_graph_t *g, const expr_t *const inertia[6],
                         const expr_t *const v[3], const expr_t *out[3]);

/* The axes to take the rotation of a body with INERTIA fixed in F on:
 * F's, or, when F is turned from its parent about a coordinate axis and
 * the inertia is symmetric about that axis (the other two moments the
 * same node, no products of inertia: a wheel about its axle), the
 * parent's — the inertia matrix is the same on both, and the turn's
 * angle (the wheel's rotation) then appears nowhere.  AXIS gets their
 * unit vectors (as rigid_frame_t's), WLOC the body's angular velocity on
 * them and WAXES the angular velocity of the axes themselves, on them
 * (WLOC again, or the parent's). */
void rigid_body_axes(const rigid_frame_t *f, const expr_t *const inertia[6],
                     expr_graph_t *g, const expr_t *axis[3][3],
                     const expr_t *wloc[3], const expr_t *waxes[3]);

/* A body's kinetic energy M/2·dot(GDOT, GDOT) + ½ wᵀ I w with W its
 * angular velocity on axes where I is the symmetric matrix of the six
 * entries [Ixx, Iyy, Izz, Ixy, Iyz, Izx] (König's theorem). */
const expr_t *rigid_kinetic(expr_graph_t *g, const expr_t *const w[3],
                            const expr_t *mass, const expr_t *const Gdot[3],
                            const expr_t *const inertia[6]);

#endif
