/*
 * lower.c — see lower.h.
 *
 * Scoping: a `let` body sees the model's names and, for a let function,
 * its own parameters; it does not see the parameters of the function that
 * uses it (lexical scope).  Arguments are lowered in the caller's scope
 * and bound by value, so `a'` inside a body is the time derivative of the
 * argument expression (LANGUAGE.md §4).
 *
 * Must not: print; evaluate (but for component_vanishes); change the model
 * it lowers.
 */
#include "interp/mech/lower.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "interp/base/util.h"
#include "interp/expr/mag.h"
#include "interp/mech/rigid.h"
#include "interp/expr/tape.h"

#define LOWER_MAX_DEPTH 200 /* let expansions and nested calls */

/* A lowered particle or energy, computed once on first use. */
typedef struct memo {
    int state; /* 0 not yet, 1 in progress, 2 done */
    value_t v;
} memo_t;

/* A lowered frame (LANGUAGE.md §4.1), computed once on first use. */
typedef struct frame_memo {
    int state; /* as memo_t */
    rigid_frame_t f;
} frame_memo_t;

/* The rows of the system that a model constraint became: one for a
 * scalar constraint (dim 0), one per component of a vector one, minus
 * the components that vanish identically (row -1: dropped). */
typedef struct con_rows {
    unsigned dim;
    long row[3];
    const expr_t *ck[3]; /* a vector's components, dropped ones too */
    uint32_t dlam[3];    /* a dropped component's reaction (its row < 0):
                            lambda(NAME[k]), found by react.h */
} con_rows_t;

struct lower {
    model_t model; /* private copy of the declarations */
    const source_set_t *src;
    expr_graph_t *g;
    nh_system_t sys;

    /* variable numbers, by role */
    uint32_t *q, *qd, *qdd, *z, *zd, *p, *in, *lam;
    uint32_t t;
    const expr_t **dvar;   /* time derivative of each variable */
    bool *second;          /* q'', z', lambda: not in model expressions */
    bool *velocity;        /* q', z: what makes a constraint non-holonomic */
    bool *input;           /* the inputs (§7.2.1): not in a kinetic energy */

    memo_t kinetic, potential, lagrangian;
    /* The kinetic energy not declared by `kinetic` — the particles' and
     * the bodies' terms (LANGUAGE.md §4.1) — and gravity's potential, each
     * the sum over the particles plus the one over the bodies, in
     * declaration order, so that a particle declared after a body is
     * added where a fresh lowering adds it (lower_extend); Tp and Vg are
     * their totals.  The whole T is Tp plus the declared one, in the
     * Lagrangian (set_energies) and by the name (kinetic_whole).  The
     * totals, and the system's T, V and L, are summed from the terms
     * when first read after declarations changed them (lower_sums,
     * lower_system): summed at every declaration, a flat sum of n terms
     * made n bodies declared one by one cost n² (issue 31). */
    const expr_t **particle_T;               /* each particle's energy */
    const expr_t **particle_Vg, **body_Vg;   /* each weight's (or NULL) */
    const expr_t *Tp, *Vg;
    bool sums_stale, energies_stale;
    int Tp_state;      /* 0: not lowered (lower_masses lowers the terms on
                          first use), 1: lowering, 2: done */
    bool kinetic_read; /* the kinetic energy's name was lowered (T whole) */
    memo_t *particle_pos, *particle_mass;

    /* Frames and bodies (LANGUAGE.md §4.1). */
    frame_memo_t *frame_memo;
    unsigned frame_depth;  /* frames being lowered, one inside another */
    memo_t *body_pos, *body_mass;
    const expr_t **body_T; /* each body's kinetic energy */
    value_t gravity;       /* dim 0: no gravity */

    /* Constraints: the rows of each model constraint, and the names of
     * the components' rows ("roll[2]"), owned here. */
    con_rows_t *cons;
    char **row_names;
    size_t nrow_names, cap_row_names;
    /* The verdicts on the components (component_vanishes) are taken
     * near the state of STATE, the model being lowered (borrowed for the
     * call); JUDGED (NJUDGED doubles) is the value vector they all hold
     * at, NULL when they were taken at different states (lower_extend)
     * and must be taken again (lower_drops_hold). */
    const model_t *state;
    double *judged;
    size_t njudged;
    bool judged_once;
    size_t njudging; /* components judged numerically, kept or dropped */

    /* The translated lowering (lower_translated): the lets that move
     * with the translation s (ROOT, per let; NULL in a model's own
     * lowering), its variables, and the generalized forces on s of the
     * loads on bodies and particles as they are lowered. */
    bool *root;
    uint32_t s[3], sd[3], sdd[3];
    const expr_t *Qs[3];
    lower_translation_t *trans;

    /* The dropped components' reactions, in the order of the constraints
     * and their components: variables and row names ("roll[3]"). */
    uint32_t *dvars;
    const char **dnames;
    size_t ndropped, cap_dropped;

    /* What the model's own expressions read (lowered in LOWER_MODEL):
     * a parameter or let read nowhere else is an analysis name, and
     * declaring it again keeps the samples (LANGUAGE.md §6). */
    bool *param_read, *let_read;
    size_t point_loads; /* forces on particles and loads on bodies
                           lowered: each adds a term to every Q_i */

    /* Lets lowered once per lowering: a plain let's value per mode, and a
     * let function's value per mode and argument values (nodes are
     * hash-consed, so equal arguments are equal pointers).  Without this a
     * chain of lets that each use the previous one twice costs 2^n. */
    memo_t *let_memo[3];
    struct call_memo *calls;
    size_t ncalls, cap_calls;
    size_t *call_table; /* open addressing: index + 1 into calls, 0 empty */
    size_t call_table_size;

    /* arrays the nh_system_t points into */
    const char **qname, **zname, **pname, **iname, **cname;
    const expr_t **Q, **C, **Cv, **psi;
    src_span_t *cspan, *psi_span;
    long *cleft;
    nh_particle_t *particles;
    nh_body_t *bodies;

    const char **known; /* for lower_known_names */
    size_t count_base;  /* graph size when the current lowering began */
    size_t edge_base;   /* ... and its edges */
    const nh_stop_t *stop; /* lower_set_stop: ends a long derivative */

    /* Room in the arrays above that grow with the variables: coordinates
     * (q, qd, qdd, qname), speeds (z, zd, zname), parameters (p, pname,
     * param_read), lets (let_read, let memos), multipliers (lam),
     * variables (dvar, second, velocity, not_const). */
    size_t cap_q, cap_z, cap_p, cap_in, cap_let, cap_lam, cap_var;
    bool *not_const; /* variables a LOWER_CONST value may not read */
};

/* One memoised let-function call. */
typedef struct call_memo {
    size_t let;
    int mode;
    size_t nargs;
    value_t *args;
    value_t result;
    uint64_t hash;
} call_memo_t;

/* A frame of bound let-function parameters. */
typedef struct frame {
    const ast_ident_t *names;
    const value_t *values;
    size_t n;
} frame_t;

typedef struct ctx {
    lower_mode_t mode;
    const frame_t *frame; /* innermost let function, or NULL */
    unsigned depth;
    const char *expanding[LOWER_MAX_DEPTH]; /* lets being expanded */
    unsigned nexpanding;
} ctx_t;

static int lower_rec(lower_t *lw, ctx_t *cx, const ast_expr_t *e,
                     value_t *out, diag_t *err);

/* ---- small helpers -------------------------------------------------- */

static value_t scalar(const expr_t *e)
{
    value_t v = {0, {e, NULL, NULL}};
    return v;
}

static const char *shape_name(unsigned dim)
{
    return dim == 0 ? "a scalar" : dim == 2 ? "a 2-vector" : "a 3-vector";
}

static bool value_depends_mask(const lower_t *lw, const value_t *v,
                               const bool *mask)
{
    unsigned n = v->dim ? v->dim : 1;
    for (unsigned k = 0; k < n; k++)
        if (expr_depends_any(lw->g, v->c[k], mask))
            return true;
    return false;
}

static int want_scalar(const value_t *v, const ast_expr_t *e, const char *what,
                       diag_t *err)
{
    if (v->dim == 0)
        return 0;
    return diag_error(err, e->span, "%s must be a scalar, but this is %s",
                      what, shape_name(v->dim));
}

/* Whether V moves with the translation (a component reads s). */
static bool translation_moves(const lower_t *lw, const value_t *v)
{
    for (unsigned k = 0; k < v->dim; k++)
        for (int d = 0; d < 3; d++)
            if (expr_depends(lw->g, v->c[k], lw->s[d]))
                return true;
    return false;
}

/* V, a position, moved by s (its first V->dim components). */
static void translation_add(lower_t *lw, value_t *v)
{
    for (unsigned k = 0; k < v->dim && k < 3; k++)
        v->c[k] = expr_add(lw->g, v->c[k], expr_var(lw->g, lw->s[k]));
}

/* The position in MEMO (a body's or particle's, lowered) moved by s when
 * nothing it reads moves: it is where it is used (the translated
 * lowering, below). */
static void translation_site(lower_t *lw, memo_t *memo, value_t *out)
{
    if (!lw->root || memo->state != 2 || memo->v.dim < 2 ||
        translation_moves(lw, &memo->v))
        return;
    translation_add(lw, &memo->v);
    *out = memo->v;
}

/* ---- names ---------------------------------------------------------- */

static const char *const builtin_functions[] = {
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh",
    "tanh", "exp", "log", "sqrt", "abs", "sign", "min", "max", "dot",
    "cross", "norm", "diff", "lambda", "reaction", "omega", "on",
    "velocity", NULL};

const char *const *lower_builtin_functions(void) { return builtin_functions; }

bool lower_is_builtin_function(const char *name)
{
    for (size_t i = 0; builtin_functions[i]; i++)
        if (strcmp(name, builtin_functions[i]) == 0)
            return true;
    return expr_op_lookup(name) >= 0;
}

const char *const *lower_known_names(lower_t *lw)
{
    const model_t *m = &lw->model;
    size_t n = 2 + m->params.n + m->coords.n + m->speeds.n + m->lets.n +
               m->particles.n + m->constraints.n + m->frames.n +
               m->bodies.n + m->inputs.n + m->outputs.n + 3 +
               sizeof builtin_functions / sizeof *builtin_functions;
    free(lw->known);
    lw->known = xcalloc(n + 1, sizeof *lw->known);
    size_t k = 0;
    lw->known[k++] = "t";
    lw->known[k++] = "pi";
#define ADD_NAMES(arr)                                                  \
    for (size_t i = 0; i < m->arr.n; i++)                               \
        lw->known[k++] = m->arr.v[i].name;
    ADD_NAMES(params)
    ADD_NAMES(coords)
    ADD_NAMES(speeds)
    ADD_NAMES(lets)
    ADD_NAMES(particles)
    ADD_NAMES(constraints)
    ADD_NAMES(frames)
    ADD_NAMES(bodies)
    ADD_NAMES(inputs)
    ADD_NAMES(outputs)
#undef ADD_NAMES
    if (m->kinetic.name)
        lw->known[k++] = m->kinetic.name;
    if (m->potential.name)
        lw->known[k++] = m->potential.name;
    if (m->lagrangian.name)
        lw->known[k++] = m->lagrangian.name;
    for (size_t i = 0; builtin_functions[i]; i++)
        lw->known[k++] = builtin_functions[i];
    lw->known[k] = NULL;
    return lw->known;
}

const char *lower_suggest(lower_t *lw, const char *name)
{
    return source_closest(name, lower_known_names(lw));
}

/* How built-in function NAME is called, for messages (in BUF when it
 * takes one argument). */
static const char *builtin_usage(const char *name, char *buf, size_t size)
{
    static const char *const usage[][2] = {
        {"atan2", "atan2(y, x)"},    {"min", "min(a, b, ...)"},
        {"max", "max(a, b, ...)"},   {"dot", "dot(u, v)"},
        {"cross", "cross(u, v)"},    {"norm", "norm(v)"},
        {"diff", "diff(e, x)"},      {"lambda", "lambda(NAME)"},
        {"reaction", "reaction(x)"}, {"omega", "omega(A)"},
        {"on", "on(A, v)"},          {"velocity", "velocity(P, B)"}};
    for (size_t i = 0; i < sizeof usage / sizeof *usage; i++)
        if (strcmp(usage[i][0], name) == 0)
            return usage[i][1];
    snprintf(buf, size, "%s(x)", name);
    return buf;
}

static int unknown_name(lower_t *lw, const ctx_t *cx, const char *name,
                        src_span_t span, diag_t *err)
{
    /* Function parameters in scope are candidates too. */
    const char *const *known = lower_known_names(lw);
    const char *best = source_closest(name, known);
    if (cx->frame) {
        for (size_t i = 0; i < cx->frame->n; i++) {
            size_t d = source_slip_distance(name, cx->frame->names[i].name);
            if (d != SIZE_MAX &&
                (!best || d < source_slip_distance(name, best)))
                best = cx->frame->names[i].name;
        }
    }
    /* LANGUAGE.md §4.1 calls the whole kinetic energy T, but a name is
     * what `kinetic` declares: with particles or bodies alone there is
     * none (doc/language.md), and 't' would be a poor suggestion. */
    const model_t *m = &lw->model;
    if (strcmp(name, "T") == 0 && !m->kinetic.name && !m->lagrangian.name &&
        (m->particles.n || m->bodies.n))
        return diag_error(err, span,
                          "unknown name 'T': the kinetic energy has a name "
                          "only when `kinetic` declares one; `kinetic T = "
                          "0` names the whole kinetic energy, the particles' "
                          "and bodies' terms included");
    char usage[64];
    if (lower_is_builtin_function(name))
        return diag_error(err, span,
                          "'%s' is a built-in function: call it with its "
                          "arguments, like %s",
                          name, builtin_usage(name, usage, sizeof usage));
    if (best)
        return diag_error(err, span, "unknown name '%s'; did you mean '%s'?",
                          name, best);
    return diag_error(err, span,
                      "unknown name '%s': declare it first, with param, "
                      "coord, speed, let, particle, kinetic, potential or "
                      "lagrangian",
                      name);
}

static long find_let(const model_t *m, const char *name)
{
    return model_find(m, MODEL_LET, name);
}

static long find_particle(const model_t *m, const char *name)
{
    return model_find(m, MODEL_PARTICLE, name);
}

/* ---- energies and particles, lowered once on first use ------------- */

static int lower_memo(lower_t *lw, ctx_t *cx, memo_t *memo,
                      const ast_expr_t *e, const char *name, src_span_t use,
                      value_t *out, diag_t *err)
{
    if (memo->state == 2) {
        *out = memo->v;
        return 0;
    }
    if (memo->state == 1)
        return diag_error(err, use, "'%s' is defined in terms of itself",
                          name);
    memo->state = 1;
    ctx_t inner = {LOWER_MODEL, NULL, cx->depth + 1, {0}, 0};
    value_t v;
    if (lower_rec(lw, &inner, e, &v, err) != 0) {
        memo->state = 0;
        return -1;
    }
    memo->v = v;
    memo->state = 2;
    *out = v;
    return 0;
}

static int energy_value(lower_t *lw, ctx_t *cx, model_kind_t kind,
                        src_span_t use, value_t *out, diag_t *err)
{
    model_t *m = &lw->model;
    model_energy_t *en = kind == MODEL_KINETIC     ? &m->kinetic
                         : kind == MODEL_POTENTIAL ? &m->potential
                                                   : &m->lagrangian;
    memo_t *memo = kind == MODEL_KINETIC     ? &lw->kinetic
                   : kind == MODEL_POTENTIAL ? &lw->potential
                                             : &lw->lagrangian;
    if (lower_memo(lw, cx, memo, en->value, en->name, use, out, err) != 0)
        return -1;
    if (out->dim != 0)
        return diag_error(err, en->value->span,
                          "an energy must be a scalar, but this is %s",
                          shape_name(out->dim));
    return 0;
}

static int particle_position(lower_t *lw, ctx_t *cx, size_t i,
                             src_span_t use, value_t *out, diag_t *err)
{
    const model_particle_t *pt = &lw->model.particles.v[i];
    if (lower_memo(lw, cx, &lw->particle_pos[i], pt->position, pt->name, use,
                   out, err) != 0)
        return -1;
    translation_site(lw, &lw->particle_pos[i], out);
    if (out->dim == 0)
        return diag_error(err, pt->position->span,
                          "the position of particle %s must be a 2- or "
                          "3-vector, like [x, y]",
                          pt->name);
    return 0;
}

static int lower_masses(lower_t *lw, size_t p0, size_t p1, size_t b0,
                        size_t b1, nh_particle_t *parts, diag_t *err);
static void lower_sums(lower_t *lw);

/* The kinetic energy by its name: the whole T, the declared `kinetic`
 * and the particles' and bodies' energies (LANGUAGE.md §4, §4.1: `print
 * T` and `show T` read the T the equations use).  Their part is summed
 * once per lowering, on first use (a frame's angle may read T before the
 * energies are lowered), and extended by lower_extend; a particle or
 * body that reads T is a cycle. */
static int kinetic_whole(lower_t *lw, ctx_t *cx, src_span_t use,
                         value_t *out, diag_t *err)
{
    const model_energy_t *en = &lw->model.kinetic;
    if (lw->Tp_state == 1)
        return diag_error(err, use,
                          "'%s' is defined in terms of itself (the "
                          "particles' and bodies' energies are part of it)",
                          en->name);
    if (lw->Tp_state == 0 &&
        lower_masses(lw, 0, lw->model.particles.n, 0, lw->model.bodies.n,
                     lw->particles, err) != 0)
        return -1;
    if (energy_value(lw, cx, MODEL_KINETIC, use, out, err) != 0)
        return -1;
    lw->kinetic_read = true;
    lower_sums(lw);
    out->c[0] = expr_add(lw->g, lw->Tp, out->c[0]);
    return 0;
}

/* Derivatives can grow an expression combinatorially (diff applied sixty
 * times over): past this many nodes in the graph the statement fails
 * instead of exhausting memory.  The largest models of the benchmarks
 * (an N-trailer with N = 64) use about 130 000. */
#define LOWER_MAX_NODES 200000

/* Counts the nodes added since the lowering of the current statement's
 * expression (or of the model) began, not the whole graph, so a large
 * model's derived equations do not count against a later `print`. */
/* ... and past this many edges (a sum of k terms is one node and k
 * edges): diff() nested forty deep made sums of thousands of products,
 * seconds of work, before the nodes reached their limit (issue 31). */
#define LOWER_MAX_EDGES 10000000

static int check_size(const lower_t *lw, const ast_expr_t *e, diag_t *err)
{
    if (expr_graph_count(lw->g) - lw->count_base > LOWER_MAX_NODES)
        return diag_error(err, e->span,
                          "this expression grows too large (more than %d "
                          "nodes in the graph)",
                          LOWER_MAX_NODES);
    if (expr_graph_edges(lw->g) - lw->edge_base > LOWER_MAX_EDGES)
        return diag_error(err, e->span,
                          "this expression grows too large (more than %d "
                          "edges between the nodes of the graph)",
                          LOWER_MAX_EDGES);
    return 0;
}

/* Sets expr_diff's budget (expr_graph_set_budget) to what the current
 * lowering may still add, and the stop. */
static void budget_begin(lower_t *lw)
{
    size_t nodes = expr_graph_count(lw->g) - lw->count_base;
    size_t edges = expr_graph_edges(lw->g) - lw->edge_base;
    expr_graph_set_budget(lw->g,
                          nodes < LOWER_MAX_NODES ? LOWER_MAX_NODES - nodes
                                                  : 1,
                          edges < LOWER_MAX_EDGES ? LOWER_MAX_EDGES - edges
                                                  : 1,
                          lw->stop);
}

