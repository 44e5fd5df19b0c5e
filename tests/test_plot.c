/*
 * test_plot.c — `table` and `plot` at the library level (interp/run/plot.h).
 *
 * The CSV is read back and compared with the numbers written (shortest
 * round-trip form: strtod gives the same double); the images are checked
 * by their signatures; hostile file names must neither run a command nor
 * write anywhere but the named file; the temporary folder must be empty
 * afterwards; without gnuplot on PATH the error says how to install it.
 * The tests run in a fresh temporary folder (chdir) with TMPDIR pointing
 * at another one.
 */
#include <dirent.h>
#include <errno.h>
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

#include "interp/base/outfile.h"
#include "interp/run/plot.h"

typedef struct fixture {
    char work[256], tmp[256], old_cwd[4096];
    double t[40], a[40], b[40];
    const char *titles[3], *titles3[3];
    const double *cols[3];
    plot_columns_t data;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    if (!getcwd(f->old_cwd, sizeof f->old_cwd))
        return -1;
    snprintf(f->work, sizeof f->work, "/tmp/nh-test-plot-XXXXXX");
    snprintf(f->tmp, sizeof f->tmp, "/tmp/nh-test-plot-tmp-XXXXXX");
    if (!mkdtemp(f->work) || !mkdtemp(f->tmp) || chdir(f->work) != 0)
        return -1;
    setenv("TMPDIR", f->tmp, 1);
    for (int k = 0; k < 40; k++) {
        f->t[k] = 0.1 * k;
        f->a[k] = sin(f->t[k]) / 3.0;
        f->b[k] = k == 17 ? NAN : exp(-f->t[k]) * 1e-7;
    }
    f->titles[0] = "t";
    f->titles[1] = "x'";               /* a prime: a quote for gnuplot */
    f->titles[2] = "a, \"b\" and c''"; /* needs CSV quoting */
    f->titles3[0] = "t";
    f->titles3[1] = "2*x1^2 `touch pwned` @x $y \\";
    f->titles3[2] = "θ_10 #c";
    f->cols[0] = f->t;
    f->cols[1] = f->a;
    f->cols[2] = f->b;
    f->data = (plot_columns_t){3, 40, f->titles, f->cols, NULL, false};
    *state = f;
    return 0;
}

/* Removes every file of DIR (flat) and DIR itself. */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    if (chdir(f->old_cwd) != 0)
        return -1;
    remove_dir(f->work);
    remove_dir(f->tmp);
    unsetenv("TMPDIR");
    free(f);
    return 0;
}

static size_t dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static bool have_gnuplot(void)
{
    const char *path = getenv("PATH");
    if (!path)
        return false;
    char *copy = strdup(path), *save = NULL;
    bool found = false;
    for (char *dir = strtok_r(copy, ":", &save); dir && !found;
         dir = strtok_r(NULL, ":", &save)) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, PLOT_GNUPLOT);
        found = access(p, X_OK) == 0;
    }
    free(copy);
    return found;
}

/* The first N bytes of FILE into BUF; returns how many were read. */
static size_t file_head(const char *file, unsigned char *buf, size_t n)
{
    FILE *f = fopen(file, "rb");
    if (!f)
        return 0;
    size_t got = fread(buf, 1, n, f);
    fclose(f);
    return got;
}

/* ---- table -------------------------------------------------------------- */

/* Splits one CSV line into fields (RFC 4180 quoting), in place. */
static size_t csv_split(char *line, char **fields, size_t max)
{
    size_t n = 0;
    char *p = line;
    while (n < max) {
        char *out = p;
        fields[n++] = p;
        if (*p == '"') {
            char *q = p + 1;
            for (;;) {
                if (*q == '"' && q[1] == '"') {
                    *out++ = '"';
                    q += 2;
                } else if (*q == '"') {
                    q++;
                    break;
                } else {
                    *out++ = *q++;
                }
            }
            p = q;
        } else {
            while (*p && *p != ',' && *p != '\n')
                *out++ = *p++;
        }
        char sep = *p;
        *out = '\0';
        if (sep != ',')
            break;
        p++;
    }
    return n;
}

static void test_table_round_trip(void **state)
{
    fixture_t *f = *state;
    outfile_t o;
    assert_int_equal(outfile_open(&o, "out.csv"), 0);
    plot_table(&f->data, o.f);
    assert_int_equal(outfile_commit(&o), 0);
    FILE *in = fopen("out.csv", "r");
    assert_non_null(in);
    char line[1024];
    char *fields[8];
    assert_non_null(fgets(line, sizeof line, in));
    assert_int_equal(csv_split(line, fields, 8), 3);
    for (int c = 0; c < 3; c++)
        assert_string_equal(fields[c], f->titles[c]);
    for (int k = 0; k < 40; k++) {
        assert_non_null(fgets(line, sizeof line, in));
        assert_int_equal(csv_split(line, fields, 8), 3);
        for (int c = 0; c < 3; c++) {
            double v = strtod(fields[c], NULL);
            double want = f->cols[c][k];
            if (isnan(want))
                assert_true(isnan(v));
            else
                assert_true(v == want); /* bit for bit */
        }
    }
    assert_null(fgets(line, sizeof line, in));
    fclose(in);

    /* To a stream. */
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    plot_table(&f->data, mem);
    fclose(mem);
    const char *header = "t,x',\"a, \"\"b\"\" and c''\"\n";
    assert_true(len > strlen(header));
    assert_memory_equal(buf, header, strlen(header));
    assert_true(buf[strlen(header)] == '0'); /* the first row follows */
    free(buf);
}

