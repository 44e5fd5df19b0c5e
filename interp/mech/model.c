/*
 * model.c — see model.h.  Must not: lower expressions or print.
 */
#include "interp/mech/model.h"

#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"

void model_init(model_t *m)
{
    memset(m, 0, sizeof *m);
    m->method = -1;
    m->method_span = SRC_SPAN_NONE;
}

#define FREE_ARRAY(a) free((a).v)

void model_free(model_t *m)
{
    FREE_ARRAY(m->params);
    FREE_ARRAY(m->coords);
    FREE_ARRAY(m->speeds);
    FREE_ARRAY(m->lets);
    FREE_ARRAY(m->particles);
    FREE_ARRAY(m->forces);
    FREE_ARRAY(m->constraints);
    FREE_ARRAY(m->kinematics);
    FREE_ARRAY(m->frames);
    FREE_ARRAY(m->bodies);
    FREE_ARRAY(m->q);
    FREE_ARRAY(m->qd);
    FREE_ARRAY(m->z);
    FREE_ARRAY(m->q0);
    FREE_ARRAY(m->qd0);
    FREE_ARRAY(m->z0);
    FREE_ARRAY(m->q0_how);
    FREE_ARRAY(m->qd0_how);
    FREE_ARRAY(m->z0_how);
    model_init(m);
}

#define CLONE_ARRAY(d, s)                                               \
    do {                                                                \
        (d).n = (d).cap = (s).n;                                        \
        (d).v = (s).n ? xmalloc((s).n * sizeof *(s).v) : NULL;          \
        if ((s).n)                                                      \
            memcpy((d).v, (s).v, (s).n * sizeof *(s).v);                \
    } while (0)

void model_clone(model_t *dst, const model_t *src)
{
    *dst = *src;
    CLONE_ARRAY(dst->params, src->params);
    CLONE_ARRAY(dst->coords, src->coords);
    CLONE_ARRAY(dst->speeds, src->speeds);
    CLONE_ARRAY(dst->lets, src->lets);
    CLONE_ARRAY(dst->particles, src->particles);
    CLONE_ARRAY(dst->forces, src->forces);
    CLONE_ARRAY(dst->constraints, src->constraints);
    CLONE_ARRAY(dst->kinematics, src->kinematics);
    CLONE_ARRAY(dst->frames, src->frames);
    CLONE_ARRAY(dst->bodies, src->bodies);
    CLONE_ARRAY(dst->q, src->q);
    CLONE_ARRAY(dst->qd, src->qd);
    CLONE_ARRAY(dst->z, src->z);
    CLONE_ARRAY(dst->q0, src->q0);
    CLONE_ARRAY(dst->qd0, src->qd0);
    CLONE_ARRAY(dst->z0, src->z0);
    CLONE_ARRAY(dst->q0_how, src->q0_how);
    CLONE_ARRAY(dst->qd0_how, src->qd0_how);
    CLONE_ARRAY(dst->z0_how, src->z0_how);
}

#define PUSH(a, x)                                                      \
    do {                                                                \
        xgrow(&(a).v, &(a).cap, (a).n + 1, sizeof *(a).v);              \
        (a).v[(a).n++] = (x);                                           \
    } while (0)

void model_push_param(model_t *m, model_param_t p) { PUSH(m->params, p); }
void model_push_let(model_t *m, model_let_t l) { PUSH(m->lets, l); }
void model_push_particle(model_t *m, model_particle_t p) { PUSH(m->particles, p); }
void model_push_force(model_t *m, model_force_t f) { PUSH(m->forces, f); }
void model_push_constraint(model_t *m, model_constraint_t c) { PUSH(m->constraints, c); }
void model_push_kinematic(model_t *m, model_kinematic_t k) { PUSH(m->kinematics, k); }
void model_push_frame(model_t *m, model_frame_t f) { PUSH(m->frames, f); }
void model_push_body(model_t *m, model_body_t b) { PUSH(m->bodies, b); }

/* A new coordinate or speed starts at rest at 0, in the state and in the
 * remembered initial state alike. */
void model_push_coord(model_t *m, model_name_t c)
{
    PUSH(m->coords, c);
    PUSH(m->q, 0.0);
    PUSH(m->qd, 0.0);
    PUSH(m->q0, 0.0);
    PUSH(m->qd0, 0.0);
    PUSH(m->q0_how, MODEL_INIT_FREE);
    PUSH(m->qd0_how, MODEL_INIT_FREE);
}

void model_push_speed(model_t *m, model_name_t s)
{
    PUSH(m->speeds, s);
    PUSH(m->z, 0.0);
    PUSH(m->z0, 0.0);
    PUSH(m->z0_how, MODEL_INIT_FREE);
}

#define FIND(arr, field)                                                \
    for (size_t i = 0; i < (arr).n; i++)                                \
        if (strcmp((arr).v[i].field, name) == 0)                        \
            return (long)i;                                             \
    return -1

