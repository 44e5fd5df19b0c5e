/*
 * common.c — what every method of the equations of motion shares
 * (common.h): the objects they derive from (LANGUAGE.md §5), the eom_t
 * life cycle, the hot path, the fast path of small systems and the text
 * of the describers.  The methods (mult.c, voronec.c, maggi.c) build on
 * it; it knows none of them (methods.c holds their table).
 *
 * Shared objects, for a Lagrangian L(q, q', t), forces Q and constraints
 * C^a(q, q', t) = 0:
 *   M_ij = ∂²L/∂q_i'∂q_j'
 *   h_i  = Σ_j ∂²L/∂q_i'∂q_j q_j' + ∂²L/∂q_i'∂t − ∂L/∂q_i − Q_i
 *   B_ai = ∂C^a/∂q_i',   c_a = Σ_i ∂C^a/∂q_i q_i' + ∂C^a/∂t,
 * so that the Euler–Lagrange residual is Σ_j M_ij q_j'' + h_i and the
 * time derivative of a constraint is Σ_i B_ai q_i'' + c_a.  A holonomic
 * constraint f(q, t) = 0 enters through f' = 0 (LANGUAGE.md §4).
 *
 * The fast path of small systems (doc/performance.md): a method's linear
 * system — M̄, G, M and B M⁻¹ Bᵀ, all definite in the usual case — is
 * factored by LDLᵀ built from nodes (eom_ldlt_nodes), after its entries
 * are multiplied out (eom_expand) so that what cancels does; the
 * solution and everything the compute step would write are compiled
 * into one more tape.  At run time its pivots are checked as linalg_lu
 * would check them; a matrix that is not definite, or a value that is
 * not finite, sends the call to the numeric path, which gives the
 * answer or the error.
 *
 * Must not: print; change the system (it adds nodes to the graph, which
 * is what deriving means, but declares no variable); call a method.
 */
#include "interp/eom/common.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"
#include "interp/eom/linalg.h"
#include "interp/expr/display.h"
#include "interp/expr/simplify.h"
#include "interp/mech/rigid.h"

/* ---- small helpers ---------------------------------------------------- */

void *eom_alloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        nh_out_of_memory();
    return p;
}

const expr_t **eom_dvar(const nh_system_t *sys, const expr_t *const *vel)
{
    expr_graph_t *g = sys->g;
    uint32_t nv = expr_graph_nvars(g);
    const expr_t **dv = eom_alloc(nv, sizeof *dv);
    for (size_t i = 0; i < sys->n; i++)
        dv[sys->q[i]] = vel && vel[i] ? vel[i] : expr_var(g, sys->qd[i]);
    dv[sys->t] = expr_num(g, 1.0);
    return dv;
}

const expr_t **eom_subst_velocities(const nh_system_t *sys,
                                    const expr_t *const *vel)
{
    uint32_t nv = expr_graph_nvars(sys->g);
    const expr_t **repl = eom_alloc(nv, sizeof *repl);
    for (size_t i = 0; i < sys->n; i++)
        repl[sys->qd[i]] = vel[i];
    return repl;
}

bool *eom_velocity_mask(const nh_system_t *sys)
{
    bool *mask = eom_alloc(expr_graph_nvars(sys->g), sizeof *mask);
    for (size_t i = 0; i < sys->n; i++)
        mask[sys->qd[i]] = true;
    return mask;
}

/* ---- the shared objects ------------------------------------------------ */

/* The total time derivative Σ_v ∂e/∂v · dv[v] (as expr_dt), by forward
 * propagation through sums and products: d(Σ t)/dt = Σ dt/dt and
 * d(Π f)/dt = Σ_k (Π_{l≠k} f_l) df_k/dt, memoised by node, with expr_dt
 * for the other nodes.  expr_dt differentiates E once per variable: for
 * the momenta of N particles in a chain (p_i a sum over the particles
 * behind i, each term reading O(N) angles) that is O(N) work per
 * variable and O(N³) in all, where this is O(N²) — the size of the
 * result.  The value is the same; the form keeps the products whole. */
typedef struct eom_dt_memo {
    const expr_t **node; /* by id */
    size_t count;
} eom_dt_memo_t;

static const expr_t *eom_dt_node(expr_graph_t *g, const expr_t *e,
                                 const expr_t *const *dv, eom_dt_memo_t *m);

/* E's derivative when it is known without a rule (a constant's, a
 * variable's, the memo's), else NULL. */
static const expr_t *eom_dt_known(expr_graph_t *g, const expr_t *e,
                                  const expr_t *const *dv,
                                  const eom_dt_memo_t *m)
{
    if (e->op == EXPR_CONST)
        return expr_num(g, 0.0);
    if (e->op == EXPR_VAR)
        return dv[e->var] ? dv[e->var] : expr_num(g, 0.0);
    if (e->id < m->count && m->node[e->id])
        return m->node[e->id];
    return NULL;
}

/* The K-th of the nodes eom_dt_rule differentiates E through (its
 * split's halves, or a sum's or a product's arguments), or NULL past the
 * last. */
static const expr_t *eom_dt_part(const expr_graph_t *g, const expr_t *e,
                                 uint32_t k)
{
    const expr_t *sa, *sb;
    if (expr_split(g, e, &sa, &sb))
        return k == 0 ? sa : k == 1 ? sb : NULL;
    if ((e->op == EXPR_ADD || e->op == EXPR_MUL) && k < e->nargs)
        return e->args[k];
    return NULL;
}

/* The derivative of E by the rules of the comment above, its parts'
 * through eom_dt_node. */
static const expr_t *eom_dt_rule(expr_graph_t *g, const expr_t *e,
                                 const expr_t *const *dv, eom_dt_memo_t *m)
{
    const expr_t *r, *sa, *sb;
    if (expr_split(g, e, &sa, &sb)) {
        /* d(AB)/dt = A'B + AB': O(1) new products per link of a chain */
        const expr_t *da = eom_dt_node(g, sa, dv, m);
        const expr_t *db = eom_dt_node(g, sb, dv, m);
        r = expr_add(g, expr_mul(g, da, sb), expr_mul(g, sa, db));
    } else if (e->op == EXPR_ADD || e->op == EXPR_MUL) {
        const expr_t **t = eom_alloc(e->nargs, sizeof *t);
        const expr_t **f = eom_alloc(e->nargs, sizeof *f);
        size_t k = 0;
        for (uint32_t i = 0; i < e->nargs; i++) {
            const expr_t *d = eom_dt_node(g, e->args[i], dv, m);
            if (expr_is_const(d, 0.0))
                continue;
            if (e->op == EXPR_ADD) {
                t[k++] = d;
            } else {
                memcpy(f, e->args, e->nargs * sizeof *f);
                f[i] = d;
                t[k++] = expr_product(g, f, e->nargs);
            }
        }
        r = expr_sum(g, t, k);
        free(t);
        free(f);
    } else {
        r = expr_dt(g, e, dv);
    }
    if (e->id < m->count)
        m->node[e->id] = r;
    return r;
}

/* eom_dt_rule without recursion by the depth of the graph (a chain of
 * frames makes expressions tens of thousands of nodes deep): the parts
 * first, in post order by an explicit stack, so that the rule finds
 * theirs in the memo.  The nodes made are those of the recursion. */
static const expr_t *eom_dt_node(expr_graph_t *g, const expr_t *e,
                                 const expr_t *const *dv, eom_dt_memo_t *m)
{
    const expr_t *r = eom_dt_known(g, e, dv, m);
    if (r || e->id >= m->count)
        return r ? r : eom_dt_rule(g, e, dv, m);
    size_t cap = 64, top = 0;
    struct dt_frame {
        const expr_t *e;
        uint32_t next;
    } *st = eom_alloc(cap, sizeof *st);
    st[top++] = (struct dt_frame){e, 0};
    while (top) {
        struct dt_frame *f = &st[top - 1];
        const expr_t *p = eom_dt_part(g, f->e, f->next);
        if (p) {
            f->next++;
            if (p->id >= m->count || eom_dt_known(g, p, dv, m))
                continue;
            if (top == cap) {
                cap *= 2;
                st = xrealloc(st, cap * sizeof *st);
            }
            st[top++] = (struct dt_frame){p, 0};
            continue;
        }
        const expr_t *x = f->e;
        top--;
        if (!eom_dt_known(g, x, dv, m))
            eom_dt_rule(g, x, dv, m);
    }
    free(st);
    return m->node[e->id];
}

void eom_dt_forward(expr_graph_t *g, const expr_t *const *e, size_t n,
                    const expr_t *const *dv, const expr_t **out)
{
    eom_dt_memo_t dtm = {eom_alloc(expr_graph_count(g), sizeof *dtm.node),
                         expr_graph_count(g)};
    for (size_t i = 0; i < n; i++)
        out[i] = eom_dt_node(g, e[i], dv, &dtm);
    free(dtm.node);
}

/* p, M, h0 and h of SYS from its Lagrangian (the file comment). */
static void eom_derive_lagrangian(const nh_system_t *sys, eom_derived_t *d,
                                  const expr_t *const *dv)
{
    expr_graph_t *g = sys->g;
    size_t n = sys->n;
    for (size_t i = 0; i < n; i++)
        d->p[i] = expr_diff(g, sys->L, sys->qd[i]);
    eom_dt_memo_t dtm = {eom_alloc(expr_graph_count(g), sizeof *dtm.node),
                         expr_graph_count(g)};
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i; j < n; j++) {
            d->M[i * n + j] = expr_diff(g, d->p[i], sys->qd[j]);
            d->M[j * n + i] = d->M[i * n + j];
        }
        /* expr_dt with dv[q'] = NULL: Σ_j ∂p_i/∂q_j q_j' + ∂p_i/∂t, the
         * part of d/dt ∂L/∂q_i' that does not hold q''. */
        d->h0[i] = expr_sub(g, eom_dt_node(g, d->p[i], dv, &dtm),
                            expr_diff(g, sys->L, sys->q[i]));
        d->h[i] = expr_sub(g, d->h0[i], sys->Q[i]);
    }
    free(dtm.node);
}

/* ---- M, p and h from the particles ------------------------------------- */

/* When T is exactly the particles' energy, T = ½ Σ_ν m_ν |P_ν'|², with
 * P_ν' = J_ν q' + ∂P_ν/∂t and J_ν = ∂P_ν/∂q (Benenti eq. 67's
 * kinematics), the shared objects are
 *   p_i  = Σ_ν m_ν J_νiᵀ P_ν'
 *   M_ij = Σ_ν m_ν J_νiᵀ J_νj
 *   h0_i = Σ_ν m_ν J_νiᵀ a_ν + ∂V/∂q_i,   a_ν = d/dt(P_ν') at q'' = 0
 * (d/dt ∂T/∂q_i' − ∂T/∂q_i = Σ m J_νiᵀ P_ν'', because ∂P_ν'/∂q_i is
 * d/dt J_νi).  J_ν is sparse (a particle reads few coordinates), and
 * particles often share a column: in a chain, ∂P_ν/∂q_i is the same node
 * for every ν behind link i.  So the columns are gathered once, and every
 * sum over particles is a sum over the groups of particles that share
 * their columns, each group's masses summed once (memoised by the set):
 * M_ij = Σ_(g,h) (Σ_{ν ∈ g∩h} m_ν) J_gᵀJ_h.  For the N-trailer that is
 * O(1) nodes per entry where the flat sums of ∂²L/∂q'∂q' were O(N), and
 * O(N²) work in all where they were O(N³). */

