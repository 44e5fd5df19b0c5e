/*
 * test_session.c — the session as the REPL and scripts use it: a failing
 * statement between good ones changes nothing (model, state, equations),
 * errors carry the right place, continuation, files.
 */
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include <dirent.h>

#include "interp/base/util.h"
#include "interp/eom/eom.h"
#include "interp/mech/lower.h"
#include "interp/cli/complete.h"
#include "interp/cli/context.h"
#include "interp/cli/session.h"
#include "interp/cli/stmts.h"
#include "lang/keywords.h"
#include "lang/parse.h"

typedef struct fixture {
    session_t *s;
    char *out, *err;
    size_t out_len, err_len;
    FILE *fout, *ferr;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    f->fout = open_memstream(&f->out, &f->out_len);
    f->ferr = open_memstream(&f->err, &f->err_len);
    f->s = session_new(true, f->fout, f->ferr);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    session_free(f->s);
    fclose(f->fout);
    fclose(f->ferr);
    free(f->out);
    free(f->err);
    free(f);
    return 0;
}

/* Runs TEXT as a REPL entry; returns the status. */
static run_status_t run(fixture_t *f, const char *text)
{
    return session_run_text(f->s, "<repl>", text, strlen(text), true);
}

static const char model[] =
    "param m = 1, k = 4\n"
    "coord x, y\n"
    "kinetic T = m/2*(x'^2 + y'^2)\n"
    "potential V = k/2*(x^2 + y^2)\n"
    "initial x = 0.5, y = -1, x' = 2, y' = 0.25\n"
    "equations lagrange\n"
    "simulate to 1 step 0.25\n";

static void test_failing_statements_change_nothing(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(run(f, model), RUN_OK);
    const char *probe = "print T, V, x, y', x'', m\naccel\nshow model\n"
                        "table t, x, y, T + V\n";
    assert_int_equal(run(f, probe), RUN_OK);
    fflush(f->fout);
    char *before = strndup(f->out, f->out_len);
    size_t mark = f->out_len;

    static const char *const bad[] = {
        "coord m",                        /* kind clash */
        "kinetic T = m/2*x'^2 + bogus",   /* unknown name */
        "potential V = [x, y]",           /* vector energy */
        "constraint c: x' = y''",         /* second derivative */
        "initial x = 1, nope = 2",        /* unknown name: x must not move */
        "initial x = 1, x = 2",           /* given twice */
        "set m = 1/0",                    /* not finite */
        "set x = 3",                      /* not a parameter */
        "param q = 2, m = unknown",       /* q must not appear */
        "equations voronecc",             /* unknown method */
        "equations multipliers samples",  /* syntax */
        "initial x' = 3, y' = 3, x' = 1", /* given twice */
        "let f(a, a) = a",                /* argument twice */
        "force m = 1",                    /* not a coordinate */
        "print x, y, 1/0",                /* nothing printed */
        "load \"/nonexistent/file.nh\"",
        "simulate to 2 integrator rk9",   /* unknown integrator */
        "simulate to 2 step -1",          /* negative step */
        "simulate to 2 step 0.5 step 0.1",/* option twice */
        "table t, lambda(nope)",          /* unknown constraint */
        "table x > \"/nonexistent/dir/f.csv\"", /* unwritable */
        "plot x > \"f.txt\"",             /* not png/svg */
        "worksheet second",               /* no constraints */
        "worksheet secnd",                /* unknown */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(run(f, bad[i]), RUN_ERROR);
    fflush(f->fout);
    f->out[f->out_len] = '\0';
    /* Nothing was printed by the failing statements. */
    assert_int_equal(f->out_len, mark);
    assert_int_equal(run(f, probe), RUN_OK);
    fflush(f->fout);
    assert_string_equal(f->out + mark, before);
    free(before);
}

static void test_error_location_and_caret(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(run(f, "param m = 1\ncoord x\nprint m + xx\n"), RUN_ERROR);
    fflush(f->ferr);
    assert_non_null(strstr(f->err,
                           "<repl>:3:11: error: unknown name 'xx'; did you "
                           "mean 'x'?\n"
                           "print m + xx\n"
                           "          ^~\n"));
}

static void test_incomplete_asks_for_more(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(run(f, "print (1 +\n"), RUN_INCOMPLETE);
    assert_int_equal(run(f, "print (1 +\n2)\n"), RUN_OK);
    fflush(f->fout);
    assert_string_equal(f->out, "(1 + 2) = 3\n");
}

static void test_script_stops_at_first_error(void **state)
{
    fixture_t *f = *state;
    const char *text = "print 1\nprint nope\nprint 2\n";
    assert_int_equal(session_run_text(f->s, "s.nh", text, strlen(text), false),
                     RUN_ERROR);
    fflush(f->fout);
    assert_string_equal(f->out, "1 = 1\n");
}

static void test_syntax_error_runs_nothing(void **state)
{
    fixture_t *f = *state;
    const char *text = "print 1\nprint (2\nprint 3\n";
    assert_int_equal(session_run_text(f->s, "s.nh", text, strlen(text), false),
                     RUN_ERROR);
    fflush(f->fout);
    assert_int_equal(f->out_len, 0);
}

static void test_bad_files(void **state)
{
    fixture_t *f = *state;
    char dir[] = "/tmp/nh-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/nul.nh", dir);
    FILE *fp = fopen(path, "wb");
    fwrite("print 1\n\0print 2\n", 1, 17, fp);
    fclose(fp);
    char stmt[512];
    snprintf(stmt, sizeof stmt, "load \"%s\"", path);
    assert_int_equal(run(f, stmt), RUN_ERROR);
    fflush(f->fout);
    assert_int_equal(f->out_len, 0); /* a syntax error runs nothing */
    snprintf(stmt, sizeof stmt, "load \"%s\"", dir);
    assert_int_equal(run(f, stmt), RUN_ERROR);
    fflush(f->ferr);
    assert_non_null(strstr(f->err, "is a directory"));
    assert_int_equal(run(f, "import \"no_such_module\""), RUN_ERROR);
    assert_int_equal(run(f, "import \"../etc/passwd\""), RUN_ERROR);
    unlink(path);
    rmdir(dir);
}

