/*
 * test_display.c — on every example and every method that applies to it,
 * what `show eom` and `show accel` print is right (LANGUAGE.md §7.1:
 * "simplification is never wrong"):
 *   - each row of `show eom` in its display form, L - R, equals the row
 *     as derived, l - r, at random values of every variable (the
 *     accelerations and multipliers included: a row is an identity in
 *     them), wherever the derived row is defined;
 *   - each solved acceleration of `show accel` equals what the method's
 *     numeric solve (eom_accel, the tape and a dense LU) gives at random
 *     states, an independent computation of the same quantity.
 * The examples are the files of examples/ (NH_EXAMPLES_DIR), run whole.
 */
#include <dirent.h>
#include <math.h>
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
#include "interp/eom/eom.h"
#include "interp/expr/simplify.h"

#ifndef NH_EXAMPLES_DIR
#define NH_EXAMPLES_DIR "examples"
#endif
#ifndef NH_STDLIB_SRC
#define NH_STDLIB_SRC "stdlib"
#endif

static uint64_t rng_state = 0x2545F4914F6CDD1DULL;
static double uniform(double lo, double hi)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    double u = (double)((rng_state * 0x2545F4914F6CDD1DULL) >> 11) * 0x1.0p-53;
    return lo + (hi - lo) * u;
}

static bool close_to(double a, double b, double tol)
{
    return fabs(a - b) <= tol * fmax(1.0, fmax(fabs(a), fabs(b)));
}

/* Random values for every variable: parameters positive (masses and
 * lengths), the rest of either sign. */
static void random_vars(const nh_system_t *sys, double *vars, uint32_t nv)
{
    for (uint32_t v = 0; v < nv; v++)
        vars[v] = uniform(-1.2, 1.2);
    for (size_t i = 0; i < sys->np; i++)
        vars[sys->p[i]] = uniform(0.5, 2.0);
}

typedef struct tally {
    size_t rows, values, methods;
} tally_t;

/* The rows of E: displayed against derived. */
static void check_rows(const char *name, eom_t *e, const nh_system_t *sys,
                       tally_t *t)
{
    const expr_t **l, **r;
    size_t n = eom_rows(e, &l, &r);
    expr_graph_t *g = sys->g;
    uint32_t nv = expr_graph_nvars(g);
    double *vars = calloc(nv + 1, sizeof *vars);
    simp_t *sp = simp_new(g);
    expr_graph_t *dg = simp_graph(sp);
    for (size_t i = 0; i < n; i++) {
        const expr_t *L, *R, *c;
        simp_row(sp, simp_import(sp, l[i]), simp_import(sp, r[i]),
                 NH_RANK_ACCEL, &L, &R, &c);
        const expr_t *obj = simp_simplify(sp, simp_import(sp, r[i]));
        for (int k = 0; k < 8; k++) {
            random_vars(sys, vars, nv);
            double a = expr_eval(g, l[i], vars) - expr_eval(g, r[i], vars);
            if (!isfinite(a))
                continue;
            double b = expr_eval(dg, L, vars) - expr_eval(dg, R, vars);
            double scale = fmax(fabs(expr_eval(g, l[i], vars)),
                                fabs(expr_eval(g, r[i], vars)));
            double ob = expr_eval(dg, obj, vars),
                   oa = expr_eval(g, r[i], vars);
            if (!(fabs(a - b) <= 1e-9 * fmax(1, scale)) ||
                !close_to(oa, ob, 1e-9)) {
                char *tl = expr_to_text(g, l[i]), *tr = expr_to_text(g, r[i]);
                char *ts = simp_format_row(sp, L, R, c, false);
                print_error("%s, %s, row %zu: %s = %s\n  shown %s\n  "
                            "%.17g != %.17g\n",
                            name, eom_method_name(eom_method(e)), i, tl, tr,
                            ts, a, b);
                free(tl);
                free(tr);
                free(ts);
                fail();
            }
            t->values++;
        }
        t->rows++;
    }
    simp_free(sp);
    free(vars);
    free(l);
    free(r);
}

