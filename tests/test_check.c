/*
 * test_check.c — the `check` analysis (interp/analysis/check.h) on systems built by
 * hand: kinds of constraints, homogeneity, time dependence, Frobenius'
 * test and exactness, the rank of B, the degrees of freedom and Benenti's
 * Theorem 11.6.
 *
 * Every expected verdict is a fact of mechanics worked out independently
 * in the comment beside it (a closed-form dω ∧ ω, a singular value by
 * hand), never the program's own earlier output.  Systems are built with
 * a small builder and an expression reader local to this file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>
#include <ctype.h>
#include <stdio.h>

#include <gsl/gsl_errno.h>

#include "interp/analysis/check.h"
#include "interp/expr/expr.h"
#include "interp/mech/system.h"

/* ---- a small system builder ---------------------------------------- */

#define TB_MAX 64

typedef struct tb {
    expr_graph_t *g;
    size_t n, np, r;
    char *qname[TB_MAX], *pname[TB_MAX], *cname[TB_MAX];
    uint32_t q[TB_MAX], qd[TB_MAX], qdd[TB_MAX], p[TB_MAX], lam[TB_MAX];
    uint32_t t;
    const expr_t *C[TB_MAX], *Q[TB_MAX], *L;
    src_span_t cspan[TB_MAX];
    nh_system_t sys;
    double *vars;
} tb_t;

static char *dupstr(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    assert_non_null(d);
    return memcpy(d, s, n);
}

/* Coordinates and parameters as space-separated names. */
static tb_t *tb_new(const char *coords, const char *params)
{
    tb_t *b = calloc(1, sizeof *b);
    assert_non_null(b);
    b->g = expr_graph_new();
    char buf[512];
    snprintf(buf, sizeof buf, "%s", coords);
    for (char *s = strtok(buf, " "); s; s = strtok(NULL, " ")) {
        char nm[80];
        assert_true(b->n < TB_MAX);
        b->qname[b->n] = dupstr(s);
        b->q[b->n] = expr_var_declare(b->g, s);
        snprintf(nm, sizeof nm, "%s'", s);
        b->qd[b->n] = expr_var_declare(b->g, nm);
        snprintf(nm, sizeof nm, "%s''", s);
        b->qdd[b->n] = expr_var_declare(b->g, nm);
        b->n++;
    }
    snprintf(buf, sizeof buf, "%s", params);
    for (char *s = strtok(buf, " "); s; s = strtok(NULL, " ")) {
        assert_true(b->np < TB_MAX);
        b->pname[b->np] = dupstr(s);
        b->p[b->np++] = expr_var_declare(b->g, s);
    }
    b->t = expr_var_declare(b->g, "t");
    for (size_t i = 0; i < b->n; i++)
        b->Q[i] = expr_num(b->g, 0);
    b->L = expr_num(b->g, 0);
    return b;
}

static void tb_free(tb_t *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->qname[i]);
    for (size_t i = 0; i < b->np; i++)
        free(b->pname[i]);
    for (size_t i = 0; i < b->r; i++)
        free(b->cname[i]);
    free(b->vars);
    expr_graph_free(b->g);
    free(b);
}

/* The expression reader: + - * / ^, unary minus, parentheses, numbers,
 * coordinates with primes, parameters, t, and the functions of expr.h. */
typedef struct rd {
    tb_t *b;
    const char *s;
} rd_t;

static const expr_t *rd_expr(rd_t *r);

static void rd_space(rd_t *r)
{
    while (isspace((unsigned char)*r->s))
        r->s++;
}

static const expr_t *rd_name(rd_t *r, const char *nm, size_t len,
                             unsigned primes)
{
    tb_t *b = r->b;
    for (size_t i = 0; i < b->n; i++)
        if (strlen(b->qname[i]) == len && !strncmp(b->qname[i], nm, len)) {
            uint32_t v = primes == 0   ? b->q[i]
                         : primes == 1 ? b->qd[i]
                                       : b->qdd[i];
            return expr_var(b->g, v);
        }
    assert_int_equal(primes, 0);
    for (size_t i = 0; i < b->np; i++)
        if (strlen(b->pname[i]) == len && !strncmp(b->pname[i], nm, len))
            return expr_var(b->g, b->p[i]);
    if (len == 1 && nm[0] == 't')
        return expr_var(b->g, b->t);
    fail_msg("unknown name %.*s", (int)len, nm);
    return NULL;
}

static const expr_t *rd_primary(rd_t *r)
{
    rd_space(r);
    if (*r->s == '(') {
        r->s++;
        const expr_t *e = rd_expr(r);
        rd_space(r);
        assert_int_equal(*r->s, ')');
        r->s++;
        return e;
    }
    if (*r->s == '-') {
        r->s++;
        return expr_neg(r->b->g, rd_primary(r));
    }
    if (isdigit((unsigned char)*r->s) || *r->s == '.') {
        char *end;
        double v = strtod(r->s, &end);
        r->s = end;
        return expr_num(r->b->g, v);
    }
    assert_true(isalpha((unsigned char)*r->s));
    const char *nm = r->s;
    while (isalnum((unsigned char)*r->s) || *r->s == '_')
        r->s++;
    size_t len = (size_t)(r->s - nm);
    if (*r->s == '(') {
        char fn[32];
        snprintf(fn, sizeof fn, "%.*s", (int)len, nm);
        int op = expr_op_lookup(fn);
        assert_true(op >= 0);
        r->s++;
        const expr_t *a = rd_expr(r), *c = NULL;
        rd_space(r);
        if (*r->s == ',') {
            r->s++;
            c = rd_expr(r);
            rd_space(r);
        }
        assert_int_equal(*r->s, ')');
        r->s++;
        return expr_call(r->b->g, (expr_op_t)op, a, c);
    }
    unsigned primes = 0;
    while (*r->s == '\'') {
        primes++;
        r->s++;
    }
    return rd_name(r, nm, len, primes);
}

