/*
 * test_parser.c — parse_program(): every statement of the language, the
 * precedence table, spans, continuation, error locations, limits, hostile
 * input; and the AST arena.
 *
 * Trees are checked through an independent fully-parenthesized printer
 * written here; spans by comparing the text they cover with the substring
 * expected by hand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lang/ast.h"
#include "lang/keywords.h"
#include "lang/parse.h"
#include "lang/source.h"

/* ---- helpers ---------------------------------------------------------- */

typedef struct parsed {
    parse_status_t status;
    ast_program_t prog;
    diag_t diag;
    source_set_t *set;
    ast_arena_t *arena;
    uint32_t file;
    const char *text;
} parsed_t;

static parsed_t *parse_n(const char *text, size_t len)
{
    parsed_t *P = calloc(1, sizeof *P);
    assert_non_null(P);
    P->set = source_set_new();
    P->arena = ast_arena_new();
    P->file = source_add(P->set, "t.nh", text, len);
    P->text = source_text(P->set, P->file, NULL);
    diag_clear(&P->diag);
    P->status = parse_program(P->set, P->file, P->arena, &P->prog, &P->diag);
    if (P->status != PARSE_OK) {
        assert_int_equal(P->prog.n, 0);
        assert_true(P->diag.set);
    } else {
        assert_false(P->diag.set);
    }
    return P;
}

static parsed_t *parse(const char *text)
{
    return parse_n(text, strlen(text));
}

static void parsed_free(parsed_t *P)
{
    ast_arena_free(P->arena);
    source_set_free(P->set);
    free(P);
}

/* Parses TEXT, which must succeed with N statements. */
static parsed_t *parse_ok(const char *text, size_t n)
{
    parsed_t *P = parse(text);
    if (P->status != PARSE_OK)
        fail_msg("'%s': %s", text, P->diag.msg);
    if (P->prog.n != n)
        fail_msg("'%s': %zu statements, expected %zu", text, P->prog.n, n);
    return P;
}

/* The text a span covers must be EXPECTED. */
static void span_is(const parsed_t *P, src_span_t sp, const char *expected)
{
    size_t n = strlen(expected);
    if (sp.file != P->file || sp.end < sp.begin ||
        sp.end - sp.begin != n ||
        memcmp(P->text + sp.begin, expected, n) != 0)
        fail_msg("span %u..%u is '%.*s', expected '%s'",
                 (unsigned)sp.begin, (unsigned)sp.end,
                 (int)(sp.end >= sp.begin ? sp.end - sp.begin : 0),
                 P->text + sp.begin, expected);
}

static void ident_is(const parsed_t *P, ast_ident_t id, const char *name)
{
    assert_non_null(id.name);
    assert_string_equal(id.name, name);
    span_is(P, id.span, name);
}

/* A fully parenthesized rendering, written independently of the parser:
 * binary operators as "(a op b)", signs as "(-a)", primes and indices as
 * suffixes. */
static void render_to(char **p, size_t *left, const ast_expr_t *e)
{
#define PUT(...)                                                            \
    do {                                                                    \
        int w_ = snprintf(*p, *left, __VA_ARGS__);                          \
        assert_true(w_ >= 0 && (size_t)w_ < *left);                         \
        *p += w_;                                                           \
        *left -= (size_t)w_;                                                \
    } while (0)
    assert_non_null(e);
    switch (e->kind) {
    case AST_NUM: PUT("%.17g", e->num); break;
    case AST_NAME: PUT("%s", e->name); break;
    case AST_MEMBER: PUT("%s.%s", e->name, e->member); break;
    case AST_PRIME:
        render_to(p, left, e->a);
        PUT("'");
        break;
    case AST_INDEX:
        render_to(p, left, e->a);
        PUT("[");
        render_to(p, left, e->b);
        PUT("]");
        break;
    case AST_NEG:
    case AST_POS:
        PUT("(%c", e->kind == AST_NEG ? '-' : '+');
        render_to(p, left, e->a);
        PUT(")");
        break;
    case AST_ADD:
    case AST_SUB:
    case AST_MUL:
    case AST_DIV:
    case AST_POW: {
        const char *ops = "+-*/^";
        PUT("(");
        render_to(p, left, e->a);
        PUT(" %c ", ops[e->kind - AST_ADD]);
        render_to(p, left, e->b);
        PUT(")");
        break;
    }
    case AST_CALL:
    case AST_VECTOR:
        if (e->kind == AST_CALL)
            PUT("%s(", e->name);
        else
            PUT("[");
        for (size_t i = 0; i < e->nargs; i++) {
            if (i)
                PUT(", ");
            render_to(p, left, e->args[i]);
        }
        PUT(e->kind == AST_CALL ? ")" : "]");
        break;
    }
#undef PUT
}

static const char *render(const ast_expr_t *e, char *buf, size_t size)
{
    char *p = buf;
    size_t left = size;
    buf[0] = '\0';
    render_to(&p, &left, e);
    return buf;
}

/* The single expression of "print TEXT". */
static const ast_expr_t *print_expr(const parsed_t *P)
{
    assert_int_equal(P->prog.n, 1);
    const ast_stmt_t *s = P->prog.stmts[0];
    assert_int_equal(s->kind, STMT_PRINT);
    assert_int_equal(s->u.output.n, 1);
    return s->u.output.items[0];
}

/* Every node's span, parsed alone, gives the same tree: spans cover whole
 * sub-expressions, no more and no less. */
static void check_spans_reparse(const parsed_t *P, const ast_expr_t *e)
{
    char text[4096], a[4096], b[4096];
    int n = snprintf(text, sizeof text, "print %.*s",
                     (int)(e->span.end - e->span.begin),
                     P->text + e->span.begin);
    assert_true(n > 0 && (size_t)n < sizeof text);
    parsed_t *Q = parse(text);
    if (Q->status != PARSE_OK)
        fail_msg("span text '%s' does not parse: %s", text, Q->diag.msg);
    render(e, a, sizeof a);
    render(print_expr(Q), b, sizeof b);
    if (strcmp(a, b) != 0)
        fail_msg("'%s' gives %s, the node is %s", text, b, a);
    parsed_free(Q);
    if (e->a)
        check_spans_reparse(P, e->a);
    if (e->b)
        check_spans_reparse(P, e->b);
    for (size_t i = 0; i < e->nargs; i++)
        check_spans_reparse(P, e->args[i]);
}

/* ---- expressions ------------------------------------------------------ */

static void test_precedence(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"-x^2", "(-(x ^ 2))"},
        {"2^3^2", "(2 ^ (3 ^ 2))"},
        {"a^b^c^d", "(a ^ (b ^ (c ^ d)))"},
        {"x''", "x''"},
        {"(x^2)'", "(x ^ 2)'"},
        {"P1'[2]", "P1'[2]"},
        {"x[1][2]", "x[1][2]"},
        {"x'^2", "(x' ^ 2)"},
        {"a^b'", "(a ^ b')"},
        {"a-b-c", "((a - b) - c)"},
        {"a/b/c", "((a / b) / c)"},
        {"a-(b-c)", "(a - (b - c))"},
        {"a+b*c", "(a + (b * c))"},
        {"a*b+c", "((a * b) + c)"},
        {"a*b/c*d", "(((a * b) / c) * d)"},
        {"-a*b", "((-a) * b)"},
        {"a*-b", "(a * (-b))"},
        {"a - -b", "(a - (-b))"},
        {"--a", "(-(-a))"},
        {"+a", "(+a)"},
        {"-2^2", "(-(2 ^ 2))"},
        {"2^-x", "(2 ^ (-x))"},
        {"2^-x^2", "(2 ^ (-(x ^ 2)))"},
        {"-(a+b)^2", "(-((a + b) ^ 2))"},
        {"2*(a+b)", "(2 * (a + b))"},
        {"f(a, b+c)[1]", "f(a, (b + c))[1]"},
        {"[a, b][2]'", "[a, b][2]'"},
        {"diff(e, x')", "diff(e, x')"},
        {"lambda(roll_x)", "lambda(roll_x)"},
        {"atan2(y, x)", "atan2(y, x)"},
        {"f()", "f()"},
        {"[x1, y1, 0]", "[x1, y1, 0]"},
        {"1e-3*x + .5", "((0.001 * x) + 0.5)"},
        {"m/2*(x'^2 + y'^2)", "((m / 2) * ((x' ^ 2) + (y' ^ 2)))"},
        {"dot(P1', P1')", "dot(P1', P1')"},
        {"((((x))))", "x"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[256], buf[1024];
        snprintf(text, sizeof text, "print %s", cases[i][0]);
        parsed_t *P = parse_ok(text, 1);
        const ast_expr_t *e = print_expr(P);
        render(e, buf, sizeof buf);
        if (strcmp(buf, cases[i][1]) != 0)
            fail_msg("'%s' parsed as %s, expected %s", cases[i][0], buf,
                     cases[i][1]);
        span_is(P, e->span, cases[i][0]);
        check_spans_reparse(P, e);
        parsed_free(P);
    }
}

