/*
 * where.c — named subexpressions for long output (where.h).
 *
 * The roots are the sides of rows that a person is to read, and as trees
 * they can be exponentially larger than as graphs: the benchmark bicycle's
 * rows under maggi are some 1900 distinct subexpressions, but written out
 * as trees more than 10^9 terms.  Printing the graph instead, each shared
 * subexpression once under a name, is common-subexpression elimination
 * on the display graph; which nodes get names decides how long the whole
 * is.  The choice here, on the graph the roots make:
 *
 *   width(x)   the LaTeX width of x printed with its named children as
 *              names (layout_width; the text names the same nodes);
 *   occ(x)     how many times x is printed: once for each place a named
 *              node or a root refers to it, and occ(p) times for each
 *              place an inline parent p does;
 *   x is named when it would not fit a line (a product, power or
 *   function wider than a line names its widest children, so every
 *   row is a sum of terms that fit: the layout breaks it between
 *   terms), or when naming saves width:
 *       (occ(x) − 1)(width(x) − width(name)) > width(name) + ROW_COST,
 *   its own row costing a name, an equals sign and a separator.
 * The two depend on each other (naming a node changes the widths of its
 * parents and the occurrences of its children), so the choice is made a
 * few times over, bottom up for widths and top down for occurrences,
 * which settles in two or three rounds.
 *
 * Before naming, every sum has its angle sums contracted and its common
 * factors taken out (where.h, step 2).  Simplifying each node in full
 * (simp_simplify) was tried and made the bicycle's Kane rows longer:
 * multiplied out, a node shares less with the others.
 *
 * Must not: change the source graph; print.
 */
#include "interp/expr/where.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"
#include "interp/expr/layout.h"
#include "interp/expr/mag.h"

/* What a row of its own costs beyond its name, in points: " = " and the
 * space a line leaves at its end on average.  (30 gave the bicycle's
 * maggi show latex eom a fifth page, of four lines; 10–20 four pages.) */
#define ROW_COST 20.0
/* A root does not depend on a variable when, at every sample point, it
 * moves by no more than this share of its values as the variable goes to
 * 0. */
#define DROP_TOL 1e-9
/* Rounds of the choice (see the file comment). */
#define ROUNDS 4

struct where {
    simp_t *s;
    expr_graph_t *g;
    const expr_t **root, **out;
    size_t nroot, caproot;
    uint32_t *drop, *dropped;
    size_t ndrop, ndropped;
    const expr_t **sym, **def;
    size_t nname;
};

where_t *where_new(simp_t *s)
{
    where_t *w = xcalloc(1, sizeof *w);
    w->s = s;
    w->g = simp_graph(s);
    return w;
}

void where_free(where_t *w)
{
    if (!w)
        return;
    free(w->root);
    free(w->out);
    free(w->drop);
    free(w->dropped);
    free(w->sym);
    free(w->def);
    free(w);
}

void where_may_drop(where_t *w, uint32_t var)
{
    w->drop = xrealloc(w->drop, (w->ndrop + 1) * sizeof *w->drop);
    w->drop[w->ndrop++] = var;
}

size_t where_add(where_t *w, const expr_t *root)
{
    if (w->nroot == w->caproot) {
        w->caproot = w->caproot ? 2 * w->caproot : 16;
        w->root = xrealloc(w->root, w->caproot * sizeof *w->root);
    }
    w->root[w->nroot] = expr_unguarded(root);
    return w->nroot++;
}

size_t where_count(const where_t *w)
{
    return w->nname;
}

const expr_t *where_symbol(const where_t *w, size_t k)
{
    return w->sym[k];
}

const expr_t *where_definition(const where_t *w, size_t k)
{
    return w->def[k];
}

const expr_t *where_root(const where_t *w, size_t i)
{
    return w->out ? w->out[i] : w->root[i];
}

size_t where_dropped(const where_t *w, const uint32_t **vars)
{
    *vars = w->dropped;
    return w->ndropped;
}

/* ---- a map from node ids ------------------------------------------------ */

