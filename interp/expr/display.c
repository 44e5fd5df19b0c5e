/*
 * display.c — blocks of output rows, laid out and, when long, shown with
 * named subexpressions (display.h).
 *
 * Must not: print to a stream; change the source graph.
 */
#include "interp/expr/display.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"
#include "interp/expr/layout.h"
#include "interp/expr/where.h"

/* A row's left side wider than this share of a line gets lines of its
 * own (LaTeX), so that it does not push every right side off the page. */
#define WIDE_LEFT 0.4
/* Text lines of named subexpressions are broken at about this many
 * characters. */
#define TEXT_WIDTH 100
/* LaTeX lines in one display past which the block allows page breaks
 * (a page of an `article` at 10 pt holds some 40). */
#define PAGE_LINES 30

typedef enum { ITEM_HEADING, ITEM_ROW, ITEM_OBJECT } item_kind_t;

typedef struct item {
    item_kind_t kind;
    char *text;  /* heading; object: its text label */
    char *latex; /* object: its LaTeX label */
    const expr_t *L, *R, *cond;
} item_t;

struct display {
    simp_t *s;
    expr_graph_t *g;
    bool latex;
    item_t *item;
    size_t n, cap;
    uint32_t *drop;
    size_t ndrop;
    int names; /* -1 undecided, 0 no, 1 yes */
    bool full; /* LaTeX without names: rows not aligned (rows_fit) */
};

display_t *display_new(simp_t *s, bool latex)
{
    display_t *d = xcalloc(1, sizeof *d);
    d->s = s;
    d->g = simp_graph(s);
    d->latex = latex;
    d->names = -1;
    return d;
}

static item_t *add_item(display_t *d, item_kind_t kind)
{
    if (d->n == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 16;
        d->item = xrealloc(d->item, d->cap * sizeof *d->item);
    }
    item_t *it = &d->item[d->n++];
    memset(it, 0, sizeof *it);
    it->kind = kind;
    d->names = -1;
    return it;
}

void display_heading(display_t *d, const char *text)
{
    add_item(d, ITEM_HEADING)->text = xstrdup(text);
}

void display_row(display_t *d, const expr_t *L, const expr_t *R,
                 const expr_t *cond)
{
    item_t *it = add_item(d, ITEM_ROW);
    it->L = L;
    it->R = R;
    it->cond = cond;
}

void display_object(display_t *d, const char *text, const char *latex,
                    const expr_t *R)
{
    item_t *it = add_item(d, ITEM_OBJECT);
    it->text = xstrdup(text);
    it->latex = xstrdup(latex);
    it->R = expr_unguarded(R);
    it->cond = R->op == EXPR_GUARD ? R : NULL;
}

void display_may_drop(display_t *d, uint32_t var)
{
    d->drop = xrealloc(d->drop, (d->ndrop + 1) * sizeof *d->drop);
    d->drop[d->ndrop++] = var;
}

/* ---- the decision --------------------------------------------------------- */

static double tex_width_of(display_t *d, const expr_t *e)
{
    char *t = expr_to_latex(d->g, e);
    double w = layout_width(t);
    free(t);
    return w;
}

/* Whether E written out as a tree has more than LIMIT nodes. */
static bool tree_larger(const expr_t *e, size_t limit, size_t *count)
{
    if (++*count > limit)
        return true;
    for (uint32_t i = 0; i < e->nargs; i++)
        if (tree_larger(e->args[i], limit, count))
            return true;
    return false;
}

static bool too_large(const expr_t *e)
{
    size_t count = 0;
    return e && tree_larger(e, SIMP_SHOW_MAX_NODES, &count);
}

/* The width of item IT's left side (row: L; object: its label). */
static double left_width(display_t *d, const item_t *it)
{
    return it->kind == ITEM_OBJECT ? layout_width(it->latex)
                                   : tex_width_of(d, it->L);
}

/* The width of the alignment column: the widest left side that is not
 * too wide to share it. */
static double column_width(display_t *d, const item_t *items, size_t n)
{
    double col = 0;
    for (size_t i = 0; i < n; i++) {
        if (items[i].kind == ITEM_HEADING)
            continue;
        double w = left_width(d, &items[i]);
        if (w <= WIDE_LEFT * LAYOUT_LINE_PT && w > col)
            col = w;
    }
    return col;
}

