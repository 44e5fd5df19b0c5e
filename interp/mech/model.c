/*
 * model.c — see model.h.  Must not: lower expressions or print.
 *
 * Sharing (model.h): a declaration array's buffer carries a model_share_t
 * with the number of holders and `used`, how many entries some holder has
 * written.  A holder may append in place when its n equals `used` (no one
 * has appended past it) and there is room; a sole holder may also grow or
 * overwrite the buffer.  Otherwise it copies the buffer first, so an entry
 * a holder sees is never written while another holder sees it too.  A
 * failed statement's clone leaves `used` past the session model's n, and
 * the session's next append copies: O(model) per failed statement, O(1)
 * amortised per successful one.
 *
 * The index: open addressing over (hash of the name, kind, index), shared
 * by clones like the arrays and never trusted alone: a hit counts only
 * when the looking model's own array of that kind has the name at that
 * index.  So an entry a failed clone added, or one another holder added
 * past this model's n, is invisible; such stale entries are dropped when
 * the table is rebuilt (as it grows) from the arrays of the model that
 * grows it.  Names are never removed from the arrays (a redeclaration
 * keeps its place), so every name of a model has a valid entry in its
 * index: clones start from their source's index and every append enters
 * its name.
 */
#include "interp/mech/model.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"

struct model_share {
    size_t refs; /* models holding the buffer */
    size_t used; /* entries written by some holder */
};

typedef struct model_slot {
    uint64_t hash;
    uint32_t kind; /* MODEL_NONE: empty */
    size_t idx;
} model_slot_t;

struct model_index {
    size_t refs;
    size_t cap;  /* power of two */
    size_t used; /* occupied slots, stale ones included */
    model_slot_t *slot;
};

/* ---- shared arrays ------------------------------------------------------ */

#define ARR(a) (void **)&(a).v, &(a).n, &(a).cap, &(a).share, sizeof *(a).v

static void arr_release(void **v, size_t *n, size_t *cap, model_share_t **sh,
                        size_t elt)
{
    (void)elt;
    if (!*sh || --(*sh)->refs == 0) {
        free(*v);
        free(*sh);
    }
    *v = NULL;
    *n = *cap = 0;
    *sh = NULL;
}

/* A private buffer of room CAP holding the N entries at *V, replacing the
 * holder's reference to its old buffer. */
static void arr_unshare(void **v, size_t *n, size_t *cap, model_share_t **sh,
                        size_t elt, size_t room)
{
    void *d = xmalloc((room ? room : 1) * elt);
    if (*n)
        memcpy(d, *v, *n * elt);
    if (*sh && --(*sh)->refs == 0) {
        free(*v);
        free(*sh);
    }
    *sh = xmalloc(sizeof **sh);
    (*sh)->refs = 1;
    (*sh)->used = *n;
    *v = d;
    *cap = room;
}

/* Room for one more entry; returns where it goes, n counts it. */
static void *arr_append(void **v, size_t *n, size_t *cap, model_share_t **sh,
                        size_t elt)
{
    model_share_t *s = *sh;
    if (s && s->refs == 1)
        s->used = *n; /* entries past n belonged to released holders */
    if (!s || s->used != *n) {
        arr_unshare(v, n, cap, sh, elt, 2 * *n + 4);
    } else if (*n == *cap) {
        if (s->refs == 1) {
            size_t room = 2 * *cap + 4;
            *v = xrealloc(*v, room * elt);
            *cap = room;
        } else {
            arr_unshare(v, n, cap, sh, elt, 2 * *n + 4);
        }
    }
    void *slot = (char *)*v + *n * elt;
    (*n)++;
    (*sh)->used = *n;
    return slot;
}

/* Entry I, writable: the buffer copied first when it is shared. */
static void *arr_mut(void **v, size_t *n, size_t *cap, model_share_t **sh,
                     size_t elt, size_t i)
{
    if (*sh && (*sh)->refs > 1)
        arr_unshare(v, n, cap, sh, elt, *n);
    return (char *)*v + i * elt;
}

/* DST shares SRC's buffer. */
#define SHARE_ARRAY(d, s)                                               \
    do {                                                                \
        (d) = (s);                                                      \
        if ((s).share)                                                  \
            (s).share->refs++;                                          \
    } while (0)

