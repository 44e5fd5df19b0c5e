/*
 * ast_build.c — the tree's constructors (ast_build.h), which the
 * grammar's actions call.
 *
 * Expression nodes carry their height next to them (hidden from ast.h) so
 * that the depth limit AST_MAX_DEPTH is checked in O(1) per node.  Must
 * not: resolve names or check meaning; print; use the parser (parse.h
 * uses this file: the arrow points one way).
 */
#include "lang/ast_build.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"

/* ---- lists ------------------------------------------------------------ */

ast_list_t *ast_list_new(ast_arena_t *arena)
{
    return ast_alloc(arena, sizeof(ast_list_t));
}

ast_list_t *ast_list_push(ast_arena_t *arena, ast_list_t *list, void *item)
{
    if (!list)
        list = ast_list_new(arena);
    if (list->n == list->cap) {
        size_t cap = list->cap ? 2 * list->cap : 4;
        if (cap > SIZE_MAX / sizeof(void *))
            nh_out_of_memory();
        void **items = ast_alloc(arena, cap * sizeof(void *));
        if (list->n)
            memcpy(items, list->items, list->n * sizeof(void *));
        list->items = items;
        list->cap = cap;
    }
    list->items[list->n++] = item;
    return list;
}

static size_t ast_list_len(const ast_list_t *list)
{
    return list ? list->n : 0;
}

ast_ident_t ast_ident(const char *name, src_span_t span)
{
    ast_ident_t id = {name, span};
    return id;
}

ast_ident_t *ast_ident_new(ast_arena_t *arena, ast_ident_t id)
{
    ast_ident_t *p = ast_alloc(arena, sizeof *p);
    *p = id;
    return p;
}

/* ---- expressions ------------------------------------------------------ */

/* Every expression node the parser makes is one of these; the node is the
 * first member, so a node pointer is also a pointer to its wrapper. */
typedef struct ast_expr_node {
    ast_expr_t e;
    unsigned height;
} ast_expr_node_t;

unsigned ast_expr_height(const ast_expr_t *e)
{
    return e ? ((const ast_expr_node_t *)e)->height : 0;
}

/* A new node of height H, or NULL when H is over the limit. */
static ast_expr_t *ast_expr_new(ast_arena_t *arena, ast_expr_kind_t kind,
                                unsigned h, src_span_t span)
{
    if (h > AST_MAX_DEPTH)
        return NULL;
    ast_expr_node_t *n = ast_alloc(arena, sizeof *n);
    n->height = h;
    n->e.kind = kind;
    n->e.span = span;
    n->e.name_span = SRC_SPAN_NONE;
    return &n->e;
}

static unsigned ast_max(unsigned a, unsigned b)
{
    return a > b ? a : b;
}

ast_expr_t *ast_num(ast_arena_t *arena, double value, src_span_t span)
{
    ast_expr_t *e = ast_expr_new(arena, AST_NUM, 1, span);
    e->num = value;
    return e;
}

ast_expr_t *ast_name(ast_arena_t *arena, const char *name, src_span_t span)
{
    ast_expr_t *e = ast_expr_new(arena, AST_NAME, 1, span);
    e->name = name;
    return e;
}

ast_expr_t *ast_unop(ast_arena_t *arena, ast_expr_kind_t kind, ast_expr_t *a,
                     src_span_t span)
{
    ast_expr_t *e = ast_expr_new(arena, kind, ast_expr_height(a) + 1, span);
    if (e)
        e->a = a;
    return e;
}

ast_expr_t *ast_binop(ast_arena_t *arena, ast_expr_kind_t kind,
                      ast_expr_t *a, ast_expr_t *b, src_span_t span)
{
    unsigned h = ast_max(ast_expr_height(a), ast_expr_height(b)) + 1;
    ast_expr_t *e = ast_expr_new(arena, kind, h, span);
    if (e) {
        e->a = a;
        e->b = b;
    }
    return e;
}

/* Copies the list's pointers into an array of the arena; returns the
 * tallest element's height in *H. */