/* Node ids of the display graph are dense; the maps are arrays indexed
 * by id, grown as the graph grows. */
typedef struct idmap {
    const expr_t **v;
    size_t cap;
} idmap_t;

static const expr_t *idmap_get(const idmap_t *m, const expr_t *e)
{
    return e->id < m->cap ? m->v[e->id] : NULL;
}

static void idmap_put(idmap_t *m, const expr_t *e, const expr_t *v)
{
    if (e->id >= m->cap) {
        size_t cap = m->cap ? m->cap : 1024;
        while (cap <= e->id)
            cap *= 2;
        m->v = xrealloc(m->v, cap * sizeof *m->v);
        memset(m->v + m->cap, 0, (cap - m->cap) * sizeof *m->v);
        m->cap = cap;
    }
    m->v[e->id] = v;
}

static bool is_leaf(const expr_t *e)
{
    return e->op == EXPR_CONST || e->op == EXPR_VAR;
}

/* E's op over the children A (E's arity): the constructors simplify. */
static const expr_t *rebuild(expr_graph_t *g, const expr_t *e,
                             const expr_t *const *a)
{
    switch (e->op) {
    case EXPR_ADD:
        return expr_sum(g, a, e->nargs);
    case EXPR_MUL:
        return expr_product(g, a, e->nargs);
    case EXPR_POW:
        return expr_pow(g, a[0], a[1]);
    case EXPR_GUARD:
        return a[0];
    default:
        return expr_call(g, e->op, a[0], e->nargs > 1 ? a[1] : NULL);
    }
}

/* The non-leaf nodes below the roots R (N), children before parents, each
 * once: into *ORDER (malloc'ed), the count returned; SEEN (an id map)
 * marks them. */
static size_t post_order(const expr_t *const *r, size_t n, idmap_t *seen,
                         const expr_t ***order)
{
    size_t cap = 256, k = 0, top = 0, scap = 256;
    const expr_t **out = xmalloc(cap * sizeof *out);
    struct frame {
        const expr_t *e;
        uint32_t next;
    } *st = xmalloc(scap * sizeof *st);
    for (size_t i = 0; i < n; i++) {
        if (is_leaf(r[i]) || idmap_get(seen, r[i]))
            continue;
        idmap_put(seen, r[i], r[i]);
        st[top++] = (struct frame){r[i], 0};
        while (top) {
            struct frame *f = &st[top - 1];
            if (f->next < f->e->nargs) {
                const expr_t *c = expr_unguarded(f->e->args[f->next++]);
                if (is_leaf(c) || idmap_get(seen, c))
                    continue;
                idmap_put(seen, c, c);
                if (top == scap) {
                    scap *= 2;
                    st = xrealloc(st, scap * sizeof *st);
                }
                st[top++] = (struct frame){c, 0};
                continue;
            }
            if (k == cap) {
                cap *= 2;
                out = xrealloc(out, cap * sizeof *out);
            }
            out[k++] = f->e;
            top--;
        }
    }
    free(st);
    *order = out;
    return k;
}

/* ---- 1. variables no root depends on ------------------------------------ */

