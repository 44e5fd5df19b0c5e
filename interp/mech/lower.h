/*
 * lower.h — from the model's syntax to expression nodes: the mechanical
 * system of a model (system.h), and any expression a statement writes.
 *
 * lower_model() declares the graph variables of a model (for every
 * coordinate x: x, x', x''; for every speed u: u, u'; every parameter; t;
 * lambda(NAME) for every constraint, lambda(NAME[k]) for every component
 * of a vector constraint, declared once the rows are known), lowers
 * every declaration and fills an
 * nh_system_t.  It fails, with the place of the fault, when a declaration
 * names something unknown, mixes vectors and scalars, or uses a second
 * derivative where LANGUAGE.md §3.3 forbids it.  Frames and bodies
 * (§4.1) become unit vectors, angular velocities and kinetic energies
 * through rigid.h; a vector constraint becomes one row per component,
 * without the components that vanish identically — decided as `check`
 * decides that a quantity is zero, at sample states near the state of
 * the model being lowered, with the parameters' values
 * (expr_mag_zero_near): the one place the lowering evaluates.  Where the
 * motion is decides (LANGUAGE.md §4): a contact whose height is
 * r*sin(theta) has a vertical component that vanishes while the disk
 * stands (sin(theta) > 0) and not where it would lie on its other side;
 * lower_drops_hold says when the state has moved to where another
 * verdict holds, and the lowering must be made again.
 *
 * lower_extend() lowers only what a model adds to a lowered one
 * (doc/architecture.md, "Where the code departs from the sketch").
 *
 * lower_expr() lowers one expression against a lowered model: `let`
 * bodies are substituted where used, `e'` is the total time derivative
 * (§3.3), `diff`, `lambda`, `reaction`, `dot`, `cross`, `norm`, `omega`,
 * `on`, `velocity` are resolved here.  Values are scalars or 2- and 3-vectors of nodes.
 *
 * Ownership: a lower_t owns its graph, its nh_system_t and a private copy
 * of the model's declarations (model_clone_declarations: shared with the
 * session's copy on write); the AST it points into belongs to the
 * session's arenas, which outlive it.  Must not: print; evaluate, except
 * to drop the identically zero components of a vector constraint.
 */
#ifndef NH_LOWER_H
#define NH_LOWER_H

#include <stdbool.h>

#include "interp/base/util.h"
#include "interp/expr/expr.h"
#include "interp/mech/model.h"
#include "interp/mech/system.h"
#include "lang/ast.h"
#include "lang/source.h"

typedef struct value {
    unsigned dim;        /* 0: scalar in c[0]; 2 or 3: a vector */
    const expr_t *c[3];
} value_t;

typedef enum lower_mode {
    LOWER_MODEL, /* energies, constraints, forces, kinematics: no q'', z',
                    lambda, reaction */
    LOWER_QUERY, /* print, table, show: everything */
    LOWER_CONST, /* initial, set, simulate options: parameters and numbers */
} lower_mode_t;

typedef struct lower lower_t;

/* Lowers model M; NULL with *err set on failure.  SRC is used only to
 * name the places of earlier declarations in messages. */
lower_t *lower_model(const model_t *m, const source_set_t *src, diag_t *err);
void lower_free(lower_t *lw); /* accepts NULL */
/* The request to stop (Ctrl-C, a time limit) that ends a derivative of
 * diff() or ' in mid-course with an error (borrowed; NULL: none). */
void lower_set_stop(lower_t *lw, const nh_stop_t *stop);

/* Makes LW, a lowering of some model, the lowering of M when M only adds
 * to it — parameters, coordinates and speeds, or lets, particles, bodies,
 * frames, forces, constraints and kinematic equations — lowering just
 * those (the result is the system lower_model(M) makes: the same nodes and
 * canonical order; only the variables' numbers may differ, new ones coming
 * last).  O(what M adds) when M shares LW's model's arrays (model.h).  0:
 * done; -1: *err set, and LW unchanged; 1: M is not such an extension (LW
 * unchanged): lower it with lower_model().  A system or eom borrowed from
 * LW stays valid on -1 and 1, not on 0. */
int lower_extend(lower_t *lw, const model_t *m, diag_t *err);

const nh_system_t *lower_system(const lower_t *lw);
expr_graph_t *lower_graph(const lower_t *lw);

/* Lowers E in MODE into *out; -1 with *err set on failure. */
int lower_expr(lower_t *lw, const ast_expr_t *e, lower_mode_t mode,
               value_t *out, diag_t *err);

/* How the components of constraint NAME became rows (LANGUAGE.md §4):
 * returns its dimension (0: a scalar constraint, or no such constraint)
 * and sets DROPPED[k] for each component: 0 kept, 1 dropped because it
 * simplifies to 0 = 0, 2 dropped because it vanishes at sample states
 * near the state (as `check` decides that a quantity is zero). */
unsigned lower_dropped(const lower_t *lw, const char *name, int dropped[3]);