/* A row on the whole line puts its left side on lines of its own when it
 * takes more than 0.6 of the line, or leaves too little for the right
 * side's first term. */
static bool full_wide(display_t *d, const item_t *it, double wl)
{
    if (it->kind != ITEM_ROW)
        return false;
    return wl > 0.6 * LAYOUT_LINE_PT ||
           !layout_latex_fits(d->g, it->R, wl + 14.0, LAYOUT_LINE_PT);
}

/* Whether every row fits lines of a page with an alignment column COL
 * points wide (COL < 0: no alignment, each row "&L = R" on the whole
 * line, a wide L on lines of its own), broken between terms. */
static bool rows_fit(display_t *d, double col)
{
    double line = LAYOUT_LINE_PT;
    for (size_t i = 0; i < d->n; i++) {
        const item_t *it = &d->item[i];
        if (it->kind == ITEM_HEADING)
            continue;
        double wl = left_width(d, it);
        if (col < 0) {
            bool wide = full_wide(d, it, wl);
            if (wide && it->kind == ITEM_ROW &&
                !layout_latex_fits(d->g, it->L, 0, line))
                return false;
            if (!layout_latex_fits(d->g, it->R,
                                   wide ? LAYOUT_INDENT_PT + 14.0 : wl + 14.0,
                                   line))
                return false;
            continue;
        }
        double width = line - col;
        bool wide = wl > WIDE_LEFT * line;
        if (wide && it->kind == ITEM_ROW &&
            !layout_latex_fits(d->g, it->L, 0, width))
            return false;
        if (!layout_latex_fits(d->g, it->R, wide ? 24.0 : 14.0, width))
            return false;
    }
    return true;
}

bool display_needs_names(display_t *d)
{
    if (d->names >= 0)
        return d->names;
    d->names = 0;
    d->full = false;
    for (size_t i = 0; i < d->n && !d->names; i++) {
        const item_t *it = &d->item[i];
        if (it->kind != ITEM_HEADING &&
            (too_large(it->L) || too_large(it->R)))
            d->names = 1;
    }
    if (d->names)
        return true;
    /* the rows aligned at their equals signs; else each on the whole
     * line; else named subexpressions */
    if (rows_fit(d, column_width(d, d->item, d->n)))
        return false;
    if (rows_fit(d, -1)) {
        d->full = true;
        return false;
    }
    d->names = 1;
    return true;
}

/* ---- writing ---------------------------------------------------------------- */

typedef struct out {
    strbuf_t b;
    size_t last_row; /* LaTeX: where the last row's text ends, + 1 */
    size_t lines;
} out_t;

static void out_puts(out_t *o, const char *s)
{
    strbuf_add(&o->b, s);
    for (; *s; s++)
        o->lines += *s == '\n';
}

/* LaTeX: a row follows; the row before it (if any) ends with \\. */
static void out_next_row(out_t *o)
{
    if (!o->last_row)
        return;
    char *s = strbuf_take(&o->b);
    size_t at = o->last_row - 1, len = strlen(s);
    strbuf_init(&o->b);
    strbuf_addn(&o->b, s, at);
    strbuf_add(&o->b, " \\\\");
    strbuf_addn(&o->b, s + at, len - at);
    free(s);
}

static void out_end_row(out_t *o)
{
    o->last_row = o->b.len + 1;
    out_puts(o, "\n");
}

static void put_heading(display_t *d, out_t *o, const char *text)
{
    if (d->latex)
        out_puts(o, "% ");
    out_puts(o, text);
    out_puts(o, "\n");
}

/* An item's row in LaTeX, its right side broken into lines of the
 * column's room (COL the alignment column's width). */
/* The conditions of a row: as simp_format_conditions writes them, or,
 * with named subexpressions and past a line, a remark that says what
 * they are (they are the denominators of the row as derived, which the
 * named rows show as divisions). */