/* Lifts the budget; an error at E when it ran out (the derivatives made
 * meanwhile are discarded by the caller). */
static int budget_end(lower_t *lw, const ast_expr_t *e, diag_t *err)
{
    bool over = expr_graph_over_budget(lw->g);
    expr_graph_set_budget(lw->g, 0, 0, NULL);
    if (!over)
        return 0;
    if (lw->stop && nh_stop_due(lw->stop))
        return diag_error(err, e->span, "%s while differentiating",
                          nh_stop_reason(lw->stop));
    if (check_size(lw, e, err) == 0) /* the budget is the size's */
        return diag_error(err, e->span,
                          "this expression grows too large (more than %d "
                          "nodes in the graph)",
                          LOWER_MAX_NODES);
    return -1;
}

/* ---- calls ---------------------------------------------------------- */

static int lower_args(lower_t *lw, ctx_t *cx, const ast_expr_t *e,
                      value_t *args, diag_t *err)
{
    for (size_t i = 0; i < e->nargs; i++)
        if (lower_rec(lw, cx, e->args[i], &args[i], err) != 0)
            return -1;
    return 0;
}

static int arity_error(const ast_expr_t *e, const char *what, size_t want,
                       diag_t *err)
{
    return diag_error(err, e->span, "%s takes %zu argument%s, not %zu", what,
                      want, want == 1 ? "" : "s", e->nargs);
}

static uint64_t call_hash(size_t li, int mode, const value_t *args,
                          size_t n)
{
    uint64_t h = 1469598103934665603ULL ^ (li * 31 + (size_t)mode);
    for (size_t i = 0; i < n; i++)
        for (unsigned k = 0; k < (args[i].dim ? args[i].dim : 1); k++) {
            h ^= (uint64_t)(uintptr_t)args[i].c[k] + args[i].dim;
            h *= 1099511628211ULL;
        }
    return h ^ (h >> 29);
}

static bool call_same(const call_memo_t *c, size_t li, int mode,
                      const value_t *args, size_t n)
{
    if (c->let != li || c->mode != mode || c->nargs != n)
        return false;
    /* Only the components a value has: the others are not set. */
    for (size_t i = 0; i < n; i++) {
        if (c->args[i].dim != args[i].dim)
            return false;
        for (unsigned k = 0; k < (args[i].dim ? args[i].dim : 1); k++)
            if (c->args[i].c[k] != args[i].c[k])
                return false;
    }
    return true;
}

static const call_memo_t *call_find(const lower_t *lw, size_t li, int mode,
                                    const value_t *args, size_t n,
                                    uint64_t h)
{
    if (!lw->call_table_size)
        return NULL;
    size_t mask = lw->call_table_size - 1;
    for (size_t i = h & mask; lw->call_table[i]; i = (i + 1) & mask) {
        const call_memo_t *c = &lw->calls[lw->call_table[i] - 1];
        if (c->hash == h && call_same(c, li, mode, args, n))
            return c;
    }
    return NULL;
}

static void call_insert(lower_t *lw, size_t li, int mode, const value_t *args,
                        size_t n, uint64_t h, value_t result)
{
    if (2 * (lw->ncalls + 1) > lw->call_table_size) {
        size_t size = lw->call_table_size ? 2 * lw->call_table_size : 64;
        free(lw->call_table);
        lw->call_table = xcalloc(size, sizeof *lw->call_table);
        lw->call_table_size = size;
        for (size_t k = 0; k < lw->ncalls; k++) {
            size_t i = lw->calls[k].hash & (size - 1);
            while (lw->call_table[i])
                i = (i + 1) & (size - 1);
            lw->call_table[i] = k + 1;
        }
    }
    xgrow(&lw->calls, &lw->cap_calls, lw->ncalls + 1, sizeof *lw->calls);
    call_memo_t *c = &lw->calls[lw->ncalls++];
    c->let = li;
    c->mode = mode;
    c->nargs = n;
    c->args = xcalloc(n ? n : 1, sizeof *c->args);
    memcpy(c->args, args, n * sizeof *args);
    c->result = result;
    c->hash = h;
    size_t mask = lw->call_table_size - 1, i = h & mask;
    while (lw->call_table[i])
        i = (i + 1) & mask;
    lw->call_table[i] = lw->ncalls;
}

/* call_let's work, with ARGS room for the call's arguments. */
static int call_let_with(lower_t *lw, ctx_t *cx, const ast_expr_t *e,
                         size_t li, const ast_stmt_t *st, value_t *args,
                         value_t *out, diag_t *err)
{
    if (lower_args(lw, cx, e, args, err) != 0)
        return -1;
    for (unsigned k = 0; k < cx->nexpanding; k++)
        if (strcmp(cx->expanding[k], e->name) == 0)
            return diag_error(err, e->span,
                              "'%s' is defined in terms of itself", e->name);
    if (cx->nexpanding >= LOWER_MAX_DEPTH)
        return diag_error(err, e->span,
                          "lets nested too deeply (more than %d levels)",
                          LOWER_MAX_DEPTH);
    if (cx->mode == LOWER_MODEL)
        lw->let_read[li] = true;
    uint64_t h = call_hash(li, cx->mode, args, e->nargs);
    const call_memo_t *hit = call_find(lw, li, cx->mode, args, e->nargs, h);
    if (hit) {
        *out = hit->result;
        return 0;
    }
    frame_t fr = {st->u.let.params, args, e->nargs};
    ctx_t inner = *cx;
    inner.frame = &fr;
    inner.depth = cx->depth + 1;
    inner.expanding[inner.nexpanding++] = e->name;
    if (lower_rec(lw, &inner, st->u.let.body, out, err) != 0)
        return -1;
    if (check_size(lw, e, err)) /* expansions can grow it exponentially */
        return -1;
    call_insert(lw, li, cx->mode, args, e->nargs, h, *out);
    return 0;
}

static int call_let(lower_t *lw, ctx_t *cx, const ast_expr_t *e, size_t li,
                    value_t *out, diag_t *err)
{
    const ast_stmt_t *st = lw->model.lets.v[li].stmt;
    if (!st->u.let.is_function)
        return diag_error(err, e->name_span,
                          "'%s' is not a function: write it without "
                          "arguments",
                          e->name);
    if (e->nargs != st->u.let.nparams) {
        char what[256];
        snprintf(what, sizeof what, "'%s'", e->name);
        return arity_error(e, what, st->u.let.nparams, err);
    }
    /* On the heap: a let may take as many arguments as a line holds. */
    value_t *args = xcalloc(e->nargs ? e->nargs : 1, sizeof *args);
    int rc = call_let_with(lw, cx, e, li, st, args, out, err);
    free(args);
    return rc;
}

/* Whether V depends on a variable set in MASK (never a parameter), and
 * the first such in the canonical order in *VAR: every coordinate's x,
 * x', x'', every speed's z, z', t, the multipliers.  Messages name that
 * one, so that they do not depend on the variables' numbers, which
 * lower_extend() may give in another order than a fresh lowering. */
static bool first_in_mask(const lower_t *lw, const value_t *v,
                          const bool *mask, uint32_t *var)
{
    if (!value_depends_mask(lw, v, mask))
        return false;
    const nh_system_t *s = &lw->sys;
    size_t nx = 3 * s->n + 2 * s->m + 1 + s->r;
    unsigned nc = v->dim ? v->dim : 1;
    for (size_t i = 0; i < nx; i++) {
        size_t j = i;
        uint32_t x = j < 3 * s->n ? (j % 3 == 0   ? lw->q[j / 3]
                                     : j % 3 == 1 ? lw->qd[j / 3]
                                                  : lw->qdd[j / 3])
                     : (j -= 3 * s->n) < 2 * s->m
                         ? (j % 2 == 0 ? lw->z[j / 2] : lw->zd[j / 2])
                     : (j -= 2 * s->m) == 0 ? lw->t
                                            : lw->lam[j - 1];
        if (!mask[x])
            continue;
        for (unsigned k = 0; k < nc; k++)
            if (expr_depends(lw->g, v->c[k], x)) {
                *var = x;
                return true;
            }
    }
    *var = lw->t; /* not reached: a masked variable is one of these */
    return true;
}

/* ---- frames and bodies (LANGUAGE.md §4.1) ---------------------------- */

/* The axis of frame F's turn as a unit vector U of components on the
 * parent's axes: x, y, z, or a constant vector, normalised. */
static int frame_axis(lower_t *lw, ctx_t *cx, const model_frame_t *f,
                      const expr_t *u[3], diag_t *err)
{
    expr_graph_t *g = lw->g;
    const ast_expr_t *ax = f->axis;
    if (ax->kind == AST_NAME && ax->name[1] == '\0' && ax->name[0] >= 'x' &&
        ax->name[0] <= 'z') {
        for (int k = 0; k < 3; k++)
            u[k] = expr_num(g, k == ax->name[0] - 'x');
        return 0;
    }
    value_t v;
    if (lower_rec(lw, cx, ax, &v, err) != 0)
        return -1;
    if (v.dim != 3)
        return diag_error(err, ax->span,
                          "the axis of a frame is x, y, z or a 3-vector of "
                          "components on %s's axes, but this is %s",
                          f->parent, shape_name(v.dim));
    /* Parameters only: a turning axis would need its own rate in omega. */
    uint32_t var;
    if (first_in_mask(lw, &v, lw->not_const, &var))
        return diag_error(err, ax->span,
                          "the axis of a frame must be constant (numbers "
                          "and parameters), but this depends on %s",
                          expr_var_name(g, var));
    /* Numbers are scaled by the largest first, so that the sum of their
     * squares neither underflows nor overflows: [1e-200, 0, 0] was "the
     * zero vector" and [1e200, 0, 0] a division by zero later (issue
     * 31); [0, 2, 2] is [0, 1, 1], whose form stays exact. */
    if (v.c[0]->op == EXPR_CONST && v.c[1]->op == EXPR_CONST &&
        v.c[2]->op == EXPR_CONST) {
        double big = fmax(fabs(v.c[0]->value),
                          fmax(fabs(v.c[1]->value), fabs(v.c[2]->value)));
        if (big == 0)
            return diag_error(err, ax->span,
                              "the axis of a frame must not be the zero "
                              "vector");
        for (int k = 0; k < 3 && big != 1; k++)
            v.c[k] = expr_num(g, v.c[k]->value / big);
    }
    const expr_t *norm =
        expr_call(g, EXPR_SQRT, rigid_dot(g, v.c, v.c, 3), NULL);
    if (expr_is_const(norm, 0))
        return diag_error(err, ax->span,
                          "the axis of a frame must not be the zero vector");
    for (int k = 0; k < 3; k++)
        u[k] = expr_div(g, v.c[k], norm);
    return 0;
}

static int frame_value(lower_t *lw, size_t i, src_span_t use,
                       const rigid_frame_t **out, diag_t *err);

/* Frame F into *OUT: the inertial frame, or its parent turned. */
static int frame_lower(lower_t *lw, const model_frame_t *f,
                       rigid_frame_t *out, diag_t *err)
{
    expr_graph_t *g = lw->g;
    if (!f->parent) {
        rigid_inertial(g, out);
        return 0;
    }
    long pi = model_frame_index(&lw->model, f->parent);
    if (pi < 0)
        return diag_error(err, f->parent_span, "unknown frame '%s'",
                          f->parent);
    const rigid_frame_t *p;
    if (frame_value(lw, (size_t)pi, f->parent_span, &p, err) != 0)
        return -1;
    ctx_t cx = {LOWER_MODEL, NULL, 0, {0}, 0};
    value_t a;
    const expr_t *u[3];
    if (lower_rec(lw, &cx, f->angle, &a, err) != 0 ||
        want_scalar(&a, f->angle, "the angle of a frame", err) != 0)
        return -1;
    if (value_depends_mask(lw, &a, lw->velocity))
        return diag_error(err, f->angle->span,
                          "the angle of a frame may use coordinates, "
                          "parameters and t, but this uses a velocity or a "
                          "speed");
    if (frame_axis(lw, &cx, f, u, err) != 0)
        return -1;
    rigid_turn(g, p, u, a.c[0], expr_dt(g, a.c[0], lw->dvar), out);
    return 0;
}

/* Frame I, lowered once (its angle may not use its own unit vectors). */
static int frame_value(lower_t *lw, size_t i, src_span_t use,
                       const rigid_frame_t **out, diag_t *err)
{
    frame_memo_t *fm = &lw->frame_memo[i];
    const model_frame_t *f = &lw->model.frames.v[i];
    if (fm->state == 1)
        return diag_error(err, use, "'%s' is defined in terms of itself",
                          f->name);
    if (fm->state == 0) {
        /* Frames are lowered in the order declared, so a parent is
         * usually done; redeclarations can make a chain that recurses
         * once per frame: bounded, as lets are. */
        if (lw->frame_depth >= LOWER_MAX_DEPTH)
            return diag_error(err, use,
                              "frames nested too deeply (more than %d "
                              "levels)",
                              LOWER_MAX_DEPTH);
        fm->state = 1;
        lw->frame_depth++;
        int rc = frame_lower(lw, f, &fm->f, err);
        lw->frame_depth--;
        if (rc != 0) {
            fm->state = 0;
            return -1;
        }
        fm->state = 2;
    }
    *out = &fm->f;
    return 0;
}

/* Frame I's angular velocity on the inertial axes in the composed form
 * (rigid_omega; LANGUAGE.md §4.1, as `show omega(A)` prints it), made on
 * first use down the chain from the nearest frame that has it, without
 * recursion.  Frame I and those above it are lowered. */
static const rigid_frame_t *frame_omega(lower_t *lw, size_t i)
{
    size_t n = 0, cap = 16;
    size_t *chain = xmalloc(cap * sizeof *chain);
    for (long f = (long)i; f >= 0 && !lw->frame_memo[f].f.omega[0];) {
        if (n == cap) {
            cap *= 2;
            chain = xrealloc(chain, cap * sizeof *chain);
        }
        chain[n++] = (size_t)f;
        const model_frame_t *mf = &lw->model.frames.v[f];
        f = mf->parent ? model_frame_index(&lw->model, mf->parent) : -1;
    }
    while (n > 0) {
        size_t f = chain[--n];
        long p = model_frame_index(&lw->model, lw->model.frames.v[f].parent);
        rigid_omega(lw->g, &lw->frame_memo[p].f, &lw->frame_memo[f].f);
    }
    free(chain);
    return &lw->frame_memo[i].f;
}

/* The frame NAME at SPAN (an argument of omega() or on(), the A of A.x). */
static int frame_named(lower_t *lw, const char *name, src_span_t span,
                       const char *usage, const rigid_frame_t **out,
                       diag_t *err)
{
    long i = model_frame_index(&lw->model, name);
    if (i >= 0)
        return frame_value(lw, (size_t)i, span, out, err);
    const char *best = model_closest(&lw->model, MODEL_FRAME, name);
    if (best)
        return diag_error(err, span,
                          "'%s' is not a frame (%s); did you mean '%s'?",
                          name, usage, best);
    return diag_error(err, span, "'%s' is not a frame (%s)", name, usage);
}

/* The centre of mass of body I (a 3-vector), lowered once. */
static int body_position(lower_t *lw, ctx_t *cx, size_t i, src_span_t use,
                         value_t *out, diag_t *err)
{
    const model_body_t *b = &lw->model.bodies.v[i];
    if (lower_memo(lw, cx, &lw->body_pos[i], b->position, b->name, use, out,
                   err) != 0)
        return -1;
    translation_site(lw, &lw->body_pos[i], out);
    if (out->dim != 3)
        return diag_error(err, b->position->span,
                          "the centre of mass of body %s must be a 3-vector, "
                          "like [x, y, z], but this is %s",
                          b->name, shape_name(out->dim));
    return 0;
}

/* velocity(X, B) of body I: G' + omega(F) × (X − G) (LANGUAGE.md §4.1). */
static int body_velocity(lower_t *lw, ctx_t *cx, size_t i,
                         const expr_t *const x[3], src_span_t use,
                         const expr_t *out[3], diag_t *err)
{
    const model_body_t *b = &lw->model.bodies.v[i];
    value_t G;
    const rigid_frame_t *f;
    if (body_position(lw, cx, i, use, &G, err) != 0 ||
        frame_named(lw, b->frame, b->frame_span, "a body is fixed in a frame",
                    &f, err) != 0)
        return -1;
    const expr_t *Gdot[3];
    for (int k = 0; k < 3; k++)
        Gdot[k] = expr_dt(lw->g, G.c[k], lw->dvar);
    f = frame_omega(lw, (size_t)model_frame_index(&lw->model, b->frame));
    rigid_point_velocity(lw->g, f, x, G.c, Gdot, out);
    return 0;
}

/* The name argument E of omega(A), on(A, v) (a frame) or velocity(P, B)
 * (a body): its name, or an error. */
static const char *name_argument(const ast_expr_t *call, const ast_expr_t *e,
                                 const char *what, diag_t *err)
{
    if (e->kind == AST_NAME)
        return e->name;
    diag_error(err, e->span, "%s() takes the name of %s", call->name,
               what);
    return NULL;
}

/* omega(A), on(A, v), velocity(P, B). */
static int call_frames(lower_t *lw, ctx_t *cx, const ast_expr_t *e,
                       value_t *out, diag_t *err)
{
    const char *f = e->name;
    expr_graph_t *g = lw->g;
    bool om = strcmp(f, "omega") == 0, on = strcmp(f, "on") == 0;
    size_t want = om ? 1 : 2;
    if (e->nargs != want) {
        char what[32];
        snprintf(what, sizeof what, "%s()", f);
        return arity_error(e, what, want, err);
    }
    if (om || on) {
        const char *name = name_argument(e, e->args[0], "a frame", err);
        const rigid_frame_t *fr;
        if (!name || frame_named(lw, name, e->args[0]->span,
                                 om ? "omega(A) is the angular velocity of "
                                      "frame A"
                                    : "on(A, v) gives v on frame A's axes",
                                 &fr, err) != 0)
            return -1;
        out->dim = 3;
        if (om) {
            fr = frame_omega(lw, (size_t)model_frame_index(&lw->model, name));
            for (int k = 0; k < 3; k++)
                out->c[k] = fr->omega[k];
            return 0;
        }
        value_t v;
        if (lower_rec(lw, cx, e->args[1], &v, err) != 0)
            return -1;
        if (v.dim != 3)
            return diag_error(err, e->args[1]->span,
                              "on() needs a 3-vector, but this is %s",
                              shape_name(v.dim));
        /* on(A, v) = [dot(v, A.x), dot(v, A.y), dot(v, A.z)] */
        for (int k = 0; k < 3; k++)
            out->c[k] = rigid_dot(g, v.c, fr->axis[k], 3);
        return 0;
    }
    /* velocity(P, B) */
    const char *name = name_argument(e, e->args[1], "a body", err);
    if (!name)
        return -1;
    long bi = model_body_index(&lw->model, name);
    if (bi < 0) {
        model_kind_t k = model_lookup(&lw->model, name, NULL, NULL);
        if (k == MODEL_NONE) {
            const char *best = model_closest(&lw->model, MODEL_BODY, name);
            if (best)
                return diag_error(err, e->args[1]->span,
                                  "unknown body '%s'; did you mean '%s'?",
                                  name, best);
            return diag_error(err, e->args[1]->span, "unknown body '%s'",
                              name);
        }
        return diag_error(err, e->args[1]->span,
                          "velocity(P, B) is the velocity of the point of "
                          "body B at P, and '%s' is %s, not a body%s",
                          name, model_kind_name(k),
                          k == MODEL_PARTICLE ? " (a particle's velocity is "
                                                "its position's prime)"
                                              : "");
    }
    value_t x;
    if (lower_rec(lw, cx, e->args[0], &x, err) != 0)
        return -1;
    if (x.dim != 3)
        return diag_error(err, e->args[0]->span,
                          "velocity() needs a point, a 3-vector, but this is "
                          "%s",
                          shape_name(x.dim));
    out->dim = 3;
    return body_velocity(lw, cx, (size_t)bi, x.c, e->span, out->c, err);
}

