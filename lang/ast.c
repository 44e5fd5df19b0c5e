/*
 * ast.c — the arena that holds a parse, and the statements' names.
 *
 * The arena is a chain of chunks with a bump pointer: allocation is a
 * pointer increment, and freeing the arena frees every node at once, so a
 * parse that stops half-way cannot leak.  The constructors the grammar
 * calls are in ast_build.c, which builds on this file and not the other
 * way round.  Must not: resolve names or check meaning; print.
 */
#include "lang/ast.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"

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
    case STMT_INPUT: return "input";
    case STMT_OUTPUT: return "output";
    case STMT_DRAW: return "draw";
    case STMT_STEADY: return "steady";
    case STMT_FOLLOW: return "follow";
    case STMT_PLOT_FOLLOW: return "plot follow";
    case STMT_LYAPUNOV: return "lyapunov";
    case STMT_TRANSFER: return "transfer";
    case STMT_BODE: return "bode";
    case STMT_ANIMATE: return "animate";
    }
    return "?";
}
