/*
 * test_repl.c — the REPL on a terminal: nh runs on a pseudo-terminal, as
 * a user at a keyboard drives it, and Ctrl-C (the byte 0x03, which the
 * terminal turns into SIGINT) does what doc/language.md says: at the
 * prompt it drops the line being typed and the lines of an unfinished
 * statement; during a `simulate` or a `compare` it stops the statement
 * with an error and leaves the model as it was.
 *
 * Needs: the nh binary named by the environment variable NH (make check
 * sets it) and a pseudo-terminal; skipped without either.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct term {
    pid_t pid;
    int fd;          /* the master side of the pseudo-terminal */
    char out[65536]; /* everything nh wrote, NUL-terminated */
    size_t len;
    size_t seen;     /* where the next expect() starts looking */
    char home[64];
} term_t;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Reads what nh writes for up to SECONDS, or until TEXT appears after
 * the last match (then the search moves past it).  Returns whether it
 * appeared. */
static bool expect(term_t *t, const char *text, double seconds)
{
    double end = now() + seconds;
    for (;;) {
        char *hit = strstr(t->out + t->seen, text);
        if (hit) {
            t->seen = (size_t)(hit - t->out) + strlen(text);
            return true;
        }
        double left = end - now();
        if (left <= 0) {
            fprintf(stderr, "test_repl: no \"%s\" within %g s; the terminal "
                            "showed:\n%s\n", text, seconds, t->out);
            return false;
        }
        struct pollfd p = {t->fd, POLLIN, 0};
        if (poll(&p, 1, (int)(left * 1000) + 1) <= 0)
            continue;
        ssize_t n = read(t->fd, t->out + t->len, sizeof t->out - 1 - t->len);
        if (n <= 0) { /* nh ended, or the buffer is full */
            fprintf(stderr, "test_repl: nh ended while waiting for \"%s\"; "
                            "the terminal showed:\n%s\n", text, t->out);
            return false;
        }
        t->len += (size_t)n;
        t->out[t->len] = '\0';
    }
}

static void type(term_t *t, const char *keys)
{
    size_t n = strlen(keys);
    assert_int_equal(write(t->fd, keys, n), (ssize_t)n);
}

/* Types KEYS, then waits up to SECONDS for WANT. */
static bool say(term_t *t, const char *keys, const char *want, double seconds)
{
    type(t, keys);
    return expect(t, want, seconds);
}

static int start(void **state)
{
    const char *nh = getenv("NH");
    if (!nh || access(nh, X_OK) != 0) {
        *state = NULL;
        return 0;
    }
    term_t *t = calloc(1, sizeof *t);
    strcpy(t->home, "/tmp/nh-repl-XXXXXX"); /* for the history file */
    if (!mkdtemp(t->home))
        return -1;
    struct winsize ws = {.ws_row = 24, .ws_col = 200};
    t->pid = forkpty(&t->fd, NULL, NULL, &ws);
    if (t->pid < 0) { /* a machine without pseudo-terminals */
        fprintf(stderr, "test_repl: forkpty: %s; skipped\n", strerror(errno));
        rmdir(t->home);
        free(t);
        *state = NULL;
        return 0;
    }
    if (t->pid == 0) {
        setenv("HOME", t->home, 1);
        setenv("TERM", "dumb", 1);
        execl(nh, nh, (char *)NULL);
        _exit(127);
    }
    *state = t;
    return 0;
}

static int stop(void **state)
{
    term_t *t = *state;
    if (!t)
        return 0;
    if (t->pid > 0) {
        kill(t->pid, SIGKILL);
        waitpid(t->pid, NULL, 0);
    }
    close(t->fd);
    char hist[96];
    snprintf(hist, sizeof hist, "%s/.nh_history", t->home);
    unlink(hist);
    rmdir(t->home);
    free(t);
    return 0;
}

#define NEED_NH(t)                                                          \
    do {                                                                    \
        if (!(t))                                                           \
            skip();                                                         \
    } while (0)