/* A variable node with one of the roles diff() accepts, or -1. */
static long diff_variable(const lower_t *lw, const value_t *v)
{
    if (v->dim != 0 || v->c[0]->op != EXPR_VAR)
        return -1;
    uint32_t var = v->c[0]->var;
    const nh_system_t *s = &lw->sys;
    for (size_t i = 0; i < s->n; i++)
        if (var == lw->q[i] || var == lw->qd[i])
            return var;
    for (size_t i = 0; i < s->m; i++)
        if (var == lw->z[i])
            return var;
    for (size_t i = 0; i < s->np; i++)
        if (var == lw->p[i])
            return var;
    for (size_t i = 0; i < s->ni; i++)
        if (var == lw->in[i])
            return var;
    return var == lw->t ? (long)var : -1;
}

/* lambda(NAME), lambda(NAME[k]): the multiplier of a constraint's row. */
static int lambda_value(lower_t *lw, const ast_expr_t *a, value_t *out,
                        diag_t *err)
{
    const ast_expr_t *nm = a->kind == AST_INDEX ? a->a : a;
    if (nm->kind != AST_NAME)
        return diag_error(err, a->span,
                          "lambda() takes the name of a constraint");
    long c = model_constraint_index(&lw->model, nm->name);
    if (c < 0) {
        const char *best =
            model_closest(&lw->model, MODEL_CONSTRAINT, nm->name);
        if (best)
            return diag_error(err, nm->span,
                              "'%s' is not a constraint; did you "
                              "mean '%s'?",
                              nm->name, best);
        return diag_error(err, nm->span, "'%s' is not a constraint",
                          nm->name);
    }
    const con_rows_t *cr = &lw->cons[c];
    long row = cr->row[0];
    if (cr->dim == 0 && a->kind == AST_INDEX)
        return diag_error(err, a->span,
                          "'%s' is a scalar constraint: its multiplier is "
                          "lambda(%s)",
                          nm->name, nm->name);
    if (cr->dim > 0 && a->kind != AST_INDEX)
        return diag_error(err, a->span,
                          "'%s' is a vector constraint: its multipliers are "
                          "lambda(%s[1]) to lambda(%s[%u])",
                          nm->name, nm->name, nm->name, cr->dim);
    if (cr->dim > 0) {
        const ast_expr_t *k = a->b;
        if (k->kind != AST_NUM || k->num != floor(k->num) || k->num < 1 ||
            k->num > cr->dim)
            return diag_error(err, k->span,
                              "a component index must be a whole number from "
                              "1 to %u",
                              cr->dim);
        row = cr->row[(int)k->num - 1];
        if (row < 0) { /* its reaction all the same (react.h) */
            *out = scalar(expr_var(lw->g, cr->dlam[(int)k->num - 1]));
            return 0;
        }
    }
    *out = scalar(expr_var(lw->g, lw->lam[row]));
    return 0;
}

/* The min or max (OP) of the N values V as a balanced tree of the
 * graph's two-argument operator, so that its depth grows as log2 N: the
 * graph's walks recurse on depth. */
static const expr_t *min_max_tree(expr_graph_t *g, expr_op_t op,
                                  const expr_t *const *v, size_t n)
{
    if (n == 1)
        return v[0];
    size_t h = n / 2;
    return expr_call(g, op, min_max_tree(g, op, v, h),
                     min_max_tree(g, op, v + h, n - h));
}

/* min(a, b, ...) and max(a, b, ...) (doc/language.md): any number of
 * arguments, a vector's components each counting as one. */
static int call_min_max(lower_t *lw, ctx_t *cx, const ast_expr_t *e,
                        value_t *out, diag_t *err)
{
    const char *f = e->name;
    if (e->nargs == 0)
        return diag_error(err, e->span,
                          "%s() takes at least 1 argument: %s(a, b, ...)", f,
                          f);
    value_t *args = xcalloc(e->nargs, sizeof *args);
    if (lower_args(lw, cx, e, args, err) != 0) {
        free(args);
        return -1;
    }
    size_t n = 0;
    const expr_t **v = xcalloc(3 * e->nargs, sizeof *v);
    for (size_t i = 0; i < e->nargs; i++)
        for (unsigned k = 0; k < (args[i].dim ? args[i].dim : 1); k++)
            v[n++] = args[i].c[k];
    *out = scalar(min_max_tree(lw->g, f[1] == 'i' ? EXPR_MIN : EXPR_MAX, v, n));
    free(v);
    free(args);
    return check_size(lw, e, err);
}

static int call_builtin(lower_t *lw, ctx_t *cx, const ast_expr_t *e,
                        value_t *out, diag_t *err)
{
    const char *f = e->name;
    expr_graph_t *g = lw->g;

    if (strcmp(f, "lambda") == 0 || strcmp(f, "reaction") == 0) {
        bool is_lambda = f[0] == 'l';
        if (cx->mode != LOWER_QUERY)
            return diag_error(err, e->span,
                              "%s() is available only in print, table, plot "
                              "and show",
                              f);
        if (e->nargs != 1)
            return arity_error(e, is_lambda ? "lambda()" : "reaction()", 1,
                               err);
        const ast_expr_t *a = e->args[0];
        if (is_lambda)
            return lambda_value(lw, a, out, err);
        if (a->kind != AST_NAME)
            return diag_error(err, a->span, "%s() takes the name of %s", f,
                              "a coordinate");
        long qi = model_coord_index(&lw->model, a->name);
        if (qi < 0)
            return diag_error(err, a->span, "'%s' is not a coordinate",
                              a->name);
        /* reaction(x) = Σ_a λ_a ∂C^a/∂x' (LANGUAGE.md §3.4), with a
         * holonomic constraint taken through its derivative f'. */
        const expr_t *sum = expr_num(g, 0);
        for (size_t c = 0; c < lw->sys.r; c++)
            sum = expr_add(g, sum,
                           expr_mul(g, expr_var(g, lw->lam[c]),
                                    expr_diff(g, lw->Cv[c], lw->qd[qi])));
        *out = scalar(sum);
        return 0;
    }

    if (strcmp(f, "omega") == 0 || strcmp(f, "on") == 0 ||
        strcmp(f, "velocity") == 0)
        return call_frames(lw, cx, e, out, err);
    if (strcmp(f, "min") == 0 || strcmp(f, "max") == 0)
        return call_min_max(lw, cx, e, out, err);
    /* Two at most: every branch below checks the count before it lowers
     * the arguments (a call may have a million of them). */
    value_t args[2];
    if (strcmp(f, "diff") == 0) {
        if (e->nargs != 2)
            return arity_error(e, "diff()", 2, err);
        if (lower_args(lw, cx, e, args, err) != 0)
            return -1;
        /* LANGUAGE.md §3.3: x'' (and z', lambda) is the value the
         * equations give at the state, not a symbol: ∂x''/∂x is not 0
         * (for a pendulum it is -g/l cos x), so no answer is right. */
        uint32_t held;
        if (first_in_mask(lw, &args[0], lw->second, &held))
            return diag_error(err, e->args[0]->span,
                              "diff() of an expression that holds %s: an "
                              "acceleration or a multiplier is the value "
                              "the equations give at the state, not a "
                              "symbol of its own, so it has no partial "
                              "derivatives",
                              expr_var_name(g, held));
        long var = diff_variable(lw, &args[1]);
        if (var < 0)
            return diag_error(err, e->args[1]->span,
                              "diff() differentiates with respect to a "
                              "coordinate, a velocity x', a speed, a "
                              "parameter or t");
        /* a derivative is defined where its expression is (LANGUAGE.md
         * §3.4.1: diff(log(0), t) is no more 0 than log(0) is a number) */
        out->dim = args[0].dim;
        budget_begin(lw);
        for (unsigned k = 0; k < (args[0].dim ? args[0].dim : 1); k++)
            out->c[k] = expr_guard(g, expr_diff(g, args[0].c[k], (uint32_t)var),
                                   args[0].c[k]);
        if (budget_end(lw, e, err))
            return -1;
        return check_size(lw, e, err);
    }
    if (strcmp(f, "dot") == 0 || strcmp(f, "cross") == 0) {
        if (e->nargs != 2)
            return arity_error(e, f[0] == 'd' ? "dot()" : "cross()", 2, err);
        if (lower_args(lw, cx, e, args, err) != 0)
            return -1;
        for (int k = 0; k < 2; k++)
            if (args[k].dim == 0)
                return diag_error(err, e->args[k]->span,
                                  "%s() needs vectors, but this is a scalar",
                                  f);
        if (args[0].dim != args[1].dim)
            return diag_error(err, e->span,
                              "%s() of a %u-vector and a %u-vector", f,
                              args[0].dim, args[1].dim);
        if (f[0] == 'd') {
            const expr_t *s = expr_num(g, 0);
            for (unsigned k = 0; k < args[0].dim; k++)
                s = expr_add(g, s, expr_mul(g, args[0].c[k], args[1].c[k]));
            *out = scalar(s);
            return 0;
        }
        if (args[0].dim != 3)
            return diag_error(err, e->span, "cross() needs 3-vectors");
        const expr_t *const *u = args[0].c, *const *v = args[1].c;
        out->dim = 3;
        out->c[0] = expr_sub(g, expr_mul(g, u[1], v[2]), expr_mul(g, u[2], v[1]));
        out->c[1] = expr_sub(g, expr_mul(g, u[2], v[0]), expr_mul(g, u[0], v[2]));
        out->c[2] = expr_sub(g, expr_mul(g, u[0], v[1]), expr_mul(g, u[1], v[0]));
        return 0;
    }
    if (strcmp(f, "norm") == 0) {
        if (e->nargs != 1)
            return arity_error(e, "norm()", 1, err);
        if (lower_args(lw, cx, e, args, err) != 0)
            return -1;
        if (args[0].dim == 0)
            return diag_error(err, e->args[0]->span,
                              "norm() needs a vector; for a scalar use abs()");
        const expr_t *s = expr_num(g, 0);
        for (unsigned k = 0; k < args[0].dim; k++)
            s = expr_add(g, s, expr_mul(g, args[0].c[k], args[0].c[k]));
        *out = scalar(expr_call(g, EXPR_SQRT, s, NULL));
        return 0;
    }
    int op = expr_op_lookup(f);
    if (op < 0 || op == EXPR_CONST || op == EXPR_VAR || op == EXPR_ADD ||
        op == EXPR_MUL || op == EXPR_POW) {
        size_t idx;
        model_kind_t k = model_lookup(&lw->model, f, &idx, NULL);
        if (k == MODEL_BUILTIN)
            return diag_error(err, e->name_span,
                              "'%s' is %s, not a function: write it "
                              "without arguments",
                              f, strcmp(f, "t") == 0 ? "time" : "the number pi");
        if (k != MODEL_NONE)
            return diag_error(err, e->name_span,
                              "'%s' is %s, not a function: write it "
                              "without arguments",
                              f, model_kind_name(k));
        const char *const *known = lower_known_names(lw);
        const char *best = source_closest(f, known);
        if (best)
            return diag_error(err, e->name_span,
                              "unknown function '%s'; did you mean '%s'?", f,
                              best);
        return diag_error(err, e->name_span,
                          "unknown function '%s': `help functions` lists "
                          "the built-in ones, and `let %s(a) = ...` "
                          "declares one",
                          f, f);
    }
    size_t want = (size_t)expr_op_arity((expr_op_t)op);
    if (e->nargs != want) {
        char what[64];
        snprintf(what, sizeof what, "%s()", f);
        return arity_error(e, what, want, err);
    }
    if (lower_args(lw, cx, e, args, err) != 0)
        return -1;
    for (size_t k = 0; k < e->nargs; k++)
        if (args[k].dim != 0)
            return diag_error(err, e->args[k]->span,
                              "%s() needs a scalar, but this is %s", f,
                              shape_name(args[k].dim));
    *out = scalar(expr_call(g, (expr_op_t)op, args[0].c[0],
                            want == 2 ? args[1].c[0] : NULL));
    return 0;
}

/* ---- the recursive lowering ------------------------------------------ */

static int lower_name(lower_t *lw, ctx_t *cx, const ast_expr_t *e,
                      value_t *out, diag_t *err)
{
    const char *name = e->name;
    expr_graph_t *g = lw->g;
    if (cx->frame)
        for (size_t i = 0; i < cx->frame->n; i++)
            if (strcmp(cx->frame->names[i].name, name) == 0) {
                *out = cx->frame->values[i];
                return 0;
            }
    size_t idx;
    model_kind_t kind = model_lookup(&lw->model, name, &idx, NULL);
    switch (kind) {
    case MODEL_BUILTIN:
        *out = scalar(strcmp(name, "t") == 0 ? expr_var(g, lw->t)
                                             : expr_num(g, M_PI));
        return 0;
    case MODEL_PARAM:
        if (cx->mode == LOWER_MODEL)
            lw->param_read[idx] = true;
        *out = scalar(expr_var(g, lw->p[idx]));
        return 0;
    case MODEL_INPUT:
        *out = scalar(expr_var(g, lw->in[idx]));
        return 0;
    case MODEL_OUTPUT: {
        /* An output names an expression of the state for C and D
         * (§7.2.1), and for print and table; it is no part of the
         * model, which it would make depend on itself. */
        if (cx->mode != LOWER_QUERY)
            return diag_error(err, e->span,
                              "'%s' is an output, which only print, table, "
                              "show and linearize read; write its "
                              "expression here, or a let",
                              name);
        for (unsigned k = 0; k < cx->nexpanding; k++)
            if (strcmp(cx->expanding[k], name) == 0)
                return diag_error(err, e->span,
                                  "'%s' is defined in terms of itself", name);
        if (cx->nexpanding >= LOWER_MAX_DEPTH)
            return diag_error(err, e->span,
                              "names nested too deeply (more than %d "
                              "levels)",
                              LOWER_MAX_DEPTH);
        ctx_t inner = *cx;
        inner.frame = NULL;
        inner.depth = cx->depth + 1;
        inner.expanding[inner.nexpanding++] = name;
        return lower_rec(lw, &inner, lw->model.outputs.v[idx].value, out,
                         err);
    }
    case MODEL_COORD:
        *out = scalar(expr_var(g, lw->q[idx]));
        return 0;
    case MODEL_SPEED:
        *out = scalar(expr_var(g, lw->z[idx]));
        return 0;
    case MODEL_LET: {
        const ast_stmt_t *st = lw->model.lets.v[idx].stmt;
        if (st->u.let.is_function)
            return diag_error(err, e->span,
                              "'%s' is a function of %zu argument%s: call "
                              "it as %s(...)",
                              name, st->u.let.nparams,
                              st->u.let.nparams == 1 ? "" : "s", name);
        for (unsigned k = 0; k < cx->nexpanding; k++)
            if (strcmp(cx->expanding[k], name) == 0)
                return diag_error(err, e->span,
                                  "'%s' is defined in terms of itself", name);
        if (cx->nexpanding >= LOWER_MAX_DEPTH)
            return diag_error(err, e->span,
                              "lets nested too deeply (more than %d levels)",
                              LOWER_MAX_DEPTH);
        if (cx->mode == LOWER_MODEL)
            lw->let_read[idx] = true;
        memo_t *memo = &lw->let_memo[cx->mode][idx];
        if (memo->state == 2) {
            *out = memo->v;
            return 0;
        }
        ctx_t inner = *cx;
        inner.frame = NULL;
        inner.depth = cx->depth + 1;
        inner.expanding[inner.nexpanding++] = name;
        if (lower_rec(lw, &inner, st->u.let.body, out, err) != 0)
            return -1;
        if (lw->root && lw->root[idx] && out->dim >= 2)
            translation_add(lw, out); /* a root of the positions moves */
        memo->v = *out;
        memo->state = 2;
        return 0;
    }
    case MODEL_KINETIC:
        return kinetic_whole(lw, cx, e->span, out, err);
    case MODEL_POTENTIAL:
    case MODEL_LAGRANGIAN:
        return energy_value(lw, cx, kind, e->span, out, err);
    case MODEL_PARTICLE:
        return particle_position(lw, cx, idx, e->span, out, err);
    case MODEL_CONSTRAINT:
        return diag_error(err, e->span,
                          "'%s' is a constraint, not a value; its multiplier "
                          "is lambda(%s)",
                          name, name);
    case MODEL_FRAME:
        return diag_error(err, e->span,
                          "'%s' is a frame, not a value; its unit vectors "
                          "are %s.x, %s.y and %s.z",
                          name, name, name, name);
    case MODEL_BODY:
        return diag_error(err, e->span,
                          "'%s' is a body, not a value; velocity(P, %s) is "
                          "the velocity of its point at P",
                          name, name);
    case MODEL_NONE:
        break;
    }
    return unknown_name(lw, cx, name, e->span, err);
}

static int lower_prime(lower_t *lw, ctx_t *cx, const ast_expr_t *e,
                       value_t *out, diag_t *err)
{
    value_t a;
    if (lower_rec(lw, cx, e->a, &a, err) != 0)
        return -1;
    if (value_depends_mask(lw, &a, lw->second))
        return diag_error(err, e->span,
                          "third time derivatives are not available: this "
                          "is the derivative of an acceleration");
    out->dim = a.dim;
    budget_begin(lw);
    for (unsigned k = 0; k < (a.dim ? a.dim : 1); k++) /* as diff() */
        out->c[k] = expr_guard(lw->g, expr_dt(lw->g, a.c[k], lw->dvar),
                               a.c[k]);
    if (budget_end(lw, e, err) || check_size(lw, e, err))
        return -1;
    if (cx->mode == LOWER_MODEL && value_depends_mask(lw, out, lw->second))
        return diag_error(err, e->span,
                          "a second derivative is not allowed in a model "
                          "expression: energies, constraints, forces and "
                          "kinematic equations may use coordinates, "
                          "velocities, speeds, parameters and t");
    return 0;
}

static int lower_binary(lower_t *lw, ctx_t *cx, const ast_expr_t *e,
                        value_t *out, diag_t *err)
{
    value_t a, b;
    if (lower_rec(lw, cx, e->a, &a, err) != 0 ||
        lower_rec(lw, cx, e->b, &b, err) != 0)
        return -1;
    expr_graph_t *g = lw->g;
    switch (e->kind) {
    case AST_ADD:
    case AST_SUB:
        if (a.dim != b.dim)
            return diag_error(err, e->span, "cannot %s %s and %s",
                              e->kind == AST_ADD ? "add" : "subtract",
                              shape_name(a.dim), shape_name(b.dim));
        out->dim = a.dim;
        for (unsigned k = 0; k < (a.dim ? a.dim : 1); k++)
            out->c[k] = e->kind == AST_ADD ? expr_add(g, a.c[k], b.c[k])
                                           : expr_sub(g, a.c[k], b.c[k]);
        return 0;
    case AST_MUL:
        if (a.dim && b.dim)
            return diag_error(err, e->span,
                              "cannot multiply two vectors: use dot() or "
                              "cross()");
        if (a.dim == 0 && b.dim == 0) {
            *out = scalar(expr_mul(g, a.c[0], b.c[0]));
            return 0;
        }
        {
            const value_t *v = a.dim ? &a : &b;
            const expr_t *s = a.dim ? b.c[0] : a.c[0];
            out->dim = v->dim;
            for (unsigned k = 0; k < v->dim; k++)
                out->c[k] = a.dim ? expr_mul(g, v->c[k], s)
                                  : expr_mul(g, s, v->c[k]);
        }
        return 0;
    case AST_DIV:
        if (b.dim)
            return diag_error(err, e->b->span,
                              "cannot divide by a vector");
        out->dim = a.dim;
        for (unsigned k = 0; k < (a.dim ? a.dim : 1); k++)
            out->c[k] = expr_div(g, a.c[k], b.c[0]);
        return 0;
    case AST_POW:
        if (want_scalar(&a, e->a, "the base of ^", err) ||
            want_scalar(&b, e->b, "the exponent of ^", err))
            return -1;
        *out = scalar(expr_pow(g, a.c[0], b.c[0]));
        return 0;
    default:
        break;
    }
    return diag_error(err, e->span, "internal error: unexpected operator");
}

