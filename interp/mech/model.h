/*
 * model.h — the declarations and the state of a session, as written.
 *
 * The model records what the user declared (parameters with their values,
 * coordinates, speeds, lets, energies, particles, forces, constraints,
 * kinematic equations, frames, bodies, gravity, the draws of `animate`),
 * the chosen equations, the current and the initial state.  It holds AST pointers, not expression nodes: the mechanical
 * system (system.h) is lowered from it afresh whenever it changes, which is
 * how redeclaring a name re-derives everything that used it (a change that
 * only adds declarations extends the lowering instead: lower_extend).
 *
 * A statement never mutates the session's model in place: it works on a
 * model_clone() and the session swaps the clone in only when the statement
 * succeeded, so a failing statement changes nothing.
 *
 * Cloning is O(1) in the declarations, so that a statement costs the same
 * in a model of 10 declarations as in one of 10^5 (LANGUAGE.md §9: work
 * grows about linearly with the number of statements).  The declaration
 * arrays (params … kinematics, frames, bodies, draws) are shared between a model
 * and its clones, copy on write: an append by one holder goes into the
 * shared buffer when no other holder has appended there (the others see
 * only their own n entries), and anything else — an append after another
 * holder's, a replacement — first copies the buffer.  So an entry that two
 * holders see never changes, and two arrays with the same buffer agree on
 * their common prefix (lower_extend relies on it).  Write an element of a
 * declaration array only through model_set_*(); the state arrays (q, qd,
 * z, q0, qd0, z0; at most SESSION_MAX_COORDS entries) are copied by
 * model_clone and may be written in place.  Names are found through a
 * hash index (model_lookup) shared the same way; see model.c.
 *
 * Ownership: the model owns its arrays (a shared buffer belongs to all
 * its holders: the last model_free frees it); names, spans and AST nodes
 * are borrowed from the arenas of the texts they were written in, which
 * the session keeps for as long as the model refers to them:
 * model_mark_files names those texts, so every field that holds a span, a
 * name or an AST node must be visited there (as every array is in
 * model_clone).
 */
#ifndef NH_MODEL_H
#define NH_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "lang/ast.h"
#include "lang/source.h"

typedef enum model_kind {
    MODEL_NONE,
    MODEL_PARAM,
    MODEL_COORD,
    MODEL_SPEED,
    MODEL_LET,
    MODEL_KINETIC,
    MODEL_POTENTIAL,
    MODEL_LAGRANGIAN,
    MODEL_PARTICLE,
    MODEL_CONSTRAINT,
    MODEL_BUILTIN, /* t, pi */
    MODEL_FRAME,
    MODEL_BODY,
} model_kind_t;

typedef struct model_param {
    const char *name;
    src_span_t span;
    double value;
} model_param_t;

typedef struct model_name {
    const char *name;
    src_span_t span;
} model_name_t;

typedef struct model_let {
    const char *name;
    src_span_t span;
    const ast_stmt_t *stmt; /* STMT_LET */
} model_let_t;

typedef struct model_energy {
    const char *name; /* NULL: not declared */
    src_span_t span;
    const ast_expr_t *value;
} model_energy_t;

typedef struct model_particle {
    const char *name;
    src_span_t span;
    const ast_expr_t *mass, *position;
} model_particle_t;

/* `force x = F`, `force P = F`, `force B at X = F` (at: X) and
 * `torque B = M` (torque: true). */
typedef struct model_force {
    const char *target;
    src_span_t span; /* the target name */
    const ast_expr_t *value;
    const ast_expr_t *at; /* a force on a body: where it acts; else NULL */
    bool torque;
} model_force_t;

/* `frame A` (parent NULL: the inertial frame) or `frame A from P about
 * AXIS by ANGLE` (LANGUAGE.md §4.1).  The parent is declared before its
 * children and the frames form a tree: the statement checks it. */
typedef struct model_frame {
    const char *name;
    src_span_t span;          /* the name */
    const char *parent;
    src_span_t parent_span;
    const ast_expr_t *axis;   /* AST_NAME x, y or z, or a vector */
    const ast_expr_t *angle;
    src_span_t decl;          /* the statement */
} model_frame_t;