static ast_expr_t **ast_expr_array(ast_arena_t *arena, const ast_list_t *l,
                                   size_t *n, unsigned *h)
{
    *n = ast_list_len(l);
    *h = 0;
    if (*n == 0)
        return NULL;
    ast_expr_t **v = ast_alloc(arena, *n * sizeof *v);
    for (size_t i = 0; i < *n; i++) {
        v[i] = l->items[i];
        *h = ast_max(*h, ast_expr_height(v[i]));
    }
    return v;
}

ast_expr_t *ast_call(ast_arena_t *arena, ast_ident_t callee, ast_list_t *args,
                     src_span_t span)
{
    size_t n;
    unsigned h;
    ast_expr_t **v = ast_expr_array(arena, args, &n, &h);
    ast_expr_t *e = ast_expr_new(arena, AST_CALL, h + 1, span);
    if (e) {
        e->name = callee.name;
        e->name_span = callee.span;
        e->args = v;
        e->nargs = n;
    }
    return e;
}

ast_expr_t *ast_vector(ast_arena_t *arena, ast_list_t *items, src_span_t span)
{
    size_t n;
    unsigned h;
    ast_expr_t **v = ast_expr_array(arena, items, &n, &h);
    ast_expr_t *e = ast_expr_new(arena, AST_VECTOR, h + 1, span);
    if (e) {
        e->args = v;
        e->nargs = n;
    }
    return e;
}

ast_expr_t *ast_member(ast_arena_t *arena, const char *text, src_span_t span)
{
    ast_expr_t *e = ast_expr_new(arena, AST_MEMBER, 1, span);
    const char *dot = strchr(text, '.');
    size_t n = (size_t)(dot - text);
    e->name = ast_strndup(arena, text, n);
    e->member = dot + 1;
    e->name_span = span;
    e->name_span.end = span.begin + (uint32_t)n;
    return e;
}

ast_expr_t *ast_paren(ast_expr_t *e, src_span_t span)
{
    e->span = span;
    return e;
}

/* ---- statement parts -------------------------------------------------- */

ast_binding_t *ast_binding_new(ast_arena_t *arena, ast_ident_t name,
                               unsigned primes, ast_expr_t *value,
                               src_span_t span)
{
    ast_binding_t *b = ast_alloc(arena, sizeof *b);
    b->name = name;
    b->primes = primes;
    b->guess = false;
    b->value = value;
    b->span = span;
    return b;
}

ast_binding_t *ast_guess_new(ast_arena_t *arena, ast_ident_t name,
                             unsigned primes, ast_expr_t *value,
                             src_span_t span)
{
    ast_binding_t *b = ast_binding_new(arena, name, primes, value, span);
    b->guess = true;
    return b;
}

ast_sim_option_t *ast_sim_option_new(ast_arena_t *arena,
                                     ast_sim_option_kind_t kind,
                                     ast_expr_t *value, ast_ident_t ident,
                                     src_span_t span)
{
    ast_sim_option_t *o = ast_alloc(arena, sizeof *o);
    o->kind = kind;
    o->value = value;
    o->ident = ident;
    o->h = ast_ident(NULL, SRC_SPAN_NONE);
    o->span = span;
    return o;
}

ast_sim_option_t *ast_sim_event_new(ast_arena_t *arena,
                                    ast_sim_option_kind_t kind,
                                    ast_expr_t *expr, ast_expr_t *target,
                                    int dir, src_span_t span)
{
    ast_sim_option_t *o = ast_sim_option_new(
        arena, kind, expr, ast_ident(NULL, SRC_SPAN_NONE), span);
    o->target = target;
    o->dir = dir;
    return o;
}

ast_sim_option_t *ast_sim_integrator_new(ast_arena_t *arena, ast_ident_t name,
                                         ast_ident_t h, ast_expr_t *step,
                                         src_span_t span)
{
    ast_sim_option_t *o =
        ast_sim_option_new(arena, SIM_OPT_INTEGRATOR, step, name, span);
    o->h = h;
    return o;
}

/* ---- statements ------------------------------------------------------- */

ast_stmt_t *ast_stmt_new(ast_arena_t *arena, ast_stmt_kind_t kind,
                         src_span_t span)
{
    ast_stmt_t *s = ast_alloc(arena, sizeof *s);
    s->kind = kind;
    s->span = span;
    s->to_file.span = SRC_SPAN_NONE;
    return s;
}

