/*
 * parse_impl.h — what the scanner (lexer.l), the grammar (parser.y) and
 * parse.c share: one parse's context.  Internal to lang/.
 *
 * Ownership: the context lives on parse_program's stack for one call; it
 * borrows the text (from the source set), the arena and the diag_t.
 * Must not: outlive the call; be seen outside lang/.
 */
#ifndef NH_PARSE_IMPL_H
#define NH_PARSE_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "lang/ast.h"
#include "lang/ast_build.h"
#include "lang/parse.h"
#include "lang/source.h"

typedef struct parse_ctx {
    /* input */
    const source_set_t *set; /* for line numbers in messages */
    const char *text; /* LEN bytes, NUL after them */
    uint32_t len;
    uint32_t file;
    ast_arena_t *arena;
    diag_t *diag;

    /* scanner state */
    uint32_t offset;     /* bytes consumed so far */
    uint32_t line_start; /* offset of the current line's first byte */
    unsigned depth;      /* open ( and [ */
    uint32_t open_at[PARSE_MAX_DEPTH]; /* where each open one is */
    int last_tok;        /* the last token handed to the parser, 0: none */
    int ctx_word;        /* 1 + the index of the contextual keyword the
                          * statement may have next (lexer.l: from, about,
                          * by in `frame`, inertia in `body`), or 0 */
    int stmt_tok;        /* the first token of the current statement */
    int cur_tok;         /* the first token of the innermost statement
                          * (one in a sweep's line, too): the words of
                          * `simulate` are keywords only there */
    bool in_sweep;       /* past the ':' of a sweep: a line's end ends
                          * it, also after a ';' (LANGUAGE.md §7.2) */
    uint32_t last_end;   /* where that token ended */
    bool eof_newline;    /* the implicit end of line at EOF was given */

    /* results */
    bool incomplete; /* the first error is "the text ended too soon" */
    ast_list_t *stmts;
} parse_ctx_t;

#endif