static void test_quit(void **state)
{
    fixture_t *f = *state;
    const char *text = "print 1\nquit\nprint 2\n";
    assert_int_equal(session_run_text(f->s, "s.nh", text, strlen(text), false),
                     RUN_OK);
    assert_true(session_quit_requested(f->s));
    fflush(f->fout);
    assert_string_equal(f->out, "1 = 1\n");
}

/* A fast oscillation (period 2π/1000) asked for over 10⁶ time units:
 * hours of work, cut by the step limit after 10⁷ steps (seconds; without
 * the stop the tests below fail on that error rather than hang). */
static const char endless[] =
    "coord x\n"
    "kinetic T = x'^2/2\n"
    "potential V = 5e5*x^2\n"
    "initial x = 1\n"
    "set max_steps = 1e7\n";

/* The error text written since MARK. */
static const char *err_since(fixture_t *f, size_t mark)
{
    fflush(f->ferr);
    return f->err + mark;
}

/* session_set_time_limit: the limit stops a simulate and a compare at
 * their next step with an error, changes nothing, and holds per
 * session_run_text (a run after it starts with the clock reset; 0 lifts
 * it).  A limit of 1 ns has passed by the first step, so where they stop
 * does not depend on the machine's speed. */
static void test_time_limit_stops_long_work(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(run(f, endless), RUN_OK);
    fflush(f->ferr);
    size_t mark = f->err_len;
    session_set_time_limit(f->s, 1e-9);
    assert_int_equal(run(f, "simulate to 1e6 step 1e3\n"), RUN_ERROR);
    const char *e = err_since(f, mark);
    /* stopped at its first step: the state is left at the only sample */
    assert_non_null(strstr(e, "error: stopped: the statement ran past its "
                              "time limit at t = "));
    static const char left[] = " at t = 0; the state is left at the last "
                               "sample, at t = 0; state: x = 1, x' = 0\n";
    /* (the message, for tests/error_coverage.sh, on one line:
     *   at t = 0; the state is left at the last sample, at t = 0; ...) */
    assert_non_null(strstr(e, left));

    mark = f->err_len;
    assert_int_equal(run(f, "compare lagrange multipliers samples 1000\n"),
                     RUN_ERROR);
    assert_non_null(strstr(err_since(f, mark),
                           "error: stopped: the statement ran past its time "
                           "limit after 0 of 1000 random states"));

    /* The state is still the initial one; the samples recorded before
     * the stop are kept (as after any failed run): only t = 0. */
    session_set_time_limit(f->s, 0);
    fflush(f->fout);
    size_t omark = f->out_len;
    assert_int_equal(run(f, "print t, x, x'\n"), RUN_OK);
    fflush(f->fout);
    assert_string_equal(f->out + omark, "t = 0\nx = 1\nx' = 0\n");
    omark = f->out_len;
    assert_int_equal(run(f, "table t, x\n"), RUN_OK);
    fflush(f->fout);
    assert_string_equal(f->out + omark, "t,x\n0,1\n");
    /* Without the limit the same statements run. */
    assert_int_equal(run(f, "simulate to 0.01 step 0.005\n"), RUN_OK);
    assert_int_equal(run(f, "compare lagrange multipliers samples 10\n"),
                     RUN_OK);
}

static session_t *alarm_session;

static void on_alarm(int sig)
{
    (void)sig;
    session_interrupt(alarm_session);
}

/* session_interrupt from a signal handler, as the REPL's Ctrl-C calls it:
 * the running simulate stops with "interrupted"; the next
 * session_run_text starts without the request. */
static void test_interrupt_from_signal(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(run(f, endless), RUN_OK);
    alarm_session = f->s;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, &old);
    struct itimerval it = {{0, 0}, {0, 200000}}; /* 0.2 s, once */
    setitimer(ITIMER_REAL, &it, NULL);
    fflush(f->ferr);
    size_t mark = f->err_len;
    double t0 = nh_clock();
    run_status_t rc = run(f, "simulate to 1e6 step 1e3\n");
    double took = nh_clock() - t0;
    sigaction(SIGALRM, &old, NULL);
    assert_int_equal(rc, RUN_ERROR);
    assert_non_null(strstr(err_since(f, mark), "error: interrupted at t = "));
    assert_true(took < 20.0);
    assert_true(session_interrupted(f->s));
    assert_int_equal(run(f, "simulate to 0.01 step 0.005\n"), RUN_OK);
    assert_false(session_interrupted(f->s));
}

static bool has_completion(const char *const *c, const char *word)
{
    for (size_t i = 0; c[i]; i++)
        if (strcmp(c[i], word) == 0)
            return true;
    return false;
}

/* The completions of TEXT's last word (after the last character that
 * ends words), in the context of what comes before it. */
static const char *const *completions_at_end(fixture_t *f, const char *text)
{
    size_t end = strlen(text), start = end;
    while (start > 0 && !strchr(COMPLETE_WORD_BREAKS, text[start - 1]))
        start--;
    return session_completions(f->s, text, start, end);
}

