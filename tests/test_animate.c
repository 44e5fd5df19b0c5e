/*
 * test_animate.c — `animate`'s projection and files at the library level
 * (interp/run/animate.h).
 *
 * The projection is checked against what it must be, not against itself:
 * the view's axes are orthonormal, right-handed and, for the plain views,
 * the axes written out by hand; every point of a 3D rim, built here from
 * its centre, normal and radius with an orthonormal pair of our own,
 * projected by the view, lies on the ellipse anim_ellipse gives (the
 * ellipse's own equation, to 1e-9), and the rim reaches the ellipse's
 * extremes.  The files are read back: the page names no address and
 * holds one element per draw; the SVG image animates only what changes,
 * with keyTimes only when the samples are unevenly spaced.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "interp/cli/context.h"
#include "interp/cli/session.h"
#include "interp/run/animate.h"

static double dot(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static void cross(const double *a, const double *b, double *c)
{
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

/* A reproducible uniform number in [-1, 1]. */
static double rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0 * 2 - 1;
}

static void test_view_axes(void **state)
{
    (void)state;
    /* from +x, level: right is +y, up is +z */
    anim_view_t v;
    anim_view_init(&v, 0, 0);
    double want_d[3] = {1, 0, 0}, want_e1[3] = {0, 1, 0}, want_e2[3] = {0, 0, 1};
    for (int i = 0; i < 3; i++) {
        assert_true(fabs(v.d[i] - want_d[i]) < 1e-15);
        assert_true(fabs(v.e1[i] - want_e1[i]) < 1e-15);
        assert_true(fabs(v.e2[i] - want_e2[i]) < 1e-15);
    }
    /* from straight above (el 90), az 0: right is +y, up is -x */
    anim_view_init(&v, 0, 90);
    double p[3] = {1, 0, 0}, q[2];
    anim_project(&v, p, q);
    assert_true(fabs(q[0]) < 1e-15 && fabs(q[1] - 1) < 1e-15); /* y down */
    /* z up on the screen: SVG's y is minus up */
    anim_view_init(&v, ANIM_DEFAULT_AZ, ANIM_DEFAULT_EL);
    double z[3] = {0, 0, 1};
    anim_project(&v, z, q);
    assert_true(fabs(q[0]) < 1e-15);
    assert_true(fabs(q[1] + cos(ANIM_DEFAULT_EL * M_PI / 180)) < 1e-15);
    /* any view: orthonormal and right-handed */
    uint64_t s = 7;
    for (int k = 0; k < 200; k++) {
        anim_view_init(&v, 360 * rnd(&s), 90 * rnd(&s));
        double c[3];
        cross(v.e1, v.e2, c);
        for (int i = 0; i < 3; i++)
            assert_true(fabs(c[i] - v.d[i]) < 1e-14);
        assert_true(fabs(dot(v.d, v.d) - 1) < 1e-14);
        assert_true(fabs(dot(v.e1, v.e1) - 1) < 1e-14);
        assert_true(fabs(dot(v.e2, v.e2) - 1) < 1e-14);
        assert_true(fabs(dot(v.e1, v.e2)) < 1e-14);
        assert_true(fabs(dot(v.e1, v.d)) < 1e-14);
    }
}

/* Where the screen point P lies relative to ellipse E = {cx cy rx ry
 * angle}: 1 on it, <1 inside. */
static double ellipse_level(const double *e, const double *p)
{
    double a = e[4] * M_PI / 180, dx = p[0] - e[0], dy = p[1] - e[1];
    /* the rx axis points along (cos a, sin a) on the screen (SVG's
     * rotate(a): x' = x cos a - y sin a, y' = x sin a + y cos a) */
    double u = dx * cos(a) + dy * sin(a), w = -dx * sin(a) + dy * cos(a);
    return u * u / (e[2] * e[2]) + w * w / (e[3] * e[3]);
}

