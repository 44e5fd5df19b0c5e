/*
 * lower.c — see lower.h.
 *
 * Scoping: a `let` body sees the model's names and, for a let function,
 * its own parameters; it does not see the parameters of the function that
 * uses it (lexical scope).  Arguments are lowered in the caller's scope
 * and bound by value, so `a'` inside a body is the time derivative of the
 * argument expression (LANGUAGE.md §4).
 *
 * Must not: print; evaluate; change the model it lowers.
 */
#include "interp/mech/lower.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "interp/base/util.h"

#define LOWER_MAX_DEPTH 200 /* let expansions and nested calls */

/* A lowered particle or energy, computed once on first use. */
typedef struct memo {
    int state; /* 0 not yet, 1 in progress, 2 done */
    value_t v;
} memo_t;

struct lower {
    model_t model; /* private copy of the declarations */
    const source_set_t *src;
    expr_graph_t *g;
    nh_system_t sys;

    /* variable numbers, by role */
    uint32_t *q, *qd, *qdd, *z, *zd, *p, *lam;
    uint32_t t;
    const expr_t **dvar;   /* time derivative of each variable */
    bool *second;          /* q'', z', lambda: not in model expressions */
    bool *velocity;        /* q', z: what makes a constraint non-holonomic */

    memo_t kinetic, potential, lagrangian;
    const expr_t *Tp; /* the particles' kinetic energy, summed in order */
    memo_t *particle_pos, *particle_mass;

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
    const char **qname, **zname, **pname, **cname;
    const expr_t **Q, **C, **Cv, **psi;
    src_span_t *cspan, *psi_span;
    nh_particle_t *particles;