static void test_expr_nodes_and_spans(void **state)
{
    (void)state;
    parsed_t *P = parse_ok("print a + b*c, f(x, 2.5), (x^2)', [1, y]", 1);
    const ast_stmt_t *s = P->prog.stmts[0];
    assert_int_equal(s->u.output.n, 4);
    ast_expr_t **it = s->u.output.items;

    assert_int_equal(it[0]->kind, AST_ADD);
    span_is(P, it[0]->span, "a + b*c");
    assert_int_equal(it[0]->a->kind, AST_NAME);
    assert_string_equal(it[0]->a->name, "a");
    span_is(P, it[0]->a->span, "a");
    assert_int_equal(it[0]->b->kind, AST_MUL);
    span_is(P, it[0]->b->span, "b*c");

    assert_int_equal(it[1]->kind, AST_CALL);
    assert_string_equal(it[1]->name, "f");
    span_is(P, it[1]->span, "f(x, 2.5)");
    span_is(P, it[1]->name_span, "f");
    assert_int_equal(it[1]->nargs, 2);
    assert_int_equal(it[1]->args[1]->kind, AST_NUM);
    assert_true(it[1]->args[1]->num == 2.5);
    span_is(P, it[1]->args[1]->span, "2.5");

    assert_int_equal(it[2]->kind, AST_PRIME);
    span_is(P, it[2]->span, "(x^2)'");
    assert_int_equal(it[2]->a->kind, AST_POW);
    span_is(P, it[2]->a->span, "(x^2)"); /* with its parentheses */

    assert_int_equal(it[3]->kind, AST_VECTOR);
    assert_int_equal(it[3]->nargs, 2);
    span_is(P, it[3]->span, "[1, y]");
    span_is(P, it[3]->args[1]->span, "y");

    /* a call with no arguments, and one spread over lines */
    parsed_free(P);
    P = parse_ok("print g(), h(1,\n  2)", 1);
    it = P->prog.stmts[0]->u.output.items;
    assert_int_equal(it[0]->kind, AST_CALL);
    assert_int_equal(it[0]->nargs, 0);
    assert_null(it[0]->args);
    span_is(P, it[0]->span, "g()");
    span_is(P, it[1]->span, "h(1,\n  2)");
    parsed_free(P);
}

/* ---- statements ------------------------------------------------------- */

static void test_declarations(void **state)
{
    (void)state;
    parsed_t *P = parse_ok("param m = 1, R = 0.5, g = 9.81\n"
                           "coord phi, theta\n"
                           "speed u1, u2\n",
                           3);
    const ast_stmt_t *s = P->prog.stmts[0];
    assert_int_equal(s->kind, STMT_PARAM);
    span_is(P, s->span, "param m = 1, R = 0.5, g = 9.81");
    assert_int_equal(s->u.bindings.n, 3);
    ident_is(P, s->u.bindings.items[0].name, "m");
    ident_is(P, s->u.bindings.items[1].name, "R");
    ident_is(P, s->u.bindings.items[2].name, "g");
    assert_int_equal(s->u.bindings.items[1].primes, 0);
    span_is(P, s->u.bindings.items[1].span, "R = 0.5");
    assert_true(s->u.bindings.items[1].value->num == 0.5);
    assert_true(s->u.bindings.items[2].value->num == 9.81);

    s = P->prog.stmts[1];
    assert_int_equal(s->kind, STMT_COORD);
    span_is(P, s->span, "coord phi, theta");
    assert_int_equal(s->u.names.n, 2);
    ident_is(P, s->u.names.items[0], "phi");
    ident_is(P, s->u.names.items[1], "theta");

    s = P->prog.stmts[2];
    assert_int_equal(s->kind, STMT_SPEED);
    assert_int_equal(s->u.names.n, 2);
    ident_is(P, s->u.names.items[1], "u2");
    parsed_free(P);

    P = parse_ok("let w = theta'*cos(phi)\nlet sq(a) = a*a\n"
                 "let f(a, b) = a + b\nlet k() = 1",
                 4);
    s = P->prog.stmts[0];
    assert_int_equal(s->kind, STMT_LET);
    ident_is(P, s->u.let.name, "w");
    assert_false(s->u.let.is_function);
    assert_int_equal(s->u.let.nparams, 0);
    span_is(P, s->u.let.body->span, "theta'*cos(phi)");
    span_is(P, s->span, "let w = theta'*cos(phi)");
    s = P->prog.stmts[1];
    assert_true(s->u.let.is_function);
    assert_int_equal(s->u.let.nparams, 1);
    ident_is(P, s->u.let.params[0], "a");
    s = P->prog.stmts[2];
    ident_is(P, s->u.let.name, "f");
    assert_int_equal(s->u.let.nparams, 2);
    ident_is(P, s->u.let.params[1], "b");
    span_is(P, s->span, "let f(a, b) = a + b");
    s = P->prog.stmts[3];
    assert_true(s->u.let.is_function);
    assert_int_equal(s->u.let.nparams, 0);
    parsed_free(P);

    P = parse_ok("kinetic T = m/2*x'^2\npotential V = m*g*z\n"
                 "lagrangian L = T - V",
                 3);
    static const ast_stmt_kind_t ek[] = {STMT_KINETIC, STMT_POTENTIAL,
                                         STMT_LAGRANGIAN};
    static const char *const en[] = {"T", "V", "L"};
    static const char *const ev[] = {"m/2*x'^2", "m*g*z", "T - V"};
    for (int i = 0; i < 3; i++) {
        s = P->prog.stmts[i];
        assert_int_equal(s->kind, ek[i]);
        ident_is(P, s->u.energy.name, en[i]);
        span_is(P, s->u.energy.value->span, ev[i]);
    }
    parsed_free(P);

    P = parse_ok("particle P1 mass m1 at [x1, y1]\n"
                 "force x = -c*x'\nforce P1 = [m1*g, 0]",
                 3);
    s = P->prog.stmts[0];
    assert_int_equal(s->kind, STMT_PARTICLE);
    ident_is(P, s->u.particle.name, "P1");
    span_is(P, s->u.particle.mass->span, "m1");
    span_is(P, s->u.particle.position->span, "[x1, y1]");
    span_is(P, s->span, "particle P1 mass m1 at [x1, y1]");
    s = P->prog.stmts[1];
    assert_int_equal(s->kind, STMT_FORCE);
    ident_is(P, s->u.force.target, "x");
    span_is(P, s->u.force.value->span, "-c*x'");
    s = P->prog.stmts[2];
    ident_is(P, s->u.force.target, "P1");
    assert_int_equal(s->u.force.value->kind, AST_VECTOR);
    parsed_free(P);
}

static void expect_error_at(const char *text, unsigned line, unsigned col,
                            const char *msg);

