/*
 * repl.c — see repl.h.
 *
 * readline's completion hook is a plain function pointer with no user
 * data, and so is a signal handler, so the session they act on is kept in
 * one file-static pointer for the duration of repl_run: the one piece of
 * global state in nh, forced by those interfaces (there is one terminal
 * anyway).
 *
 * Ctrl-C (doc/language.md, "Running"): while a statement runs, it asks
 * the session to stop (session_interrupt), which a `simulate` does
 * before its next evaluation and a `compare` before its next random
 * state, and the session before the next statement of the line.  A
 * statement that does not look (show, check, …) runs to its end: a
 * second Ctrl-C says so and keeps the session; a third ends nh, having
 * written the statement to the history file first (each entry is
 * appended to it as it is typed, so none is lost) — with write(2) and
 * _exit(2) alone, which a signal handler may call.  At the prompt it
 * drops the line being typed, and the lines of an unfinished statement.
 * readline echoes "^C" and re-raises the signal to our handler; our getc
 * function then ends the line so that readline returns.
 *
 * The statements typed go to a session reader (session.h) on the stream
 * "<repl>", which numbers the lines from the session's start and ends an
 * open statement at an empty line; without a terminal the session reads
 * standard input itself (session_run_stream).  A line longer than
 * PARSE_MAX_LINE is cut where it passes the limit (so the parse reports
 * it) and the rest of it is skipped: one endless line cannot fill the
 * memory.
 *
 * Must not: interpret statements (the session does).
 */
#include "interp/cli/repl.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "config.h"
#include "interp/base/util.h"
#include "interp/cli/complete.h"
#include "lang/parse.h"

#define PROMPT "nh> "
#define PROMPT_MORE "...> "
#define HISTORY_LINES 1000

static session_t *active; /* see the file comment */
/* For the signal handler: whether a statement runs, the Ctrl-Cs since it
 * began, the history file and the entry running (not yet in the file). */
static volatile sig_atomic_t running, presses;
static char *hist_file;
static char *running_entry;
static size_t running_len;
static session_reader_t *reader;         /* active's, for completion */
static const char *const *candidates;    /* of the completion running */
static size_t line_bytes;  /* bytes typed on the line so far */
static bool skipping;      /* the rest of a line too long, being dropped */

/* readline's generator: the candidates session_completions gave for the
 * word (they all begin with it), one per call. */
static char *complete_word(const char *text, int state)
{
    static size_t next;
    (void)text;
    if (state == 0)
        next = 0;
    if (!candidates || !candidates[next])
        return NULL;
    return xstrdup(candidates[next++]);
}

/* Completion by context (complete.h): the statement typed so far — the
 * lines of an open one, then the line being edited up to the word. */
static char **complete(const char *text, int start, int end)
{
    (void)text;
    rl_attempted_completion_over = 1; /* no file names */
    const char *open = reader ? session_reader_text(reader) : "";
    size_t before = strlen(open);
    size_t n = before + (size_t)end;
    char *all = xmalloc(n + 1);
    memcpy(all, open, before);
    memcpy(all + before, rl_line_buffer, (size_t)end);
    all[n] = '\0';
    candidates = session_completions(active, all, before + (size_t)start, n);
    char **matches = rl_completion_matches(text, complete_word);
    candidates = NULL;
    free(all);
    return matches;
}

static void say(const char *text)
{
    ssize_t n = write(STDERR_FILENO, text, strlen(text));
    (void)n; /* nothing to do about a terminal that is gone */
}

static void on_sigint(int sig)
{
    if (!active) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    if (!running) { /* at the prompt (readline passes it on) */
        session_interrupt(active);
        return;
    }
    presses++;
    if (presses == 1) {
        session_interrupt(active);
    } else if (presses == 2) {
        say("\nnh: this statement does not look for Ctrl-C and runs to its "
            "end; the session is kept.  Ctrl-C once more ends nh (the "
            "history is saved).\n");
    } else {
        int fd = hist_file ? open(hist_file, O_WRONLY | O_APPEND | O_CREAT,
                                  0600)
                           : -1;
        bool saved = fd >= 0;
        if (fd >= 0) {
            saved = write(fd, running_entry ? running_entry : "",
                          running_len) == (ssize_t)running_len &&
                    write(fd, "\n", 1) == 1;
            saved &= close(fd) == 0;
        }
        say(saved ? "\nnh: ended by Ctrl-C while a statement ran; the "
                    "history is saved.\n"
                  : "\nnh: ended by Ctrl-C while a statement ran.\n");
        _exit(128 + sig);
    }
}