static void drop_variables(where_t *w)
{
    expr_graph_t *g = w->g;
    uint32_t nv = expr_graph_nvars(g);
    if (w->ndrop == 0 || w->nroot == 0)
        return;
    double *base = xcalloc(nv, sizeof *base);
    bool *move = xcalloc(nv, sizeof *move);
    double *pts = xcalloc((size_t)EXPR_MAG_POINTS * nv, sizeof *pts);
    const expr_t **repl = xcalloc(nv, sizeof *repl);
    const expr_t **diff = xcalloc(2 * w->nroot, sizeof *diff);
    for (uint32_t v = 0; v < nv; v++) {
        move[v] = true;
        base[v] = 0.5;
    }
    expr_mag_t ev;
    memset(&ev, 0, sizeof ev);
    ev.g = g;
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    for (size_t d = 0; d < w->ndrop; d++) {
        uint32_t v = w->drop[d];
        if (v >= nv)
            continue;
        memset(repl, 0, nv * sizeof *repl);
        repl[v] = expr_num(g, 0);
        size_t nd = 0;
        bool any = false;
        for (size_t i = 0; i < w->nroot; i++) {
            if (!expr_depends(g, w->root[i], v))
                continue;
            any = true;
            const expr_t *at0 = expr_subst(g, w->root[i], repl);
            diff[nd++] = expr_sub(g, w->root[i], at0);
            diff[nd++] = at0; /* sampled where it is defined, too */
        }
        if (!any)
            continue;
        /* the differences vanish at every sample point (the roots at 0
         * among the expressions, so each point is one where they are
         * defined); the roots at 0 themselves need not */
        size_t np = 0;
        size_t got = expr_mag_sample(&ev, &seed, base, move, nv, diff, nd,
                                     pts);
        if (got < EXPR_MAG_POINTS)
            continue;
        /* each difference small next to the values it is the difference
         * of (a magnitude of the terms would be no measure here: a
         * solved form divides sums of huge terms by another) */
        bool zero = true;
        for (size_t k = 0; k < got && zero; k++) {
            expr_mag_begin(&ev, pts + k * nv);
            for (size_t i = 0; i < nd && zero; i += 2) {
                double x = expr_mag_get(&ev, diff[i], NULL);
                double at0 = expr_mag_get(&ev, diff[i + 1], NULL);
                double f = x + at0;
                zero = isfinite(x) &&
                       fabs(x) <= DROP_TOL * (fabs(f) + fabs(at0));
            }
            np++;
        }
        if (!zero || np == 0)
            continue;
        for (size_t i = 0; i < w->nroot; i++)
            w->root[i] = expr_subst(g, w->root[i], repl);
        w->dropped = xrealloc(w->dropped,
                              (w->ndropped + 1) * sizeof *w->dropped);
        w->dropped[w->ndropped++] = v;
    }
    expr_mag_free(&ev);
    free(base);
    free(move);
    free(pts);
    free(repl);
    free(diff);
}

/* ---- 2. simplified bottom up ---------------------------------------------- */

/* The children of X mapped by MEMO (leaves as they are), rebuilt. */
static const expr_t *rebuilt_from(where_t *w, const expr_t *x,
                                  const idmap_t *memo)
{
    const expr_t *al[8] = {NULL};
    const expr_t **a = x->nargs <= 8 ? al : xmalloc(x->nargs * sizeof *a);
    for (uint32_t i = 0; i < x->nargs; i++) {
        const expr_t *c = expr_unguarded(x->args[i]);
        a[i] = is_leaf(c) ? c : idmap_get(memo, c);
    }
    const expr_t *y = expr_unguarded(rebuild(w->g, x, a));
    if (a != al)
        free(a);
    return y;
}

/* The roots rebuilt bottom up, every sum's angle sums contracted (frames
 * turned twice about one axis give sin(a + b) as a pair of products,
 * however large the sum). */
static void contract_all(where_t *w)
{
    idmap_t seen = {NULL, 0}, memo = {NULL, 0};
    const expr_t **order;
    size_t n = post_order(w->root, w->nroot, &seen, &order);
    for (size_t k = 0; k < n; k++)
        idmap_put(&memo, order[k],
                  simp_angle_sums(w->s, rebuilt_from(w, order[k], &memo)));
    for (size_t i = 0; i < w->nroot; i++)
        if (!is_leaf(w->root[i]))
            w->root[i] = idmap_get(&memo, w->root[i]);
    free(order);
    free(seen.v);
    free(memo.v);
}

/* Every sum of the roots' graph with its common factors taken out
 * (simp_horner), bottom up: a sum that the simplification multiplied out
 * inside a larger one (d1*k4*k25 + d3*k4*k14*k25 + d2*k6*k25) is then
 * the shared sum times its factor (k25*k15), one node with the sum met
 * elsewhere. */