static const expr_t *rd_power(rd_t *r)
{
    const expr_t *e = rd_primary(r);
    rd_space(r);
    if (*r->s == '^') {
        r->s++;
        return expr_pow(r->b->g, e, rd_power(r)); /* right-associative */
    }
    return e;
}

static const expr_t *rd_term(rd_t *r)
{
    const expr_t *e = rd_power(r);
    for (;;) {
        rd_space(r);
        if (*r->s == '*') {
            r->s++;
            e = expr_mul(r->b->g, e, rd_power(r));
        } else if (*r->s == '/') {
            r->s++;
            e = expr_div(r->b->g, e, rd_power(r));
        } else {
            return e;
        }
    }
}

static const expr_t *rd_expr(rd_t *r)
{
    const expr_t *e = rd_term(r);
    for (;;) {
        rd_space(r);
        if (*r->s == '+') {
            r->s++;
            e = expr_add(r->b->g, e, rd_term(r));
        } else if (*r->s == '-') {
            r->s++;
            e = expr_sub(r->b->g, e, rd_term(r));
        } else {
            return e;
        }
    }
}

static const expr_t *tb_parse(tb_t *b, const char *text)
{
    rd_t r = {b, text};
    const expr_t *e = rd_expr(&r);
    rd_space(&r);
    assert_int_equal(*r.s, '\0');
    return e;
}

/* constraint NAME: C = 0 */
static void tb_constraint(tb_t *b, const char *name, const char *c)
{
    char nm[80];
    assert_true(b->r < TB_MAX);
    b->cname[b->r] = dupstr(name);
    b->C[b->r] = tb_parse(b, c);
    b->cspan[b->r] = SRC_SPAN_NONE;
    snprintf(nm, sizeof nm, "lambda_%s", name);
    b->lam[b->r] = expr_var_declare(b->g, nm);
    b->r++;
}

static void tb_force(tb_t *b, const char *coord, const char *q)
{
    for (size_t i = 0; i < b->n; i++)
        if (!strcmp(b->qname[i], coord)) {
            b->Q[i] = expr_add(b->g, b->Q[i], tb_parse(b, q));
            return;
        }
    fail_msg("no coordinate %s", coord);
}

static void tb_lagrangian(tb_t *b, const char *l)
{
    b->L = tb_parse(b, l);
}

/* Fills the nh_system_t and a value vector of zeros (parameters 1). */
static nh_system_t *tb_finish(tb_t *b)
{
    nh_system_t *s = &b->sys;
    memset(s, 0, sizeof *s);
    s->g = b->g;
    s->n = b->n;
    s->qname = (const char *const *)b->qname;
    s->q = b->q;
    s->qd = b->qd;
    s->qdd = b->qdd;
    s->np = b->np;
    s->pname = (const char *const *)b->pname;
    s->p = b->p;
    s->t = b->t;
    s->L = b->L;
    s->Q = b->Q;
    s->r = b->r;
    s->C = b->C;
    s->cname = (const char *const *)b->cname;
    s->cspan = b->cspan;
    s->lam = b->lam;
    size_t nv = expr_graph_nvars(b->g);
    free(b->vars);
    b->vars = calloc(nv, sizeof *b->vars);
    assert_non_null(b->vars);
    for (size_t i = 0; i < b->np; i++)
        b->vars[b->p[i]] = 1;
    return s;
}

/* set NAME = V, NAME' = V, or a parameter. */
static void tb_set(tb_t *b, const char *name, double v)
{
    size_t len = strcspn(name, "'");
    bool prime = name[len] == '\'';
    for (size_t i = 0; i < b->n; i++)
        if (strlen(b->qname[i]) == len && !strncmp(b->qname[i], name, len)) {
            b->vars[prime ? b->qd[i] : b->q[i]] = v;
            return;
        }
    for (size_t i = 0; i < b->np; i++)
        if (!strcmp(b->pname[i], name)) {
            b->vars[b->p[i]] = v;
            return;
        }
    if (!strcmp(name, "t")) {
        b->vars[b->t] = v;
        return;
    }
    fail_msg("no variable %s", name);
}

static void analyse(tb_t *b, check_report_t *rep)
{
    diag_t err = {0};
    assert_int_equal(check_analyse(&b->sys, b->vars, rep, &err), 0);
    assert_false(err.set);
    assert_int_equal(rep->r, b->r);
    assert_int_equal(rep->n, b->n);
}

/* The formatted report contains LINE (a whole line or a part of one). */
static void assert_report_has(tb_t *b, const check_report_t *rep,
                              const char *line)
{
    char *s = check_format(&b->sys, rep);
    if (!strstr(s, line)) {
        print_error("report:\n%s\nlacks: %s\n", s, line);
        free(s);
        fail();
    }
    free(s);
}

/* ---- the systems ---------------------------------------------------- */

/* The rolling sphere of LANGUAGE.md §11 (Lemos eqs. 1–2). */
static tb_t *sphere(void)
{
    tb_t *b = tb_new("phi theta psi x y", "m R");
    tb_lagrangian(b, "m/2*(x'^2 + y'^2) + m*R^2/5*(phi'^2 + theta'^2 + "
                     "psi'^2 + 2*phi'*psi'*cos(theta))");
    tb_constraint(b, "roll_x",
                  "x' - (R*theta'*sin(phi) - R*psi'*sin(theta)*cos(phi))");
    tb_constraint(b, "roll_y",
                  "y' - (-R*theta'*cos(phi) - R*psi'*sin(theta)*sin(phi))");
    tb_finish(b);
    tb_set(b, "theta", 1);
    tb_set(b, "phi'", 0.7);
    tb_set(b, "theta'", 0.3);
    tb_set(b, "psi'", 1.1);
    return b;
}