static char *conditions_of(display_t *d, const item_t *it, bool named)
{
    char *c = simp_format_conditions(d->s, it->cond, d->latex);
    size_t limit = d->latex ? 0 : TEXT_WIDTH;
    bool wide = d->latex ? layout_width(c) > LAYOUT_LINE_PT / 2
                         : strlen(c) > limit;
    if (named && wide) {
        free(c);
        c = xstrdup(d->latex ? " \\quad \\text{(where its denominators do "
                               "not vanish)}"
                             : "  (where its denominators do not vanish)");
    }
    return c;
}

static void put_latex_row(display_t *d, out_t *o, const item_t *it,
                          const expr_t *L, const expr_t *R, double col,
                          bool named)
{
    double width = LAYOUT_LINE_PT - col;
    char *left = it->kind == ITEM_OBJECT ? xstrdup(it->latex)
                                         : expr_to_latex(d->g, L);
    bool wide = layout_width(left) > WIDE_LEFT * LAYOUT_LINE_PT;
    out_next_row(o);
    if (wide) {
        /* the left side on lines of its own, then "= right" */
        out_puts(o, "&");
        char *l = it->kind == ITEM_OBJECT
                      ? xstrdup(left)
                      : layout_latex_lines(d->g, L, 0, width, NULL);
        out_puts(o, l);
        free(l);
        out_puts(o, " \\\\\n&\\quad {}= ");
    } else {
        out_puts(o, left);
        out_puts(o, " &= ");
    }
    char *r = layout_latex_lines(d->g, R, wide ? 24.0 : 14.0, width, NULL);
    out_puts(o, r);
    if (it->cond) {
        /* on the row's last line where it fits, else on one of its own */
        char *c = conditions_of(d, it, named);
        const char *last = strrchr(r, '\n');
        double used = layout_width(last ? last + 1 : r) +
                      (last ? LAYOUT_INDENT_PT : layout_width(left) + 14.0);
        if (used + layout_width(c) > width)
            out_puts(o, " \\\\\n&\\quad ");
        out_puts(o, c);
        free(c);
    }
    free(r);
    free(left);
    out_end_row(o);
}

/* An item's row in LaTeX with named subexpressions: all of it after the
 * alignment point, so that the row has the whole line ("&L = R", long
 * sides broken between their terms). */
static void put_latex_row_full(display_t *d, out_t *o, const item_t *it,
                               const expr_t *L, const expr_t *R, bool inl)
{
    char *(*lines)(const expr_graph_t *, const expr_t *, double, double,
                   bool *) =
        inl ? layout_latex_lines_inline : layout_latex_lines;
    double line = LAYOUT_LINE_PT;
    char *left = it->kind == ITEM_OBJECT ? xstrdup(it->latex)
                 : inl                   ? expr_to_latex_inline(d->g, L)
                                         : expr_to_latex(d->g, L);
    double wl = layout_width(left);
    out_next_row(o);
    out_puts(o, "&");
    double first;
    if (full_wide(d, it, wl)) {
        char *l = lines(d->g, L, 0, line, NULL);
        out_puts(o, l);
        free(l);
        out_puts(o, " \\\\\n&\\quad {}= ");
        first = LAYOUT_INDENT_PT + 14.0;
    } else {
        out_puts(o, left);
        out_puts(o, " = ");
        first = wl + 14.0;
    }
    char *r = lines(d->g, R, first, line, NULL);
    out_puts(o, r);
    free(r);
    if (it->cond) {
        char *c = conditions_of(d, it, false);
        out_puts(o, " \\\\\n&\\quad ");
        out_puts(o, c);
        free(c);
    }
    free(left);
    out_end_row(o);
}

/* An item's row in LaTeX with named subexpressions, as
 * put_latex_row_full, but a short one (a kinematic equation) goes on the
 * line of the short rows before it while they fit, as the `where` rows
 * do.  OPEN: the width of that line, or < 0; returns the new width. */