/* Completion knows the statements of frames and bodies, the words of
 * theirs, the functions, the model's frames and bodies, and each frame's
 * unit vectors, each where it goes. */
static void test_completions(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(run(f, "coord th\nframe N\nframe Arm from N about z "
                            "by th\nbody rod mass 1 at Arm.x frame Arm "
                            "inertia [1, 1, 1]\n"),
                     RUN_OK);
    static const struct {
        const char *text;
        const char *want[8];
    } cases[] = {
        {"", {"frame", "body", "gravity", "torque", NULL}},
        {"frame F ", {"from", NULL}},
        {"frame F from N ", {"about", NULL}},
        {"frame F from N about x ", {"by", NULL}},
        {"body b mass 1 at [0, 0, 0] frame Arm ", {"inertia", NULL}},
        {"print ", {"omega", "on", "velocity", "Arm.x", "Arm.y", "Arm.z",
                    "N.x", "th"}},
        {"print omega(", {"Arm", "N", NULL}},
        {"print velocity(Arm.x, ", {"rod", NULL}},
        /* v3: simulate's events and integrators, lyapunov, draw, plot */
        {"simulate to 1 ", {"until", "sample", "step", "th", NULL}},
        {"simulate to 1 sample ", {"at", NULL}},
        {"simulate to 1 until th = 0 ", {"rising", "falling", NULL}},
        {"simulate to 1 integrator ", {"dla", "rk8pd", NULL}},
        {"simulate to 1 integrator dla ", {"h", NULL}},
        {"set integrator = ", {"dla", "msbdf", NULL}},
        {"lyapunov ", {"to", NULL}},
        {"lyapunov to 10 ", {"step", "th", NULL}},
        {"draw ", {"disk", "sphere", "line", "point", NULL}},
        {"plot ", {"sweep", "follow", NULL}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const char *const *c = completions_at_end(f, cases[k].text);
        for (size_t i = 0; i < 8 && cases[k].want[i]; i++)
            if (!has_completion(c, cases[k].want[i]))
                fail_msg("'%s' is not among the completions of \"%s\"",
                         cases[k].want[i], cases[k].text);
    }
    /* the words of the statement, not others, and names only in
     * expressions */
    const char *const *c = completions_at_end(f, "frame F from N ");
    assert_false(has_completion(c, "th"));
    assert_false(has_completion(c, "by"));
    c = completions_at_end(f, "print ");
    assert_false(has_completion(c, "frame"));
    assert_false(has_completion(c, "rod")); /* a body is not a value */
    /* a frame declared later is there at the next call */
    assert_int_equal(run(f, "frame Fork from Arm about [0, 1, 1] by 2*th\n"),
                     RUN_OK);
    c = completions_at_end(f, "print 2*");
    assert_true(has_completion(c, "Fork.z"));
    assert_true(has_completion(c, "Arm.y"));
    c = completions_at_end(f, "print F");
    assert_true(has_completion(c, "Fork.x"));
    assert_false(has_completion(c, "frame")); /* only those beginning F */
}

/* `set` with several bindings (issue 24, item 12), through the C API
 * until the grammar gives them: BINDINGS ("a = 1, b = 2") parsed as one
 * `set` each, their bindings put into one `set` statement, run on the
 * session's context.  Returns decl_set's status; a message goes to MSG. */
static int run_set(fixture_t *f, const char *bindings, char *msg, size_t size)
{
    char text[512];
    size_t len = 0;
    for (const char *b = bindings; *b;) {
        const char *comma = strstr(b, ", ");
        size_t n = comma ? (size_t)(comma - b) : strlen(b);
        len += (size_t)snprintf(text + len, sizeof text - len, "set %.*s\n",
                                (int)n, b);
        b += n + (comma ? 2 : 0);
    }
    source_set_t *set = source_set_new();
    uint32_t file = source_add(set, "<set>", text, strlen(text));
    ast_arena_t *arena = ast_arena_new();
    ast_program_t prog;
    diag_t err = {0};
    assert_int_equal(parse_program(set, file, arena, &prog, &err), PARSE_OK);
    ast_binding_t *items = calloc(prog.n, sizeof *items);
    for (size_t i = 0; i < prog.n; i++) {
        assert_int_equal(prog.stmts[i]->kind, STMT_SET);
        items[i] = prog.stmts[i]->u.bindings.items[0];
    }
    ast_stmt_t st = *prog.stmts[0];
    st.u.bindings.items = items;
    st.u.bindings.n = prog.n;
    int rc = decl_set(session_ctx(f->s), &st, &err);
    snprintf(msg, size, "%s", err.set ? err.msg : "");
    free(items);
    ast_arena_free(arena);
    source_set_free(set);
    return rc;
}

/* The value of EXPR printed by the session (`print EXPR`). */
static double value_of(fixture_t *f, const char *expr)
{
    fflush(f->fout);
    size_t mark = f->out_len;
    char text[256];
    snprintf(text, sizeof text, "print %s\n", expr);
    assert_int_equal(run(f, text), RUN_OK);
    fflush(f->fout);
    const char *eq = strstr(f->out + mark, " = ");
    assert_non_null(eq);
    return strtod(eq + 3, NULL);
}

/* `set a = 1, b = 2, ...`: the bindings take effect from left to right (a
 * value sees the parameters set before it), and the statement is one
 * change: when a binding fails, the parameters and settings set before it
 * in the statement are put back. */
static void test_set_several(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(run(f, model), RUN_OK);
    ctx_t *c = session_ctx(f->s);
    char msg[DIAG_MSG_MAX];
    assert_int_equal(run_set(f, "m = 2, k = 3*m", msg, sizeof msg), 0);
    assert_true(value_of(f, "m") == 2.0);
    assert_true(value_of(f, "k") == 6.0);
    /* m x'' = -k x: the equations see the new values at once */
    assert_true(fabs(value_of(f, "x'' + 6*x/2")) < 1e-15);
    assert_true(fabs(value_of(f, "x'' + 4*x/1")) > 0.1);

    double rtol = c->rtol;
    size_t max_steps = c->max_steps;
    char integrator[sizeof c->integrator];
    memcpy(integrator, c->integrator, sizeof integrator);
    /* fails at the third binding: m and rtol go back */
    assert_int_equal(run_set(f, "m = 5, rtol = 1e-6, k = bogus", msg,
                             sizeof msg),
                     -1);
    assert_non_null(strstr(msg, "unknown name 'bogus'"));
    assert_true(value_of(f, "m") == 2.0);
    assert_true(value_of(f, "k") == 6.0);
    assert_true(c->rtol == rtol);
    /* a setting that fails after the integrator was set */
    assert_int_equal(run_set(f, "integrator = rk4, max_steps = 0.5, m = 7",
                             msg, sizeof msg),
                     -1);
    assert_string_equal(msg, "max_steps must be a whole number from 1 to 1e15");
    assert_string_equal(c->integrator, integrator);
    assert_int_equal(c->max_steps, max_steps);
    assert_true(value_of(f, "m") == 2.0);
    /* compile is applied only when all succeeded */
    assert_int_equal(run_set(f, "compile = on, m = 1/0", msg, sizeof msg), -1);
    assert_false(c->compile);
    assert_int_equal(run_set(f, "m = 3, m = 4", msg, sizeof msg), -1);
    assert_string_equal(msg, "'m' is set twice in one statement");
    assert_true(value_of(f, "m") == 2.0);
    /* all succeed: every one applied */
    assert_int_equal(run_set(f, "integrator = rk4, max_steps = 50, "
                                "atol = 1e-9, k = m + 1",
                             msg, sizeof msg),
                     0);
    assert_string_equal(c->integrator, "rk4");
    assert_int_equal(c->max_steps, 50);
    assert_true(c->atol == 1e-9);
    assert_true(value_of(f, "k") == 3.0);
}

/* LANGUAGE.md §6: a simulate that fails keeps its samples and leaves the
 * state at the last of them, so the next simulate continues the same
 * trajectory and the samples stay in increasing t.  Here the step limit
 * stops a harmonic oscillator (x = cos t from x = 1 at rest) part way;
 * the next run from where it stopped reaches t = 10 and the table holds
 * t = 0, 0.5, ..., 10 once each, every row on the closed form. */
static void test_failed_simulate_continues(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(run(f, "coord x\nkinetic T = x'^2/2\n"
                            "potential V = x^2/2\ninitial x = 1\n"
                            "set max_steps = 20\n"),
                     RUN_OK);
    assert_int_equal(run(f, "simulate to 10 step 0.5\n"), RUN_ERROR);
    fflush(f->fout);
    size_t mark = f->out_len;
    assert_int_equal(run(f, "print t, x - cos(t), x' + sin(t)\n"), RUN_OK);
    fflush(f->fout);
    double t = -1, dx = 1, dv = 1;
    assert_int_equal(sscanf(f->out + mark,
                            "t = %lf\nx - cos(t) = %lf\nx' + sin(t) = %lf",
                            &t, &dx, &dv),
                     3);
    /* Stopped part way, at a sample time, on the trajectory. */
    assert_true(t > 0 && t < 10 && t == 0.5 * floor(t / 0.5));
    assert_true(fabs(dx) < 1e-9 && fabs(dv) < 1e-9);
    assert_int_equal(run(f, "set max_steps = 1e6\nsimulate to 10 step 0.5\n"),
                     RUN_OK);
    fflush(f->fout);
    mark = f->out_len;
    assert_int_equal(run(f, "table t, x - cos(t)\n"), RUN_OK);
    fflush(f->fout);
    const char *p = f->out + mark;
    assert_true(strncmp(p, "t,x - cos(t)\n", 13) == 0);
    p += 13;
    for (int k = 0; k <= 20; k++) {
        double tk, d;
        int used = 0;
        assert_int_equal(sscanf(p, "%lf,%lf\n%n", &tk, &d, &used), 2);
        assert_true(tk == 0.5 * k);
        assert_true(fabs(d) < 1e-9);
        p += used;
    }
    assert_int_equal(*p, '\0');
}

/* LANGUAGE.md §6: `set` of a parameter that the constraints use warns,
 * naming the constraint and its residual, when the state then violates
 * them by more than 1e-9; a parameter they do not use, or a value that
 * keeps the state on them, says nothing.  The rod x^2 + y^2 = l^2 at
 * (0.6, -0.8): l = 2 leaves it off by 1 - 4 = -3. */
static void test_set_warns_off_constraints(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(run(f, "param l = 1, k = 2\ncoord x, y\n"
                            "particle P mass k at [x, y]\n"
                            "constraint rod: x^2 + y^2 = l^2\n"
                            "initial x = 0.6, y ~ -1\n"),
                     RUN_OK);
    fflush(f->ferr);
    size_t mark = f->err_len;
    assert_int_equal(run(f, "set k = 3\n"), RUN_OK);
    assert_int_equal(run(f, "set l = 1\n"), RUN_OK);
    assert_string_equal(err_since(f, mark), "");
    assert_int_equal(run(f, "set l = 2\n"), RUN_OK);
    assert_non_null(strstr(
        err_since(f, mark),
        "<repl>:1:1: warning: "
        "the state now violates rod (residual -3): `reset` solves it again "
        "from the remembered initial values, `simulate ... project` pulls "
        "it back first\n"));
    fflush(f->ferr);
    mark = f->err_len;
    assert_int_equal(run(f, "set l = 1\n"), RUN_OK);
    assert_string_equal(err_since(f, mark), "");
    assert_int_equal(run(f, "simulate to 0.1\n"), RUN_OK);
}

/* An error that describes the state of a model with no coordinates and
 * no speeds ends at the time: "at t = 0", not "at t = 0; state:". */
static void test_empty_state_description(void **state)
{
    fixture_t *f = *state;
    fflush(f->ferr);
    size_t mark = f->err_len;
    assert_int_equal(run(f, "param a = 0\nprint 1/a\n"), RUN_ERROR);
    const char *e = err_since(f, mark);
    const char *line_end = strchr(e, '\n');
    assert_non_null(line_end);
    assert_null(strstr(e, "state:"));
    assert_true(line_end - e > 9 && strncmp(line_end - 9, " at t = 0", 9) == 0);
}

/* Every keyword, every method name and every topic has a help text that
 * starts by naming its subject, and the overview exists. */
static void test_help_covers_every_statement(void **state)
{
    (void)state;
    assert_non_null(help_text(NULL));
    for (size_t i = 0; parse_keywords[i]; i++) {
        const char *t = help_text(parse_keywords[i]);
        if (!t)
            fail_msg("no help for the keyword '%s'", parse_keywords[i]);
        assert_non_null(strstr(t, parse_keywords[i]));
    }
    for (size_t i = 0; eom_method_names[i]; i++) {
        const char *t = help_text(eom_method_names[i]);
        if (!t)
            fail_msg("no help for the method '%s'", eom_method_names[i]);
        assert_non_null(strstr(t, eom_method_names[i]));
    }
    size_t ntopics = 0;
    for (size_t i = 0; help_topics[i]; i++, ntopics++)
        assert_non_null(help_text(help_topics[i]));
    /* every entry is listed (suggestions and completion read the list) */
    assert_int_equal(ntopics, help_entry_count());
    assert_null(help_text("no_such_topic"));
}

/* Every built-in function (LANGUAGE.md §3.4), every module of the
 * standard library (the .nh files of stdlib/) and every function a module declares
 * has a help entry; a module's entry names its functions (issue 24, item
 * 11: `help velocity`, `help contact`, `help stdlib` were unknown). */
static void test_help_covers_functions_and_stdlib(void **state)
{
    (void)state;
    const char *const *builtins = lower_builtin_functions();
    for (size_t i = 0; builtins[i]; i++) {
        const char *t = help_text(builtins[i]);
        if (!t)
            fail_msg("no help for the built-in function '%s'", builtins[i]);
        if (!strstr(t, builtins[i]))
            fail_msg("help %s does not name it", builtins[i]);
        if (!strstr(help_text("functions"), builtins[i]))
            fail_msg("help functions does not list '%s'", builtins[i]);
    }
    assert_non_null(help_text("stdlib"));
    DIR *d = opendir(NH_STDLIB_SRC);
    assert_non_null(d);
    size_t modules = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len < 4 || strcmp(de->d_name + len - 3, ".nh") != 0)
            continue;
        char module[256];
        snprintf(module, sizeof module, "%.*s", (int)(len - 3), de->d_name);
        const char *t = help_text(module);
        if (!t)
            fail_msg("no help for the stdlib module '%s'", module);
        if (!strstr(help_text("stdlib"), module))
            fail_msg("help stdlib does not list '%s'", module);
        modules++;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", NH_STDLIB_SRC, de->d_name);
        FILE *fp = fopen(path, "r");
        assert_non_null(fp);
        char line[4096];
        size_t functions = 0;
        while (fgets(line, sizeof line, fp)) {
            char name[128];
            if (sscanf(line, "let %127[A-Za-z0-9_](", name) != 1 ||
                !strchr(line, '('))
                continue;
            functions++;
            if (!help_text(name))
                fail_msg("no help for '%s' of stdlib/%s", name, de->d_name);
            if (!strstr(t, name))
                fail_msg("help %s does not name its function '%s'", module,
                         name);
        }
        fclose(fp);
        assert_true(functions > 0);
    }
    closedir(d);
    assert_true(modules >= 3); /* contact, euler, rigid */
}