ast_stmt_t *ast_stmt_bindings(ast_arena_t *arena, ast_stmt_kind_t kind,
                              ast_list_t *bindings, src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, kind, span);
    size_t n = ast_list_len(bindings);
    s->u.bindings.n = n;
    if (n) {
        s->u.bindings.items = ast_alloc(arena, n * sizeof(ast_binding_t));
        for (size_t i = 0; i < n; i++)
            s->u.bindings.items[i] = *(ast_binding_t *)bindings->items[i];
    }
    return s;
}

/* Copies a list of ast_ident_t * into an array. */
static ast_ident_t *ast_ident_array(ast_arena_t *arena, const ast_list_t *l,
                                    size_t *n)
{
    *n = ast_list_len(l);
    if (*n == 0)
        return NULL;
    ast_ident_t *v = ast_alloc(arena, *n * sizeof *v);
    for (size_t i = 0; i < *n; i++)
        v[i] = *(ast_ident_t *)l->items[i];
    return v;
}

ast_stmt_t *ast_stmt_names(ast_arena_t *arena, ast_stmt_kind_t kind,
                           ast_list_t *names, src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, kind, span);
    s->u.names.items = ast_ident_array(arena, names, &s->u.names.n);
    return s;
}

ast_stmt_t *ast_stmt_let(ast_arena_t *arena, ast_ident_t name,
                         bool is_function, ast_list_t *params,
                         ast_expr_t *body, src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, STMT_LET, span);
    s->u.let.name = name;
    s->u.let.is_function = is_function;
    s->u.let.params = ast_ident_array(arena, params, &s->u.let.nparams);
    s->u.let.body = body;
    return s;
}

ast_stmt_t *ast_stmt_energy(ast_arena_t *arena, ast_stmt_kind_t kind,
                            ast_ident_t name, ast_expr_t *value,
                            src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, kind, span);
    s->u.energy.name = name;
    s->u.energy.value = value;
    return s;
}

ast_stmt_t *ast_stmt_particle(ast_arena_t *arena, ast_ident_t name,
                              ast_expr_t *mass, ast_expr_t *position,
                              src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, STMT_PARTICLE, span);
    s->u.particle.name = name;
    s->u.particle.mass = mass;
    s->u.particle.position = position;
    return s;
}

ast_stmt_t *ast_stmt_force(ast_arena_t *arena, ast_stmt_kind_t kind,
                           ast_ident_t target, ast_expr_t *at,
                           ast_expr_t *value, src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, kind, span);
    s->u.force.target = target;
    s->u.force.at = at;
    s->u.force.value = value;
    return s;
}

ast_stmt_t *ast_stmt_frame(ast_arena_t *arena, ast_ident_t name,
                           ast_ident_t parent, ast_expr_t *axis,
                           ast_expr_t *angle, src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, STMT_FRAME, span);
    s->u.frame.name = name;
    s->u.frame.parent = parent;
    s->u.frame.axis = axis;
    s->u.frame.angle = angle;
    return s;
}

ast_stmt_t *ast_stmt_body(ast_arena_t *arena, ast_ident_t name,
                          ast_expr_t *mass, ast_expr_t *position,
                          ast_ident_t frame, ast_expr_t *inertia,
                          src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, STMT_BODY, span);
    s->u.body.name = name;
    s->u.body.mass = mass;
    s->u.body.position = position;
    s->u.body.frame = frame;
    s->u.body.inertia = inertia;
    return s;
}

ast_stmt_t *ast_stmt_gravity(ast_arena_t *arena, ast_expr_t *g,
                             src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, STMT_GRAVITY, span);
    s->u.gravity = g;
    return s;
}

ast_stmt_t *ast_stmt_constraint(ast_arena_t *arena, ast_stmt_kind_t kind,
                                ast_ident_t name, ast_expr_t *lhs,
                                ast_expr_t *rhs, src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, kind, span);
    s->u.constraint.name = name;
    s->u.constraint.lhs = lhs;
    s->u.constraint.rhs = rhs;
    return s;
}