static double put_latex_row_short(display_t *d, out_t *o, const item_t *it,
                                  double open)
{
    if (it->kind != ITEM_ROW || it->cond) {
        put_latex_row_full(d, o, it, it->L, it->R, true);
        return -1;
    }
    char *l = expr_to_latex_inline(d->g, it->L);
    char *r = expr_to_latex_inline(d->g, it->R);
    strbuf_t b;
    strbuf_init(&b);
    strbuf_add(&b, l);
    strbuf_add(&b, " = ");
    strbuf_add(&b, r);
    char *t = strbuf_take(&b);
    free(l);
    free(r);
    double wt = layout_width(t), sep = layout_width(WHERE_SEP);
    double w = -1;
    if (wt > LAYOUT_LINE_PT / 3) {
        put_latex_row_full(d, o, it, it->L, it->R, true);
    } else if (open >= 0 && open + sep + wt <= LAYOUT_LINE_PT &&
               o->b.len > 0 && o->b.data[o->b.len - 1] == '\n') {
        /* on the line the last row ended */
        o->b.data[--o->b.len] = '\0';
        o->lines--;
        out_puts(o, WHERE_SEP);
        out_puts(o, t);
        out_end_row(o);
        w = open + sep + wt;
    } else {
        out_next_row(o);
        out_puts(o, "&");
        out_puts(o, t);
        out_end_row(o);
        w = wt;
    }
    free(t);
    return w;
}

/* An item's row in text; BROKEN: long right sides continued on lines
 * that end in an operator. */
static void put_text_row(display_t *d, out_t *o, const item_t *it,
                         const expr_t *L, const expr_t *R, bool named)
{
    /* with names, both sides broken into lines of about TEXT_WIDTH */
    char *left = it->kind == ITEM_OBJECT ? xstrdup(it->text)
                 : named ? layout_text_lines(d->g, L, 0, TEXT_WIDTH, "    ")
                         : simp_format(d->s, L, false);
    out_puts(o, left);
    out_puts(o, " = ");
    const char *last = strrchr(left, '\n');
    size_t used = strlen(last ? last + 1 : left) + 3;
    char *r = named ? layout_text_lines(d->g, R, used, TEXT_WIDTH, "    ")
                    : simp_format(d->s, R, false);
    out_puts(o, r);
    free(r);
    if (it->cond) {
        char *c = conditions_of(d, it, named);
        out_puts(o, c);
        free(c);
    }
    free(left);
    out_puts(o, "\n");
}

/* The block as it is (no names). */
static void put_plain(display_t *d, out_t *o)
{
    if (!d->latex) {
        for (size_t i = 0; i < d->n; i++) {
            const item_t *it = &d->item[i];
            if (it->kind == ITEM_HEADING) {
                put_heading(d, o, it->text);
            } else if (it->kind == ITEM_ROW) {
                char *t = simp_format_row(d->s, it->L, it->R, it->cond,
                                          false);
                out_puts(o, t);
                out_puts(o, "\n");
                free(t);
            } else {
                put_text_row(d, o, it, NULL, it->R, false);
            }
        }
        return;
    }
    if (d->n == 0)
        return;
    double col = column_width(d, d->item, d->n);
    out_puts(o, "\\begin{align*}\n");
    for (size_t i = 0; i < d->n; i++) {
        const item_t *it = &d->item[i];
        if (it->kind == ITEM_HEADING)
            put_heading(d, o, it->text);
        else if (d->full)
            put_latex_row_full(d, o, it, it->L, it->R, false);
        else
            put_latex_row(d, o, it, it->L, it->R, col, false);
    }
    out_puts(o, "\\end{align*}\n");
}

/* A prefix for the names that no variable of the graph can meet (k1 is
 * taken when a variable is called k1). */
static const char *pick_prefix(const expr_graph_t *g)
{
    static const char *const prefixes[] = {"k", "K", "w", "W", "sub", NULL};
    uint32_t nv = expr_graph_nvars(g);
    for (const char *const *p = prefixes; *p; p++) {
        size_t lp = strlen(*p);
        bool taken = false;
        for (uint32_t v = 0; v < nv && !taken; v++) {
            const char *name = expr_var_name(g, v);
            if (strncmp(name, *p, lp) != 0 || !name[lp])
                continue;
            const char *c = name + lp;
            while (isdigit((unsigned char)*c))
                c++;
            /* k1 or k1' (a coordinate's velocity) */
            taken = c > name + lp && (*c == '\0' || *c == '\'');
        }
        if (!taken)
            return *p;
    }
    return "subexpr";
}