/* ---- plot ----------------------------------------------------------------- */

/* Each test of drawing knows which path it tests: where gnuplot is
 * absent, it tests that one — plot_draw fails with the error that says
 * how to install gnuplot, and leaves nothing behind. */
static void expect_without_gnuplot(fixture_t *f, const char *file)
{
    diag_t err = {0};
    assert_int_equal(plot_draw(&f->data, file, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "apt-get install gnuplot-nox"));
    assert_int_equal(dir_entries(f->tmp), 0);
    assert_int_equal(dir_entries(f->work), 0);
}

static const unsigned char png_sig[8] = {0x89, 'P', 'N', 'G',
                                         '\r', '\n', 0x1a, '\n'};

static void test_plot_png_svg(void **state)
{
    fixture_t *f = *state;
    if (!have_gnuplot()) {
        expect_without_gnuplot(f, "curves.png");
        return;
    }
    diag_t err = {0};
    if (plot_draw(&f->data, "curves.png", NULL, &err) != 0)
        fail_msg("%s", err.msg);
    unsigned char head[64];
    assert_int_equal(file_head("curves.png", head, 8), 8);
    assert_memory_equal(head, png_sig, 8);
    assert_int_equal(plot_draw(&f->data, "curves.SVG", NULL, &err), 0);
    size_t n = file_head("curves.SVG", head, sizeof head - 1);
    head[n] = '\0';
    assert_true(strstr((char *)head, "<?xml") || strstr((char *)head, "<svg"));
    /* nothing left in the temporary folder */
    assert_int_equal(dir_entries(f->tmp), 0);
}

/* The occurrences of NEEDLE in the SVG drawing of DATA. */
static size_t svg_count(const plot_columns_t *data, const char *needle)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    diag_t err = {0};
    if (plot_draw_svg(data, f, NULL, NULL, &err) != 0)
        fail_msg("%s", err.msg);
    fclose(f);
    size_t k = 0;
    for (const char *p = buf; (p = strstr(p, needle)); p++)
        k++;
    free(buf);
    return k;
}

/* A notebook's plot (LANGUAGE.md §1.1): the <svg> element itself, with no
 * XML declaration before it (nbconvert's HTML cleaner refuses one), and
 * the same drawing as a PNG image and a PDF document in base64: their
 * first bytes decode to PNG's signature, \x89 P N G \r \n \x1a \n, and
 * to "%PDF-". */
static void test_plot_notebook(void **state)
{
    fixture_t *f = *state;
    if (!have_gnuplot())
        return; /* test_plot_without_gnuplot covers that path */
    char *buf = NULL, *png = NULL, *pdf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    diag_t err = {0};
    assert_int_equal(plot_draw_svg(&f->data, m, &png, &pdf, &err), 0);
    fclose(m);
    assert_true(strncmp(buf, "<svg", 4) == 0);
    assert_null(strstr(buf, "<?xml"));
    assert_non_null(strstr(buf, "</svg>"));
    assert_non_null(png);
    /* "iVBORw0KGgo" is base64 of the signature */
    assert_true(strncmp(png, "iVBORw0KGgo", 11) == 0);
    assert_true(strlen(png) > 1000);
    assert_int_equal(strlen(png) % 4, 0);
    /* and a PDF: "JVBERi0" is base64 of "%PDF-" */
    assert_non_null(pdf);
    assert_true(strncmp(pdf, "JVBERi0", 7) == 0);
    free(buf);
    free(png);
    free(pdf);
    assert_int_equal(dir_entries(f->tmp), 0);
}

/* `plot sweep` draws the imaginary parts dashed: a column marked dashed
 * gets a dash pattern of its own (the grid has one already). */
static void test_plot_dashed(void **state)
{
    fixture_t *f = *state;
    if (!have_gnuplot())
        return; /* test_plot_without_gnuplot covers that path */
    size_t solid = svg_count(&f->data, "stroke-dasharray");
    const bool dashed[3] = {false, false, true};
    f->data.dashed = dashed;
    size_t one = svg_count(&f->data, "stroke-dasharray");
    f->data.dashed = NULL;
    assert_true(one > solid);
}

/* A Poincaré section (LANGUAGE.md §6.1) is drawn as dots, one per row
 * that is finite (39 of 40 in the second column, 40 in the first), and
 * no dot otherwise. */
static void test_plot_points(void **state)
{
    fixture_t *f = *state;
    if (!have_gnuplot())
        return; /* test_plot_without_gnuplot covers that path */
    const char *dot = "<use xlink:href='#gpPt6' transform";
    assert_int_equal(svg_count(&f->data, dot), 0);
    f->data.points = true;
    size_t dots = svg_count(&f->data, dot);
    f->data.points = false;
    /* the points of the key too, one per curve at most */
    assert_true(dots >= 79 && dots <= 81);
}

