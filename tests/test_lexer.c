/*
 * test_lexer.c — the scanner of lang/lexer.l, driven token by token.
 *
 * Token kinds, values and spans are compared with what the input says by
 * hand (the number literals against their decimal values, spans against
 * the byte offsets of the text).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lang/keywords.h"
#include "lang/parse.h"
#include "lang/parse_impl.h"
#include "lang/parser.h"
#include "lang/lexer.h"

#define MAX_TOKS 512

typedef struct tok {
    int kind;
    src_span_t span;
    double num;
    const char *str;
} tok_t;

typedef struct lexed {
    tok_t toks[MAX_TOKS];
    size_t n;
    bool error; /* the scanner returned NHYYerror */
    bool incomplete;
    diag_t diag;
    source_set_t *set;
    ast_arena_t *arena;
    uint32_t file;
} lexed_t;

/* Scans TEXT (LEN bytes) to its end or its first error. */
static lexed_t *lex_text(const char *text, size_t len)
{
    lexed_t *L = calloc(1, sizeof *L);
    assert_non_null(L);
    L->set = source_set_new();
    L->arena = ast_arena_new();
    L->file = source_add(L->set, "t.nh", text, len);
    diag_clear(&L->diag);

    parse_ctx_t ctx;
    memset(&ctx, 0, sizeof ctx);
    size_t n;
    ctx.text = source_text(L->set, L->file, &n);
    ctx.len = (uint32_t)n;
    ctx.file = L->file;
    ctx.arena = L->arena;
    ctx.diag = &L->diag;

    yyscan_t sc;
    assert_int_equal(nhyylex_init_extra(&ctx, &sc), 0);
    YY_BUFFER_STATE b = nhyy_scan_bytes(ctx.text, (int)n, sc);
    for (;;) {
        NHYYSTYPE v;
        NHYYLTYPE loc;
        memset(&v, 0, sizeof v);
        int k = nhyylex(&v, &loc, sc);
        if (k == NHYYerror) {
            L->error = true;
            break;
        }
        assert_true(L->n < MAX_TOKS);
        tok_t *t = &L->toks[L->n++];
        t->kind = k;
        t->span = loc;
        if (k == NUMBER)
            t->num = v.num;
        else if (k != NEWLINE && k != NHYYEOF && k >= 256)
            t->str = v.str;
        if (k == NHYYEOF)
            break;
    }
    L->incomplete = ctx.incomplete;
    nhyy_delete_buffer(b, sc);
    nhyylex_destroy(sc);
    return L;
}

static lexed_t *lex(const char *text)
{
    return lex_text(text, strlen(text));
}

static void lexed_free(lexed_t *L)
{
    ast_arena_free(L->arena);
    source_set_free(L->set);
    free(L);
}

/* Checks the token kinds; -1 ends the list. */
static void expect_kinds(const lexed_t *L, ...)
{
    va_list ap;
    va_start(ap, L);
    size_t i = 0;
    for (;;) {
        int k = va_arg(ap, int);
        if (k == -1)
            break;
        if (i >= L->n)
            fail_msg("token %zu: missing, expected %d", i, k);
        if (L->toks[i].kind != k)
            fail_msg("token %zu: kind %d, expected %d", i, L->toks[i].kind, k);
        i++;
    }
    va_end(ap);
    if (i != L->n)
        fail_msg("%zu tokens, expected %zu", L->n, i);
}

static void expect_span(const tok_t *t, uint32_t begin, uint32_t end)
{
    if (t->span.begin != begin || t->span.end != end)
        fail_msg("span %u..%u, expected %u..%u", (unsigned)t->span.begin,
                 (unsigned)t->span.end, (unsigned)begin, (unsigned)end);
}

/* The error's line, column and message. */
static void expect_error(const lexed_t *L, unsigned line, unsigned col,
                         const char *msg)
{
    assert_true(L->error);
    assert_true(L->diag.set);
    unsigned l, c;
    source_line_col(L->set, L->file, L->diag.span.begin, &l, &c);
    if (l != line || c != col || strcmp(L->diag.msg, msg) != 0)
        fail_msg("got %u:%u '%s', expected %u:%u '%s'", l, c, L->diag.msg,
                 line, col, msg);
}