static void test_rim_on_ellipse(void **state)
{
    (void)state;
    uint64_t s = 12345;
    for (int k = 0; k < 500; k++) {
        anim_view_t v;
        anim_view_init(&v, 180 * rnd(&s), 89 * rnd(&s));
        double c[3] = {3 * rnd(&s), 3 * rnd(&s), 3 * rnd(&s)},
               n[3] = {rnd(&s), rnd(&s), rnd(&s)}, r = 0.1 + fabs(rnd(&s));
        double len = sqrt(dot(n, n));
        if (len < 0.1)
            continue;
        /* an orthonormal pair across n, built here */
        double u[3] = {n[0] / len, n[1] / len, n[2] / len}, a[3], b[3];
        double t[3] = {1, 0, 0};
        if (fabs(u[0]) > 0.8)
            t[0] = 0, t[1] = 1;
        cross(u, t, a);
        double la = sqrt(dot(a, a));
        for (int i = 0; i < 3; i++)
            a[i] /= la;
        cross(u, a, b);
        double e[5];
        anim_ellipse(&v, c, n, r, e);
        /* the rim's tilt towards the viewer gives the minor axis */
        double ry = r * fabs(dot(u, v.d));
        if (ry < r * 1e-6)
            ry = r * 1e-6;
        assert_true(fabs(e[2] - r) < 1e-12);
        assert_true(fabs(e[3] - ry) < 1e-12);
        if (fabs(dot(u, v.d)) < 1e-3)
            continue; /* nearly edge-on: the level is ill-conditioned */
        double lo = INFINITY, hi = -INFINITY, far = 0;
        double cc[2];
        anim_project(&v, c, cc);
        assert_true(fabs(cc[0] - e[0]) < 1e-12 && fabs(cc[1] - e[1]) < 1e-12);
        for (int j = 0; j < 360; j++) {
            double ph = j * M_PI / 180, p[3], q[2];
            for (int i = 0; i < 3; i++)
                p[i] = c[i] + r * (cos(ph) * a[i] + sin(ph) * b[i]);
            anim_project(&v, p, q);
            double l = ellipse_level(e, q);
            lo = fmin(lo, l);
            hi = fmax(hi, l);
            far = fmax(far, hypot(q[0] - e[0], q[1] - e[1]));
        }
        assert_true(fabs(lo - 1) < 1e-9 && fabs(hi - 1) < 1e-9);
        /* the diameter in the screen's plane is drawn at full length */
        assert_true(fabs(far - r) < 1e-3 * r);
    }
}

static void test_rim_facing_and_edge_on(void **state)
{
    (void)state;
    anim_view_t v;
    anim_view_init(&v, 30, 20);
    double c[3] = {0, 0, 0}, e[5];
    anim_ellipse(&v, c, v.d, 2, e); /* facing the viewer: a circle */
    assert_true(e[2] == 2 && fabs(e[3] - 2) < 1e-15 && e[4] == 0);
    double side[3] = {v.e2[0], v.e2[1], v.e2[2]}; /* normal across the view */
    anim_ellipse(&v, c, side, 2, e);
    assert_true(e[2] == 2 && e[3] == 2e-6); /* edge-on: still drawn */
    /* a normal's length does not matter */
    double n1[3] = {1, 2, 3}, n2[3] = {10, 20, 30}, e1[5], e2[5];
    anim_ellipse(&v, c, n1, 1, e1);
    anim_ellipse(&v, c, n2, 1, e2);
    for (int i = 0; i < 5; i++)
        assert_true(fabs(e1[i] - e2[i]) < 1e-13);
}

static void test_counts(void **state)
{
    (void)state;
    assert_int_equal(anim_inputs(ANIM_DISK, false), 7);
    assert_int_equal(anim_inputs(ANIM_SPHERE, false), 4);
    assert_int_equal(anim_inputs(ANIM_SPHERE, true), 7);
    assert_int_equal(anim_inputs(ANIM_LINE, false), 6);
    assert_int_equal(anim_inputs(ANIM_POINT, false), 3);
    anim_draw_t d[3] = {{ANIM_DISK, false, false, NULL, NULL},
                        {ANIM_SPHERE, true, false, NULL, NULL},
                        {ANIM_POINT, false, true, NULL, NULL}};
    assert_int_equal(anim_frame_numbers(d, 3), 2 + 5 + 9 + 2 + 2);
}

