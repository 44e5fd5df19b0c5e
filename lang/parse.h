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

/* Where statements end, for a reader that gets its text a line at a
 * time (the REPL, `nh -`): the scanner's state carried from one line to
 * the next, so that each line is scanned once and the text is parsed
 * only when a statement may have ended.  Zeroed: nothing open. */
typedef struct parse_lines {
    unsigned depth; /* open ( and [ */
    int last_tok;   /* the last token so far; 0: none */
} parse_lines_t;

/* Scans LINE (LEN bytes, ending in its '\n') after the lines summed up
 * in *ST, and updates *ST.  Returns true when a statement is open at its
 * end — an open bracket, a trailing operator, comma, '=', ':' or '>' —
 * so that the next line continues it; false when the text may be parsed
 * (which also reports a lexical error in LINE: then *ST is unchanged). */
bool parse_lines_open(parse_lines_t *st, const char *line, size_t len);

/* Limits, so hostile input gets an error instead of exhausting the stack. */
#define PARSE_MAX_DEPTH AST_MAX_DEPTH /* nesting of brackets and operators */
#define PARSE_MAX_LINE 65536     /* bytes in one line */

#endif
