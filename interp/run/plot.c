/*
 * plot.c — `table` as CSV and `plot` through gnuplot (plot.h).
 *
 * gnuplot runs as a child (posix_spawnp, no shell) on a script file, with
 * its standard input from /dev/null and its standard output and error
 * into files of the same private temporary folder (mkdtemp), so there is
 * no pipe to deadlock on and the caller's streams are only written by
 * this process: the dumb terminal's drawing is copied to OUT, gnuplot's
 * error text goes into the diagnostic.  An image is written by gnuplot
 * into the private folder and then copied into the user's file by this
 * process (outfile.h, opened before gnuplot runs: a name that cannot be
 * written fails at once, and an existing file is replaced only by a whole
 * image) — or, for a notebook (plot_draw_svg), copied to OUT as SVG text —
 * so a file name never reaches gnuplot: a name starting with '|' is not a
 * pipe, and a file gnuplot could not open is an error here rather than a
 * gnuplot warning.  The titles (and the data file's
 * path) do reach gnuplot, each as a double-quoted string of letters,
 * spaces and octal escapes only (see plot_gp_string), with
 * enhanced text off so that ^ and _ print as written.
 *
 * Must not: print except to OUT; leave temporary files behind.
 */
#include "interp/run/plot.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "interp/base/util.h"
#include "interp/base/outfile.h"
#include "interp/base/util.h"
#include "interp/expr/expr.h"

extern char **environ; /* the C runtime's; passed on to gnuplot */

/* ---- table ------------------------------------------------------------ */

/* Writes S as a CSV field: quoted (quotes doubled) when it holds a comma,
 * a quote or a line break (RFC 4180). */
static void plot_csv_field(FILE *f, const char *s)
{
    if (!s)
        s = "";
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void plot_table_head(const char *const *titles, size_t ncols, FILE *f)
{
    for (size_t c = 0; c < ncols; c++) {
        if (c)
            fputc(',', f);
        plot_csv_field(f, titles[c]);
    }
    fputc('\n', f);
}

void plot_table_row(strbuf_t *out, const double *v, size_t n, size_t stride)
{
    char num[40];
    for (size_t c = 0; c < n; c++) {
        if (c)
            strbuf_addn(out, ",", 1);
        const char *t = expr_format_number(v[c * stride], num, sizeof num);
        strbuf_addn(out, t, strlen(t));
    }
    strbuf_addn(out, "\n", 1);
}

void plot_table(const plot_columns_t *data, FILE *f)
{
    plot_table_head(data->titles, data->ncols, f);
    double *row = xcalloc(data->ncols + 1, sizeof *row);
    strbuf_t line;
    strbuf_init(&line);
    for (size_t r = 0; r < data->nrows; r++) {
        for (size_t c = 0; c < data->ncols; c++)
            row[c] = data->col[c][r];
        line.len = 0;
        plot_table_row(&line, row, data->ncols, 1);
        fwrite(line.data, 1, line.len, f);
    }
    strbuf_free(&line);
    free(row);
}

/* ---- plot --------------------------------------------------------------- */

/* S as a double-quoted gnuplot string in which every byte but ASCII
 * letters and spaces is an octal escape (\ooo; digits too, since gnuplot
 * reads as many octal digits as follow a backslash).  Why not quote more
 * lightly: gnuplot runs `backquoted` commands inside double-quoted
 * strings before it parses them, and its single-quoted strings mishandle
 * a doubled quote next to another ('a''''b' does not read back as a''b);
 * with only [A-Za-z ] and escapes in the script text, no title or
 * path can end the string, start a command or be substituted.  The
 * escapes are decoded when the string is parsed, so UTF-8 text (θ) and
 * any punctuation come out as written.  Line breaks become spaces. */
static void plot_gp_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;
         p++) {
        unsigned c = *p == '\n' || *p == '\r' ? ' ' : *p;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == ' ')
            fputc((int)c, f);
        else
            fprintf(f, "\\%03o", c);
    }
    fputc('"', f);
}

typedef enum plot_kind { PLOT_DUMB, PLOT_PNG, PLOT_SVG, PLOT_PDF } plot_kind_t;

