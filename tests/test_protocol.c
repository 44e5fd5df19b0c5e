/*
 * test_protocol.c — the machine interface, `nh --protocol`
 * (doc/protocol.md), driven as a front end drives it: nh runs as a child
 * on two pipes, each test writes request lines and reads the reply lines,
 * which it reads back with nh's own JSON reader.  Every request kind;
 * output kinds (text, stderr, LaTeX, SVG, error with its place and
 * caret); malformed and oversized requests, after each of which nh goes
 * on serving; a statement's output beyond the bound; SIGINT during a
 * `simulate` and between requests; quit, shutdown and the end of input.
 * Also, in-process, how LaTeX is laid out for MathJax.
 *
 * Needs: the nh binary named by the environment variable NH (make check
 * sets it); skipped without it.  The SVG test needs gnuplot.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "interp/base/util.h"
#include "interp/cli/json.h"
#include "interp/cli/protocol.h"

typedef struct child {
    pid_t pid;
    int to, from; /* nh's standard input and output */
    strbuf_t in;  /* read from nh, not yet taken as lines */
} child_t;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int start(void **state)
{
    const char *nh = getenv("NH");
    *state = NULL;
    if (!nh || access(nh, X_OK) != 0)
        return 0;
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0)
        return -1;
    child_t *c = calloc(1, sizeof *c);
    c->pid = fork();
    if (c->pid < 0)
        return -1;
    if (c->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        execl(nh, nh, "--protocol", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    c->to = in[1];
    c->from = out[0];
    signal(SIGPIPE, SIG_IGN);
    strbuf_init(&c->in);
    *state = c;
    return 0;
}

/* nh's exit status after its input is closed (-1: killed by a signal). */
static int finish(child_t *c)
{
    if (c->to >= 0)
        close(c->to);
    c->to = -1;
    int status;
    waitpid(c->pid, &status, 0);
    c->pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int stop(void **state)
{
    child_t *c = *state;
    if (!c)
        return 0;
    if (c->pid > 0) {
        kill(c->pid, SIGKILL);
        finish(c);
    }
    if (c->to >= 0)
        close(c->to);
    close(c->from);
    strbuf_free(&c->in);
    free(c);
    return 0;
}

#define NEED_NH(c)                                                          \
    do {                                                                    \
        if (!(c))                                                           \
            skip();                                                         \
    } while (0)

static void put(child_t *c, const char *text, size_t len)
{
    while (len > 0) {
        ssize_t n = write(c->to, text, len);
        if (n < 0 && errno == EINTR)
            continue;
        assert_true(n > 0);
        text += n;
        len -= (size_t)n;
    }
}

static void say(child_t *c, const char *line)
{
    put(c, line, strlen(line));
    put(c, "\n", 1);
}

/* The next line nh writes, parsed (the caller frees it); NULL when nh
 * ends or writes nothing for SECONDS. */
static json_t *hear(child_t *c, double seconds)
{
    double end = now() + seconds;
    for (;;) {
        char *nl = c->in.len ? memchr(c->in.data, '\n', c->in.len) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - c->in.data);
            char msg[160];
            json_t *v = json_parse(c->in.data, n, msg, sizeof msg);
            if (!v)
                fail_msg("nh wrote no JSON (%s): %.*s", msg, (int)n,
                         c->in.data);
            memmove(c->in.data, nl + 1, c->in.len - n - 1);
            c->in.len -= n + 1;
            return v;
        }
        double left = end - now();
        if (left <= 0)
            return NULL;
        struct pollfd pf = {c->from, POLLIN, 0};
        if (poll(&pf, 1, (int)(left * 1000) + 1) <= 0)
            continue;
        char buf[65536];
        ssize_t n = read(c->from, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return NULL;
        strbuf_addn(&c->in, buf, (size_t)n);
    }
}

static const char *str(const json_t *v, const char *name)
{
    const json_t *m = json_get(v, name);
    if (!m || m->kind != JSON_STRING)
        fail_msg("no string \"%s\" in the message", name);
    return m->str;
}

static double num(const json_t *v, const char *name)
{
    const json_t *m = json_get(v, name);
    if (!m || m->kind != JSON_NUMBER)
        fail_msg("no number \"%s\" in the message", name);
    return m->number;
}

/* The next message, which must be a reply of kind KIND. */
static json_t *reply(child_t *c, const char *kind)
{
    json_t *v = hear(c, 30);
    assert_non_null(v);
    const json_t *r = json_get(v, "reply");
    if (!r || r->kind != JSON_STRING || strcmp(r->str, kind) != 0) {
        strbuf_t b;
        strbuf_init(&b);
        json_put_value(&b, v);
        fail_msg("expected a %s reply, got %s", kind, b.data);
    }
    return v;
}

/* The next message, which must be an output of kind KIND; its text. */
static char *output(child_t *c, const char *kind)
{
    json_t *v = hear(c, 30);
    assert_non_null(v);
    const json_t *o = json_get(v, "output");
    if (!o || o->kind != JSON_STRING || strcmp(o->str, kind) != 0) {
        strbuf_t b;
        strbuf_init(&b);
        json_put_value(&b, v);
        fail_msg("expected %s output, got %s", kind, b.data);
    }
    char *t = strdup(str(v, "text"));
    json_free(v);
    return t;
}

static void expect_execute(child_t *c, const char *status)
{
    json_t *v = reply(c, "execute");
    assert_string_equal(str(v, "status"), status);
    json_free(v);
}

/* An error reply whose message holds WHAT. */
static void expect_refused(child_t *c, const char *what)
{
    json_t *v = reply(c, "error");
    if (!strstr(str(v, "message"), what))
        fail_msg("the error \"%s\" does not say \"%s\"", str(v, "message"),
                 what);
    json_free(v);
}

/* nh still serves: an info request gets its reply. */
static void still_serves(child_t *c)
{
    say(c, "{\"request\":\"info\"}");
    json_free(reply(c, "info"));
}

/* A harmonic oscillator, x(t) = cos(t) from x = 1 at rest. */
static const char oscillator[] =
    "{\"request\":\"execute\",\"code\":\"coord x\\nkinetic T = x'^2/2\\n"
    "potential V = x^2/2\\ninitial x = 1\"}";

/* ---- the request kinds ---------------------------------------------- */

static void test_info(void **state)
{
    child_t *c = *state;
    NEED_NH(c);
    say(c, "{\"request\":\"info\",\"id\":7}");
    json_t *v = reply(c, "info");
    assert_true(num(v, "id") == 7);
    assert_true(num(v, "protocol") == PROTOCOL_VERSION);
    assert_string_equal(str(v, "implementation"), "nh");
    assert_string_equal(str(v, "language"), "nh");
    assert_string_equal(str(v, "file_extension"), ".nh");
    assert_non_null(strstr(str(v, "banner"), "nh "));
    json_free(v);
}

/* Text output per statement, the id echoed (a string here) on every
 * message of the request, and the value: 0.1 + 0.2 in doubles. */
static void test_execute_text(void **state)
{
    child_t *c = *state;
    NEED_NH(c);
    say(c, "{\"request\":\"execute\",\"id\":\"a\",\"code\":\"print 1 + 1\\n"
           "print 1/3\"}");
    json_t *v = hear(c, 30);
    assert_string_equal(str(v, "id"), "a");
    assert_string_equal(str(v, "output"), "text");
    assert_string_equal(str(v, "text"), "1 + 1 = 2\n");
    json_free(v);
    char *t = output(c, "text");
    assert_string_equal(t, "1/3 = 0.3333333333333333\n");
    free(t);
    v = reply(c, "execute");
    assert_string_equal(str(v, "id"), "a");
    assert_string_equal(str(v, "status"), "ok");
    assert_int_equal(json_get(v, "quit")->kind, JSON_FALSE);
    json_free(v);
}

/* An error: its place (the cell and the line in it), message and caret
 * as the REPL prints them; the statements before it ran, the rest of the
 * cell did not, and the session goes on. */
static void test_execute_error(void **state)
{
    child_t *c = *state;
    NEED_NH(c);
    say(c, "{\"request\":\"execute\",\"cell\":4,\"code\":\"coord theta\\n"
           "print 2*3\\nprint thetta + 1\\ncoord y\"}");
    char *t = output(c, "text");
    assert_string_equal(t, "2*3 = 6\n");
    free(t);
    json_t *v = hear(c, 30);
    assert_string_equal(str(v, "output"), "error");
    assert_string_equal(str(v, "file"), "<cell 4>");
    assert_true(num(v, "line") == 3);
    assert_true(num(v, "column") == 7);
    assert_string_equal(str(v, "message"),
                        "unknown name 'thetta'; did you mean 'theta'?");
    assert_string_equal(str(v, "text"),
                        "<cell 4>:3:7: error: unknown name 'thetta'; did you "
                        "mean 'theta'?\nprint thetta + 1\n      ^~~~~~\n");
    json_free(v);
    expect_execute(c, "error");
    /* coord y never ran: y is unknown; theta is there. */
    say(c, "{\"request\":\"execute\",\"code\":\"print theta\\nprint y\"}");
    t = output(c, "text");
    assert_string_equal(t, "theta = 0\n");
    free(t);
    v = hear(c, 30);
    assert_string_equal(str(v, "output"), "error");
    /* Without "cell", requests are counted: this is the second. */
    assert_string_equal(str(v, "file"), "<cell 2>");
    assert_true(num(v, "line") == 2);
    json_free(v);
    expect_execute(c, "error");
}

/* A statement's file that is the channel itself (/dev/stdout and its
 * other names, the replies; /dev/stdin, the requests) is refused with
 * an error, and the session stays in step: the next cell's output is its
 * own (issue 31: the text went into the replies, and every later cell
 * showed the one before's output). */
static void test_output_file_is_the_channel(void **state)
{
    child_t *c = *state;
    NEED_NH(c);
    static const char *const stmts[] = {
        "print 1 > \\\"/dev/stdout\\\"", "print 1 > \\\"/dev/fd/1\\\"",
        "print 1 > \\\"/proc/self/fd/1\\\"", "help > \\\"/dev/stdout\\\"",
        "table t > \\\"/dev/stdout\\\"", "print 1 > \\\"/dev/stdin\\\"",
        "sweep k from 1 to 2 step 1 > \\\"/dev/stdout\\\": print k"};
    say(c, "{\"request\":\"execute\",\"code\":\"param k = 1\\ncoord x\\n"
           "kinetic T = x'^2/2\\nsimulate to 0.1 step 0.1\"}");
    free(output(c, "text")); /* simulate's summary */
    expect_execute(c, "ok");
    for (size_t i = 0; i < sizeof stmts / sizeof *stmts; i++) {
        char req[256];
        snprintf(req, sizeof req,
                 "{\"request\":\"execute\",\"code\":\"%s\"}", stmts[i]);
        say(c, req);
        json_t *v = hear(c, 30);
        assert_non_null(v);
        assert_string_equal(str(v, "output"), "error");
        const char *m = str(v, "message");
        if (i == 0)
            assert_string_equal(m, "cannot write '/dev/stdout': it is the notebook's own channel (nh --protocol's standard output); write to a file instead");
        if (!strstr(m, "it is the notebook's own channel (nh --protocol's "
                       "standard ") ||
            !strstr(m, "); write to a file instead"))
            fail_msg("%s: %s", stmts[i], m);
        assert_non_null(
            strstr(m, i == 5 ? "standard input" : "standard output"));
        json_free(v);
        expect_execute(c, "error");
        say(c, "{\"request\":\"execute\",\"code\":\"print 2\"}");
        char *t = output(c, "text");
        assert_string_equal(t, "2 = 2\n");
        free(t);
        expect_execute(c, "ok");
    }
}

/* A syntax error runs nothing of the cell; an unfinished statement is
 * an error at the end of the cell, as at the end of a script. */
static void test_execute_syntax(void **state)
{
    child_t *c = *state;
    NEED_NH(c);
    say(c, "{\"request\":\"execute\",\"code\":\"print 1\\nprint 2 +* 3\"}");
    json_t *v = hear(c, 30);
    assert_string_equal(str(v, "output"), "error");
    assert_true(num(v, "line") == 2);
    json_free(v);
    expect_execute(c, "error");
    say(c, "{\"request\":\"execute\",\"code\":\"print (1 +\"}");
    v = hear(c, 30);
    assert_string_equal(str(v, "output"), "error");
    /* An unclosed bracket is reported at the bracket (LANGUAGE.md §9). */
    assert_non_null(strstr(str(v, "message"), "'(' is never closed"));
    assert_true(num(v, "line") == 1);
    assert_true(num(v, "column") == 7);
    json_free(v);
    expect_execute(c, "error");
}

/* An error in a loaded file names that file, even one whose name holds
 * ": error: " (the place is read from the first line's end). */
static void test_execute_error_in_loaded_file(void **state)
{
    child_t *c = *state;
    NEED_NH(c);
    char dir[] = "/tmp/nh-protocol-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/a: error: b.nh", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("print 1\nprint zz\n", f);
    fclose(f);
    char req[300];
    snprintf(req, sizeof req,
             "{\"request\":\"execute\",\"code\":\"load \\\"%s\\\"\"}", path);
    say(c, req);
    free(output(c, "text"));
    json_t *v = hear(c, 30);
    assert_string_equal(str(v, "output"), "error");
    assert_string_equal(str(v, "file"), path);
    assert_true(num(v, "line") == 2);
    assert_true(num(v, "column") == 7);
    assert_string_equal(str(v, "message"),
                        "unknown name 'zz': declare it first, with param, "
                        "coord, speed, let, particle, kinetic, potential or "
                        "lagrangian");
    json_free(v);
    expect_execute(c, "error");
    unlink(path);
    rmdir(dir);
    /* A file that cannot be read: the error is at the load's string. */
    say(c, "{\"request\":\"execute\",\"code\":\"load \\\"/nonexistent/x.nh\\\"\"}");
    v = hear(c, 30);
    assert_string_equal(str(v, "output"), "error");
    assert_string_equal(str(v, "file"), "<cell 2>");
    assert_true(num(v, "column") == 6);
    assert_non_null(strstr(str(v, "message"), "cannot read"));
    json_free(v);
    expect_execute(c, "error");
}

/* `show latex`: the text as nh prints it and the formula for MathJax;
 * a warning on the error stream is "stderr"; summaries are text. */
static void test_execute_latex_stderr(void **state)
{
    child_t *c = *state;
    NEED_NH(c);
    say(c, oscillator);
    expect_execute(c, "ok");
    say(c, "{\"request\":\"execute\",\"code\":\"show latex eom\"}");
    json_t *v = hear(c, 30);
    assert_string_equal(str(v, "output"), "latex");
    assert_non_null(strstr(str(v, "text"), "\\ddot{x} &= -x"));
    const char *mj = str(v, "mathjax");
    assert_true(strncmp(mj, "$\\displaystyle \\begin{aligned}", 30) == 0);
    assert_non_null(strstr(mj, "\n\\ddot{x} &= -x\n"));
    assert_non_null(strstr(mj, "\\end{aligned}$"));
    json_free(v);
    expect_execute(c, "ok");
    /* show without latex is text. */
    say(c, "{\"request\":\"execute\",\"code\":\"show eom\"}");
    char *t = output(c, "text");
    assert_non_null(strstr(t, "x'' = -x\n"));
    free(t);
    expect_execute(c, "ok");
    say(c, "{\"request\":\"execute\",\"code\":\"equations naive\"}");
    t = output(c, "stderr");
    assert_non_null(strstr(t, "warning: naive"));
    free(t);
    expect_execute(c, "ok");
}

static bool have_gnuplot(void)
{
    return system("command -v gnuplot >/dev/null 2>&1") == 0;
}

/* `plot` without a file: an SVG image; with a file, the file (nothing
 * on the channel). */
static void test_execute_svg(void **state)
{
    child_t *c = *state;
    NEED_NH(c);
    if (!have_gnuplot())
        skip();
    say(c, oscillator);
    expect_execute(c, "ok");
    say(c, "{\"request\":\"execute\",\"code\":\"simulate to 6.283185307179586 "
           "step 0.01\\nplot x, x' vs t\"}");
    char *t = output(c, "text");
    assert_non_null(strstr(t, "simulated to t = 6.28"));
    free(t);
    t = output(c, "svg");
    assert_non_null(strstr(t, "<svg"));
    assert_non_null(strstr(t, "</svg>"));
    free(t);
    expect_execute(c, "ok");
    /* x(2π) = cos(2π) = 1: the closed form of the oscillator. */
    say(c, "{\"request\":\"execute\",\"code\":\"print x - 1\"}");
    t = output(c, "text");
    assert_true(strncmp(t, "x - 1 = ", 8) == 0);
    assert_true(fabs(strtod(t + 8, NULL)) < 1e-8);
    free(t);
    expect_execute(c, "ok");
}

/* The events and lyapunov in a notebook (LANGUAGE.md §6.1, §7.4): their
 * text, and a section drawn inline.  The oscillator x = cos t crosses 0
 * falling at pi/2 and rising at 3 pi/2, 7 pi/2, ...; its exponents over
 * 2 pi are 0 (the tangent map of a whole period is the identity). */
static void test_execute_events(void **state)
{
    child_t *c = *state;
    NEED_NH(c);
    say(c, oscillator);
    expect_execute(c, "ok");
    say(c, "{\"request\":\"execute\",\"code\":\"simulate to 10 until x = 0\\n"
           "print t - pi/2\"}");
    char *t = output(c, "text");
    assert_non_null(strstr(t, "stopped at x = 0 (falling) at t = 1.57"));
    free(t);
    t = output(c, "text");
    assert_true(strncmp(t, "t - pi/2 = ", 11) == 0);
    assert_true(fabs(strtod(t + 11, NULL)) < 1e-12);
    free(t);
    expect_execute(c, "ok");
    say(c, "{\"request\":\"execute\",\"code\":\"reset\\nsimulate to 20 sample "
           "at x = 0 rising\"}");
    t = output(c, "text");
    assert_non_null(strstr(t, "simulated to t = 20: 3 crossings of x = 0 "
                              "(rising)"));
    free(t);
    expect_execute(c, "ok");
    if (have_gnuplot()) {
        say(c, "{\"request\":\"execute\",\"code\":\"plot x' vs t\"}");
        t = output(c, "svg");
        assert_non_null(strstr(t, "<svg"));
        free(t);
        expect_execute(c, "ok");
    }
    say(c, "{\"request\":\"execute\",\"code\":\"reset\\n"
           "lyapunov to 6.283185307179586\"}");
    t = output(c, "text");
    assert_true(strncmp(t, "lyap1 = ", 8) == 0);
    assert_true(fabs(strtod(t + 8, NULL)) < 1e-9);
    assert_non_null(strstr(t, "sum = "));
    free(t);
    expect_execute(c, "ok");
}

static void test_complete(void **state)
{
    child_t *c = *state;
    NEED_NH(c);
    say(c, "{\"request\":\"execute\",\"code\":\"coord kappa, kx\"}");
    expect_execute(c, "ok");
    /* The word before the cursor, completed with what may stand there
     * (in an expression: the model's names, not keywords), sorted, each
     * once. */
    say(c, "{\"request\":\"complete\",\"id\":3,\"code\":\"print k + 1\","
           "\"cursor\":7}");
    json_t *v = reply(c, "complete");
    assert_true(num(v, "id") == 3);
    assert_true(num(v, "cursor_start") == 6);
    assert_true(num(v, "cursor_end") == 7);
    const json_t *m = json_get(v, "matches");
    assert_non_null(m);
    assert_int_equal(m->kind, JSON_ARRAY);
    const char *want[] = {"kappa", "kx"};
    assert_int_equal(m->len, 2);
    for (size_t i = 0; i < 2; i++)
        assert_string_equal(m->items[i].str, want[i]);
    json_free(v);
    /* The cursor defaults to the end; after a break character the word
     * is empty and every name matches. */
    say(c, "{\"request\":\"complete\",\"code\":\"print kx*\"}");
    v = reply(c, "complete");
    assert_true(num(v, "cursor_start") == 9);
    assert_true(json_get(v, "matches")->len > 20);
    json_free(v);
    say(c, "{\"request\":\"complete\",\"code\":\"zzz\"}");
    v = reply(c, "complete");
    assert_int_equal(json_get(v, "matches")->len, 0);
    json_free(v);
    say(c, "{\"request\":\"complete\",\"code\":\"ab\",\"cursor\":3}");
    expect_refused(c, "\"cursor\" must be a byte offset from 0 to 2");
    say(c, "{\"request\":\"complete\",\"code\":\"ab\",\"cursor\":-1}");
    expect_refused(c, "\"cursor\" must be");
    say(c, "{\"request\":\"complete\",\"code\":\"ab\",\"cursor\":0.5}");
    expect_refused(c, "\"cursor\" must be");
}

/* The matches of a complete request for CODE (cursor at its end), as one
 * string, separated by spaces. */
static char *matches_of(child_t *c, const char *code)
{
    strbuf_t b;
    strbuf_init(&b);
    strbuf_add(&b, "{\"request\":\"complete\",\"code\":");
    json_put_string(&b, code, strlen(code));
    strbuf_add(&b, "}");
    say(c, b.data);
    strbuf_free(&b);
    json_t *v = reply(c, "complete");
    const json_t *m = json_get(v, "matches");
    assert_non_null(m);
    strbuf_init(&b);
    strbuf_add(&b, "");
    for (size_t i = 0; i < m->len; i++)
        strbuf_addf(&b, "%s%s", i ? " " : "", m->items[i].str);
    json_free(v);
    return strbuf_take(&b);
}

/* Completion by context (issue 24, item 10; doc/language.md, "Tab
 * completion"): what may stand where the cursor is, from the statement
 * typed before it — the same logic as the REPL's (complete.c). */
static void test_complete_by_context(void **state)
{
    child_t *c = *state;
    NEED_NH(c);
    say(c, "{\"request\":\"execute\",\"code\":\"param m = 1, r = 0.5\\n"
           "coord x, y, theta, phi\\nspeed u1\\nframe N\\n"
           "frame W from N about z by phi\\n"
           "body wheel mass m at [x, y, r] frame W inertia [1, 1, 2]\\n"
           "particle P mass m at [x, y]\\n"
           "constraint roll: x' = r*theta'\"}");
    expect_execute(c, "ok");
    static const char *const cases[][2] = {
        /* after `equations` and `compare`: the methods */
        {"equations ", "first_kind gibbs_appell kane lagrange maggi "
                       "multipliers naive second_kind voronec"},
        {"equations mu", "multipliers"},
        {"compare voronec n", "naive"},
        {"compare voronec naive s", "samples"},
        /* worksheets, integrators, settings */
        {"worksheet pre", "preliminary"},
        {"worksheet latex s", "second second_reduced"},
        {"set integrator = rk", "rk1imp rk2 rk2imp rk4 rk4imp rk8pd rkck "
                                "rkf45"},
        {"simulate to 1 integrator ms", "msadams msbdf"},
        {"set r", "r rtol"},
        {"set m = 2, m", "m max_steps"},
        {"set compile = o", "off on"},
        /* show's subjects and the names of expressions; help's topics */
        {"show ka", "kane"},
        {"show latex ma", "mass max"},
        {"help vel", "velocity"},
        {"help std", "stdlib"},
        /* frames and bodies where they go */
        {"frame A from ", "N W"},
        {"frame A from W about ", "x y z"},
        {"body B mass 1 at [0, 0, 0] frame ", "N W"},
        {"torque ", "wheel"},
        {"force ", "P phi theta wheel x y"},
        {"print omega(", "N W"},
        {"print velocity([x, y, 0], w", "wheel"},
        {"print lambda(", "roll"},
        {"print reaction(", "phi theta x y"},
        /* coordinates and speeds where a variable goes */
        {"initial ", "phi t theta u1 x y"},
        {"initial x = 1, th", "theta"},
        {"eigen phi, ", "phi theta u1 x y"},
        {"sweep ", "m r"},
        {"kinematic ", "phi theta x y"},
        /* a statement begins: the statements' keywords */
        {"sim", "simulate"},
        {"print x; equ", "equations"},
        {"sweep m from 0 to 1 step 0.5: set integrator = rk8", "rk8pd"},
        /* an expression: names, not keywords; a new name: nothing */
        {"print th", "theta"},
        {"print W.", "W.x W.y W.z"},
        {"coord a, ", ""},
        {"param a = 1, ", ""},
        {"import \"eu", "euler"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *got = matches_of(c, cases[i][0]);
        if (strcmp(got, cases[i][1]) != 0)
            fail_msg("complete \"%s\": got \"%s\", want \"%s\"",
                     cases[i][0], got, cases[i][1]);
        free(got);
    }
    /* `equations ` offers no model name and no other keyword */
    char *got = matches_of(c, "equations ");
    assert_null(strstr(got, "theta"));
    assert_null(strstr(got, "print"));
    free(got);
}

/* Complete, incomplete, invalid; asking runs nothing. */
static void test_is_complete(void **state)
{
    child_t *c = *state;
    NEED_NH(c);
    const char *cases[][2] = {
        {"coord x", "complete"},
        {"print (1 +", "incomplete"},
        {"print 1 +", "incomplete"},
        {"print [1,", "incomplete"},
        {"print 1 +* 2", "invalid"},
        {"", "complete"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char req[200];
        snprintf(req, sizeof req,
                 "{\"request\":\"is_complete\",\"code\":\"%s\"}", cases[i][0]);
        say(c, req);
        json_t *v = reply(c, "is_complete");
        if (strcmp(str(v, "status"), cases[i][1]) != 0)
            fail_msg("\"%s\": %s, not %s", cases[i][0], str(v, "status"),
                     cases[i][1]);
        json_free(v);
    }
    /* coord x was only looked at: x is unknown. */
    say(c, "{\"request\":\"execute\",\"code\":\"print x\"}");
    json_t *v = hear(c, 30);
    assert_string_equal(str(v, "output"), "error");
    json_free(v);
    expect_execute(c, "error");
}

/* ---- malformed and oversized requests ------------------------------- */

static void test_malformed(void **state)
{
    child_t *c = *state;
    NEED_NH(c);
    const char *cases[][2] = {
        {"garbage", "malformed request: expected a value at byte 0"},
        {"{", "malformed request: expected a name in quotes at byte 1"},
        {"{\"request\":\"info\",}", "malformed request: expected a name"},
        {"{\"request\":\"info\"} x", "malformed request: text after the value"},
        {"{\"request\":\"info\",\"request\":\"info\"}", "a name given twice"},
        {"{\"request\":\"info\",\"id\":1e999}", "number out of range"},
        {"{\"code\":\"\\ud800\",\"request\":\"execute\"}", "unpaired high surrogate"},
        {"[1, 2]", "a request is a JSON object"},
        {"\"execute\"", "a request is a JSON object"},
        {"{}", "a request needs \"request\", a string"},
        {"{\"request\":1}", "a request needs \"request\", a string"},
        {"{\"request\":\"frobnicate\"}", "unknown request \"frobnicate\""},
        {"{\"request\":\"info\",\"id\":[1]}", "\"id\" must be a number, a string or null"},
        {"{\"request\":\"info\",\"verbose\":true}", "unknown member \"verbose\" in an info request"},
        {"{\"request\":\"execute\"}", "an execute request needs \"code\""},
        {"{\"request\":\"execute\",\"code\":1}", "needs \"code\", a string"},
        {"{\"request\":\"execute\",\"code\":\"print 1\",\"cell\":-2}", "\"cell\" must be a whole number"},
        {"{\"request\":\"execute\",\"code\":\"\",\"cursor\":0}", "unknown member \"cursor\" in an execute request"},
        {"{\"request\":\"is_complete\"}", "an is_complete request needs \"code\""},
        {"{\"request\":\"complete\",\"code\":null}", "a complete request needs \"code\""},
        {"{\"request\":\"shutdown\",\"now\":true}", "unknown member \"now\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        say(c, cases[i][0]);
        expect_refused(c, cases[i][1]);
    }
    /* Invalid UTF-8, a NUL, deep nesting: refused, never a crash. */
    put(c, "{\"request\":\"execute\",\"code\":\"\xff\"}\n", 33);
    expect_refused(c, "invalid UTF-8");
    put(c, "{\"request\":\0\"info\"}\n", 20);
    expect_refused(c, "malformed request");
    char deep[20002];
    memset(deep, '[', 10000);
    memset(deep + 10000, ']', 10000);
    deep[20000] = '\n';
    put(c, deep, 20001);
    expect_refused(c, "nested deeper than 64 levels");
    /* The id of a request refused for what it asks is echoed. */
    say(c, "{\"request\":\"nope\",\"id\":\"r1\"}");
    json_t *v = reply(c, "error");
    assert_string_equal(str(v, "id"), "r1");
    json_free(v);
    /* Blank lines are skipped; nh goes on after all of it. */
    say(c, "");
    say(c, "  \t");
    still_serves(c);
}

/* A request line longer than the bound: an error reply, the line
 * skipped (not kept), and the next request served. */
static void test_oversized(void **state)
{
    child_t *c = *state;
    NEED_NH(c);
    size_t n = PROTOCOL_MAX_REQUEST + 10;
    char *big = malloc(n + 1);
    memcpy(big, "{\"request\":\"execute\",\"code\":\"", 29);
    memset(big + 29, '1', n - 29);
    big[n] = '\n';
    put(c, big, n + 1);
    free(big);
    expect_refused(c, "request longer than 16 MiB");
    still_serves(c);
}

/* A statement's output beyond the bound is cut, with a note; the
 * session goes on.  10⁵ rows of 10 columns of ~20 characters: ~20 MB. */
static void test_output_bound(void **state)
{
    child_t *c = *state;
    NEED_NH(c);
    say(c, oscillator);
    expect_execute(c, "ok");
    say(c, "{\"request\":\"execute\",\"code\":\"simulate to 1 step 1e-5\"}");
    free(output(c, "text"));
    expect_execute(c, "ok");
    say(c, "{\"request\":\"execute\",\"code\":\"table x+pi, x+pi, x+pi, "
           "x+pi, x+pi, x+pi, x+pi, x+pi, x+pi, x+pi\"}");
    char *t = output(c, "text");
    assert_int_equal(strlen(t), PROTOCOL_MAX_OUTPUT);
    free(t);
    t = output(c, "stderr");
    assert_non_null(strstr(t, "bytes more were printed and are not shown"));
    free(t);
    expect_execute(c, "ok");
    still_serves(c);
}

/* ---- interrupts, quit, shutdown, end of input ----------------------- */

/* SIGINT during a long simulate stops it with "interrupted", as Ctrl-C
 * in the REPL; the state stays the initial one; the session goes on.
 * Between requests SIGINT does nothing. */
static void test_interrupt(void **state)
{
    child_t *c = *state;
    NEED_NH(c);
    /* A fast oscillation over 10⁶ time units: hours of steps. */
    say(c, "{\"request\":\"execute\",\"code\":\"coord x; kinetic T = x'^2/2; "
           "potential V = 5e5*x^2\\ninitial x = 1; set max_steps = 1e9\"}");
    expect_execute(c, "ok");
    kill(c->pid, SIGINT); /* idle: ignored */
    still_serves(c);
    say(c, "{\"request\":\"execute\",\"code\":\"print 1\\n"
           "simulate to 1e6 step 1e3\"}");
    free(output(c, "text")); /* the print: the simulate has begun */
    usleep(200000);
    kill(c->pid, SIGINT);
    json_t *v = hear(c, 20);
    assert_non_null(v);
    assert_string_equal(str(v, "output"), "error");
    assert_non_null(strstr(str(v, "message"), "interrupted at t = "));
    json_free(v);
    expect_execute(c, "error");
    say(c, "{\"request\":\"execute\",\"code\":\"print t, x\"}");
    char *t = output(c, "text");
    assert_string_equal(t, "t = 0\nx = 1\n");
    free(t);
    expect_execute(c, "ok");
}

static void test_quit(void **state)
{
    child_t *c = *state;
    NEED_NH(c);
    say(c, "{\"request\":\"execute\",\"code\":\"print 5\\nquit\\nprint 6\"}");
    free(output(c, "text"));
    json_t *v = reply(c, "execute");
    assert_int_equal(json_get(v, "quit")->kind, JSON_TRUE);
    json_free(v);
    assert_null(hear(c, 10)); /* nh ended */
    assert_int_equal(finish(c), 0);
}

static void test_shutdown(void **state)
{
    child_t *c = *state;
    NEED_NH(c);
    say(c, "{\"request\":\"shutdown\",\"id\":9}");
    json_t *v = reply(c, "shutdown");
    assert_true(num(v, "id") == 9);
    json_free(v);
    assert_null(hear(c, 10));
    assert_int_equal(finish(c), 0);
}

/* The input ends: nh ends with 0; a last line without '\n' is served. */
static void test_end_of_input(void **state)
{
    child_t *c = *state;
    NEED_NH(c);
    put(c, "{\"request\":\"info\"}", 18);
    close(c->to);
    c->to = -1;
    json_free(reply(c, "info"));
    assert_null(hear(c, 10));
    assert_int_equal(finish(c), 0);
}

/* ---- the command line ------------------------------------------------ */

/* The exit status of the shell command CMD ($NH names nh). */
static int status_of(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* --protocol and --install-kernel take nothing else; --user goes with
 * --install-kernel: bad usage, status 2. */
static void test_usage(void **state)
{
    (void)state;
    if (!getenv("NH"))
        skip();
    assert_int_equal(status_of("\"$NH\" --user 2>/dev/null"), 2);
    assert_int_equal(status_of("\"$NH\" --protocol x.nh 2>/dev/null"), 2);
    assert_int_equal(status_of("\"$NH\" --protocol -e 1 2>/dev/null"), 2);
    assert_int_equal(
        status_of("\"$NH\" --protocol --install-kernel 2>/dev/null"), 2);
    assert_int_equal(status_of("\"$NH\" --install-kernel -i 2>/dev/null"), 2);
    assert_int_equal(status_of("\"$NH\" --protocol -q </dev/null"), 0);
}

/* --install-kernel --user writes kernel.json under $JUPYTER_DATA_DIR:
 * Python runs the wrapper, which starts this nh; an unwritable folder is
 * an error, status 1. */
static void test_install_kernel(void **state)
{
    (void)state;
    const char *nh = getenv("NH");
    if (!nh)
        skip();
    char dir[] = "/tmp/nh-kernel-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char cmd[600];
    snprintf(cmd, sizeof cmd,
             "JUPYTER_DATA_DIR=%s/data \"$NH\" --install-kernel --user "
             ">%s/out",
             dir, dir);
    assert_int_equal(status_of(cmd), 0);
    char path[300];
    snprintf(path, sizeof path, "%s/data/kernels/nh/kernel.json", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char text[4096];
    size_t n = fread(text, 1, sizeof text, f);
    fclose(f);
    char msg[160];
    json_t *spec = json_parse(text, n, msg, sizeof msg);
    assert_non_null(spec);
    const json_t *argv = json_get(spec, "argv");
    assert_non_null(argv);
    assert_int_equal(argv->len, 6);
    assert_non_null(strstr(argv->items[1].str, "nh_kernel.py"));
    assert_string_equal(argv->items[2].str, "--nh");
    char *real = realpath(nh, NULL);
    assert_string_equal(argv->items[3].str, real);
    free(real);
    assert_string_equal(argv->items[5].str, "{connection_file}");
    assert_string_equal(str(spec, "language"), "nh");
    assert_string_equal(str(spec, "interrupt_mode"), "signal");
    json_free(spec);
    snprintf(cmd, sizeof cmd,
             "JUPYTER_DATA_DIR=/proc/nh-no-such \"$NH\" --install-kernel "
             "--user 2>%s/err",
             dir);
    assert_int_equal(status_of(cmd), 1);
    snprintf(cmd, sizeof cmd, "grep -q \"nh: cannot create the folder\" %s/err",
             dir);
    assert_int_equal(status_of(cmd), 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(status_of(cmd), 0);
}

/* ---- LaTeX for MathJax (in process) --------------------------------- */

static void mathjax_is(const char *latex, const char *want)
{
    char *got = protocol_mathjax(latex, strlen(latex));
    assert_string_equal(got, want);
    free(got);
}

static void test_mathjax(void **state)
{
    (void)state;
    /* One formula. */
    mathjax_is("\\ddot{\\theta}\n", "$\\displaystyle \\ddot{\\theta}\n$");
    /* Rows of equations (show latex eom): aligned, the comment kept as a
     * TeX comment on its own line, "\\" between rows only. */
    mathjax_is("% lagrange\n\\ddot{x} &= 0 \\\\\ny &= 1 \\\\\n",
               "$\\displaystyle \\begin{aligned}\n% lagrange\n"
               "\\ddot{x} &= 0 \\\\\ny &= 1\n\\end{aligned}$");
    /* A matrix's rows (show latex mass). */
    mathjax_is("m & 0 \\\\\n0 & m\n",
               "$\\displaystyle \\left[\\begin{matrix}\nm & 0 \\\\\n0 & m\n"
               "\\end{matrix}\\right]$");
    /* A whole align* environment (what show latex may print): aligned
     * inside the formula. */
    mathjax_is("\\begin{align*}\nx &= 1\n\\end{align*}\n",
               "$\\displaystyle \\begin{aligned}\nx &= 1\n\\end{aligned}$");
    /* Another environment stays as it is, inside the formula. */
    mathjax_is("\\begin{pmatrix}a\\end{pmatrix}",
               "$\\displaystyle \\begin{pmatrix}a\\end{pmatrix}$");
    mathjax_is("", "$\\displaystyle \n$");
    /* A long output (LANGUAGE.md §7.1: named subexpressions, a
     * worksheet): the group that lets pdflatex break pages goes, each
     * align* is a display of its own, without its comments (MathJax
     * reads a $$ display as one line: a comment would hide the rest). */
    mathjax_is("{\\allowdisplaybreaks\n\\begin{align*}\n% h\n"
               "&\\text{where}\\quad k_{1} = x\n\\end{align*}\n"
               "\\begin{align*}\n&y = k_{1}\n\\end{align*}\n}\n",
               "$$\\begin{aligned}\n&\\text{where}\\quad k_{1} = x\n"
               "\\end{aligned}$$\n$$\\begin{aligned}\n&y = k_{1}\n"
               "\\end{aligned}$$");
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, start, stop)
    const struct CMUnitTest tests[] = {
        T(test_info),
        T(test_execute_text),
        T(test_execute_error),
        T(test_output_file_is_the_channel),
        T(test_execute_syntax),
        T(test_execute_error_in_loaded_file),
        T(test_execute_latex_stderr),
        T(test_execute_svg),
        T(test_execute_events),
        T(test_complete),
        T(test_complete_by_context),
        T(test_is_complete),
        T(test_malformed),
        T(test_oversized),
        T(test_output_bound),
        T(test_interrupt),
        T(test_quit),
        T(test_shutdown),
        T(test_end_of_input),
        cmocka_unit_test(test_usage),
        cmocka_unit_test(test_install_kernel),
        cmocka_unit_test(test_mathjax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
