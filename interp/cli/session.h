/*
 * session.h — one interpreter: the texts it has read, the model, the
 * derived equations, the state and the recorded samples; and the
 * execution of statements.
 *
 * A session runs a text as a unit: the whole text is parsed first (a
 * syntax error runs nothing), then its statements run in order and the
 * first error stops the text.  Statements that come a line at a time (the
 * REPL, `nh -`) go through a reader, which runs each statement as soon as
 * it is complete; their texts form a stream whose lines are numbered on
 * from text to text.  Every statement either succeeds or changes nothing.
 * Output goes to the session's OUT stream (or the file of a statement's
 * `> "file"`), errors (formatted by diag_print) to its ERR stream; a
 * write to OUT that fails is an error of the statement that wrote.  The
 * texts and parses the model no longer refers to are freed as the session
 * goes on.  No global state: any number of sessions may coexist.
 *
 * Ownership: session_new returns a session freed by session_free; the
 * streams are borrowed.
 */
#ifndef NH_SESSION_H
#define NH_SESSION_H

#include <stdbool.h>
#include <stdio.h>

#include "lang/source.h"

typedef struct session session_t;

session_t *session_new(bool quiet, FILE *out, FILE *err);
void session_free(session_t *s); /* accepts NULL */

typedef enum run_status {
    RUN_OK,
    RUN_ERROR,      /* reported on the error stream */
    RUN_INCOMPLETE, /* only with allow_incomplete: the text needs more */
} run_status_t;

/* Runs TEXT (LEN bytes) named NAME ("<repl>", "<-e>", a path).  With
 * ALLOW_INCOMPLETE, an unfinished last statement returns RUN_INCOMPLETE
 * without reporting or running anything. */
run_status_t session_run_text(session_t *s, const char *name,
                              const char *text, size_t len,
                              bool allow_incomplete);
/* Runs TEXT as the next lines of the stream NAME ("<repl>", a notebook's
 * cells): its lines are numbered on from those of the texts run before
 * under NAME (LANGUAGE.md §9: `<repl>:12:7` is the 12th line typed), so
 * that a place a message names can be found again.  With
 * ALLOW_INCOMPLETE, an unfinished last statement returns RUN_INCOMPLETE,
 * runs nothing and numbers nothing: the same lines, and more, come
 * again. */
run_status_t session_run_lines(session_t *s, const char *name,
                               const char *text, size_t len,
                               bool allow_incomplete);
/* Counts N lines of the stream NAME that will not run (dropped by
 * Ctrl-C), so that the numbers go on as the user counts. */
void session_skip_lines(session_t *s, const char *name, unsigned n);

/* Reads and runs the file PATH; "-": standard input, a statement at a
 * time as it comes (session_run_stream), stopping at the first error. */
run_status_t session_run_file(session_t *s, const char *path);

/* A reader of statements that come a line at a time, in the stream NAME
 * (session_run_lines): each line is scanned once, and the text is run as
 * soon as it holds complete statements.  REPL: an empty line ends a
 * statement left open (which is then reported: doc/language.md).  Limits
 * (doc/limits.md): a line of PARSE_MAX_LINE bytes, a statement of 1 MiB.
 * Ownership: session_reader_free frees it; the session is borrowed. */
typedef struct session_reader session_reader_t;
session_reader_t *session_reader_new(session_t *s, const char *name,
                                     bool repl);
void session_reader_free(session_reader_t *r); /* accepts NULL */
/* Takes one line (LEN bytes, without its newline).  Returns
 * RUN_INCOMPLETE while a statement is open (the REPL's "...> "), else
 * what running the statements it completed gave (RUN_OK when none). */
run_status_t session_reader_line(session_reader_t *r, const char *line,
                                 size_t len);
/* The input ended: runs (and so reports) a statement left open. */
run_status_t session_reader_end(session_reader_t *r);
/* Whether a statement is open, and dropping it (Ctrl-C at the prompt). */
bool session_reader_open(const session_reader_t *r);
void session_reader_drop(session_reader_t *r);
/* The lines of the open statement, each ended by '\n' ("" when none is
 * open): the context of a completion on the line being typed. */
