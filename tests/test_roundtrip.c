/*
 * test_roundtrip.c — the printer against the real language: an expression
 * printed by expr_to_text, parsed by the .nh parser and lowered by the
 * interpreter, is the same node (LANGUAGE.md §7 `show`, issue: "parsing the
 * printed text gives the same node"), or for a guarded node its value.  Random expressions over every op
 * and every kind of variable (coordinates, velocities, accelerations,
 * speeds, parameters, t, multipliers).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "interp/cli/context.h"
#include "interp/cli/session.h"
#include "lang/parse.h"

static uint64_t rng = 0x2545F4914F6CDD1DULL;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const expr_t *random_expr(expr_graph_t *g, const uint32_t *vars,
                                 size_t nvars, int depth)
{
    unsigned pick = (unsigned)(next() % (depth <= 0 ? 2 : 12));
    static const double consts[] = {0.5, 2, 3, -1, -2.5, 0.1, 1e-3, 7, 1.0 / 3};
    switch (pick) {
    case 0:
        return expr_num(g, consts[next() % (sizeof consts / sizeof *consts)]);
    case 1:
        return expr_var(g, vars[next() % nvars]);
    case 2:
        return expr_add(g, random_expr(g, vars, nvars, depth - 1),
                        random_expr(g, vars, nvars, depth - 1));
    case 3:
        return expr_sub(g, random_expr(g, vars, nvars, depth - 1),
                        random_expr(g, vars, nvars, depth - 1));
    case 4:
        return expr_mul(g, random_expr(g, vars, nvars, depth - 1),
                        random_expr(g, vars, nvars, depth - 1));
    case 5:
        return expr_div(g, random_expr(g, vars, nvars, depth - 1),
                        random_expr(g, vars, nvars, depth - 1));
    case 6:
        return expr_neg(g, random_expr(g, vars, nvars, depth - 1));
    case 7:
        return expr_pow(g, random_expr(g, vars, nvars, depth - 1),
                        expr_num(g, (double)(next() % 5) - 2));
    case 8:
        return expr_pow(g, random_expr(g, vars, nvars, depth - 1),
                        random_expr(g, vars, nvars, depth - 1));
    default: {
        static const expr_op_t fn[] = {
            EXPR_SIN, EXPR_COS, EXPR_TAN, EXPR_ASIN, EXPR_ACOS, EXPR_ATAN,
            EXPR_ATAN2, EXPR_SINH, EXPR_COSH, EXPR_TANH, EXPR_EXP, EXPR_LOG,
            EXPR_SQRT, EXPR_ABS, EXPR_SIGN, EXPR_MIN, EXPR_MAX};
        expr_op_t op = fn[next() % (sizeof fn / sizeof *fn)];
        const expr_t *a = random_expr(g, vars, nvars, depth - 1);
        const expr_t *b = expr_op_arity(op) == 2
                              ? random_expr(g, vars, nvars, depth - 1)
                              : NULL;
        return expr_call(g, op, a, b);
    }
    }
}

static void test_printed_text_parses_to_the_same_node(void **state)
{
    (void)state;
    FILE *devnull = fopen("/dev/null", "w");
    session_t *s = session_new(true, devnull, devnull);
    const char *model = "param a = 1, b = 2\ncoord x, y\nspeed u\n"
                        "constraint c: x' = u\n";
    assert_int_equal(session_run_text(s, "m.nh", model, strlen(model), false),
                     RUN_OK);
    diag_t err = {0};
    lower_t *lw = ctx_lowered(session_ctx(s), &err);
    assert_non_null(lw);
    const nh_system_t *sys = lower_system(lw);
    expr_graph_t *g = lower_graph(lw);
    uint32_t vars[] = {sys->q[0],  sys->qd[0], sys->qdd[0], sys->q[1],
                       sys->qd[1], sys->z[0],  sys->zd[0],  sys->p[0],
                       sys->p[1],  sys->t,     sys->lam[0]};
    size_t nvars = sizeof vars / sizeof *vars;

    for (int k = 0; k < 2000; k++) {
        const expr_t *e = random_expr(g, vars, nvars, 1 + k % 5);
        char *text = expr_to_text(g, e);
        size_t n = strlen(text) + 16;
        char *stmt = malloc(n);
        snprintf(stmt, n, "show %s", text);
        source_set_t *src = source_set_new();
        uint32_t f = source_add(src, "<rt>", stmt, strlen(stmt));
        ast_arena_t *arena = ast_arena_new();
        ast_program_t prog;
        diag_clear(&err);
        parse_status_t ps = parse_program(src, f, arena, &prog, &err);
        if (ps != PARSE_OK)
            fail_msg("'%s' does not parse: %s", text, err.msg);
        assert_int_equal(prog.n, 1);
        value_t v;
        if (lower_expr(lw, prog.stmts[0]->u.show.expr, LOWER_QUERY, &v, &err))
            fail_msg("'%s' does not lower: %s", text, err.msg);
        assert_int_equal(v.dim, 0);
        /* a guard prints as its value (the domain it keeps is no text):
         * the text reads back as the value */
        if (v.c[0] != expr_unguarded(e)) {
            char *back = expr_to_text(g, v.c[0]);
            fail_msg("'%s' reads back as '%s'", text, back);
        }
        ast_arena_free(arena);
        source_set_free(src);
        free(stmt);
        free(text);
    }
    session_free(s);
    fclose(devnull);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_printed_text_parses_to_the_same_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