typedef struct eom_pcol {
    const expr_t *c[3]; /* a column ∂P/∂q_i of one or more particles */
    size_t dim;
} eom_pcol_t;

/* Sets of particles (or bodies), as sorted index lists, numbered in the
 * order they are first seen: what is summed over a set is built once. */
typedef struct eom_sets {
    size_t *items;           /* arena of the lists */
    size_t nitems, capitems;
    struct eom_set {
        size_t off, len;
        uint64_t h;
    } *set;
    size_t n, cap;
    int32_t *hash;           /* open addressing over set, -1 empty */
    size_t hcap;
} eom_sets_t;

typedef struct eom_pform {
    expr_graph_t *g;
    size_t n, np;
    const nh_particle_t *pt;
    int32_t *col;            /* col[ν*n + i]: column of ν for q_i, or -1 */
    eom_pcol_t *cols;
    size_t ncols, capcols;
    int32_t *chash;          /* open addressing over cols, -1 empty */
    size_t chcap;
    size_t **byq;            /* byq[i]: the particles that read q_i */
    size_t *nbyq;
    /* byq[i] grouped by column: q_i's groups are gfirst[i] .. gfirst[i+1];
     * group k has the column gcol[k] and the particles gmem[goff[k] ..
     * goff[k+1]) in increasing order, also as the bitset gbits + k*W */
    size_t W;
    size_t *gfirst, *goff, *gmem;
    int32_t *gcol;
    uint64_t *gbits;
    /* mass sums memoised by the particle set: msum[k] for set k */
    eom_sets_t sets;
    const expr_t **msum;
    size_t capmsum;
} eom_pform_t;

static uint64_t eom_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

static uint64_t eom_pcol_hash(const eom_pcol_t *c)
{
    uint64_t h = c->dim;
    for (size_t k = 0; k < c->dim; k++)
        h = eom_mix(h, (uint64_t)(uintptr_t)c->c[k]);
    return h;
}

static void eom_pform_rehash_cols(eom_pform_t *f)
{
    free(f->chash);
    f->chcap = f->chcap ? f->chcap * 2 : 64;
    f->chash = eom_alloc(f->chcap, sizeof *f->chash);
    for (size_t k = 0; k < f->chcap; k++)
        f->chash[k] = -1;
    for (size_t c = 0; c < f->ncols; c++) {
        size_t k = eom_pcol_hash(&f->cols[c]) & (f->chcap - 1);
        while (f->chash[k] >= 0)
            k = (k + 1) & (f->chcap - 1);
        f->chash[k] = (int32_t)c;
    }
}

/* The index of column C (added when new). */
static int32_t eom_pform_col(eom_pform_t *f, const eom_pcol_t *c)
{
    if (2 * (f->ncols + 1) > f->chcap)
        eom_pform_rehash_cols(f);
    size_t k = eom_pcol_hash(c) & (f->chcap - 1);
    for (; f->chash[k] >= 0; k = (k + 1) & (f->chcap - 1)) {
        const eom_pcol_t *o = &f->cols[f->chash[k]];
        if (o->dim == c->dim && memcmp(o->c, c->c, c->dim * sizeof *c->c) == 0)
            return f->chash[k];
    }
    if (f->ncols == f->capcols) {
        f->capcols = f->capcols ? 2 * f->capcols : 64;
        f->cols = realloc(f->cols, f->capcols * sizeof *f->cols);
        if (!f->cols)
            nh_out_of_memory();
    }
    f->cols[f->ncols] = *c;
    f->chash[k] = (int32_t)f->ncols;
    return (int32_t)f->ncols++;
}

static void eom_sets_rehash(eom_sets_t *m)
{
    free(m->hash);
    m->hcap = m->hcap ? m->hcap * 2 : 64;
    m->hash = eom_alloc(m->hcap, sizeof *m->hash);
    for (size_t k = 0; k < m->hcap; k++)
        m->hash[k] = -1;
    for (size_t s = 0; s < m->n; s++) {
        size_t k = m->set[s].h & (m->hcap - 1);
        while (m->hash[k] >= 0)
            k = (k + 1) & (m->hcap - 1);
        m->hash[k] = (int32_t)s;
    }
}

/* The number of the sorted list SET (LEN entries), added when new
 * (*FRESH tells). */
static size_t eom_sets_find(eom_sets_t *m, const size_t *set, size_t len,
                            bool *fresh)
{
    uint64_t h = len;
    for (size_t k = 0; k < len; k++)
        h = eom_mix(h, set[k]);
    if (2 * (m->n + 1) > m->hcap)
        eom_sets_rehash(m);
    size_t k = h & (m->hcap - 1);
    for (; m->hash[k] >= 0; k = (k + 1) & (m->hcap - 1)) {
        const struct eom_set *s = &m->set[m->hash[k]];
        if (s->h == h && s->len == len &&
            memcmp(m->items + s->off, set, len * sizeof *set) == 0) {
            *fresh = false;
            return (size_t)m->hash[k];
        }
    }
    if (m->nitems + len > m->capitems) {
        m->capitems = 2 * (m->nitems + len) + 64;
        m->items = realloc(m->items, m->capitems * sizeof *m->items);
        if (!m->items)
            nh_out_of_memory();
    }
    memcpy(m->items + m->nitems, set, len * sizeof *set);
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 64;
        m->set = realloc(m->set, m->cap * sizeof *m->set);
        if (!m->set)
            nh_out_of_memory();
    }
    m->set[m->n] = (struct eom_set){m->nitems, len, h};
    m->nitems += len;
    m->hash[k] = (int32_t)m->n;
    *fresh = true;
    return m->n++;
}

static void eom_sets_free(eom_sets_t *m)
{
    free(m->items);
    free(m->set);
    free(m->hash);
}

/* Σ_{ν ∈ SET} m_ν for the sorted particle list SET, once per set. */
static const expr_t *eom_pform_mass(eom_pform_t *f, const size_t *set,
                                    size_t len)
{
    bool fresh;
    size_t k = eom_sets_find(&f->sets, set, len, &fresh);
    if (!fresh)
        return f->msum[k];
    const expr_t **m = eom_alloc(len, sizeof *m);
    for (size_t j = 0; j < len; j++)
        m[j] = f->pt[set[j]].mass;
    if (k >= f->capmsum) {
        f->capmsum = 2 * k + 64;
        f->msum = realloc(f->msum, f->capmsum * sizeof *f->msum);
        if (!f->msum)
            nh_out_of_memory();
    }
    f->msum[k] = expr_sum(f->g, m, len);
    free(m);
    return f->msum[k];
}

/* Whether the particle form applies: T is the particles' energy, every
 * mass is constant along a motion, every position reads only q, t and
 * parameters, and V reads no velocity. */
bool eom_particle_form(const nh_system_t *sys)
{
    if (!sys->T || !(sys->T_only_particles || sys->T_only_bodies) ||
        sys->nparticles + sys->nbodies == 0)
        return false;
    expr_graph_t *g = sys->g;
    bool *motion = eom_alloc(expr_graph_nvars(g), sizeof *motion);
    bool *vel = eom_alloc(expr_graph_nvars(g), sizeof *vel);
    for (size_t i = 0; i < sys->n; i++) {
        motion[sys->q[i]] = true;
        motion[sys->qd[i]] = vel[sys->qd[i]] = true;
        motion[sys->qdd[i]] = vel[sys->qdd[i]] = true;
    }
    for (size_t a = 0; a < sys->m; a++) {
        motion[sys->z[a]] = vel[sys->z[a]] = true;
        motion[sys->zd[a]] = vel[sys->zd[a]] = true;
    }
    for (size_t a = 0; a < sys->r; a++)
        motion[sys->lam[a]] = vel[sys->lam[a]] = true;
    motion[sys->t] = true;
    bool ok = !sys->V || !expr_depends_any(g, sys->V, vel);
    for (size_t k = 0; k < sys->nparticles && ok; k++) {
        const nh_particle_t *P = &sys->particles[k];
        if (P->dim < 1 || P->dim > 3 ||
            expr_depends_any(g, P->mass, motion))
            ok = false;
        for (size_t c = 0; c < P->dim && ok; c++)
            if (expr_depends_any(g, P->pos[c], vel))
                ok = false;
    }
    /* A body: its centre of mass as a particle; its inertia constant
     * (its angular velocity is linear in q' by construction). */
    for (size_t k = 0; k < sys->nbodies && ok; k++) {
        const nh_body_t *b = &sys->bodies[k];
        if (expr_depends_any(g, b->mass, motion))
            ok = false;
        for (size_t c = 0; c < 6 && ok; c++)
            if (expr_depends_any(g, b->inertia[c], motion))
                ok = false;
        for (size_t c = 0; c < 3 && ok; c++)
            if (expr_depends_any(g, b->pos[c], vel))
                ok = false;
    }
    free(motion);
    free(vel);
    return ok;
}