static void test_keywords(void **state)
{
    (void)state;
    static const int kinds[] = {
        PARAM,     COORD,   SPEED,      LET,       KINETIC, POTENTIAL,
        LAGRANGIAN, PARTICLE, MASS,     AT,        FORCE,   CONSTRAINT,
        KINEMATIC, EQUATIONS, INIT,     SIMULATE,  TO,      STEP,
        INTEGRATOR, RTOL,   ATOL,       PROJECT,   RESET,   PRINT,
        ACCEL,     TABLE,   PLOT,       VS,        SHOW,    LATEX,
        CHECK,     COMPARE, SAMPLES,    WORKSHEET, SET,     LOAD,
        IMPORT,    HELP,    QUIT,       EXIT,      FRAME,   BODY,
        GRAVITY,   TORQUE,  LINEARIZE,  EIGEN,     SWEEP,     EXPORT,
        INPUT,     OUTPUT,  TRANSFER,   BODE,      STEADY,    FOLLOW,
        LYAPUNOV,  DRAW,    ANIMATE,
    };
    /* LANGUAGE.md §10, typed out again */
    static const char *const spec =
        "param coord speed let kinetic potential lagrangian particle mass at "
        "force constraint kinematic equations initial simulate to step "
        "integrator rtol atol project reset print accel table plot vs show "
        "latex check compare samples worksheet set load import help quit "
        "exit frame body gravity torque linearize eigen sweep export "
        "input output transfer bode steady follow lyapunov draw animate";
    size_t nk = sizeof kinds / sizeof *kinds;
    size_t i = 0;
    for (; parse_keywords[i]; i++) {
        assert_true(i < nk);
        lexed_t *L = lex(parse_keywords[i]);
        expect_kinds(L, kinds[i], NEWLINE, NHYYEOF, -1);
        assert_string_equal(L->toks[0].str, parse_keywords[i]);
        expect_span(&L->toks[0], 0, (uint32_t)strlen(parse_keywords[i]));
        lexed_free(L);
    }
    assert_int_equal(i, nk);

    /* the list is §10, in order */
    lexed_t *L = lex(spec);
    assert_int_equal(L->n, nk + 2);
    for (size_t k = 0; k < nk; k++) {
        assert_int_equal(L->toks[k].kind, kinds[k]);
        assert_string_equal(L->toks[k].str, parse_keywords[k]);
    }
    lexed_free(L);

    /* a keyword inside a longer word is a name */
    L = lex("params initially to_ x1 _ Print");
    expect_kinds(L, IDENT, IDENT, IDENT, IDENT, IDENT, IDENT, NEWLINE,
                 NHYYEOF, -1);
    assert_string_equal(L->toks[0].str, "params");
    assert_string_equal(L->toks[1].str, "initially");
    assert_string_equal(L->toks[2].str, "to_");
    assert_string_equal(L->toks[3].str, "x1");
    assert_string_equal(L->toks[4].str, "_");
    assert_string_equal(L->toks[5].str, "Print");
    expect_span(&L->toks[1], 7, 16);
    lexed_free(L);
}

static void test_numbers(void **state)
{
    (void)state;
    lexed_t *L = lex("12 0.5 .5 1e-3 2.5E+4 1. 007 6.25e2 1e-400");
    expect_kinds(L, NUMBER, NUMBER, NUMBER, NUMBER, NUMBER, NUMBER, NUMBER,
                 NUMBER, NUMBER, NEWLINE, NHYYEOF, -1);
    const double want[] = {12.0, 0.5, 0.5, 0.001, 25000.0, 1.0, 7.0, 625.0};
    for (size_t i = 0; i < 8; i++)
        if (L->toks[i].num != want[i])
            fail_msg("number %zu: %.17g, expected %.17g", i, L->toks[i].num,
                     want[i]);
    assert_true(L->toks[8].num >= 0 && L->toks[8].num < 1e-300);
    expect_span(&L->toks[3], 10, 14);
    expect_span(&L->toks[4], 15, 21);
    lexed_free(L);

    /* a sign is an operator, not part of the literal */
    L = lex("-1+2");
    expect_kinds(L, '-', NUMBER, '+', NUMBER, NEWLINE, NHYYEOF, -1);
    lexed_free(L);

    L = lex("print 1e999");
    expect_error(L, 1, 7, "number '1e999' is too large");
    assert_false(L->incomplete);
    lexed_free(L);

    L = lex("x = 2pi");
    expect_error(L, 1, 5, "malformed number '2pi'");
    lexed_free(L);
    L = lex("1e");
    expect_error(L, 1, 1, "malformed number '1e'");
    lexed_free(L);
}