/* A scene of N frames: a disk rolling along x, a ball with a mark, a
 * fixed line, a point with a trail; times evenly spaced or not. */
typedef struct scene {
    double t[50], disk[50 * 7], ball[50 * 7], line[50 * 6], pt[50 * 3];
    anim_draw_t d[4];
    anim_scene_t sc;
} scene_t;

static void make_scene(scene_t *s, size_t n, bool even)
{
    for (size_t k = 0; k < n; k++) {
        double t = even ? 0.1 * k : 0.1 * k + 0.03 * (k % 3);
        s->t[k] = t;
        double *d = s->disk + 7 * k;
        d[0] = t, d[1] = 0, d[2] = 0.5, d[3] = 0, d[4] = 1, d[5] = 0, d[6] = 0.5;
        double *b = s->ball + 7 * k;
        b[0] = 0, b[1] = t, b[2] = 1, b[3] = 1, b[4] = cos(t), b[5] = 0,
        b[6] = sin(t);
        double *l = s->line + 6 * k;
        l[0] = l[1] = l[2] = 0, l[3] = 1, l[4] = 1, l[5] = 0;
        double *p = s->pt + 3 * k;
        p[0] = cos(t), p[1] = sin(t), p[2] = 0;
    }
    s->d[0] = (anim_draw_t){ANIM_DISK, false, false, "draw disk G, <n> & \"r\"",
                            s->disk};
    s->d[1] = (anim_draw_t){ANIM_SPHERE, true, false, "draw sphere", s->ball};
    s->d[2] = (anim_draw_t){ANIM_LINE, false, false, "draw line", s->line};
    s->d[3] = (anim_draw_t){ANIM_POINT, false, true, "draw point", s->pt};
    s->sc = (anim_scene_t){n, s->t, 4, s->d, -60, 30, 2};
}

static char *written(const anim_scene_t *sc, anim_format_t f, const char *id)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    assert_non_null(m);
    anim_write(sc, f, id, m);
    assert_int_equal(fclose(m), 0);
    return buf;
}

static size_t count(const char *text, const char *what)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p++)
        n++;
    return n;
}

static void test_page(void **state)
{
    (void)state;
    scene_t s;
    make_scene(&s, 30, true);
    char *page = written(&s.sc, ANIM_HTML, NULL);
    assert_true(strncmp(page, "<!DOCTYPE html>", 15) == 0);
    assert_int_equal(count(page, "http"), 0);
    assert_int_equal(count(page, "src="), 0);
    assert_int_equal(count(page, "href="), 0);
    assert_int_equal(count(page, "data-draw="), 4);
    assert_int_equal(count(page, "id=\"nh-animation\""), 1);
    assert_int_equal(count(page, "class=\"nh-trail\""), 1);
    assert_int_equal(count(page, "class=\"nh-mark\""), 1);
    /* the label is escaped wherever it is written */
    assert_int_equal(count(page, "<n>"), 0);
    assert_int_equal(count(page, "&lt;n&gt; &amp; &quot;r&quot;"), 2);
    free(page);
    char *part = written(&s.sc, ANIM_HTML_PART, "nh-x-1");
    assert_true(strncmp(part, "<div class=\"nh-animation\" id=\"nh-x-1\">", 38) ==
                0);
    assert_int_equal(count(part, "<html"), 0);
    assert_int_equal(count(part, "<body"), 0);
    /* every style rule is the part's own */
    const char *st = strstr(part, "<style>\n"), *end = strstr(part, "</style>");
    assert_true(st && end && st < end);
    for (const char *l = st + 8; l < end; l = strchr(l, '\n') + 1)
        assert_true(strncmp(l, "#nh-x-1", 7) == 0);
    free(part);
}