/* qsort order of (column, particle) pairs, lexicographic. */
static int eom_cmp_pair(const void *a, const void *b)
{
    const size_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Groups byq[i] of every coordinate by column (the fields g* of F),
 * once: the mass entries then intersect groups as bitsets instead of
 * sorting the particles of every pair (i, j) — n² sorts of n particles. */
static void eom_pform_group(eom_pform_t *f)
{
    size_t n = f->n, total = 0;
    for (size_t i = 0; i < n; i++)
        total += f->nbyq[i];
    f->W = (f->np + 63) / 64;
    f->gfirst = eom_alloc(n + 1, sizeof *f->gfirst);
    f->goff = eom_alloc(total + 1, sizeof *f->goff);
    f->gmem = eom_alloc(total + 1, sizeof *f->gmem);
    f->gcol = eom_alloc(total + 1, sizeof *f->gcol);
    f->gbits = eom_alloc((total + 1) * f->W, sizeof *f->gbits);
    size_t *key = eom_alloc(2 * f->np + 2, sizeof *key);
    size_t ng = 0, nm = 0;
    for (size_t i = 0; i < n; i++) {
        size_t cnt = f->nbyq[i];
        for (size_t k = 0; k < cnt; k++) {
            size_t nu = f->byq[i][k];
            key[2 * k] = (size_t)f->col[nu * n + i];
            key[2 * k + 1] = nu;
        }
        qsort(key, cnt, 2 * sizeof *key, eom_cmp_pair);
        f->gfirst[i] = ng;
        for (size_t k = 0; k < cnt; k++) {
            if (k == 0 || key[2 * k] != key[2 * k - 2]) {
                f->gcol[ng] = (int32_t)key[2 * k];
                f->goff[ng++] = nm;
            }
            size_t nu = key[2 * k + 1];
            f->gmem[nm++] = nu;
            f->gbits[(ng - 1) * f->W + nu / 64] |= (uint64_t)1 << (nu % 64);
        }
    }
    f->gfirst[n] = ng;
    f->goff[ng] = nm;
    free(key);
}

/* Σ_{groups g of q_i's particles} J_gᵀ (Σ_{ν ∈ g} m_ν X_ν) for the
 * per-particle vectors X (X[ν*3 + c]). */
static const expr_t *eom_pform_dot_groups(eom_pform_t *f, size_t i,
                                          const expr_t *const *X)
{
    expr_graph_t *g = f->g;
    size_t cnt = f->nbyq[i];
    const expr_t **terms = eom_alloc(3 * cnt + 1, sizeof *terms);
    const expr_t **in = eom_alloc(cnt + 1, sizeof *in);
    size_t nt = 0;
    for (size_t k = f->gfirst[i]; k < f->gfirst[i + 1]; k++) {
        const eom_pcol_t *col = &f->cols[f->gcol[k]];
        for (size_t c = 0; c < col->dim; c++) {
            if (expr_is_const(col->c[c], 0.0))
                continue;
            size_t ni = 0;
            for (size_t l = f->goff[k]; l < f->goff[k + 1]; l++) {
                size_t nu = f->gmem[l];
                in[ni++] = expr_mul(g, f->pt[nu].mass, X[nu * 3 + c]);
            }
            terms[nt++] = expr_mul(g, col->c[c], expr_sum(g, in, ni));
        }
    }
    const expr_t *s = expr_sum(g, terms, nt);
    free(terms);
    free(in);
    return s;
}

/* M_ij (i <= j) = Σ_(g,h) (Σ_{ν ∈ g∩h} m_ν) J_gᵀ J_h over the groups g
 * of q_i and h of q_j; SET is scratch of np + 1, BITS of W words. */
static const expr_t *eom_pform_mass_entry(eom_pform_t *f, size_t i, size_t j,
                                          size_t *set, uint64_t *bits)
{
    expr_graph_t *g = f->g;
    size_t W = f->W, nt = 0;
    size_t ngi = f->gfirst[i + 1] - f->gfirst[i];
    size_t ngj = f->gfirst[j + 1] - f->gfirst[j];
    const expr_t **terms = eom_alloc(ngi * ngj + 1, sizeof *terms);
    const expr_t *prod[3];
    for (size_t ka = f->gfirst[i]; ka < f->gfirst[i + 1]; ka++)
        for (size_t kb = f->gfirst[j]; kb < f->gfirst[j + 1]; kb++) {
            size_t len = 0;
            for (size_t w = 0; w < W; w++) {
                bits[w] = f->gbits[ka * W + w] & f->gbits[kb * W + w];
                for (uint64_t b = bits[w]; b; b &= b - 1)
                    set[len++] = 64 * w + (size_t)__builtin_ctzll(b);
            }
            if (len == 0)
                continue;
            const eom_pcol_t *a = &f->cols[f->gcol[ka]];
            const eom_pcol_t *b = &f->cols[f->gcol[kb]];
            for (size_t c = 0; c < a->dim; c++)
                prod[c] = expr_mul(g, a->c[c], b->c[c]);
            terms[nt++] = expr_mul(g, eom_pform_mass(f, set, len),
                                   expr_sum(g, prod, a->dim));
        }
    const expr_t *s = expr_sum(g, terms, nt);
    free(terms);
    return s;
}

/* The bodies' rotations, added into p, M and h0 (i <= j for M).  With
 * ω_b the angular velocity of body b on the inertial axes (linear in q'),
 * Ω_bi = ∂ω_b/∂q_i' its partial angular velocities, L_b = I_b ω_b its
 * angular momentum about its centre of mass and K_b = dL_b/dt at q'' = 0,
 *   p_i  += Σ_b Ω_bi · L_b
 *   M_ij += Σ_b Ω_bi · I_b Ω_bj
 *   h0_i += Σ_b Ω_bi · K_b
 * (Kane and Levinson, Dynamics: Theory and Applications (1985), §§5.4,
 * 6.1: Kane's generalized inertia force of a rigid body, which with the
 * speeds q' is −(d/dt ∂T_rot/∂q_i' − ∂T_rot/∂q_i)).  K_b comes from
 * Euler's equations on axes where the inertia is constant (the body's
 * own, or for a wheel its frame before the spin: rigid_body_axes),
 * K_b = R (I α + W × I w) with w = Rᵀω_b, α = dw/dt, W the angular
 * velocity of those axes (w itself on the body's own) and R their unit
 * vectors as columns; I_b on the inertial axes is R I Rᵀ.
 * Bodies down a chain share their partial angular velocities (Ω_bi is
 * the axis of joint i for every body beyond it: the same node), so the
 * sums run over groups of bodies with the same column Ω, and each
 * group's L, K and I are summed once (memoised by the set of bodies):
 * O(N²) nodes for a chain of N bodies where body by body they were
 * O(N³).  The rotational energy's second derivatives would build the
 * same numbers through d/dt ∂T/∂q', whose products of the chain's sines
 * and cosines the tape cannot share. */
typedef struct eom_rot {
    const expr_t *L[3], *K[3], *I[6]; /* inertial axes; I as in rigid.h */
} eom_rot_t;

/* Three keys and a term, sorted by the keys in order: a body in a group
 * (its columns' numbers for q_i and q_j, then the body), or a term of an
 * entry (i, j, then the body). */
typedef struct eom_rkey {
    size_t k[3];
    const expr_t *t;
} eom_rkey_t;

static int eom_cmp_rkey(const void *a, const void *b)
{
    const eom_rkey_t *x = a, *y = b;
    for (int c = 0; c < 3; c++)
        if (x->k[c] != y->k[c])
            return x->k[c] < y->k[c] ? -1 : 1;
    return 0;
}

/* L, K and I summed over the bodies SET (LEN, sorted), once per set. */
static const eom_rot_t *eom_rot_sum(expr_graph_t *g, eom_sets_t *sets,
                                    eom_rot_t **sums, size_t *cap,
                                    const eom_rot_t *per, const size_t *set,
                                    size_t len)
{
    bool fresh;
    size_t k = eom_sets_find(sets, set, len, &fresh);
    if (k >= *cap) {
        *cap = 2 * k + 16;
        *sums = realloc(*sums, *cap * sizeof **sums);
        if (!*sums)
            nh_out_of_memory();
    }
    eom_rot_t *r = &(*sums)[k];
    if (!fresh)
        return r;
    const expr_t **t = eom_alloc(len, sizeof *t);
    for (int c = 0; c < 9 + 3; c++) {
        for (size_t j = 0; j < len; j++)
            t[j] = c < 3 ? per[set[j]].L[c] : c < 6 ? per[set[j]].K[c - 3]
                                                    : per[set[j]].I[c - 6];
        const expr_t *sum = expr_sum(g, t, len);
        if (c < 3)
            r->L[c] = sum;
        else if (c < 6)
            r->K[c - 3] = sum;
        else
            r->I[c - 6] = sum;
    }
    free(t);
    return r;
}

/* Groups the members M[0..cnt) (sorted) into runs of the same columns;
 * each run's bodies into SET (sorted, as the members are).  Returns the
 * run's length; *K moves past it. */
static size_t eom_rrun(const eom_rkey_t *m, size_t cnt, size_t *k,
                       size_t *set)
{
    size_t len = 0, a = *k;
    while (*k < cnt && m[*k].k[0] == m[a].k[0] && m[*k].k[1] == m[a].k[1])
        set[len++] = m[(*k)++].k[2];
    return len;
}

/* Adds the terms T (sorted by entry; j = SIZE_MAX for a vector) into the
 * entries: OUT[i] for vectors, OUT[i*n + j] and OUT[j*n + i] for M. */
static void eom_rterms_add(expr_graph_t *g, const eom_rkey_t *t, size_t nt,
                           size_t n, const expr_t **out, bool matrix)
{
    const expr_t **s = eom_alloc(nt + 1, sizeof *s);
    for (size_t k = 0; k < nt;) {
        size_t i = t[k].k[0], j = t[k].k[1], e = matrix ? i * n + j : i;
        size_t m = 0;
        s[m++] = out[e];
        for (; k < nt && t[k].k[0] == i && t[k].k[1] == j; k++)
            s[m++] = t[k].t;
        out[e] = expr_sum(g, s, m);
        if (matrix)
            out[j * n + i] = out[e];
    }
    free(s);
}

/* Body by body, on each body's axes (rigid_body_axes): with Ω_bi =
 * ∂w_b/∂q_i' (w_b on those axes), p_i += Ω_bi · I w, M_ij += Ω_bi · I Ω_bj,
 * h0_i += Ω_bi · KL (KL: K on those axes).  Fewer operations than the
 * groups when the bodies share few partial angular velocities (the
 * bicycle's four).  Only the coordinates a body turns with (COL >= 0)
 * are visited: the terms are gathered per entry, so the work is the
 * number of (body, i, j) that contribute, not bodies × n². */
static void eom_rotations_local(const nh_system_t *sys, eom_derived_t *d,
                                const int32_t *col,
                                const expr_t *const (*Iw)[3],
                                const expr_t *const (*KL)[3])
{
    expr_graph_t *g = sys->g;
    size_t n = sys->n, nb = sys->nbodies;
    const expr_t **Om = eom_alloc(3 * n, sizeof *Om);
    const expr_t **IOm = eom_alloc(3 * n, sizeof *IOm);
    size_t *on = eom_alloc(n, sizeof *on);
    size_t nv = 0, nm = 0, capm = 0;
    eom_rkey_t *tp = NULL, *th = NULL, *tm = NULL;
    for (size_t b = 0; b < nb; b++) {
        const nh_body_t *B = &sys->bodies[b];
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (col[b * n + i] >= 0)
                on[k++] = i;
        tp = realloc(tp, (nv + k + 1) * sizeof *tp);
        th = realloc(th, (nv + k + 1) * sizeof *th);
        if (nm + k * (k + 1) / 2 + 1 > capm) {
            capm = 2 * (nm + k * (k + 1) / 2) + 16;
            tm = realloc(tm, capm * sizeof *tm);
        }
        if (!tp || !th || !tm)
            nh_out_of_memory();
        for (size_t a = 0; a < k; a++) {
            size_t i = on[a];
            for (int c = 0; c < 3; c++)
                Om[3 * i + c] = expr_diff(g, B->wloc[c], sys->qd[i]);
            rigid_inertia_times(g, B->inertia, Om + 3 * i, IOm + 3 * i);
        }
        for (size_t a = 0; a < k; a++) {
            size_t i = on[a];
            tp[nv] = (eom_rkey_t){{i, SIZE_MAX, b},
                                  rigid_dot(g, Om + 3 * i, Iw[b], 3)};
            th[nv++] = (eom_rkey_t){{i, SIZE_MAX, b},
                                    rigid_dot(g, Om + 3 * i, KL[b], 3)};
            for (size_t c = a; c < k; c++)
                tm[nm++] = (eom_rkey_t){{i, on[c], b},
                                        rigid_dot(g, Om + 3 * i,
                                                  IOm + 3 * on[c], 3)};
        }
    }
    qsort(tp, nv, sizeof *tp, eom_cmp_rkey);
    qsort(th, nv, sizeof *th, eom_cmp_rkey);
    qsort(tm, nm, sizeof *tm, eom_cmp_rkey);
    eom_rterms_add(g, tp, nv, n, d->p, false);
    eom_rterms_add(g, th, nv, n, d->h0, false);
    eom_rterms_add(g, tm, nm, n, d->M, true);
    free(Om);
    free(IOm);
    free(on);
    free(tp);
    free(th);
    free(tm);
}

/* The members of q_i's groups (and q_j's, when J differs from I) into
 * MEM, sorted by their columns; returns how many. */
static size_t eom_rmembers(const int32_t *col, size_t n, size_t nb,
                           size_t i, size_t j, eom_rkey_t *mem)
{
    size_t nm = 0;
    for (size_t b = 0; b < nb; b++)
        if (col[b * n + i] >= 0 && col[b * n + j] >= 0)
            mem[nm++] = (eom_rkey_t){{(size_t)col[b * n + i],
                                      i == j ? 0 : (size_t)col[b * n + j], b},
                                     NULL};
    qsort(mem, nm, sizeof *mem, eom_cmp_rkey);
    return nm;
}

/* By groups, on the inertial axes (see eom_derive_rotations). */
static void eom_rotations_grouped(const nh_system_t *sys, eom_derived_t *d,
                                  const eom_pform_t *cf, const int32_t *col,
                                  const expr_t *const (*Iw)[3],
                                  const expr_t *const (*KL)[3])
{
    expr_graph_t *g = sys->g;
    size_t n = sys->n, nb = sys->nbodies;
    eom_rot_t *per = eom_alloc(nb, sizeof *per);
    for (size_t b = 0; b < nb; b++) {
        const nh_body_t *B = &sys->bodies[b];
        const expr_t *Y[3][3];
        for (int c = 0; c < 3; c++) {
            const expr_t *lt[3], *kt[3], *yc[3];
            const expr_t *row[3] = {B->axis[0][c], B->axis[1][c],
                                    B->axis[2][c]};
            for (int k = 0; k < 3; k++) {
                lt[k] = expr_mul(g, Iw[b][k], B->axis[k][c]);
                kt[k] = expr_mul(g, KL[b][k], B->axis[k][c]);
            }
            per[b].L[c] = expr_sum(g, lt, 3);
            per[b].K[c] = expr_sum(g, kt, 3);
            /* Y = I Rᵀ, column c: I times row c of R */
            rigid_inertia_times(g, B->inertia, row, yc);
            for (int k = 0; k < 3; k++)
                Y[k][c] = yc[k];
        }
        /* R I Rᵀ: the entries (a, a), then (a, a+1), as rigid.h orders */
        for (int e = 0; e < 6; e++) {
            int a = e % 3, c = e < 3 ? a : (a + 1) % 3;
            const expr_t *t[3];
            for (int k = 0; k < 3; k++)
                t[k] = expr_mul(g, B->axis[k][a], Y[k][c]);
            per[b].I[e] = expr_sum(g, t, 3);
        }
    }
    eom_sets_t sets = {0};
    eom_rot_t *sums = NULL;
    size_t capsums = 0;
    eom_rkey_t *mem = eom_alloc(nb, sizeof *mem);
    size_t *set = eom_alloc(nb, sizeof *set);
    const expr_t **tp = eom_alloc(nb + 1, sizeof *tp);
    const expr_t **th = eom_alloc(nb + 1, sizeof *th);
    for (size_t i = 0; i < n; i++) {
        size_t cnt = eom_rmembers(col, n, nb, i, i, mem), np = 0, nh = 0;
        tp[np++] = d->p[i];
        th[nh++] = d->h0[i];
        for (size_t k = 0; k < cnt;) {
            const expr_t *const *om = cf->cols[mem[k].k[0]].c;
            size_t len = eom_rrun(mem, cnt, &k, set);
            const eom_rot_t *r = eom_rot_sum(g, &sets, &sums, &capsums, per,
                                             set, len);
            tp[np++] = rigid_dot(g, om, r->L, 3);
            th[nh++] = rigid_dot(g, om, r->K, 3);
        }
        d->p[i] = expr_sum(g, tp, np);
        d->h0[i] = expr_sum(g, th, nh);
        for (size_t j = i; j < n; j++) {
            size_t nm = eom_rmembers(col, n, nb, i, j, mem), nt = 0;
            tp[nt++] = d->M[i * n + j];
            for (size_t k = 0; k < nm;) {
                const expr_t *const *oi = cf->cols[mem[k].k[0]].c;
                const expr_t *const *oj =
                    cf->cols[i == j ? mem[k].k[0] : mem[k].k[1]].c;
                size_t len = eom_rrun(mem, nm, &k, set);
                const eom_rot_t *r = eom_rot_sum(g, &sets, &sums, &capsums,
                                                 per, set, len);
                const expr_t *Io[3];
                rigid_inertia_times(g, r->I, oj, Io);
                tp[nt++] = rigid_dot(g, oi, Io, 3);
            }
            d->M[i * n + j] = d->M[j * n + i] = expr_sum(g, tp, nt);
        }
    }
    eom_sets_free(&sets);
    free(sums);
    free(mem);
    free(set);
    free(tp);
    free(th);
    free(per);
}

static void eom_derive_rotations(const nh_system_t *sys, eom_derived_t *d,
                                 const expr_t *const *dv, eom_dt_memo_t *dtm)
{
    expr_graph_t *g = sys->g;
    size_t n = sys->n, nb = sys->nbodies;
    /* I w and K on each body's axes */
    const expr_t *(*Iw)[3] = eom_alloc(nb, sizeof *Iw);
    const expr_t *(*KL)[3] = eom_alloc(nb, sizeof *KL);
    for (size_t b = 0; b < nb; b++) {
        const nh_body_t *B = &sys->bodies[b];
        const expr_t *al[3], *Ial[3], *gyro[3];
        rigid_inertia_times(g, B->inertia, B->wloc, Iw[b]);
        for (int k = 0; k < 3; k++)
            al[k] = eom_dt_node(g, B->wloc[k], dv, dtm);
        rigid_inertia_times(g, B->inertia, al, Ial);
        /* d/dt of I w on axes turning at waxes (Euler's equations when
         * they are the body's own) */
        rigid_cross(g, B->waxes, Iw[b], gyro);
        for (int k = 0; k < 3; k++)
            KL[b][k] = expr_add(g, Ial[k], gyro[k]);
    }
    /* the inertial columns Ω_bi, numbered (eom_pform_col) */
    eom_pform_t cf = {.g = g};
    int32_t *col = eom_alloc(nb * n, sizeof *col);
    for (size_t b = 0; b < nb; b++)
        for (size_t i = 0; i < n; i++) {
            eom_pcol_t c = {{NULL, NULL, NULL}, 3};
            bool any = false;
            for (int k = 0; k < 3; k++) {
                c.c[k] = expr_diff(g, sys->bodies[b].omega[k], sys->qd[i]);
                any |= !expr_is_const(c.c[k], 0.0);
            }
            col[b * n + i] = any ? eom_pform_col(&cf, &c) : -1;
        }
    /* The cost of each form, in dot products: body by body, one per body
     * and pair (i, j) the body turns with; by groups, one I Ω and one dot
     * per group of a pair, and an R I Rᵀ per body (about ten). */
    size_t pairs = 0, groups = 0;
    eom_rkey_t *mem = eom_alloc(nb, sizeof *mem);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i; j < n; j++) {
            size_t nm = eom_rmembers(col, n, nb, i, j, mem);
            pairs += nm;
            for (size_t k = 1; k <= nm; k++)
                groups += k == nm || mem[k].k[0] != mem[k - 1].k[0] ||
                          mem[k].k[1] != mem[k - 1].k[1];
        }
    free(mem);
    if (2 * groups + 10 * nb < pairs)
        eom_rotations_grouped(sys, d, &cf, col,
                              (const expr_t *const(*)[3])Iw,
                              (const expr_t *const(*)[3])KL);
    else
        eom_rotations_local(sys, d, col, (const expr_t *const(*)[3])Iw,
                            (const expr_t *const(*)[3])KL);
    free(col);
    free(cf.cols);
    free(cf.chash);
    free(Iw);
    free(KL);
}