/* At the prompt: the line typed so far is dropped, and so are the lines
 * of an unfinished statement; the next statement runs on its own. */
static void test_ctrl_c_at_prompt(void **state)
{
    term_t *t = *state;
    NEED_NH(t);
    assert_true(expect(t, "nh> ", 5));
    assert_true(say(t, "print bogus_name", "bogus_name", 5));
    assert_true(say(t, "\x03", "nh> ", 5));
    assert_true(say(t, "print 1+1\r", "1+1 = 2", 5));
    assert_true(say(t, "print (1 +\r", "...> ", 5));
    assert_true(say(t, "\x03", "nh> ", 5));
    assert_true(say(t, "print 2+3\r", "2+3 = 5", 5));
    assert_null(strstr(t->out, "error")); /* bogus_name never ran */
}

/* During a simulate: it stops with "interrupted" at the time reached;
 * the state stays the initial one; the session goes on. */
static void test_ctrl_c_stops_simulate(void **state)
{
    term_t *t = *state;
    NEED_NH(t);
    assert_true(expect(t, "nh> ", 5));
    /* A fast oscillation over 10⁶ time units: hours of steps. */
    assert_true(say(t, "coord x; kinetic T = x'^2/2; potential V = 5e5*x^2\r",
                    "nh> ", 5));
    assert_true(say(t, "initial x = 1; set max_steps = 1e9\r", "nh> ", 5));
    assert_true(say(t, "simulate to 1e6 step 1e3\r",
                    "simulate to 1e6 step 1e3", 5));
    usleep(300000);
    assert_true(say(t, "\x03", "error: interrupted at t = ", 20));
    assert_true(expect(t, "nh> ", 5));
    assert_true(say(t, "print t, x\r", "t = 0", 5));
    assert_true(expect(t, "x = 1", 5));
    assert_true(say(t, "compare lagrange multipliers samples 5\r",
                    "max |diff| = ", 10));
}

/* LANGUAGE.md §6, issue 24 item 6: a simulate stopped by Ctrl-C leaves
 * the state at the last recorded sample, and its message says that state,
 * time and values, as `print` then shows them; the oscillator x'' =
 * -10^6 x from x = 1 is there at x = cos(1000 t).  (The message named
 * the time the integration had reached, and the state there.) */
static void test_ctrl_c_state_is_last_sample(void **state)
{
    term_t *t = *state;
    NEED_NH(t);
    assert_true(expect(t, "nh> ", 5));
    assert_true(say(t, "coord x; kinetic T = x'^2/2; potential V = 5e5*x^2\r",
                    "nh> ", 5));
    assert_true(say(t, "initial x = 1; set max_steps = 1e9\r", "nh> ", 5));
    assert_true(say(t, "simulate to 1e5 step 1\r", "simulate to 1e5 step 1",
                    5));
    usleep(500000);
    assert_true(say(t, "\x03", "error: interrupted at t = ", 20));
    assert_true(expect(t, "; the state is left at the last sample, at t = ",
                       5));
    assert_true(expect(t, "\n", 5));
    /* "T; state: x = X, x' = V" up to the end of the line */
    const char *m = strstr(t->out, "the state is left at the last sample, at t = ");
    m += strlen("the state is left at the last sample, at t = ");
    char tt[64], x[64], v[64];
    assert_int_equal(sscanf(m, "%63[^;]; state: x = %63[^,], x' = %63[^\r\n]",
                            tt, x, v),
                     3);
    assert_true(expect(t, "nh> ", 5));
    char want[256];
    snprintf(want, sizeof want, "\nt = %s\r", tt);
    assert_true(say(t, "print t, x, x'\r", want, 5));
    snprintf(want, sizeof want, "\nx = %s\r", x);
    assert_true(expect(t, want, 5));
    snprintf(want, sizeof want, "\nx' = %s\r", v);
    assert_true(expect(t, want, 5));
    double T = strtod(tt, NULL), X = strtod(x, NULL), V = strtod(v, NULL);
    assert_true(T >= 1 && T == floor(T)); /* a sample, past the first */
    assert_true(fabs(X - cos(1000 * T)) < 1e-4);
    assert_true(fabs(V + 1000 * sin(1000 * T)) < 1e-1);
}