/* Whether name K's row, broken between its terms, fits when it starts
 * AT points into a line of ROOM. */
static bool starts_here(display_t *d, const where_t *w, size_t k, double at,
                        double room)
{
    bool fits;
    free(layout_latex_lines_inline(d->g, where_definition(w, k), at, room,
                                   &fits));
    return fits;
}

/* The `where` rows, packed several to a line in LaTeX. */
static void put_definitions(display_t *d, out_t *o, const where_t *w)
{
    size_t n = where_count(w);
    if (!d->latex) {
        out_puts(o, "where\n");
        for (size_t k = 0; k < n; k++) {
            char *name = expr_to_text(d->g, where_symbol(w, k));
            out_puts(o, "  ");
            out_puts(o, name);
            out_puts(o, " = ");
            char *t = layout_text_lines(d->g, where_definition(w, k),
                                        strlen(name) + 5, TEXT_WIDTH,
                                        "      ");
            out_puts(o, t);
            out_puts(o, "\n");
            free(t);
            free(name);
        }
        return;
    }
    /* as where.c's pack_order planned: a row goes on the line when it
     * fits, else on the next; one wider than a line alone, broken */
    out_puts(o, WHERE_LEAD);
    double sep = layout_width(WHERE_SEP);
    double room = LAYOUT_LINE_PT - layout_width(WHERE_LEAD), used = 0;
    for (size_t k = 0; k < n; k++) {
        char *name = expr_to_latex(d->g, where_symbol(w, k));
        char *idef = expr_to_latex_inline(d->g, where_definition(w, k));
        strbuf_t one;
        strbuf_init(&one);
        strbuf_add(&one, name);
        strbuf_add(&one, " = ");
        char *head = xstrdup(one.data ? one.data : "");
        strbuf_add(&one, idef);
        char *t = strbuf_take(&one);
        double wt = layout_width(t);
        if (used > 0 && used + sep + wt <= room) {
            out_puts(o, WHERE_SEP);
            out_puts(o, t);
            used += sep + wt;
        } else if (used > 0 && wt > LAYOUT_LINE_PT &&
                   room - used - sep >= WHERE_LONG_START &&
                   starts_here(d, w, k, used + sep + layout_width(head),
                               room)) {
            /* longer than a line: it starts on the rest of this one */
            out_puts(o, WHERE_SEP);
            out_puts(o, head);
            char *lines = layout_latex_lines_inline(
                d->g, where_definition(w, k),
                used + sep + layout_width(head), room, NULL);
            out_puts(o, lines);
            const char *last = strrchr(lines, '\n');
            used = last ? LAYOUT_INDENT_PT + layout_width(last + 1)
                        : used + sep + layout_width(head) +
                              layout_width(lines);
            room = LAYOUT_LINE_PT;
            free(lines);
        } else {
            if (used > 0) {
                out_puts(o, " \\\\\n&");
                room = LAYOUT_LINE_PT;
                used = 0;
            }
            if (wt <= room) {
                out_puts(o, t);
                used = wt;
            } else {
                /* alone on its lines, broken between its terms */
                out_puts(o, head);
                char *lines = layout_latex_lines_inline(
                    d->g, where_definition(w, k), layout_width(head), room,
                    NULL);
                out_puts(o, lines);
                /* the rows after it go on its last line while they fit
                 * (where.c planned so) */
                const char *last = strrchr(lines, '\n');
                room = LAYOUT_LINE_PT;
                used = last ? LAYOUT_INDENT_PT + layout_width(last + 1)
                            : layout_width(head) + layout_width(lines);
                free(lines);
            }
        }
        free(t);
        free(head);
        free(name);
        free(idef);
    }
    out_puts(o, "\n");
}