static void test_operators(void **state)
{
    (void)state;
    lexed_t *L = lex("+-*/^'()[],;:=>~");
    expect_kinds(L, '+', '-', '*', '/', '^', '\'', '(', ')', '[', ']', ',',
                 ';', ':', '=', '>', '~', NHYYEOF, -1);
    for (uint32_t i = 0; i < 16; i++)
        expect_span(&L->toks[i], i, i + 1);
    lexed_free(L);

    L = lex("x''[2]");
    expect_kinds(L, IDENT, '\'', '\'', '[', NUMBER, ']', NEWLINE, NHYYEOF,
                 -1);
    lexed_free(L);
}

/* from, about, by are keywords only in `frame` (from also in `sweep`),
 * inertia only in `body` (LANGUAGE.md §10): a v1 script may use them as
 * names elsewhere. */
static void test_contextual_keywords(void **state)
{
    (void)state;
    lexed_t *L = lex("frame A from N about z by from");
    expect_kinds(L, FRAME, IDENT, FROM, IDENT, ABOUT, IDENT, BY, IDENT,
                 NEWLINE, NHYYEOF, -1);
    lexed_free(L);
    L = lex("body B mass m at G frame F inertia [1, 2, 3]");
    expect_kinds(L, BODY, IDENT, MASS, IDENT, AT, IDENT, FRAME, IDENT,
                 INERTIA, '[', NUMBER, ',', NUMBER, ',', NUMBER, ']',
                 NEWLINE, NHYYEOF, -1);
    lexed_free(L);
    /* elsewhere they are names, also after a statement that used them */
    L = lex("frame A from N about x by a; param from = 1, by = 2\n"
            "print about + inertia");
    expect_kinds(L, FRAME, IDENT, FROM, IDENT, ABOUT, IDENT, BY, IDENT, ';',
                 PARAM, IDENT, '=', NUMBER, ',', IDENT, '=', NUMBER, NEWLINE,
                 PRINT, IDENT, '+', IDENT, NEWLINE, NHYYEOF, -1);
    lexed_free(L);
    L = lex("frame A from N about x by inertia");
    expect_kinds(L, FRAME, IDENT, FROM, IDENT, ABOUT, IDENT, BY, IDENT,
                 NEWLINE, NHYYEOF, -1);
    lexed_free(L);
    /* each only where it can come: the parent may be called from, the
     * angle may use by */
    L = lex("frame A from from about x by by + about; from");
    expect_kinds(L, FRAME, IDENT, FROM, IDENT, ABOUT, IDENT, BY, IDENT, '+',
                 IDENT, ';', IDENT, NEWLINE, NHYYEOF, -1);
    lexed_free(L);
    /* a sweep's `from` comes after its parameter, which may be called
     * from; a frame after the sweep's colon is a statement's start */
    /* a sweep's line ends it even after a ';' (elsewhere a line's end
     * after a ';' is nothing) */
    L = lex("sweep k from 0 to 1 step 1: print k;\nprint k;\nprint k");
    expect_kinds(L, SWEEP, IDENT, FROM, NUMBER, TO, NUMBER, STEP, NUMBER, ':',
                 PRINT, IDENT, ';', NEWLINE, PRINT, IDENT, ';', PRINT, IDENT,
                 NEWLINE, NHYYEOF, -1);
    lexed_free(L);
    L = lex("sweep from from from to 1 step 1: frame A from N about z by from");
    expect_kinds(L, SWEEP, IDENT, FROM, IDENT, TO, NUMBER, STEP, NUMBER, ':',
                 FRAME, IDENT, FROM, IDENT, ABOUT, IDENT, BY, IDENT, NEWLINE,
                 NHYYEOF, -1);
    lexed_free(L);
    /* v3: a grid's ranges each have their `from`, but not a comma in an
     * expression's brackets nor one in the sweep's statements */
    L = lex("sweep a from max(1, from) to 2 step 1, b from 0 to 1 step 1: "
            "print a, from");
    expect_kinds(L, SWEEP, IDENT, FROM, IDENT, '(', NUMBER, ',', IDENT, ')',
                 TO, NUMBER, STEP, NUMBER, ',', IDENT, FROM, NUMBER, TO,
                 NUMBER, STEP, NUMBER, ':', PRINT, IDENT, ',', IDENT, NEWLINE,
                 NHYYEOF, -1);
    lexed_free(L);
    /* follow and transfer have one `from`, bode two; a follow's line ends
     * it as a sweep's does */
    L = lex("follow from from 0 to 1: steady x ~ 1;\ntransfer from from "
            "from at s = from\nbode a from b from from to 2");
    expect_kinds(L, FOLLOW, IDENT, FROM, NUMBER, TO, NUMBER, ':', STEADY,
                 IDENT, '~', NUMBER, ';', NEWLINE, TRANSFER, IDENT, FROM,
                 IDENT, AT, IDENT, '=', IDENT, NEWLINE, BODE, IDENT, FROM,
                 IDENT, FROM, IDENT, TO, NUMBER, NEWLINE, NHYYEOF, -1);
    lexed_free(L);
    /* until, rising, falling, sample: keywords anywhere in a simulate
     * (also one in a sweep's line), names elsewhere and at a statement's
     * start */
    L = lex("simulate to 1 until x = 0 rising sample at (falling) = 1; "
            "print until\nsweep a from 0 to 1 step 1: simulate to 2 until "
            "x = 1\nuntil");
    expect_kinds(L, SIMULATE, TO, NUMBER, UNTIL, IDENT, '=', NUMBER, RISING,
                 SAMPLE, AT, '(', FALLING, ')', '=', NUMBER, ';', PRINT,
                 IDENT, NEWLINE, SWEEP, IDENT, FROM, NUMBER, TO, NUMBER,
                 STEP, NUMBER, ':', SIMULATE, TO, NUMBER, UNTIL, IDENT, '=',
                 NUMBER, NEWLINE, IDENT, NEWLINE, NHYYEOF, -1);
    lexed_free(L);
}

