/*
 * test_lower.c — the model's shared arrays and name index (model.c), and
 * the extended lowering (lower_extend) against a fresh one (lower_model).
 *
 * A statement works on a clone of the model, which shares the declaration
 * arrays copy on write: the original must never see what a clone does,
 * whichever of them appends or replaces first, and a name must be found
 * by exactly the models that declare it.  A declaration lowered alone
 * must give the system a fresh lowering of the whole model gives: the
 * same variables in the same canonical order, hence the same text of
 * every expression (the text prints the canonical order).
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
#include "interp/mech/lower.h"
#include "interp/mech/model.h"
#include "lang/parse.h"

static model_param_t param(const char *name, double v)
{
    model_param_t p = {name, SRC_SPAN_NONE, v};
    return p;
}

static model_name_t name_of(const char *name)
{
    model_name_t n = {name, SRC_SPAN_NONE};
    return n;
}

/* A clone's appends and replacements never show in the original, nor
 * the original's in the clone, in any order. */
static void test_clone_is_independent(void **state)
{
    (void)state;
    model_t a, b, c;
    model_init(&a);
    model_push_param(&a, param("m", 1));
    model_push_param(&a, param("g", 9.81));
    model_clone(&b, &a);
    model_push_param(&b, param("k", 2)); /* in place: a has not appended */
    assert_int_equal(a.params.n, 2);
    assert_int_equal(b.params.n, 3);
    assert_int_equal(model_lookup(&a, "k", NULL, NULL), MODEL_NONE);
    assert_int_equal(model_lookup(&b, "k", NULL, NULL), MODEL_PARAM);
    /* a appends past b's entry: a copies, b keeps its k */
    model_push_param(&a, param("c", 3));
    assert_string_equal(b.params.v[2].name, "k");
    assert_string_equal(a.params.v[2].name, "c");
    assert_int_equal(model_lookup(&a, "k", NULL, NULL), MODEL_NONE);
    assert_int_equal(model_lookup(&b, "c", NULL, NULL), MODEL_NONE);
    size_t idx;
    assert_int_equal(model_lookup(&a, "c", &idx, NULL), MODEL_PARAM);
    assert_int_equal(idx, 2);
    /* a replacement in a clone copies first */
    model_clone(&c, &b);
    model_set_param_value(&c, 0, 5);
    assert_true(b.params.v[0].value == 1);
    assert_true(c.params.v[0].value == 5);
    model_set_param_value(&b, 1, 7);
    assert_true(c.params.v[1].value == 9.81);
    /* a sole holder writes in place */
    model_free(&c);
    model_t d;
    model_clone(&d, &b);
    model_free(&b);
    const model_param_t *before = d.params.v;
    model_set_param_value(&d, 0, 4);
    assert_ptr_equal(d.params.v, before);
    model_free(&a);
    model_free(&d);
}

/* The pattern of a session: clone, append, keep or drop the clone.  A
 * dropped clone's entries past the model's end are never seen, and the
 * model's next append takes their place. */
static void test_failed_clone_leaves_nothing(void **state)
{
    (void)state;
    model_t s;
    model_init(&s);
    model_push_coord(&s, name_of("x"));
    for (int k = 0; k < 3; k++) {
        model_t cand;
        model_clone(&cand, &s);
        model_push_coord(&cand, name_of("y"));
        model_push_param(&cand, param("m", 1));
        model_free(&cand); /* the statement failed */
    }
    assert_int_equal(model_lookup(&s, "y", NULL, NULL), MODEL_NONE);
    assert_int_equal(model_lookup(&s, "m", NULL, NULL), MODEL_NONE);
    model_t cand;
    model_clone(&cand, &s);
    model_push_coord(&cand, name_of("z"));
    model_free(&s);
    s = cand; /* the statement succeeded */
    assert_int_equal(s.coords.n, 2);
    assert_int_equal(model_coord_index(&s, "z"), 1);
    assert_int_equal(model_coord_index(&s, "y"), -1);
    assert_int_equal(s.q.n, 2);
    model_free(&s);
}

/* Many names through clones: every one found at its index, in the model
 * that declared it and in its later clones, and O(1) each (the test
 * would take minutes if appends or look-ups scanned the model). */
static void test_many_names(void **state)
{
    (void)state;
    enum { N = 100000 };
    static char names[N][12];
    model_t s;
    model_init(&s);
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "p%d", i);
        model_t cand;
        model_clone(&cand, &s);
        if (i % 2)
            model_push_param(&cand, param(names[i], i));
        else {
            model_let_t l = {names[i], SRC_SPAN_NONE, NULL};
            model_push_let(&cand, l);
        }
        assert_int_equal(model_lookup(&s, names[i], NULL, NULL), MODEL_NONE);
        model_free(&s);
        s = cand;
    }
    for (int i = 0; i < N; i += 997) {
        size_t idx;
        model_kind_t k = model_lookup(&s, names[i], &idx, NULL);
        assert_int_equal(k, i % 2 ? MODEL_PARAM : MODEL_LET);
        assert_int_equal(idx, (size_t)(i / 2));
    }
    model_free(&s);
}