/* LANGUAGE.md §4.1: frames, bodies, loads; A.x in expressions. */
static void test_frames_and_bodies(void **state)
{
    (void)state;
    parsed_t *P = parse_ok(
        "frame N\n"
        "frame K from S about [0, 1, 1] by delta + 1\n"
        "body wheel mass m at G + r*W.z frame W inertia [A, B, A]\n"
        "force wheel at Q = [0, 0, F]\n"
        "torque wheel = [0, tau, 0]\n"
        "gravity [0, 0, -g]\n",
        6);
    const ast_stmt_t *s = P->prog.stmts[0];
    assert_int_equal(s->kind, STMT_FRAME);
    ident_is(P, s->u.frame.name, "N");
    assert_null(s->u.frame.parent.name);
    assert_null(s->u.frame.axis);
    assert_null(s->u.frame.angle);
    s = P->prog.stmts[1];
    ident_is(P, s->u.frame.name, "K");
    ident_is(P, s->u.frame.parent, "S");
    span_is(P, s->u.frame.axis->span, "[0, 1, 1]");
    span_is(P, s->u.frame.angle->span, "delta + 1");
    span_is(P, s->span, "frame K from S about [0, 1, 1] by delta + 1");
    s = P->prog.stmts[2];
    assert_int_equal(s->kind, STMT_BODY);
    ident_is(P, s->u.body.name, "wheel");
    span_is(P, s->u.body.mass->span, "m");
    span_is(P, s->u.body.position->span, "G + r*W.z");
    const ast_expr_t *w = s->u.body.position->b->b;
    assert_int_equal(w->kind, AST_MEMBER);
    assert_string_equal(w->name, "W");
    assert_string_equal(w->member, "z");
    span_is(P, w->span, "W.z");
    span_is(P, w->name_span, "W");
    ident_is(P, s->u.body.frame, "W");
    span_is(P, s->u.body.inertia->span, "[A, B, A]");
    s = P->prog.stmts[3];
    assert_int_equal(s->kind, STMT_FORCE);
    ident_is(P, s->u.force.target, "wheel");
    span_is(P, s->u.force.at->span, "Q");
    span_is(P, s->u.force.value->span, "[0, 0, F]");
    s = P->prog.stmts[4];
    assert_int_equal(s->kind, STMT_TORQUE);
    ident_is(P, s->u.force.target, "wheel");
    assert_null(s->u.force.at);
    s = P->prog.stmts[5];
    assert_int_equal(s->kind, STMT_GRAVITY);
    span_is(P, s->u.gravity->span, "[0, 0, -g]");
    parsed_free(P);

    /* the words of `frame` and `body` are names elsewhere */
    P = parse_ok("param from = 1, about = 2, by = 3, inertia = 4\n"
                 "frame A from N about x by from*by", 2);
    parsed_free(P);
    expect_error_at("frame A from N about x", 1, 23,
                    "unexpected end of line, expected an operator, 'by' or "
                    "'('");
    expect_error_at("frame A about x by t", 1, 9,
                    "unexpected name 'about', expected 'from' or end of "
                    "line");
}

static void test_constraints(void **state)
{
    (void)state;
    parsed_t *P = parse_ok(
        "constraint roll_x: x' = R*theta'*sin(phi)\n"
        "constraint 0 = x1*x1'*y2'\n"
        "constraint ring: x^2 + y^2 = l^2\n"
        "kinematic x' = u1*cos(theta)\n",
        4);
    const ast_stmt_t *s = P->prog.stmts[0];
    assert_int_equal(s->kind, STMT_CONSTRAINT);
    ident_is(P, s->u.constraint.name, "roll_x");
    span_is(P, s->u.constraint.lhs->span, "x'");
    span_is(P, s->u.constraint.rhs->span, "R*theta'*sin(phi)");
    span_is(P, s->span, "constraint roll_x: x' = R*theta'*sin(phi)");

    s = P->prog.stmts[1];
    assert_null(s->u.constraint.name.name);
    assert_int_equal(s->u.constraint.lhs->kind, AST_NUM);
    span_is(P, s->u.constraint.rhs->span, "x1*x1'*y2'");

    s = P->prog.stmts[2];
    ident_is(P, s->u.constraint.name, "ring");
    span_is(P, s->u.constraint.lhs->span, "x^2 + y^2");

    s = P->prog.stmts[3];
    assert_int_equal(s->kind, STMT_KINEMATIC);
    assert_null(s->u.constraint.name.name);
    span_is(P, s->u.constraint.lhs->span, "x'");
    span_is(P, s->u.constraint.rhs->span, "u1*cos(theta)");
    span_is(P, s->span, "kinematic x' = u1*cos(theta)");
    parsed_free(P);
}

static void test_state_and_simulation(void **state)
{
    (void)state;
    parsed_t *P = parse_ok(
        "initial theta = 1, phi' = 0.7, t = 0, x'' = 2\n"
        "simulate to 20 step 0.01 integrator rk8pd rtol 1e-10 atol 1e-12 "
        "project\n"
        "simulate to 5 project atol 1 step 2 step 3\n"
        "simulate to t + 1\n"
        "equations voronec\nreset",
        6);
    const ast_stmt_t *s = P->prog.stmts[0];
    assert_int_equal(s->kind, STMT_INITIAL);
    assert_int_equal(s->u.bindings.n, 4);
    static const char *const names[] = {"theta", "phi", "t", "x"};
    static const unsigned primes[] = {0, 1, 0, 2};
    static const double values[] = {1, 0.7, 0, 2};
    for (int i = 0; i < 4; i++) {
        ident_is(P, s->u.bindings.items[i].name, names[i]);
        assert_int_equal(s->u.bindings.items[i].primes, primes[i]);
        assert_true(s->u.bindings.items[i].value->num == values[i]);
    }
    span_is(P, s->u.bindings.items[1].span, "phi' = 0.7");
    for (int i = 0; i < 4; i++)
        assert_false(s->u.bindings.items[i].guess);

    s = P->prog.stmts[1];
    assert_int_equal(s->kind, STMT_SIMULATE);
    span_is(P, s->u.simulate.to->span, "20");
    assert_int_equal(s->u.simulate.noptions, 5);
    const ast_sim_option_t *o = s->u.simulate.options;
    assert_int_equal(o[0].kind, SIM_OPT_STEP);
    assert_true(o[0].value->num == 0.01);
    span_is(P, o[0].span, "step 0.01");
    assert_int_equal(o[1].kind, SIM_OPT_INTEGRATOR);
    ident_is(P, o[1].ident, "rk8pd");
    assert_null(o[1].value);
    span_is(P, o[1].span, "integrator rk8pd");
    assert_int_equal(o[2].kind, SIM_OPT_RTOL);
    assert_true(o[2].value->num == 1e-10);
    assert_int_equal(o[3].kind, SIM_OPT_ATOL);
    assert_true(o[3].value->num == 1e-12);
    assert_int_equal(o[4].kind, SIM_OPT_PROJECT);
    assert_null(o[4].value);
    span_is(P, o[4].span, "project");
    span_is(P, s->span,
            "simulate to 20 step 0.01 integrator rk8pd rtol 1e-10 atol "
            "1e-12 project");

    /* any order; repeats are recorded for the interpreter to judge */
    s = P->prog.stmts[2];
    assert_int_equal(s->u.simulate.noptions, 4);
    o = s->u.simulate.options;
    assert_int_equal(o[0].kind, SIM_OPT_PROJECT);
    assert_int_equal(o[1].kind, SIM_OPT_ATOL);
    assert_int_equal(o[2].kind, SIM_OPT_STEP);
    assert_int_equal(o[3].kind, SIM_OPT_STEP);
    assert_true(o[3].value->num == 3);

    s = P->prog.stmts[3];
    assert_int_equal(s->u.simulate.noptions, 0);
    assert_null(s->u.simulate.options);
    span_is(P, s->span, "simulate to t + 1");

    s = P->prog.stmts[4];
    assert_int_equal(s->kind, STMT_EQUATIONS);
    ident_is(P, s->u.word, "voronec");
    s = P->prog.stmts[5];
    assert_int_equal(s->kind, STMT_RESET);
    span_is(P, s->span, "reset");
    parsed_free(P);
}

/* `initial NAME ~ VALUE`: a starting guess for what the constraints
 * determine (LANGUAGE.md §6), on coordinates and velocities alike; `~`
 * is no binding elsewhere. */