/* The solved accelerations of E against eom_accel. */
static void check_accel(const char *name, eom_t *e, const nh_system_t *sys,
                        tally_t *t)
{
    expr_graph_t *g = sys->g;
    uint32_t nv = expr_graph_nvars(g);
    simp_t *sp = simp_new(g);
    const expr_t **val = calloc(nv + 1, sizeof *val);
    char why[256];
    if (eom_solved(e, sp, val, why, sizeof why) != 0) {
        /* beyond the solver (the size limit): nothing to check */
        free(val);
        simp_free(sp);
        return;
    }
    double *vars = calloc(nv + 1, sizeof *vars);
    double *sym = calloc(nv + 1, sizeof *sym);
    int good = 0;
    for (int k = 0; k < 40 && good < 10; k++) {
        random_vars(sys, vars, nv);
        diag_t err;
        diag_clear(&err);
        if (eom_accel(e, vars, &err) != 0)
            continue; /* a singular state */
        /* the solved forms read the state eom_accel completed (the
         * dependent velocities, q' = psi) */
        bool finite = true;
        for (uint32_t v = 0; v < nv; v++)
            if (val[v]) {
                sym[v] = expr_eval(simp_graph(sp), val[v], vars);
                finite = finite && isfinite(sym[v]);
            }
        if (!finite)
            continue;
        /* Near a singular state (a disk almost flat: 1/sin(theta)) the
         * numeric solve loses digits in proportion to the matrix's
         * condition, and the accelerations grow with it: with the state
         * drawn within 1.2 of 0, one above 1e3 means such a state, where
         * 1e-8 would judge the solve's rounding, not the display. */
        bool near_singular = false;
        for (uint32_t v = 0; v < nv; v++)
            near_singular |= val[v] && fabs(vars[v]) > 1e3;
        if (near_singular)
            continue;
        for (uint32_t v = 0; v < nv; v++) {
            if (!val[v])
                continue;
            if (!close_to(sym[v], vars[v], 1e-8)) {
                char *txt = simp_format(sp, val[v], false);
                print_error("%s, %s: %s = %s\n  is %.17g, the numeric "
                            "solve %.17g\n",
                            name, eom_method_name(eom_method(e)),
                            expr_var_name(g, v), txt, sym[v], vars[v]);
                free(txt);
                fail();
            }
            t->values++;
        }
        good++;
    }
    free(sym);
    free(vars);
    free(val);
    simp_free(sp);
}

static void test_examples(void **state)
{
    (void)state;
    DIR *d = opendir(NH_EXAMPLES_DIR);
    assert_non_null(d);
    static const char *const methods[] = {"lagrange",     "multipliers",
                                          "second_kind",  "voronec",
                                          "naive",        "maggi",
                                          "gibbs_appell", NULL};
    tally_t t = {0, 0, 0};
    size_t files = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        size_t len = strlen(de->d_name);
        if (len < 4 || strcmp(de->d_name + len - 3, ".nh") != 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", NH_EXAMPLES_DIR, de->d_name);
        FILE *out = tmpfile(), *err = tmpfile();
        session_t *s = session_new(true, out, err);
        const char *lib[1] = {NH_STDLIB_SRC};
        session_set_library_dirs(s, lib, 1);
        if (session_run_file(s, path) != RUN_OK) {
            print_error("%s does not run\n", path);
            fail();
        }
        files++;
        /* the random states of an example depend on its name alone, not
         * on which examples readdir gave before it (the folder's order,
         * and every example added, moved them before) */
        rng_state = 0xcbf29ce484222325ULL;
        for (const char *c = de->d_name; *c; c++)
            rng_state = (rng_state ^ (unsigned char)*c) * 0x100000001b3ULL;
        for (const char *const *m = methods; *m; m++) {
            char stmt[64];
            snprintf(stmt, sizeof stmt, "equations %s", *m);
            if (session_run_text(s, "<test>", stmt, strlen(stmt), true) !=
                RUN_OK)
                continue; /* the method does not apply */
            ctx_t *c = session_ctx(s);
            diag_t e;
            diag_clear(&e);
            lower_t *lw = ctx_lowered(c, &e);
            eom_t *eq = lw ? ctx_eom(c, SRC_SPAN_NONE, &e) : NULL;
            if (!eq)
                continue;
            const nh_system_t *sys = lower_system(lw);
            check_rows(de->d_name, eq, sys, &t);
            check_accel(de->d_name, eq, sys, &t);
            t.methods++;
        }
        session_free(s);
        fclose(out);
        fclose(err);
    }
    closedir(d);
    print_message("%zu examples, %zu equations, %zu rows, %zu values "
                  "compared\n",
                  files, t.methods, t.rows, t.values);
    /* every example, several methods each, many values */
    assert_true(files >= 10);
    assert_true(t.methods >= 3 * files);
    assert_true(t.values > 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_examples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