/* p, M, h0 and h of SYS by the particles and bodies (see above). */
static void eom_derive_particles(const nh_system_t *sys, eom_derived_t *d,
                                 const expr_t *const *dv)
{
    expr_graph_t *g = sys->g;
    size_t n = sys->n, np = sys->nparticles + sys->nbodies;
    /* a body's centre of mass moves as a particle of its mass */
    nh_particle_t *centres = NULL;
    const nh_particle_t *pt = sys->particles;
    if (sys->nbodies) {
        centres = eom_alloc(np, sizeof *centres);
        if (sys->nparticles)
            memcpy(centres, sys->particles,
                   sys->nparticles * sizeof *centres);
        for (size_t b = 0; b < sys->nbodies; b++) {
            const nh_body_t *B = &sys->bodies[b];
            nh_particle_t *P = &centres[sys->nparticles + b];
            P->name = B->name;
            P->mass = B->mass;
            P->dim = 3;
            for (int k = 0; k < 3; k++)
                P->pos[k] = B->pos[k];
        }
        pt = centres;
    }
    eom_pform_t f = {.g = g, .n = n, .np = np, .pt = pt};
    f.col = eom_alloc(np * n, sizeof *f.col);
    f.byq = eom_alloc(n, sizeof *f.byq);
    f.nbyq = eom_alloc(n, sizeof *f.nbyq);
    for (size_t i = 0; i < n; i++)
        f.byq[i] = eom_alloc(np, sizeof *f.byq[i]);
    /* the columns J_νi, and velocities and accelerations (q'' = 0) */
    const expr_t **V = eom_alloc(3 * np, sizeof *V);
    const expr_t **A = eom_alloc(3 * np, sizeof *A);
    eom_dt_memo_t dtm = {eom_alloc(expr_graph_count(g), sizeof *dtm.node),
                         expr_graph_count(g)};
    for (size_t nu = 0; nu < np; nu++) {
        const nh_particle_t *P = &pt[nu];
        for (size_t i = 0; i < n; i++) {
            eom_pcol_t c = {{NULL, NULL, NULL}, P->dim};
            bool any = false;
            for (size_t k = 0; k < P->dim; k++) {
                c.c[k] = expr_diff(g, P->pos[k], sys->q[i]);
                any |= !expr_is_const(c.c[k], 0.0);
            }
            f.col[nu * n + i] = any ? eom_pform_col(&f, &c) : -1;
            if (any)
                f.byq[i][f.nbyq[i]++] = nu;
        }
        for (size_t k = 0; k < P->dim; k++) {
            V[nu * 3 + k] = expr_dt(g, P->pos[k], dv);
            A[nu * 3 + k] = eom_dt_node(g, V[nu * 3 + k], dv, &dtm);
        }
    }
    eom_pform_group(&f);
    size_t *set = eom_alloc(np + 1, sizeof *set);
    uint64_t *bits = eom_alloc(f.W + 1, sizeof *bits);
    for (size_t i = 0; i < n; i++) {
        d->p[i] = eom_pform_dot_groups(&f, i, V);
        for (size_t j = i; j < n; j++) {
            d->M[i * n + j] = eom_pform_mass_entry(&f, i, j, set, bits);
            d->M[j * n + i] = d->M[i * n + j];
        }
        d->h0[i] = eom_pform_dot_groups(&f, i, A);
    }
    if (sys->nbodies)
        eom_derive_rotations(sys, d, dv, &dtm);
    free(dtm.node);
    for (size_t i = 0; i < n; i++) {
        if (sys->V)
            d->h0[i] = expr_add(g, d->h0[i], expr_diff(g, sys->V, sys->q[i]));
        d->h[i] = expr_sub(g, d->h0[i], sys->Q[i]);
    }
    free(set);
    free(bits);
    free(V);
    free(A);
    for (size_t i = 0; i < n; i++)
        free(f.byq[i]);
    free(f.byq);
    free(f.nbyq);
    free(f.col);
    free(f.gfirst);
    free(f.goff);
    free(f.gmem);
    free(f.gcol);
    free(f.gbits);
    free(f.cols);
    free(f.chash);
    eom_sets_free(&f.sets);
    free(f.msum);
    free(centres);
}