/* The block with named subexpressions. */
static int put_named(display_t *d, out_t *o)
{
    where_t *w = where_new(d->s);
    for (size_t i = 0; i < d->ndrop; i++)
        where_may_drop(w, d->drop[i]);
    for (size_t i = 0; i < d->n; i++) {
        const item_t *it = &d->item[i];
        if (it->kind == ITEM_HEADING)
            continue;
        where_add(w, it->kind == ITEM_ROW ? it->L : expr_num(d->g, 0));
        where_add(w, it->R);
    }
    if (where_solve(w, pick_prefix(d->g), LAYOUT_LINE_PT) != 0) {
        where_free(w);
        return -1;
    }
    size_t first = 0;
    while (first < d->n && d->item[first].kind == ITEM_HEADING)
        first++;
    /* LaTeX: the `where` rows a table of their own, set without the
     * space between rows that equations get (\jot) */
    if (d->latex)
        out_puts(o, "{\\allowdisplaybreaks\n{\\setlength{\\jot}{0pt}\n"
                    "\\begin{align*}\n");
    for (size_t i = 0; i < first; i++)
        put_heading(d, o, d->item[i].text);
    const uint32_t *dv;
    size_t nd = where_dropped(w, &dv);
    if (nd) {
        strbuf_t b;
        strbuf_init(&b);
        strbuf_add(&b, "no row depends on ");
        for (size_t i = 0; i < nd; i++) {
            strbuf_add(&b, i ? (i + 1 < nd ? ", " : " or ") : "");
            strbuf_add(&b, expr_var_name(d->g, dv[i]));
        }
        strbuf_add(&b, ": the named expressions are written at ");
        for (size_t i = 0; i < nd; i++) {
            strbuf_add(&b, i ? ", " : "");
            strbuf_add(&b, expr_var_name(d->g, dv[i]));
            strbuf_add(&b, " = 0");
        }
        char *t = strbuf_take(&b);
        put_heading(d, o, t);
        free(t);
    }
    put_definitions(d, o, w);
    if (d->latex)
        out_puts(o, " \\\\[4pt]\n");
    /* the rows, in the names' terms */
    item_t *shown = xcalloc(d->n + 1, sizeof *shown);
    size_t k = 0;
    for (size_t i = 0; i < d->n; i++) {
        shown[i] = d->item[i];
        if (d->item[i].kind == ITEM_HEADING)
            continue;
        shown[i].L = where_root(w, k++);
        shown[i].R = where_root(w, k++);
    }
    /* the conditions of rows this long are the denominators of the
     * rows as derived, which the named rows show as divisions: said
     * once */
    bool conds = false;
    for (size_t i = first; i < d->n; i++)
        if (shown[i].kind != ITEM_HEADING && shown[i].cond) {
            conds = true;
            shown[i].cond = NULL;
        }
    if (conds)
        put_heading(d, o, "the rows hold where their denominators do not "
                          "vanish");
    double open = -1; /* LaTeX: the width of a line of short rows */
    for (size_t i = first; i < d->n; i++) {
        const item_t *it = &shown[i];
        if (it->kind == ITEM_HEADING) {
            put_heading(d, o, it->text);
            open = -1;
        } else if (d->latex) {
            open = put_latex_row_short(d, o, it, open);
        } else {
            put_text_row(d, o, it, it->L, it->R, true);
        }
    }
    if (d->latex)
        out_puts(o, "\\end{align*}\n}}\n");
    free(shown);
    where_free(w);
    return 0;
}

char *display_finish(display_t *d)
{
    out_t o;
    memset(&o, 0, sizeof o);
    strbuf_init(&o.b);
    bool named = display_needs_names(d) && put_named(d, &o) == 0;
    if (!named) {
        strbuf_free(&o.b);
        memset(&o, 0, sizeof o);
        strbuf_init(&o.b);
        put_plain(d, &o);
        if (d->latex && o.lines > PAGE_LINES) {
            /* longer than a page: the display may break across pages */
            char *s = strbuf_take(&o.b);
            strbuf_init(&o.b);
            strbuf_add(&o.b, "{\\allowdisplaybreaks\n");
            strbuf_add(&o.b, s);
            strbuf_add(&o.b, "}\n");
            free(s);
        }
    }
    for (size_t i = 0; i < d->n; i++) {
        free(d->item[i].text);
        free(d->item[i].latex);
    }
    free(d->item);
    free(d->drop);
    free(d);
    return strbuf_take(&o.b);
}
