/*
 * repl.c — see repl.h.
 *
 * readline's completion hook is a plain function pointer with no user
 * data, so the session it completes from is kept in one file-static
 * pointer for the duration of repl_run: the one piece of global state in
 * nh, forced by readline's interface (there is one terminal anyway).
 *
 * Must not: interpret statements (the session does).
 */
#include "interp/repl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "config.h"
#include "interp/util.h"

#define PROMPT "nh> "
#define PROMPT_MORE "...> "
#define HISTORY_LINES 1000

static session_t *completing; /* see the file comment */

static char *complete_word(const char *text, int state)
{
    static size_t next, len;
    static const char *const *names;
    if (state == 0) {
        names = session_completions(completing);
        next = 0;
        len = strlen(text);
    }
    while (names && names[next]) {
        const char *n = names[next++];
        if (strncmp(n, text, len) == 0)
            return xstrdup(n);
    }
    return NULL;
}

static char **complete(const char *text, int start, int end)
{
    (void)start;
    (void)end;
    rl_attempted_completion_over = 1; /* no file names */
    return rl_completion_matches(text, complete_word);
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

/* Feeds one line into BUF; runs BUF when it holds complete statements.
 * Returns whether what ran failed. */
static bool feed(session_t *s, strbuf_t *buf, const char *line, bool tty,
                 bool *more)
{
    strbuf_add(buf, line);
    strbuf_add(buf, "\n");
    run_status_t rc =
        session_run_text(s, "<repl>", buf->data, buf->len, true);
    if (rc == RUN_INCOMPLETE) {
        *more = true;
        return false;
    }
    if (tty && buf->len > 1) {
        buf->data[buf->len - 1] = '\0'; /* history without the newline */
        add_history(buf->data);
    }
    strbuf_free(buf);
    *more = false;
    return rc == RUN_ERROR;
}

int repl_run(session_t *s, bool banner)
{
    bool tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    strbuf_t buf;
    strbuf_init(&buf);
    bool more = false;
    if (!tty) {
        /* Errors do not end the session, but the exit status says
         * whether any statement failed (doc/language.md). */
        char *line = NULL;
        size_t cap = 0;
        ssize_t n;
        bool failed = false;
        while (!session_quit_requested(s) &&
               (n = getline(&line, &cap, stdin)) >= 0) {
            if (n > 0 && line[n - 1] == '\n')
                line[n - 1] = '\0';
            failed |= feed(s, &buf, line, false, &more);
        }
        free(line);
        if (more) /* input ended inside a statement: say so */
            failed |= session_run_text(s, "<repl>", buf.data, buf.len,
                                       false) != RUN_OK;
        strbuf_free(&buf);
        return failed ? 1 : 0;
    }

    if (banner)
        printf("nh %s: nonholonomic mechanics.  `help` for help, `quit` to "
               "leave.\n",
               PACKAGE_VERSION);
    completing = s;
    rl_readline_name = "nh";
    rl_attempted_completion_function = complete;
    rl_basic_word_break_characters = " \t\n\"\\'`@$><=;|&{(,[]+-*/^:";
    char *hist = history_path();
    if (hist)
        read_history(hist);
    stifle_history(HISTORY_LINES);
    while (!session_quit_requested(s)) {
        char *line = readline(more ? PROMPT_MORE : PROMPT);
        if (!line) {
            putchar('\n');
            break;
        }
        feed(s, &buf, line, true, &more);
        free(line);
    }
    if (hist) {
        write_history(hist);
        free(hist);
    }
    completing = NULL;
    strbuf_free(&buf);
    return 0;
}