static void test_svg(void **state)
{
    (void)state;
    scene_t s;
    make_scene(&s, 30, true);
    char *svg = written(&s.sc, ANIM_SVG, NULL);
    assert_true(strncmp(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\"", 39) ==
                0);
    assert_int_equal(count(svg, "http"), 1); /* the namespace's name */
    assert_int_equal(count(svg, "<script"), 0);
    assert_int_equal(count(svg, "keyTimes"), 0); /* evenly spaced */
    /* only what changes is animated: the disk's normal is fixed, so its
     * ry is too; the mark's great circle turns (its ry changes); no rx
     * changes (the radii are fixed) */
    assert_int_equal(count(svg, "attributeName=\"rx\""), 0);
    assert_int_equal(count(svg, "attributeName=\"ry\""), 1);
    assert_int_equal(count(svg, "attributeName=\"stroke-dashoffset\""), 1);
    assert_int_equal(count(svg, "attributeName=\"x1\""), 0); /* line fixed */
    /* dur: 30 samples 0.1 apart, shown 0.1 each, at speed 2 */
    assert_non_null(strstr(svg, "dur=\"1.5s\""));
    free(svg);
    make_scene(&s, 30, false);
    svg = written(&s.sc, ANIM_SVG, NULL);
    assert_true(count(svg, "keyTimes=\"0;") > 0);
    assert_int_equal(count(svg, "keyTimes"), count(svg, "<animate"));
    free(svg);
    /* one sample: a picture, nothing animated */
    make_scene(&s, 1, true);
    svg = written(&s.sc, ANIM_SVG, NULL);
    assert_int_equal(count(svg, "<animate"), 0);
    free(svg);
}

/* ---- the statements in a session -------------------------------------- */

typedef struct sess {
    session_t *s;
    char *out, *err;
    size_t out_len, err_len;
    FILE *fout, *ferr;
} sess_t;

static void sess_open(sess_t *f, bool quiet)
{
    memset(f, 0, sizeof *f);
    f->fout = open_memstream(&f->out, &f->out_len);
    f->ferr = open_memstream(&f->err, &f->err_len);
    f->s = session_new(quiet, f->fout, f->ferr);
}

static void sess_close(sess_t *f)
{
    session_free(f->s);
    fclose(f->fout);
    fclose(f->ferr);
    free(f->out);
    free(f->err);
}

static run_status_t run(sess_t *f, const char *text)
{
    run_status_t rc =
        session_run_text(f->s, "<repl>", text, strlen(text), true);
    fflush(f->fout);
    fflush(f->ferr);
    return rc;
}

static const char model[] = "param r = 0.5\n"
                            "coord x, y\n"
                            "kinetic T = (x'^2 + y'^2)/2\n"
                            "let P = [x, y, 0]\n"
                            "initial x' = 1\n";

/* A draw that fails changes nothing: the draws, the samples stay. */
static void test_failed_draw_changes_nothing(void **state)
{
    (void)state;
    sess_t f;
    sess_open(&f, true);
    assert_int_equal(run(&f, model), RUN_OK);
    assert_int_equal(run(&f, "simulate to 1 step 0.5\ndraw point P"), RUN_OK);
    ctx_t *c = session_ctx(f.s);
    unsigned long gen = c->model.generation;
    static const char *const bad[] = {
        "draw disc P, P, r",      "draw point x",
        "draw sphere P, r mark 1", "draw line P",
        "draw point P trial",     "draw disk P, [0, 0, 1], r mark P",
        "draw point nope",        "draw point P, P",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(run(&f, bad[i]), RUN_ERROR);
        assert_int_equal(c->model.draws.n, 1);
        assert_false(c->model.draws.v[0].trail);
    }
    assert_int_equal(c->model.generation, gen);
    assert_int_equal(c->samples.n, 3);
    /* a good one after them: the same point, with a trail, in place */
    assert_int_equal(run(&f, "draw point P trail"), RUN_OK);
    assert_int_equal(c->model.draws.n, 1);
    assert_true(c->model.draws.v[0].trail);
    assert_int_equal(c->samples.n, 3);
    sess_close(&f);
}