static void test_initial_guess(void **state)
{
    (void)state;
    parsed_t *P = parse_ok("initial theta ~ 0.1, x = 2, y' ~ -1", 1);
    const ast_stmt_t *s = P->prog.stmts[0];
    assert_int_equal(s->kind, STMT_INITIAL);
    assert_int_equal(s->u.bindings.n, 3);
    assert_true(s->u.bindings.items[0].guess);
    assert_false(s->u.bindings.items[1].guess);
    assert_true(s->u.bindings.items[2].guess);
    assert_int_equal(s->u.bindings.items[2].primes, 1);
    ident_is(P, s->u.bindings.items[0].name, "theta");
    span_is(P, s->u.bindings.items[0].span, "theta ~ 0.1");
    span_is(P, s->u.bindings.items[2].value->span, "-1");
    parsed_free(P);
}

static void test_output_statements(void **state)
{
    (void)state;
    parsed_t *P = parse_ok(
        "print x, y'' + 1\naccel\n"
        "table t, x, T > \"sphere.csv\"\ntable x\n"
        "plot y1, y2 vs x > \"f\\\"1.png\"\nplot y\nplot y > \"a.svg\"\n"
        "plot y vs x",
        8);
    const ast_stmt_t *s = P->prog.stmts[0];
    assert_int_equal(s->kind, STMT_PRINT);
    assert_int_equal(s->u.output.n, 2);
    span_is(P, s->u.output.items[1]->span, "y'' + 1");
    assert_null(s->to_file.name);
    assert_null(s->u.output.vs);

    assert_int_equal(P->prog.stmts[1]->kind, STMT_ACCEL);

    s = P->prog.stmts[2];
    assert_int_equal(s->kind, STMT_TABLE);
    assert_int_equal(s->u.output.n, 3);
    assert_string_equal(s->to_file.name, "sphere.csv");
    span_is(P, s->to_file.span, "\"sphere.csv\"");
    span_is(P, s->span, "table t, x, T > \"sphere.csv\"");
    s = P->prog.stmts[3];
    assert_null(s->to_file.name);
    assert_int_equal(s->to_file.span.file, SRC_NO_FILE);

    s = P->prog.stmts[4];
    assert_int_equal(s->kind, STMT_PLOT);
    assert_int_equal(s->u.output.n, 2);
    span_is(P, s->u.output.vs->span, "x");
    assert_string_equal(s->to_file.name, "f\"1.png");
    s = P->prog.stmts[5];
    assert_null(s->u.output.vs);
    assert_null(s->to_file.name);
    span_is(P, s->span, "plot y");
    s = P->prog.stmts[6];
    assert_null(s->u.output.vs);
    assert_string_equal(s->to_file.name, "a.svg");
    s = P->prog.stmts[7];
    span_is(P, s->u.output.vs->span, "x");
    assert_null(s->to_file.name);
    parsed_free(P);
}

static void test_show_and_teaching(void **state)
{
    (void)state;
    parsed_t *P = parse_ok(
        "show x'^2\nshow latex T\nshow model\nshow mass\nshow latex mass\n"
        "show latex eom\ncheck\ncompare voronec naive\n"
        "compare maggi gibbs_appell samples 100\nworksheet second_reduced\n"
        "show accel\nshow latex accel\nworksheet latex first",
        13);
    const ast_stmt_t *s = P->prog.stmts[0];
    assert_int_equal(s->kind, STMT_SHOW);
    assert_false(s->u.show.latex);
    span_is(P, s->u.show.expr->span, "x'^2");
    s = P->prog.stmts[1];
    assert_true(s->u.show.latex);
    span_is(P, s->span, "show latex T");
    static const struct {
        int i;
        bool latex;
        const char *name;
    } named[] = {{2, false, "model"}, {3, false, "mass"},
                 {4, true, "mass"},   {5, true, "eom"},
                 {10, false, "accel"}, {11, true, "accel"}};
    for (size_t k = 0; k < 6; k++) {
        s = P->prog.stmts[named[k].i];
        assert_int_equal(s->kind, STMT_SHOW);
        assert_int_equal(s->u.show.latex, named[k].latex);
        assert_int_equal(s->u.show.expr->kind, AST_NAME);
        assert_string_equal(s->u.show.expr->name, named[k].name);
        span_is(P, s->u.show.expr->span, named[k].name);
    }
    assert_int_equal(P->prog.stmts[6]->kind, STMT_CHECK);
    s = P->prog.stmts[7];
    assert_int_equal(s->kind, STMT_COMPARE);
    ident_is(P, s->u.compare.a, "voronec");
    ident_is(P, s->u.compare.b, "naive");
    assert_null(s->u.compare.samples);
    s = P->prog.stmts[8];
    ident_is(P, s->u.compare.b, "gibbs_appell");
    assert_true(s->u.compare.samples->num == 100);
    span_is(P, s->span, "compare maggi gibbs_appell samples 100");
    s = P->prog.stmts[9];
    assert_int_equal(s->kind, STMT_WORKSHEET);
    ident_is(P, s->u.worksheet.name, "second_reduced");
    assert_false(s->u.worksheet.latex);
    s = P->prog.stmts[12];
    assert_int_equal(s->kind, STMT_WORKSHEET);
    ident_is(P, s->u.worksheet.name, "first");
    assert_true(s->u.worksheet.latex);
    parsed_free(P);
}

/* LANGUAGE.md §7: every statement that prints takes `> "file"` at its
 * end; the span of the statement takes it in. */
static void test_to_file(void **state)
{
    (void)state;
    parsed_t *P = parse_ok(
        "print x, y > \"a.txt\"\naccel > \"b\"\nshow latex eom > \"eom.tex\"\n"
        "show mass > \"m\"\ncheck > \"c\"\ncompare lagrange maggi > \"d\"\n"
        "compare a b samples 3 > \"e\"\nworksheet first > \"w\"\n"
        "help > \"h\"\nhelp plot > \"h2\"\ntable x >\n \"t.csv\"",
        11);
    static const struct {
        ast_stmt_kind_t kind;
        const char *file, *text;
    } want[] = {
        {STMT_PRINT, "a.txt", "print x, y > \"a.txt\""},
        {STMT_ACCEL, "b", "accel > \"b\""},
        {STMT_SHOW, "eom.tex", "show latex eom > \"eom.tex\""},
        {STMT_SHOW, "m", "show mass > \"m\""},
        {STMT_CHECK, "c", "check > \"c\""},
        {STMT_COMPARE, "d", "compare lagrange maggi > \"d\""},
        {STMT_COMPARE, "e", "compare a b samples 3 > \"e\""},
        {STMT_WORKSHEET, "w", "worksheet first > \"w\""},
        {STMT_HELP, "h", "help > \"h\""},
        {STMT_HELP, "h2", "help plot > \"h2\""},
        {STMT_TABLE, "t.csv", "table x >\n \"t.csv\""},
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        const ast_stmt_t *s = P->prog.stmts[k];
        assert_int_equal(s->kind, want[k].kind);
        assert_string_equal(s->to_file.name, want[k].file);
        span_is(P, s->span, want[k].text);
    }
    assert_string_equal(P->prog.stmts[9]->u.word.name, "plot");
    parsed_free(P);

    /* Only statements that print take it. */
    P = parse("coord x > \"f\"");
    assert_int_equal(P->status, PARSE_ERROR);
    parsed_free(P);
    P = parse("simulate to 1 > \"f\"");
    assert_int_equal(P->status, PARSE_ERROR);
    parsed_free(P);
}

