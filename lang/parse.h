/*
 * parse.h — text to AST: the reentrant flex scanner and the pure bison
 * parser behind one call.
 *
 * Ownership: the program's nodes go into the caller's arena; nothing else
 * is allocated that outlives the call.  Must not: resolve names or know
 * mechanics; print anything (errors go into the diag_t).
 */
#ifndef NH_PARSE_H
#define NH_PARSE_H

#include "lang/ast.h"
#include "lang/source.h"

typedef enum parse_status {
    PARSE_OK,
    PARSE_ERROR,      /* a syntax error, described in *err */
    PARSE_INCOMPLETE, /* the text ends inside a statement (an open bracket,
                         a trailing operator or comma, an unterminated
                         string): the REPL asks for another line */
} parse_status_t;

/* Parses the whole of file FILE of SET into *OUT (statements in order).
 * On PARSE_ERROR and PARSE_INCOMPLETE, *err holds the location and message
 * and *out is empty. */
parse_status_t parse_program(const source_set_t *set, uint32_t file,
                             ast_arena_t *arena, ast_program_t *out,
                             diag_t *err);

/* Limits, so hostile input gets an error instead of exhausting the stack. */
#define PARSE_MAX_DEPTH 200      /* nesting of brackets and operators */
#define PARSE_MAX_LINE 65536     /* bytes in one line */

#endif