/* The constraint rows: Ceff (f' for a holonomic f, else C), whether each
 * is holonomic, and B = ∂Ceff/∂q'. */
void eom_derive_rows(const nh_system_t *sys, eom_derived_t *d,
                     const expr_t *const *dv, const bool *vmask)
{
    expr_graph_t *g = sys->g;
    size_t n = sys->n, r = sys->r;
    d->Ceff = eom_alloc(r, sizeof *d->Ceff);
    d->holonomic = eom_alloc(r, sizeof *d->holonomic);
    d->B = eom_alloc(r * n, sizeof *d->B);
    for (size_t a = 0; a < r; a++) {
        d->holonomic[a] = !expr_depends_any(g, sys->C[a], vmask);
        d->Ceff[a] = d->holonomic[a] ? expr_dt(g, sys->C[a], dv) : sys->C[a];
        expr_diff_prime(g, d->Ceff[a], vmask); /* B's row in one pass */
        for (size_t i = 0; i < n; i++)
            d->B[a * n + i] = expr_diff(g, d->Ceff[a], sys->qd[i]);
    }
}

void eom_derive(const nh_system_t *sys, eom_derived_t *d)
{
    eom_derive_form(sys, d, eom_particle_form(sys));
}

void eom_derive_form(const nh_system_t *sys, eom_derived_t *d,
                     bool particles)
{
    size_t n = sys->n;
    const expr_t **dv = eom_dvar(sys, NULL);
    bool *vmask = eom_velocity_mask(sys);

    memset(d, 0, sizeof *d);
    d->p = eom_alloc(n, sizeof *d->p);
    d->M = eom_alloc(n * n, sizeof *d->M);
    d->h0 = eom_alloc(n, sizeof *d->h0);
    d->h = eom_alloc(n, sizeof *d->h);
    if (particles)
        eom_derive_particles(sys, d, dv);
    else
        eom_derive_lagrangian(sys, d, dv);

    eom_derive_rows(sys, d, dv, vmask);
    free(dv);
    free(vmask);
}

void eom_derive_c(const nh_system_t *sys, eom_derived_t *d)
{
    if (d->c)
        return;
    const expr_t **dv = eom_dvar(sys, NULL);
    d->c = eom_alloc(sys->r, sizeof *d->c);
    eom_dt_forward(sys->g, d->Ceff, sys->r, dv, d->c);
    free(dv);
}

void eom_derived_free(eom_derived_t *d)
{
    free(d->p);
    free(d->M);
    free(d->h0);
    free(d->h);
    free(d->Ceff);
    free(d->holonomic);
    free(d->B);
    free(d->c);
    memset(d, 0, sizeof *d);
}

/* ---- life cycle ----------------------------------------------------------- */

void eom_compile(eom_t *e, const expr_t *const *outs, size_t nout)
{
    e->tape = tape_compile(e->sys->g, outs, nout, e->nvars);
    if (!e->tape)
        nh_out_of_memory();
    e->out = eom_alloc(nout, sizeof *e->out);
    e->work = eom_alloc(tape_work_size(e->tape), sizeof *e->work);
}

void eom_compile_pre(eom_t *e, const expr_t *const *outs,
                     const uint32_t *var, size_t nvar, size_t nout)
{
    e->pre = tape_compile(e->sys->g, outs, nout, e->nvars);
    if (!e->pre)
        nh_out_of_memory();
    e->pre_out = eom_alloc(nout, sizeof *e->pre_out);
    e->pre_work = eom_alloc(tape_work_size(e->pre), sizeof *e->pre_work);
    e->pre_var = eom_alloc(nvar, sizeof *e->pre_var);
    if (nvar)
        memcpy(e->pre_var, var, nvar * sizeof *var);
    e->npre = nvar;
}

void eom_run_pre(eom_t *e, double *vars)
{
    tape_eval(e->pre, vars, e->pre_out, e->pre_work);
    for (size_t i = 0; i < e->npre; i++)
        vars[e->pre_var[i]] = e->pre_out[i];
}

void eom_alloc_scratch(eom_t *e, size_t nd, size_t np)
{
    e->nscratch = nd;
    e->scratch = eom_alloc(nd, sizeof *e->scratch);
    e->perm = eom_alloc(np, sizeof *e->perm);
}

void eom_set_state(eom_t *e, const uint32_t *vel, const uint32_t *dvel,
                   size_t nv)
{
    const nh_system_t *sys = e->sys;
    e->nstate = sys->n + nv;
    e->state = eom_alloc(e->nstate, sizeof *e->state);
    e->deriv = eom_alloc(e->nstate, sizeof *e->deriv);
    for (size_t i = 0; i < sys->n; i++) {
        e->state[i] = sys->q[i];
        e->deriv[i] = sys->qd[i];
    }
    for (size_t k = 0; k < nv; k++) {
        e->state[sys->n + k] = vel[k];
        e->deriv[sys->n + k] = dvel[k];
    }
}


void eom_set_native(eom_t *e, eom_native_fn values, eom_native_rhs_fn rhs,
                    void *handle, void (*release)(void *handle))
{
    if (e->native_release)
        e->native_release(e->native_handle);
    e->native = values;
    e->native_rhs = rhs;
    if (!values)
        e->native_mon = NULL;
    /* the derivatives come with the code they were compiled beside */
    eom_set_native_tangents(e, NULL, 0, NULL, 0, NULL, NULL);
    e->native_handle = handle;
    e->native_release = release;
}

bool eom_has_native(const eom_t *e)
{
    return e->native != NULL;
}

void eom_set_native_tangents(eom_t *e, eom_native_tangent_fn main_tape,
                             size_t main_values, eom_native_tangent_fn pre_tape,
                             size_t pre_values, void *handle,
                             void (*release)(void *handle))
{
    if (e->native_tan_release)
        e->native_tan_release(e->native_tan_handle);
    e->native_tan_handle = handle;
    e->native_tan_release = release;
    /* the constraints' Jacobians live in the derivatives' object */
    eom_set_native_constraints(e, NULL, NULL, 0);
    free(e->t_nval);
    free(e->t_pnval);
    e->native_tan = main_tape;
    e->native_tan_pre = pre_tape;
    e->t_nval = main_tape ? eom_alloc(main_values + 1, sizeof *e->t_nval)
                          : NULL;
    e->t_pnval = pre_tape ? eom_alloc(pre_values + 1, sizeof *e->t_pnval)
                          : NULL;
}

bool eom_tangents_native(const eom_t *e)
{
    return e->native_tan != NULL;
}

void eom_set_native_constraints(eom_t *e, eom_native_values_fn jacobians,
                                eom_native_tangent_fn ceff,
                                size_t ceff_values)
{
    e->native_jac = jacobians && ceff ? jacobians : NULL;
    e->native_ceff = jacobians && ceff ? ceff : NULL;
    e->ceff_values = jacobians && ceff ? ceff_values : 0;
}

eom_native_rhs_fn eom_native_rhs(const eom_t *e)
{
    return e->native_rhs;
}

void eom_set_native_monitors(eom_t *e, eom_native_monitors_fn fn)
{
    e->native_mon = fn;
}

bool eom_monitors_native(const eom_t *e)
{
    return e->native_mon != NULL;
}

size_t eom_velocity_level(const nh_system_t *sys, const expr_t **cv,
                          size_t *hol)
{
    expr_graph_t *g = sys->g;
    size_t n = sys->n, r = sys->r, nv = expr_graph_nvars(g), nh = 0;
    bool *vmask = eom_alloc(nv + 1, sizeof *vmask);
    const expr_t **dv = eom_alloc(nv + 1, sizeof *dv);
    for (size_t i = 0; i < n; i++) {
        vmask[sys->qd[i]] = true;
        dv[sys->q[i]] = expr_var(g, sys->qd[i]);
    }
    dv[sys->t] = expr_num(g, 1.0);
    for (size_t a = 0; a < r; a++) {
        if (!expr_depends_any(g, sys->C[a], vmask)) {
            hol[nh++] = a;
            cv[a] = expr_dt(g, sys->C[a], dv);
        } else {
            cv[a] = sys->C[a];
        }
    }
    free(dv);
    free(vmask);
    return nh;
}

/* The monitors' expressions (eom.h): f, the constraints at the velocity
 * level, L and ∂L/∂q_i'. */