ast_stmt_t *ast_stmt_word(ast_arena_t *arena, ast_stmt_kind_t kind,
                          ast_ident_t word, src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, kind, span);
    s->u.word = word;
    return s;
}

ast_stmt_t *ast_stmt_worksheet(ast_arena_t *arena, bool latex,
                               ast_ident_t name, src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, STMT_WORKSHEET, span);
    s->u.worksheet.name = name;
    s->u.worksheet.latex = latex;
    return s;
}

ast_stmt_t *ast_stmt_simulate(ast_arena_t *arena, ast_expr_t *to,
                              ast_list_t *options, src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, STMT_SIMULATE, span);
    s->u.simulate.to = to;
    size_t n = ast_list_len(options);
    s->u.simulate.noptions = n;
    if (n) {
        s->u.simulate.options = ast_alloc(arena, n * sizeof(ast_sim_option_t));
        for (size_t i = 0; i < n; i++)
            s->u.simulate.options[i] = *(ast_sim_option_t *)options->items[i];
    }
    return s;
}

ast_stmt_t *ast_stmt_output(ast_arena_t *arena, ast_stmt_kind_t kind,
                            ast_list_t *items, ast_expr_t *vs,
                            src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, kind, span);
    unsigned h;
    s->u.output.items = ast_expr_array(arena, items, &s->u.output.n, &h);
    s->u.output.vs = vs;
    return s;
}

ast_stmt_t *ast_stmt_to_file(ast_stmt_t *st, ast_ident_t file,
                             src_span_t span)
{
    st->span = span;
    st->to_file.name = file.name;
    st->to_file.span = file.name ? file.span : SRC_SPAN_NONE;
    return st;
}

ast_stmt_t *ast_stmt_show(ast_arena_t *arena, bool latex, ast_expr_t *e,
                          src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, STMT_SHOW, span);
    s->u.show.latex = latex;
    s->u.show.expr = e;
    return s;
}

ast_stmt_t *ast_stmt_compare(ast_arena_t *arena, ast_ident_t a, ast_ident_t b,
                             ast_expr_t *samples, src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, STMT_COMPARE, span);
    s->u.compare.a = a;
    s->u.compare.b = b;
    s->u.compare.samples = samples;
    return s;
}

ast_sweep_axis_t *ast_sweep_axis_new(ast_arena_t *arena, ast_ident_t name,
                                     ast_expr_t *from, ast_expr_t *to,
                                     ast_expr_t *step, src_span_t span)
{
    ast_sweep_axis_t *a = ast_alloc(arena, sizeof *a);
    a->name = name;
    a->from = from;
    a->to = to;
    a->step = step;
    a->span = span;
    return a;
}

/* BODY's statements into an array, the empty ones (`;;`) dropped; the
 * count into *N. */
static ast_stmt_t **ast_body_array(ast_arena_t *arena, const ast_list_t *body,
                                   size_t *n)
{
    size_t len = ast_list_len(body), k = 0;
    ast_stmt_t **out = ast_alloc(arena, (len ? len : 1) * sizeof *out);
    for (size_t i = 0; i < len; i++)
        if (body->items[i])
            out[k++] = body->items[i];
    *n = k;
    return out;
}

static void ast_set_file(ast_stmt_t *s, ast_ident_t file)
{
    s->to_file.name = file.name;
    s->to_file.span = file.name ? file.span : SRC_SPAN_NONE;
}

ast_stmt_t *ast_stmt_sweep(ast_arena_t *arena, ast_list_t *axes,
                           ast_ident_t file, ast_list_t *body,
                           src_span_t head, src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, STMT_SWEEP, span);
    size_t na = ast_list_len(axes);
    s->u.sweep.naxes = na;
    s->u.sweep.axes = ast_alloc(arena, (na ? na : 1) * sizeof *s->u.sweep.axes);
    for (size_t i = 0; i < na; i++)
        s->u.sweep.axes[i] = *(ast_sweep_axis_t *)axes->items[i];
    s->u.sweep.head = head;
    ast_set_file(s, file);
    s->u.sweep.body = ast_body_array(arena, body, &s->u.sweep.n);
    return s;
}