static void test_other_statements(void **state)
{
    (void)state;
    parsed_t *P = parse_ok(
        "set m = 2\nset rtol = 1e-8\nload \"lib/a b.nh\"\nimport \"sphere\"\n"
        "help\nhelp param\nhelp voronec\nhelp initial\nquit\nexit",
        10);
    const ast_stmt_t *s = P->prog.stmts[0];
    assert_int_equal(s->kind, STMT_SET);
    assert_int_equal(s->u.bindings.n, 1);
    ident_is(P, s->u.bindings.items[0].name, "m");
    assert_true(s->u.bindings.items[0].value->num == 2);
    span_is(P, s->u.bindings.items[0].span, "m = 2");
    span_is(P, s->span, "set m = 2");
    s = P->prog.stmts[1];
    ident_is(P, s->u.bindings.items[0].name, "rtol");
    s = P->prog.stmts[2];
    assert_int_equal(s->kind, STMT_LOAD);
    assert_string_equal(s->u.path.path, "lib/a b.nh");
    span_is(P, s->u.path.span, "\"lib/a b.nh\"");
    s = P->prog.stmts[3];
    assert_int_equal(s->kind, STMT_IMPORT);
    assert_string_equal(s->u.path.path, "sphere");
    s = P->prog.stmts[4];
    assert_int_equal(s->kind, STMT_HELP);
    assert_null(s->u.word.name);
    ident_is(P, P->prog.stmts[5]->u.word, "param");
    ident_is(P, P->prog.stmts[6]->u.word, "voronec");
    ident_is(P, P->prog.stmts[7]->u.word, "initial");
    assert_int_equal(P->prog.stmts[8]->kind, STMT_QUIT);
    assert_int_equal(P->prog.stmts[9]->kind, STMT_EXIT);
    parsed_free(P);

    /* help takes every keyword as its topic */
    for (size_t i = 0; parse_keywords[i]; i++) {
        char text[64];
        snprintf(text, sizeof text, "help %s", parse_keywords[i]);
        P = parse_ok(text, 1);
        ident_is(P, P->prog.stmts[0]->u.word, parse_keywords[i]);
        parsed_free(P);
    }
}

/* LANGUAGE.md v3: steady, follow, plot follow (§7.3), lyapunov (§7.4),
 * events and dla in simulate (§6.1, §6.2), inputs, outputs, transfer,
 * bode (§7.2.1), draw, animate (§7.5), grids and `set` of several
 * (§1.2, §8). */
static void test_v3_statements(void **state)
{
    (void)state;
    parsed_t *P = parse_ok(
        "steady phi = 0.1, delta ~ 0.05, thR' ~ -20\n"
        "follow phi from 0.01 to 1.5 step 0.01 > \"f.csv\": steady delta ~ "
        "0.05, thR' ~ -20; eigen phi, delta; print v\n"
        "follow v from 1 to 2: steady phi ~ 0\n"
        "plot follow delta, v vs phi\n"
        "lyapunov to 100 step 0.5 phi, delta'\n"
        "lyapunov to T\n",
        6);
    const ast_stmt_t *s = P->prog.stmts[0];
    assert_int_equal(s->kind, STMT_STEADY);
    assert_int_equal(s->u.bindings.n, 3);
    assert_false(s->u.bindings.items[0].guess);
    assert_true(s->u.bindings.items[1].guess);
    assert_int_equal(s->u.bindings.items[2].primes, 1);
    span_is(P, s->u.bindings.items[2].span, "thR' ~ -20");

    s = P->prog.stmts[1];
    assert_int_equal(s->kind, STMT_FOLLOW);
    ident_is(P, s->u.follow.name, "phi");
    span_is(P, s->u.follow.from->span, "0.01");
    span_is(P, s->u.follow.to->span, "1.5");
    span_is(P, s->u.follow.step->span, "0.01");
    assert_string_equal(s->to_file.name, "f.csv");
    span_is(P, s->u.follow.head,
            "follow phi from 0.01 to 1.5 step 0.01 > \"f.csv\":");
    assert_int_equal(s->u.follow.n, 3);
    assert_int_equal(s->u.follow.body[0]->kind, STMT_STEADY);
    span_is(P, s->u.follow.body[0]->span, "steady delta ~ 0.05, thR' ~ -20");
    assert_int_equal(s->u.follow.body[1]->kind, STMT_EIGEN);
    assert_int_equal(s->u.follow.body[2]->kind, STMT_PRINT);
    s = P->prog.stmts[2];
    assert_null(s->u.follow.step);
    assert_int_equal(s->u.follow.n, 1);

    s = P->prog.stmts[3];
    assert_int_equal(s->kind, STMT_PLOT_FOLLOW);
    assert_int_equal(s->u.output.n, 2);
    span_is(P, s->u.output.vs->span, "phi");

    s = P->prog.stmts[4];
    assert_int_equal(s->kind, STMT_LYAPUNOV);
    span_is(P, s->u.lyapunov.to->span, "100");
    span_is(P, s->u.lyapunov.step->span, "0.5");
    assert_int_equal(s->u.lyapunov.nvars, 2);
    span_is(P, s->u.lyapunov.vars[1]->span, "delta'");
    assert_int_equal(s->u.lyapunov.vars[1]->kind, AST_PRIME);
    s = P->prog.stmts[5];
    assert_null(s->u.lyapunov.step);
    assert_int_equal(s->u.lyapunov.nvars, 0);
    parsed_free(P);

    /* events and the fixed step of dla, in any order with the others */
    P = parse_ok("simulate to 100 until theta = 0 falling step 0.1\n"
                 "simulate to 1e4 sample at phi' = 0 rising\n"
                 "simulate to 10 integrator dla h 0.01 until x + 1 = y\n",
                 3);
    s = P->prog.stmts[0];
    const ast_sim_option_t *o = s->u.simulate.options;
    assert_int_equal(s->u.simulate.noptions, 2);
    assert_int_equal(o[0].kind, SIM_OPT_UNTIL);
    span_is(P, o[0].value->span, "theta");
    span_is(P, o[0].target->span, "0");
    assert_int_equal(o[0].dir, -1);
    span_is(P, o[0].span, "until theta = 0 falling");
    assert_int_equal(o[1].kind, SIM_OPT_STEP);
    o = P->prog.stmts[1]->u.simulate.options;
    assert_int_equal(o[0].kind, SIM_OPT_SAMPLE_AT);
    span_is(P, o[0].value->span, "phi'");
    assert_int_equal(o[0].dir, 1);
    o = P->prog.stmts[2]->u.simulate.options;
    assert_int_equal(o[0].kind, SIM_OPT_INTEGRATOR);
    ident_is(P, o[0].ident, "dla");
    ident_is(P, o[0].h, "h");
    span_is(P, o[0].value->span, "0.01");
    assert_int_equal(o[1].kind, SIM_OPT_UNTIL);
    span_is(P, o[1].value->span, "x + 1");
    assert_int_equal(o[1].dir, 0);
    parsed_free(P);

    /* the words of simulate are names elsewhere */
    P = parse_ok("coord until, rising, falling, sample\n"
                 "print until + sample", 2);
    parsed_free(P);
    P = parse("simulate to 1 until = 0");
    assert_int_equal(P->status, PARSE_ERROR);
    parsed_free(P);

    /* inputs, outputs, transfer functions */
    P = parse_ok("input Tphi, Tdelta = 2\n"
                 "output lean = phi, heading = psi'\n"
                 "transfer lean from Tdelta at s = 2*i > \"g.txt\"\n"
                 "bode lean from Tdelta from 0.1 to 100 > \"b.svg\"\n"
                 "export python \"bike.py\"\n",
                 5);
    s = P->prog.stmts[0];
    assert_int_equal(s->kind, STMT_INPUT);
    assert_int_equal(s->u.bindings.n, 2);
    assert_null(s->u.bindings.items[0].value);
    span_is(P, s->u.bindings.items[1].value->span, "2");
    s = P->prog.stmts[1];
    assert_int_equal(s->kind, STMT_OUTPUT);
    span_is(P, s->u.bindings.items[1].value->span, "psi'");
    s = P->prog.stmts[2];
    assert_int_equal(s->kind, STMT_TRANSFER);
    ident_is(P, s->u.transfer.out, "lean");
    ident_is(P, s->u.transfer.in, "Tdelta");
    ident_is(P, s->u.transfer.svar, "s");
    span_is(P, s->u.transfer.s->span, "2*i");
    assert_string_equal(s->to_file.name, "g.txt");
    s = P->prog.stmts[3];
    assert_int_equal(s->kind, STMT_BODE);
    span_is(P, s->u.transfer.w1->span, "0.1");
    span_is(P, s->u.transfer.w2->span, "100");
    s = P->prog.stmts[4];
    ident_is(P, s->u.export_.format, "python");
    parsed_free(P);
    /* `from` is a name elsewhere, also as the transfer's output */
    P = parse_ok("transfer from from from at s = 1\nprint from", 2);
    ident_is(P, P->prog.stmts[0]->u.transfer.out, "from");
    ident_is(P, P->prog.stmts[0]->u.transfer.in, "from");
    parsed_free(P);

    /* draw and animate */
    P = parse_ok("draw disk G, W.y, r\n"
                 "draw sphere G, R mark C.x\n"
                 "draw point P trail\n"
                 "draw point P mark [1, 0, 0] trail\n"
                 "animate speed 2 view 30, 20 > \"a.html\"\n"
                 "animate view -30, 10\n",
                 6);
    s = P->prog.stmts[0];
    assert_int_equal(s->kind, STMT_DRAW);
    ident_is(P, s->u.draw.kind, "disk");
    assert_int_equal(s->u.draw.nargs, 3);
    assert_null(s->u.draw.mark);
    assert_false(s->u.draw.trail);
    s = P->prog.stmts[1];
    ident_is(P, s->u.draw.mark_word, "mark");
    span_is(P, s->u.draw.mark->span, "C.x");
    s = P->prog.stmts[2];
    ident_is(P, s->u.draw.trail_word, "trail");
    assert_true(s->u.draw.trail);
    assert_null(s->u.draw.mark);
    s = P->prog.stmts[3];
    assert_true(s->u.draw.trail);
    span_is(P, s->u.draw.mark->span, "[1, 0, 0]");
    s = P->prog.stmts[4];
    assert_int_equal(s->kind, STMT_ANIMATE);
    span_is(P, s->u.animate.speed->span, "2");
    ident_is(P, s->u.animate.view, "view");
    span_is(P, s->u.animate.el->span, "20");
    assert_string_equal(s->to_file.name, "a.html");
    s = P->prog.stmts[5];
    assert_null(s->u.animate.speed);
    span_is(P, s->u.animate.az->span, "-30");
    parsed_free(P);

    /* grids, and set of several */
    P = parse_ok("sweep a from 0 to 1 step 0.25, from from 1 to 2 step 0.5 "
                 "> \"g.csv\": print a\n"
                 "set a = 1, rtol = 1e-8, b = 2\n",
                 2);
    s = P->prog.stmts[0];
    assert_int_equal(s->kind, STMT_SWEEP);
    assert_int_equal(s->u.sweep.naxes, 2);
    ident_is(P, s->u.sweep.axes[0].name, "a");
    ident_is(P, s->u.sweep.axes[1].name, "from");
    span_is(P, s->u.sweep.axes[1].span, "from from 1 to 2 step 0.5");
    span_is(P, s->u.sweep.axes[0].step->span, "0.25");
    span_is(P, s->u.sweep.head,
            "sweep a from 0 to 1 step 0.25, from from 1 to 2 step 0.5 > "
            "\"g.csv\":");
    s = P->prog.stmts[1];
    assert_int_equal(s->kind, STMT_SET);
    assert_int_equal(s->u.bindings.n, 3);
    ident_is(P, s->u.bindings.items[1].name, "rtol");
    parsed_free(P);

    /* follow's statements start with steady; its line ends it */
    P = parse("follow a from 0 to 1: print a");
    assert_int_equal(P->status, PARSE_ERROR);
    parsed_free(P);
    P = parse_ok("follow a from 0 to 1: steady x ~ 1; print a;\nprint b", 2);
    assert_int_equal(P->prog.stmts[0]->u.follow.n, 2);
    parsed_free(P);
}