static int lower_rec(lower_t *lw, ctx_t *cx, const ast_expr_t *e,
                     value_t *out, diag_t *err)
{
    expr_graph_t *g = lw->g;
    if (cx->depth > 10 * LOWER_MAX_DEPTH)
        return diag_error(err, e->span, "expression nested too deeply");
    cx->depth++;
    int rc = 0;
    switch (e->kind) {
    case AST_NUM:
        *out = scalar(expr_num(g, e->num));
        break;
    case AST_NAME:
        rc = lower_name(lw, cx, e, out, err);
        break;
    case AST_PRIME:
        rc = lower_prime(lw, cx, e, out, err);
        break;
    case AST_INDEX: {
        value_t a, i;
        if ((rc = lower_rec(lw, cx, e->a, &a, err)) != 0)
            break;
        if ((rc = lower_rec(lw, cx, e->b, &i, err)) != 0)
            break;
        if (a.dim == 0) {
            rc = diag_error(err, e->a->span,
                            "only a vector has components, but this is a "
                            "scalar");
            break;
        }
        if (i.dim != 0 || i.c[0]->op != EXPR_CONST ||
            i.c[0]->value != floor(i.c[0]->value) || i.c[0]->value < 1 ||
            i.c[0]->value > a.dim) {
            rc = diag_error(err, e->b->span,
                            "a component index must be a whole number from "
                            "1 to %u",
                            a.dim);
            break;
        }
        *out = scalar(a.c[(int)i.c[0]->value - 1]);
        break;
    }
    case AST_NEG:
    case AST_POS: {
        value_t a;
        if ((rc = lower_rec(lw, cx, e->a, &a, err)) != 0)
            break;
        *out = a;
        if (e->kind == AST_NEG)
            for (unsigned k = 0; k < (a.dim ? a.dim : 1); k++)
                out->c[k] = expr_neg(g, a.c[k]);
        break;
    }
    case AST_ADD:
    case AST_SUB:
    case AST_MUL:
    case AST_DIV:
    case AST_POW:
        rc = lower_binary(lw, cx, e, out, err);
        break;
    case AST_CALL: {
        long li = find_let(&lw->model, e->name);
        bool shadowed = false;
        if (cx->frame)
            for (size_t i = 0; i < cx->frame->n; i++)
                if (strcmp(cx->frame->names[i].name, e->name) == 0)
                    shadowed = true;
        if (shadowed)
            rc = diag_error(err, e->name_span,
                            "'%s' is an argument, not a function", e->name);
        else if (li >= 0)
            rc = call_let(lw, cx, e, (size_t)li, out, err);
        else
            rc = call_builtin(lw, cx, e, out, err);
        break;
    }
    case AST_MEMBER: {
        const rigid_frame_t *fr;
        const char *mb = e->member;
        if ((rc = frame_named(lw, e->name, e->name_span,
                              "A.x, A.y, A.z are the unit vectors of frame A",
                              &fr, err)) != 0)
            break;
        if (mb[1] != '\0' || mb[0] < 'x' || mb[0] > 'z') {
            rc = diag_error(err, e->span,
                            "a frame's unit vectors are %s.x, %s.y and %s.z",
                            e->name, e->name, e->name);
            break;
        }
        out->dim = 3;
        for (int k = 0; k < 3; k++)
            out->c[k] = fr->axis[mb[0] - 'x'][k];
        break;
    }
    case AST_VECTOR: {
        if (e->nargs != 2 && e->nargs != 3) {
            rc = diag_error(err, e->span,
                            "a vector has 2 or 3 components, not %zu",
                            e->nargs);
            break;
        }
        value_t c[3];
        if ((rc = lower_args(lw, cx, e, c, err)) != 0)
            break;
        out->dim = (unsigned)e->nargs;
        for (size_t k = 0; k < e->nargs; k++) {
            if (c[k].dim != 0) {
                rc = diag_error(err, e->args[k]->span,
                                "a vector's components must be scalars, but "
                                "this is %s",
                                shape_name(c[k].dim));
                break;
            }
            out->c[k] = c[k].c[0];
        }
        break;
    }
    }
    cx->depth--;
    return rc;
}

void lower_set_stop(lower_t *lw, const nh_stop_t *stop) { lw->stop = stop; }

int lower_expr(lower_t *lw, const ast_expr_t *e, lower_mode_t mode,
               value_t *out, diag_t *err)
{
    lw->count_base = expr_graph_count(lw->g);
    lw->edge_base = expr_graph_edges(lw->g);
    ctx_t cx = {mode, NULL, 0, {0}, 0};
    if (lower_rec(lw, &cx, e, out, err) != 0)
        return -1;
    uint32_t bad;
    if (mode == LOWER_CONST && first_in_mask(lw, out, lw->not_const, &bad))
        /* Only parameters and numbers: nothing of the state. */
        return diag_error(err, e->span,
                          "this value must be a number or made of "
                          "parameters, but it depends on %s",
                          expr_var_name(lw->g, bad));
    return 0;
}

unsigned lower_dropped(const lower_t *lw, const char *name, int dropped[3])
{
    long c = model_constraint_index(&lw->model, name);
    for (int k = 0; k < 3; k++)
        dropped[k] = 0;
    if (c < 0)
        return 0;
    const con_rows_t *cr = &lw->cons[c];
    for (unsigned k = 0; k < cr->dim; k++)
        dropped[k] = cr->row[k] < 0 ? (int)-cr->row[k] : 0;
    return cr->dim;
}

bool lower_needs_accel(const lower_t *lw, const value_t *v)
{
    return value_depends_mask(lw, v, lw->second);
}

bool lower_needs_lambda(const lower_t *lw, const value_t *v)
{
    unsigned n = v->dim ? v->dim : 1;
    for (unsigned k = 0; k < n; k++)
        for (size_t c = 0; c < lw->sys.r; c++)
            if (expr_depends(lw->g, v->c[k], lw->lam[c]))
                return true;
    return lower_needs_dropped(lw, v);
}

bool lower_needs_dropped(const lower_t *lw, const value_t *v)
{
    unsigned n = v->dim ? v->dim : 1;
    for (unsigned k = 0; k < n; k++)
        for (size_t c = 0; c < lw->ndropped; c++)
            if (expr_depends(lw->g, v->c[k], lw->dvars[c]))
                return true;
    return false;
}

size_t lower_dropped_reactions(const lower_t *lw, const uint32_t **vars,
                               const char *const **names)
{
    *vars = lw->dvars;
    *names = lw->dnames;
    return lw->ndropped;
}

/* ---- the model ------------------------------------------------------- */

/* Variables are numbered as they are declared, and placed in the
 * canonical order (expr_var_set_order) by role: every coordinate's x, x',
 * x'' in declaration order, then the speeds' z, z', the parameters, t,
 * the multipliers.  A fresh lowering declares them in that order, so
 * number and place agree; lower_extend() declares a new parameter,
 * coordinate, speed or multiplier after all the others, with the place
 * a fresh lowering would give it, so the nodes are the same either way. */
enum { ROLE_COORD, ROLE_SPEED, ROLE_PARAM, ROLE_INPUT, ROLE_TIME,
       ROLE_LAMBDA };

/* Variable PRE NAME POST (x'' is "", "x", "''"; lambda(c) is "lambda(",
 * "c", ")") with ROLE and POS in its role. */
static uint32_t declare(lower_t *lw, const char *pre, const char *name,
                        const char *post, int role, size_t pos)
{
    size_t n = strlen(pre) + strlen(name) + strlen(post) + 1;
    char *buf = xmalloc(n); /* a name may be as long as a line */
    snprintf(buf, n, "%s%s%s", pre, name, post);
    uint32_t v = expr_var_declare(lw->g, buf);
    free(buf);
    expr_var_set_order(lw->g, v, (uint64_t)role << 48 | pos);
    if (v >= lw->cap_var) {
        size_t cap = 2 * lw->cap_var + 64;
        lw->dvar = xrealloc(lw->dvar, cap * sizeof *lw->dvar);
        lw->second = xrealloc(lw->second, cap * sizeof *lw->second);
        lw->velocity = xrealloc(lw->velocity, cap * sizeof *lw->velocity);
        lw->not_const = xrealloc(lw->not_const, cap * sizeof *lw->not_const);
        lw->input = xrealloc(lw->input, cap * sizeof *lw->input);
        lw->cap_var = cap;
    }
    lw->dvar[v] = NULL;
    lw->second[v] = lw->velocity[v] = false;
    /* an input is a constant as a parameter is: its derivative is 0 */
    lw->not_const[v] = role != ROLE_PARAM && role != ROLE_INPUT;
    lw->input[v] = role == ROLE_INPUT;
    return v;
}

/* Room for N entries in each of the arrays of one role, all of capacity
 * *CAP, given as pointers to the array pointers and their element sizes
 * (NULL-terminated). */
static void grow_role(size_t *cap, size_t n, void **arrays[],
                      const size_t *elt)
{
    if (n < *cap)
        return;
    size_t c = 2 * *cap + 8;
    while (c <= n)
        c *= 2;
    for (size_t k = 0; arrays[k]; k++)
        *arrays[k] = xrealloc(*arrays[k], c * elt[k]);
    *cap = c;
}

/* Coordinate I of lw->model: x, x', x''. */
static void declare_coord(lower_t *lw, size_t i)
{
    void **arr[] = {(void **)&lw->q, (void **)&lw->qd, (void **)&lw->qdd,
                    (void **)&lw->qname, NULL};
    const size_t elt[] = {sizeof *lw->q, sizeof *lw->qd, sizeof *lw->qdd,
                          sizeof *lw->qname};
    grow_role(&lw->cap_q, i + 1, arr, elt);
    expr_graph_t *g = lw->g;
    const char *nm = lw->model.coords.v[i].name;
    lw->qname[i] = nm;
    lw->q[i] = declare(lw, "", nm, "", ROLE_COORD, 3 * i);
    lw->qd[i] = declare(lw, "", nm, "'", ROLE_COORD, 3 * i + 1);
    lw->qdd[i] = declare(lw, "", nm, "''", ROLE_COORD, 3 * i + 2);
    /* the order of factors in print (LANGUAGE.md §7.1): parameters, t,
     * coordinates, velocities and speeds, accelerations, multipliers */
    expr_var_set_rank(g, lw->q[i], NH_RANK_COORD);
    expr_var_set_rank(g, lw->qd[i], NH_RANK_VELOCITY);
    expr_var_set_rank(g, lw->qdd[i], NH_RANK_ACCEL);
    lw->dvar[lw->q[i]] = expr_var(g, lw->qd[i]);
    lw->dvar[lw->qd[i]] = expr_var(g, lw->qdd[i]);
    lw->second[lw->qdd[i]] = true;
    lw->velocity[lw->qd[i]] = true;
}

/* Speed I: z, z'. */
static void declare_speed(lower_t *lw, size_t i)
{
    void **arr[] = {(void **)&lw->z, (void **)&lw->zd, (void **)&lw->zname,
                    NULL};
    const size_t elt[] = {sizeof *lw->z, sizeof *lw->zd, sizeof *lw->zname};
    grow_role(&lw->cap_z, i + 1, arr, elt);
    const char *nm = lw->model.speeds.v[i].name;
    lw->zname[i] = nm;
    lw->z[i] = declare(lw, "", nm, "", ROLE_SPEED, 2 * i);
    lw->zd[i] = declare(lw, "", nm, "'", ROLE_SPEED, 2 * i + 1);
    expr_var_set_rank(lw->g, lw->z[i], NH_RANK_VELOCITY);
    expr_var_set_rank(lw->g, lw->zd[i], NH_RANK_ACCEL);
    lw->dvar[lw->z[i]] = expr_var(lw->g, lw->zd[i]);
    lw->second[lw->zd[i]] = true;
    lw->velocity[lw->z[i]] = true;
}

/* Parameter I (its derivative is 0: dvar stays NULL). */
static void declare_param(lower_t *lw, size_t i)
{
    void **arr[] = {(void **)&lw->p, (void **)&lw->pname,
                    (void **)&lw->param_read, NULL};
    const size_t elt[] = {sizeof *lw->p, sizeof *lw->pname,
                          sizeof *lw->param_read};
    grow_role(&lw->cap_p, i + 1, arr, elt);
    const char *nm = lw->model.params.v[i].name;
    lw->pname[i] = nm;
    lw->p[i] = declare(lw, "", nm, "", ROLE_PARAM, i);
    expr_var_set_rank(lw->g, lw->p[i], NH_RANK_PARAM);
    lw->param_read[i] = false;
}

/* Input I (LANGUAGE.md §7.2.1): a parameter by role, declared after
 * them (inputs come after the parameters in generated code, §8.1). */
static void declare_input(lower_t *lw, size_t i)
{
    void **arr[] = {(void **)&lw->in, (void **)&lw->iname, NULL};
    const size_t elt[] = {sizeof *lw->in, sizeof *lw->iname};
    grow_role(&lw->cap_in, i + 1, arr, elt);
    const char *nm = lw->model.inputs.v[i].name;
    lw->iname[i] = nm;
    lw->in[i] = declare(lw, "", nm, "", ROLE_INPUT, i);
    expr_var_set_rank(lw->g, lw->in[i], NH_RANK_PARAM);
}

/* The multiplier of the constraints' row A, named in lw->cname:
 * lambda(NAME), or lambda(NAME[k]) for a component of a vector
 * constraint.  Declared once the rows are known (the components that
 * vanish identically have none), with row A's place among the
 * multipliers, which come last. */
static void declare_multiplier(lower_t *lw, size_t a)
{
    void **arr[] = {(void **)&lw->lam, NULL};
    const size_t elt[] = {sizeof *lw->lam};
    grow_role(&lw->cap_lam, a + 1, arr, elt);
    lw->lam[a] = declare(lw, "lambda(", lw->cname[a], ")", ROLE_LAMBDA, a);
    expr_var_set_rank(lw->g, lw->lam[a], NH_RANK_MULTIPLIER);
    lw->second[lw->lam[a]] = true;
}

static const char *component_name(lower_t *lw, const char *name,
                                  unsigned k);

/* The reactions of the dropped components of constraint A of the model
 * (LANGUAGE.md §4, v3: lambda(NAME[k]) is the force along a dropped
 * component too), declared after the multipliers of the rows, in the
 * order of the constraints: their values are not the equations' but
 * react.h's, found from a translated lowering. */
static void declare_dropped(lower_t *lw, size_t a)
{
    con_rows_t *cr = &lw->cons[a];
    const char *name = lw->model.constraints.v[a].name;
    for (unsigned k = 0; k < cr->dim; k++) {
        if (cr->row[k] >= 0)
            continue;
        const char *row = component_name(lw, name, k + 1);
        uint32_t v = declare(lw, "lambda(", row, ")", ROLE_LAMBDA,
                             ((size_t)1 << 32) + lw->ndropped);
        expr_var_set_rank(lw->g, v, NH_RANK_MULTIPLIER);
        lw->second[v] = true;
        cr->dlam[k] = v;
        xgrow(&lw->dvars, &lw->cap_dropped, lw->ndropped + 1,
              sizeof *lw->dvars);
        lw->dnames = xrealloc(lw->dnames,
                              lw->cap_dropped * sizeof *lw->dnames);
        lw->dvars[lw->ndropped] = v;
        lw->dnames[lw->ndropped++] = row;
    }
}

/* Room for the memos and marks of N lets; the new ones cleared. */
static void grow_lets(lower_t *lw, size_t old, size_t n)
{
    if (n + 1 > lw->cap_let) {
        size_t c = 2 * lw->cap_let + 8;
        while (c < n + 1)
            c *= 2;
        for (int k = 0; k < 3; k++)
            lw->let_memo[k] = xrealloc(lw->let_memo[k],
                                       c * sizeof *lw->let_memo[k]);
        lw->let_read = xrealloc(lw->let_read, c * sizeof *lw->let_read);
        lw->cap_let = c;
    }
    for (int k = 0; k < 3; k++)
        memset(lw->let_memo[k] + old, 0,
               (n + 1 - old) * sizeof *lw->let_memo[k]);
    memset(lw->let_read + old, 0, (n + 1 - old) * sizeof *lw->let_read);
}

/* The variables of the coordinates, speeds and parameters, and t.  The
 * multipliers come once the constraints' rows are known (lower_model). */
static void declare_variables(lower_t *lw)
{
    const model_t *m = &lw->model;
    for (size_t i = 0; i < m->coords.n; i++)
        declare_coord(lw, i);
    for (size_t i = 0; i < m->speeds.n; i++)
        declare_speed(lw, i);
    for (size_t i = 0; i < m->params.n; i++)
        declare_param(lw, i);
    for (size_t i = 0; i < m->inputs.n; i++)
        declare_input(lw, i);
    lw->t = declare(lw, "", "t", "", ROLE_TIME, 0);
    expr_var_set_rank(lw->g, lw->t, NH_RANK_TIME);
    lw->dvar[lw->t] = expr_num(lw->g, 1);
}

static int lower_scalar_model(lower_t *lw, const ast_expr_t *e,
                              const char *what, const expr_t **out,
                              diag_t *err)
{
    value_t v;
    if (lower_expr(lw, e, LOWER_MODEL, &v, err) != 0)
        return -1;
    if (want_scalar(&v, e, what, err) != 0)
        return -1;
    *out = v.c[0];
    return 0;
}


/* ---- the declarations, one at a time ----------------------------------
 *
 * Each helper lowers one declaration of lw->model into arrays its caller
 * passes: lower_model() passes the system's own arrays, lower_extend()
 * fresh copies that it installs only when every new declaration lowered.
 */

/* Particle I: its entry *SP of the system and its kinetic energy
 * ½ m dot(P', P') (LANGUAGE.md §4 `particle`) in *TERM. */
static int lower_particle(lower_t *lw, size_t i, nh_particle_t *sp,
                          const expr_t **term, diag_t *err)
{
    expr_graph_t *g = lw->g;
    ctx_t cx = {LOWER_MODEL, NULL, 0, {0}, 0};
    const model_particle_t *pt = &lw->model.particles.v[i];
    value_t pos, mass;
    if (particle_position(lw, &cx, i, pt->span, &pos, err) != 0)
        return -1;
    if (lower_memo(lw, &cx, &lw->particle_mass[i], pt->mass, pt->name,
                   pt->span, &mass, err) != 0)
        return -1;
    if (want_scalar(&mass, pt->mass, "a mass", err) != 0)
        return -1;
    memset(sp, 0, sizeof *sp);
    sp->name = pt->name;
    sp->span = pt->span;
    sp->mass = mass.c[0];
    sp->dim = pos.dim;
    const expr_t *v2 = expr_num(g, 0);
    for (unsigned k = 0; k < pos.dim; k++) {
        sp->pos[k] = pos.c[k];
        const expr_t *vk = expr_dt(g, pos.c[k], lw->dvar);
        v2 = expr_add(g, v2, expr_mul(g, vk, vk));
    }
    *term = expr_mul(g, expr_mul(g, expr_num(g, 0.5), mass.c[0]), v2);
    return 0;
}