/* At most DRAW_MAX (1000) draws; replacing one at the limit is fine. */
static void test_draw_limit(void **state)
{
    (void)state;
    sess_t f;
    sess_open(&f, true);
    assert_int_equal(run(&f, model), RUN_OK);
    char line[64];
    for (int i = 0; i < 1000; i++) {
        snprintf(line, sizeof line, "draw point P + [0, 0, %d]", i);
        assert_int_equal(run(&f, line), RUN_OK);
    }
    assert_int_equal(run(&f, "draw point P + [0, 0, 1000]"), RUN_ERROR);
    assert_non_null(strstr(f.err, "a model may have at most 1000 draws"));
    assert_int_equal(run(&f, "draw point P + [0, 0, 999] trail"), RUN_OK);
    assert_int_equal(session_ctx(f.s)->model.draws.n, 1000);
    sess_close(&f);
}

/* The numbers of one file are limited before anything is evaluated:
 * 20 disks take 2 + 20*5 = 102 numbers a frame, so 9803 samples fit in
 * 10^6 and 9804 do not. */
static void test_size_limit(void **state)
{
    (void)state;
    sess_t f;
    sess_open(&f, true);
    assert_int_equal(run(&f, model), RUN_OK);
    char line[80];
    for (int i = 0; i < 20; i++) {
        snprintf(line, sizeof line, "draw disk P + [0, 0, %d], [0, 0, 1], r",
                 i);
        assert_int_equal(run(&f, line), RUN_OK);
    }
    assert_int_equal(run(&f, "simulate to 9803 step 1"), RUN_OK);
    assert_int_equal(session_ctx(f.s)->samples.n, 9804);
    assert_int_equal(run(&f, "animate > \"/nonexistent/big.html\""),
                     RUN_ERROR);
    const char *want =
        "9804 samples of 20 draws (102 numbers each) are more than an animation holds (1000000 numbers";
    assert_non_null(strstr(f.err, want));
    /* one sample fewer: past the limit, so the file is the next error */
    assert_int_equal(run(&f, "reset\nsimulate to 9802 step 1\n"
                             "animate > \"/nonexistent/big.html\""),
                     RUN_ERROR);
    assert_non_null(strstr(f.err, "cannot write '/nonexistent/big.html'"));
    sess_close(&f);
}

/* Without a file: animation.html in the working folder, and where it is
 * said; in a notebook an HTML part, each with an id of its own. */
static void test_no_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/nh-animate-XXXXXX", old[4096];
    assert_non_null(mkdtemp(dir));
    assert_non_null(getcwd(old, sizeof old));
    assert_int_equal(chdir(dir), 0);
    sess_t f;
    sess_open(&f, false);
    assert_int_equal(run(&f, model), RUN_OK);
    assert_int_equal(run(&f, "draw point P trail\nsimulate to 1 step 0.1\n"
                             "animate"),
                     RUN_OK);
    char want[4200];
    snprintf(want, sizeof want, "animation written to %s/animation.html",
             dir);
    assert_non_null(strstr(f.out, want));
    struct stat sb;
    assert_int_equal(stat("animation.html", &sb), 0);
    assert_true(sb.st_size > 1000);
    unlink("animation.html");
    sess_close(&f);

    sess_open(&f, true);
    ctx_t *c = session_ctx(f.s);
    c->html_inline = true; /* as the protocol sets it */
    assert_int_equal(run(&f, model), RUN_OK);
    assert_int_equal(run(&f, "draw point P\nsimulate to 1 step 0.1\nanimate"),
                     RUN_OK);
    assert_int_equal(c->out_kind, CTX_OUT_HTML);
    assert_true(strncmp(f.out, "<div class=\"nh-animation\" id=\"nh-animation-1-",
                        44) == 0);
    assert_int_equal(run(&f, "animate"), RUN_OK);
    assert_non_null(strstr(f.out, "id=\"nh-animation-2-"));
    assert_int_equal(stat("animation.html", &sb), -1); /* none written */
    sess_close(&f);
    assert_int_equal(chdir(old), 0);
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_view_axes),
        cmocka_unit_test(test_rim_on_ellipse),
        cmocka_unit_test(test_rim_facing_and_edge_on),
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_page),
        cmocka_unit_test(test_svg),
        cmocka_unit_test(test_failed_draw_changes_nothing),
        cmocka_unit_test(test_draw_limit),
        cmocka_unit_test(test_size_limit),
        cmocka_unit_test(test_no_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
