/*
 * repl.h — the interactive loop on GNU readline: line editing, a history
 * file in the user's home, tab completion of keywords and the model's
 * names, a continuation prompt for unfinished statements.  Errors never
 * end the session; `quit`, `exit` or end of input do.
 */
#ifndef NH_REPL_H
#define NH_REPL_H

#include "interp/cli/session.h"

/* Runs the loop on standard input until the session ends.  With a
 * terminal: readline, prompts, history; otherwise plain lines, no
 * prompts.  Returns the exit status: 0, or 1 when the input was not a
 * terminal and a statement failed. */
int repl_run(session_t *s, bool banner);

#endif