/* ---- extended against fresh lowerings ------------------------------------ */

/* Compares the lowerings EXT (extended) and FRESH of one model: counts,
 * variable names, the constraints' rows and their multipliers, and the
 * text of L, T, every Q_i and C_a, and of QUERY lowered in each. */
static void compare_systems(lower_t *ext, lower_t *fresh, const char *query)
{
    diag_t err = {0};
    const nh_system_t *a = lower_system(ext), *b = lower_system(fresh);
    assert_int_equal(a->n, b->n);
    assert_int_equal(a->m, b->m);
    assert_int_equal(a->np, b->np);
    assert_int_equal(a->r, b->r);
    assert_int_equal(a->nparticles, b->nparticles);
    assert_int_equal(expr_graph_nvars(a->g), expr_graph_nvars(b->g));
    for (size_t i = 0; i < a->np; i++)
        assert_string_equal(expr_var_name(a->g, a->p[i]),
                            expr_var_name(b->g, b->p[i]));
    for (size_t k = 0; k < a->r; k++) {
        assert_string_equal(a->cname[k], b->cname[k]);
        assert_string_equal(expr_var_name(a->g, a->lam[k]),
                            expr_var_name(b->g, b->lam[k]));
        assert_int_equal(a->cleft[k], b->cleft[k]);
    }
#define SAME_TEXT(x, y)                                                 \
    do {                                                                \
        char *ta = expr_to_text(a->g, (x)), *tb = expr_to_text(b->g, (y)); \
        assert_string_equal(ta, tb);                                    \
        free(ta);                                                       \
        free(tb);                                                       \
    } while (0)
    SAME_TEXT(a->L, b->L);
    if (a->T)
        SAME_TEXT(a->T, b->T);
    for (size_t i = 0; i < a->n; i++)
        SAME_TEXT(a->Q[i], b->Q[i]);
    for (size_t k = 0; k < a->r; k++)
        SAME_TEXT(a->C[k], b->C[k]);
    char text[512];
    snprintf(text, sizeof text, "print %s\n", query);
    source_set_t *set = source_set_new();
    uint32_t file = source_add(set, "<query>", text, strlen(text));
    ast_arena_t *arena = ast_arena_new();
    ast_program_t prog;
    assert_int_equal(parse_program(set, file, arena, &prog, &err), PARSE_OK);
    const ast_expr_t *q = prog.stmts[0]->u.output.items[0];
    value_t va, vb;
    assert_int_equal(lower_expr(ext, q, LOWER_QUERY, &va, &err), 0);
    assert_int_equal(lower_expr(fresh, q, LOWER_QUERY, &vb, &err), 0);
    assert_int_equal(va.dim, vb.dim);
    for (unsigned k = 0; k < (va.dim ? va.dim : 1); k++)
        SAME_TEXT(va.c[k], vb.c[k]);
#undef SAME_TEXT
    ast_arena_free(arena);
    source_set_free(set);
}

/* Runs the statements STMTS (NULL-terminated) one by one in S. */
static void run_statements(session_t *s, const char *const *stmts)
{
    for (size_t i = 0; stmts[i]; i++)
        assert_int_equal(session_run_text(s, "<t>", stmts[i],
                                          strlen(stmts[i]), false),
                         RUN_OK);
}

/* Runs the statements one by one in a session (each declaration lowered
 * alone where it can be), then compares the session's lowering with a
 * fresh lowering of its model (compare_systems). */
static void compare_lowerings(const char *const *stmts, const char *query)
{
    FILE *sink = fopen("/dev/null", "w");
    session_t *s = session_new(true, sink, sink);
    run_statements(s, stmts);
    ctx_t *cx = session_ctx(s);
    diag_t err = {0};
    lower_t *ext = ctx_lowered(cx, &err);
    assert_non_null(ext);
    lower_t *fresh = lower_model(&cx->model, cx->src, &err);
    assert_non_null(fresh);
    compare_systems(ext, fresh, query);
    lower_free(fresh);
    session_free(s);
    fclose(sink);
}

/* Parameters, coordinates and speeds declared after constraints, lets
 * and each other: their variables come last in the extended lowering and
 * in their role's place in a fresh one, and every expression reads the
 * same. */
static void test_extend_variables(void **state)
{
    (void)state;
    static const char *const stmts[] = {
        "param m = 1",
        "coord x",
        "constraint c: x' = 0.5*t",
        "param k = 2",
        "coord y",
        "kinetic T = m/2*(x'^2 + y'^2) + k*x*y'",
        "let e = k*x + m*y + t",
        "speed u",
        "param b = 3",
        "constraint d: y' = b*x' + u",
        "param a = 4",
        "let f = a*e + b*y + k*x' + u",
        NULL};
    compare_lowerings(stmts, "f*e + a*b*k*m*t + lambda(c) + lambda(d)");
}