    const char **known; /* for lower_known_names */
    size_t count_base;  /* graph size when the current lowering began */
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

/* ---- names ---------------------------------------------------------- */

static const char *const builtin_functions[] = {
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh",
    "tanh", "exp", "log", "sqrt", "abs", "sign", "min", "max", "dot",
    "cross", "norm", "diff", "lambda", "reaction", NULL};

const char *const *lower_known_names(lower_t *lw)
{
    const model_t *m = &lw->model;
    size_t n = 2 + m->params.n + m->coords.n + m->speeds.n + m->lets.n +
               m->particles.n + m->constraints.n + 3 +
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

static int unknown_name(lower_t *lw, const ctx_t *cx, const char *name,
                        src_span_t span, diag_t *err)
{
    /* Function parameters in scope are candidates too. */
    const char *const *known = lower_known_names(lw);
    const char *best = source_closest(name, known);
    if (cx->frame) {
        for (size_t i = 0; i < cx->frame->n; i++) {
            size_t d = source_edit_distance(name, cx->frame->names[i].name);
            if (d <= 2 && (!best || d < source_edit_distance(name, best)))
                best = cx->frame->names[i].name;
        }
    }
    if (best)
        return diag_error(err, span, "unknown name '%s'; did you mean '%s'?",
                          name, best);
    return diag_error(err, span, "unknown name '%s'", name);
}

static long find_let(const model_t *m, const char *name)
{
    for (size_t i = 0; i < m->lets.n; i++)
        if (strcmp(m->lets.v[i].name, name) == 0)
            return (long)i;
    return -1;
}

static long find_particle(const model_t *m, const char *name)
{
    for (size_t i = 0; i < m->particles.n; i++)
        if (strcmp(m->particles.v[i].name, name) == 0)
            return (long)i;
    return -1;
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
    if (out->dim == 0)
        return diag_error(err, pt->position->span,
                          "the position of particle %s must be a 2- or "
                          "3-vector, like [x, y]",
                          pt->name);
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
static int check_size(const lower_t *lw, const ast_expr_t *e, diag_t *err)
{
    if (expr_graph_count(lw->g) - lw->count_base <= LOWER_MAX_NODES)
        return 0;
    return diag_error(err, e->span,
                      "this expression grows too large (more than %d "
                      "nodes in the graph)",
                      LOWER_MAX_NODES);
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
    value_t args[e->nargs ? e->nargs : 1];
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
    return var == lw->t ? (long)var : -1;
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
        if (a->kind != AST_NAME)
            return diag_error(err, a->span, "%s() takes the name of %s", f,
                              is_lambda ? "a constraint" : "a coordinate");
        if (is_lambda) {
            long c = model_constraint_index(&lw->model, a->name);
            if (c < 0) {
                const char *names[lw->model.constraints.n + 1];
                for (size_t i = 0; i < lw->model.constraints.n; i++)
                    names[i] = lw->model.constraints.v[i].name;
                names[lw->model.constraints.n] = NULL;
                const char *best = source_closest(a->name, names);
                if (best)
                    return diag_error(err, a->span,
                                      "'%s' is not a constraint; did you "
                                      "mean '%s'?",
                                      a->name, best);
                return diag_error(err, a->span, "'%s' is not a constraint",
                                  a->name);
            }
            *out = scalar(expr_var(g, lw->lam[c]));
            return 0;
        }
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

    value_t args[e->nargs ? e->nargs : 1];
    if (strcmp(f, "diff") == 0) {
        if (e->nargs != 2)
            return arity_error(e, "diff()", 2, err);
        if (lower_args(lw, cx, e, args, err) != 0)
            return -1;
        long var = diff_variable(lw, &args[1]);
        if (var < 0)
            return diag_error(err, e->args[1]->span,
                              "diff() differentiates with respect to a "
                              "coordinate, a velocity x', a speed, a "
                              "parameter or t");
        /* a derivative is defined where its expression is (LANGUAGE.md
         * §3.4.1: diff(log(0), t) is no more 0 than log(0) is a number) */
        out->dim = args[0].dim;
        for (unsigned k = 0; k < (args[0].dim ? args[0].dim : 1); k++)
            out->c[k] = expr_guard(g, expr_diff(g, args[0].c[k], (uint32_t)var),
                                   args[0].c[k]);
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
        const char *best = source_closest(f, lower_known_names(lw));
        if (best)
            return diag_error(err, e->name_span,
                              "unknown function '%s'; did you mean '%s'?", f,
                              best);
        return diag_error(err, e->name_span, "unknown function '%s'", f);
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
        *out = scalar(expr_var(g, lw->p[idx]));
        return 0;
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
        memo->v = *out;
        memo->state = 2;
        return 0;
    }
    case MODEL_KINETIC:
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
    for (unsigned k = 0; k < (a.dim ? a.dim : 1); k++) /* as diff() */
        out->c[k] = expr_guard(lw->g, expr_dt(lw->g, a.c[k], lw->dvar),
                               a.c[k]);
    if (check_size(lw, e, err))
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
                                "a vector's components must be scalars");
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

int lower_expr(lower_t *lw, const ast_expr_t *e, lower_mode_t mode,
               value_t *out, diag_t *err)
{
    lw->count_base = expr_graph_count(lw->g);
    ctx_t cx = {mode, NULL, 0, {0}, 0};
    if (lower_rec(lw, &cx, e, out, err) != 0)
        return -1;
    if (mode == LOWER_CONST) {
        /* Only parameters and numbers: nothing of the state. */
        const nh_system_t *s = &lw->sys;
        unsigned n = out->dim ? out->dim : 1;
        for (unsigned k = 0; k < n; k++) {
            bool param_only = true;
            for (uint32_t v = 0; v < expr_graph_nvars(lw->g) && param_only;
                 v++) {
                bool is_param = false;
                for (size_t i = 0; i < s->np; i++)
                    is_param |= lw->p[i] == v;
                if (!is_param && expr_depends(lw->g, out->c[k], v))
                    return diag_error(err, e->span,
                                      "this value must be a number or made "
                                      "of parameters, but it depends on %s",
                                      expr_var_name(lw->g, v));
            }
        }
    }
    return 0;
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
    return false;
}

/* ---- the model ------------------------------------------------------- */

static uint32_t declare(expr_graph_t *g, const char *base, const char *suffix)
{
    size_t n = strlen(base) + strlen(suffix) + 16;
    char buf[n];
    snprintf(buf, n, "%s%s", base, suffix);
    return expr_var_declare(g, buf);
}

/* The multiplier of the constraint NAME: lambda(NAME). */
static uint32_t declare_multiplier(expr_graph_t *g, const char *name)
{
    size_t len = strlen(name) + 16;
    char buf[len];
    snprintf(buf, len, "lambda(%s)", name);
    uint32_t v = expr_var_declare(g, buf);
    expr_var_set_rank(g, v, NH_RANK_MULTIPLIER);
    return v;
}

static void declare_variables(lower_t *lw)
{
    const model_t *m = &lw->model;
    expr_graph_t *g = lw->g;
    size_t n = m->coords.n, ns = m->speeds.n, np = m->params.n,
           r = m->constraints.n;
    lw->q = xcalloc(n + 1, sizeof *lw->q);
    lw->qd = xcalloc(n + 1, sizeof *lw->qd);
    lw->qdd = xcalloc(n + 1, sizeof *lw->qdd);
    lw->z = xcalloc(ns + 1, sizeof *lw->z);
    lw->zd = xcalloc(ns + 1, sizeof *lw->zd);
    lw->p = xcalloc(np + 1, sizeof *lw->p);
    lw->lam = xcalloc(r + 1, sizeof *lw->lam);
    lw->qname = xcalloc(n + 1, sizeof *lw->qname);
    lw->zname = xcalloc(ns + 1, sizeof *lw->zname);
    lw->pname = xcalloc(np + 1, sizeof *lw->pname);
    lw->cname = xcalloc(r + 1, sizeof *lw->cname);
    for (size_t i = 0; i < n; i++) {
        const char *nm = m->coords.v[i].name;
        lw->qname[i] = nm;
        lw->q[i] = declare(g, nm, "");
        lw->qd[i] = declare(g, nm, "'");
        lw->qdd[i] = declare(g, nm, "''");
    }
    for (size_t i = 0; i < ns; i++) {
        const char *nm = m->speeds.v[i].name;
        lw->zname[i] = nm;
        lw->z[i] = declare(g, nm, "");
        lw->zd[i] = declare(g, nm, "'");
    }
    for (size_t i = 0; i < np; i++) {
        lw->pname[i] = m->params.v[i].name;
        lw->p[i] = declare(g, m->params.v[i].name, "");
    }
    lw->t = expr_var_declare(g, "t");
    for (size_t i = 0; i < r; i++) {
        const char *nm = m->constraints.v[i].name;
        lw->cname[i] = nm;
        lw->lam[i] = declare_multiplier(g, nm);
    }

    /* the order of factors in print (LANGUAGE.md §7.1): parameters,
     * t, coordinates, velocities and speeds, accelerations (and the
     * multipliers, in declare_multiplier) */
    for (size_t i = 0; i < np; i++)
        expr_var_set_rank(g, lw->p[i], NH_RANK_PARAM);
    expr_var_set_rank(g, lw->t, NH_RANK_TIME);
    for (size_t i = 0; i < n; i++) {
        expr_var_set_rank(g, lw->q[i], NH_RANK_COORD);
        expr_var_set_rank(g, lw->qd[i], NH_RANK_VELOCITY);
        expr_var_set_rank(g, lw->qdd[i], NH_RANK_ACCEL);
    }
    for (size_t i = 0; i < ns; i++) {
        expr_var_set_rank(g, lw->z[i], NH_RANK_VELOCITY);
        expr_var_set_rank(g, lw->zd[i], NH_RANK_ACCEL);
    }

    uint32_t nv = expr_graph_nvars(g);
    lw->dvar = xcalloc(nv, sizeof *lw->dvar);
    lw->second = xcalloc(nv, sizeof *lw->second);
    lw->velocity = xcalloc(nv, sizeof *lw->velocity);
    for (size_t i = 0; i < n; i++) {
        lw->dvar[lw->q[i]] = expr_var(g, lw->qd[i]);
        lw->dvar[lw->qd[i]] = expr_var(g, lw->qdd[i]);
        lw->second[lw->qdd[i]] = true;
        lw->velocity[lw->qd[i]] = true;
    }
    for (size_t i = 0; i < ns; i++) {
        lw->dvar[lw->z[i]] = expr_var(g, lw->zd[i]);
        lw->second[lw->zd[i]] = true;
        lw->velocity[lw->z[i]] = true;
    }
    lw->dvar[lw->t] = expr_num(g, 1);
    for (size_t i = 0; i < r; i++)
        lw->second[lw->lam[i]] = true;
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

/* T, V and L of the system from the particles' energy lw->Tp and the
 * energies, which are lowered already (their memos are done). */
static void set_energies(lower_t *lw)
{
    const model_t *m = &lw->model;
    expr_graph_t *g = lw->g;
    const expr_t *T = lw->Tp, *V = expr_num(g, 0);
    if (m->kinetic.name)
        T = expr_add(g, T, lw->kinetic.v.c[0]);
    if (m->potential.name)
        V = lw->potential.v.c[0];
    if (m->lagrangian.name) {
        lw->sys.L = lw->lagrangian.v.c[0];
        lw->sys.T = lw->sys.V = NULL;
    } else {
        lw->sys.T = T;
        lw->sys.V = V;
        lw->sys.L = expr_sub(g, T, V);
    }
    lw->sys.T_only_particles = !m->kinetic.name && m->particles.n > 0 &&
                               !m->lagrangian.name;
}

static int lower_energies(lower_t *lw, diag_t *err)
{
    model_t *m = &lw->model;
    expr_graph_t *g = lw->g;
    ctx_t cx = {LOWER_MODEL, NULL, 0, {0}, 0};
    value_t v;
    lw->Tp = expr_num(g, 0);
    for (size_t i = 0; i < m->particles.n; i++) {
        const expr_t *term;
        if (lower_particle(lw, i, &lw->particles[i], &term, err) != 0)
            return -1;
        lw->Tp = expr_add(g, lw->Tp, term);
    }
    if (m->kinetic.name &&
        energy_value(lw, &cx, MODEL_KINETIC, m->kinetic.span, &v, err))
        return -1;
    if (m->potential.name &&
        energy_value(lw, &cx, MODEL_POTENTIAL, m->potential.span, &v, err))
        return -1;
    if (m->lagrangian.name &&
        energy_value(lw, &cx, MODEL_LAGRANGIAN, m->lagrangian.span, &v, err))
        return -1;
    set_energies(lw);
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
    long pi = find_particle(m, fo->target);
    if (pi < 0)
        return diag_error(err, fo->span,
                          "a force acts on a coordinate or a particle, "
                          "and '%s' is neither",
                          fo->target);
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
    return 0;
}

/* Constraint A of the model into C[a], Cv[a], cspan[a]. */
static int lower_constraint(lower_t *lw, size_t a, const expr_t **C,
                            const expr_t **Cv, src_span_t *cspan,
                            diag_t *err)
{
    expr_graph_t *g = lw->g;
    const model_constraint_t *c = &lw->model.constraints.v[a];
    value_t l, r;
    if (lower_expr(lw, c->lhs, LOWER_MODEL, &l, err) != 0 ||
        lower_expr(lw, c->rhs, LOWER_MODEL, &r, err) != 0)
        return -1;
    if (want_scalar(&l, c->lhs, "a constraint side", err) ||
        want_scalar(&r, c->rhs, "a constraint side", err))
        return -1;
    /* C = LHS − RHS (LANGUAGE.md §4) */
    C[a] = expr_sub(g, l.c[0], r.c[0]);
    cspan[a] = c->span;
    /* A holonomic f(q, t) = 0 acts on the velocities through f'. */
    Cv[a] = expr_depends_any(g, C[a], lw->velocity) ? C[a]
                                                    : expr_dt(g, C[a], lw->dvar);
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

/* The system's view of what a declaration can grow or replace: forces,
 * constraints and their multipliers, particles, kinematic equations. */
static void publish_rows(lower_t *lw, size_t r, size_t np)
{
    nh_system_t *s = &lw->sys;
    s->Q = lw->Q;
    s->r = r;
    s->C = lw->C;
    s->cname = lw->cname;
    s->cspan = lw->cspan;
    s->lam = lw->lam;
    s->nparticles = np;
    s->particles = lw->particles;
    s->psi = lw->psi;
    s->psi_span = lw->psi_span;
}

lower_t *lower_model(const model_t *m, const source_set_t *src, diag_t *err)
{
    lower_t *lw = xcalloc(1, sizeof *lw);
    model_clone(&lw->model, m);
    lw->src = src;
    lw->g = expr_graph_new();
    declare_variables(lw);

    size_t n = m->coords.n, r = m->constraints.n, np = m->particles.n;
    lw->Q = xcalloc(n + 1, sizeof *lw->Q);
    lw->C = xcalloc(r + 1, sizeof *lw->C);
    lw->Cv = xcalloc(r + 1, sizeof *lw->Cv);
    lw->cspan = xcalloc(r + 1, sizeof *lw->cspan);
    lw->particles = xcalloc(np + 1, sizeof *lw->particles);
    lw->particle_pos = xcalloc(np + 1, sizeof *lw->particle_pos);
    lw->particle_mass = xcalloc(np + 1, sizeof *lw->particle_mass);
    for (int k = 0; k < 3; k++)
        lw->let_memo[k] = xcalloc(m->lets.n + 1, sizeof *lw->let_memo[k]);
    if (m->kinematics.n) {
        lw->psi = xcalloc(n + 1, sizeof *lw->psi);
        lw->psi_span = xcalloc(n + 1, sizeof *lw->psi_span);
    }
    for (size_t i = 0; i < n; i++)
        lw->Q[i] = expr_num(lw->g, 0);

    nh_system_t *s = &lw->sys;
    s->g = lw->g;
    s->n = n;
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
    s->t = lw->t;
    publish_rows(lw, r, np);

    /* Lets last: a let may use reaction(), which needs the constraints. */
    int rc = lower_energies(lw, err);
    for (size_t f = 0; f < m->forces.n && !rc; f++)
        rc = lower_force(lw, f, lw->Q, lw->particles, err);
    for (size_t a = 0; a < r && !rc; a++)
        rc = lower_constraint(lw, a, lw->C, lw->Cv, lw->cspan, err);
    for (size_t k = 0; k < m->kinematics.n && !rc; k++)
        rc = lower_kinematic(lw, k, lw->psi, lw->psi_span, err);
    for (size_t i = 0; i < m->lets.n && !rc; i++)
        rc = lower_let(lw, i, err);
    if (rc) {
        lower_free(lw);
        return NULL;
    }
    return lw;
}

/* ---- extending a lowering ------------------------------------------------
 *
 * Why: a file declares a model one statement at a time, and the session
 * validates each by lowering the model it would make (a failing statement
 * changes nothing).  Lowering the whole model again for every statement
 * costs O(statements × model): cubic in N for the N-trailer, whose model
 * is N² nodes.  Most statements only add a declaration, and an added
 * declaration cannot change the meaning of the earlier ones (they name
 * nothing it declares: they were checked when they were made), so
 * lowering only the new declarations against the existing graph gives the
 * same system as lowering everything afresh: the same variables with the
 * same numbers (a new constraint's multiplier is the last variable in
 * either case), and the same nodes (they are hash-consed and canonical;
 * T, Q, ... are summed in the same order).
 *
 * What extends: new lets, particles, forces, constraints and kinematic
 * equations.  What does not (lower_model() instead): a new parameter,
 * coordinate or speed (its variables would come before the multipliers,
 * renumbering them), an energy, anything replaced, a let that takes the
 * name of a built-in function (earlier calls would change meaning), and
 * new constraints together with new lets (a let may read them).
 *
 * A failure leaves the lowering as it was: the new declarations are
 * lowered into copies of the arrays the system points into, which are
 * installed only when all succeeded; the memos of new declarations are
 * cleared.  The graph keeps the nodes the attempt made: nodes are
 * values, and an unused node changes nothing.
 */

/* Whether M is the model of LW with declarations appended that
 * lower_extend() handles (AST nodes identify a declaration). */
static bool extends_model(const model_t *old, const model_t *m)
{
    if (m->params.n != old->params.n || m->coords.n != old->coords.n ||
        m->speeds.n != old->speeds.n)
        return false;
    /* Parameter values may differ: values are not lowered. */
    for (size_t i = 0; i < m->params.n; i++)
        if (m->params.v[i].name != old->params.v[i].name)
            return false;
    for (size_t i = 0; i < m->coords.n; i++)
        if (m->coords.v[i].name != old->coords.v[i].name)
            return false;
    for (size_t i = 0; i < m->speeds.n; i++)
        if (m->speeds.v[i].name != old->speeds.v[i].name)
            return false;
    const model_energy_t *eo[3] = {&old->kinetic, &old->potential,
                                   &old->lagrangian};
    const model_energy_t *em[3] = {&m->kinetic, &m->potential,
                                   &m->lagrangian};
    for (int k = 0; k < 3; k++)
        if (eo[k]->name != em[k]->name || eo[k]->value != em[k]->value)
            return false;
#define SAME_PREFIX(arr, same)                                          \
    do {                                                                \
        if (m->arr.n < old->arr.n)                                      \
            return false;                                               \
        for (size_t i = 0; i < old->arr.n; i++) {                       \
            const __typeof__(*m->arr.v) *a = &old->arr.v[i],            \
                                        *b = &m->arr.v[i];              \
            if (!(same))                                                \
                return false;                                           \
        }                                                               \
    } while (0)
    SAME_PREFIX(lets, a->name == b->name && a->stmt == b->stmt);
    SAME_PREFIX(particles, a->name == b->name && a->mass == b->mass &&
                               a->position == b->position);
    SAME_PREFIX(forces, a->target == b->target && a->value == b->value);
    SAME_PREFIX(constraints, a->name == b->name && a->lhs == b->lhs &&
                                 a->rhs == b->rhs);
    SAME_PREFIX(kinematics, a->coord == b->coord && a->rhs == b->rhs);
#undef SAME_PREFIX
    if (m->lets.n > old->lets.n && m->constraints.n > old->constraints.n)
        return false;
    for (size_t i = old->lets.n; i < m->lets.n; i++) {
        const char *nm = m->lets.v[i].name;
        if (expr_op_lookup(nm) >= 0)
            return false;
        for (size_t k = 0; builtin_functions[k]; k++)
            if (strcmp(nm, builtin_functions[k]) == 0)
                return false;
    }
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

/* Room for N memos at *A, which holds OLD; the new ones cleared. */
static void grow_memos(memo_t **a, size_t old, size_t n)
{
    *a = xrealloc(*a, (n + 1) * sizeof **a);
    memset(*a + old, 0, (n + 1 - old) * sizeof **a);
}

int lower_extend(lower_t *lw, const model_t *m, diag_t *err)
{
    if (!extends_model(&lw->model, m))
        return 1;
    expr_graph_t *g = lw->g;
    const model_t *o = &lw->model;
    size_t n = m->coords.n;
    size_t np0 = o->particles.n, nf0 = o->forces.n, r0 = o->constraints.n,
           nk0 = o->kinematics.n, nl0 = o->lets.n;
    size_t np = m->particles.n, nf = m->forces.n, r = m->constraints.n,
           nk = m->kinematics.n, nl = m->lets.n;

    /* The memos are the lowering's own: growing them is invisible. */
    grow_memos(&lw->particle_pos, np0, np);
    grow_memos(&lw->particle_mass, np0, np);
    for (int k = 0; k < 3; k++)
        grow_memos(&lw->let_memo[k], nl0, nl);

    /* The new declarations are looked up by name: lower against M. */
    model_t old = lw->model;
    model_clone(&lw->model, m);

    nh_particle_t *parts = dup_items(lw->particles, np0, np + 1,
                                     sizeof *parts);
    const expr_t **Q = dup_items(lw->Q, n, n + 1, sizeof *Q);
    const expr_t **C = dup_items(lw->C, r0, r + 1, sizeof *C);
    const expr_t **Cv = dup_items(lw->Cv, r0, r + 1, sizeof *Cv);
    src_span_t *cspan = dup_items(lw->cspan, r0, r + 1, sizeof *cspan);
    const expr_t **psi = NULL;
    src_span_t *psi_span = NULL;
    if (nk) {
        psi = dup_items(lw->psi, lw->psi ? n : 0, n + 1, sizeof *psi);
        psi_span = dup_items(lw->psi_span, lw->psi ? n : 0, n + 1,
                             sizeof *psi_span);
    }
    const expr_t *Tp = lw->Tp;
    int rc = 0;
    for (size_t i = np0; i < np && !rc; i++) {
        const expr_t *term;
        rc = lower_particle(lw, i, &parts[i], &term, err);
        if (!rc)
            Tp = expr_add(g, Tp, term);
    }
    for (size_t f = nf0; f < nf && !rc; f++)
        rc = lower_force(lw, f, Q, parts, err);
    for (size_t a = r0; a < r && !rc; a++)
        rc = lower_constraint(lw, a, C, Cv, cspan, err);
    for (size_t k = nk0; k < nk && !rc; k++)
        rc = lower_kinematic(lw, k, psi, psi_span, err);
    for (size_t i = nl0; i < nl && !rc; i++)
        rc = lower_let(lw, i, err);

    if (rc) {
        free(parts);
        free(Q);
        free(C);
        free(Cv);
        free(cspan);
        free(psi);
        free(psi_span);
        grow_memos(&lw->particle_pos, np0, np0);
        grow_memos(&lw->particle_mass, np0, np0);
        for (int k = 0; k < 3; k++)
            grow_memos(&lw->let_memo[k], nl0, nl0);
        forget_calls(lw, nl0, -1);
        model_free(&lw->model);
        lw->model = old;
        return -1;
    }
    model_free(&old);

#define INSTALL(field, v) (free((void *)lw->field), lw->field = (v))
    INSTALL(particles, parts);
    INSTALL(Q, Q);
    INSTALL(C, C);
    INSTALL(Cv, Cv);
    INSTALL(cspan, cspan);
    if (nk) {
        INSTALL(psi, psi);
        INSTALL(psi_span, psi_span);
    }
#undef INSTALL
    lw->Tp = Tp;

    if (r > r0) {
        /* The multipliers of the new constraints: the last variables, as
         * declare_variables() numbers them. */
        lw->lam = xrealloc(lw->lam, (r + 1) * sizeof *lw->lam);
        lw->cname = xrealloc(lw->cname, (r + 1) * sizeof *lw->cname);
        uint32_t nv0 = expr_graph_nvars(g);
        for (size_t a = r0; a < r; a++) {
            const char *nm = m->constraints.v[a].name;
            lw->cname[a] = nm;
            lw->lam[a] = declare_multiplier(g, nm);
        }
        uint32_t nv = expr_graph_nvars(g);
        lw->dvar = xrealloc(lw->dvar, nv * sizeof *lw->dvar);
        lw->second = xrealloc(lw->second, nv * sizeof *lw->second);
        lw->velocity = xrealloc(lw->velocity, nv * sizeof *lw->velocity);
        for (uint32_t v = nv0; v < nv; v++) {
            lw->dvar[v] = NULL;
            lw->second[v] = true;
            lw->velocity[v] = false;
        }
        /* reaction() sums over the constraints: lets lowered as queries
         * are lowered again when used. */
        for (size_t i = 0; i < nl; i++)
            lw->let_memo[LOWER_QUERY][i].state = 0;
        forget_calls(lw, nl, LOWER_QUERY);
    }

    publish_rows(lw, r, np);
    set_energies(lw);
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
    free(lw->cname);
    free(lw->dvar);
    free(lw->second);
    free(lw->velocity);
    free(lw->Q);
    free(lw->C);
    free(lw->Cv);
    free(lw->cspan);
    free(lw->psi);
    free(lw->psi_span);
    free(lw->particles);
    free(lw->particle_pos);
    free(lw->particle_mass);
    free(lw->known);
    for (int k = 0; k < 3; k++)
        free(lw->let_memo[k]);
    for (size_t i = 0; i < lw->ncalls; i++)
        free(lw->calls[i].args);
    free(lw->calls);
    free(lw->call_table);
    free(lw);
}

const nh_system_t *lower_system(const lower_t *lw) { return &lw->sys; }
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