/* The reader on the stream "<repl>" with the REPL's rules: feeds LINE. */
static run_status_t type_line(session_reader_t *r, const char *line)
{
    return session_reader_line(r, line, strlen(line));
}

/* LANGUAGE.md §9: a long session uses memory in proportion to its model,
 * not to the lines typed.  Thousands of statements that the model does
 * not keep — prints, failures, a parameter declared again and again —
 * leave a bounded number of texts and arenas behind (they grew by one
 * per line before); the texts the model needs stay, so an old place is
 * still named right. */
static void test_memory_follows_the_model(void **state)
{
    fixture_t *f = *state;
    session_reader_t *r = session_reader_new(f->s, "<repl>", true);
    assert_int_equal(type_line(r, "param a = 1"), RUN_OK);
    assert_int_equal(type_line(r, "coord x; kinetic T = x'^2/2"), RUN_OK);
    char line[64];
    for (int i = 0; i < 3000; i++) {
        assert_int_equal(type_line(r, "print 1"), RUN_OK);
        snprintf(line, sizeof line, "param b = %d", i);
        assert_int_equal(type_line(r, line), RUN_OK);
        assert_int_equal(type_line(r, "print (1 +"), RUN_INCOMPLETE);
        assert_int_equal(type_line(r, "  2)"), RUN_OK);
        assert_int_equal(type_line(r, "print nope"), RUN_ERROR);
    }
    size_t texts, arenas;
    session_memory(f->s, &texts, &arenas);
    /* The model's three texts, and at most two collections' worth. */
    assert_true(arenas <= 2 * 64 + 3);
    assert_true(texts <= arenas + 1);
    assert_true(arenas >= 3);

    /* 2 + 5 × 3000 lines were typed: this is line 15003. */
    assert_int_equal(type_line(r, "coord a"), RUN_ERROR);
    fflush(f->ferr);
    assert_non_null(strstr(f->err,
                           "<repl>:15003:7: error: 'a' is already declared "
                           "as a parameter at <repl>:1:7; it cannot also "
                           "be a coordinate\ncoord a\n      ^\n"));
    session_reader_free(r);
    fflush(f->fout);
    assert_int_equal(f->out_len, 6000 * strlen("1 = 1\n") -
                                     3000 * strlen("1 = 1\n") +
                                     3000 * strlen("(1 + 2) = 3\n"));
}