/* Body I: its entry lw->bodies[i] of the system and its kinetic energy
 * M/2 dot(G', G') + ½ wᵀ I w (LANGUAGE.md §4.1) in lw->body_T[i]. */
static int lower_body(lower_t *lw, size_t i, diag_t *err)
{
    expr_graph_t *g = lw->g;
    ctx_t cx = {LOWER_MODEL, NULL, 0, {0}, 0};
    const model_body_t *b = &lw->model.bodies.v[i];
    value_t mass, G;
    const rigid_frame_t *f;
    if (body_position(lw, &cx, i, b->span, &G, err) != 0 ||
        lower_memo(lw, &cx, &lw->body_mass[i], b->mass, b->name, b->span,
                   &mass, err) != 0 ||
        want_scalar(&mass, b->mass, "a mass", err) != 0 ||
        frame_named(lw, b->frame, b->frame_span, "a body is fixed in a frame",
                    &f, err) != 0)
        return -1;
    /* The inertia: three principal moments or the six entries. */
    const ast_expr_t *in = b->inertia;
    const expr_t *I[6];
    if (in->kind == AST_VECTOR && in->nargs != 3 && in->nargs != 6)
        return diag_error(err, in->span,
                          "an inertia list has 3 entries (the principal "
                          "moments [I1, I2, I3]) or 6 ([Ixx, Iyy, Izz, Ixy, "
                          "Iyz, Izx]), not %zu",
                          in->nargs);
    if (in->kind == AST_VECTOR && in->nargs == 6) {
        for (size_t k = 0; k < 6; k++) {
            value_t v;
            if (lower_rec(lw, &cx, in->args[k], &v, err) != 0 ||
                want_scalar(&v, in->args[k], "an entry of the inertia", err))
                return -1;
            I[k] = v.c[0];
        }
    } else {
        value_t v;
        if (lower_rec(lw, &cx, in, &v, err) != 0)
            return -1;
        if (v.dim != 3)
            return diag_error(err, in->span,
                              "the inertia of body %s is [I1, I2, I3] or "
                              "[Ixx, Iyy, Izz, Ixy, Iyz, Izx], but this is "
                              "%s",
                              b->name, shape_name(v.dim));
        for (int k = 0; k < 3; k++) {
            I[k] = v.c[k];
            I[3 + k] = expr_num(g, 0);
        }
    }
    const expr_t *Gdot[3];
    for (int k = 0; k < 3; k++)
        Gdot[k] = expr_dt(g, G.c[k], lw->dvar);
    nh_body_t *sb = &lw->bodies[i];
    sb->name = b->name;
    sb->mass = mass.c[0];
    rigid_body_axes(f, I, g, sb->axis, sb->wloc, sb->waxes);
    /* the equations' (eom_pform) in three terms, not the composed sum */
    rigid_omega_axes(g, f, sb->omega);
    for (int k = 0; k < 3; k++)
        sb->pos[k] = G.c[k];
    memcpy(sb->inertia, I, sizeof I);
    lw->body_T[i] = rigid_kinetic(g, sb->wloc, mass.c[0], Gdot, I);
    return 0;
}

/* ---- inputs and the kinetic energy (LANGUAGE.md §7.2.1) ---------------
 *
 * An input enters as a parameter does: its time derivative is 0.  In a
 * kinetic energy that is wrong — d/dt ∂T/∂q' of a T that holds an input
 * needs the input's rate, which a signal has and nh would drop — so an
 * input in a kinetic energy (a `kinetic`, a particle's or body's energy,
 * the velocity terms of a `lagrangian`) is an error, at the input's name
 * where it can be found. */

/* The place of the first input that AST E reads, directly or through
 * lets and the frames it names (DEPTH bounds the search); false when
 * none is found. */
static bool input_in_ast(const lower_t *lw, const ast_expr_t *e,
                         unsigned depth, src_span_t *at);

static bool input_in_frame(const lower_t *lw, const char *frame,
                           unsigned depth, src_span_t *at)
{
    const model_t *m = &lw->model;
    for (unsigned k = 0; frame && k < LOWER_MAX_DEPTH; k++) {
        long i = model_find(m, MODEL_FRAME, frame);
        if (i < 0)
            return false;
        const model_frame_t *f = &m->frames.v[i];
        if ((f->angle && input_in_ast(lw, f->angle, depth, at)) ||
            (f->axis && input_in_ast(lw, f->axis, depth, at)))
            return true;
        frame = f->parent;
    }
    return false;
}

static bool input_in_ast(const lower_t *lw, const ast_expr_t *e,
                         unsigned depth, src_span_t *at)
{
    if (!e || depth > LOWER_MAX_DEPTH)
        return false;
    const model_t *m = &lw->model;
    size_t idx;
    switch (e->kind) {
    case AST_NAME:
        switch (model_lookup(m, e->name, &idx, NULL)) {
        case MODEL_INPUT:
            *at = e->span;
            return true;
        case MODEL_LET:
            return input_in_ast(lw, m->lets.v[idx].stmt->u.let.body,
                                depth + 1, at);
        case MODEL_PARTICLE:
            return input_in_ast(lw, m->particles.v[idx].position, depth + 1,
                                at);
        default:
            return false;
        }
    case AST_MEMBER:
        return input_in_frame(lw, e->name, depth + 1, at);
    case AST_CALL: {
        for (size_t k = 0; k < e->nargs; k++)
            if (input_in_ast(lw, e->args[k], depth + 1, at))
                return true;
        if (model_lookup(m, e->name, &idx, NULL) == MODEL_LET)
            return input_in_ast(lw, m->lets.v[idx].stmt->u.let.body,
                                depth + 1, at);
        /* omega(A), on(A, v), velocity(P, B): the frames named */
        for (size_t k = 0; k < e->nargs; k++)
            if (e->args[k]->kind == AST_NAME) {
                long b = model_find(m, MODEL_BODY, e->args[k]->name);
                const char *fr = b >= 0 ? m->bodies.v[b].frame
                                        : e->args[k]->name;
                if (input_in_frame(lw, fr, depth + 1, at))
                    return true;
            }
        return false;
    }
    case AST_VECTOR:
        for (size_t k = 0; k < e->nargs; k++)
            if (input_in_ast(lw, e->args[k], depth + 1, at))
                return true;
        return false;
    default:
        return input_in_ast(lw, e->a, depth + 1, at) ||
               input_in_ast(lw, e->b, depth + 1, at);
    }
}

/* The error for an input in the kinetic energy WHAT ("the kinetic
 * energy T", "the kinetic energy of body B"), at the input found in the
 * ASTs E[0..NE) (or the frame FRAME), else at DECL. */
static int input_in_kinetic(const lower_t *lw, const char *what,
                            const ast_expr_t *const *e, size_t ne,
                            const char *frame, src_span_t decl, diag_t *err)
{
    src_span_t at = decl;
    bool found = false;
    for (size_t k = 0; k < ne && !found; k++)
        found = input_in_ast(lw, e[k], 0, &at);
    if (!found && frame)
        found = input_in_frame(lw, frame, 0, &at);
    char name[128] = "an input";
    size_t len = 0;
    const char *text = found ? source_text(lw->src, at.file, &len) : NULL;
    if (text && at.end <= len && at.end - at.begin < sizeof name - 3)
        snprintf(name, sizeof name, "'%.*s'", (int)(at.end - at.begin),
                 text + at.begin);
    return diag_error(err, at,
                      "%s is an input, which cannot enter %s: the equations "
                      "take an input's time derivative as 0, which "
                      "d/dt dT/dq' would need; make it a parameter, or let "
                      "the input act through a force, a torque or the "
                      "potential",
                      name, what);
}

/* Whether the ASTs E[0..NE) or the frame FRAME read an input: a
 * position, a mass or a frame that moves with an input gives T a term in
 * the input's rate, which nh would drop (it is no longer in T at all). */
static bool inputs_in(const lower_t *lw, const ast_expr_t *const *e,
                      size_t ne, const char *frame)
{
    src_span_t at;
    for (size_t k = 0; k < ne; k++)
        if (input_in_ast(lw, e[k], 0, &at))
            return true;
    return frame && input_in_frame(lw, frame, 0, &at);
}

/* Whether E depends on an input. */
static bool reads_input(const lower_t *lw, const expr_t *e)
{
    return lw->sys.ni > 0 && expr_depends_any(lw->g, e, lw->input);
}

/* Particles P0..P1-1 of the model (into PARTS) and bodies B0..B1-1: their
 * kinetic energies into lw->particle_T and lw->body_T (lower_sums adds
 * them up).  Meanwhile Tp_state is 1: one of them that reads the kinetic
 * energy's name reads its own term (kinetic_whole). */
static int lower_masses(lower_t *lw, size_t p0, size_t p1, size_t b0,
                        size_t b1, nh_particle_t *parts, diag_t *err)
{
    int state = lw->Tp_state;
    if (state == 2 && p0 == p1 && b0 == b1)
        return 0;
    lw->Tp_state = 1;
    int rc = 0;
    const model_t *m = &lw->model;
    char what[160];
    for (size_t i = p0; i < p1 && !rc; i++) {
        rc = lower_particle(lw, i, &parts[i], &lw->particle_T[i], err);
        const model_particle_t *pt = &m->particles.v[i];
        const ast_expr_t *e[2] = {pt->mass, pt->position};
        if (!rc && lw->sys.ni && (reads_input(lw, lw->particle_T[i]) ||
                                  inputs_in(lw, e, 2, NULL))) {
            snprintf(what, sizeof what, "the kinetic energy of particle %s",
                     pt->name);
            rc = input_in_kinetic(lw, what, e, 2, NULL, pt->span, err);
        }
    }
    for (size_t i = b0; i < b1 && !rc; i++) {
        rc = lower_body(lw, i, err);
        const model_body_t *b = &m->bodies.v[i];
        const ast_expr_t *e[3] = {b->mass, b->position, b->inertia};
        if (!rc && lw->sys.ni && (reads_input(lw, lw->body_T[i]) ||
                                  inputs_in(lw, e, 3, b->frame))) {
            snprintf(what, sizeof what, "the kinetic energy of body %s",
                     b->name);
            rc = input_in_kinetic(lw, what, e, 3, b->frame, b->decl, err);
        }
    }
    if (rc) {
        lw->Tp_state = state;
        return -1;
    }
    lw->sums_stale = lw->energies_stale = true;
    lw->Tp_state = 2;
    return 0;
}

/* The sum of the N terms T (NULL entries left out), as adding them one
 * by one to 0 makes it. */
static const expr_t *sum_terms(expr_graph_t *g, const expr_t *const *t,
                               size_t n)
{
    const expr_t **a = xcalloc(n + 1, sizeof *a);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (t[i])
            a[k++] = t[i];
    const expr_t *s = k == 1 ? expr_add(g, expr_num(g, 0), a[0])
                             : expr_sum(g, a, k);
    free(a);
    return s;
}

/* lw->Tp and lw->Vg from the terms, when they changed. */
static void lower_sums(lower_t *lw)
{
    if (!lw->sums_stale)
        return;
    expr_graph_t *g = lw->g;
    size_t np = lw->model.particles.n, nb = lw->model.bodies.n;
    if (lw->Tp_state != 2)
        np = nb = 0; /* the terms are not lowered yet */
    lw->Tp = expr_add(g, sum_terms(g, lw->particle_T, np),
                      sum_terms(g, lw->body_T, nb));
    lw->Vg = expr_add(g, sum_terms(g, lw->particle_Vg, np),
                      sum_terms(g, lw->body_Vg, nb));
    lw->sums_stale = false;
}

/* Gravity's potential −m dot(g, P) of a particle or body of mass MASS at
 * POS (DIM components), added to *V (LANGUAGE.md §4.1); an error at
 * WHERE when the dimensions differ. */
static int add_gravity(lower_t *lw, const expr_t *mass,
                       const expr_t *const *pos, size_t dim,
                       const char *what, const char *name, src_span_t where,
                       const expr_t **V, diag_t *err)
{
    const value_t *gv = &lw->gravity;
    if (gv->dim != dim)
        return diag_error(err, where,
                          "gravity is a %u-vector, but %s %s moves in %zu "
                          "dimensions",
                          gv->dim, what, name, dim);
    expr_graph_t *g = lw->g;
    *V = expr_neg(g, expr_mul(g, mass, rigid_dot(g, gv->c, pos, gv->dim)));
    return 0;
}

/* Gravity's potential of particles P0..P1-1 (in PARTS) and bodies
 * B0..B1-1, which are lowered, into lw->particle_Vg and lw->body_Vg
 * (lower_sums adds them up).  One that
 * moves in other dimensions than gravity's vector has is an error at
 * *WHERE (gravity's statement, when it is the one lowered) or else at
 * its own position. */
static int add_weights(lower_t *lw, size_t p0, size_t p1, size_t b0,
                       size_t b1, const nh_particle_t *parts,
                       const src_span_t *where, diag_t *err)
{
    if (lw->gravity.dim == 0 || (p0 == p1 && b0 == b1))
        return 0;
    const model_t *m = &lw->model;
    for (size_t i = p0; i < p1; i++)
        if (add_gravity(lw, parts[i].mass, parts[i].pos, parts[i].dim,
                        "particle", parts[i].name,
                        where ? *where : m->particles.v[i].position->span,
                        &lw->particle_Vg[i], err) != 0)
            return -1;
    for (size_t i = b0; i < b1; i++)
        if (add_gravity(lw, lw->body_mass[i].v.c[0], lw->body_pos[i].v.c, 3,
                        "body", m->bodies.v[i].name,
                        where ? *where : m->bodies.v[i].position->span,
                        &lw->body_Vg[i], err) != 0)
            return -1;
    lw->sums_stale = lw->energies_stale = true;
    return 0;
}

/* T, V and L of the system from the particles' and bodies' energy lw->Tp,
 * gravity's lw->Vg and the energies, which are lowered already (their
 * memos are done). */
static void set_energies(lower_t *lw)
{
    const model_t *m = &lw->model;
    expr_graph_t *g = lw->g;
    lower_sums(lw);
    const expr_t *T = lw->Tp, *V = lw->Vg;
    if (m->kinetic.name)
        T = expr_add(g, T, lw->kinetic.v.c[0]);
    if (m->potential.name)
        V = expr_add(g, V, lw->potential.v.c[0]);
    if (m->lagrangian.name) {
        lw->sys.L = lw->lagrangian.v.c[0];
        lw->sys.T = lw->sys.V = NULL;
    } else {
        lw->sys.T = T;
        lw->sys.V = V;
        lw->sys.L = expr_sub(g, T, V);
    }
    lw->sys.T_only_particles = !m->kinetic.name && m->particles.n > 0 &&
                               m->bodies.n == 0 && !m->lagrangian.name;
    lw->sys.T_only_bodies = !m->kinetic.name && m->bodies.n > 0 &&
                            !m->lagrangian.name;
}

/* Gravity's vector into lw->gravity (dim 0: none). */
static int lower_gravity(lower_t *lw, diag_t *err)
{
    const model_t *m = &lw->model;
    lw->gravity.dim = 0;
    if (!m->gravity)
        return 0;
    ctx_t cx = {LOWER_MODEL, NULL, 0, {0}, 0};
    value_t v;
    if (lower_rec(lw, &cx, m->gravity, &v, err) != 0)
        return -1;
    if (v.dim == 0)
        return diag_error(err, m->gravity->span,
                          "gravity is a vector, like [0, 0, -g], but this is "
                          "a scalar");
    lw->gravity = v;
    return 0;
}

/* The particles, bodies, gravity and energies of the model. */
static int lower_energies(lower_t *lw, diag_t *err)
{
    model_t *m = &lw->model;
    ctx_t cx = {LOWER_MODEL, NULL, 0, {0}, 0};
    value_t v;
    size_t np = m->particles.n, nb = m->bodies.n;
    /* (summed already when a frame's angle read the kinetic energy) */
    if (lw->Tp_state != 2 &&
        lower_masses(lw, 0, np, 0, nb, lw->particles, err) != 0)
        return -1;
    if (lower_gravity(lw, err) != 0)
        return -1;
    src_span_t gspan = m->gravity ? m->gravity->span : SRC_SPAN_NONE;
    if (add_weights(lw, 0, np, 0, nb, lw->particles, &gspan, err) != 0)
        return -1;
    if (m->kinetic.name &&
        energy_value(lw, &cx, MODEL_KINETIC, m->kinetic.span, &v, err))
        return -1;
    if (m->kinetic.name && lw->sys.ni &&
        (reads_input(lw, v.c[0]) || inputs_in(lw, &m->kinetic.value, 1, NULL))) {
        char what[160];
        snprintf(what, sizeof what, "the kinetic energy %s", m->kinetic.name);
        return input_in_kinetic(lw, what, &m->kinetic.value, 1, NULL,
                                m->kinetic.value->span, err);
    }
    if (m->potential.name &&
        energy_value(lw, &cx, MODEL_POTENTIAL, m->potential.span, &v, err))
        return -1;
    if (m->lagrangian.name &&
        energy_value(lw, &cx, MODEL_LAGRANGIAN, m->lagrangian.span, &v, err))
        return -1;
    /* a Lagrangian's velocity terms are its kinetic energy */
    for (size_t i = 0; m->lagrangian.name && lw->sys.ni && i < lw->sys.n;
         i++)
        if (reads_input(lw, expr_diff(lw->g, v.c[0], lw->qd[i]))) {
            char what[160];
            snprintf(what, sizeof what,
                     "the velocity terms of the Lagrangian %s",
                     m->lagrangian.name);
            return input_in_kinetic(lw, what, &m->lagrangian.value, 1, NULL,
                                    m->lagrangian.value->span, err);
        }
    lw->sums_stale = lw->energies_stale = true; /* lower_system sums them */
    return 0;
}

/* A force or torque FO on body I, of value *V, added into Q (n entries):
 * Q_i += dot(F, ∂velocity(P, B)/∂q_i') for `force B at P = F`, and
 * Q_i += dot(M, ∂omega(F)/∂q_i') for `torque B = M` (LANGUAGE.md §4.1).
 * The speeds-based methods project Q through Ψ as for any force. */
static int lower_body_load(lower_t *lw, size_t i, const model_force_t *fo,
                           const value_t *v, const expr_t **Q, diag_t *err)
{
    expr_graph_t *g = lw->g;
    const char *what = fo->torque ? "torque" : "force";
    if (v->dim != 3)
        return diag_error(err, fo->value->span,
                          "the %s on body %s must be a 3-vector, but this is "
                          "%s",
                          what, fo->target, shape_name(v->dim));
    ctx_t cx = {LOWER_MODEL, NULL, 0, {0}, 0};
    const rigid_frame_t *f;
    const expr_t *vel[3];
    const expr_t *const *rate = vel;
    if (fo->torque) {
        const model_body_t *b = &lw->model.bodies.v[i];
        if (frame_named(lw, b->frame, b->frame_span,
                        "a body is fixed in a frame", &f, err) != 0)
            return -1;
        f = frame_omega(lw, (size_t)model_frame_index(&lw->model, b->frame));
        rate = f->omega;
    } else {
        value_t x;
        if (lower_expr(lw, fo->at, LOWER_MODEL, &x, err) != 0)
            return -1;
        if (x.dim != 3)
            return diag_error(err, fo->at->span,
                              "a force acts at a point, a 3-vector, but this "
                              "is %s",
                              shape_name(x.dim));
        if (body_velocity(lw, &cx, i, x.c, fo->span, vel, err) != 0)
            return -1;
    }
    for (size_t q = 0; q < lw->sys.n; q++) {
        const expr_t *d[3];
        for (int k = 0; k < 3; k++)
            d[k] = expr_diff(g, rate[k], lw->qd[q]);
        Q[q] = expr_add(g, Q[q], rigid_dot(g, v->c, d, 3));
    }
    for (int j = 0; lw->root && j < 3; j++) { /* the translation's */
        const expr_t *d[3];
        for (int k = 0; k < 3; k++)
            d[k] = expr_diff(g, rate[k], lw->sd[j]);
        lw->Qs[j] = expr_add(g, lw->Qs[j], rigid_dot(g, v->c, d, 3));
    }
    return 0;
}