static void eom_monitor_build(eom_t *e)
{
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    size_t n = sys->n, r = sys->r;
    const expr_t **outs = eom_alloc(2 * r + 1 + n, sizeof *outs);
    e->mon_hol = eom_alloc(r + 1, sizeof *e->mon_hol);
    size_t nh = eom_velocity_level(sys, outs + r, e->mon_hol);
    /* f first: the velocity-level rows move up to follow it */
    memmove(outs + nh, outs + r, r * sizeof *outs);
    for (size_t k = 0; k < nh; k++)
        outs[k] = sys->C[e->mon_hol[k]];
    outs[nh + r] = sys->L;
    for (size_t i = 0; i < n; i++)
        outs[nh + r + 1 + i] = expr_diff(g, sys->L, sys->qd[i]);
    e->mon_nh = nh;
    e->mon = tape_compile(g, outs, nh + r + 1 + n, expr_graph_nvars(g));
    if (!e->mon)
        nh_out_of_memory();
    free(outs);
}

const tape_t *eom_monitor_tape(eom_t *e)
{
    if (!e->mon)
        eom_monitor_build(e);
    return e->mon;
}

size_t eom_monitor_holonomic(eom_t *e, const size_t **hol)
{
    eom_monitor_tape(e);
    *hol = e->mon_hol;
    return e->mon_nh;
}

size_t eom_monitor_count(eom_t *e)
{
    return tape_nout(eom_monitor_tape(e));
}

size_t eom_monitor_work_size(eom_t *e)
{
    return tape_work_size(eom_monitor_tape(e));
}

void eom_monitors(eom_t *e, const double *vars, double *out, double *work)
{
    if (e->native_mon)
        e->native_mon(vars, out);
    else
        tape_eval(eom_monitor_tape(e), vars, out, work);
}

void eom_free(eom_t *e)
{
    if (!e)
        return;
    eom_set_native(e, NULL, NULL, NULL, NULL);
    tape_free(e->mon);
    free(e->mon_hol);
    if (e->release)
        e->release(e);
    eom_derived_free(&e->d);
    free(e->state);
    free(e->deriv);
    tape_free(e->tape);
    free(e->out);
    free(e->work);
    tape_free(e->pre);
    free(e->pre_out);
    free(e->pre_work);
    free(e->pre_var);
    tape_free(e->fast);
    free(e->fast_out);
    free(e->fast_work);
    free(e->fast_var);
    free(e->fast_dydt);
    free(e->scratch);
    free(e->perm);
    free(e->dep);
    free(e->ind);
    free(e->a);
    free(e->b);
    free(e->vdep);
    free(e->rowl);
    free(e->rowr);
    free(e->beta);
    free(e->Psi);
    free(e->t_out);
    free(e->t_dout);
    free(e->t_work);
    free(e->t_dwork);
    free(e->t_pout);
    free(e->t_pdout);
    free(e->t_pwork);
    free(e->t_pdwork);
    free(e->t_scratch);
    free(e->t_perm);
    free(e->t_block);
    free(e);
}

eom_method_t eom_method(const eom_t *e) { return e->method; }

const struct eom_kin *eom_kinematics(const eom_t *e) { return e->kin; }

size_t eom_state_size(const eom_t *e) { return e->nstate; }
int eom_memo_energy(const eom_t *e) { return e->memo_energy; }
void eom_set_memo_energy(eom_t *e, int verdict) { e->memo_energy = verdict; }

const uint32_t *eom_state_vars(const eom_t *e) { return e->state; }

const uint32_t *eom_state_derivs(const eom_t *e) { return e->deriv; }

/* ---- the hot path ------------------------------------------------------- */

int eom_check_finite(const double *v, size_t count, const char *what,
                     diag_t *err)
{
    /* The hot path: one pass without branches (a value is not finite
     * when its exponent bits are all ones), then the slow one to say
     * which kind of value it was. */
    const uint64_t exp_mask = 0x7ff0000000000000ULL;
    uint64_t bad = 0;
    for (size_t k = 0; k < count; k++) {
        uint64_t u;
        memcpy(&u, &v[k], sizeof u);
        bad |= (u & exp_mask) == exp_mask;
    }
    if (!bad)
        return 0;
    for (size_t k = 0; k < count; k++)
        if (!isfinite(v[k]))
            return diag_error(err, SRC_SPAN_NONE,
                              "a non-finite value (%s) in %s", 
                              isnan(v[k]) ? "nan" : "inf", what);
    return 0;
}

void eom_unpack_symmetric(const double *u, size_t n, double *f, size_t ld)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i; j < n; j++) {
            f[i * ld + j] = u[k];
            f[j * ld + i] = u[k];
            k++;
        }
}

void eom_unpack_lower(const double *u, size_t n, double *f)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i; j < n; j++)
            f[j * n + i] = u[k++];
}

int eom_solve_symmetric(const double *upper, size_t n, double *x, double *f,
                        double *w, size_t *perm)
{
    eom_unpack_lower(upper, n, f);
    if (linalg_ldlt(f, n, LINALG_RTOL) == 0) {
        linalg_ldlt_solve(f, n, x);
        return 0;
    }
    eom_unpack_symmetric(upper, n, f, n);
    if (linalg_lu(f, n, perm, LINALG_RTOL) != 0)
        return -1;
    linalg_lu_solve(f, n, perm, x, w);
    return 0;
}

size_t eom_rank(double *a, size_t rows, size_t cols)
{
    return linalg_rank(a, rows, cols, LINALG_RTOL);
}

/* The rank of B without row SKIP (SIZE_MAX: all rows), in BUF. */
static size_t rank_without(const double *B, size_t r, size_t n, size_t skip,
                           double *buf)
{
    size_t k = 0;
    for (size_t a = 0; a < r; a++)
        if (a != skip)
            memcpy(buf + n * k++, B + n * a, n * sizeof *buf);
    return eom_rank(buf, k, n);
}

int eom_check_independent(const nh_system_t *sys, const double *B,
                          double *buf, diag_t *err)
{
    size_t n = sys->n, r = sys->r;
    size_t rank = rank_without(B, r, n, SIZE_MAX, buf);
    if (rank == r)
        return 0;
    /* Row a is in a dependency when the others span it. */
    char names[DIAG_MSG_MAX / 2];
    size_t len = 0, count = 0, last = 0;
    names[0] = '\0';
    for (size_t a = 0; a < r; a++) {
        if (rank_without(B, r, n, a, buf) < rank)
            continue;
        if (count++ && len < sizeof names)
            len += (size_t)snprintf(names + len, sizeof names - len, ", ");
        if (len < sizeof names)
            len += (size_t)snprintf(names + len, sizeof names - len, "%s",
                                    sys->cname[a]);
        last = a;
    }
    if (count == 1)
        return diag_error(err, SRC_SPAN_NONE,
                          "the constraint %s has a zero row in B = dC/dq' "
                          "(rank %zu of %zu): it constrains no velocity",
                          sys->cname[last], rank, r);
    return diag_error(err, SRC_SPAN_NONE,
                      "the constraints %s are not independent: their rows "
                      "of B = dC/dq' are linearly dependent (rank %zu of "
                      "%zu; a holonomic constraint's row is its "
                      "derivative's)",
                      names, rank, r);
}

bool eom_schur_negligible(double hmax, double mmax)
{
    return !(hmax * mmax >= LINALG_RTOL);
}

int eom_singular(diag_t *err, const char *name, double *a, size_t rows,
                 size_t cols, size_t full)
{
    size_t rank = eom_rank(a, rows, cols);
    return diag_error(err, SRC_SPAN_NONE, "the %s is singular (rank %zu of %zu)",
                      name, rank, full);
}

void eom_clear_lambda(const eom_t *e, double *vars)
{
    for (size_t a = 0; a < e->sys->r; a++)
        vars[e->sys->lam[a]] = NAN;
}

int eom_accel(eom_t *e, double *vars, diag_t *err)
{
    if (e->native && e->native(vars) == 0)
        return 0;
    return e->compute(e, vars, err);
}

static const double *eom_fast_values(eom_t *e, const double *vars);

int eom_rhs(eom_t *e, double t, const double *y, double *dydt, double *vars,
            diag_t *err)
{
    if (e->native_rhs && e->native_rhs(t, y, vars, dydt) == 0)
        return 0;
    const uint32_t *state = e->state, *deriv = e->deriv;
    size_t ns = e->nstate;
    for (size_t k = 0; k < ns; k++)
        vars[state[k]] = y[k];
    vars[e->sys->t] = t;
    if (e->fast_dydt) {
        /* The fast path for the right-hand side: the pivots, and the
         * derivatives it computes must be finite — a value it does not
         * return (the acceleration of a dependent coordinate, a
         * multiplier) does not decide its success, as it does not enter
         * the integration (the samples, by eom_accel, still check every
         * value), and the state's own entries are finite with the state
         * (eom.h).  One test on their sum in the state's order, as the
         * generated C makes it (cgen.c, cgen_rhs_end): a sum is finite
         * only if every term is; one too large for a double sends the
         * call to the numeric path, on both alike.  Anything else: the
         * numeric path. */
        const double *o = eom_fast_values(e, vars);
        if (o) {
            double fin = 0.0;
            for (size_t k = 0; k < ns; k++) {
                int32_t j = e->fast_dydt[k];
                if (j >= 0) {
                    dydt[k] = o[j];
                    fin += o[j];
                } else {
                    dydt[k] = y[-1 - j];
                }
            }
            if (fin - fin == 0)
                return 0;
        }
        if (e->full_compute(e, vars, err) != 0)
            return -1;
    } else if (eom_accel(e, vars, err) != 0) {
        return -1;
    }
    /* The computed values are checked where they are made; the state's
     * own entries (q' of a state that holds the velocities) are checked
     * here, so that every derivative returned is finite (eom.h). */
    for (size_t k = 0; k < ns; k++)
        dydt[k] = vars[deriv[k]];
    return eom_check_finite(dydt, ns, "the derivative of the state", err);
}

/* ---- derivatives --------------------------------------------------------- */