static void factor_all(where_t *w)
{
    idmap_t seen = {NULL, 0}, memo = {NULL, 0};
    const expr_t **order;
    size_t n = post_order(w->root, w->nroot, &seen, &order);
    for (size_t k = 0; k < n; k++) {
        const expr_t *y = rebuilt_from(w, order[k], &memo);
        if (y->op == EXPR_ADD) {
            const expr_t *h = simp_horner(w->s, y);
            y = h;
        }
        idmap_put(&memo, order[k], y);
    }
    for (size_t i = 0; i < w->nroot; i++)
        if (!is_leaf(w->root[i]))
            w->root[i] = idmap_get(&memo, w->root[i]);
    free(order);
    free(seen.v);
    free(memo.v);
}

/* ---- 3. the names ----------------------------------------------------------- */

typedef struct choice {
    where_t *w;
    const expr_t **order; /* the non-leaf nodes, children first */
    size_t n;
    idmap_t index;        /* node -> (its place in ORDER) + 1, as a pointer */
    bool *named, *forced;
    double *width, *occ;
    const expr_t **shown; /* its printed node: named children as symbols */
    const expr_t **sym;   /* a placeholder variable while choosing */
    char **tname;         /* s_x, c_x for sin x, cos x of a variable x */
    idmap_t wcache;       /* printed node -> width + 1, boxed */
    double *wbox;
    size_t nbox, capbox;
} choice_t;

static size_t place_of(const choice_t *c, const expr_t *e)
{
    const expr_t *p = idmap_get(&c->index, e);
    return p ? (size_t)(uintptr_t)p - 1 : SIZE_MAX;
}

static double width_of(choice_t *c, const expr_t *e)
{
    const expr_t *b = idmap_get(&c->wcache, e);
    if (b)
        return c->wbox[(uintptr_t)b - 1];
    char *t = expr_to_latex_inline(c->w->g, e);
    double wd = layout_width(t);
    free(t);
    if (c->nbox == c->capbox) {
        c->capbox = c->capbox ? 2 * c->capbox : 1024;
        c->wbox = xrealloc(c->wbox, c->capbox * sizeof *c->wbox);
    }
    c->wbox[c->nbox++] = wd;
    idmap_put(&c->wcache, e, (const expr_t *)(uintptr_t)c->nbox);
    return wd;
}

/* Whether a variable of G is called NAME (or NAME' ...). */
static bool name_taken(const expr_graph_t *g, const char *name)
{
    size_t len = strlen(name);
    uint32_t nv = expr_graph_nvars(g);
    for (uint32_t v = 0; v < nv; v++) {
        const char *o = expr_var_name(g, v);
        if (strncmp(o, name, len) == 0 && (o[len] == '\0' || o[len] == '\''))
            return true;
    }
    return false;
}

/* The sines and cosines of a variable are named after what they are,
 * s_x and c_x (x a coordinate's or parameter's name), when no variable
 * is called so: narrower than k_{123} wherever they are referred to. */
static void trig_names(choice_t *c)
{
    expr_graph_t *g = c->w->g;
    c->tname = xcalloc(c->n + 1, sizeof *c->tname);
    for (size_t k = 0; k < c->n; k++) {
        const expr_t *x = c->order[k];
        if ((x->op != EXPR_SIN && x->op != EXPR_COS) || x->nargs != 1)
            continue;
        const expr_t *a = expr_unguarded(x->args[0]);
        if (a->op != EXPR_VAR)
            continue;
        const char *v = expr_var_name(g, a->var);
        bool ident = v[0] != '\0';
        for (const char *p = v; *p && ident; p++)
            ident = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                    (p > v && *p >= '0' && *p <= '9');
        if (!ident || strlen(v) > 24)
            continue;
        char name[32];
        snprintf(name, sizeof name, "%c_%s", x->op == EXPR_SIN ? 's' : 'c',
                 v);
        bool twice = false; /* (a node met again under a guard) */
        for (size_t j = 0; j < k && !twice; j++)
            twice = c->tname[j] && strcmp(c->tname[j], name) == 0;
        if (!twice && !name_taken(g, name))
            c->tname[k] = xstrdup(name);
    }
}

