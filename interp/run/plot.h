/*
 * plot.h — the data end of `table` and `plot` (LANGUAGE.md §7): columns of
 * doubles with titles, written as CSV or drawn by gnuplot.
 *
 * The session evaluates the expressions at each recorded sample; this
 * module only writes what it is given.  plot_draw runs gnuplot as a child
 * process on a script and a data file in a private temporary folder
 * (removed afterwards); an image is written there and then copied into
 * the user's file by this module (outfile.h: the file is replaced only
 * when the whole image was written), so file names never reach gnuplot, and
 * titles reach it only as double-quoted gnuplot strings in which
 * everything but letters and spaces is an octal escape.  A file name
 * with a line break is refused.
 *
 * Ownership: everything is borrowed; nothing is kept after a call.
 * Must not: print except to the streams given; change the data.
 */
#ifndef NH_PLOT_H
#define NH_PLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "interp/base/util.h"
#include "lang/source.h"

/* NCOLS columns of NROWS doubles: col[c][row].  For plot_draw column 0
 * is x and columns 1..ncols-1 are the curves. */
typedef struct plot_columns {
    size_t ncols, nrows;
    const char *const *titles;  /* ncols: the expression texts */
    const double *const *col;   /* ncols arrays of nrows */
    const bool *dashed;         /* ncols, or NULL: plot_draw draws these
                                   curves dashed (the imaginary parts of
                                   `plot sweep`) */
    bool points;                /* plot_draw draws dots, not lines: the
                                   rows are a Poincaré section's
                                   crossings (LANGUAGE.md §6.1), in the
                                   order of time but not neighbours */
} plot_columns_t;

/* How plot_draw_styled and plot_draw_svg_styled draw (`bode`,
 * LANGUAGE.md §7.2.1). */
typedef struct plot_style {
    bool logx;   /* x on a logarithmic scale */
    bool panels; /* each curve in a panel of its own, one above the other,
                    its title the y label (magnitude, then phase) */
} plot_style_t;

/* `table`: a CSV header of the titles (quoted as RFC 4180 when they hold
 * a comma, a quote or a line break), then one row per sample, numbers in
 * the shortest form that reads back to the same double (nan, inf, -inf
 * for non-finite values), written to OUT.  The caller checks OUT for
 * write errors (`table > "file"` is the session's redirection, as for
 * every printing statement). */
void plot_table(const plot_columns_t *data, FILE *out);
/* Its parts: the header of the NCOLS TITLES, written to OUT; one row,
 * the N values V[0], V[STRIDE], … with a newline, appended to LINE (a
 * sweep's workers write their rows' text in parallel, doc/scale.md). */
void plot_table_head(const char *const *titles, size_t ncols, FILE *out);
void plot_table_row(strbuf_t *line, const double *v, size_t n,
                    size_t stride);

/* `plot`: draws columns 1.. against column 0 with lines (dots when
 * DATA->points).  FILE NULL: a
 * text drawing (gnuplot's dumb terminal) written to OUT, sized to the
 * terminal when OUT is one (else 79×24); FILE "name.png" or "name.svg"
 * (case-insensitive): that image (pngcairo, else png; svg).  Returns 0,
 * or -1 with *err set (span NONE): another extension, a name with a
 * newline, a file that cannot be written (checked before gnuplot runs),
 * gnuplot missing (the message says how to install it), gnuplot failing
 * (its first error line). */
int plot_draw(const plot_columns_t *data, const char *file, FILE *out,
              diag_t *err);

/* `plot` in a notebook: the same drawing as an SVG image, whose text (the
 * <svg> element, without an XML declaration, so that a page can embed
 * it) is written to OUT; and, for what cannot show SVG, as a PNG image
 * and a PDF document when PNG and PDF are not NULL, their bytes in
 * base64 into *PNG, *PDF (malloc'ed; the caller frees them): a notebook
 * viewer that shows no SVG takes the PNG, nbconvert's PDF the PDF (it
 * would otherwise need Inkscape to convert the SVG).  Returns 0, or -1
 * with *err set as plot_draw. */
int plot_draw_svg(const plot_columns_t *data, FILE *out, char **png,
                  char **pdf, diag_t *err);

/* plot_draw and plot_draw_svg drawn in STYLE (`bode`). */
int plot_draw_styled(const plot_columns_t *data, const plot_style_t *style,
                     const char *file, FILE *out, diag_t *err);
int plot_draw_svg_styled(const plot_columns_t *data,
                         const plot_style_t *style, FILE *out, char **png,
                         char **pdf, diag_t *err);

/* The name of the gnuplot program run by plot_draw (a test can point
 * PATH elsewhere to simulate its absence). */
#define PLOT_GNUPLOT "gnuplot"

#endif