void eom_tangent_reserve(eom_t *e, size_t k)
{
    /* At least one direction, so that the buffers exist even for a
     * system with no independent variable (eigen on an empty model). */
    if (k == 0)
        k = 1;
    const nh_system_t *sys = e->sys;
    /* The largest linear system a family differentiates: multipliers'
     * n + r, Voronec's n − r, Maggi's m (with n-sized work). */
    size_t big = sys->n + sys->r + sys->m + 1;
    size_t nout = tape_nout(e->tape), nw = tape_work_size(e->tape);
    /* The doubles one direction takes: the tapes' derivatives, the
     * scratch's right sides, and a block's seeds when blocks are taken. */
    size_t per = nout + nw + 2 + big + e->nvars;
    if (e->pre)
        per += tape_nout(e->pre) + tape_work_size(e->pre) + 2;
    size_t cap = EOM_TANGENT_BUDGET / (sizeof(double) * per);
    if (e->t_max_block && cap > e->t_max_block)
        cap = e->t_max_block;
    bool blocks = k > (cap ? cap : 1);
    if (blocks)
        k = cap ? cap : 1;
    if (k <= e->tk && (!blocks || e->t_block))
        return;
    if (k < e->tk)
        k = e->tk; /* keep what is there; add the block's seeds */
    double *bufs[] = {e->t_out, e->t_dout, e->t_work, e->t_dwork,
                      e->t_pout, e->t_pdout, e->t_pwork, e->t_pdwork,
                      e->t_scratch, e->t_block};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        free(bufs[i]);
    free(e->t_perm);
    e->t_block = blocks ? eom_alloc((size_t)e->nvars * k,
                                    sizeof *e->t_block)
                        : NULL;
    e->t_out = eom_alloc(nout + 1, sizeof *e->t_out);
    e->t_dout = eom_alloc((nout + 1) * k, sizeof *e->t_dout);
    e->t_work = eom_alloc(nw + 1, sizeof *e->t_work);
    e->t_dwork = eom_alloc((nw + 1) * k, sizeof *e->t_dwork);
    if (e->pre) {
        size_t np = tape_nout(e->pre), npw = tape_work_size(e->pre);
        e->t_pout = eom_alloc(np + 1, sizeof *e->t_pout);
        e->t_pdout = eom_alloc((np + 1) * k, sizeof *e->t_pdout);
        e->t_pwork = eom_alloc(npw + 1, sizeof *e->t_pwork);
        e->t_pdwork = eom_alloc((npw + 1) * k, sizeof *e->t_pdwork);
    } else {
        e->t_pout = e->t_pdout = e->t_pwork = e->t_pdwork = NULL;
    }
    e->t_scratch = eom_alloc(big * big + big * k + 3 * big +
                                 2 * sys->n * (sys->m + 1) + sys->m * sys->m,
                             sizeof *e->t_scratch);
    e->t_perm = eom_alloc(big, sizeof *e->t_perm);
    e->tk = k;
}

int eom_tangent(eom_t *e, double *vars, double *dvars, size_t k,
                diag_t *err)
{
    eom_tangent_reserve(e, k);
    e->t_again = false;
    if (k <= e->tk)
        return e->tangent(e, vars, dvars, k, err);
    /* TK directions at a time: each block's seeds gathered from DVARS
     * (one row of K per variable) into rows of KB, its derivatives
     * scattered back.  The directions are independent, so the numbers
     * are those of one pass. */
    size_t nv = e->nvars;
    int rc = 0;
    for (size_t j0 = 0; j0 < k && rc == 0; j0 += e->tk) {
        size_t kb = k - j0 < e->tk ? k - j0 : e->tk;
        for (size_t v = 0; v < nv; v++)
            memcpy(e->t_block + v * kb, dvars + v * k + j0,
                   kb * sizeof *dvars);
        rc = e->tangent(e, vars, e->t_block, kb, err);
        for (size_t v = 0; v < nv && rc == 0; v++)
            memcpy(dvars + v * k + j0, e->t_block + v * kb,
                   kb * sizeof *dvars);
        e->t_again = true;
    }
    e->t_again = false;
    return rc;
}

void eom_tangent_tape(eom_t *e, const double *vars, const double *dvars,
                      size_t k)
{
    if (e->native_tan)
        e->native_tan(vars, dvars, (long)k, e->t_out, e->t_dout, e->t_nval,
                      e->t_dwork);
    else
        tape_eval_tangent(e->tape, vars, dvars, k, e->t_out, e->t_dout,
                          e->t_work, e->t_dwork);
}

void eom_tangent_pre(eom_t *e, double *vars, double *dvars, size_t k)
{
    if (e->native_tan_pre)
        e->native_tan_pre(vars, dvars, (long)k, e->t_pout, e->t_pdout,
                          e->t_pnval, e->t_pdwork);
    else
        tape_eval_tangent(e->pre, vars, dvars, k, e->t_pout, e->t_pdout,
                          e->t_pwork, e->t_pdwork);
    for (size_t i = 0; i < e->npre; i++) {
        vars[e->pre_var[i]] = e->t_pout[i];
        memcpy(dvars + (size_t)e->pre_var[i] * k, e->t_pdout + i * k,
               k * sizeof *dvars);
    }
}

int eom_tangent_solve(const eom_t *e, double *a, size_t n, double *b,
                      size_t k, double *w, size_t *perm, const char *what,
                      diag_t *err)
{
    if (n == 0)
        return 0;
    if (!e->t_again && linalg_lu(a, n, perm, LINALG_RTOL) != 0)
        return diag_error(err, SRC_SPAN_NONE, "the %s is singular", what);
    linalg_lu_solve_many(a, n, perm, b, k, w);
    return 0;
}

char *eom_describe(const eom_t *e, bool latex)
{
    return e->describe(e, latex);
}

/* ---- the fast path of small systems ------------------------------------ */

bool eom_velocity_alone(const eom_t *e, size_t a, size_t j)
{
    const nh_system_t *sys = e->sys;
    size_t n = sys->n;
    const expr_t *cj = e->d.B[a * n + j];
    if (cj->op != EXPR_CONST || cj->value == 0.0 || !isfinite(cj->value))
        return false;
    for (size_t b = 0; b < sys->r; b++)
        if (b != a && !expr_is_const(e->d.B[b * n + j], 0.0))
            return false;
    return true;
}

/* Products of sums that the canonical forms keep (they never distribute)
 * often cancel once multiplied out: the sphere's h̄_theta is six products
 * of sums that expand to 7/5 m R² phi' psi' sin(theta).  eom_expand
 * multiplies out products and small integer powers of sums, up to
 * EOM_EXPAND_TERMS terms per product (beyond that a product is kept as
 * it is), memoised by node id below the count the memo was made for. */
enum { EOM_EXPAND_TERMS = 64 };

typedef struct eom_expand_memo {
    const expr_t **node; /* by id */
    size_t count;
} eom_expand_memo_t;

static const expr_t *eom_expand_node(expr_graph_t *g, const expr_t *e,
                                     eom_expand_memo_t *memo);

/* A·B, both expanded, multiplied out when the result has few terms. */
static const expr_t *eom_expand_mul(expr_graph_t *g, const expr_t *a,
                                    const expr_t *b)
{
    const expr_t *const *ta = &a, *const *tb = &b;
    size_t na = 1, nb = 1;
    if (a->op == EXPR_ADD) {
        ta = a->args;
        na = a->nargs;
    }
    if (b->op == EXPR_ADD) {
        tb = b->args;
        nb = b->nargs;
    }
    if (na * nb == 1 || na * nb > EOM_EXPAND_TERMS)
        return expr_mul(g, a, b);
    const expr_t **t = eom_alloc(na * nb, sizeof *t);
    size_t k = 0;
    for (size_t i = 0; i < na; i++)
        for (size_t j = 0; j < nb; j++)
            t[k++] = expr_mul(g, ta[i], tb[j]);
    const expr_t *r = expr_sum(g, t, k);
    free(t);
    return r;
}

/* E expanded when that is known without a rule (a leaf, a node newer
 * than the memo, the memo's), else NULL. */
static const expr_t *eom_expand_known(const expr_t *e,
                                      const eom_expand_memo_t *memo)
{
    if (e->op == EXPR_CONST || e->op == EXPR_VAR || e->id >= memo->count)
        return e;
    return memo->node[e->id];
}

/* eom_expand_rule's work on E, its arguments' through eom_expand_node. */
static const expr_t *eom_expand_rule(expr_graph_t *g, const expr_t *e,
                                     eom_expand_memo_t *memo)
{
    const expr_t *r;
    if (e->op == EXPR_ADD) {
        const expr_t **t = eom_alloc(e->nargs, sizeof *t);
        for (uint32_t i = 0; i < e->nargs; i++)
            t[i] = eom_expand_node(g, e->args[i], memo);
        r = expr_sum(g, t, e->nargs);
        free(t);
    } else if (e->op == EXPR_MUL) {
        r = eom_expand_node(g, e->args[0], memo);
        for (uint32_t i = 1; i < e->nargs; i++)
            r = eom_expand_mul(g, r, eom_expand_node(g, e->args[i], memo));
    } else if (e->op == EXPR_POW) {
        const expr_t *b = eom_expand_node(g, e->args[0], memo);
        const expr_t *x = e->args[1];
        if (x->op == EXPR_CONST && (x->value == 2 || x->value == 3) &&
            b->op == EXPR_ADD) {
            r = b;
            for (int i = 1; i < (int)x->value; i++)
                r = eom_expand_mul(g, r, b);
        } else {
            r = expr_pow(g, b, eom_expand_node(g, x, memo));
        }
    } else if (e->op == EXPR_GUARD) {
        /* the value multiplied out, where the same atoms are defined */
        r = eom_expand_node(g, e->args[0], memo);
        for (uint32_t i = 1; i < e->nargs; i++)
            r = expr_guard(g, r, e->args[i]);
    } else {
        r = expr_call(g, e->op, eom_expand_node(g, e->args[0], memo),
                      e->nargs > 1 ? eom_expand_node(g, e->args[1], memo)
                                   : NULL);
    }
    memo->node[e->id] = r;
    return r;
}

/* eom_expand_rule without recursion by the depth of the graph: the
 * arguments it expands first (a guard's value, not its domain), in post
 * order by an explicit stack, as eom_dt_node. */
static const expr_t *eom_expand_node(expr_graph_t *g, const expr_t *e,
                                     eom_expand_memo_t *memo)
{
    const expr_t *r = eom_expand_known(e, memo);
    if (r)
        return r;
    size_t cap = 64, top = 0;
    struct expand_frame {
        const expr_t *e;
        uint32_t next;
    } *st = eom_alloc(cap, sizeof *st);
    st[top++] = (struct expand_frame){e, 0};
    while (top) {
        struct expand_frame *f = &st[top - 1];
        uint32_t nparts = f->e->op == EXPR_GUARD ? 1 : f->e->nargs;
        if (f->next < nparts) {
            const expr_t *a = f->e->args[f->next++];
            if (eom_expand_known(a, memo))
                continue;
            if (top == cap) {
                cap *= 2;
                st = xrealloc(st, cap * sizeof *st);
            }
            st[top++] = (struct expand_frame){a, 0};
            continue;
        }
        const expr_t *x = f->e;
        top--;
        if (!eom_expand_known(x, memo))
            eom_expand_rule(g, x, memo);
    }
    free(st);
    return memo->node[e->id];
}

void eom_expand(expr_graph_t *g, const expr_t **e, size_t n)
{
    eom_expand_memo_t memo = {eom_alloc(expr_graph_count(g),
                                        sizeof *memo.node),
                              expr_graph_count(g)};
    for (size_t i = 0; i < n; i++)
        e[i] = eom_expand_node(g, e[i], &memo);
    free(memo.node);
}

