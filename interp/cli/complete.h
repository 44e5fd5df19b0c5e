/*
 * complete.h — tab completion by context, for every front end: the REPL
 * (repl.c, on readline) and the machine interface (protocol.c, for the
 * Jupyter kernel) ask here, through session_completions, which names
 * may stand where the cursor is.  The statement read so far decides: a
 * method after `equations` and `compare`, a worksheet after `worksheet`,
 * an integrator after `integrator` and `set integrator =`, a subject
 * after `show`, a topic after `help`, a frame after `frame X from` and
 * in omega(…), on(…, v), a body after `torque` and in velocity(P, …),
 * coordinates after `initial`, `linearize`, `kinematic`, … and the names
 * an expression may use inside one (doc/language.md, "Tab completion").
 *
 * Ownership: complete_names returns a list the caller frees with
 * complete_list_free; its strings are its own.
 * Must not: print; change the context.
 */
#ifndef NH_CLI_COMPLETE_H
#define NH_CLI_COMPLETE_H

#include <stddef.h>

#include "interp/cli/context.h"

/* The characters that end a word (readline's word breaks as the REPL
 * sets them; the protocol finds the word the same way). */
#define COMPLETE_WORD_BREAKS " \t\n\"\\'`@$><=;|&{(,[]+-*/^:"

/* Candidates: sorted, each once, NULL-terminated (names[n] == NULL). */
typedef struct complete_list {
    char **names;
    size_t n, cap;
} complete_list_t;

void complete_list_free(complete_list_t *l);

/* The names that may complete the word TEXT[START, END) where it stands:
 * TEXT[0, START) is what was typed before it (the lines of an unfinished
 * statement, then the line being edited) and gives the context.  Those
 * that begin with the word, read from the model of C; `import "…` offers
 * the modules of the folders LIBDIRS (NULL-terminated) and NH_PATH. */
complete_list_t complete_names(const ctx_t *c, const char *const *libdirs,
                               const char *text, size_t start, size_t end);

#endif
