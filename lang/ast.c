/*
 * ast.c — the arena that holds a parse, and the tree's constructors.
 *
 * The arena is a chain of chunks with a bump pointer: allocation is a
 * pointer increment, and freeing the arena frees every node at once, so a
 * parse that stops half-way cannot leak.  Expression nodes carry their
 * height next to them (hidden from ast.h) so that the depth limit of
 * parse.h is checked in O(1) per node.  Must not: resolve names or check
 * meaning; print.
 */
#include "lang/ast.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"
#include "lang/ast_build.h"
#include "lang/parse.h"

/* ---- arena ------------------------------------------------------------ */

#define AST_CHUNK_SIZE ((size_t)64 * 1024)
#define AST_ALIGN alignof(max_align_t)

typedef struct ast_chunk ast_chunk_t;
struct ast_chunk {
    ast_chunk_t *next;
    size_t size, used; /* bytes of data[] */
    alignas(max_align_t) unsigned char data[];
};

struct ast_arena {
    ast_chunk_t *head; /* the chunk being filled; older ones follow */
};

static void *ast_xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        nh_out_of_memory();
    return p;
}

ast_arena_t *ast_arena_new(void)
{
    ast_arena_t *a = ast_xmalloc(sizeof *a);
    a->head = NULL;
    return a;
}

void ast_arena_free(ast_arena_t *arena)
{
    if (!arena)
        return;
    ast_chunk_t *c = arena->head;
    while (c) {
        ast_chunk_t *next = c->next;
        free(c);
        c = next;
    }
    free(arena);
}

static ast_chunk_t *ast_chunk_new(size_t size)
{
    if (size > SIZE_MAX - sizeof(ast_chunk_t))
        nh_out_of_memory();
    ast_chunk_t *c = ast_xmalloc(sizeof(ast_chunk_t) + size);
    c->size = size;
    c->used = 0;
    c->next = NULL;
    return c;
}

void *ast_alloc(ast_arena_t *arena, size_t size)
{
    if (size == 0)
        size = 1;
    if (size > SIZE_MAX - AST_ALIGN)
        nh_out_of_memory();
    size_t need = (size + AST_ALIGN - 1) & ~(AST_ALIGN - 1);
    ast_chunk_t *c = arena->head;
    if (!c || c->size - c->used < need) {
        if (need > AST_CHUNK_SIZE / 4) {
            /* A big block gets a chunk of its own, behind the current one,
             * so the current chunk's free space is not thrown away. */
            ast_chunk_t *big = ast_chunk_new(need);
            big->used = need;
            if (c) {
                big->next = c->next;
                c->next = big;
            } else {
                arena->head = big;
            }
            memset(big->data, 0, size);
            return big->data;
        }
        c = ast_chunk_new(AST_CHUNK_SIZE);
        c->next = arena->head;
        arena->head = c;
    }
    void *p = c->data + c->used;
    c->used += need;
    memset(p, 0, size);
    return p;
}

char *ast_strndup(ast_arena_t *arena, const char *s, size_t n)
{
    if (n == SIZE_MAX)
        nh_out_of_memory();
    char *p = ast_alloc(arena, n + 1);
    if (n)
        memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

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
    if (h > PARSE_MAX_DEPTH)
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
    o->span = span;
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

ast_stmt_t *ast_stmt_sweep(ast_arena_t *arena, ast_ident_t name,
                           ast_expr_t *from, ast_expr_t *to,
                           ast_expr_t *step, ast_ident_t file,
                           ast_list_t *body, src_span_t head,
                           src_span_t span)
{
    ast_stmt_t *s = ast_stmt_new(arena, STMT_SWEEP, span);
    s->u.sweep.name = name;
    s->u.sweep.from = from;
    s->u.sweep.to = to;
    s->u.sweep.step = step;
    s->u.sweep.head = head;
    s->to_file.name = file.name;
    s->to_file.span = file.name ? file.span : SRC_SPAN_NONE;
    size_t n = ast_list_len(body), k = 0;
    s->u.sweep.body = ast_alloc(arena, (n ? n : 1) * sizeof(ast_stmt_t *));
    for (size_t i = 0; i < n; i++)
        if (body->items[i]) /* an empty statement: `;;` */
            s->u.sweep.body[k++] = body->items[i];
    s->u.sweep.n = k;
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

/* ---- names ------------------------------------------------------------ */

const char *ast_stmt_keyword(ast_stmt_kind_t kind)
{
    switch (kind) {
    case STMT_PARAM: return "param";
    case STMT_COORD: return "coord";
    case STMT_SPEED: return "speed";
    case STMT_LET: return "let";
    case STMT_KINETIC: return "kinetic";
    case STMT_POTENTIAL: return "potential";
    case STMT_LAGRANGIAN: return "lagrangian";
    case STMT_PARTICLE: return "particle";
    case STMT_FORCE: return "force";
    case STMT_CONSTRAINT: return "constraint";
    case STMT_KINEMATIC: return "kinematic";
    case STMT_EQUATIONS: return "equations";
    case STMT_INITIAL: return "initial";
    case STMT_SIMULATE: return "simulate";
    case STMT_RESET: return "reset";
    case STMT_PRINT: return "print";
    case STMT_ACCEL: return "accel";
    case STMT_TABLE: return "table";
    case STMT_PLOT: return "plot";
    case STMT_SHOW: return "show";
    case STMT_CHECK: return "check";
    case STMT_COMPARE: return "compare";
    case STMT_WORKSHEET: return "worksheet";
    case STMT_SET: return "set";
    case STMT_LOAD: return "load";
    case STMT_IMPORT: return "import";
    case STMT_HELP: return "help";
    case STMT_EXPORT: return "export";
    case STMT_QUIT: return "quit";
    case STMT_EXIT: return "exit";
    case STMT_FRAME: return "frame";
    case STMT_BODY: return "body";
    case STMT_GRAVITY: return "gravity";
    case STMT_TORQUE: return "torque";
    case STMT_LINEARIZE: return "linearize";
    case STMT_EIGEN: return "eigen";
    case STMT_SWEEP: return "sweep";
    case STMT_PLOT_SWEEP: return "plot sweep";
    }
    return "?";
}
