/*
 * source.h — the texts a session has read, source spans, and diagnostics.
 *
 * Every piece of text nh reads (a script, a REPL statement, an -e
 * argument, a library module) is added to one source_set_t and kept until
 * it is released or the set is freed, so spans stay valid for as long as
 * anything refers to them.  A span is a file index and a half-open byte
 * range.  A text's lines are numbered from its first line number: 1 for a
 * file, and the next number of its stream for the texts of a REPL or a
 * notebook (LANGUAGE.md §9: LINE counts the lines typed since the session
 * began, so `<repl>:12:7` names the 12th line typed).  This module is the
 * only place that turns a span into "FILE:LINE:COL" and draws the caret;
 * nothing else formats errors.
 *
 * Ownership: source_add copies the text; the set owns every copy, until
 * source_release (after which spans into it must not be used: its index
 * is given to a later text).  A diag_t is a plain value owned by its
 * caller.  Must not: print anything except in diag_print.
 */
#ifndef NH_SOURCE_H
#define NH_SOURCE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct src_span {
    uint32_t file;  /* index in the source set; SRC_NO_FILE when none */
    uint32_t begin; /* byte offset of the first character */
    uint32_t end;   /* byte offset one past the last character */
} src_span_t;

#define SRC_NO_FILE UINT32_MAX
#define SRC_SPAN_NONE ((src_span_t){SRC_NO_FILE, 0, 0})

typedef struct source_set source_set_t;

source_set_t *source_set_new(void);
void source_set_free(source_set_t *set); /* accepts NULL */

/* Adds a copy of TEXT (LEN bytes, may contain NUL) under NAME; returns its
 * file index.  Its first line is line 1. */
uint32_t source_add(source_set_t *set, const char *name, const char *text,
                    size_t len);
/* The same, with FIRST_LINE the number of the text's first line. */
uint32_t source_add_at(source_set_t *set, const char *name,
                       unsigned first_line, const char *text, size_t len);
/* Frees the text FILE; its index will be reused.  Accepts an index that
 * is not in use. */
void source_release(source_set_t *set, uint32_t file);
/* How many lines TEXT spans: its newlines, and one more when characters
 * follow the last (0 for an empty text, 1 for "x" and for "x\n"). */
unsigned source_line_count(const source_set_t *set, uint32_t file);
/* The indices in use or free (file indices are below it), and the texts
 * held now. */
size_t source_slots(const source_set_t *set);
size_t source_live(const source_set_t *set);
const char *source_name(const source_set_t *set, uint32_t file);
/* The text, NUL-terminated after LEN bytes. */
const char *source_text(const source_set_t *set, uint32_t file, size_t *len);

/* 1-based line and column (in characters, UTF-8 aware) of byte OFFSET. */
void source_line_col(const source_set_t *set, uint32_t file, uint32_t offset,
                     unsigned *line, unsigned *col);

/* The smallest span that covers both A and B (same file). */
src_span_t src_span_join(src_span_t a, src_span_t b);

/* An error: a message and where it happened (span.file == SRC_NO_FILE when
 * there is no place to point at, e.g. a command-line problem). */
#define DIAG_MSG_MAX 1024
typedef struct diag {
    bool set;
    src_span_t span;
    char msg[DIAG_MSG_MAX];
} diag_t;

/* Records the first error only: a second call on a set diag does nothing,
 * so the innermost, most precise report wins.  Always returns -1, so that
 * `return diag_error(d, span, "...")` reads as a failing status. */
int diag_error(diag_t *d, src_span_t span, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int diag_verror(diag_t *d, src_span_t span, const char *fmt, va_list ap);
void diag_clear(diag_t *d);

/* Prints "FILE:LINE:COL: error: MSG", the source line and a caret line
 * (tildes under the rest of the span when it stays on that line). */
void diag_print(FILE *out, const source_set_t *set, const diag_t *d);
/* The same with "warning" or "note" in place of "error". */
void diag_print_warning(FILE *out, const source_set_t *set, const diag_t *d);
void diag_print_note(FILE *out, const source_set_t *set, const diag_t *d);

/* Edit distance between two names — insertions, deletions,
 * substitutions and swaps of neighbours, one each (optimal string
 * alignment); SIZE_MAX past 64 bytes — for "did you mean" suggestions. */
size_t source_edit_distance(const char *a, const char *b);
/* How far CANDIDATE is from NAME when it is a likely slip for it, else
 * SIZE_MAX: equal but for case (0), or d ≤ 2 edits with 2d ≤ L, L the
 * longer length (the edits touch at most half of it).  So a one-letter
 * name is never taken for another (J is not a slip for t), nor foo for
 * to, while xx is for x, thta for theta and vornoec for voronec. */
size_t source_slip_distance(const char *name, const char *candidate);
/* The candidate closest to NAME among its likely slips, or NULL.
 * CANDIDATES is NULL-terminated. */
const char *source_closest(const char *name, const char *const *candidates);

/* Length of the well-formed UTF-8 sequence at P (at most AVAIL bytes,
 * AVAIL >= 1), or 0 when P does not start one (RFC 3629: no overlongs, no
 * surrogates, nothing past U+10FFFF). */
size_t source_utf8_len(const unsigned char *p, size_t avail);

#endif