/* Force F of the model, added into Q (n entries) and into the force of
 * its particle in PARTICLES. */
static int lower_force(lower_t *lw, size_t f, const expr_t **Q,
                       nh_particle_t *particles, diag_t *err)
{
    model_t *m = &lw->model;
    expr_graph_t *g = lw->g;
    size_t n = m->coords.n;
    const model_force_t *fo = &m->forces.v[f];
    value_t v;
    if (lower_expr(lw, fo->value, LOWER_MODEL, &v, err) != 0)
        return -1;
    long qi = model_coord_index(m, fo->target);
    if (qi >= 0) {
        if (want_scalar(&v, fo->value, "a force on a coordinate", err))
            return -1;
        Q[qi] = expr_add(g, Q[qi], v.c[0]);
        return 0;
    }
    long bi = model_body_index(m, fo->target);
    if (bi >= 0) {
        lw->point_loads++;
        return lower_body_load(lw, (size_t)bi, fo, &v, Q, err);
    }
    long pi = find_particle(m, fo->target);
    if (pi < 0)
        return diag_error(err, fo->span,
                          "a force acts on a coordinate, a particle or a "
                          "body, and '%s' is %s",
                          fo->target, "none of them");
    lw->point_loads++;
    nh_particle_t *sp = &particles[pi];
    if (v.dim != sp->dim)
        return diag_error(err, fo->value->span,
                          "the force on particle %s must be a %zu-vector "
                          "like its position, but this is %s",
                          fo->target, sp->dim, shape_name(v.dim));
    /* Q_i += dot(F, ∂P/∂q_i) (LANGUAGE.md §4 `force`) */
    for (unsigned k = 0; k < v.dim; k++)
        sp->force[k] = sp->force[k] ? expr_add(g, sp->force[k], v.c[k])
                                    : v.c[k];
    for (size_t i = 0; i < n; i++)
        for (unsigned k = 0; k < v.dim; k++)
            Q[i] = expr_add(
                g, Q[i],
                expr_mul(g, v.c[k], expr_diff(g, sp->pos[k], lw->q[i])));
    for (int j = 0; lw->root && j < 3; j++) /* the translation's */
        for (unsigned k = 0; k < v.dim; k++)
            lw->Qs[j] = expr_add(
                g, lw->Qs[j],
                expr_mul(g, v.c[k], expr_diff(g, sp->pos[k], lw->s[j])));
    return 0;
}

/* The rows the constraints become: arrays with room for three per model
 * constraint, filled in order (lower_model passes the system's own,
 * lower_extend copies). */
typedef struct rows {
    const expr_t **C, **Cv;
    src_span_t *span;
    const char **name;
    long *left;
    size_t n;
} rows_t;

/* The value vector the verdicts on the components are taken near
 * (LANGUAGE.md §4: where the motion is): the state of M (q, q', z, t)
 * with the parameters' values, into BASE (expr_graph_nvars doubles);
 * what M does not give (a coordinate the statement being lowered
 * declares; M NULL) is 0. */
static void judge_base(const lower_t *lw, const model_t *m, double *base)
{
    size_t nv = expr_graph_nvars(lw->g);
    if (m)
        lower_fill_vars(lw, m, base);
    for (size_t v = 0; v < nv; v++)
        if (!m || !isfinite(base[v]))
            base[v] = 0;
}

/* Whether the component C of a vector constraint vanishes identically:
 * symbolically, or at every one of a few sample states near BASE
 * (judge_base), as `check` decides that a quantity is zero but only in
 * the state's region (expr_mag_zero_near): a contact written with
 * r*sin(theta) for its height vanishes where sin(theta) > 0 and not
 * elsewhere (LANGUAGE.md §4); 0: no, 1: it folds to 0, 2: it vanished at
 * the points. */
static int component_vanishes(lower_t *lw, const expr_t *c,
                              const double *base, expr_mag_t *shared)
{
    if (expr_is_const(c, 0))
        return 1;
    const nh_system_t *s = &lw->sys;
    size_t nv = expr_graph_nvars(lw->g);
    double *pts = xmalloc((EXPR_MAG_POINTS * nv + 1) * sizeof *pts);
    bool *move = xcalloc(nv + 1, sizeof *move);
    for (size_t i = 0; i < s->n; i++)
        move[s->q[i]] = move[s->qd[i]] = true;
    for (size_t i = 0; i < s->m; i++)
        move[s->z[i]] = true;
    for (size_t i = 0; i < s->np; i++)
        move[s->p[i]] = true;
    move[s->t] = true;
    /* the same points for every component: a fixed seed */
    uint64_t seed = 0x6e68636f6d70ULL;
    expr_mag_t own = {0}, *ev = shared ? shared : &own;
    ev->g = lw->g;
    size_t np;
    int z = expr_mag_zero_near(ev, &seed, base, move, nv, &c, 1, pts, &np);
    expr_mag_free(&own);
    free(move);
    free(pts);
    return z == 1 ? 2 : 0;
}

/* component_vanishes near the state of lw->state, which becomes the
 * state the verdicts hold at when they held at it before (or none was
 * taken). */
static int component_vanishes_here(lower_t *lw, const expr_t *c)
{
    if (expr_is_const(c, 0))
        return 1;
    size_t nv = expr_graph_nvars(lw->g);
    double *base = xmalloc((nv + 1) * sizeof *base);
    judge_base(lw, lw->state, base);
    if (!lw->judged_once) {
        lw->judged = base; /* the first verdict of this lowering */
        lw->njudged = nv;
        lw->judged_once = true;
    } else if (!(lw->judged && lw->njudged == nv &&
                 memcmp(lw->judged, base, nv * sizeof *base) == 0)) {
        free(lw->judged); /* verdicts at two states: take all again */
        lw->judged = NULL;
    }
    int v = component_vanishes(lw, c, base, NULL);
    if (base != lw->judged)
        free(base);
    return v;
}

bool lower_drops_hold(lower_t *lw, const model_t *m)
{
    if (lw->njudging == 0) /* O(1): called before every statement */
        return true;
    size_t nv = expr_graph_nvars(lw->g);
    double *base = xmalloc((nv + 1) * sizeof *base);
    judge_base(lw, m, base);
    if (lw->judged && lw->njudged == nv &&
        memcmp(lw->judged, base, nv * sizeof *base) == 0) {
        free(base);
        return true;
    }
    /* one evaluator for all: its buffers are the graph's size */
    expr_mag_t ev = {0};
    for (size_t a = 0; a < lw->model.constraints.n; a++) {
        const con_rows_t *cr = &lw->cons[a];
        for (unsigned k = 0; k < cr->dim; k++) {
            if (cr->row[k] == -1)
                continue;
            bool dropped = cr->row[k] < 0;
            if ((component_vanishes(lw, cr->ck[k], base, &ev) == 2) !=
                dropped) {
                expr_mag_free(&ev);
                free(base);
                return false;
            }
        }
    }
    expr_mag_free(&ev);
    free(lw->judged);
    lw->judged = base;
    lw->njudged = nv;
    return true;
}

/* The name of component K (from 1) of constraint NAME: "roll[2]", owned
 * by the lowering. */
static const char *component_name(lower_t *lw, const char *name, unsigned k)
{
    size_t len = strlen(name) + 16;
    char *s = xmalloc(len);
    snprintf(s, len, "%s[%u]", name, k);
    xgrow(&lw->row_names, &lw->cap_row_names, lw->nrow_names + 1,
          sizeof *lw->row_names);
    lw->row_names[lw->nrow_names++] = s;
    return s;
}

/* Constraint A of the model appended to ROWS, its rows in CONS[a]: one
 * for scalar sides, one per component for vector sides (NAME[1], ...),
 * without the components that vanish identically (LANGUAGE.md §4). */
static int lower_constraint(lower_t *lw, size_t a, rows_t *rows,
                            con_rows_t *cons, diag_t *err)
{
    expr_graph_t *g = lw->g;
    const model_constraint_t *c = &lw->model.constraints.v[a];
    value_t l, r;
    if (lower_expr(lw, c->lhs, LOWER_MODEL, &l, err) != 0 ||
        lower_expr(lw, c->rhs, LOWER_MODEL, &r, err) != 0)
        return -1;
    if (l.dim != r.dim)
        return diag_error(err, c->span,
                          "the sides of a constraint must have the same "
                          "shape, but the left is %s and the right %s",
                          shape_name(l.dim), shape_name(r.dim));
    /* x' = … names Voronec's dependent velocity (§5); C loses the sides,
     * and a vector's components have none of their own */
    long left = c->lhs->kind == AST_PRIME && c->lhs->a->kind == AST_NAME
                    ? model_coord_index(&lw->model, c->lhs->a->name)
                    : NH_CLEFT_NONE;
    con_rows_t *cr = &cons[a];
    cr->dim = l.dim;
    for (unsigned k = 0; k < (l.dim ? l.dim : 1); k++) {
        /* C = LHS − RHS (LANGUAGE.md §4) */
        const expr_t *ck = expr_sub(g, l.c[k], r.c[k]);
        cr->ck[k] = ck;
        /* (the translated lowering keeps them: the translation moves
         * them, and their reactions are what it is for) */
        int drop = l.dim && !lw->root ? component_vanishes_here(lw, ck) : 0;
        lw->njudging += l.dim && !lw->root && drop != 1;
        cr->row[k] = drop ? -(long)drop : (long)rows->n;
        if (drop)
            continue;
        size_t row = rows->n++;
        rows->C[row] = ck;
        rows->span[row] = c->span;
        rows->name[row] = l.dim ? component_name(lw, c->name, k + 1)
                                : c->name;
        rows->left[row] = l.dim ? NH_CLEFT_COMPONENT : left;
        /* A holonomic f(q, t) = 0 acts on the velocities through f'. */
        rows->Cv[row] = expr_depends_any(g, ck, lw->velocity)
                            ? ck
                            : expr_dt(g, ck, lw->dvar);
    }
    return 0;
}

/* Kinematic equation K of the model into psi[i], psi_span[i] of its
 * coordinate i. */
static int lower_kinematic(lower_t *lw, size_t k, const expr_t **psi,
                           src_span_t *psi_span, diag_t *err)
{
    model_t *m = &lw->model;
    const model_kinematic_t *kin = &m->kinematics.v[k];
    long qi = model_coord_index(m, kin->coord);
    if (qi < 0)
        return diag_error(err, kin->span, "'%s' is not a coordinate",
                          kin->coord);
    if (lower_scalar_model(lw, kin->rhs, "a kinematic equation", &psi[qi],
                           err) != 0)
        return -1;
    for (size_t i = 0; i < m->coords.n; i++)
        if (expr_depends(lw->g, psi[qi], lw->qd[i]))
            return diag_error(err, kin->rhs->span,
                              "a kinematic equation gives %s' in terms "
                              "of coordinates, speeds and t, but this "
                              "uses the velocity %s'",
                              kin->coord, m->coords.v[i].name);
    psi_span[qi] = kin->span;
    return 0;
}

/* Checks the names in a let function's body resolve (its parameters, the
 * model's names, built-ins), so a typo is reported where it was made. */
static int check_let_names(lower_t *lw, const ast_stmt_t *st,
                           const ast_expr_t *e, diag_t *err)
{
    if (!e)
        return 0;
    if (e->kind == AST_NAME) {
        for (size_t i = 0; i < st->u.let.nparams; i++)
            if (strcmp(st->u.let.params[i].name, e->name) == 0)
                return 0;
        if (model_lookup(&lw->model, e->name, NULL, NULL) != MODEL_NONE)
            return 0;
        frame_t fr = {st->u.let.params, NULL, st->u.let.nparams};
        ctx_t cx = {LOWER_MODEL, &fr, 0, {0}, 0};
        return unknown_name(lw, &cx, e->name, e->span, err);
    }
    if (e->kind == AST_MEMBER) {
        const rigid_frame_t *f;
        return frame_named(lw, e->name, e->name_span,
                           "A.x, A.y, A.z are the unit vectors of frame A",
                           &f, err);
    }
    if (check_let_names(lw, st, e->a, err) || check_let_names(lw, st, e->b, err))
        return -1;
    if (e->kind == AST_CALL && (strcmp(e->name, "lambda") == 0 ||
                                strcmp(e->name, "reaction") == 0))
        return 0; /* their argument is a name of another kind */
    for (size_t i = 0; i < e->nargs; i++)
        if (check_let_names(lw, st, e->args[i], err))
            return -1;
    return 0;
}


/* Let I of the model: a let function's names are checked, a plain let is
 * lowered (as a query: it may use reaction() and lambda()). */
static int lower_let(lower_t *lw, size_t i, diag_t *err)
{
    const ast_stmt_t *st = lw->model.lets.v[i].stmt;
    if (st->u.let.is_function)
        return check_let_names(lw, st, st->u.let.body, err);
    value_t v;
    return lower_expr(lw, st->u.let.body, LOWER_QUERY, &v, err);
}

/* The system's view of the variables: coordinates, speeds, parameters,
 * t (the arrays move as they grow). */
static void publish_vars(lower_t *lw)
{
    const model_t *m = &lw->model;
    nh_system_t *s = &lw->sys;
    s->n = m->coords.n;
    s->qname = lw->qname;
    s->q = lw->q;
    s->qd = lw->qd;
    s->qdd = lw->qdd;
    s->m = m->speeds.n;
    s->zname = lw->zname;
    s->z = lw->z;
    s->zd = lw->zd;
    s->np = m->params.n;
    s->pname = lw->pname;
    s->p = lw->p;
    s->ni = m->inputs.n;
    s->iname = lw->iname;
    s->in = lw->in;
    s->t = lw->t;
}

/* The system's view of what a declaration can grow or replace: forces,
 * the constraints' R rows and their multipliers, the NP particles and NB
 * bodies, kinematic equations. */
static void publish_rows(lower_t *lw, size_t r, size_t np, size_t nb)
{
    nh_system_t *s = &lw->sys;
    s->Q = lw->Q;
    s->r = r;
    s->C = lw->C;
    s->cname = lw->cname;
    s->cspan = lw->cspan;
    s->cleft = lw->cleft;
    s->lam = lw->lam;
    s->nparticles = np;
    s->particles = lw->particles;
    s->nbodies = nb;
    s->bodies = lw->bodies;
    s->psi = lw->psi;
    s->psi_span = lw->psi_span;
}

/* Frames FROM..TO-1 of the model, lowered now so that a fault in one is
 * reported at its declaration even when nothing uses it yet. */
static int lower_frames(lower_t *lw, size_t from, size_t to, diag_t *err)
{
    for (size_t i = from; i < to; i++) {
        const rigid_frame_t *f;
        if (frame_value(lw, i, lw->model.frames.v[i].span, &f, err) != 0)
            return -1;
    }
    return 0;
}

static void declare_translation(lower_t *lw);
static int translation_derive(lower_t *lw, diag_t *err);

/* lower_model, or when TRANSLATED the lowering of lower_translated. */
static lower_t *lower_build(const model_t *m, const source_set_t *src,
                            bool translated, diag_t *err)
{
    lower_t *lw = xcalloc(1, sizeof *lw);
    model_clone_declarations(&lw->model, m);
    lw->src = src;
    lw->state = m;
    lw->g = expr_graph_new();
    declare_variables(lw);
    if (translated)
        declare_translation(lw);

    /* A vector constraint has up to three rows. */
    size_t n = m->coords.n, r = m->constraints.n, np = m->particles.n,
           nb = m->bodies.n, nrows = 3 * r;
    lw->Q = xcalloc(n + 1, sizeof *lw->Q);
    lw->C = xcalloc(nrows + 1, sizeof *lw->C);
    lw->Cv = xcalloc(nrows + 1, sizeof *lw->Cv);
    lw->cspan = xcalloc(nrows + 1, sizeof *lw->cspan);
    lw->cname = xcalloc(nrows + 1, sizeof *lw->cname);
    lw->cleft = xcalloc(nrows + 1, sizeof *lw->cleft);
    lw->cons = xcalloc(r + 1, sizeof *lw->cons);
    lw->particles = xcalloc(np + 1, sizeof *lw->particles);
    lw->bodies = xcalloc(nb + 1, sizeof *lw->bodies);
    lw->particle_pos = xcalloc(np + 1, sizeof *lw->particle_pos);
    lw->particle_mass = xcalloc(np + 1, sizeof *lw->particle_mass);
    lw->frame_memo = xcalloc(m->frames.n + 1, sizeof *lw->frame_memo);
    lw->body_pos = xcalloc(nb + 1, sizeof *lw->body_pos);
    lw->body_mass = xcalloc(nb + 1, sizeof *lw->body_mass);
    lw->body_T = xcalloc(nb + 1, sizeof *lw->body_T);
    lw->body_Vg = xcalloc(nb + 1, sizeof *lw->body_Vg);
    lw->particle_T = xcalloc(np + 1, sizeof *lw->particle_T);
    lw->particle_Vg = xcalloc(np + 1, sizeof *lw->particle_Vg);
    grow_lets(lw, 0, m->lets.n);
    if (m->kinematics.n) {
        lw->psi = xcalloc(n + 1, sizeof *lw->psi);
        lw->psi_span = xcalloc(n + 1, sizeof *lw->psi_span);
    }
    const expr_t *zero = expr_num(lw->g, 0);
    for (size_t i = 0; i < n; i++)
        lw->Q[i] = zero;
    lw->Tp = lw->Vg = zero;

    lw->sys.g = lw->g;
    publish_vars(lw);
    publish_rows(lw, 0, np, nb);

    /* Lets last: a let may use reaction(), which needs the constraints
     * and their multipliers. */
    rows_t rows = {lw->C, lw->Cv, lw->cspan, lw->cname, lw->cleft, 0};
    int rc = lower_frames(lw, 0, m->frames.n, err);
    if (!rc)
        rc = lower_energies(lw, err);
    for (size_t f = 0; f < m->forces.n && !rc; f++)
        rc = lower_force(lw, f, lw->Q, lw->particles, err);
    for (size_t a = 0; a < r && !rc; a++)
        rc = lower_constraint(lw, a, &rows, lw->cons, err);
    if (!rc) {
        for (size_t a = 0; a < rows.n; a++)
            declare_multiplier(lw, a);
        for (size_t a = 0; a < r; a++)
            declare_dropped(lw, a);
        publish_rows(lw, rows.n, np, nb);
    }
    for (size_t k = 0; k < m->kinematics.n && !rc; k++)
        rc = lower_kinematic(lw, k, lw->psi, lw->psi_span, err);
    for (size_t i = 0; i < m->lets.n && !rc; i++)
        rc = lower_let(lw, i, err);
    lw->state = NULL;
    if (!rc && translated)
        rc = translation_derive(lw, err);
    if (rc) {
        lower_free(lw);
        return NULL;
    }
    return lw;
}

lower_t *lower_model(const model_t *m, const source_set_t *src, diag_t *err)
{
    return lower_build(m, src, false, err);
}