/* The bicycle's `show kinematics` takes a second or more and does not
 * look for Ctrl-C: types it after loading the model (with a statement
 * after it on the line), and gives it 0.3 s to begin (parsing the line
 * takes microseconds). */
static bool start_long_statement(term_t *t)
{
    const char *src = getenv("NH_SRCDIR");
    char load[PATH_MAX + 32];
    snprintf(load, sizeof load, "load \"%s/examples/bicycle_model.nh\"\r",
             src);
    if (!(expect(t, "nh> ", 5) && say(t, load, "nh> ", 30) &&
          say(t, "show kinematics; print 2+2\r", "print 2+2", 10)))
        return false;
    usleep(300000);
    return true;
}

/* Issue 24 item 7: a second Ctrl-C during a statement that does not look
 * keeps the session (it ended nh with status 130, losing the history):
 * it says so, the statement runs to its end, the next one on the line
 * does not run, and the session goes on; the history holds the lines. */
static void test_second_ctrl_c_keeps_session(void **state)
{
    term_t *t = *state;
    NEED_NH(t);
    if (!getenv("NH_SRCDIR"))
        skip();
    assert_true(start_long_statement(t));
    type(t, "\x03");
    usleep(50000);
    assert_true(say(t, "\x03", "the session is kept", 10));
    assert_true(expect(t, "kinematic equations", 30));
    assert_true(expect(t, "error: interrupted before this statement, which "
                          "did not run",
                       30));
    assert_true(expect(t, "nh> ", 5));
    assert_null(strstr(t->out, "2+2 = 4"));
    assert_true(say(t, "print 3+3\r", "3+3 = 6", 5));
    assert_true(say(t, "quit\r", "quit", 5));
    int status;
    assert_int_equal(waitpid(t->pid, &status, 0), t->pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    t->pid = -1;
    char hist[96], text[4096] = "";
    snprintf(hist, sizeof hist, "%s/.nh_history", t->home);
    FILE *f = fopen(hist, "r");
    assert_non_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    assert_non_null(strstr(text, "show kinematics; print 2+2\n"));
    assert_non_null(strstr(text, "print 3+3\n"));
}

/* A third Ctrl-C ends nh, saying so, with the history saved: the line
 * running included. */
static void test_third_ctrl_c_ends_saving_history(void **state)
{
    term_t *t = *state;
    NEED_NH(t);
    if (!getenv("NH_SRCDIR"))
        skip();
    assert_true(start_long_statement(t));
    type(t, "\x03");
    usleep(50000);
    assert_true(say(t, "\x03", "the session is kept", 10));
    assert_true(say(t, "\x03", "ended by Ctrl-C while a statement ran; the "
                                "history is saved",
                    10));
    int status;
    assert_int_equal(waitpid(t->pid, &status, 0), t->pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 130);
    t->pid = -1;
    char hist[96], text[4096] = "";
    snprintf(hist, sizeof hist, "%s/.nh_history", t->home);
    FILE *f = fopen(hist, "r");
    assert_non_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    assert_non_null(strstr(text, "bicycle_model.nh\"\n"));
    assert_non_null(strstr(text, "show kinematics; print 2+2\n"));
}

/* LANGUAGE.md §9: LINE counts the lines typed since the session began
 * (empty ones and those of a statement spanning lines too), so the place
 * a message names can be found again. */
static void test_places_count_lines_typed(void **state)
{
    term_t *t = *state;
    NEED_NH(t);
    assert_true(expect(t, "nh> ", 5));
    assert_true(say(t, "param a = 1\r", "nh> ", 5));
    assert_true(say(t, "\r", "nh> ", 5));
    assert_true(say(t, "print [1,\r", "...> ", 5));
    assert_true(say(t, "2, 3]\r", "[1, 2, 3] = [1, 2, 3]", 5));
    assert_true(say(t, "coord a\r",
                    "<repl>:5:7: error: 'a' is already declared as a "
                    "parameter at <repl>:1:7",
                    5));
}

/* An unclosed bracket: an empty line ends the statement, which is
 * reported at the bracket (doc/language.md), and the next line is a
 * statement of its own. */
static void test_empty_line_ends_open_statement(void **state)
{
    term_t *t = *state;
    NEED_NH(t);
    assert_true(expect(t, "nh> ", 5));
    assert_true(say(t, "print sin(1 +\r", "...> ", 5));
    assert_true(say(t, "\r", "<repl>:1:10: error: '(' is never closed", 5));
    assert_true(expect(t, "nh> ", 5));
    assert_true(say(t, "print (2 +\r", "...> ", 5));
    assert_true(say(t, "coord x\r",
                    "<repl>:3:7: error: '(' is never closed: line 4 cannot "
                    "continue the statement",
                    5));
    assert_true(say(t, "print 3\r", "3 = 3", 5));
}

/* Tab completes by context (issue 24, item 10; complete.c): a worksheet
 * after `worksheet`, an integrator after `set integrator =`, the methods
 * alone after `equations` (Tab twice lists them, and no keyword or model
 * name among them), a body in velocity(P, …) — also on the second line of
 * a statement, whose first line gives the context. */
static void test_tab_completes_by_context(void **state)
{
    term_t *t = *state;
    NEED_NH(t);
    assert_true(expect(t, "nh> ", 5));
    assert_true(say(t, "coord x, theta; frame N\r", "nh> ", 5));
    assert_true(say(t, "body wheel mass 1 at [x, 0, 0] frame N inertia "
                       "[1, 1, 1]\r",
                    "nh> ", 5));
    assert_true(say(t, "worksheet pre\t", "worksheet preliminary", 5));
    assert_true(say(t, "\x03", "nh> ", 5));
    assert_true(say(t, "set integrator = rk8\t", "set integrator = rk8pd", 5));
    assert_true(say(t, "\r", "nh> ", 5));
    assert_true(say(t, "equations \t\t", "gibbs_appell", 5));
    assert_true(expect(t, "nh> equations ", 5));
    /* the listing: between "gibbs_appell" and the prompt drawn again */
    const char *list = strstr(t->out, "gibbs_appell");
    const char *end = strstr(list, "nh> equations ");
    assert_non_null(list);
    assert_non_null(end);
    char listing[4096];
    snprintf(listing, sizeof listing, "%.*s", (int)(end - list), list);
    assert_non_null(strstr(listing, "voronec"));
    assert_null(strstr(listing, "theta"));
    assert_null(strstr(listing, "kinetic"));
    assert_true(say(t, "\x03", "nh> ", 5));
    assert_true(say(t, "print velocity([x, 0, 0],\r", "...> ", 5));
    assert_true(say(t, "whe\t", "wheel", 5));
    assert_true(say(t, ")\r", "wheel ) = [0, 0, 0]", 5));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ctrl_c_at_prompt, start, stop),
        cmocka_unit_test_setup_teardown(test_ctrl_c_stops_simulate, start,
                                        stop),
        cmocka_unit_test_setup_teardown(test_places_count_lines_typed, start,
                                        stop),
        cmocka_unit_test_setup_teardown(test_empty_line_ends_open_statement,
                                        start, stop),
        cmocka_unit_test_setup_teardown(test_tab_completes_by_context, start,
                                        stop),
        cmocka_unit_test_setup_teardown(test_ctrl_c_state_is_last_sample,
                                        start, stop),
        cmocka_unit_test_setup_teardown(test_second_ctrl_c_keeps_session,
                                        start, stop),
        cmocka_unit_test_setup_teardown(test_third_ctrl_c_ends_saving_history,
                                        start, stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