/* A.x is one token; .5 stays a number and x.5 is a name and a number. */
static void test_members(void **state)
{
    (void)state;
    lexed_t *L = lex("A.x+B_2.z' .5 x.5");
    expect_kinds(L, MEMBER, '+', MEMBER, '\'', NUMBER, IDENT, NUMBER,
                 NEWLINE, NHYYEOF, -1);
    assert_string_equal(L->toks[0].str, "A.x");
    expect_span(&L->toks[0], 0, 3);
    assert_string_equal(L->toks[2].str, "B_2.z");
    assert_true(L->toks[4].num == 0.5);
    assert_true(L->toks[6].num == 0.5);
    lexed_free(L);
    L = lex("A .x");
    expect_error(L, 1, 3, "unexpected character '.'");
    lexed_free(L);
}

static void test_newlines(void **state)
{
    (void)state;
    lexed_t *L = lex("a\nb");
    expect_kinds(L, IDENT, NEWLINE, IDENT, NEWLINE, NHYYEOF, -1);
    expect_span(&L->toks[1], 1, 2);
    /* the implicit final newline and the end sit after the last token */
    expect_span(&L->toks[3], 3, 3);
    expect_span(&L->toks[4], 3, 3);
    lexed_free(L);

    /* blank lines and leading newlines give no tokens */
    L = lex("\n\n  \na\n\n\n b  \n\n");
    expect_kinds(L, IDENT, NEWLINE, IDENT, NEWLINE, NHYYEOF, -1);
    lexed_free(L);

    /* inside brackets, after binary operators, '=', ':', ',', '>', '~' */
    static const char *const goes_on[] = {
        "(a\nb)", "[a\nb]", "f(a,\nb)", "a +\nb", "a -\nb", "a *\nb",
        "a /\nb", "a ^\nb", "a =\nb",   "a :\nb", "a ,\nb", "a >\nb",
        "a ~\nb", "((a)\n)",
    };
    for (size_t i = 0; i < sizeof goes_on / sizeof *goes_on; i++) {
        L = lex(goes_on[i]);
        assert_false(L->error);
        for (size_t k = 0; k + 2 < L->n; k++)
            if (L->toks[k].kind == NEWLINE)
                fail_msg("'%s': a NEWLINE at token %zu", goes_on[i], k);
        assert_int_equal(L->toks[L->n - 2].kind, NEWLINE); /* implicit */
        lexed_free(L);
    }

    /* after a prime or a closing bracket, a newline ends the statement */
    L = lex("x'\n(a)\nb");
    expect_kinds(L, IDENT, '\'', NEWLINE, '(', IDENT, ')', NEWLINE, IDENT,
                 NEWLINE, NHYYEOF, -1);
    lexed_free(L);

    /* ';' then a newline: one separator */
    L = lex("a;\nb;");
    expect_kinds(L, IDENT, ';', IDENT, ';', NHYYEOF, -1);
    lexed_free(L);

    /* an unfinished statement at the end gets no newline: the parser sees
     * the end of input and reports it incomplete */
    L = lex("a +");
    expect_kinds(L, IDENT, '+', NHYYEOF, -1);
    expect_span(&L->toks[2], 3, 3);
    lexed_free(L);
    L = lex("f(a\n");
    expect_kinds(L, IDENT, '(', IDENT, NHYYEOF, -1);
    lexed_free(L);

    /* CR LF line ends */
    L = lex("a\r\nb\r\n");
    expect_kinds(L, IDENT, NEWLINE, IDENT, NEWLINE, NHYYEOF, -1);
    lexed_free(L);
}