/* ---- the translated lowering ---------------------------------------------
 *
 * LANGUAGE.md §4 (v3): a component of a vector constraint that is dropped
 * (it vanishes identically: the model's coordinates already hold it, as
 * the height r*sin(theta) of a rolling disk holds the vertical component
 * of its contact) still has its reaction, lambda(NAME[k]), the force
 * along it.  The model gives it no virtual motion to work in, so it is
 * found in a larger one: the whole system moved by a translation s (three
 * auxiliary coordinates; at s = s' = s'' = 0 the motion is the model's).
 * Lagrange's equations for s are the momentum balance of the whole
 * system,
 *
 *     E_d = d/dt ∂L/∂s_d' − ∂L/∂s_d − Q_s_d = Σ_a λ_a ∂C_a/∂s_d'
 *
 * (the multiplier rule of LANGUAGE.md §5 for the coordinates s, with C_a
 * at the velocity level), over every row the translation moves, the
 * dropped components among them: Kane's auxiliary generalized speeds
 * (Kane and Levinson, Dynamics: Theory and Applications, 1985; SymPy's
 * rolling disc example finds its contact forces so), with the virtual
 * motion a translation of everything so that no joint the coordinates
 * hold is broken, and the equations of the model itself
 * unchanged (s = s' = 0 on the motion).  react.h solves them.
 *
 * What moves: the positions of the bodies and particles and what is
 * built from them.  A plain `let` named bare as a position — a body's or
 * particle's `at`, the point of a force on a body, the point P of
 * velocity(P, B) — that reads no other such let moves by s (it is a root
 * of the user's construction: the bicycle's rear contact, a disk's
 * centre), and so does every let and expression built from it (the
 * bicycle's front contact, and the holonomic constraint on its height); a
 * body's or particle's position that reads no moving let moves where it
 * is used.  Frames do not move: a translation turns nothing.  What the
 * model writes on the coordinates directly (a `force x = ...`, a
 * `kinetic` or `potential` without positions, a constraint on the
 * coordinates) does not see the translation. */

/* The index of the plain (not function) let NAME, or -1; a parameter
 * of FN (a let function's statement, or NULL) hides it. */
static long translation_let(const lower_t *lw, const char *name,
                            const ast_stmt_t *fn)
{
    for (size_t i = 0; fn && i < fn->u.let.nparams; i++)
        if (strcmp(fn->u.let.params[i].name, name) == 0)
            return -1;
    size_t idx;
    if (model_lookup(&lw->model, name, &idx, NULL) != MODEL_LET ||
        lw->model.lets.v[idx].stmt->u.let.is_function)
        return -1;
    return (long)idx;
}

/* Marks in CAND the plain lets that E (inside let function FN, or
 * NULL) names bare as velocity()'s point. */
static void translation_sites(const lower_t *lw, const ast_expr_t *e,
                              const ast_stmt_t *fn, bool *cand)
{
    if (!e)
        return;
    if (e->kind == AST_CALL && strcmp(e->name, "velocity") == 0 &&
        e->nargs == 2 && e->args[0]->kind == AST_NAME) {
        long i = translation_let(lw, e->args[0]->name, fn);
        if (i >= 0)
            cand[i] = true;
    }
    translation_sites(lw, e->a, fn, cand);
    translation_sites(lw, e->b, fn, cand);
    for (size_t k = 0; k < e->nargs; k++)
        translation_sites(lw, e->args[k], fn, cand);
}

/* Marks in READ the plain lets that E (inside FN) reads, through lets
 * and let functions (DONE: the let functions walked already). */
static void translation_reads(const lower_t *lw, const ast_expr_t *e,
                              const ast_stmt_t *fn, bool *read, bool *done)
{
    if (!e)
        return;
    if (e->kind == AST_NAME) {
        long i = translation_let(lw, e->name, fn);
        if (i >= 0 && !read[i]) {
            read[i] = true;
            translation_reads(lw, lw->model.lets.v[i].stmt->u.let.body,
                              NULL, read, done);
        }
    }
    size_t idx;
    if (e->kind == AST_CALL &&
        model_lookup(&lw->model, e->name, &idx, NULL) == MODEL_LET &&
        lw->model.lets.v[idx].stmt->u.let.is_function && !done[idx]) {
        const ast_stmt_t *st = lw->model.lets.v[idx].stmt;
        done[idx] = true;
        translation_reads(lw, st->u.let.body, st, read, done);
    }
    translation_reads(lw, e->a, fn, read, done);
    translation_reads(lw, e->b, fn, read, done);
    for (size_t k = 0; k < e->nargs; k++)
        translation_reads(lw, e->args[k], fn, read, done);
}

/* The variables s, s', s'' (named so that no model name can be them)
 * and the lets that move with s (lw->root). */
static void declare_translation(lower_t *lw)
{
    expr_graph_t *g = lw->g;
    for (int d = 0; d < 3; d++) {
        char name[32];
        snprintf(name, sizeof name, "translation[%d]", d + 1);
        lw->s[d] = declare(lw, "", name, "", ROLE_LAMBDA + 1, 3 * d);
        lw->sd[d] = declare(lw, "", name, "'", ROLE_LAMBDA + 1, 3 * d + 1);
        lw->sdd[d] = declare(lw, "", name, "''", ROLE_LAMBDA + 1, 3 * d + 2);
        lw->dvar[lw->s[d]] = expr_var(g, lw->sd[d]);
        lw->dvar[lw->sd[d]] = expr_var(g, lw->sdd[d]);
        lw->velocity[lw->sd[d]] = true;
        lw->second[lw->sdd[d]] = true;
        lw->Qs[d] = expr_num(g, 0);
    }
    const model_t *m = &lw->model;
    size_t nl = m->lets.n;
    bool *cand = xcalloc(nl + 1, sizeof *cand);
    bool *read = xcalloc(nl + 1, sizeof *read);
    bool *done = xcalloc(nl + 1, sizeof *done);
    for (size_t i = 0; i < m->bodies.n; i++)
        if (m->bodies.v[i].position->kind == AST_NAME) {
            long k = translation_let(lw, m->bodies.v[i].position->name, NULL);
            if (k >= 0)
                cand[k] = true;
        }
    for (size_t i = 0; i < m->particles.n; i++)
        if (m->particles.v[i].position->kind == AST_NAME) {
            long k =
                translation_let(lw, m->particles.v[i].position->name, NULL);
            if (k >= 0)
                cand[k] = true;
        }
    for (size_t i = 0; i < m->forces.n; i++) {
        const model_force_t *f = &m->forces.v[i];
        if (f->at && f->at->kind == AST_NAME) {
            long k = translation_let(lw, f->at->name, NULL);
            if (k >= 0)
                cand[k] = true;
        }
        translation_sites(lw, f->value, NULL, cand);
    }
    for (size_t i = 0; i < m->constraints.n; i++) {
        translation_sites(lw, m->constraints.v[i].lhs, NULL, cand);
        translation_sites(lw, m->constraints.v[i].rhs, NULL, cand);
    }
    for (size_t i = 0; i < nl; i++) {
        const ast_stmt_t *st = m->lets.v[i].stmt;
        translation_sites(lw, st->u.let.body,
                          st->u.let.is_function ? st : NULL, cand);
    }
    const model_energy_t *en[] = {&m->kinetic, &m->potential, &m->lagrangian};
    for (int k = 0; k < 3; k++)
        translation_sites(lw, en[k]->value, NULL, cand);
    /* the roots: candidates that read no other candidate */
    lw->root = xcalloc(nl + 1, sizeof *lw->root);
    for (size_t i = 0; i < nl; i++) {
        if (!cand[i])
            continue;
        memset(read, 0, (nl + 1) * sizeof *read);
        memset(done, 0, (nl + 1) * sizeof *done);
        translation_reads(lw, m->lets.v[i].stmt->u.let.body, NULL, read,
                          done);
        bool root = true;
        for (size_t j = 0; j < nl && root; j++)
            root = !(read[j] && cand[j] && j != i);
        lw->root[i] = root;
    }
    free(cand);
    free(read);
    free(done);
}

void lower_translation_free(lower_translation_t *t)
{
    if (!t)
        return;
    free((void *)t->E);
    free((void *)t->Bs);
    free((void *)t->moving);
    free((void *)t->moving_dim);
    free((void *)t->J);
    free(t);
}

/* The objects of lower_translation, once the translated model is
 * lowered. */
static int translation_derive(lower_t *lw, diag_t *err)
{
    (void)err;
    expr_graph_t *g = lw->g;
    const nh_system_t *sys = lower_system(lw); /* L summed */
    lower_translation_t *t = xcalloc(1, sizeof *t);
    lw->trans = t;
    t->s = lw->s;
    t->sd = lw->sd;
    t->sdd = lw->sdd;
    const expr_t **E = xcalloc(3, sizeof *E);
    for (int d = 0; d < 3; d++) {
        const expr_t *p = expr_diff(g, sys->L, lw->sd[d]);
        E[d] = expr_sub(g,
                        expr_sub(g, expr_dt(g, p, lw->dvar),
                                 expr_diff(g, sys->L, lw->s[d])),
                        lw->Qs[d]);
    }
    t->E = E;
    const expr_t **Bs = xcalloc(3 * sys->r + 1, sizeof *Bs);
    for (size_t a = 0; a < sys->r; a++)
        for (int d = 0; d < 3; d++)
            Bs[3 * a + d] = expr_diff(g, lw->Cv[a], lw->sd[d]);
    t->Bs = Bs;
    size_t nm = sys->nbodies + sys->nparticles;
    const char **names = xcalloc(nm + 1, sizeof *names);
    unsigned *dims = xcalloc(nm + 1, sizeof *dims);
    const expr_t **J = xcalloc(9 * nm + 1, sizeof *J);
    for (size_t i = 0; i < nm; i++) {
        bool body = i < sys->nbodies;
        const expr_t *const *pos =
            body ? sys->bodies[i].pos : sys->particles[i - sys->nbodies].pos;
        names[i] = body ? sys->bodies[i].name
                        : sys->particles[i - sys->nbodies].name;
        dims[i] = body ? 3 : (unsigned)sys->particles[i - sys->nbodies].dim;
        for (unsigned k = 0; k < 3; k++)
            for (int d = 0; d < 3; d++)
                J[9 * i + 3 * k + d] =
                    k < dims[i] ? expr_diff(g, pos[k], lw->s[d])
                                : expr_num(g, 0);
    }
    t->nmoving = nm;
    t->moving = names;
    t->moving_dim = dims;
    t->J = J;
    return 0;
}

lower_t *lower_translated(const lower_t *lw, diag_t *err)
{
    return lower_build(&lw->model, lw->src, true, err);
}

const lower_translation_t *lower_translation(const lower_t *tr)
{
    return tr->trans;
}

/* ---- extending a lowering ------------------------------------------------
 *
 * Why: a file declares a model one statement at a time, and the session
 * validates each by lowering the model it would make (a failing statement
 * changes nothing).  Lowering the whole model again for every statement
 * costs O(statements × model): cubic in N for the N-trailer, whose model
 * is N² nodes, and quadratic for 10⁵ parameters.  Most statements only
 * add a declaration, and an added declaration cannot change the meaning
 * of the earlier ones (they name nothing it declares: they were checked
 * when they were made), so lowering only the new declarations against the
 * existing graph gives the same system as lowering everything afresh: the
 * same variables in the same canonical order (a new variable is declared
 * last, with the place a fresh lowering gives it: declare(); a new
 * constraint's rows come after the others, and so do their multipliers),
 * and the same nodes (they are hash-consed and canonical; T, Q, ... are
 * summed in the same order: the particles' and the bodies' terms in sums
 * of their own).  Only the variables' numbers may differ from a fresh
 * lowering's; everything that reads a value vector finds its variables
 * through the system's arrays or by name.
 *
 * What extends: new parameters, coordinates and speeds (variables; they
 * lower nothing, so they cannot fail), and new lets, particles, frames,
 * bodies, forces and torques, constraints (vector ones too) and
 * kinematic equations.  What does not (lower_model() instead): an
 * energy, gravity (new or replaced: it adds a term for every particle
 * and body), anything replaced, variables together with other
 * declarations, new constraints together with new lets (a let may read
 * them through reaction()), a new particle or body once the kinetic
 * energy has been read by name (its value, the whole T, changes), and a
 * new coordinate when forces act on particles or loads on bodies (each
 * of them adds a term to every Q_i).
 *
 * A failure leaves the lowering as it was: the new declarations are
 * lowered into copies of the arrays the system points into, which are
 * installed only when all succeeded; the memos of new declarations are
 * cleared and the sums restored.  The graph keeps the nodes the attempt
 * made: nodes are values, and an unused node changes nothing.
 */

/* Whether M is the model of LW with declarations appended that
 * lower_extend() handles (AST nodes identify a declaration).  Arrays
 * that share a buffer agree on their common prefix (model.h): then
 * nothing needs comparing, and a statement costs O(1), not O(model). */
static bool extends_model(const lower_t *lw, const model_t *m)
{
    const model_t *old = &lw->model;
    const model_energy_t *eo[3] = {&old->kinetic, &old->potential,
                                   &old->lagrangian};
    const model_energy_t *em[3] = {&m->kinetic, &m->potential,
                                   &m->lagrangian};
    for (int k = 0; k < 3; k++)
        if (eo[k]->name != em[k]->name || eo[k]->value != em[k]->value)
            return false;
    if (m->gravity != old->gravity)
        return false;
#define SAME_PREFIX(arr, same)                                          \
    do {                                                                \
        if (m->arr.n < old->arr.n)                                      \
            return false;                                               \
        if (MODEL_SHARED_PREFIX(old->arr, m->arr))                      \
            break;                                                      \
        for (size_t i = 0; i < old->arr.n; i++) {                       \
            const __typeof__(*m->arr.v) *a = &old->arr.v[i],            \
                                        *b = &m->arr.v[i];              \
            if (!(same))                                                \
                return false;                                           \
        }                                                               \
    } while (0)
    /* Parameter values may differ: values are not lowered. */
    SAME_PREFIX(params, a->name == b->name);
    SAME_PREFIX(coords, a->name == b->name);
    SAME_PREFIX(speeds, a->name == b->name);
    SAME_PREFIX(lets, a->name == b->name && a->stmt == b->stmt);
    SAME_PREFIX(particles, a->name == b->name && a->mass == b->mass &&
                               a->position == b->position);
    SAME_PREFIX(forces, a->target == b->target && a->value == b->value &&
                            a->at == b->at && a->torque == b->torque);
    SAME_PREFIX(frames, a->name == b->name && a->parent == b->parent &&
                            a->axis == b->axis && a->angle == b->angle);
    SAME_PREFIX(bodies, a->name == b->name && a->mass == b->mass &&
                            a->position == b->position &&
                            a->inertia == b->inertia && a->frame == b->frame);
    SAME_PREFIX(constraints, a->name == b->name && a->lhs == b->lhs &&
                                 a->rhs == b->rhs);
    SAME_PREFIX(kinematics, a->coord == b->coord && a->rhs == b->rhs);
    /* Input values may differ, as parameters' may; an output is lowered
     * where it is used, so a new one needs nothing here. */
    SAME_PREFIX(inputs, a->name == b->name);
    SAME_PREFIX(outputs, a->name == b->name && a->value == b->value);
#undef SAME_PREFIX
    bool vars = m->params.n > old->params.n || m->coords.n > old->coords.n ||
                m->speeds.n > old->speeds.n || m->inputs.n > old->inputs.n;
    bool lets = m->lets.n > old->lets.n,
         constraints = m->constraints.n > old->constraints.n,
         masses = m->particles.n > old->particles.n ||
                  m->bodies.n > old->bodies.n;
    bool decls = lets || constraints || masses ||
                 m->forces.n > old->forces.n ||
                 m->kinematics.n > old->kinematics.n ||
                 m->frames.n > old->frames.n;
    if (vars && decls)
        return false;
    if (lets && constraints)
        return false;
    if (masses && lw->kinetic_read)
        return false;
    if (m->coords.n > old->coords.n && lw->point_loads)
        return false;
    return true;
}

/* A copy of the first N of the ELT-sized items at P, in room for CAP. */
static void *dup_items(const void *p, size_t n, size_t cap, size_t elt)
{
    void *d = xcalloc(cap ? cap : 1, elt);
    if (n)
        memcpy(d, p, n * elt);
    return d;
}

/* Forgets the memoised let-function calls of lets from index FIRST on,
 * and, when MODE >= 0, those lowered in MODE. */
static void forget_calls(lower_t *lw, size_t first, int mode)
{
    size_t k = 0;
    for (size_t i = 0; i < lw->ncalls; i++) {
        if (lw->calls[i].let >= first || lw->calls[i].mode == mode)
            free(lw->calls[i].args);
        else
            lw->calls[k++] = lw->calls[i];
    }
    if (k == lw->ncalls)
        return;
    lw->ncalls = k;
    size_t size = lw->call_table_size, mask = size - 1;
    memset(lw->call_table, 0, size * sizeof *lw->call_table);
    for (size_t c = 0; c < k; c++) {
        size_t i = lw->calls[c].hash & mask;
        while (lw->call_table[i])
            i = (i + 1) & mask;
        lw->call_table[i] = c + 1;
    }
}

/* Room for N items of ELT bytes at *A, which holds OLD; the new ones
 * cleared. */
static void grow_zeroed(void **a, size_t elt, size_t old, size_t n)
{
    *a = xrealloc(*a, (n + 1) * elt);
    memset((char *)*a + old * elt, 0, (n + 1 - old) * elt);
}

/* Room for N memos at *A, which holds OLD; the new ones cleared. */
static void grow_memos(memo_t **a, size_t old, size_t n)
{
    grow_zeroed((void **)a, sizeof **a, old, n);
}

/* Room for the memos of NP particles, NB bodies and NFR frames, which
 * hold NP0, NB0, NFR0; the new ones cleared (on a failure, the room
 * they had again: growing to the old sizes forgets the new ones). */
static void grow_mass_memos(lower_t *lw, size_t np0, size_t np, size_t nb0,
                            size_t nb, size_t nfr0, size_t nfr)
{
    grow_memos(&lw->particle_pos, np0, np);
    grow_memos(&lw->particle_mass, np0, np);
    grow_memos(&lw->body_pos, nb0, nb);
    grow_memos(&lw->body_mass, nb0, nb);
    grow_zeroed((void **)&lw->body_T, sizeof *lw->body_T, nb0, nb);
    grow_zeroed((void **)&lw->body_Vg, sizeof *lw->body_Vg, nb0, nb);
    grow_zeroed((void **)&lw->particle_T, sizeof *lw->particle_T, np0, np);
    grow_zeroed((void **)&lw->particle_Vg, sizeof *lw->particle_Vg, np0,
                np);
    grow_zeroed((void **)&lw->bodies, sizeof *lw->bodies, nb0, nb);
    lw->sys.bodies = lw->bodies; /* moved, maybe; its count is unchanged */
    grow_zeroed((void **)&lw->frame_memo, sizeof *lw->frame_memo, nfr0, nfr);
}

/* Takes M as LW's model (its new declarations are looked up by name). */
static void adopt_model(lower_t *lw, const model_t *m)
{
    model_t old = lw->model;
    model_clone_declarations(&lw->model, m);
    model_free(&old);
}