/* DST gets a private copy of SRC's entries. */
#define COPY_ARRAY(d, s)                                                \
    do {                                                                \
        (d) = (s);                                                      \
        (d).share = NULL;                                               \
        (d).v = NULL;                                                   \
        (d).cap = 0;                                                    \
        if ((s).n) {                                                    \
            (d).share = (s).share;                                      \
            (d).v = (s).v;                                              \
            (d).share->refs++;                                          \
            arr_unshare(ARR(d), (d).n);                                 \
        }                                                               \
    } while (0)

#define PUSH(a, x) (*(__typeof__((a).v))arr_append(ARR(a)) = (x))
#define SET(a, i, x) (*(__typeof__((a).v))arr_mut(ARR(a), (i)) = (x))

/* ---- the index ---------------------------------------------------------- */

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h ^ (h >> 32);
}

/* The name of entry I of KIND's array in M, or NULL past its end. */
static const char *name_at(const model_t *m, model_kind_t kind, size_t i)
{
    switch (kind) {
    case MODEL_PARAM: return i < m->params.n ? m->params.v[i].name : NULL;
    case MODEL_COORD: return i < m->coords.n ? m->coords.v[i].name : NULL;
    case MODEL_SPEED: return i < m->speeds.n ? m->speeds.v[i].name : NULL;
    case MODEL_LET: return i < m->lets.n ? m->lets.v[i].name : NULL;
    case MODEL_PARTICLE:
        return i < m->particles.n ? m->particles.v[i].name : NULL;
    case MODEL_CONSTRAINT:
        return i < m->constraints.n ? m->constraints.v[i].name : NULL;
    case MODEL_FRAME: return i < m->frames.n ? m->frames.v[i].name : NULL;
    case MODEL_BODY: return i < m->bodies.n ? m->bodies.v[i].name : NULL;
    default: return NULL;
    }
}

static void index_put(struct model_index *ix, uint64_t h, model_kind_t kind,
                      size_t idx)
{
    size_t mask = ix->cap - 1, i = h & mask;
    while (ix->slot[i].kind != MODEL_NONE)
        i = (i + 1) & mask;
    ix->slot[i] = (model_slot_t){h, (uint32_t)kind, idx};
    ix->used++;
}

static void index_release(struct model_index **ix)
{
    if (*ix && --(*ix)->refs == 0) {
        free((*ix)->slot);
        free(*ix);
    }
    *ix = NULL;
}

/* M's own index, built afresh from its arrays (stale entries dropped). */
static void index_rebuild(model_t *m)
{
    static const model_kind_t kinds[] = {MODEL_PARAM, MODEL_COORD,
                                         MODEL_SPEED, MODEL_LET,
                                         MODEL_PARTICLE, MODEL_CONSTRAINT,
                                         MODEL_FRAME, MODEL_BODY};
    size_t count = m->params.n + m->coords.n + m->speeds.n + m->lets.n +
                   m->particles.n + m->constraints.n + m->frames.n +
                   m->bodies.n;
    size_t cap = 16;
    while (cap < 4 * count)
        cap *= 2;
    struct model_index *ix = xmalloc(sizeof *ix);
    ix->refs = 1;
    ix->cap = cap;
    ix->used = 0;
    ix->slot = xcalloc(cap, sizeof *ix->slot);
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        const char *nm;
        for (size_t i = 0; (nm = name_at(m, kinds[k], i)) != NULL; i++)
            index_put(ix, name_hash(nm), kinds[k], i);
    }
    index_release(&m->index);
    m->index = ix;
}

/* Enters entry IDX of KIND, just appended to M's array. */
static void index_add(model_t *m, model_kind_t kind, size_t idx)
{
    struct model_index *ix = m->index;
    if (!ix || 2 * (ix->used + 1) > ix->cap) {
        index_rebuild(m); /* includes the new entry */
        return;
    }
    index_put(ix, name_hash(name_at(m, kind, idx)), kind, idx);
}

static bool index_find(const model_t *m, const char *name, model_kind_t want,
                       model_kind_t *kind, size_t *idx)
{
    const struct model_index *ix = m->index;
    if (!ix)
        return false;
    uint64_t h = name_hash(name);
    size_t mask = ix->cap - 1;
    for (size_t i = h & mask; ix->slot[i].kind != MODEL_NONE;
         i = (i + 1) & mask) {
        const model_slot_t *sl = &ix->slot[i];
        if (sl->hash != h || (want != MODEL_NONE && sl->kind != want))
            continue;
        const char *nm = name_at(m, (model_kind_t)sl->kind, sl->idx);
        if (nm && strcmp(nm, name) == 0) {
            *kind = (model_kind_t)sl->kind;
            *idx = sl->idx;
            return true;
        }
    }
    return false;
}