static int plot_kind_of(const char *file, plot_kind_t *kind, diag_t *err)
{
    if (!file) {
        *kind = PLOT_DUMB;
        return 0;
    }
    if (strpbrk(file, "\n\r"))
        return diag_error(err, SRC_SPAN_NONE,
                          "a plot file name cannot contain a line break");
    size_t len = strlen(file);
    if (len >= 4 && strcasecmp(file + len - 4, ".png") == 0)
        *kind = PLOT_PNG;
    else if (len >= 4 && strcasecmp(file + len - 4, ".svg") == 0)
        *kind = PLOT_SVG;
    else
        return diag_error(err, SRC_SPAN_NONE,
                          "cannot plot to '%s': the file name must end in "
                          ".png or .svg",
                          file);
    return 0;
}

/* The private folder and the files in it. */
typedef struct plot_tmp {
    char dir[4096];
    char data[4200], script[4200], out[4200], errs[4200], img[4200];
} plot_tmp_t;

static int plot_tmp_make(plot_tmp_t *t, diag_t *err)
{
    const char *base = getenv("TMPDIR");
    /* An absolute folder: a data file name starting with '<' would be
     * a command to gnuplot. */
    if (!base || base[0] != '/' ||
        strlen(base) > sizeof t->dir - 32)
        base = "/tmp";
    snprintf(t->dir, sizeof t->dir, "%s/nh-plot-XXXXXX", base);
    if (!mkdtemp(t->dir))
        return diag_error(err, SRC_SPAN_NONE,
                          "cannot create a temporary folder for gnuplot in "
                          "%s: %s",
                          base, strerror(errno));
    snprintf(t->data, sizeof t->data, "%s/data", t->dir);
    snprintf(t->script, sizeof t->script, "%s/script.gp", t->dir);
    snprintf(t->out, sizeof t->out, "%s/stdout", t->dir);
    snprintf(t->errs, sizeof t->errs, "%s/stderr", t->dir);
    snprintf(t->img, sizeof t->img, "%s/image", t->dir);
    return 0;
}

static void plot_tmp_remove(plot_tmp_t *t)
{
    unlink(t->data);
    unlink(t->script);
    unlink(t->out);
    unlink(t->errs);
    unlink(t->img);
    rmdir(t->dir);
}

/* The data file: one row per sample, x then the curves; a non-finite
 * value is written NaN, which gnuplot skips (the line breaks there). */
static int plot_write_data(const plot_columns_t *d, const char *path,
                           diag_t *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return diag_error(err, SRC_SPAN_NONE, "cannot write '%s': %s", path,
                          strerror(errno));
    char num[40];
    for (size_t r = 0; r < d->nrows; r++) {
        for (size_t c = 0; c < d->ncols; c++) {
            double v = d->col[c][r];
            if (c)
                fputc(' ', f);
            fputs(isfinite(v) ? expr_format_number(v, num, sizeof num)
                              : "NaN",
                  f);
        }
        fputc('\n', f);
    }
    int bad = ferror(f);
    if (fclose(f) != 0)
        bad = 1;
    if (bad)
        return diag_error(err, SRC_SPAN_NONE, "cannot write '%s': %s", path,
                          strerror(errno));
    return 0;
}

/* The dumb terminal's size: OUT's window when it is a terminal. */
static void plot_term_size(FILE *out, int *cols, int *rows)
{
    *cols = 79;
    *rows = 24;
    struct winsize ws;
    if (out && isatty(fileno(out)) &&
        ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20 &&
        ws.ws_row >= 8) {
        *cols = ws.ws_col - 1;
        *rows = ws.ws_row - 1; /* room for the prompt */
    }
}