/* Each kind of statement, and ast_stmt_keyword naming it by the word it
 * starts with. */
static void test_every_kind_and_keyword(void **state)
{
    (void)state;
    static const struct {
        ast_stmt_kind_t kind;
        const char *text;
    } all[] = {
        {STMT_PARAM, "param a = 1"},
        {STMT_COORD, "coord x"},
        {STMT_SPEED, "speed u"},
        {STMT_LET, "let w = 1"},
        {STMT_KINETIC, "kinetic T = 1"},
        {STMT_POTENTIAL, "potential V = 1"},
        {STMT_LAGRANGIAN, "lagrangian L = 1"},
        {STMT_PARTICLE, "particle P mass 1 at [0, 0]"},
        {STMT_FORCE, "force x = 1"},
        {STMT_CONSTRAINT, "constraint c: x = 1"},
        {STMT_KINEMATIC, "kinematic x' = u"},
        {STMT_EQUATIONS, "equations maggi"},
        {STMT_INITIAL, "initial x = 1"},
        {STMT_SIMULATE, "simulate to 1"},
        {STMT_RESET, "reset"},
        {STMT_PRINT, "print 1"},
        {STMT_ACCEL, "accel"},
        {STMT_TABLE, "table t"},
        {STMT_PLOT, "plot x"},
        {STMT_SHOW, "show x"},
        {STMT_CHECK, "check"},
        {STMT_COMPARE, "compare a b"},
        {STMT_WORKSHEET, "worksheet first"},
        {STMT_SET, "set a = 1"},
        {STMT_LOAD, "load \"f\""},
        {STMT_IMPORT, "import \"f\""},
        {STMT_HELP, "help"},
        {STMT_QUIT, "quit"},
        {STMT_EXIT, "exit"},
        {STMT_FRAME, "frame N"},
        {STMT_BODY, "body b mass 1 at [0, 0, 0] frame N inertia [1, 1, 1]"},
        {STMT_GRAVITY, "gravity [0, 0, -1]"},
        {STMT_TORQUE, "torque b = [0, 0, 1]"},
        {STMT_LINEARIZE, "linearize x, x'"},
        {STMT_EIGEN, "eigen"},
        {STMT_SWEEP, "sweep k from 1 to 2 step 1: print k"},
        {STMT_PLOT_SWEEP, "plot sweep"},
        {STMT_EXPORT, "export c \"f.c\""},
        {STMT_INPUT, "input Tphi"},
        {STMT_OUTPUT, "output lean = phi"},
        {STMT_DRAW, "draw disk G, W.y, r"},
        {STMT_STEADY, "steady phi = 0.1, delta ~ 0.05"},
        {STMT_FOLLOW, "follow phi from 0 to 1: steady delta ~ 0"},
        {STMT_PLOT_FOLLOW, "plot follow"},
        {STMT_LYAPUNOV, "lyapunov to 10"},
        {STMT_TRANSFER, "transfer lean from Tdelta at s = 2*i"},
        {STMT_BODE, "bode lean from Tdelta from 0.1 to 100"},
        {STMT_ANIMATE, "animate"},
    };
    size_t n = sizeof all / sizeof *all;
    assert_int_equal(n, STMT_ANIMATE + 1);
    for (size_t i = 0; i < n; i++) {
        char text[128];
        /* spaces and a comment around it do not belong to its span */
        snprintf(text, sizeof text, "  %s  # c\n", all[i].text);
        parsed_t *P = parse_ok(text, 1);
        const ast_stmt_t *s = P->prog.stmts[0];
        assert_int_equal(s->kind, all[i].kind);
        span_is(P, s->span, all[i].text);
        const char *kw = ast_stmt_keyword(all[i].kind);
        size_t kl = strlen(kw);
        assert_memory_equal(kw, all[i].text, kl);
        assert_true(all[i].text[kl] == ' ' || all[i].text[kl] == '\0');
        parsed_free(P);
    }
}

static void test_separators(void **state)
{
    (void)state;
    parsed_t *P = parse_ok("", 0);
    assert_null(P->prog.stmts);
    parsed_free(P);
    P = parse_ok("# only a comment", 0);
    parsed_free(P);
    P = parse_ok(";;\n\n;  \n", 0);
    parsed_free(P);
    P = parse_ok("print 1; print 2;;\n\nprint 3\n; print 4", 4);
    for (int i = 0; i < 4; i++)
        assert_true(P->prog.stmts[i]->u.output.items[0]->num == i + 1);
    parsed_free(P);
    /* the last statement needs no newline; CR LF works */
    P = parse_ok("coord x\r\nprint x", 2);
    span_is(P, P->prog.stmts[1]->span, "print x");
    parsed_free(P);
    /* a statement goes on after an operator, '=', ',' or inside brackets */
    P = parse_ok("kinetic T = m/2 *\n  (x'^2 +\n   y'^2)\nparam a =\n 1,\n b = 2", 2);
    span_is(P, P->prog.stmts[0]->u.energy.value->span,
            "m/2 *\n  (x'^2 +\n   y'^2)");
    assert_int_equal(P->prog.stmts[1]->u.bindings.n, 2);
    parsed_free(P);
}

