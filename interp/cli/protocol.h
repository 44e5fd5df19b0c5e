/*
 * protocol.h — nh's machine interface, `nh --protocol` (doc/protocol.md):
 * requests in and replies out, one JSON object per line, so that a front
 * end (the Jupyter kernel in jupyter/) can drive a session.  The session
 * runs every statement, as in a script; this module only reads requests,
 * captures what the session prints on its OUT and ERR streams, and tells
 * the kinds apart: text, LaTeX (`show latex`), SVG (`plot` without a
 * file), the error with its place and caret, and what else went to ERR.
 *
 * Bounds (LANGUAGE.md §9): a request line holds at most
 * PROTOCOL_MAX_REQUEST bytes (a longer one gets an error reply and is
 * skipped without being kept); what one statement prints is kept up to
 * PROTOCOL_MAX_OUTPUT bytes per stream, the rest counted and dropped
 * with a note.  A malformed request gets an error reply; nothing a
 * request holds ends the loop but `shutdown`, `quit` and the end of the
 * input.
 *
 * Interrupts: while a request runs, SIGINT asks the session to stop
 * (session_interrupt), as Ctrl-C does in the REPL, and a second SIGINT
 * before the statement looked ends nh; between requests SIGINT is
 * ignored.
 *
 * Ownership: protocol_new returns an interface (with its own session)
 * freed by protocol_free; the streams given to protocol_run are borrowed.
 * Must not: run statements itself; print anything but replies on OUT.
 */
#ifndef NH_PROTOCOL_H
#define NH_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "interp/cli/session.h"

#define PROTOCOL_VERSION 1
#define PROTOCOL_MAX_REQUEST (16u << 20)
#define PROTOCOL_MAX_OUTPUT (16u << 20)

typedef struct protocol protocol_t;

/* An interface with a new session (QUIET as -q) that prints into the
 * interface's captures. */
protocol_t *protocol_new(bool quiet);
void protocol_free(protocol_t *p); /* accepts NULL */

/* The session, for main to set its library folders. */
session_t *protocol_session(protocol_t *p);

/* Serves requests read from file descriptor IN, writing replies to OUT,
 * until the input ends, a `shutdown` request or a `quit` statement.
 * Returns the exit status: 0. */
int protocol_run(protocol_t *p, int in, FILE *out);

/* The LaTeX that a statement printed (LEN bytes), as one formula for
 * MathJax: `$\displaystyle …$`, rows in an aligned environment, the rows
 * of a matrix in a matrix; a long output (a group that allows page
 * breaks around several align* displays: named subexpressions, a
 * worksheet) as one `$$\begin{aligned} … \end{aligned}$$` display per
 * align*, one a line (malloc'ed).  The one place that knows how `show
 * latex` lays out its text. */
char *protocol_mathjax(const char *latex, size_t len);

#endif