static int plot_write_script(const plot_columns_t *d, const plot_style_t *y,
                             plot_kind_t kind, const plot_tmp_t *t,
                             FILE *out, diag_t *err)
{
    FILE *f = fopen(t->script, "w");
    if (!f)
        return diag_error(err, SRC_SPAN_NONE, "cannot write '%s': %s",
                          t->script, strerror(errno));
    switch (kind) {
    case PLOT_DUMB: {
        int cols, rows;
        plot_term_size(out, &cols, &rows);
        fprintf(f, "set terminal dumb size %d,%d nofeed noenhanced\n", cols,
                rows);
        /* In text the key would be drawn over the curves (and they over
         * it): below the graph it stays readable. */
        fputs("set key below\n", f);
        break;
    }
    case PLOT_PNG:
        fputs("if (strstrt(GPVAL_TERMINALS, ' pngcairo ') > 0) {\n"
              "  set terminal pngcairo noenhanced size 800,600\n"
              "} else {\n"
              "  set terminal png noenhanced size 800,600\n"
              "}\n",
              f);
        break;
    case PLOT_SVG:
        fputs("set terminal svg noenhanced size 800,600\n", f);
        break;
    case PLOT_PDF: /* (a notebook's third representation, for PDF) */
        fputs("set terminal pdfcairo noenhanced size 8in,6in\n", f);
        break;
    }
    if (kind != PLOT_DUMB) {
        fputs("set output ", f);
        plot_gp_string(f, t->img);
        fputc('\n', f);
    }
    fputs("set xlabel ", f);
    plot_gp_string(f, d->titles[0]);
    fputc('\n', f);
    if (y && y->logx)
        fputs("set logscale x\n", f);
    fputs("set grid\n", f);
    if (y && y->panels) {
        /* one panel per curve, one above the other, sharing x */
        fprintf(f, "set multiplot layout %zu,1\n", d->ncols - 1);
        for (size_t c = 1; c < d->ncols; c++) {
            fputs("set ylabel ", f);
            plot_gp_string(f, d->titles[c]);
            fputs("\nplot ", f);
            plot_gp_string(f, t->data);
            fprintf(f, " using 1:%zu with lines notitle\n", c + 1);
        }
        fputs("unset multiplot\n", f);
    } else {
        if (d->ncols == 2) {
            fputs("set ylabel ", f);
            plot_gp_string(f, d->titles[1]);
            fputc('\n', f);
        }
        fputs("plot ", f);
        for (size_t c = 1; c < d->ncols; c++) {
            if (c > 1)
                fputs(", \\\n     ", f);
            plot_gp_string(f, t->data);
            if (d->points)
                fprintf(f, " using 1:%zu with points pointtype 7 pointsize "
                           "%s title ", c + 1, kind == PLOT_DUMB ? "1" : "0.35");
            else
                fprintf(f, " using 1:%zu with lines%s title ", c + 1,
                        d->dashed && d->dashed[c] ? " dashtype 2" : "");
            plot_gp_string(f, d->titles[c]);
        }
        fputc('\n', f);
    }
    fputs("set output\n", f);
    int bad = ferror(f);
    if (fclose(f) != 0)
        bad = 1;
    if (bad)
        return diag_error(err, SRC_SPAN_NONE, "cannot write '%s': %s",
                          t->script, strerror(errno));
    return 0;
}

/* The most telling line of gnuplot's error output: the last non-empty
 * one (gnuplot prints the offending line, a caret, then the message). */
static void plot_gnuplot_message(const char *path, char *msg, size_t size)
{
    msg[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r' ||
                           line[len - 1] == ' '))
            line[--len] = '\0';
        if (len > 0)
            snprintf(msg, size, "%s", line);
    }
    fclose(f);
}

/* Copies the file at PATH to OUT. */
static void plot_copy(const char *path, FILE *out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, n, out);
    fclose(f);
    fflush(out);
}

/* The error when gnuplot wrote no image (or an empty one); 0 when it
 * wrote one. */
static int plot_no_image(const plot_tmp_t *t, diag_t *err)
{
    struct stat st;
    if (stat(t->img, &st) == 0 && st.st_size > 0)
        return 0;
    char msg[400];
    plot_gnuplot_message(t->errs, msg, sizeof msg);
    return diag_error(err, SRC_SPAN_NONE, "gnuplot wrote no image%s%s",
                      msg[0] ? ": " : "", msg);
}