/* A variable for the name of the node at place K, a sine or cosine
 * named after its variable typeset as s_{…}, c_{…} with that variable's
 * LaTeX (c_{\mathrm{lam}}, not c_{lam}). */
static uint32_t declare_name(choice_t *c, size_t k, const char *name)
{
    expr_graph_t *g = c->w->g;
    uint32_t v = expr_var_declare(g, name);
    if (c->tname[k]) {
        const expr_t *x = c->order[k];
        char *arg = expr_to_latex(g, expr_unguarded(x->args[0]));
        size_t len = strlen(arg) + 8;
        char *t = xmalloc(len);
        snprintf(t, len, "%c_{%s}", x->op == EXPR_SIN ? 's' : 'c', arg);
        expr_var_set_latex(g, v, t);
        free(t);
        free(arg);
    }
    return v;
}

/* The width of the name of the node at place K. */
static double name_width(choice_t *c, size_t k, double wname);

/* The placeholder symbol of the node at place K. */
static const expr_t *placeholder(choice_t *c, size_t k)
{
    if (!c->sym[k]) {
        char name[32];
        if (c->tname[k])
            snprintf(name, sizeof name, "%s", c->tname[k]);
        else
            snprintf(name, sizeof name, "k%zu", k + 1);
        expr_graph_t *g = c->w->g;
        uint32_t v = declare_name(c, k, name);
        expr_var_set_rank(g, v, expr_rank(g, c->order[k]));
        c->sym[k] = expr_var(g, v);
    }
    return c->sym[k];
}

/* What the child X of a node prints as: its name, or its printed node. */
static const expr_t *child_shown(choice_t *c, const expr_t *x)
{
    x = expr_unguarded(x);
    if (is_leaf(x))
        return x;
    size_t k = place_of(c, x);
    return c->named[k] ? placeholder(c, k) : c->shown[k];
}

static void reshow(choice_t *c, size_t k)
{
    const expr_t *x = c->order[k];
    const expr_t *al[8];
    const expr_t **a = x->nargs <= 8 ? al : xmalloc(x->nargs * sizeof *a);
    for (uint32_t i = 0; i < x->nargs; i++)
        a[i] = child_shown(c, x->args[i]);
    c->shown[k] = rebuild(c->w->g, x, a);
    if (a != al)
        free(a);
    c->width[k] = width_of(c, c->shown[k]);
}

/* Bottom up: the printed nodes and their widths, naming the widest
 * children of a node that would not fit a line (PIECE points). */
static void pass_up(choice_t *c, double piece)
{
    memset(c->forced, 0, c->n * sizeof *c->forced);
    for (size_t k = 0; k < c->n; k++) {
        reshow(c, k);
        const expr_t *x = c->order[k];
        while (x->op != EXPR_ADD && c->width[k] > piece) {
            size_t best = SIZE_MAX;
            for (uint32_t i = 0; i < x->nargs; i++) {
                const expr_t *a = expr_unguarded(x->args[i]);
                if (is_leaf(a))
                    continue;
                size_t j = place_of(c, a);
                if (!c->named[j] &&
                    (best == SIZE_MAX || c->width[j] > c->width[best]))
                    best = j;
            }
            if (best == SIZE_MAX)
                break; /* nothing left to name: it stays wide */
            c->named[best] = c->forced[best] = true;
            reshow(c, k);
        }
    }
}

/* Top down: how often each node is printed, and whether its name saves
 * width (WNAME the width of a name), decided parents first, so that a
 * node's count follows from its parents' decisions in the same pass. */