/* ---- continuation and errors ------------------------------------------ */

static void test_incomplete(void **state)
{
    (void)state;
    static const char *const incomplete[] = {
        "print (1",         "print 1 +",       "print 1 +\n",
        "print 1 + # c\n",  "let f(a,",        "constraint x' =",
        "constraint c:",    "load \"abc",      "table x >",
        "print [1, 2",      "print f(1,\n  2", "param a = 1,",
        "coord x,\n",       "print 1\nprint (",
    };
    for (size_t i = 0; i < sizeof incomplete / sizeof *incomplete; i++) {
        parsed_t *P = parse(incomplete[i]);
        if (P->status != PARSE_INCOMPLETE)
            fail_msg("'%s': status %d (%s), expected incomplete",
                     incomplete[i], P->status, P->diag.msg);
        parsed_free(P);
    }
    /* unfinished, but not in a way more text can mend */
    static const char *const errors[] = {
        "param",          "param a",     "print",        "print 1 2",
        "print )",        "simulate to", "kinetic T",    "print (1\n;",
        "load \"abc\n",   "help 1",      "print (1 +\n)",
        "simulate to 1 step",
    };
    for (size_t i = 0; i < sizeof errors / sizeof *errors; i++) {
        parsed_t *P = parse(errors[i]);
        if (P->status != PARSE_ERROR)
            fail_msg("'%s': status %d, expected an error", errors[i],
                     P->status);
        parsed_free(P);
    }
    /* and the continued text parses */
    parsed_t *P = parse_ok("print (1\n + 2)", 1);
    parsed_free(P);
    /* A statement left open is reported at its open bracket
     * (LANGUAGE.md §9) ... */
    P = parse("print (1");
    assert_string_equal(P->diag.msg, "'(' is never closed");
    span_is(P, P->diag.span, "(");
    parsed_free(P);
    P = parse("print f([1, (2");
    assert_string_equal(P->diag.msg, "'(' is never closed");
    assert_int_equal(P->diag.span.begin, 12); /* the innermost */
    parsed_free(P);
    /* ... but one that ends after an operator, where it ends. */
    P = parse("print 1 +");
    assert_string_equal(P->diag.msg,
                        "unexpected end of input, expected an expression");
    span_is(P, P->diag.span, ""); /* just after the last token */
    assert_int_equal(P->diag.span.begin, 9);
    parsed_free(P);
}


static void expect_error_at(const char *text, unsigned line, unsigned col,
                            const char *msg)
{
    parsed_t *P = parse(text);
    if (P->status != PARSE_ERROR)
        fail_msg("'%s': status %d, expected an error", text, P->status);
    unsigned l, c;
    source_line_col(P->set, P->file, P->diag.span.begin, &l, &c);
    if (l != line || c != col || strcmp(P->diag.msg, msg) != 0)
        fail_msg("'%s': %u:%u '%s', expected %u:%u '%s'", text, l, c,
                 P->diag.msg, line, col, msg);
    parsed_free(P);
}

static void test_error_locations(void **state)
{
    (void)state;
    expect_error_at("param a = 1\nprint )", 2, 7,
                    "unexpected ')', expected an expression");
    expect_error_at("param a\n", 1, 8, "unexpected end of line, expected '='");
    expect_error_at("coord x y", 1, 9,
                    "unexpected name 'y', expected ',' or end of line");
    expect_error_at("x = 1", 1, 1, "unexpected name 'x', expected a statement");
    expect_error_at("\n\n  simulate 10", 3, 12,
                    "unexpected number '10', expected 'to'");
    expect_error_at("print 1\n  quit now", 2, 8,
                    "unexpected name 'now', expected end of line");
    expect_error_at("print 1 +\nprint 2", 2, 1,
                    "unexpected 'print', expected an expression");
    expect_error_at("let f(a, 1) = 2", 1, 10,
                    "unexpected number '1', expected a name");
    expect_error_at("kinetic = 1", 1, 9, "unexpected '=', expected a name");
    expect_error_at("plot x > out.png", 1, 10,
                    "unexpected name 'out.png', expected a file name in "
                    "quotes");
    expect_error_at("initial x' 1", 1, 12,
                    "unexpected number '1', expected '=', '~' or a prime");
    expect_error_at("param a ~ 1", 1, 9, "unexpected '~', expected '='");
    expect_error_at("set a ~ 1", 1, 7, "unexpected '~', expected '='");
    expect_error_at("param a' = 1", 1, 8,
                    "unexpected prime, expected '='");
    expect_error_at("print 1 2", 1, 9,
                    "unexpected number '2', expected an operator, ',', '>' "
                    "or end of line");
    expect_error_at("\tprint\t(a b)", 1, 11,
                    "unexpected name 'b', expected an operator, '(' or ')'");
    expect_error_at("print λ + 1", 1, 7, "unexpected character 'λ'");
    expect_error_at("help 12", 1, 6,
                    "unexpected number '12', expected a topic, '>' or end "
                    "of line");
    expect_error_at("show latex", 1, 11,
                    "unexpected end of line, expected an expression, "
                    "'mass' or 'accel'");
    expect_error_at("particle P mass 1", 1, 18,
                    "unexpected end of line, expected an operator or 'at'");
    /* the scanner's error comes first when it is first */
    expect_error_at("print 1 @ )", 1, 9, "unexpected character '@'");
    /* the first error of the text wins over later ones */
    expect_error_at("print )\nprint @", 1, 7,
                    "unexpected ')', expected an expression");
}

/* LANGUAGE.md §9: a statement left open that a new line cannot continue
 * is reported at the opening bracket, naming the line. */
static void test_unclosed_bracket(void **state)
{
    (void)state;
    expect_error_at("print f(1,\ncoord x", 1, 8,
                    "'(' is never closed: line 2 cannot continue the "
                    "statement (unexpected 'coord', expected an expression)");
    expect_error_at("print [1,\n  2\n\n  coord x", 1, 7,
                    "'[' is never closed: line 4 cannot continue the "
                    "statement (unexpected 'coord', expected an operator, "
                    "',' or ']')");
    /* a bracket opened on the new line is not the one left open */
    expect_error_at("print (1\n(2)", 1, 7,
                    "'(' is never closed: line 2 cannot continue the "
                    "statement (unexpected '(', expected an operator or "
                    "')')");
    /* an error inside the new line, or a bracket closed, is where it is */
    expect_error_at("print (1 +\n2 3)", 2, 3,
                    "unexpected number '3', expected an operator or ')'");
    expect_error_at("print ((1 +\n)", 2, 1,
                    "unexpected ')', expected an expression");
    expect_error_at("print (1 (", 1, 10,
                    "unexpected '(', expected an operator or ')'");
}

/* ---- limits and hostile input ----------------------------------------- */

static char *repeat(const char *head, const char *unit, size_t times,
                    const char *tail)
{
    size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail);
    char *s = malloc(hl + ul * times + tl + 1);
    assert_non_null(s);
    memcpy(s, head, hl);
    for (size_t i = 0; i < times; i++)
        memcpy(s + hl + i * ul, unit, ul);
    memcpy(s + hl + ul * times, tail, tl + 1);
    return s;
}

static void expect_too_deep(char *text)
{
    parsed_t *P = parse(text);
    if (P->status != PARSE_ERROR ||
        strcmp(P->diag.msg,
               "expression nested too deeply (more than 200 levels)") != 0)
        fail_msg("%.40s...: status %d '%s'", text, P->status, P->diag.msg);
    parsed_free(P);
    free(text);
}