static void test_plot_terminal(void **state)
{
    fixture_t *f = *state;
    if (!have_gnuplot()) {
        expect_without_gnuplot(f, NULL);
        return;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    diag_t err = {0};
    int rc = plot_draw(&f->data, NULL, mem, &err);
    fclose(mem);
    if (rc != 0)
        fail_msg("%s", err.msg);
    /* A drawing of 24 lines with the key's titles in it. */
    size_t lines = 0;
    for (size_t k = 0; k < len; k++)
        lines += buf[k] == '\n';
    assert_true(lines >= 20 && lines <= 26);
    assert_non_null(strstr(buf, "x'"));
    assert_non_null(strstr(buf, "a, \"b\" and c''"));
    free(buf);

    /* Digits, backquotes, macros, a backslash, UTF-8: all verbatim, and
     * the backquoted command is not run. */
    plot_columns_t d = f->data;
    d.titles = f->titles3;
    mem = open_memstream(&buf, &len);
    rc = plot_draw(&d, NULL, mem, &err);
    fclose(mem);
    if (rc != 0)
        fail_msg("%s", err.msg);
    assert_non_null(strstr(buf, f->titles3[1]));
    assert_non_null(strstr(buf, f->titles3[2]));
    struct stat st;
    assert_int_not_equal(stat("pwned", &st), 0);
    free(buf);
    assert_int_equal(dir_entries(f->tmp), 0);
}

/* Names that would be gnuplot commands if pasted into a script. */
static void test_plot_hostile_names(void **state)
{
    fixture_t *f = *state;
    if (!have_gnuplot()) {
        expect_without_gnuplot(f, "b'; system \"touch pwned\"; '.png");
        return;
    }
    unlink("/tmp/pwned");
    const char *names[] = {
        "a'; system \"touch /tmp/pwned\"; '.png",  /* has a '/': a folder */
        "b'; system \"touch pwned\"; '.png",       /* a plain name */
        "c\"; system \"touch pwned\"; \".svg",
        "|touch pwned; cat > d.png",                /* a pipe in gnuplot */
        "e\\'.png",
    };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        diag_t err = {0};
        int rc = plot_draw(&f->data, names[k], NULL, &err);
        struct stat st;
        if (rc == 0) {
            /* written to exactly that file */
            assert_int_equal(stat(names[k], &st), 0);
            unsigned char head[8];
            assert_int_equal(file_head(names[k], head, 8), 8);
            if (strstr(names[k], ".png"))
                assert_memory_equal(head, png_sig, 8);
        } else if (!strstr(err.msg, "cannot write")) {
            fail_msg("%s: %s", names[k], err.msg);
        }
        assert_int_not_equal(stat("/tmp/pwned", &st), 0);
        assert_int_not_equal(stat("pwned", &st), 0);
        assert_int_not_equal(stat("d.png", &st), 0);
    }
    /* the plain names were written; the one with a folder was refused */
    struct stat st;
    assert_int_equal(stat(names[1], &st), 0);
    assert_int_equal(stat(names[3], &st), 0);
    assert_int_not_equal(stat(names[0], &st), 0);
    assert_int_equal(dir_entries(f->tmp), 0);
}

static void test_plot_bad_names(void **state)
{
    fixture_t *f = *state;
    diag_t err = {0};
    assert_int_equal(plot_draw(&f->data, "x.pdf", NULL, &err), -1);
    assert_non_null(strstr(err.msg, ".png or .svg"));
    diag_clear(&err);
    assert_int_equal(plot_draw(&f->data, "x\nset output 'y'\n.png", NULL,
                               &err),
                     -1);
    assert_non_null(strstr(err.msg, "line break"));
    diag_clear(&err);
    assert_int_equal(plot_draw(&f->data, "png", NULL, &err), -1);
    diag_clear(&err);
    plot_columns_t empty = f->data;
    empty.nrows = 0;
    assert_int_equal(plot_draw(&empty, "e.png", NULL, &err), -1);
    assert_non_null(strstr(err.msg, "simulate"));
    assert_int_equal(dir_entries(f->work), 0); /* nothing written */
    assert_int_equal(dir_entries(f->tmp), 0);
}

static void test_plot_without_gnuplot(void **state)
{
    fixture_t *f = *state;
    char *path = strdup(getenv("PATH") ? getenv("PATH") : "");
    setenv("PATH", f->tmp, 1); /* an empty folder */
    diag_t err = {0};
    int rc = plot_draw(&f->data, "z.png", NULL, &err);
    setenv("PATH", path, 1);
    free(path);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err.msg, "apt-get install gnuplot-nox"));
    assert_int_equal(dir_entries(f->tmp), 0);
    struct stat st;
    assert_int_not_equal(stat("z.png", &st), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_table_round_trip, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_plot_png_svg, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plot_terminal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plot_dashed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plot_notebook, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plot_points, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plot_hostile_names, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_plot_bad_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plot_without_gnuplot, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