typedef struct model_body {
    const char *name;
    src_span_t span;          /* the name */
    const ast_expr_t *mass, *position, *inertia;
    const char *frame;
    src_span_t frame_span;
    src_span_t decl;          /* the statement */
} model_body_t;

typedef struct model_constraint {
    const char *name;
    bool auto_named;
    src_span_t span; /* the whole statement */
    const ast_expr_t *lhs, *rhs;
} model_constraint_t;

typedef struct model_kinematic {
    const char *coord;
    src_span_t span;
    const ast_expr_t *rhs;
} model_kinematic_t;

/* `draw KIND ARGS [mark M] [trail]` (LANGUAGE.md §7.5): what a body looks
 * like in `animate`, as expressions of the state.  The lowering never
 * reads a draw, so a draw changes no generation (the samples, the
 * lowering and the equations stay): it is part of the model only so that
 * it is cloned, swapped and kept with the texts it was written in like
 * every declaration. */
typedef enum model_draw_kind {
    MODEL_DRAW_DISK,   /* centre, normal, radius */
    MODEL_DRAW_SPHERE, /* centre, radius [mark: a direction in the ball] */
    MODEL_DRAW_LINE,   /* one end, the other */
    MODEL_DRAW_POINT,  /* position [trail: its path so far] */
} model_draw_kind_t;

typedef struct model_draw {
    model_draw_kind_t kind;
    const ast_expr_t *arg[3]; /* nargs of them, as above */
    size_t nargs;
    const ast_expr_t *mark;   /* sphere only; NULL: none */
    bool trail;               /* point only */
    src_span_t span;          /* the statement */
} model_draw_t;

/* A buffer's holders and how far it is filled (model.c). */
typedef struct model_share model_share_t;

#define MODEL_ARRAY(T)          \
    struct {                    \
        T *v;                   \
        size_t n, cap;          \
        model_share_t *share;   \
    }

/* Whether declaration arrays A (older) and B (newer) share A's entries:
 * the same buffer, and B at least as long (see above). */
#define MODEL_SHARED_PREFIX(a, b) ((a).v == (b).v && (a).n <= (b).n)

struct model_index;

typedef struct model {
    MODEL_ARRAY(model_param_t) params;
    MODEL_ARRAY(model_name_t) coords;
    MODEL_ARRAY(model_name_t) speeds;
    MODEL_ARRAY(model_let_t) lets;
    model_energy_t kinetic, potential, lagrangian;
    MODEL_ARRAY(model_particle_t) particles;
    MODEL_ARRAY(model_force_t) forces;
    MODEL_ARRAY(model_constraint_t) constraints;
    MODEL_ARRAY(model_kinematic_t) kinematics;
    MODEL_ARRAY(model_frame_t) frames;
    MODEL_ARRAY(model_body_t) bodies;
    MODEL_ARRAY(model_draw_t) draws; /* in the order declared */
    const ast_expr_t *gravity; /* NULL: none */
    src_span_t gravity_span;   /* the statement */

    int method;            /* eom_method_t, or -1: the default */
    src_span_t method_span;

    /* The state, parallel to coords and speeds. */
    MODEL_ARRAY(double) q;
    MODEL_ARRAY(double) qd;
    MODEL_ARRAY(double) z;
    double t;
    /* What the last `initial` was given, remembered for `reset`, which
     * solves the state again from it (LANGUAGE.md §6): the values (0 for
     * a name not given), parallel to coords and speeds, and how each was
     * given (model_init_how_t). */
    MODEL_ARRAY(double) q0;
    MODEL_ARRAY(double) qd0;
    MODEL_ARRAY(double) z0;
    double t0;
    MODEL_ARRAY(unsigned char) q0_how;
    MODEL_ARRAY(unsigned char) qd0_how;
    MODEL_ARRAY(unsigned char) z0_how;
    /* The constraint residual (relative, eom_constraint_violation) of the
     * state the last simulate left: its integration drift, which that run
     * reported as max |C| and which the next simulate accepts.  0 after
     * initial, reset and a set that moves the constraints. */
    double state_drift;

    /* Bumped by every change of a declaration (not of a value): the
     * session re-lowers the system when it differs from the cached one. */
    unsigned long generation;

    struct model_index *index; /* names -> (kind, index); model.c */
} model_t;