/* Benenti's nonholonomic bipendulum, constraint (73). */
static tb_t *bipendulum(void)
{
    tb_t *b = tb_new("x1 y1 x2 y2", "m1 m2");
    tb_lagrangian(b, "m1/2*(x1'^2 + y1'^2) + m2/2*(x2'^2 + y2'^2)");
    tb_constraint(b, "c1", "x1*x1'*y2' - x2*x2'*y1' + (y1 - y2)*y1'*y2'");
    tb_finish(b);
    return b;
}

/* ---- kinds, degrees, time ------------------------------------------- */

typedef struct kind_case {
    const char *coords, *params, *c;
    check_kind_t kind;
    check_tri_t homogeneous;
    double degree;     /* when homogeneous */
    bool time_dependent;
} kind_case_t;

static void test_kinds(void **state)
{
    (void)state;
    static const kind_case_t cases[] = {
        /* a pendulum's rod: no velocity */
        {"x y", "l", "x^2 + y^2 - l^2", CHECK_HOLONOMIC, CHECK_YES, 0, false},
        /* a driven rod: f(q, t) */
        {"x y", "l w", "x - l*cos(w*t)", CHECK_HOLONOMIC, CHECK_YES, 0, true},
        /* the sphere's rolling constraints (LANGUAGE.md §11) */
        {"phi theta psi x y", "R",
         "x' - (R*theta'*sin(phi) - R*psi'*sin(theta)*cos(phi))",
         CHECK_LINEAR, CHECK_YES, 1, false},
        {"phi theta psi x y", "R",
         "y' - (-R*theta'*cos(phi) - R*psi'*sin(theta)*sin(phi))",
         CHECK_LINEAR, CHECK_YES, 1, false},
        /* the knife edge */
        {"x y theta", "", "x'*sin(theta) - y'*cos(theta)", CHECK_LINEAR,
         CHECK_YES, 1, false},
        /* affine: b = -v0 */
        {"x y", "v0", "x' - v0", CHECK_AFFINE, CHECK_NO, 0, false},
        /* affine and time-dependent: b = -v0*t */
        {"x y", "v0", "x' - v0*t", CHECK_AFFINE, CHECK_NO, 0, true},
        /* linear with a time-dependent coefficient */
        {"x y", "", "x' - t*y'", CHECK_LINEAR, CHECK_YES, 1, true},
        /* Benenti (73): quadratic and homogeneous of degree 2 */
        {"x1 y1 x2 y2", "",
         "x1*x1'*y2' - x2*x2'*y1' + (y1 - y2)*y1'*y2'", CHECK_NONLINEAR,
         CHECK_YES, 2, false},
        /* quadratic plus linear: not homogeneous */
        {"x y", "", "x'^2 + y'", CHECK_NONLINEAR, CHECK_NO, 0, false},
        /* speed = v0: homogeneous of no degree (|v| deg 1, v0 deg 0) */
        {"x y", "v0", "sqrt(x'^2 + y'^2) - v0", CHECK_NONLINEAR, CHECK_NO, 0,
         false},
        /* |v| − x': positively homogeneous of degree 1, not polynomial */
        {"x y", "", "sqrt(x'^2 + y'^2) - x'", CHECK_NONLINEAR, CHECK_YES, 1,
         false},
        /* x'/y' − x: homogeneous of degree 0 */
        {"x y", "", "x'/y' - x", CHECK_NONLINEAR, CHECK_YES, 0, false},
        /* huge quadratic terms and a constant: the scaling test alone
         * cannot see v0 next to 1e200, C(q, 0) = −v0 can */
        {"x y", "v0", "1e200*x'^2 - 1e200*y'^2 - v0", CHECK_NONLINEAR,
         CHECK_NO, 0, false},
        /* cubic */
        {"x y", "", "x'^3 - x*y'^3", CHECK_NONLINEAR, CHECK_YES, 3, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const kind_case_t *k = &cases[i];
        tb_t *b = tb_new(k->coords, k->params);
        tb_constraint(b, "c", k->c);
        tb_finish(b);
        check_report_t rep;
        analyse(b, &rep);
        const check_constraint_t *c = &rep.c[0];
        print_message("%s\n", k->c);
        assert_int_equal(c->kind, k->kind);
        assert_int_equal(c->homogeneous, k->homogeneous);
        if (k->homogeneous == CHECK_YES)
            assert_true(fabs(c->degree - k->degree) < 1e-9);
        assert_int_equal(c->time_dependent, k->time_dependent);
        if (k->kind != CHECK_NONLINEAR) /* linear in q' syntactically */
            assert_int_equal(c->kind_how, CHECK_BY_SYMBOLIC);
        check_report_free(&rep);
        tb_free(b);
    }
}

/* Degrees where the graph is a polynomial in the velocities. */
static void test_poly_degree(void **state)
{
    (void)state;
    tb_t *b = bipendulum();
    check_report_t rep;
    analyse(b, &rep);
    assert_int_equal(rep.c[0].poly_degree, 2);
    assert_int_equal(rep.c[0].homogeneous, CHECK_YES);
    assert_true(rep.c[0].degree == 2);
    assert_report_has(b, &rep,
                      "c1: nonlinear in the velocities (polynomial of "
                      "degree 2), homogeneous (degree 2");
    assert_report_has(b, &rep, "no integrability test");
    check_report_free(&rep);
    tb_free(b);
}

/* Where t and the affine term vanish only numerically: sin²t + cos²t − 1
 * is 0 for every t, but no simplifier rule says so. */
static void test_numeric_cancellation(void **state)
{
    (void)state;
    tb_t *b = tb_new("x y", "");
    tb_constraint(b, "c", "x' - y' + sin(t)^2 + cos(t)^2 - 1");
    tb_finish(b);
    check_report_t rep;
    analyse(b, &rep);
    const check_constraint_t *c = &rep.c[0];
    assert_int_equal(c->kind, CHECK_LINEAR);
    assert_int_equal(c->kind_how, CHECK_BY_NUMERIC);
    assert_true(c->points >= 4);
    assert_false(c->time_dependent);
    assert_true(c->t_cancels);
    assert_int_equal(c->homogeneous, CHECK_YES);
    /* ω = dx − dy (+ 0 dt): exact, f = x − y */
    assert_int_equal(c->exact, CHECK_YES);
    assert_report_has(b, &rep, "time-independent (t cancels)");
    assert_report_has(b, &rep, "linear (numerically at");
    check_report_free(&rep);
    tb_free(b);
}

/* ---- integrability ------------------------------------------------- */

static void test_sphere_not_integrable(void **state)
{
    (void)state;
    tb_t *b = sphere();
    check_report_t rep;
    analyse(b, &rep);
    /* roll_x: ω = dx − R sinφ dθ + R sinθ cosφ dψ; the dx∧dφ∧dθ
     * component of ω∧dω is −R cosφ, not identically 0. */
    for (size_t a = 0; a < 2; a++) {
        assert_int_equal(rep.c[a].kind, CHECK_LINEAR);
        assert_int_equal(rep.c[a].integrable, CHECK_NO);
        assert_int_equal(rep.c[a].exact, CHECK_NO);
        assert_int_equal(rep.c[a].in_system, CHECK_NO);
        assert_false(rep.c[a].time_dependent);
    }
    assert_int_equal(rep.npfaff, 2);
    assert_int_equal(rep.system_integrable, CHECK_NO);
    assert_report_has(b, &rep,
                      "roll_x: linear, homogeneous (degree 1), "
                      "time-independent, not integrable (Frobenius: dω∧ω "
                      "≠ 0, numerically at 8 points)\n");
    assert_report_has(b, &rep, "roll_y: linear, homogeneous (degree 1), "
                               "time-independent, not integrable");
    assert_report_has(b, &rep, "Pfaffian constraints together (roll_x, "
                               "roll_y): not integrable");
    assert_report_has(b, &rep, "genuinely nonholonomic");
    check_report_free(&rep);
    tb_free(b);
}

static void test_knife_edge(void **state)
{
    (void)state;
    /* ω = sinθ dx − cosθ dy: dω = cosθ dθ∧dx + sinθ dθ∧dy and
     * ω∧dω = −(sin²θ + cos²θ) dx∧dy∧dθ = −dx∧dy∧dθ ≠ 0. */
    tb_t *b = tb_new("x y theta", "m J");
    tb_lagrangian(b, "m/2*(x'^2 + y'^2) + J/2*theta'^2");
    tb_constraint(b, "skate", "x'*sin(theta) - y'*cos(theta)");
    tb_finish(b);
    check_report_t rep;
    analyse(b, &rep);
    assert_int_equal(rep.c[0].kind, CHECK_LINEAR);
    assert_int_equal(rep.c[0].integrable, CHECK_NO);
    assert_int_equal(rep.c[0].exact, CHECK_NO);
    assert_int_equal(rep.system_integrable, CHECK_NO);
    assert_int_equal(rep.rank, 1); /* B = (sinθ, −cosθ, 0) ≠ 0 */
    assert_int_equal(rep.dof, 2);
    assert_true(rep.energy_conserved);
    assert_report_has(b, &rep, "skate: linear, homogeneous (degree 1), "
                               "time-independent, not integrable");
    check_report_free(&rep);
    tb_free(b);
}

typedef struct integ_case {
    const char *coords, *params, *c;
    check_tri_t integrable, exact;
} integ_case_t;

static void test_integrability_table(void **state)
{
    (void)state;
    static const integ_case_t cases[] = {
        /* y dx − x dy = −x² d(y/x): integrable, dω = −2 dx∧dy ≠ 0 */
        {"x y", "", "y*x' - x*y'", CHECK_YES, CHECK_NO},
        /* the same with a third coordinate: ω∧dω has only dx∧dy∧dz,
         * coefficient W_xy·a_z = 0 */
        {"x y z", "", "y*x' - x*y'", CHECK_YES, CHECK_NO},
        /* z(y dx − x dy): integrating factor 1/(z x²); dω∧ω = 0 needs
         * −xyz + xyz to cancel */
        {"x y z", "", "z*(y*x' - x*y')", CHECK_YES, CHECK_NO},
        /* e^z dx + x e^z dz... = d(x e^z) is exact; times y it is not */
        {"x y z", "", "exp(z)*x' + x*exp(z)*z'", CHECK_YES, CHECK_YES},
        {"x y z", "", "y*exp(z)*x' + x*y*exp(z)*z'", CHECK_YES, CHECK_NO},
        /* x dx + y dy = d((x² + y²)/2): exact */
        {"x y", "", "x*x' + y*y'", CHECK_YES, CHECK_YES},
        /* y cos x dx + sin x dy = d(y sin x): exact */
        {"x y", "", "y*cos(x)*x' + sin(x)*y'", CHECK_YES, CHECK_YES},
        /* dz − y dx: ω∧dω = dx∧dy∧dz ≠ 0 (the contact form) */
        {"x y z", "", "z' - y*x'", CHECK_NO, CHECK_NO},
        /* x' − v0 read as dx − v0 dt: exact, f = x − v0 t */
        {"x y", "v0", "x' - v0", CHECK_YES, CHECK_YES},
        /* x' − t y': ω = dx − t dy, dω = −dt∧dy, ω∧dω = −dx∧dt∧dy ≠ 0
         * (with t as a coordinate: a time-dependent linear constraint) */
        {"x y", "", "x' - t*y'", CHECK_NO, CHECK_NO},
        /* x' − y'·cos t: dω = sin t dt∧dy, ω∧dω = sin t dx∧dt∧dy ≠ 0 */
        {"x y", "", "x' - y'*cos(t)", CHECK_NO, CHECK_NO},
        /* x' − y t: ω = dx − y t dt, dω = −t dy∧dt; ω∧dω ≠ 0 */
        {"x y", "", "x' - y*t", CHECK_NO, CHECK_NO},
        /* x' − x: dx − x dt = e^t d(x e^{−t}): integrating factor */
        {"x y", "", "x' - x", CHECK_YES, CHECK_NO},
        /* y dx − x dy plus a term that is 0 only by sin² + cos² = 1: the
         * simplifier keeps it, so dω∧ω = 0 is seen only numerically */
        {"x y z", "", "y*x' - x*y' + (sin(z)^2 + cos(z)^2 - 1)*x*z'",
         CHECK_YES, CHECK_NO},
        /* z((y+1) dx − (x+1) dy) with a_x expanded and a_y factored:
         * dω∧ω = (y+1)·(−z(x+1)) + (x+1)·(zy + z) vanishes only after
         * distributing, which the simplifier does not do */
        {"x y z", "", "(z*y + z)*x' - z*(x + 1)*y'", CHECK_YES, CHECK_NO},
        /* ... and the contact form with the same disguised zero added */
        {"x y z", "", "z' - y*x' + (sin(z)^2 + cos(z)^2 - 1)*x*y'",
         CHECK_NO, CHECK_NO},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const integ_case_t *k = &cases[i];
        tb_t *b = tb_new(k->coords, k->params);
        tb_constraint(b, "c", k->c);
        tb_finish(b);
        tb_set(b, "x", 0.3);
        check_report_t rep;
        analyse(b, &rep);
        print_message("%s\n", k->c);
        assert_int_equal(rep.c[0].integrable, k->integrable);
        assert_int_equal(rep.c[0].exact, k->exact);
        /* one form: the system verdict is the constraint's */
        assert_int_equal(rep.system_integrable, k->integrable);
        check_report_free(&rep);
        tb_free(b);
    }
}

static void test_disguised_report(void **state)
{
    (void)state;
    tb_t *b = tb_new("x y", "");
    tb_constraint(b, "c1", "y*x' - x*y'");
    tb_constraint(b, "c2", "x*x' + y*y'");
    tb_finish(b);
    check_report_t rep;
    analyse(b, &rep);
    assert_report_has(b, &rep,
                      "c1: linear, homogeneous (degree 1), time-independent, "
                      "integrable (Frobenius: dω∧ω = 0, ");
    assert_report_has(b, &rep, "but not exact (dω ≠ 0): holonomic in "
                               "disguise (exact after an integrating "
                               "factor)\n");
    assert_report_has(b, &rep,
                      "c2: linear, homogeneous (degree 1), time-independent, "
                      "integrable and exact (dω = 0, symbolically): "
                      "holonomic, it is df = 0 for some f(q)\n");
    /* two forms on (x, y, t): a 4-form on 3 dimensions vanishes */
    assert_int_equal(rep.system_integrable, CHECK_YES);
    /* at x = y = 0 both rows of B vanish: rank 0 */
    assert_true(rep.singular);
    assert_int_equal(rep.rank, 0);
    check_report_free(&rep);
    tb_free(b);
}

/* Each form alone can fail the test while the system passes it:
 * {dz − y dx, dy}: dω¹ = dx∧dy, and dω¹∧ω¹∧ω² = dx∧dy∧(dz − y dx)∧dy
 * = 0; the leaves are y = c, z − c x = const. */
static void test_system_integrable(void **state)
{
    (void)state;
    tb_t *b = tb_new("x y z", "");
    tb_constraint(b, "contact", "z' - y*x'");
    tb_constraint(b, "level", "y'");
    tb_finish(b);
    check_report_t rep;
    analyse(b, &rep);
    assert_int_equal(rep.c[0].integrable, CHECK_NO);
    assert_int_equal(rep.c[0].in_system, CHECK_YES);
    assert_int_equal(rep.c[1].exact, CHECK_YES);
    assert_int_equal(rep.system_integrable, CHECK_YES);
    assert_int_equal(rep.system_how, CHECK_BY_NUMERIC);
    assert_report_has(b, &rep, "Pfaffian constraints together (contact, "
                               "level): integrable");
    check_report_free(&rep);

    /* With a holonomic constraint in the system: z = y x on top of
     * dz − y dx = 0 gives x dy = 0, and {d(z − xy), dz − y dx} is
     * integrable (dω∧ω¹∧ω² = dx∧dy∧(dz − y dx)∧(dz − y dx − x dy)
     * = 0); with z = 0 instead, {dz, dz − y dx} is not. */
    tb_t *h = tb_new("x y z", "");
    tb_constraint(h, "contact", "z' - y*x'");
    tb_constraint(h, "surface", "z - x*y");
    tb_finish(h);
    tb_set(h, "x", 0.5);
    analyse(h, &rep);
    assert_int_equal(rep.c[1].kind, CHECK_HOLONOMIC);
    assert_int_equal(rep.nforms, 2);
    assert_int_equal(rep.npfaff, 1);
    assert_int_equal(rep.system_integrable, CHECK_YES);
    check_report_free(&rep);
    tb_free(h);

    /* Cancellation between the wedge's terms: ω¹ = e^w d(x + y z),
     * ω² = d(w − x).  dω¹ = e^w dw∧d(x + y z), so dω¹∧ω¹∧ω² has
     * d(x + y z) twice and vanishes, but each component is a sum of
     * nonzero W_ij·det terms that cancel only with the right signs. */
    tb_t *e = tb_new("x y z w", "");
    tb_constraint(e, "scaled", "exp(w)*(x' + z*y' + y*z')");
    tb_constraint(e, "tie", "w' - x'");
    tb_finish(e);
    analyse(e, &rep);
    assert_int_equal(rep.c[0].exact, CHECK_NO);
    assert_int_equal(rep.c[0].integrable, CHECK_YES);
    assert_int_equal(rep.c[0].in_system, CHECK_YES);
    assert_int_equal(rep.system_integrable, CHECK_YES);
    assert_int_equal(rep.system_how, CHECK_BY_NUMERIC);
    check_report_free(&rep);
    tb_free(e);
    /* ... and with ω² = dw − y dz, dω² = −dy∧dz and
     * dω²∧ω¹∧ω² = −e^w dy∧dz∧dx∧dw ≠ 0: not integrable. */
    e = tb_new("x y z w", "");
    tb_constraint(e, "scaled", "exp(w)*(x' + z*y' + y*z')");
    tb_constraint(e, "tie", "w' - y*z'");
    tb_finish(e);
    analyse(e, &rep);
    assert_int_equal(rep.c[1].in_system, CHECK_NO);
    assert_int_equal(rep.system_integrable, CHECK_NO);
    check_report_free(&rep);
    tb_free(e);

    /* The contact form with the holonomic w = 0 in (x, y, z, w, t):
     * dω¹∧ω¹∧dw = dx∧dy∧(dz − y dx)∧dw = dx∧dy∧dz∧dw ≠ 0. */
    tb_t *k = tb_new("x y z w", "");
    tb_constraint(k, "contact", "z' - y*x'");
    tb_constraint(k, "plane", "w");
    tb_finish(k);
    analyse(k, &rep);
    assert_int_equal(rep.c[0].in_system, CHECK_NO);
    assert_int_equal(rep.system_integrable, CHECK_NO);
    assert_int_equal(rep.system_culprit, 0);
    check_report_free(&rep);
    tb_free(k);
    tb_free(b);
}

/* Too many coordinates to enumerate the wedge's components: the
 * restricted form of the same test decides.  K knife edges side by side
 * are not integrable; K copies of y dx − x dy (each in its own x, y, z)
 * are. */
static void test_large_system(void **state)
{
    (void)state;
    enum { K = 12 };
    char coords[1024] = "", c[128], nm[16];
    for (int k = 0; k < K; k++) {
        snprintf(c, sizeof c, "%sx%d y%d z%d", k ? " " : "", k, k, k);
        strcat(coords, c);
    }
    for (int pass = 0; pass < 2; pass++) {
        tb_t *b = tb_new(coords, "");
        for (int k = 0; k < K; k++) {
            if (pass == 0)
                snprintf(c, sizeof c, "x%d'*sin(z%d) - y%d'*cos(z%d)", k, k,
                         k, k);
            else
                snprintf(c, sizeof c, "y%d*x%d' - x%d*y%d'", k, k, k, k);
            snprintf(nm, sizeof nm, "c%d", k);
            tb_constraint(b, nm, c);
        }
        tb_finish(b);
        check_report_t rep;
        analyse(b, &rep);
        assert_int_equal(rep.nforms, K);
        assert_int_equal(rep.system_integrable,
                         pass == 0 ? CHECK_NO : CHECK_YES);
        assert_int_equal(rep.system_how, CHECK_BY_NUMERIC);
        for (int k = 0; k < K; k++)
            assert_int_equal(rep.c[k].in_system,
                             pass == 0 ? CHECK_NO : CHECK_YES);
        assert_int_equal(rep.dof, 2 * K);
        check_report_free(&rep);
        tb_free(b);
    }
}

/* ---- rank and singular states ---------------------------------------- */

static void test_rank_sphere(void **state)
{
    (void)state;
    tb_t *b = sphere();
    check_report_t rep;
    analyse(b, &rep);
    /* B = [[−R sinθ... ]]: the x' and y' columns are the identity. */
    assert_true(rep.b_finite);
    assert_int_equal(rep.rank, 2);
    assert_false(rep.singular);
    assert_null(rep.dependency);
    assert_int_equal(rep.dof, 3);
    assert_report_has(b, &rep, "rank B = 2 at the current state (regular)\n");
    assert_report_has(b, &rep, "degrees of freedom: 3 (n = 5, r = 2)\n");
    check_report_free(&rep);
    tb_free(b);
}

static void test_rank_values(void **state)
{
    (void)state;
    /* B = [[1, 1], [1, −1]]: BBᵀ = 2I, both singular values √2. */
    tb_t *b = tb_new("x y", "");
    tb_constraint(b, "a", "x' + y'");
    tb_constraint(b, "b", "x' - y'");
    tb_finish(b);
    check_report_t rep;
    analyse(b, &rep);
    assert_int_equal(rep.rank, 2);
    assert_false(rep.singular);
    assert_true(fabs(rep.sigma_max - sqrt(2)) < 1e-14);
    assert_true(fabs(rep.sigma_min - sqrt(2)) < 1e-14);
    assert_int_equal(rep.dof, 0);
    check_report_free(&rep);
    tb_free(b);

    /* B = [[1, 1, 0], [2, 2, 0], [0, 0, 1]]: rows a, b dependent through
     * 2·B_a − B_b = 0, so the left null vector is (2, −1, 0)/√5; the
     * singular values are √10, 1, 0. */
    b = tb_new("x y z", "");
    tb_constraint(b, "a", "x' + y'");
    tb_constraint(b, "b", "2*x' + 2*y'");
    tb_constraint(b, "c", "z'");
    tb_finish(b);
    analyse(b, &rep);
    assert_int_equal(rep.rank, 2);
    assert_true(rep.singular);
    assert_true(fabs(rep.sigma_max - sqrt(10)) < 1e-14);
    assert_true(fabs(rep.sigma_min) < 1e-14);
    assert_non_null(rep.dependency);
    assert_true(fabs(rep.dependency[0] - 2 / sqrt(5)) < 1e-12);
    assert_true(fabs(rep.dependency[1] - 1 / sqrt(5)) < 1e-12);
    assert_true(fabs(rep.dependency[2]) < 1e-12);
    /* dependent at every state: not independent (LANGUAGE.md §4) */
    assert_true(rep.dependent_everywhere);
    assert_report_has(b, &rep, "rank B = 2 < 3 at the current state and "
                               "at 8 sample states: the constraints are not "
                               "independent, the rows of a, b are "
                               "dependent; remove one of them");
    assert_report_has(b, &rep, "n − rank B = 1 at this state");
    check_report_free(&rep);
    tb_free(b);

    /* Forms dependent everywhere: Ω is taken over an independent subset.
     * {dx − t dy, 2(dx − t dy)} is the non-integrable dx − t dy (though
     * two 1-forms on (x, y, t) would make a 4-form on 3 dimensions);
     * {y dx − x dy, 2(y dx − x dy)} in (x, y, z) is integrable. */
    b = tb_new("x y", "");
    tb_constraint(b, "a", "x' - t*y'");
    tb_constraint(b, "b", "2*x' - 2*t*y'");
    tb_finish(b);
    analyse(b, &rep);
    assert_int_equal(rep.system_integrable, CHECK_NO);
    assert_int_equal(rep.rank, 1);
    check_report_free(&rep);
    tb_free(b);
    b = tb_new("x y z", "");
    tb_constraint(b, "a", "y*x' - x*y'");
    tb_constraint(b, "b", "2*y*x' - 2*x*y'");
    tb_finish(b);
    tb_set(b, "x", 1);
    analyse(b, &rep);
    assert_int_equal(rep.system_integrable, CHECK_YES);
    assert_int_equal(rep.rank, 1);
    check_report_free(&rep);
    tb_free(b);
}

/* A state-dependent singularity: rows (1, −y, 0) and (1, −1, 0) of
 * x' − y z' and x' − z' (coordinates x, z, y) coincide at y = 1. */
static void test_singular_state(void **state)
{
    (void)state;
    tb_t *b = tb_new("x z y", "");
    tb_constraint(b, "c1", "x' - y*z'");
    tb_constraint(b, "c2", "x' - z'");
    tb_finish(b);
    check_report_t rep;
    tb_set(b, "y", 2);
    analyse(b, &rep);
    assert_int_equal(rep.rank, 2);
    assert_false(rep.singular);
    check_report_free(&rep);

    tb_set(b, "y", 1);
    analyse(b, &rep);
    assert_int_equal(rep.rank, 1);
    assert_true(rep.singular);
    assert_true(fabs(rep.dependency[0] - sqrt(0.5)) < 1e-12);
    assert_true(fabs(rep.dependency[1] - sqrt(0.5)) < 1e-12);
    /* at this state only: independent elsewhere */
    assert_false(rep.dependent_everywhere);
    assert_report_has(b, &rep, "singular state, the rows of c1, c2 are "
                               "dependent; choose another state");
    check_report_free(&rep);
    tb_free(b);

    /* The bipendulum at rest: B = ∂C/∂q' vanishes with the velocities
     * (Benenti (72c)); at a generic state it has rank 1. */
    b = bipendulum();
    tb_set(b, "x1", 1);
    tb_set(b, "x2", -1);
    tb_set(b, "y1", 0.5);
    analyse(b, &rep);
    assert_int_equal(rep.rank, 0);
    assert_true(rep.singular);
    assert_report_has(b, &rep, "rank B = 0 < 1 at the current state: "
                               "singular state, the row of c1 is zero");
    check_report_free(&rep);
    tb_set(b, "x1'", 0.3);
    tb_set(b, "y2'", 0.8);
    analyse(b, &rep);
    /* B = (x1 y2', ...) = (0.8, ...) ≠ 0 */
    assert_int_equal(rep.rank, 1);
    assert_false(rep.singular);
    check_report_free(&rep);
    tb_free(b);

    /* A holonomic constraint's row is ∂f/∂q: x² + y² − l² at (0, 0)
     * has a zero gradient. */
    b = tb_new("x y", "l");
    tb_constraint(b, "ring", "x^2 + y^2 - l^2");
    tb_finish(b);
    analyse(b, &rep);
    assert_true(rep.singular);
    check_report_free(&rep);
    tb_set(b, "x", 1);
    analyse(b, &rep);
    assert_false(rep.singular);
    assert_true(fabs(rep.sigma_max - 2) < 1e-14); /* |∇f| = 2|x| */
    check_report_free(&rep);
    tb_free(b);

    /* B not finite: sqrt(x)·x' at x = −1 */
    b = tb_new("x y", "");
    tb_constraint(b, "c", "sqrt(x)*x' - y'");
    tb_finish(b);
    tb_set(b, "x", -1);
    analyse(b, &rep);
    assert_false(rep.b_finite);
    assert_int_equal(rep.b_culprit, 0);
    assert_report_has(b, &rep, "is not finite at the current state (the "
                               "row of c)");
    check_report_free(&rep);
    tb_free(b);
}

static void test_overconstrained(void **state)
{
    (void)state;
    tb_t *b = tb_new("x", "");
    tb_constraint(b, "a", "x'");
    tb_constraint(b, "b", "2*x'");
    tb_finish(b);
    tb_set(b, "x'", 0);
    check_report_t rep;
    analyse(b, &rep);
    assert_int_equal(rep.dof, -1);
    assert_int_equal(rep.rank, 1);
    assert_true(rep.singular);
    assert_report_has(b, &rep, "more constraints (2) than coordinates (1)");
    check_report_free(&rep);
    tb_free(b);
}

/* ---- energy: Benenti Thm 11.6 ------------------------------------- */

static void test_energy(void **state)
{
    (void)state;
    check_report_t rep;

    tb_t *b = sphere();
    analyse(b, &rep);
    assert_true(rep.energy_conserved);
    assert_int_equal(rep.force_culprit, SIZE_MAX);
    assert_report_has(b, &rep, "energy: conserved (Benenti Thm 11.6: no "
                               "forces but potential ones");
    check_report_free(&rep);
    tb_free(b);

    /* damping on x */
    b = sphere();
    tb_t *d = tb_new("phi theta psi x y", "m R c");
    tb_free(b);
    tb_lagrangian(d, "m/2*(x'^2 + y'^2) + m*R^2/5*(phi'^2 + theta'^2 + "
                     "psi'^2 + 2*phi'*psi'*cos(theta))");
    tb_constraint(d, "roll_x",
                  "x' - (R*theta'*sin(phi) - R*psi'*sin(theta)*cos(phi))");
    tb_constraint(d, "roll_y",
                  "y' - (-R*theta'*cos(phi) - R*psi'*sin(theta)*sin(phi))");
    tb_force(d, "x", "-c*x'");
    tb_finish(d);
    analyse(d, &rep);
    assert_false(rep.energy_conserved);
    assert_int_equal(rep.force_culprit, 3);
    assert_false(rep.forces_workless);
    assert_report_has(d, &rep, "energy: not conserved in general");
    assert_report_has(d, &rep, "the force on x is not potential (Q = ");
    check_report_free(&rep);
    /* ... with c = 0 the force is still not identically zero: the
     * verdict is about the model, not one parameter value */
    tb_set(d, "c", 0);
    analyse(d, &rep);
    assert_false(rep.energy_conserved);
    check_report_free(&rep);
    tb_free(d);

    /* a time-dependent constraint: the plane turns, roll_x gains ω t */
    b = tb_new("phi theta psi x y", "m R w");
    tb_lagrangian(b, "m/2*(x'^2 + y'^2) + m*R^2/5*(phi'^2 + theta'^2 + "
                     "psi'^2 + 2*phi'*psi'*cos(theta))");
    tb_constraint(b, "roll_x", "x' - (R*theta'*sin(phi - w*t) - "
                               "R*psi'*sin(theta)*cos(phi - w*t))");
    tb_constraint(b, "roll_y", "y' - (-R*theta'*cos(phi) - "
                               "R*psi'*sin(theta)*sin(phi))");
    tb_finish(b);
    analyse(b, &rep);
    assert_true(rep.c[0].time_dependent);
    assert_int_equal(rep.c[0].kind, CHECK_LINEAR);
    assert_false(rep.energy_conserved);
    assert_int_equal(rep.time_culprit, 0);
    assert_report_has(b, &rep, "the constraint roll_x depends on t");
    check_report_free(&rep);
    tb_free(b);

    /* an affine constraint (a conveyor): not homogeneous */
    b = tb_new("x y", "m v0");
    tb_lagrangian(b, "m/2*(x'^2 + y'^2)");
    tb_constraint(b, "belt", "x' - v0");
    tb_finish(b);
    analyse(b, &rep);
    assert_false(rep.energy_conserved);
    assert_int_equal(rep.inhomog_culprit, 0);
    assert_int_equal(rep.time_culprit, SIZE_MAX);
    assert_report_has(b, &rep, "belt: affine (b = ");
    assert_report_has(b, &rep, "the constraint belt is not homogeneous in "
                               "the velocities (affine)");
    check_report_free(&rep);
    tb_free(b);

    /* the bipendulum: homogeneous of degree 2, energy conserved
     * (Benenti Oss. 11.17) */
    b = bipendulum();
    analyse(b, &rep);
    assert_true(rep.energy_conserved);
    check_report_free(&rep);
    tb_free(b);

    /* a gyroscopic force (B y', −B x') does no work */
    b = tb_new("x y", "m B");
    tb_lagrangian(b, "m/2*(x'^2 + y'^2)");
    tb_force(b, "x", "B*y'");
    tb_force(b, "y", "-B*x'");
    tb_finish(b);
    analyse(b, &rep);
    assert_int_equal(rep.force_culprit, 0);
    assert_true(rep.forces_workless);
    assert_true(rep.energy_conserved);
    assert_report_has(b, &rep, "no constraints: rank B = 0\n");
    assert_report_has(b, &rep, "do no work");
    check_report_free(&rep);
    tb_free(b);

    /* L depends on t (a mass that grows) */
    b = tb_new("x", "m");
    tb_lagrangian(b, "m*(1 + t)/2*x'^2");
    tb_finish(b);
    analyse(b, &rep);
    assert_true(rep.L_time_dependent);
    assert_false(rep.energy_conserved);
    assert_report_has(b, &rep, "L depends on t");
    check_report_free(&rep);
    tb_free(b);

    /* a holonomic, time-independent constraint keeps energy: the ring */
    b = tb_new("x y", "m g l");
    tb_lagrangian(b, "m/2*(x'^2 + y'^2) - m*g*y");
    tb_constraint(b, "ring", "x^2 + y^2 - l^2");
    tb_finish(b);
    analyse(b, &rep);
    assert_true(rep.energy_conserved);
    assert_report_has(b, &rep, "ring: holonomic (no velocities), "
                               "time-independent\n");
    check_report_free(&rep);
    tb_free(b);
}

static void test_incomplete_system(void **state)
{
    (void)state;
    tb_t *b = tb_new("x", "");
    tb_finish(b);
    b->sys.L = NULL;
    check_report_t rep;
    diag_t err = {0};
    assert_int_equal(check_analyse(&b->sys, b->vars, &rep, &err), -1);
    assert_true(err.set);
    check_report_free(&rep); /* nothing to free, and harmless */
    tb_free(b);
}

int main(void)
{
    gsl_set_error_handler_off();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_poly_degree),
        cmocka_unit_test(test_numeric_cancellation),
        cmocka_unit_test(test_sphere_not_integrable),
        cmocka_unit_test(test_knife_edge),
        cmocka_unit_test(test_integrability_table),
        cmocka_unit_test(test_disguised_report),
        cmocka_unit_test(test_system_integrable),
        cmocka_unit_test(test_large_system),
        cmocka_unit_test(test_rank_sphere),
        cmocka_unit_test(test_rank_values),
        cmocka_unit_test(test_singular_state),
        cmocka_unit_test(test_overconstrained),
        cmocka_unit_test(test_energy),
        cmocka_unit_test(test_incomplete_system),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