/* Every kind of declaration keeps the text it was made in while the
 * model holds it, however many statements come after (a frame, a body and
 * gravity were once freed under the model: model_mark_files must name
 * every kind).  Each declaration is its own text here. */
static void test_memory_keeps_every_declaration(void **state)
{
    fixture_t *f = *state;
    static const char *const decls[] = {
        "param m = 1, g = 9.81",
        "coord th",
        "speed u",
        "let h = 1",
        "frame N",
        "frame A from N about y by th",
        "body rod mass m at -h*A.z frame A inertia [0.1, 0.1, 0.1]",
        "gravity [0, 0, -g]",
        "torque rod = [0, 0.5, 0]",
        "force rod at -h*A.z = [1, 0, 0]",
        "force th = -th'",
        "kinematic th' = u",
        "constraint c: u = th'",
        "equations maggi",
    };
    size_t nd = sizeof decls / sizeof decls[0];
    session_reader_t *r = session_reader_new(f->s, "<repl>", true);
    for (size_t i = 0; i < nd; i++)
        assert_int_equal(type_line(r, decls[i]), RUN_OK);
    /* Right after each collection (the count of arenas falls), every
     * declaration's text is still there. */
    size_t texts, arenas, before = 0, collections = 0;
    for (int i = 0; i < 3000; i++) {
        assert_int_equal(type_line(r, "print 1"), RUN_OK);
        session_memory(f->s, &texts, &arenas);
        if (arenas < before) {
            collections++;
            assert_true(arenas >= nd);
        }
        before = arenas;
    }
    assert_true(collections > 0);
    session_reader_free(r);
}

