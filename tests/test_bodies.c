/*
 * test_bodies.c — a model written with frames and a body against the same
 * model written by hand (LANGUAGE.md §4.1): examples/rolling_disk_body.nh
 * and examples/rolling_disk.nh, loaded into two sessions, give the same
 * accelerations to 1e-12 at random states, by every method.  The hand
 * model's kinetic energy and constraints were derived on paper (its
 * comments); the body model's come from the frames, the body and the
 * contact point, so the agreement checks the composition of angular
 * velocities, the body's energy, velocity(), the vector constraint and the
 * dropping of its vertical component.  For maggi and gibbs_appell both
 * sessions get the same speeds and kinematic equations (the hand model's
 * rolling velocities).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "interp/cli/session.h"

typedef struct model {
    session_t *s;
    char *out, *err;
    size_t out_len, err_len;
    FILE *fout, *ferr;
} model_t;

static void model_open(model_t *m, const char *example)
{
    memset(m, 0, sizeof *m);
    m->fout = open_memstream(&m->out, &m->out_len);
    m->ferr = open_memstream(&m->err, &m->err_len);
    m->s = session_new(true, m->fout, m->ferr);
    const char *dir = getenv("NH_SRCDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/examples/%s", dir ? dir : ".", example);
    if (session_run_file(m->s, path) != RUN_OK) {
        fflush(m->ferr);
        fail_msg("%s: %s", example, m->err);
    }
}

static void model_close(model_t *m)
{
    session_free(m->s);
    fclose(m->fout);
    fclose(m->ferr);
    free(m->out);
    free(m->err);
}

/* Runs TEXT; the numbers it printed ("TEXT = VALUE" lines) into V (at
 * most N); returns how many. */
static size_t model_run(model_t *m, const char *text, double *v, size_t n)
{
    fflush(m->fout);
    size_t mark = m->out_len;
    fflush(m->ferr);
    size_t emark = m->err_len;
    if (session_run_text(m->s, "<test>", text, strlen(text), false) !=
        RUN_OK) {
        fflush(m->ferr);
        fail_msg("%s\n%s", text, m->err + emark);
    }
    fflush(m->fout);
    size_t k = 0;
    for (const char *p = m->out + mark; (p = strstr(p, " = ")) && k < n;
         p += 3)
        v[k++] = strtod(p + 3, NULL);
    return k;
}

/* Uniform in [lo, hi) from a fixed-seed generator (the same states every
 * run). */
static double uniform(uint64_t *s, double lo, double hi)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * (double)(*s >> 11) * 0x1.0p-53;
}

/* The speeds of the first-kind methods: u1, u2, u3 the Euler angles'
 * rates, and the centre's velocity from the rolling condition (the hand
 * model's constraints solved for x', y'). */
static const char speeds[] =
    "speed u1, u2, u3\n"
    "kinematic phi' = u1\n"
    "kinematic theta' = u2\n"
    "kinematic psi' = u3\n"
    "kinematic x' = r*(u2*sin(phi)*sin(theta) - cos(phi)*(u1*cos(theta) + "
    "u3))\n"
    "kinematic y' = -r*(u2*cos(phi)*sin(theta) + sin(phi)*(u1*cos(theta) + "
    "u3))\n";

static void test_disk_body_against_hand(void **state)
{
    (void)state;
    model_t hand, body;
    model_open(&hand, "rolling_disk.nh");
    model_open(&body, "rolling_disk_body.nh");
    static const char *const methods[] = {"multipliers", "second_kind",
                                          "voronec",     "naive",
                                          "maggi",       "gibbs_appell"};
    uint64_t seed = 20070718;
    double worst = 0;
    size_t compared = 0;
    for (size_t k = 0; k < sizeof methods / sizeof *methods; k++) {
        if (strcmp(methods[k], "maggi") == 0) {
            model_run(&hand, speeds, NULL, 0);
            model_run(&body, speeds, NULL, 0);
        }
        for (int i = 0; i < 25; i++) {
            char text[1024];
            snprintf(text, sizeof text,
                     "equations %s\n"
                     "initial phi = %.17g, theta = %.17g, psi = %.17g, "
                     "x = %.17g, y = %.17g, phi' = %.17g, theta' = %.17g, "
                     "psi' = %.17g\n"
                     "print phi'', theta'', psi'', x'', y''\n",
                     methods[k], uniform(&seed, -3, 3),
                     uniform(&seed, 0.3, 2.8), uniform(&seed, -3, 3),
                     uniform(&seed, -1, 1), uniform(&seed, -1, 1),
                     uniform(&seed, -2, 2), uniform(&seed, -2, 2),
                     uniform(&seed, -5, 5));
            double a[5], b[5];
            assert_int_equal(model_run(&hand, text, a, 5), 5);
            assert_int_equal(model_run(&body, text, b, 5), 5);
            for (int j = 0; j < 5; j++) {
                double d = fabs(a[j] - b[j]) /
                           fmax(1.0, fmax(fabs(a[j]), fabs(b[j])));
                if (!(d <= 1e-12))
                    fail_msg("%s, state %d, acceleration %d: hand %.17g, "
                             "body %.17g",
                             methods[k], i, j + 1, a[j], b[j]);
                worst = fmax(worst, d);
                compared++;
            }
        }
    }
    assert_int_equal(compared, 6 * 25 * 5);
    print_message("largest relative difference: %g\n", worst);
    model_close(&hand);
    model_close(&body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_disk_body_against_hand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