/* ---- life cycle ----------------------------------------------------------- */

void model_init(model_t *m)
{
    memset(m, 0, sizeof *m);
    m->method = -1;
    m->method_span = SRC_SPAN_NONE;
}

#define FREE_ARRAY(a) arr_release(ARR(a))

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
    FREE_ARRAY(m->draws);
    FREE_ARRAY(m->q);
    FREE_ARRAY(m->qd);
    FREE_ARRAY(m->z);
    FREE_ARRAY(m->q0);
    FREE_ARRAY(m->qd0);
    FREE_ARRAY(m->z0);
    FREE_ARRAY(m->q0_how);
    FREE_ARRAY(m->qd0_how);
    FREE_ARRAY(m->z0_how);
    index_release(&m->index);
    model_init(m);
}

/* The declarations of SRC shared; the state arrays as STATE says:
 * 0 empty, 1 copied, 2 shared. */
static void clone(model_t *dst, const model_t *src, int state)
{
    *dst = *src;
    SHARE_ARRAY(dst->params, src->params);
    SHARE_ARRAY(dst->coords, src->coords);
    SHARE_ARRAY(dst->speeds, src->speeds);
    SHARE_ARRAY(dst->lets, src->lets);
    SHARE_ARRAY(dst->particles, src->particles);
    SHARE_ARRAY(dst->forces, src->forces);
    SHARE_ARRAY(dst->constraints, src->constraints);
    SHARE_ARRAY(dst->kinematics, src->kinematics);
    SHARE_ARRAY(dst->frames, src->frames);
    SHARE_ARRAY(dst->bodies, src->bodies);
    SHARE_ARRAY(dst->draws, src->draws);
#define STATE_ARRAY(a)                                                  \
    do {                                                                \
        if (state == 2)                                                 \
            SHARE_ARRAY(dst->a, src->a);                                \
        else if (state == 1)                                            \
            COPY_ARRAY(dst->a, src->a);                                 \
        else                                                            \
            memset(&dst->a, 0, sizeof dst->a);                          \
    } while (0)
    STATE_ARRAY(q);
    STATE_ARRAY(qd);
    STATE_ARRAY(z);
    STATE_ARRAY(q0);
    STATE_ARRAY(qd0);
    STATE_ARRAY(z0);
    STATE_ARRAY(q0_how);
    STATE_ARRAY(qd0_how);
    STATE_ARRAY(z0_how);
#undef STATE_ARRAY
    if (src->index)
        src->index->refs++;
}

void model_clone(model_t *dst, const model_t *src) { clone(dst, src, 1); }

void model_clone_declarations(model_t *dst, const model_t *src)
{
    clone(dst, src, 0);
}

void model_clone_sharing_state(model_t *dst, const model_t *src)
{
    clone(dst, src, 2);
}

/* ---- changes -------------------------------------------------------------- */

void model_push_param(model_t *m, model_param_t p)
{
    PUSH(m->params, p);
    index_add(m, MODEL_PARAM, m->params.n - 1);
}

void model_push_let(model_t *m, model_let_t l)
{
    PUSH(m->lets, l);
    index_add(m, MODEL_LET, m->lets.n - 1);
}

void model_push_particle(model_t *m, model_particle_t p)
{
    PUSH(m->particles, p);
    index_add(m, MODEL_PARTICLE, m->particles.n - 1);
}

void model_push_force(model_t *m, model_force_t f) { PUSH(m->forces, f); }

void model_push_constraint(model_t *m, model_constraint_t c)
{
    PUSH(m->constraints, c);
    index_add(m, MODEL_CONSTRAINT, m->constraints.n - 1);
}

void model_push_kinematic(model_t *m, model_kinematic_t k)
{
    PUSH(m->kinematics, k);
}

void model_push_frame(model_t *m, model_frame_t f)
{
    PUSH(m->frames, f);
    index_add(m, MODEL_FRAME, m->frames.n - 1);
}