static void expect_deep_ok(char *text)
{
    parsed_t *P = parse(text);
    if (P->status != PARSE_OK)
        fail_msg("%.40s...: %s", text, P->diag.msg);
    parsed_free(P);
    free(text);
}

static void test_nesting_limit(void **state)
{
    (void)state;
    const size_t big = 100000;
    expect_too_deep(repeat("print ", "(", big, "1"));
    expect_too_deep(repeat("print ", "[", big, "1"));
    expect_too_deep(repeat("print ", "f(", big, "1"));
    expect_too_deep(repeat("print ", "-", big, "1"));
    expect_too_deep(repeat("print ", "+", big, "1"));
    expect_too_deep(repeat("print ", "2^", big, "1"));
    expect_too_deep(repeat("print ", "2^-", big, "1"));
    expect_too_deep(repeat("print ", "1+", big, "1"));
    expect_too_deep(repeat("print ", "x*", big, "1"));
    expect_too_deep(repeat("print x", "'", big, ""));
    expect_too_deep(repeat("print x", "[1]", big, ""));
    expect_too_deep(repeat("print ", "-(", big, "1"));

    /* at the limit: fine.  200 levels of brackets, and trees of height
     * 200 (a leaf and 199 operators above it) */
    char *t = repeat("print ", "(", PARSE_MAX_DEPTH, "1");
    char *u = repeat(t, ")", PARSE_MAX_DEPTH, "");
    free(t);
    expect_deep_ok(u);
    expect_deep_ok(repeat("print ", "-", PARSE_MAX_DEPTH - 1, "1"));
    expect_deep_ok(repeat("print ", "1+", PARSE_MAX_DEPTH - 1, "1"));
    expect_deep_ok(repeat("print x", "'", PARSE_MAX_DEPTH - 1, ""));
    t = repeat("print ", "[", PARSE_MAX_DEPTH - 1, "1");
    u = repeat(t, "]", PARSE_MAX_DEPTH - 1, "");
    free(t);
    expect_deep_ok(u);
    /* one more: an error */
    expect_too_deep(repeat("print ", "-", PARSE_MAX_DEPTH, "1"));
    expect_too_deep(repeat("print ", "1+", PARSE_MAX_DEPTH, "1"));
    t = repeat("print ", "(", PARSE_MAX_DEPTH + 1, "1");
    u = repeat(t, ")", PARSE_MAX_DEPTH + 1, "");
    free(t);
    expect_too_deep(u);
}

/* xorshift64*: a fixed, portable stream of pseudo-random bytes. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

static void test_random_bytes(void **state)
{
    (void)state;
    const size_t n = 1 << 20;
    char *buf = malloc(n);
    assert_non_null(buf);
    uint64_t s = 0x9E3779B97F4A7C15ULL;
    for (int round = 0; round < 4; round++) {
        for (size_t i = 0; i < n; i++)
            buf[i] = (char)(rng_next(&s) >> 56);
        if (round == 1) /* printable bytes only: no stray-byte shortcut */
            for (size_t i = 0; i < n; i++)
                buf[i] = (char)(' ' + (unsigned char)buf[i] % 95);
        if (round == 2) /* one long line, no newline */
            for (size_t i = 0; i < n; i++)
                buf[i] = (char)('a' + (unsigned char)buf[i] % 26);
        if (round == 3) /* all NUL */
            memset(buf, 0, n);
        parsed_t *P = parse_n(buf, n);
        assert_int_not_equal(P->status, PARSE_OK);
        assert_true(P->diag.set);
        /* the report can be drawn */
        FILE *f = fopen("/dev/null", "w");
        assert_non_null(f);
        diag_print(f, P->set, &P->diag);
        fclose(f);
        parsed_free(P);
    }
    free(buf);
}

/* Random token soups: whatever comes out, the parser returns a status and
 * a consistent tree or error, under ASan without leaks. */
static void test_token_soup(void **state)
{
    (void)state;
    static const char *const toks[] = {
        "print", "param", "coord", "let", "constraint", "simulate", "to",
        "step",  "show",  "latex", "mass", "help", "plot", "vs", "table",
        "initial", "x",   "y",     "f",    "1",    ".5",  "2e3", "(",   ")",
        "[",     "]",     ",",     ";",    "\n",   "=",   ":",   "+",   "-",
        "*",     "/",     "^",     "'",    ">",    "\"a\"", "# c\n", " ",
    };
    const size_t nt = sizeof toks / sizeof *toks;
    uint64_t s = 12345;
    char buf[2048];
    size_t ok = 0, incomplete = 0, error = 0;
    for (int iter = 0; iter < 3000; iter++) {
        size_t len = 0;
        size_t count = 1 + rng_next(&s) % 30;
        for (size_t k = 0; k < count; k++) {
            const char *t = toks[rng_next(&s) % nt];
            size_t tl = strlen(t);
            if (len + tl + 2 >= sizeof buf)
                break;
            memcpy(buf + len, t, tl);
            len += tl;
            buf[len++] = ' ';
        }
        parsed_t *P = parse_n(buf, len);
        if (P->status == PARSE_OK) {
            ok++;
            for (size_t i = 0; i < P->prog.n; i++) {
                const ast_stmt_t *st = P->prog.stmts[i];
                assert_true(st->span.begin < st->span.end);
                assert_true(st->span.end <= len);
                assert_true(st->kind <= STMT_EXIT);
            }
        } else {
            assert_true(P->diag.span.end <= len);
            if (P->status == PARSE_INCOMPLETE)
                incomplete++;
            else
                error++;
        }
        parsed_free(P);
    }
    /* the soup reaches all three outcomes */
    assert_true(ok > 0 && incomplete > 0 && error > 0);
}

/* ---- the arena -------------------------------------------------------- */

static void test_arena(void **state)
{
    (void)state;
    ast_arena_t *a = ast_arena_new();
    /* many small blocks: zeroed, aligned, distinct */
    unsigned char *prev = NULL;
    for (int i = 0; i < 20000; i++) {
        size_t sz = 1 + (size_t)(i % 97);
        unsigned char *p = ast_alloc(a, sz);
        assert_int_equal((uintptr_t)p % _Alignof(max_align_t), 0);
        for (size_t k = 0; k < sz; k++)
            assert_int_equal(p[k], 0);
        memset(p, 0xAB, sz);
        assert_true(p != prev);
        prev = p;
    }
    /* a block larger than a chunk */
    size_t bigsz = 1 << 20;
    unsigned char *big = ast_alloc(a, bigsz);
    for (size_t k = 0; k < bigsz; k += 4096)
        assert_int_equal(big[k], 0);
    memset(big, 1, bigsz);
    /* small blocks still come after it */
    unsigned char *small = ast_alloc(a, 8);
    assert_int_equal(small[0], 0);
    assert_non_null(ast_alloc(a, 0));

    char *s = ast_strndup(a, "hello world", 5);
    assert_string_equal(s, "hello");
    char *e = ast_strndup(a, "", 0);
    assert_string_equal(e, "");
    ast_arena_free(a);
    ast_arena_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_expr_nodes_and_spans),
        cmocka_unit_test(test_declarations),
        cmocka_unit_test(test_frames_and_bodies),
        cmocka_unit_test(test_constraints),
        cmocka_unit_test(test_state_and_simulation),
        cmocka_unit_test(test_initial_guess),
        cmocka_unit_test(test_output_statements),
        cmocka_unit_test(test_show_and_teaching),
        cmocka_unit_test(test_to_file),
        cmocka_unit_test(test_other_statements),
        cmocka_unit_test(test_v3_statements),
        cmocka_unit_test(test_v3_statements),
        cmocka_unit_test(test_every_kind_and_keyword),
        cmocka_unit_test(test_separators),
        cmocka_unit_test(test_incomplete),
        cmocka_unit_test(test_error_locations),
        cmocka_unit_test(test_unclosed_bracket),
        cmocka_unit_test(test_nesting_limit),
        cmocka_unit_test(test_random_bytes),
        cmocka_unit_test(test_token_soup),
        cmocka_unit_test(test_arena),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