static void test_comments(void **state)
{
    (void)state;
    lexed_t *L = lex("a # b + ( [ \"\n# whole line\nc # end");
    expect_kinds(L, IDENT, NEWLINE, IDENT, NEWLINE, NHYYEOF, -1);
    assert_string_equal(L->toks[2].str, "c");
    lexed_free(L);
    /* a comment after an operator keeps the statement going */
    L = lex("a + # more\n b");
    expect_kinds(L, IDENT, '+', IDENT, NEWLINE, NHYYEOF, -1);
    lexed_free(L);
    /* ... and so does one inside brackets */
    L = lex("(a # (\n)");
    expect_kinds(L, '(', IDENT, ')', NEWLINE, NHYYEOF, -1);
    lexed_free(L);
}

static void test_strings(void **state)
{
    (void)state;
    lexed_t *L = lex("load \"a\\\"b\\\\c.nh\" \"\" \"λ x\"");
    expect_kinds(L, LOAD, STRING, STRING, STRING, NEWLINE, NHYYEOF, -1);
    assert_string_equal(L->toks[1].str, "a\"b\\c.nh");
    expect_span(&L->toks[1], 5, 17);
    assert_string_equal(L->toks[2].str, "");
    expect_span(&L->toks[2], 18, 20);
    assert_string_equal(L->toks[3].str, "λ x");
    lexed_free(L);

    /* a '#' in a string is not a comment */
    L = lex("\"a#b\"");
    expect_kinds(L, STRING, NEWLINE, NHYYEOF, -1);
    assert_string_equal(L->toks[0].str, "a#b");
    lexed_free(L);

    L = lex("load \"a\\nb\"");
    expect_error(L, 1, 8, "invalid escape '\\n' in a string (only \\\" and "
                          "\\\\)");
    assert_int_equal(L->diag.span.end - L->diag.span.begin, 2);
    assert_false(L->incomplete);
    lexed_free(L);

    L = lex("load \"abc\nprint 1");
    expect_error(L, 1, 6, "unterminated string (a string ends on its line)");
    assert_false(L->incomplete);
    lexed_free(L);

    /* the end of the text inside a string: more may come */
    L = lex("load \"abc");
    expect_error(L, 1, 6, "unterminated string");
    assert_true(L->incomplete);
    lexed_free(L);
    L = lex("load \"abc\\");
    assert_true(L->error);
    assert_true(L->incomplete);
    lexed_free(L);

    L = lex_text("\"a\0b\"", 5);
    expect_error(L, 1, 3, "unexpected character '\\x00' in a string");
    lexed_free(L);
}