ast_stmt_t *ast_stmt_follow(ast_arena_t *arena, ast_ident_t name,
                            ast_expr_t *from, ast_expr_t *to,
                            ast_expr_t *step, ast_ident_t file,
                            ast_stmt_t *steady, ast_list_t *rest,
                            src_span_t head, src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, STMT_FOLLOW, span);
    s->u.follow.name = name;
    s->u.follow.from = from;
    s->u.follow.to = to;
    s->u.follow.step = step;
    s->u.follow.head = head;
    ast_set_file(s, file);
    size_t n;
    ast_stmt_t **more = ast_body_array(arena, rest, &n);
    s->u.follow.body = ast_alloc(arena, (n + 1) * sizeof *s->u.follow.body);
    s->u.follow.body[0] = steady;
    for (size_t i = 0; i < n; i++)
        s->u.follow.body[i + 1] = more[i];
    s->u.follow.n = n + 1;
    return s;
}

ast_stmt_t *ast_stmt_lyapunov(ast_arena_t *arena, ast_expr_t *to,
                              ast_expr_t *step, ast_list_t *vars,
                              src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, STMT_LYAPUNOV, span);
    s->u.lyapunov.to = to;
    s->u.lyapunov.step = step;
    unsigned h;
    s->u.lyapunov.vars = ast_expr_array(arena, vars, &s->u.lyapunov.nvars, &h);
    return s;
}

ast_stmt_t *ast_stmt_transfer(ast_arena_t *arena, ast_ident_t out,
                              ast_ident_t in, ast_ident_t svar,
                              ast_expr_t *value, src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, STMT_TRANSFER, span);
    s->u.transfer.out = out;
    s->u.transfer.in = in;
    s->u.transfer.svar = svar;
    s->u.transfer.s = value;
    return s;
}

ast_stmt_t *ast_stmt_bode(ast_arena_t *arena, ast_ident_t out, ast_ident_t in,
                          ast_expr_t *w1, ast_expr_t *w2, src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, STMT_BODE, span);
    s->u.transfer.out = out;
    s->u.transfer.in = in;
    s->u.transfer.svar = ast_ident(NULL, SRC_SPAN_NONE);
    s->u.transfer.w1 = w1;
    s->u.transfer.w2 = w2;
    return s;
}

ast_stmt_t *ast_stmt_draw(ast_arena_t *arena, ast_ident_t kind,
                          ast_list_t *args, ast_ident_t mark_word,
                          ast_expr_t *mark, ast_ident_t trail_word,
                          src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, STMT_DRAW, span);
    s->u.draw.kind = kind;
    unsigned h;
    s->u.draw.args = ast_expr_array(arena, args, &s->u.draw.nargs, &h);
    s->u.draw.mark_word = mark_word;
    s->u.draw.mark = mark;
    s->u.draw.trail_word = trail_word;
    s->u.draw.trail = trail_word.name != NULL;
    return s;
}

ast_stmt_t *ast_stmt_animate(ast_arena_t *arena, ast_expr_t *speed,
                             ast_ident_t view, ast_expr_t *az, ast_expr_t *el,
                             src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, STMT_ANIMATE, span);
    s->u.animate.speed = speed;
    s->u.animate.view = view;
    s->u.animate.az = az;
    s->u.animate.el = el;
    return s;
}

ast_stmt_t *ast_stmt_path(ast_arena_t *arena, ast_stmt_kind_t kind,
                          ast_ident_t path, src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, kind, span);
    s->u.path.path = path.name;
    s->u.path.span = path.span;
    return s;
}

ast_stmt_t *ast_stmt_export(ast_arena_t *arena, ast_ident_t format,
                            ast_ident_t path, src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, STMT_EXPORT, span);
    s->u.export_.format = format;
    s->u.export_.path = path.name;
    s->u.export_.span = path.span;
    return s;
}

void ast_program_from_list(ast_arena_t *arena, ast_list_t *stmts,
                           ast_program_t *program)
{
    program->n = ast_list_len(stmts);
    program->stmts = NULL;
    if (program->n) {
        program->stmts = ast_alloc(arena, program->n * sizeof *program->stmts);
        for (size_t i = 0; i < program->n; i++)
            program->stmts[i] = stmts->items[i];
    }
}