/* Whether the components LW dropped and kept are those a lowering of M
 * would drop and keep at M's state (LW lowered M's declarations): true at
 * once when the state is the one they were judged at, or when no
 * component is judged numerically; else they are judged again at M's
 * state (a few evaluations per component), and false when one verdict
 * differs: then lower M afresh.  The state they hold at is remembered. */
bool lower_drops_hold(lower_t *lw, const model_t *m);

/* Which variables a value depends on, by role. */
bool lower_needs_accel(const lower_t *lw, const value_t *v); /* q'', z', λ */
bool lower_needs_lambda(const lower_t *lw, const value_t *v);
/* ... a dropped component's reaction (below). */
bool lower_needs_dropped(const lower_t *lw, const value_t *v);

/* ---- the reactions of dropped components (LANGUAGE.md §4, v3) ----
 *
 * lambda(NAME[k]) of a dropped component is a variable of its own, after
 * the multipliers: the force along the component, which the equations do
 * not give (its row of B is zero) and react.h finds from the translated
 * lowering.  lower_dropped_reactions: their count, variables and row
 * names ("roll[3]"), in the order of the constraints (borrowed from LW).
 *
 * lower_translated() lowers LW's model again with the whole system moved
 * by a translation s — three auxiliary coordinates, 0 on the motion —
 * and no component dropped (lower.c says what moves: the bodies and
 * particles and what is built from their positions).  Its
 * lower_translation() gives, as nodes of its own graph (whose other
 * variables have the names of LW's): the residuals E_d = d/dt ∂L/∂s_d' −
 * ∂L/∂s_d − Q_s_d of Lagrange's equations for s, ∂C_a/∂s_d' of every row
 * at the velocity level (r×3, the rows of its system), and for every
 * body and then particle ∂pos_k/∂s_j (3×3 each, 0 past a particle's
 * dimension): I when it moves with the translation.  The translated
 * lowering owns it. */
typedef struct lower_translation {
    const uint32_t *s, *sd, *sdd; /* 3 each */
    const expr_t *const *E;       /* 3 */
    const expr_t *const *Bs;      /* r × 3 */
    size_t nmoving;
    const char *const *moving;    /* the bodies' and particles' names */
    const unsigned *moving_dim;   /* 3, or a particle's 2 */
    const expr_t *const *J;       /* nmoving × 3 × 3 */
} lower_translation_t;

size_t lower_dropped_reactions(const lower_t *lw, const uint32_t **vars,
                               const char *const **names);
lower_t *lower_translated(const lower_t *lw, diag_t *err);
const lower_translation_t *lower_translation(const lower_t *tr);
void lower_translation_free(lower_translation_t *t); /* accepts NULL */

/* Fills a value vector of expr_graph_nvars() doubles from model M's
 * parameter values and state (q, q', z, t); accelerations and
 * multipliers are set to NaN until an eom computes them. */
void lower_fill_vars(const lower_t *lw, const model_t *m, double *vars);
/* The reverse: copies q, q', z, t from VARS into M's state. */
void lower_store_state(const lower_t *lw, const double *vars, model_t *m);

/* When the equations fail at the value vector VARS (a non-finite value):
 * the first declaration (frames, particles, bodies, gravity, energies,
 * forces, constraints, kinematic equations) whose expression — or whose
 * first derivatives, or an energy's (a body's kinetic energy too) second
 * derivatives by a velocity — is not finite there,
 * so that the error can point at it (LANGUAGE.md §4: an expression that
 * cannot be evaluated at the state is an error at the declaration that
 * holds it).  1 with *WHERE and WHAT ("the kinetic energy T cannot be
 * evaluated at the state") set, or 0 when every one is finite. */
int lower_find_undefined(lower_t *lw, const double *vars, src_span_t *where,
                         char *what, size_t size);

/* Whether parameter or let IDX (KIND MODEL_PARAM or MODEL_LET) is read
 * by the model's own expressions — energies, particles, forces,
 * constraints, kinematic equations, directly or through lets — rather
 * than only by queries and other lets (LANGUAGE.md §6: declaring an
 * analysis name keeps the samples).  Other kinds are the model: true. */
bool lower_model_reads(const lower_t *lw, model_kind_t kind, size_t idx);

/* Whether NAME is the name of a built-in function (sin … max, dot,
 * cross, norm, diff, lambda, reaction, omega, on, velocity):
 * such a name cannot be declared (LANGUAGE.md §3.4). */
bool lower_is_builtin_function(const char *name);
/* Those names, NULL-terminated (static: for help and completion). */
const char *const *lower_builtin_functions(void);

/* The names a user may write in expressions (for suggestions and
 * completion): NULL-terminated array, borrowed until the next call. */
const char *const *lower_known_names(lower_t *lw);

/* The closest known name to NAME (edit distance ≤ 2, or a case change),
 * or NULL. */
const char *lower_suggest(lower_t *lw, const char *name);

#endif