static void pass_down(choice_t *c, double wname)
{
    where_t *w = c->w;
    memset(c->occ, 0, c->n * sizeof *c->occ);
    for (size_t i = 0; i < w->nroot; i++)
        if (!is_leaf(w->root[i]))
            c->occ[place_of(c, w->root[i])] += 1;
    for (size_t k = c->n; k-- > 0;) {
        if (!c->forced[k]) {
            double wn = name_width(c, k, wname);
            double save = (c->occ[k] - 1) * (c->width[k] - wn);
            c->named[k] = c->occ[k] >= 2 && save > wn + ROW_COST;
        }
        const expr_t *x = c->order[k];
        double times = c->named[k] ? 1 : c->occ[k];
        for (uint32_t i = 0; i < x->nargs; i++) {
            const expr_t *a = expr_unguarded(x->args[i]);
            if (!is_leaf(a))
                c->occ[place_of(c, a)] += times;
        }
    }
}

/* X in the final names: a named node its name (FIN maps it once made),
 * an inline one rebuilt from its children's final forms (memoised in
 * FIN too, boxed apart from the names by being no variable).  TOP: X
 * is a root, shown in full even when it is named itself. */
static const expr_t *final_form(choice_t *c, const expr_t *x, idmap_t *fin,
                                bool top)
{
    if (is_leaf(x))
        return x;
    const expr_t *m = idmap_get(fin, x);
    size_t k = place_of(c, x);
    if (m && (!top || !c->named[k] || m->op != EXPR_VAR))
        return m;
    const expr_t *al[8] = {NULL};
    const expr_t **a = x->nargs <= 8 ? al : xmalloc(x->nargs * sizeof *a);
    for (uint32_t i = 0; i < x->nargs; i++)
        a[i] = final_form(c, expr_unguarded(x->args[i]), fin, false);
    const expr_t *y = rebuild(c->w->g, x, a);
    if (a != al)
        free(a);
    if (!c->named[k])
        idmap_put(fin, x, y);
    return y;
}

/* The named places of C referred to by the printed node E (placeholders
 * met below it), into DEP (a set by place), their count added to *N. */