static void test_bad_characters(void **state)
{
    (void)state;
    lexed_t *L = lex("print a @ b");
    expect_error(L, 1, 9, "unexpected character '@'");
    expect_kinds(L, PRINT, IDENT, -1);
    lexed_free(L);

    L = lex_text("x\0y", 3);
    expect_error(L, 1, 2, "unexpected character '\\x00'");
    lexed_free(L);
    /* a NUL byte in a comment is still an error */
    L = lex_text("x # a\0b", 7);
    expect_error(L, 1, 6, "unexpected character '\\x00'");
    lexed_free(L);

    L = lex("a\n\tb \x01");
    expect_error(L, 2, 4, "unexpected character '\\x01'");
    lexed_free(L);
    L = lex("λ = 1");
    expect_error(L, 1, 1, "unexpected character 'λ'");
    assert_int_equal(L->diag.span.end, 2);
    lexed_free(L);
    L = lex("a \xff");
    expect_error(L, 1, 3, "unexpected character '\\xff'");
    lexed_free(L);
    static const char *const stray[] = {"!", "$", "%", "&", "?", "\\", "{",
                                        "}", "|", "`", "<", "."};
    for (size_t i = 0; i < sizeof stray / sizeof *stray; i++) {
        L = lex(stray[i]);
        char msg[64];
        snprintf(msg, sizeof msg, "unexpected character '%s'", stray[i]);
        expect_error(L, 1, 1, msg);
        lexed_free(L);
    }
}

static void test_long_line(void **state)
{
    (void)state;
    /* exactly PARSE_MAX_LINE bytes on a line: fine */
    size_t n = PARSE_MAX_LINE;
    char *t = malloc(2 * n + 16);
    assert_non_null(t);
    memset(t, ' ', n);
    t[0] = 'a';
    t[n - 1] = 'b';
    memcpy(t + n, "\nc", 3);
    lexed_t *L = lex_text(t, n + 2);
    expect_kinds(L, IDENT, IDENT, NEWLINE, IDENT, NEWLINE, NHYYEOF, -1);
    lexed_free(L);

    /* one byte more on the second line: an error at the first byte past
     * the limit */
    memcpy(t, "x\n", 2);
    memset(t + 2, ' ', n + 1);
    t[2 + n] = 'z';
    L = lex_text(t, n + 3);
    expect_error(L, 2, (unsigned)n + 1, "line longer than 65536 bytes");
    lexed_free(L);

    /* a comment that runs past the limit */
    t[2] = '#';
    L = lex_text(t, n + 3);
    expect_error(L, 2, (unsigned)n + 1, "line longer than 65536 bytes");
    lexed_free(L);
    free(t);
}

static void test_bracket_depth(void **state)
{
    (void)state;
    char t[PARSE_MAX_DEPTH + 8];
    memset(t, '(', PARSE_MAX_DEPTH);
    t[PARSE_MAX_DEPTH] = '\0';
    lexed_t *L = lex(t);
    assert_false(L->error);
    lexed_free(L);
    t[PARSE_MAX_DEPTH] = '[';
    t[PARSE_MAX_DEPTH + 1] = '\0';
    L = lex(t);
    expect_error(L, 1, PARSE_MAX_DEPTH + 1,
                 "expression nested too deeply (more than 200 levels)");
    lexed_free(L);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keywords),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_operators),
        cmocka_unit_test(test_contextual_keywords),
        cmocka_unit_test(test_members),
        cmocka_unit_test(test_newlines),
        cmocka_unit_test(test_comments),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_bad_characters),
        cmocka_unit_test(test_long_line),
        cmocka_unit_test(test_bracket_depth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