/* LANGUAGE.md §9: in the REPL (and a notebook's cells) LINE counts the
 * lines of the session, from text to text; an unfinished text numbers
 * nothing, since it comes again with more. */
static void test_lines_numbered_across_texts(void **state)
{
    fixture_t *f = *state;
    const char *a = "param k = 1\n\ncoord x\n";
    assert_int_equal(session_run_lines(f->s, "<cell>", a, strlen(a), true),
                     RUN_OK);
    assert_int_equal(session_run_lines(f->s, "<cell>", "print (1 +\n", 11,
                                       true),
                     RUN_INCOMPLETE);
    const char *b = "print (1 +\n 2)\nprint k + xx";
    assert_int_equal(session_run_lines(f->s, "<cell>", b, strlen(b), true),
                     RUN_ERROR);
    const char *c = "coord k";
    assert_int_equal(session_run_lines(f->s, "<cell>", c, strlen(c), true),
                     RUN_ERROR);
    /* another stream counts on its own; a file starts at 1 */
    assert_int_equal(session_run_lines(f->s, "<other>", c, strlen(c), true),
                     RUN_ERROR);
    assert_int_equal(session_run_text(f->s, "f.nh", c, strlen(c), false),
                     RUN_ERROR);
    fflush(f->ferr);
    const char *want[] = {
        "<cell>:6:11: error: unknown name 'xx'; did you mean 'x'?",
        "<cell>:7:7: error: 'k' is already declared as a parameter at "
        "<cell>:1:7",
        "<other>:1:7: error: 'k' is already declared as a parameter at "
        "<cell>:1:7",
        "f.nh:1:7: error: 'k' is already declared",
    };
    const char *at = f->err;
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const char *hit = strstr(at, want[i]);
        if (!hit)
            fail_msg("no \"%s\" in:\n%s", want[i], f->err);
        at = hit + strlen(want[i]);
    }
}

/* The REPL's reader: an empty line ends a statement left open, which is
 * then reported at its open bracket (doc/language.md); a script read a
 * line at a time (`nh -`) goes on through empty lines, as a file does. */