/* Copies the image gnuplot wrote in the private folder into the user's
 * file, opened (by outfile_open, before gnuplot ran) by this process: the
 * user's name never reaches gnuplot, and the file is replaced only when
 * the whole image is in it.  Ends DST, committed or not. */
static int plot_deliver(const plot_tmp_t *t, outfile_t *dst, const char *file,
                        diag_t *err)
{
    if (plot_no_image(t, err) != 0) {
        outfile_abort(dst);
        return -1;
    }
    FILE *in = fopen(t->img, "rb");
    if (!in) {
        int e = errno;
        outfile_abort(dst);
        return diag_error(err, SRC_SPAN_NONE, "cannot read '%s': %s", t->img,
                          outfile_strerror(e));
    }
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, dst->f) != n)
            break;
    bool bad = ferror(in);
    fclose(in);
    if (bad) {
        outfile_abort(dst);
        return diag_error(err, SRC_SPAN_NONE, "cannot read '%s': %s", t->img,
                          strerror(EIO));
    }
    int e = outfile_commit(dst);
    if (e)
        return diag_error(err, SRC_SPAN_NONE, "cannot write '%s': %s", file,
                          outfile_strerror(e));
    return 0;
}

/* Copies the image gnuplot wrote in the private folder to OUT. */
static int plot_image_to(const plot_tmp_t *t, FILE *out, diag_t *err)
{
    if (plot_no_image(t, err) != 0)
        return -1;
    plot_copy(t->img, out);
    return 0;
}

/* Runs gnuplot on the script; its output and errors go to files. */
static int plot_run_gnuplot(const plot_tmp_t *t, diag_t *err)
{
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0)
        nh_out_of_memory();
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, t->out,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, t->errs,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char *argv[] = {(char *)PLOT_GNUPLOT, (char *)t->script, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, PLOT_GNUPLOT, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc == ENOENT)
        return diag_error(err, SRC_SPAN_NONE,
                          "plot needs gnuplot, which is not installed: "
                          "install it (e.g. `apt-get install gnuplot-nox`), "
                          "or write the data with `table`");
    if (rc != 0)
        return diag_error(err, SRC_SPAN_NONE, "cannot run gnuplot: %s",
                          strerror(rc));
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return diag_error(err, SRC_SPAN_NONE,
                              "lost the gnuplot process: %s",
                              strerror(errno));
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return diag_error(err, SRC_SPAN_NONE,
                          "plot needs gnuplot, which could not be run: "
                          "install it (e.g. `apt-get install gnuplot-nox`)");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char msg[400];
        plot_gnuplot_message(t->errs, msg, sizeof msg);
        return diag_error(err, SRC_SPAN_NONE, "gnuplot failed: %s",
                          msg[0] ? msg : "no message");
    }
    return 0;
}

/* Draws DATA as KIND in STYLE (NULL: plot's): the dumb terminal's text
 * to OUT, an image moved to FILE, or (FILE NULL) an SVG image copied to
 * OUT. */
static int plot_run(const plot_columns_t *data, const plot_style_t *style,
                    plot_kind_t kind, const char *file, FILE *out,
                    diag_t *err)
{
    if (data->ncols < 2)
        return diag_error(err, SRC_SPAN_NONE, "nothing to plot");
    if (data->nrows == 0)
        return diag_error(err, SRC_SPAN_NONE,
                          "no samples to plot: run `simulate` first");
    /* The user's file first: a name that cannot be written fails
     * before gnuplot is needed. */
    outfile_t dst = {0};
    if (kind != PLOT_DUMB && file) {
        int e = outfile_open(&dst, file);
        if (e)
            return diag_error(err, SRC_SPAN_NONE, "cannot write '%s': %s",
                              file, outfile_strerror(e));
    }
    plot_tmp_t t;
    if (plot_tmp_make(&t, err) != 0) {
        outfile_abort(&dst);
        return -1;
    }
    int rc = plot_write_data(data, t.data, err);
    if (rc == 0)
        rc = plot_write_script(data, style, kind, &t, out, err);
    if (rc == 0) {
        if (out)
            fflush(out);
        rc = plot_run_gnuplot(&t, err);
    }
    if (rc == 0 && kind == PLOT_DUMB && out)
        plot_copy(t.out, out);
    if (rc == 0 && kind != PLOT_DUMB && file)
        rc = plot_deliver(&t, &dst, file, err); /* ends dst */
    else
        outfile_abort(&dst);
    if (rc == 0 && kind != PLOT_DUMB && !file)
        rc = plot_image_to(&t, out, err);
    plot_tmp_remove(&t);
    return rc;
}