static void deps_of(choice_t *c, const expr_t *e, const size_t *var_place,
                    size_t nvar, bool *dep, size_t *n)
{
    if (e->op == EXPR_VAR) {
        if (e->var < nvar && var_place[e->var] != SIZE_MAX &&
            !dep[var_place[e->var]]) {
            dep[var_place[e->var]] = true;
            ++*n;
        }
        return;
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        deps_of(c, e->args[i], var_place, nvar, dep, n);
}

static double name_width(choice_t *c, size_t k, double wname)
{
    return c->tname[k] ? width_of(c, placeholder(c, k)) : wname;
}

/* The width of a `where` row as display.c writes it: "k_{…} = " and the
 * definition with its fractions inline. */
static double row_width(choice_t *c, size_t k, double wname)
{
    char *t = expr_to_latex_inline(c->w->g, c->shown[k]);
    double wd = name_width(c, k, wname) + 13.34 + layout_width(t);
    free(t);
    return wd;
}

/* The width of the last line of the row of place K when it is broken
 * between its terms as display.c breaks it (a row wider than a line). */
static double last_line_width(choice_t *c, size_t k, double at,
                              double wname, double line_pt, bool *fits)
{
    char *lines = layout_latex_lines_inline(c->w->g, c->shown[k],
                                            at + wname + 13.34, line_pt,
                                            fits);
    const char *last = strrchr(lines, '\n');
    double wd = last ? LAYOUT_INDENT_PT + layout_width(last + 1)
                     : at + wname + 13.34 + layout_width(lines);
    free(lines);
    return wd;
}

/* The named places in the order display.c will print them (SEQ): a line
 * is filled with the widest rows that fit it among those whose names
 * are all defined, a row wider than a line is alone on its lines. */
static void pack_order(choice_t *c, double line_pt, double wname, size_t *seq)
{
    expr_graph_t *g = c->w->g;
    size_t nv = expr_graph_nvars(g);
    size_t *var_place = xmalloc((nv + 1) * sizeof *var_place);
    for (size_t v = 0; v < nv; v++)
        var_place[v] = SIZE_MAX;
    for (size_t k = 0; k < c->n; k++)
        if (c->sym[k])
            var_place[c->sym[k]->var] = k;
    size_t *left = xcalloc(c->n + 1, sizeof *left); /* undefined deps */
    double *wd = xcalloc(c->n + 1, sizeof *wd);
    bool *dep = xcalloc(c->n + 1, sizeof *dep);
    size_t **users = xcalloc(c->n + 1, sizeof *users);
    size_t *nusers = xcalloc(c->n + 1, sizeof *nusers);
    bool *done = xcalloc(c->n + 1, sizeof *done);
    size_t nn = 0;
    for (size_t k = 0; k < c->n; k++) {
        if (!c->named[k])
            continue;
        nn++;
        wd[k] = row_width(c, k, wname);
        memset(dep, 0, c->n * sizeof *dep);
        size_t nd = 0;
        deps_of(c, c->shown[k], var_place, nv, dep, &nd);
        for (size_t j = 0; j < c->n; j++) {
            if (!dep[j] || j == k || !c->named[j])
                continue;
            left[k]++;
            users[j] = xrealloc(users[j], (nusers[j] + 1) * sizeof **users);
            users[j][nusers[j]++] = k;
        }
    }
    double sep = layout_width(WHERE_SEP);
    double room = line_pt - layout_width(WHERE_LEAD), used = 0;
    for (size_t placed = 0; placed < nn;) {
        size_t best = SIZE_MAX;
        for (size_t k = 0; k < c->n; k++) {
            if (!c->named[k] || done[k] || left[k])
                continue;
            double need = used > 0 ? used + sep + wd[k] : wd[k];
            if (need <= room && (best == SIZE_MAX || wd[k] > wd[best]))
                best = k;
        }
        if (best == SIZE_MAX && used > 0) {
            /* a row longer than a line may start on what is left of this
             * one, when that is WHERE_LONG_START or more */
            size_t lng = SIZE_MAX;
            if (room - used - sep >= WHERE_LONG_START)
                for (size_t k = 0; k < c->n && lng == SIZE_MAX; k++)
                    if (c->named[k] && !done[k] && !left[k] &&
                        wd[k] > line_pt)
                        lng = k;
            bool fits = false;
            double after = lng == SIZE_MAX ? 0
                           : last_line_width(c, lng, used + sep, wname,
                                             line_pt, &fits);
            if (lng != SIZE_MAX && fits) {
                seq[placed++] = lng;
                done[lng] = true;
                used = after;
                room = line_pt;
                for (size_t u = 0; u < nusers[lng]; u++)
                    left[users[lng][u]]--;
                continue;
            }
            room = line_pt;
            used = 0;
            continue;
        }
        bool alone = false;
        if (best == SIZE_MAX) {
            /* nothing fits an empty line: the first ready one alone */
            for (size_t k = 0; k < c->n && best == SIZE_MAX; k++)
                if (c->named[k] && !done[k] && !left[k])
                    best = k;
            alone = true;
        }
        if (best == SIZE_MAX)
            break; /* (a cycle cannot happen: the graph is acyclic) */
        seq[placed++] = best;
        done[best] = true;
        used = used > 0 ? used + sep + wd[best] : wd[best];
        if (alone) {
            /* broken between its terms: the rows after it go on its last
             * line while they fit */
            room = line_pt;
            used = last_line_width(c, best, 0, wname, line_pt, NULL);
        }
        for (size_t u = 0; u < nusers[best]; u++)
            left[users[best][u]]--;
    }
    for (size_t k = 0; k < c->n; k++)
        free(users[k]);
    free(users);
    free(nusers);
    free(var_place);
    free(left);
    free(wd);
    free(dep);
    free(done);
}

int where_solve(where_t *w, const char *prefix, double line_pt)
{
    expr_graph_t *g = w->g;
    drop_variables(w);
    /* 2: simplified bottom up: angle sums contracted, common factors
     * taken out.  (Simplifying each node in full, simp_simplify, made the
     * bicycle's Kane rows longer, 16.9 against 15.3 thousand characters:
     * multiplied out, a node shares less with the others.) */
    contract_all(w);
    simp_light(w->s, true);
    factor_all(w);
    simp_light(w->s, false);

    choice_t c;
    memset(&c, 0, sizeof c);
    c.w = w;
    idmap_t seen = {NULL, 0};
    c.n = post_order(w->root, w->nroot, &seen, &c.order);
    free(seen.v);
    if (c.n > WHERE_MAX_NODES) {
        free(c.order);
        return -1;
    }
    for (size_t k = 0; k < c.n; k++)
        idmap_put(&c.index, c.order[k], (const expr_t *)(uintptr_t)(k + 1));
    c.named = xcalloc(c.n + 1, sizeof *c.named);
    c.forced = xcalloc(c.n + 1, sizeof *c.forced);
    c.width = xcalloc(c.n + 1, sizeof *c.width);
    c.occ = xcalloc(c.n + 1, sizeof *c.occ);
    c.shown = xcalloc(c.n + 1, sizeof *c.shown);
    c.sym = xcalloc(c.n + 1, sizeof *c.sym);
    trig_names(&c);
    /* a name as wide as k_{123}; a piece fits a continuation line after
     * its operator */
    char wn[64];
    snprintf(wn, sizeof wn, "%s_{%zu}", prefix, c.n > 99 ? c.n : 99);
    double wname = layout_width(wn);
    double piece = line_pt - LAYOUT_INDENT_PT - 13.0 - wname;
    for (int round = 0; round < ROUNDS; round++) {
        pass_up(&c, piece);
        pass_down(&c, wname);
    }
    pass_up(&c, piece);
    if (getenv("NH_WHERE_DEBUG"))
        for (size_t k = 0; k < c.n; k++) {
            char *t = expr_to_text(g, c.shown[k]);
            fprintf(stderr, "%zu id=%u op=%d occ=%g w=%.1f named=%d%s: %s\n",
                    k, c.order[k]->id, (int)c.order[k]->op, c.occ[k],
                    c.width[k], c.named[k], c.forced[k] ? "F" : "", t);
            free(t);
        }

    /* 4: the order of the names: the rows packed several to a line
     * (display.c packs them in this order), first fit by width among
     * those whose names are defined already */
    size_t nn = 0;
    for (size_t k = 0; k < c.n; k++)
        nn += c.named[k];
    size_t *seq = xcalloc(nn + 1, sizeof *seq);
    pack_order(&c, line_pt, wname, seq);

    /* 5: the final names in that order, the definitions and the roots in
     * their terms */
    idmap_t fin = {NULL, 0};
    size_t numbered = 0;
    w->sym = xcalloc(nn + 1, sizeof *w->sym);
    w->def = xcalloc(nn + 1, sizeof *w->def);
    for (size_t j = 0; j < nn; j++) {
        size_t k = seq[j];
        const expr_t *y = final_form(&c, c.order[k], &fin, false);
        char name[64];
        if (c.tname[k])
            snprintf(name, sizeof name, "%s", c.tname[k]);
        else
            snprintf(name, sizeof name, "%s%zu", prefix, ++numbered);
        uint32_t v = declare_name(&c, k, name);
        expr_var_set_rank(g, v, expr_rank(g, y));
        w->sym[w->nname] = expr_var(g, v);
        w->def[w->nname++] = y;
        idmap_put(&fin, c.order[k], expr_var(g, v));
    }
    free(seq);
    w->out = xcalloc(w->nroot + 1, sizeof *w->out);
    for (size_t i = 0; i < w->nroot; i++)
        w->out[i] = is_leaf(w->root[i])
                        ? w->root[i]
                        : final_form(&c, w->root[i], &fin, true);
    free(fin.v);
    free(c.order);
    free(c.index.v);
    free(c.named);
    free(c.forced);
    free(c.width);
    free(c.occ);
    free(c.shown);
    free(c.sym);
    for (size_t k = 0; k < c.n; k++)
        free(c.tname[k]);
    free(c.tname);
    free(c.wcache.v);
    free(c.wbox);
    return 0;
}