const char *session_reader_text(const session_reader_t *r);

/* Reads IN to its end a line at a time through a reader on stream NAME,
 * running statements as they come; a line longer than PARSE_MAX_LINE is
 * reported as soon as it is that long and the rest of it skipped.  REPL:
 * errors do not stop it; else the first one does.  Returns RUN_ERROR
 * when a statement failed. */
run_status_t session_run_stream(session_t *s, FILE *in, const char *name,
                                bool repl);

/* How many texts the session holds, and how many arenas of texts that
 * ran (for the tests: they follow the model, not the lines run). */
void session_memory(const session_t *s, size_t *texts, size_t *arenas);

/* True once `quit` or `exit` ran. */
bool session_quit_requested(const session_t *s);

/* Asks the statement running now to stop with an error "interrupted": a
 * `simulate` before its next evaluation of the equations, a `compare`
 * before its next random state, the session before the text's next
 * statement; a simulate leaves the state at its last sample.  Safe to call from a signal handler (the REPL's
 * Ctrl-C).  Each session_run_text starts with no request. */
void session_interrupt(session_t *s);

/* From now on, each session_run_text may spend at most SECONDS (wall
 * clock) in those steps before they stop with an error; 0 for no limit
 * (the default).  The fuzzing harness sets it: long work that an input
 * asks for is bounded, not a finding (fuzz/README.md). */
void session_set_time_limit(session_t *s, double seconds);

/* The worker processes of a sweep (`set threads = N`, LANGUAGE.md §1.2;
 * at least 1; 1 runs everything in this process).  The default is
 * work_default_threads(): NH_THREADS, or the processors online. */
void session_set_threads(session_t *s, unsigned threads);

/* `nh --shard K/N` (§1.2): every sweep runs only the points whose index i
 * has i mod N = K − 1, with an index column (1 <= K <= N). */
void session_set_shard(session_t *s, unsigned k, unsigned n);

/* Whether session_interrupt was called since the last session_run_text
 * began (the REPL asks at its prompt), and forgetting it. */
bool session_interrupted(const session_t *s);
void session_clear_interrupt(session_t *s);

/* Tab completion (complete.h): the names that may complete the word
 * TEXT[START, END), in the context TEXT[0, START) gives (what was typed
 * before it in the statement); sorted, each once, NULL-terminated, valid
 * until the next call. */
const char *const *session_completions(session_t *s, const char *text,
                                       size_t start, size_t end);

/* Where `import` looks after NH_PATH: set by main from the executable's
 * place (the build tree) and the installed data directory. */
void session_set_library_dirs(session_t *s, const char *const *dirs,
                              size_t n);

/* What a front end that shows kinds of output apart (the machine
 * interface, doc/protocol.md) is told while a text runs: a statement
 * ended well (what it printed on OUT is flushed, and its kind is
 * session_ctx(s)->out_kind), or an error is about to be printed on ERR
 * (what was printed before it on OUT is flushed).  Nothing else is
 * printed on ERR between that call and the end of session_run_text. */
typedef enum session_event {
    SESSION_STATEMENT_DONE,
    SESSION_ERROR_NEXT,
} session_event_t;
typedef void (*session_observer_fn)(void *data, session_event_t ev);
/* FN (NULL: none) is called with DATA on each event. */
void session_set_observer(session_t *s, session_observer_fn fn, void *data);

/* While a text runs: the place of its statement running now (a `load`
 * stands for the statements of the file it runs), the name of its text in
 * *FILE and its first line in *LINE; false between statements.  For a
 * front end that tells the output of statements apart (`nh --check`,
 * expect.h), from its observer. */
bool session_statement_at(const session_t *s, const char **file,
                          unsigned *line);

/* The session's context (interp/cli/context.h): for the tests and the
 * benchmark, which read the derived equations, and for the machine
 * interface, which reads the kind of a statement's output and asks for
 * plots as SVG. */
struct ctx *session_ctx(session_t *s);

#endif