int plot_draw(const plot_columns_t *data, const char *file, FILE *out,
              diag_t *err)
{
    plot_kind_t kind = PLOT_DUMB;
    if (plot_kind_of(file, &kind, err) != 0)
        return -1;
    return plot_run(data, NULL, kind, file, out, err);
}

int plot_draw_styled(const plot_columns_t *data, const plot_style_t *style,
                     const char *file, FILE *out, diag_t *err)
{
    plot_kind_t kind = PLOT_DUMB;
    if (plot_kind_of(file, &kind, err) != 0)
        return -1;
    return plot_run(data, style, kind, file, out, err);
}

/* The bytes of an image drawn as KIND into memory: *BUF (malloc'ed),
 * *LEN. */
static int plot_to_memory(const plot_columns_t *data,
                          const plot_style_t *style, plot_kind_t kind,
                          char **buf, size_t *len, diag_t *err)
{
    *buf = NULL;
    *len = 0;
    FILE *m = open_memstream(buf, len);
    if (!m)
        abort();
    int rc = plot_run(data, style, kind, NULL, m, err);
    if (fclose(m) != 0)
        abort();
    if (rc != 0) {
        free(*buf);
        *buf = NULL;
    }
    return rc;
}

/* RFC 4648 base64 of [S, S + N), NUL-terminated, malloc'ed. */
static char *plot_base64(const unsigned char *s, size_t n)
{
    static const char tab[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = xmalloc(4 * ((n + 2) / 3) + 1), *o = out;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)s[i + 1] << 8;
        if (i + 2 < n)
            v |= s[i + 2];
        *o++ = tab[v >> 18 & 63];
        *o++ = tab[v >> 12 & 63];
        *o++ = i + 1 < n ? tab[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? tab[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

/* The image of DATA drawn as KIND, in base64, into *B64 (NULL: not
 * wanted). */
static int plot_base64_image(const plot_columns_t *data,
                             const plot_style_t *style, plot_kind_t kind,
                             char **b64, diag_t *err)
{
    if (!b64)
        return 0;
    char *img;
    size_t len;
    if (plot_to_memory(data, style, kind, &img, &len, err) != 0)
        return -1;
    *b64 = plot_base64((const unsigned char *)img, len);
    free(img);
    return 0;
}

int plot_draw_svg(const plot_columns_t *data, FILE *out, char **png,
                  char **pdf, diag_t *err)
{
    return plot_draw_svg_styled(data, NULL, out, png, pdf, err);
}

int plot_draw_svg_styled(const plot_columns_t *data,
                         const plot_style_t *style, FILE *out, char **png,
                         char **pdf, diag_t *err)
{
    char *svg;
    size_t len;
    if (png)
        *png = NULL;
    if (pdf)
        *pdf = NULL;
    if (plot_to_memory(data, style, PLOT_SVG, &svg, &len, err) != 0)
        return -1;
    /* the SVG element alone: an XML declaration before it is no part of
     * the markup a page embeds (nbconvert's HTML cleaner refuses it) */
    const char *at = strstr(svg, "<svg");
    if (!at) {
        free(svg);
        return diag_error(err, SRC_SPAN_NONE, "gnuplot wrote no SVG image");
    }
    fwrite(at, 1, len - (size_t)(at - svg), out);
    fflush(out);
    free(svg);
    if (plot_base64_image(data, style, PLOT_PNG, png, err) != 0)
        return -1;
    if (plot_base64_image(data, style, PLOT_PDF, pdf, err) != 0) {
        if (png) {
            free(*png);
            *png = NULL;
        }
        return -1;
    }
    return 0;
}