void eom_ldlt_nodes(expr_graph_t *g, const expr_t *const *A, size_t n,
                    const expr_t *const *rhs, size_t nrhs, const expr_t **d,
                    const expr_t **x)
{
    /* linalg_ldlt's recurrences (Crout), on nodes: with W_jk = L_jk·D_k,
     *   W_jk = A_jk − Σ_{p<k} W_jp L_kp,  L_jk = W_jk / D_k,
     *   D_j = A_jj − Σ_{k<j} L_jk W_jk;
     * then L y = b, z = y / D, Lᵀ x = z. */
    const expr_t **L = eom_alloc(n * n, sizeof *L);
    const expr_t **W = eom_alloc(n * n, sizeof *W);
    const expr_t **inv = eom_alloc(n, sizeof *inv);
    const expr_t **t = eom_alloc(n + 1, sizeof *t);
    const expr_t *minus_one = expr_num(g, -1.0);
    for (size_t j = 0; j < n; j++) {
        for (size_t k = 0; k < j; k++) {
            size_t m = 0;
            t[m++] = A[j * n + k];
            for (size_t p = 0; p < k; p++)
                t[m++] = expr_neg(g, expr_mul(g, W[j * n + p], L[k * n + p]));
            W[j * n + k] = expr_sum(g, t, m);
            L[j * n + k] = expr_mul(g, W[j * n + k], inv[k]);
        }
        size_t m = 0;
        t[m++] = A[j * n + j];
        for (size_t k = 0; k < j; k++)
            t[m++] = expr_neg(g, expr_mul(g, L[j * n + k], W[j * n + k]));
        d[j] = expr_sum(g, t, m);
        inv[j] = expr_pow(g, d[j], minus_one);
    }
    for (size_t s = 0; s < nrhs; s++) {
        const expr_t *const *b = rhs + s * n;
        const expr_t **xs = x + s * n;
        for (size_t i = 0; i < n; i++) {
            size_t m = 0;
            t[m++] = b[i];
            for (size_t k = 0; k < i; k++)
                t[m++] = expr_neg(g, expr_mul(g, L[i * n + k], xs[k]));
            xs[i] = expr_sum(g, t, m);
        }
        for (size_t i = 0; i < n; i++)
            xs[i] = expr_mul(g, xs[i], inv[i]);
        for (size_t i = n; i-- > 0;) {
            size_t m = 0;
            t[m++] = xs[i];
            for (size_t k = i + 1; k < n; k++)
                t[m++] = expr_neg(g, expr_mul(g, L[k * n + i], xs[k]));
            xs[i] = expr_sum(g, t, m);
        }
    }
    free(L);
    free(W);
    free(inv);
    free(t);
}

bool eom_fast_pays(const eom_t *e)
{
    size_t len = tape_length(e->tape) + (e->pre ? tape_length(e->pre) : 0);
    return e->sys->n <= EOM_FAST_MAX && len <= EOM_FAST_TAPE_MAX;
}

/* The fast tape at VARS, then its pivots against the tolerance of
 * linalg_lu (for a definite matrix the largest entry is on the
 * diagonal): the values (after the pivots in e->fast_out), or NULL when
 * a matrix is not definite or too near singular. */
static const double *eom_fast_values(eom_t *e, const double *vars)
{
    tape_eval(e->fast, vars, e->fast_out, e->fast_work);
    const double *o = e->fast_out;
    double dmax0 = 0.0;
    for (size_t gi = 0; gi < e->fast_ngroup; gi++) {
        size_t p = e->fast_group[gi];
        double dmax = 0.0;
        for (size_t i = 0; i < p; i++)
            dmax = fmax(dmax, fabs(o[i]));
        /* A later group is a Schur complement B M⁻¹ Bᵀ of the first. */
        if (gi == 0)
            dmax0 = dmax;
        else if (eom_schur_negligible(dmax, dmax0))
            return NULL;
        double tol = LINALG_RTOL * dmax, first = o[p];
        for (size_t i = 0; i < p; i++) {
            double d = o[p + i];
            if (!(fabs(d) > tol) || (d > 0) != (first > 0))
                return NULL;
        }
        o += 2 * p;
    }
    return o;
}

/* The fast path: its values, when the pivots are good and every value is
 * finite; anything unexpected goes to the numeric path, which also words
 * the errors. */
static int eom_fast_compute(eom_t *e, double *vars, diag_t *err)
{
    const double *o = eom_fast_values(e, vars);
    diag_t ignored = {0};
    if (!o || eom_check_finite(o, e->fast_nval, "", &ignored) != 0)
        return e->full_compute(e, vars, err);
    for (size_t i = 0; i < e->fast_nval; i++)
        vars[e->fast_var[i]] = o[i];
    if (e->fast_clear_lambda)
        eom_clear_lambda(e, vars);
    return 0;
}

void eom_fast_install(eom_t *e, size_t ngroup, const size_t *sizes,
                      const expr_t *const *diag, const expr_t *const *piv,
                      const expr_t *const *val, const uint32_t *var,
                      size_t nval, bool clear_lambda)
{
    size_t npiv = 0;
    for (size_t gi = 0; gi < ngroup; gi++)
        npiv += sizes[gi];
    size_t nout = 2 * npiv + nval;
    const expr_t **outs = eom_alloc(nout, sizeof *outs);
    size_t o = 0, off = 0;
    for (size_t gi = 0; gi < ngroup; gi++) {
        for (size_t i = 0; i < sizes[gi]; i++)
            outs[o++] = diag[off + i];
        for (size_t i = 0; i < sizes[gi]; i++)
            outs[o++] = piv[off + i];
        off += sizes[gi];
        e->fast_group[gi] = sizes[gi];
    }
    for (size_t i = 0; i < nval; i++)
        outs[o++] = val[i];
    e->fast = tape_compile(e->sys->g, outs, nout, e->nvars);
    e->fast_out = eom_alloc(nout, sizeof *e->fast_out);
    e->fast_work = eom_alloc(tape_work_size(e->fast), sizeof *e->fast_work);
    e->fast_var = eom_alloc(nval, sizeof *e->fast_var);
    memcpy(e->fast_var, var, nval * sizeof *var);
    e->fast_nval = nval;
    e->fast_ngroup = ngroup;
    e->fast_clear_lambda = clear_lambda;
    e->full_compute = e->compute;
    e->compute = eom_fast_compute;
    free(outs);
    /* where each derivative of the state comes from (eom_rhs) */
    e->fast_dydt = eom_alloc(e->nstate, sizeof *e->fast_dydt);
    for (size_t k = 0; k < e->nstate && e->fast_dydt; k++) {
        int32_t src = INT32_MIN;
        for (size_t i = 0; i < nval && src == INT32_MIN; i++)
            if (var[i] == e->deriv[k])
                src = (int32_t)i;
        for (size_t j = 0; j < e->nstate && src == INT32_MIN; j++)
            if (e->state[j] == e->deriv[k])
                src = -1 - (int32_t)j;
        if (src == INT32_MIN) { /* neither: eom_rhs takes eom_accel */
            free(e->fast_dydt);
            e->fast_dydt = NULL;
        } else {
            e->fast_dydt[k] = src;
        }
    }
}

/* ---- text -------------------------------------------------------------- */

static void eom_buf_reserve(eom_buf_t *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s)
        nh_out_of_memory();
    b->s = s;
    b->cap = cap;
}

void eom_buf_puts(eom_buf_t *b, const char *s)
{
    size_t n = strlen(s);
    eom_buf_reserve(b, n);
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
}

static void eom_buf_vprintf(eom_buf_t *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    eom_buf_reserve(b, (size_t)n);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void eom_buf_printf(eom_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    eom_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

/* The display context and the block, made at the first item. */
static void eom_buf_display(eom_buf_t *b, expr_graph_t *g, bool latex)
{
    if (b->disp)
        return;
    b->simp = simp_new(g);
    b->disp = display_new(b->simp, latex);
    if (b->sys)
        for (size_t i = 0; i < b->sys->n; i++)
            display_may_drop(b->disp, b->sys->q[i]);
}

void eom_buf_row(eom_buf_t *b, expr_graph_t *g, const expr_t *l,
                 const expr_t *r, bool latex)
{
    if (b->collect) {
        if (b->nrow == b->rowcap) {
            b->rowcap = b->rowcap ? 2 * b->rowcap : 8;
            b->cl = realloc(b->cl, b->rowcap * sizeof *b->cl);
            b->cr = realloc(b->cr, b->rowcap * sizeof *b->cr);
            if (!b->cl || !b->cr)
                nh_out_of_memory();
        }
        b->cl[b->nrow] = l;
        b->cr[b->nrow++] = r;
        return;
    }
    eom_buf_display(b, g, latex);
    simp_t *sp = b->simp;
    const expr_t *L, *R, *cond;
    simp_row(sp, simp_import(sp, l), simp_import(sp, r), NH_RANK_ACCEL, &L,
             &R, &cond);
    display_row(b->disp, L, R, cond);
}

void eom_buf_object(eom_buf_t *b, expr_graph_t *g, const char *text_label,
                    const char *latex_label, const expr_t *e, bool latex)
{
    if (b->collect) {
        eom_buf_row(b, g, expr_num(g, 0), e, latex);
        return;
    }
    eom_buf_display(b, g, latex);
    simp_t *sp = b->simp;
    display_object(b->disp, text_label, latex_label,
                   simp_simplify(sp, simp_import(sp, e)));
}

char *eom_buf_finish(eom_buf_t *b, bool latex)
{
    (void)latex;
    if (b->disp) {
        char *t = display_finish(b->disp);
        eom_buf_puts(b, t);
        free(t);
    }
    if (!b->s)
        eom_buf_puts(b, "");
    simp_free(b->simp);
    if (b->sink) {
        b->sink->cl = b->cl;
        b->sink->cr = b->cr;
        b->sink->nrow = b->nrow;
    } else {
        free(b->cl);
        free(b->cr);
    }
    return b->s;
}

size_t eom_rows(eom_t *e, const expr_t ***l, const expr_t ***r)
{
    /* the describer run with a collecting buffer: the same rows */
    eom_buf_t sink = {0};
    e->collect = &sink;
    free(e->describe(e, false));
    e->collect = NULL;
    *l = sink.cl;
    *r = sink.cr;
    return sink.nrow;
}

eom_buf_t eom_buf_start(const eom_t *e)
{
    eom_buf_t b = {0};
    b.sys = e->sys;
    b.sink = e->collect;
    b.collect = b.sink != NULL;
    return b;
}

char *eom_latex_var(expr_graph_t *g, uint32_t v)
{
    return expr_to_latex(g, expr_var(g, v));
}

void eom_buf_heading(eom_buf_t *b, bool latex, const char *fmt, ...)
{
    if (b->collect)
        return;
    eom_buf_display(b, b->sys ? b->sys->g : NULL, latex);
    va_list ap;
    va_start(ap, fmt);
    strbuf_t t;
    strbuf_init(&t);
    strbuf_vaddf(&t, fmt, ap);
    va_end(ap);
    char *h = strbuf_take(&t);
    display_heading(b->disp, h);
    free(h);
}