static void test_reader_rules(void **state)
{
    fixture_t *f = *state;
    session_reader_t *r = session_reader_new(f->s, "<repl>", true);
    assert_int_equal(type_line(r, "print 1; print (2 +"), RUN_INCOMPLETE);
    assert_true(session_reader_open(r));
    assert_int_equal(type_line(r, "   "), RUN_ERROR);
    assert_false(session_reader_open(r));
    /* Ctrl-C drops the open lines; they are counted all the same */
    assert_int_equal(type_line(r, "print [1,"), RUN_INCOMPLETE);
    session_reader_drop(r);
    assert_int_equal(type_line(r, "print nope"), RUN_ERROR);
    /* input that ends inside a statement reports it */
    assert_int_equal(type_line(r, "print f(1,"), RUN_INCOMPLETE);
    assert_int_equal(session_reader_end(r), RUN_ERROR);
    session_reader_free(r);

    r = session_reader_new(f->s, "<stdin>", false);
    assert_int_equal(type_line(r, "print (3 +"), RUN_INCOMPLETE);
    assert_int_equal(type_line(r, ""), RUN_INCOMPLETE);
    assert_int_equal(type_line(r, "  4)"), RUN_OK);
    session_reader_free(r);

    fflush(f->fout);
    fflush(f->ferr);
    assert_string_equal(f->out, "(3 + 4) = 7\n"); /* print 1 never ran */
    assert_non_null(strstr(f->err, "<repl>:1:16: error: '(' is never "
                                   "closed\n"));
    assert_non_null(strstr(f->err, "<repl>:4:7: error: unknown name"));
    assert_non_null(strstr(f->err, "<repl>:5:8: error: '(' is never "
                                   "closed\n"));
}

/* A long statement typed a line at a time is parsed a few times, not
 * once per line (which took minutes for this one). */
static void test_reader_long_statement(void **state)
{
    fixture_t *f = *state;
    session_reader_t *r = session_reader_new(f->s, "<stdin>", false);
    assert_int_equal(type_line(r, "print [0,"), RUN_INCOMPLETE);
    for (int i = 0; i < 100000; i++)
        assert_int_equal(type_line(r, "  1,"), RUN_INCOMPLETE);
    assert_int_equal(type_line(r, "  0]"), RUN_ERROR);
    fflush(f->ferr);
    assert_non_null(strstr(f->err, "<stdin>:1:7: error: "));

    /* past 1 MiB: an error at its first line, and the lines dropped */
    char *line = malloc(60001);
    memset(line, ' ', 60000);
    line[60000] = '\0';
    line[0] = '1';
    line[1] = ',';
    assert_int_equal(type_line(r, "print [0,"), RUN_INCOMPLETE);
    int k = 0;
    run_status_t rc;
    while ((rc = type_line(r, line)) == RUN_INCOMPLETE)
        k++;
    free(line);
    assert_int_equal(rc, RUN_ERROR);
    assert_int_equal(k, (1 << 20) / 60001);
    assert_false(session_reader_open(r));
    session_reader_free(r);
    fflush(f->ferr);
    assert_non_null(strstr(f->err,
                           "<stdin>:100003:1: error: a statement longer "
                           "than 1 MiB: put it in a file and `load` it, or "
                           "split it with `let`\nprint [0,\n^\n"));
}

/* LANGUAGE.md §7: a write error on the output is an error, never silent;
 * `> "file"` writes elsewhere and is not touched by it. */
static void test_write_error_is_an_error(void **state)
{
    (void)state;
    FILE *full = fopen("/dev/full", "w");
    if (!full)
        skip();
    char *err = NULL;
    size_t err_len = 0;
    FILE *ferr = open_memstream(&err, &err_len);
    session_t *s = session_new(true, full, ferr);
    const char *text = "print 1\nhelp\n";
    assert_int_equal(session_run_text(s, "w.nh", text, strlen(text), false),
                     RUN_ERROR);
    fflush(ferr);
    assert_non_null(strstr(err, "w.nh:1:1: error: cannot write the output: "
                                "No space left on device\n"));
    /* what failed is dropped: the next statement starts afresh */
    char dir[] = "/tmp/nh-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char stmt[256], path[128];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    snprintf(stmt, sizeof stmt, "print 2 > \"%s\"", path);
    assert_int_equal(session_run_text(s, "w.nh", stmt, strlen(stmt), false),
                     RUN_OK);
    FILE *in = fopen(path, "r");
    assert_non_null(in);
    char got[32] = "";
    assert_non_null(fgets(got, sizeof got, in));
    fclose(in);
    assert_string_equal(got, "2 = 2\n");
    unlink(path);
    rmdir(dir);
    session_free(s);
    fclose(full);
    fclose(ferr);
    free(err);
}

/* `show` refuses an expression nested deeper than 10 000 levels, which
 * the simplifier and the printers would recurse through (issue 31: a
 * chain of 150 000 lets, each the sine of the one before, overflowed the
 * stack): a let chain 10 001 deep, and the kinematic equation of a
 * coordinate read from the last of a chain of 8000 frames.  A value is
 * still printed. */