static void test_extend_particles(void **state)
{
    (void)state;
    static const char *const stmts[] = {
        "param m = 1, l = 2",
        "coord x, y",
        "particle P mass m at [x, y]",
        "force P = [m*y, -x]",
        "param g = 9.81",
        "potential V = m*g*y",
        "param h = 1",
        "particle Q mass h at [x + l, y*y]",
        "let E = P' + Q'",
        NULL};
    compare_lowerings(stmts, "dot(E, E)*g*h");
}

/* Frames, bodies, particles, gravity, loads and a vector constraint
 * declared one at a time, interleaved with parameters, coordinates and a
 * speed.  The particles around the body have masses whose halves sum to
 * different doubles in different orders ((0.05 + 0.3) + 0.1 is
 * 0.44999999999999996, (0.05 + 0.1) + 0.3 is 0.45): the particles' and
 * the bodies' energies are summed as a fresh lowering sums them. */
static void test_extend_bodies(void **state)
{
    (void)state;
    static const char *const stmts[] = {
        "param g = 9.81",
        "coord a",
        "frame N",
        "gravity [0, 0, -g]",
        "frame A from N about z by a",
        "param r = 0.4",
        "coord b, x",
        "particle P1 mass 0.1 at [x, 0, 0]",
        "frame B from A about [1, 1, 0] by b",
        "body arm mass 0.2 at [x, 0, 0] frame B inertia [1, 2, 3]",
        "coord y",
        "particle P2 mass 0.6 at [x, 0, 0]",
        "param m = 2",
        "body disk mass m at [x, y, r] + r*B.z frame B inertia [0.1, 0.2, "
        "0.3, 0.01, 0.02, 0.03]",
        "speed u",
        "force disk at [x, y, 0] + r*B.x = [1, 2, 3]",
        "torque arm = [0.1, -0.2, 0.3]",
        "coord w",
        "particle P3 mass 1 at [w, 0, sqrt(x)]",
        "force P1 = [0, 1, 0]",
        "constraint roll: velocity([x, y, 0] + r*B.x, disk) = [0, 0, 0]",
        "let spin = on(B, omega(B))",
        "param k = 3",
        "let e = k*spin + [u, 0, 0]",
        NULL};
    compare_lowerings(stmts, "e + velocity([x, 0, 0], arm)*lambda(roll[1])");
}

/* A vector constraint is lowered by lower_extend() itself (0, not 1: the
 * whole model is not lowered again): its rows, their names and
 * multipliers, and the component that vanishes identically dropped as a
 * fresh lowering drops it. */
static void test_extend_vector_constraint(void **state)
{
    (void)state;
    static const char *const before[] = {
        "param m = 1, r = 0.5",
        "coord phi, theta, psi, x, y",
        "frame N",
        "frame A from N about z by phi",
        "frame B from A about x by theta",
        "frame C from B about z by psi",
        "constraint c0: x' = 0",
        "body disk mass m at [x, y, r*sin(theta)] frame C inertia [m*r^2/4, "
        "m*r^2/4, m*r^2/2]",
        NULL};
    static const char *const roll[] = {
        "constraint roll: velocity([x, y, r*sin(theta)] - r*B.y, disk) = "
        "[0, 0, 0]",
        NULL};
    FILE *sink = fopen("/dev/null", "w");
    session_t *s = session_new(true, sink, sink);
    run_statements(s, before);
    ctx_t *cx = session_ctx(s);
    diag_t err = {0};
    lower_t *ext = lower_model(&cx->model, cx->src, &err);
    assert_non_null(ext);
    run_statements(s, roll);
    assert_int_equal(lower_extend(ext, &cx->model, &err), 0);
    lower_t *fresh = lower_model(&cx->model, cx->src, &err);
    assert_non_null(fresh);
    /* c0 and roll[1], roll[2]: roll[3], the contact's vertical velocity,
     * is r*cos(theta)*theta' from the centre less the same from the
     * turning, and is dropped */
    assert_int_equal(lower_system(ext)->r, 3);
    int da[3], db[3];
    assert_int_equal(lower_dropped(ext, "roll", da), 3);
    assert_int_equal(lower_dropped(fresh, "roll", db), 3);
    assert_memory_equal(da, db, sizeof da);
    assert_true(da[0] == 0 && da[1] == 0 && da[2] != 0);
    compare_systems(ext, fresh, "lambda(roll[1]) + lambda(roll[2]) + "
                                "lambda(c0) + reaction(x)");
    lower_free(ext);
    lower_free(fresh);
    session_free(s);
    fclose(sink);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clone_is_independent),
        cmocka_unit_test(test_failed_clone_leaves_nothing),
        cmocka_unit_test(test_many_names),
        cmocka_unit_test(test_extend_variables),
        cmocka_unit_test(test_extend_particles),
        cmocka_unit_test(test_extend_bodies),
        cmocka_unit_test(test_extend_vector_constraint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