void model_push_body(model_t *m, model_body_t b)
{
    PUSH(m->bodies, b);
    index_add(m, MODEL_BODY, m->bodies.n - 1);
}

void model_push_draw(model_t *m, model_draw_t d) { PUSH(m->draws, d); }

/* A new coordinate or speed starts at rest at 0, in the state and in the
 * remembered initial state alike. */
void model_push_coord(model_t *m, model_name_t c)
{
    PUSH(m->coords, c);
    index_add(m, MODEL_COORD, m->coords.n - 1);
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
    index_add(m, MODEL_SPEED, m->speeds.n - 1);
    PUSH(m->z, 0.0);
    PUSH(m->z0, 0.0);
    PUSH(m->z0_how, MODEL_INIT_FREE);
}

/* A replacement keeps the name, so the index stays as it is. */
void model_set_param(model_t *m, size_t i, model_param_t p)
{
    SET(m->params, i, p);
}

void model_set_param_value(model_t *m, size_t i, double value)
{
    model_param_t p = m->params.v[i];
    p.value = value;
    SET(m->params, i, p);
}

void model_set_let(model_t *m, size_t i, model_let_t l) { SET(m->lets, i, l); }

void model_set_particle(model_t *m, size_t i, model_particle_t p)
{
    SET(m->particles, i, p);
}

void model_set_constraint(model_t *m, size_t i, model_constraint_t c)
{
    SET(m->constraints, i, c);
}

void model_set_kinematic(model_t *m, size_t i, model_kinematic_t k)
{
    SET(m->kinematics, i, k);
}

void model_set_frame(model_t *m, size_t i, model_frame_t f)
{
    SET(m->frames, i, f);
}

void model_set_body(model_t *m, size_t i, model_body_t b)
{
    SET(m->bodies, i, b);
}

void model_set_draw(model_t *m, size_t i, model_draw_t d)
{
    SET(m->draws, i, d);
}

/* ---- look-up -------------------------------------------------------------- */

long model_find(const model_t *m, model_kind_t kind, const char *name)
{
    model_kind_t k;
    size_t i;
    return index_find(m, name, kind, &k, &i) ? (long)i : -1;
}

long model_coord_index(const model_t *m, const char *name)
{
    return model_find(m, MODEL_COORD, name);
}

long model_speed_index(const model_t *m, const char *name)
{
    return model_find(m, MODEL_SPEED, name);
}

long model_constraint_index(const model_t *m, const char *name)
{
    return model_find(m, MODEL_CONSTRAINT, name);
}

long model_frame_index(const model_t *m, const char *name)
{
    return model_find(m, MODEL_FRAME, name);
}

long model_body_index(const model_t *m, const char *name)
{
    return model_find(m, MODEL_BODY, name);
}

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
    MARK_ARRAY(m->draws, span);
    mark(used, n, m->gravity_span);
    mark(used, n, m->method_span);
}

model_kind_t model_lookup(const model_t *m, const char *name, size_t *index,
                          src_span_t *where)
{
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
    model_kind_t k;
    size_t i;
    if (index_find(m, name, MODEL_NONE, &k, &i)) {
        *index = i;
        switch (k) {
        case MODEL_PARAM: *where = m->params.v[i].span; break;
        case MODEL_COORD: *where = m->coords.v[i].span; break;
        case MODEL_SPEED: *where = m->speeds.v[i].span; break;
        case MODEL_LET: *where = m->lets.v[i].span; break;
        case MODEL_PARTICLE: *where = m->particles.v[i].span; break;
        case MODEL_CONSTRAINT: *where = m->constraints.v[i].span; break;
        case MODEL_FRAME: *where = m->frames.v[i].span; break;
        case MODEL_BODY: *where = m->bodies.v[i].span; break;
        default: break;
        }
        return k;
    }
    const model_energy_t *e[3] = {&m->kinetic, &m->potential, &m->lagrangian};
    const model_kind_t ek[3] = {MODEL_KINETIC, MODEL_POTENTIAL,
                                MODEL_LAGRANGIAN};
    for (int j = 0; j < 3; j++)
        if (e[j]->name && strcmp(e[j]->name, name) == 0) {
            *where = e[j]->span;
            return ek[j];
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
    case MODEL_NONE: return "not declared"; /* "'z' is not declared" */
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