/* How `initial` gave a name: not at all (0, or what the constraints
 * determine), as its value, or as a starting guess (`~`). */
typedef enum model_init_how {
    MODEL_INIT_FREE,
    MODEL_INIT_GIVEN,
    MODEL_INIT_GUESS,
} model_init_how_t;

void model_init(model_t *m);
void model_free(model_t *m);
/* A copy of SRC that changes independently of it: O(1) in the
 * declarations (shared copy on write), O(coordinates) in the state. */
void model_clone(model_t *dst, const model_t *src);
/* The same in O(1), for a statement that declares (the session's
 * candidate model): the state arrays are shared too.  Their elements are
 * written in place (lower_store_state, initial, reset), so DST must be
 * freed, or take SRC's place with SRC freed, before anything writes the
 * state of either; an append (a new coordinate) is safe. */
void model_clone_sharing_state(model_t *dst, const model_t *src);
/* SRC's declarations alone, the state arrays empty: what a lowering
 * keeps (it reads no state of its own). */
void model_clone_declarations(model_t *dst, const model_t *src);

/* Sets USED[F] for every text F (a file index of the source set, below
 * N) that a span of the model points into: its names, AST nodes and
 * spans are in that text's arena, which must stay (the session frees the
 * others: a long REPL session keeps the texts of its model, not every
 * line typed). */
void model_mark_files(const model_t *m, bool *used, size_t n);

/* What NAME is, and its index within its kind (or 0).  O(1). */
model_kind_t model_lookup(const model_t *m, const char *name, size_t *index,
                          src_span_t *where);
/* The index of NAME among the declarations of KIND (MODEL_PARAM …
 * MODEL_CONSTRAINT, not the energies), or -1.  O(1). */
long model_find(const model_t *m, model_kind_t kind, const char *name);
const char *model_kind_name(model_kind_t k); /* "a parameter", ... */

/* Index of a coordinate / speed / constraint by name, or -1. */
long model_coord_index(const model_t *m, const char *name);
long model_speed_index(const model_t *m, const char *name);
long model_constraint_index(const model_t *m, const char *name);
long model_frame_index(const model_t *m, const char *name);
long model_body_index(const model_t *m, const char *name);
/* The name of KIND (MODEL_CONSTRAINT, MODEL_FRAME or MODEL_BODY) closest
 * to NAME (source_closest), for "did you mean"; NULL when none is. */
const char *model_closest(const model_t *m, model_kind_t kind,
                          const char *name);
/* The inertial frame (the one without a parent), or -1. */
long model_inertial_frame(const model_t *m);

/* Appending helpers (abort on OOM). */
void model_push_param(model_t *m, model_param_t p);
void model_push_coord(model_t *m, model_name_t c);
void model_push_speed(model_t *m, model_name_t s);
void model_push_let(model_t *m, model_let_t l);
void model_push_particle(model_t *m, model_particle_t p);
void model_push_force(model_t *m, model_force_t f);
void model_push_constraint(model_t *m, model_constraint_t c);
void model_push_kinematic(model_t *m, model_kinematic_t k);
void model_push_frame(model_t *m, model_frame_t f);
void model_push_body(model_t *m, model_body_t b);
void model_push_draw(model_t *m, model_draw_t d);

/* Replacing entry I (same name: a redeclaration keeps its place). */
void model_set_param(model_t *m, size_t i, model_param_t p);
void model_set_param_value(model_t *m, size_t i, double value);
void model_set_let(model_t *m, size_t i, model_let_t l);
void model_set_particle(model_t *m, size_t i, model_particle_t p);
void model_set_constraint(model_t *m, size_t i, model_constraint_t c);
void model_set_kinematic(model_t *m, size_t i, model_kinematic_t k);
void model_set_frame(model_t *m, size_t i, model_frame_t f);
void model_set_body(model_t *m, size_t i, model_body_t b);
void model_set_draw(model_t *m, size_t i, model_draw_t d);

#endif