static void test_show_too_deep(void **state)
{
    fixture_t *f = *state;
    strbuf_t b;
    strbuf_init(&b);
    strbuf_add(&b, "coord q, x\nlet a0 = q\n");
    for (int i = 1; i <= 10001; i++)
        strbuf_addf(&b, "let a%d = sin(a%d)\n", i, i - 1);
    assert_int_equal(run(f, b.data), RUN_OK);
    fflush(f->ferr);
    size_t mark = f->err_len;
    assert_int_equal(run(f, "show a10001\n"), RUN_ERROR);
    assert_non_null(strstr(err_since(f, mark),
                           "error: this expression is nested too deeply to "
                           "show (more than 10000 levels); print its value "
                           "instead"));
    fflush(f->fout);
    size_t omark = f->out_len;
    assert_int_equal(run(f, "show a9000 - a9000\nprint a10001\n"), RUN_OK);
    fflush(f->fout);
    assert_string_equal(f->out + omark, "0\na10001 = 0\n");

    strbuf_free(&b);
    strbuf_add(&b, "frame N\nframe F0 from N about z by q\n");
    for (int i = 1; i < 8000; i++)
        strbuf_addf(&b, "frame F%d from F%d about x by q\n", i, i - 1);
    strbuf_add(&b, "speed u\nkinematic q' = u\nkinematic x' = u*F7999.y[3]\n");
    assert_int_equal(run(f, b.data), RUN_OK);
    fflush(f->ferr);
    mark = f->err_len;
    assert_int_equal(run(f, "show kinematics\n"), RUN_ERROR);
    const char *deep =
        "error: x' is nested too deeply to show (more than 10000 levels)";
    assert_non_null(strstr(err_since(f, mark), deep));
    strbuf_free(&b);
}

/* diff() nested forty deep builds sums of thousands of products: bounded
 * by the nodes (200 000), by the edges between them (10^7: one product
 * of 3200 factors differentiated has 3200 terms of 3199 factors), and by
 * the session's time limit — the stop of Ctrl-C — in mid-derivative
 * (issue 31: 3.2 s natively, 18 s under the sanitizers, not to be
 * interrupted).  What was made meanwhile is not kept: the same
 * derivative asked again is the same error, a smaller one is right. */
static void test_derivative_bounds(void **state)
{
    fixture_t *f = *state;
    strbuf_t b;
    strbuf_init(&b);
    strbuf_add(&b, "coord x\ninitial x = 0.3\n");
    for (int j = 0; j < 32; j++) {
        strbuf_addf(&b, "let p%d = ", j);
        for (int i = 0; i < 100; i++)
            strbuf_addf(&b, "%s(x + %d)", i ? "*" : "", 100 * j + i + 1);
        strbuf_add(&b, "\n");
    }
    strbuf_add(&b, "let p = p0");
    for (int j = 1; j < 32; j++)
        strbuf_addf(&b, "*p%d", j);
    strbuf_add(&b, "\n");
    assert_int_equal(run(f, b.data), RUN_OK);
    strbuf_free(&b);
    fflush(f->ferr);
    size_t mark = f->err_len;
    assert_int_equal(run(f, "print diff(p, x)\n"), RUN_ERROR);
    assert_non_null(strstr(err_since(f, mark),
                           "error: this expression grows too large (more than 10000000 edges between the nodes of the graph)"));
    /* forty diffs: the time limit stops them in mid-course */
    strbuf_init(&b);
    strbuf_add(&b, "print ");
    for (int i = 0; i < 40; i++)
        strbuf_add(&b, "diff(");
    strbuf_add(&b, "exp(x*sin(x))");
    for (int i = 0; i < 40; i++)
        strbuf_add(&b, ", x)");
    strbuf_add(&b, "\n");
    session_set_time_limit(f->s, 1e-9);
    fflush(f->ferr);
    mark = f->err_len;
    assert_int_equal(run(f, b.data), RUN_ERROR);
    assert_non_null(strstr(err_since(f, mark),
                           "error: stopped: the statement ran past its time "
                           "limit while differentiating"));
    session_set_time_limit(f->s, 0);
    fflush(f->ferr);
    mark = f->err_len;
    assert_int_equal(run(f, b.data), RUN_ERROR);
    assert_non_null(strstr(err_since(f, mark),
                           "error: this expression grows too large (more "
                           "than 200000 nodes in the graph)"));
    strbuf_free(&b);
    /* what the stopped derivatives left is right: the fifth derivative
     * here is a fresh session's, digit for digit */
    static const char d5[] = "print diff(diff(diff(diff(diff(exp(x*sin(x)), "
                             "x), x), x), x), x)\n";
    fflush(f->fout);
    size_t omark = f->out_len;
    assert_int_equal(run(f, d5), RUN_OK);
    fflush(f->fout);
    char *here = strdup(f->out + omark), *fresh = NULL;
    size_t flen = 0;
    FILE *fo = open_memstream(&fresh, &flen);
    session_t *s2 = session_new(true, fo, f->ferr);
    static const char init[] = "coord x\ninitial x = 0.3\n";
    assert_int_equal(session_run_text(s2, "<2>", init, strlen(init), true),
                     RUN_OK);
    assert_int_equal(session_run_text(s2, "<2>", d5, strlen(d5), true),
                     RUN_OK);
    session_free(s2);
    fclose(fo);
    assert_string_equal(here, fresh);
    free(here);
    free(fresh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_failing_statements_change_nothing,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_location_and_caret, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_incomplete_asks_for_more, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_script_stops_at_first_error,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_syntax_error_runs_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_bad_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_time_limit_stops_long_work,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_interrupt_from_signal, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_failed_simulate_continues, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_empty_state_description, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_set_warns_off_constraints, setup,
                                        teardown),
        cmocka_unit_test(test_help_covers_every_statement),
        cmocka_unit_test_setup_teardown(test_memory_follows_the_model, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_memory_keeps_every_declaration,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_lines_numbered_across_texts,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_reader_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reader_long_statement, setup,
                                        teardown),
        cmocka_unit_test(test_write_error_is_an_error),
        cmocka_unit_test_setup_teardown(test_completions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_show_too_deep, setup, teardown),
        cmocka_unit_test_setup_teardown(test_derivative_bounds, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_set_several, setup, teardown),
        cmocka_unit_test(test_help_covers_functions_and_stdlib),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