/* The new variables of M: they lower nothing, so this cannot fail. */
static void extend_variables(lower_t *lw, const model_t *m)
{
    const model_t *o = &lw->model;
    size_t n0 = o->coords.n, ns0 = o->speeds.n, np0 = o->params.n,
           ni0 = o->inputs.n;
    size_t n = m->coords.n;
    adopt_model(lw, m);
    for (size_t i = n0; i < n; i++)
        declare_coord(lw, i);
    for (size_t i = ns0; i < m->speeds.n; i++)
        declare_speed(lw, i);
    for (size_t i = np0; i < m->params.n; i++)
        declare_param(lw, i);
    for (size_t i = ni0; i < m->inputs.n; i++)
        declare_input(lw, i);
    if (n > n0) {
        /* Q_i of a new coordinate is 0: no force names it yet, and none
         * acts on a particle or a body (extends_model). */
        lw->Q = xrealloc(lw->Q, (n + 1) * sizeof *lw->Q);
        for (size_t i = n0; i < n; i++)
            lw->Q[i] = expr_num(lw->g, 0);
        if (lw->psi) {
            lw->psi = xrealloc(lw->psi, (n + 1) * sizeof *lw->psi);
            lw->psi_span =
                xrealloc(lw->psi_span, (n + 1) * sizeof *lw->psi_span);
            for (size_t i = n0; i < n; i++) {
                lw->psi[i] = NULL;
                lw->psi_span[i] = SRC_SPAN_NONE;
            }
        }
    }
    publish_vars(lw);
    publish_rows(lw, lw->sys.r, m->particles.n, m->bodies.n);
}

int lower_extend(lower_t *lw, const model_t *m, diag_t *err)
{
    if (!extends_model(lw, m))
        return 1;
    const model_t *o = &lw->model;
    if (m->params.n > o->params.n || m->coords.n > o->coords.n ||
        m->speeds.n > o->speeds.n || m->inputs.n > o->inputs.n) {
        extend_variables(lw, m);
        return 0;
    }
    size_t n = m->coords.n;
    size_t np0 = o->particles.n, nf0 = o->forces.n, c0 = o->constraints.n,
           nk0 = o->kinematics.n, nl0 = o->lets.n, nfr0 = o->frames.n,
           nb0 = o->bodies.n, r0 = lw->sys.r;
    size_t np = m->particles.n, nf = m->forces.n, nc = m->constraints.n,
           nk = m->kinematics.n, nl = m->lets.n, nfr = m->frames.n,
           nb = m->bodies.n;

    /* The memos are the lowering's own: growing them is invisible. */
    grow_mass_memos(lw, np0, np, nb0, nb, nfr0, nfr);
    grow_lets(lw, nl0, nl);

    /* The new declarations are looked up by name: lower against M. */
    model_t old = lw->model;
    model_clone_declarations(&lw->model, m);

    /* Copies of only the arrays that grow: a statement that adds a let
     * copies nothing (a copy per statement would be O(model)). */
    bool grow_p = np > np0, grow_f = nf > nf0, grow_c = nc > c0,
         grow_k = nk > nk0;
    nh_particle_t *parts =
        grow_p || grow_f
            ? dup_items(lw->particles, np0, np + 1, sizeof *parts)
            : lw->particles;
    const expr_t **Q = grow_f ? dup_items(lw->Q, n, n + 1, sizeof *Q) : lw->Q;
    rows_t rows = {lw->C, lw->Cv, lw->cspan, lw->cname, lw->cleft, r0};
    con_rows_t *cons = lw->cons;
    if (grow_c) {
        size_t cap = r0 + 3 * (nc - c0) + 1; /* a vector has 3 rows */
        rows.C = dup_items(lw->C, r0, cap, sizeof *rows.C);
        rows.Cv = dup_items(lw->Cv, r0, cap, sizeof *rows.Cv);
        rows.span = dup_items(lw->cspan, r0, cap, sizeof *rows.span);
        rows.name = dup_items(lw->cname, r0, cap, sizeof *rows.name);
        rows.left = dup_items(lw->cleft, r0, cap, sizeof *rows.left);
        cons = dup_items(lw->cons, c0, nc + 1, sizeof *cons);
    }
    const expr_t **psi = lw->psi;
    src_span_t *psi_span = lw->psi_span;
    if (grow_k) {
        psi = dup_items(lw->psi, lw->psi ? n : 0, n + 1, sizeof *psi);
        psi_span = dup_items(lw->psi_span, lw->psi ? n : 0, n + 1,
                             sizeof *psi_span);
    }
    /* What a failure restores; the terms are the lowering's as soon as
     * they are made, so that the new lets read the whole T. */
    size_t point_loads = lw->point_loads;
    lw->state = m;
    int rc = lower_frames(lw, nfr0, nfr, err);
    if (!rc)
        rc = lower_masses(lw, np0, np, nb0, nb, parts, err);
    if (!rc)
        rc = add_weights(lw, np0, np, nb0, nb, parts, NULL, err);
    for (size_t f = nf0; f < nf && !rc; f++)
        rc = lower_force(lw, f, Q, parts, err);
    for (size_t a = c0; a < nc && !rc; a++)
        rc = lower_constraint(lw, a, &rows, cons, err);
    for (size_t k = nk0; k < nk && !rc; k++)
        rc = lower_kinematic(lw, k, psi, psi_span, err);
    for (size_t i = nl0; i < nl && !rc; i++)
        rc = lower_let(lw, i, err);
    lw->state = NULL;

#define DROP(mine, field) ((mine) != lw->field ? free((void *)(mine)) : (void)0)
    if (rc) {
        DROP(parts, particles);
        DROP(Q, Q);
        DROP(rows.C, C);
        DROP(rows.Cv, Cv);
        DROP(rows.span, cspan);
        DROP(rows.name, cname);
        DROP(rows.left, cleft);
        DROP(cons, cons);
        DROP(psi, psi);
        DROP(psi_span, psi_span);
        lw->sums_stale = lw->energies_stale = true; /* the old terms */
        lw->point_loads = point_loads;
        grow_mass_memos(lw, np0, np0, nb0, nb0, nfr0, nfr0);
        forget_calls(lw, nl0, -1);
        model_free(&lw->model);
        lw->model = old;
        return -1;
    }
    model_free(&old);

#define INSTALL(field, v)                                               \
    do {                                                                \
        if ((v) != lw->field) {                                         \
            free((void *)lw->field);                                    \
            lw->field = (v);                                            \
        }                                                               \
    } while (0)
    INSTALL(particles, parts);
    INSTALL(Q, Q);
    INSTALL(C, rows.C);
    INSTALL(Cv, rows.Cv);
    INSTALL(cspan, rows.span);
    INSTALL(cname, rows.name);
    INSTALL(cleft, rows.left);
    INSTALL(cons, cons);
    INSTALL(psi, psi);
    INSTALL(psi_span, psi_span);
#undef INSTALL
#undef DROP

    if (rows.n > r0) {
        /* The multipliers of the new rows: the last variables, in the
         * place lower_model() gives them. */
        for (size_t a = r0; a < rows.n; a++)
            declare_multiplier(lw, a);
    }
    for (size_t a = c0; a < nc; a++)
        declare_dropped(lw, a);
    if (rows.n > r0) {
        /* reaction() sums over the constraints: lets lowered as queries
         * are lowered again when used. */
        for (size_t i = 0; i < nl; i++)
            lw->let_memo[LOWER_QUERY][i].state = 0;
        forget_calls(lw, nl, LOWER_QUERY);
    }

    publish_rows(lw, rows.n, np, nb);
    lw->energies_stale = true; /* lower_system sums them */
    return 0;
}

void lower_free(lower_t *lw)
{
    if (!lw)
        return;
    model_free(&lw->model);
    expr_graph_free(lw->g);
    free(lw->q);
    free(lw->qd);
    free(lw->qdd);
    free(lw->z);
    free(lw->zd);
    free(lw->p);
    free(lw->lam);
    free(lw->qname);
    free(lw->zname);
    free(lw->pname);
    free(lw->in);
    free(lw->iname);
    free(lw->input);
    free(lw->cname);
    free(lw->dvar);
    free(lw->second);
    free(lw->velocity);
    free(lw->Q);
    free(lw->C);
    free(lw->Cv);
    free(lw->cspan);
    free(lw->cleft);
    free(lw->psi);
    free(lw->psi_span);
    free(lw->particles);
    free(lw->bodies);
    free(lw->particle_pos);
    free(lw->particle_mass);
    free(lw->frame_memo);
    free(lw->body_pos);
    free(lw->body_mass);
    free(lw->body_T);
    free(lw->body_Vg);
    free(lw->particle_T);
    free(lw->particle_Vg);
    free(lw->cons);
    free(lw->judged);
    free(lw->dvars);
    free(lw->dnames);
    free(lw->root);
    lower_translation_free(lw->trans);
    for (size_t i = 0; i < lw->nrow_names; i++)
        free(lw->row_names[i]);
    free(lw->row_names);
    free(lw->param_read);
    free(lw->let_read);
    free(lw->not_const);
    free(lw->known);
    for (int k = 0; k < 3; k++)
        free(lw->let_memo[k]);
    for (size_t i = 0; i < lw->ncalls; i++)
        free(lw->calls[i].args);
    free(lw->calls);
    free(lw->call_table);
    free(lw);
}

/* ---- where an evaluation fails ---------------------------------------- */

/* A model expression that the equations evaluate, and its declaration. */
typedef struct undef_item {
    const expr_t *e;
    src_span_t span;
    char what[96];
    bool energy; /* M and h take its second derivatives by velocities */
} undef_item_t;

/* The declarations' lowered expressions, in declaration order by kind:
 * frames before the particles and bodies (a body reads its frame, and a
 * fault in a frame is the frame's), gravity, the energies, the forces and
 * the points where they act on bodies, the constraints' rows, the
 * kinematic equations. */
static size_t undef_items(lower_t *lw, undef_item_t **out)
{
    const model_t *m = &lw->model;
    size_t cap = 8, n = 0;
    undef_item_t *it = xcalloc(cap, sizeof *it);
#define ITEM(node, sp, en, ...)                                         \
    do {                                                                \
        if (n == cap)                                                   \
            it = xrealloc(it, (cap *= 2) * sizeof *it);                 \
        it[n].e = (node);                                               \
        it[n].span = (sp);                                              \
        it[n].energy = (en);                                            \
        snprintf(it[n].what, sizeof it[n].what, __VA_ARGS__);           \
        n++;                                                            \
    } while (0)
    for (size_t i = 0; i < m->frames.n; i++) {
        const model_frame_t *f = &m->frames.v[i];
        const rigid_frame_t *rf = &lw->frame_memo[i].f;
        if (!f->parent) /* the inertial frame: constants */
            continue;
        for (int a = 0; a < 3; a++)
            for (int c = 0; c < 3; c++)
                ITEM(rf->axis[a][c], f->decl, false, "the axes of frame %s",
                     f->name);
        /* on the frame's axes: the inertial ones are made when read */
        for (int c = 0; c < 3; c++)
            ITEM(rf->omega[c] ? rf->omega[c] : rf->wloc[c], f->decl, false,
                 "the angular velocity of frame %s", f->name);
    }
    for (size_t i = 0; i < m->particles.n; i++) {
        const model_particle_t *pt = &m->particles.v[i];
        const nh_particle_t *sp = &lw->particles[i];
        ITEM(sp->mass, pt->mass->span, false, "the mass of particle %s",
             pt->name);
        for (unsigned k = 0; k < sp->dim; k++)
            ITEM(sp->pos[k], pt->position->span, false,
                 "the position of particle %s", pt->name);
    }
    for (size_t i = 0; i < m->bodies.n; i++) {
        const model_body_t *b = &m->bodies.v[i];
        ITEM(lw->body_mass[i].v.c[0], b->mass->span, false,
             "the mass of body %s", b->name);
        for (int k = 0; k < 3; k++)
            ITEM(lw->body_pos[i].v.c[k], b->position->span, false,
                 "the centre of mass of body %s", b->name);
        /* its inertia and its frame's rates are in no other item */
        ITEM(lw->body_T[i], b->decl, true, "the kinetic energy of body %s",
             b->name);
    }
    for (unsigned k = 0; k < lw->gravity.dim; k++)
        ITEM(lw->gravity.c[k], m->gravity->span, false, "gravity");
    const model_energy_t *en[3] = {&m->kinetic, &m->potential,
                                   &m->lagrangian};
    const memo_t *memo[3] = {&lw->kinetic, &lw->potential, &lw->lagrangian};
    static const char *const kind[3] = {"the kinetic energy",
                                        "the potential energy",
                                        "the Lagrangian"};
    for (int k = 0; k < 3; k++)
        if (en[k]->name && memo[k]->state == 2)
            ITEM(memo[k]->v.c[0], en[k]->value->span, true, "%s %s", kind[k],
                 en[k]->name);
    for (size_t f = 0; f < m->forces.n; f++) {
        const model_force_t *fo = &m->forces.v[f];
        value_t v;
        diag_t tmp = {0};
        if (lower_expr(lw, fo->value, LOWER_MODEL, &v, &tmp) != 0)
            continue;
        for (unsigned k = 0; k < (v.dim ? v.dim : 1); k++)
            ITEM(v.c[k], fo->value->span, false, "the %s on %s",
                 fo->torque ? "torque" : "force", fo->target);
        if (fo->at && lower_expr(lw, fo->at, LOWER_MODEL, &v, &tmp) == 0)
            for (unsigned k = 0; k < (v.dim ? v.dim : 1); k++)
                ITEM(v.c[k], fo->at->span, false,
                     "the point where the force on %s acts", fo->target);
    }
    for (size_t a = 0; a < lw->sys.r; a++)
        ITEM(lw->C[a], lw->cspan[a], false, "constraint %s", lw->cname[a]);
    for (size_t i = 0; lw->psi && i < lw->sys.n; i++)
        if (lw->psi[i])
            ITEM(lw->psi[i], lw->psi_span[i], false,
                 "the kinematic equation of %s'", lw->qname[i]);
#undef ITEM
    *out = it;
    return n;
}

/* The first of NODES (N of them) not finite at VARS, or -1. */
static long first_undefined(const lower_t *lw, const expr_t *const *nodes,
                            size_t n, const double *vars)
{
    if (!n)
        return -1;
    tape_t *tp = tape_compile(lw->g, nodes, n, expr_graph_nvars(lw->g));
    double *out = xcalloc(n, sizeof *out);
    double *work = xcalloc(tape_work_size(tp) + 1, sizeof *work);
    tape_eval(tp, vars, out, work);
    long bad = -1;
    for (size_t k = 0; k < n && bad < 0; k++)
        if (!isfinite(out[k]))
            bad = (long)k;
    free(work);
    free(out);
    tape_free(tp);
    return bad;
}

int lower_find_undefined(lower_t *lw, const double *vars, src_span_t *where,
                         char *what, size_t size)
{
    undef_item_t *it;
    size_t n = undef_items(lw, &it);
    const nh_system_t *s = &lw->sys;
    /* The variables the equations differentiate by. */
    size_t nw = 2 * s->n + s->m + 1;
    uint32_t *w = xcalloc(nw, sizeof *w);
    for (size_t i = 0; i < s->n; i++) {
        w[i] = lw->q[i];
        w[s->n + i] = lw->qd[i];
    }
    for (size_t i = 0; i < s->m; i++)
        w[2 * s->n + i] = lw->z[i];
    w[nw - 1] = lw->t;
    int found = 0;
    /* Stage 0: the values; 1: their first derivatives (Q, B, the
     * gradients in h); 2: the energies' derivatives by a velocity and
     * then by any variable (M and h).  The first stage that fails names
     * the first declaration that fails in it. */
    for (int stage = 0; stage < 3 && !found; stage++) {
        size_t cap = 16, k = 0;
        const expr_t **nodes = xcalloc(cap, sizeof *nodes);
        size_t *owner = xcalloc(cap, sizeof *owner);
        uint32_t *by = xcalloc(cap, sizeof *by);
        for (size_t i = 0; i < n; i++) {
            size_t outer = stage == 0 ? 1 : nw;
            for (size_t a = 0; a < outer; a++) {
                if (stage == 2 && !(it[i].energy && a >= s->n && a < 2 * s->n))
                    continue;
                const expr_t *d = stage == 0 ? it[i].e
                                             : expr_diff(lw->g, it[i].e, w[a]);
                size_t inner = stage == 2 ? nw : 1;
                for (size_t b = 0; b < inner; b++) {
                    const expr_t *dd =
                        stage == 2 ? expr_diff(lw->g, d, w[b]) : d;
                    if (stage > 0 && dd->op == EXPR_CONST)
                        continue; /* finite, and most of them are 0 */
                    if (k == cap) {
                        cap *= 2;
                        nodes = xrealloc(nodes, cap * sizeof *nodes);
                        owner = xrealloc(owner, cap * sizeof *owner);
                        by = xrealloc(by, cap * sizeof *by);
                    }
                    nodes[k] = dd;
                    owner[k] = i;
                    by[k] = stage == 0 ? UINT32_MAX : w[a];
                    k++;
                }
            }
        }
        long bad = first_undefined(lw, nodes, k, vars);
        if (bad >= 0) {
            const undef_item_t *u = &it[owner[bad]];
            *where = u->span;
            if (stage == 0)
                snprintf(what, size, "%s cannot be evaluated at the state",
                         u->what);
            else
                snprintf(what, size,
                         "the derivative by %s of %s cannot be evaluated "
                         "at the state",
                         expr_var_name(lw->g, by[bad]), u->what);
            found = 1;
        }
        free(nodes);
        free(owner);
        free(by);
    }
    free(w);
    free(it);
    return found;
}

bool lower_model_reads(const lower_t *lw, model_kind_t kind, size_t idx)
{
    if (kind == MODEL_PARAM)
        return idx >= lw->model.params.n || lw->param_read[idx];
    if (kind == MODEL_LET)
        return idx >= lw->model.lets.n || lw->let_read[idx];
    return true;
}

const nh_system_t *lower_system(const lower_t *lw)
{
    /* T, V and L summed on first use after declarations changed them: a
     * cache of a logically const lowering (lw is never a const object) */
    if (lw->energies_stale) {
        lower_t *w = (lower_t *)lw;
        set_energies(w);
        w->energies_stale = false;
    }
    return &lw->sys;
}
expr_graph_t *lower_graph(const lower_t *lw) { return lw->g; }

void lower_fill_vars(const lower_t *lw, const model_t *m, double *vars)
{
    uint32_t nv = expr_graph_nvars(lw->g);
    for (uint32_t v = 0; v < nv; v++)
        vars[v] = NAN;
    /* By name: M may be a later version of the model this was lowered
     * from (a `set` or `initial` changes values, not declarations). */
    for (size_t i = 0; i < lw->sys.np; i++) {
        /* Parameters are only ever appended: the same index first. */
        if (i < m->params.n && strcmp(m->params.v[i].name, lw->pname[i]) == 0) {
            vars[lw->p[i]] = m->params.v[i].value;
            continue;
        }
        for (size_t j = 0; j < m->params.n; j++)
            if (strcmp(m->params.v[j].name, lw->pname[i]) == 0) {
                vars[lw->p[i]] = m->params.v[j].value;
                break;
            }
    }
    for (size_t i = 0; i < lw->sys.ni; i++) {
        long j = i < m->inputs.n &&
                         strcmp(m->inputs.v[i].name, lw->iname[i]) == 0
                     ? (long)i
                     : model_find(m, MODEL_INPUT, lw->iname[i]);
        if (j >= 0)
            vars[lw->in[i]] = m->inputs.v[j].value;
    }
    for (size_t i = 0; i < lw->sys.n && i < m->q.n; i++) {
        vars[lw->q[i]] = m->q.v[i];
        vars[lw->qd[i]] = m->qd.v[i];
    }
    for (size_t i = 0; i < lw->sys.m && i < m->z.n; i++)
        vars[lw->z[i]] = m->z.v[i];
    vars[lw->t] = m->t;
}

void lower_store_state(const lower_t *lw, const double *vars, model_t *m)
{
    for (size_t i = 0; i < lw->sys.n && i < m->q.n; i++) {
        m->q.v[i] = vars[lw->q[i]];
        m->qd.v[i] = vars[lw->qd[i]];
    }
    for (size_t i = 0; i < lw->sys.m && i < m->z.n; i++)
        m->z.v[i] = vars[lw->z[i]];
    m->t = vars[lw->t];
}