/* readline's character reader, but a Ctrl-C at the prompt ends the line
 * (which repl_run then drops).  The Ctrl-C may come while readline is
 * busy (redrawing) rather than waiting in read(): readline's handler
 * only notes it, so pending signals are handled before each read too. */
static int repl_getc(FILE *in)
{
    for (;;) {
        rl_check_signals(); /* readline's own handling, then on_sigint */
        if (active && session_interrupted(active))
            return '\n';
        unsigned char c;
        ssize_t n = read(fileno(in), &c, 1);
        if (n == 0 || (n < 0 && errno != EINTR))
            return EOF;
        if (n < 0)
            continue;
        bool end = c == '\n' || c == '\r';
        if (skipping) {
            skipping = !end;
            continue;
        }
        if (end) {
            line_bytes = 0;
        } else if (++line_bytes > PARSE_MAX_LINE + 1) {
            skipping = true; /* the line ends here; what follows is lost */
            line_bytes = 0;
            return '\n';
        }
        return c;
    }
}

static char *history_path(void)
{
    const char *home = getenv("HOME");
    if (!home || !*home)
        return NULL;
    size_t n = strlen(home) + 32;
    char *p = xmalloc(n);
    snprintf(p, n, "%s/.nh_history", home);
    return p;
}

int repl_run(session_t *s, bool banner)
{
    bool tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    if (!tty) {
        /* Errors do not end the session, but the exit status says
         * whether any statement failed (doc/language.md). */
        return session_run_stream(s, stdin, "<repl>", true) == RUN_ERROR;
    }

    if (banner)
        printf("nh %s: nonholonomic mechanics.  `help` for help, `quit` to "
               "leave.\n",
               PACKAGE_VERSION);
    active = s;
    struct sigaction sa, old_sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* output and pipes carry on after Ctrl-C */
    sigaction(SIGINT, &sa, &old_sa);
    rl_getc_function = repl_getc;
    rl_readline_name = "nh";
    rl_attempted_completion_function = complete;
    rl_basic_word_break_characters = COMPLETE_WORD_BREAKS;
    char *hist = history_path();
    if (hist)
        read_history(hist);
    stifle_history(HISTORY_LINES);
    hist_file = hist;
    session_reader_t *r = session_reader_new(s, "<repl>", true);
    reader = r;
    strbuf_t entry; /* the lines of the statement, one history entry */
    strbuf_init(&entry);
    while (!session_quit_requested(s)) {
        char *line = readline(session_reader_open(r) ? PROMPT_MORE : PROMPT);
        if (!line) {
            putchar('\n');
            session_reader_end(r); /* reports a statement left open */
            break;
        }
        if (session_interrupted(s)) { /* Ctrl-C at the prompt */
            session_clear_interrupt(s);
            session_reader_drop(r);
            strbuf_free(&entry);
            line_bytes = 0;
        } else {
            if (*line) { /* an empty line ending a statement: not kept */
                if (entry.len)
                    strbuf_add(&entry, "\n");
                strbuf_add(&entry, line);
            }
            /* what the handler writes to the history when a third Ctrl-C
             * ends nh while the statement runs */
            running_entry = entry.data;
            running_len = entry.len;
            presses = 0;
            running = 1;
            run_status_t rc = session_reader_line(r, line, strlen(line));
            running = 0;
            session_clear_interrupt(s); /* a Ctrl-C nothing looked at */
            if (rc != RUN_INCOMPLETE) {
                if (entry.len) {
                    add_history(entry.data);
                    /* in the file at once: nothing is lost if nh ends */
                    if (hist && append_history(1, hist) != 0)
                        write_history(hist);
                }
                running_entry = NULL;
                strbuf_free(&entry);
            }
        }
        free(line);
    }
    reader = NULL;
    session_reader_free(r);
    strbuf_free(&entry);
    sigaction(SIGINT, &old_sa, NULL);
    hist_file = NULL;
    if (hist) {
        write_history(hist);
        free(hist);
    }
    active = NULL;
    return 0;
}