long model_coord_index(const model_t *m, const char *name) { FIND(m->coords, name); }
long model_speed_index(const model_t *m, const char *name) { FIND(m->speeds, name); }
long model_constraint_index(const model_t *m, const char *name) { FIND(m->constraints, name); }
long model_frame_index(const model_t *m, const char *name) { FIND(m->frames, name); }
long model_body_index(const model_t *m, const char *name) { FIND(m->bodies, name); }
static long param_index(const model_t *m, const char *name) { FIND(m->params, name); }
static long let_index(const model_t *m, const char *name) { FIND(m->lets, name); }
static long particle_index(const model_t *m, const char *name) { FIND(m->particles, name); }

static void mark(bool *used, size_t n, src_span_t sp)
{
    if (sp.file != SRC_NO_FILE && sp.file < n)
        used[sp.file] = true;
}

/* A span of each entry lies in the statement that made it, in the same
 * text as its name and its AST nodes. */
#define MARK_ARRAY(a, field)                                            \
    do {                                                                \
        for (size_t i_ = 0; i_ < (a).n; i_++)                           \
            mark(used, n, (a).v[i_].field);                             \
    } while (0)

void model_mark_files(const model_t *m, bool *used, size_t n)
{
    MARK_ARRAY(m->params, span);
    MARK_ARRAY(m->coords, span);
    MARK_ARRAY(m->speeds, span);
    MARK_ARRAY(m->lets, span);
    mark(used, n, m->kinetic.span);
    mark(used, n, m->potential.span);
    mark(used, n, m->lagrangian.span);
    MARK_ARRAY(m->particles, span);
    MARK_ARRAY(m->forces, span);
    MARK_ARRAY(m->constraints, span);
    MARK_ARRAY(m->kinematics, span);
    MARK_ARRAY(m->frames, decl);
    MARK_ARRAY(m->bodies, decl);
    mark(used, n, m->gravity_span);
    mark(used, n, m->method_span);
}

model_kind_t model_lookup(const model_t *m, const char *name, size_t *index,
                          src_span_t *where)
{
    long i;
    size_t dummy_index;
    src_span_t dummy_where;
    if (!index)
        index = &dummy_index;
    if (!where)
        where = &dummy_where;
    *index = 0;
    *where = SRC_SPAN_NONE;
    if (strcmp(name, "t") == 0 || strcmp(name, "pi") == 0)
        return MODEL_BUILTIN;
#define TRY(fn, arr, kind)                                              \
    if ((i = fn(m, name)) >= 0) {                                       \
        *index = (size_t)i;                                             \
        *where = m->arr.v[i].span;                                      \
        return kind;                                                    \
    }
    TRY(param_index, params, MODEL_PARAM)
    TRY(model_coord_index, coords, MODEL_COORD)
    TRY(model_speed_index, speeds, MODEL_SPEED)
    TRY(let_index, lets, MODEL_LET)
    TRY(particle_index, particles, MODEL_PARTICLE)
    TRY(model_constraint_index, constraints, MODEL_CONSTRAINT)
    TRY(model_frame_index, frames, MODEL_FRAME)
    TRY(model_body_index, bodies, MODEL_BODY)
#undef TRY
    const model_energy_t *e[3] = {&m->kinetic, &m->potential, &m->lagrangian};
    const model_kind_t k[3] = {MODEL_KINETIC, MODEL_POTENTIAL, MODEL_LAGRANGIAN};
    for (int j = 0; j < 3; j++)
        if (e[j]->name && strcmp(e[j]->name, name) == 0) {
            *where = e[j]->span;
            return k[j];
        }
    return MODEL_NONE;
}

const char *model_closest(const model_t *m, model_kind_t kind,
                          const char *name)
{
    size_t n = kind == MODEL_CONSTRAINT ? m->constraints.n
               : kind == MODEL_FRAME    ? m->frames.n
               : kind == MODEL_BODY     ? m->bodies.n
                                        : 0;
    const char **names = xcalloc(n + 1, sizeof *names);
    for (size_t i = 0; i < n; i++)
        names[i] = kind == MODEL_CONSTRAINT ? m->constraints.v[i].name
                   : kind == MODEL_FRAME    ? m->frames.v[i].name
                                            : m->bodies.v[i].name;
    const char *best = source_closest(name, names);
    free(names);
    return best;
}

long model_inertial_frame(const model_t *m)
{
    for (size_t i = 0; i < m->frames.n; i++)
        if (!m->frames.v[i].parent)
            return (long)i;
    return -1;
}

const char *model_kind_name(model_kind_t k)
{
    switch (k) {
    case MODEL_NONE: return "nothing";
    case MODEL_PARAM: return "a parameter";
    case MODEL_COORD: return "a coordinate";
    case MODEL_SPEED: return "a speed";
    case MODEL_LET: return "a let";
    case MODEL_KINETIC: return "the kinetic energy";
    case MODEL_POTENTIAL: return "the potential energy";
    case MODEL_LAGRANGIAN: return "the Lagrangian";
    case MODEL_PARTICLE: return "a particle";
    case MODEL_CONSTRAINT: return "a constraint";
    case MODEL_BUILTIN: return "a built-in name";
    case MODEL_FRAME: return "a frame";
    case MODEL_BODY: return "a body";
    }
    return "?";
}
