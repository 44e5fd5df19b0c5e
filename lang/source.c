/*
 * source.c — the session's texts, line/column lookup and error reports.
 *
 * Each text keeps a table of line-start offsets built once when it is
 * added, so a span becomes "LINE:COL" by a binary search; LINE counts
 * from the text's first line number (1 for a file; the lines of a REPL
 * session or a notebook's cells go on from text to text).  A released
 * text's index goes on a free list and is given to the next text, so a
 * long session that releases what it no longer refers to keeps a set of
 * bounded size.  Columns count
 * characters: a well-formed UTF-8 sequence is one character, and so is
 * every byte that is not part of one (the same rule draws the caret, so the
 * caret stays under the column that the message names).  Must not: print
 * anywhere but in diag_print; know anything about the language.
 */
#include "lang/source.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "interp/base/util.h"

typedef struct source_file {
    char *name; /* NULL: a released slot, on the free list */
    char *text; /* LEN bytes and a NUL */
    size_t len;
    uint32_t *line_starts; /* offsets of the first byte of each line */
    size_t nlines;         /* at least 1 */
    unsigned first_line;   /* the number of the text's first line */
} source_file_t;

struct source_set {
    source_file_t *files;
    size_t n, cap;
    uint32_t *free_slots; /* released indices, reused first */
    size_t nfree, cap_free;
};

static void *src_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        nh_out_of_memory();
    return p;
}

static void *src_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        nh_out_of_memory();
    return q;
}

source_set_t *source_set_new(void)
{
    source_set_t *set = src_xmalloc(sizeof *set);
    set->files = NULL;
    set->n = set->cap = 0;
    set->free_slots = NULL;
    set->nfree = set->cap_free = 0;
    return set;
}

void source_set_free(source_set_t *set)
{
    if (!set)
        return;
    for (size_t i = 0; i < set->n; i++) {
        free(set->files[i].name);
        free(set->files[i].text);
        free(set->files[i].line_starts);
    }
    free(set->files);
    free(set->free_slots);
    free(set);
}

uint32_t source_add(source_set_t *set, const char *name, const char *text,
                    size_t len)
{
    return source_add_at(set, name, 1, text, len);
}

uint32_t source_add_at(source_set_t *set, const char *name,
                       unsigned first_line, const char *text, size_t len)
{
    /* Offsets are 32-bit; a text that does not fit is cut (the parser
     * rejects long lines long before this matters). */
    if (len > UINT32_MAX - 2)
        len = UINT32_MAX - 2;
    uint32_t index;
    if (set->nfree > 0) {
        index = set->free_slots[--set->nfree];
    } else {
        if (set->n == set->cap) {
            set->cap = set->cap ? 2 * set->cap : 8;
            set->files =
                src_xrealloc(set->files, set->cap * sizeof *set->files);
        }
        index = (uint32_t)set->n++;
    }
    source_file_t *f = &set->files[index];
    f->first_line = first_line ? first_line : 1;
    const char *nm = name ? name : "<input>";
    size_t nlen = strlen(nm);
    f->name = src_xmalloc(nlen + 1);
    memcpy(f->name, nm, nlen + 1);
    f->text = src_xmalloc(len + 1);
    if (len)
        memcpy(f->text, text, len);
    f->text[len] = '\0';
    f->len = len;

    size_t nlines = 1;
    for (size_t i = 0; i < len; i++)
        nlines += f->text[i] == '\n';
    f->line_starts = src_xmalloc(nlines * sizeof *f->line_starts);
    f->line_starts[0] = 0;
    size_t k = 1;
    for (size_t i = 0; i < len; i++)
        if (f->text[i] == '\n')
            f->line_starts[k++] = (uint32_t)(i + 1);
    f->nlines = nlines;
    return index;
}

void source_release(source_set_t *set, uint32_t file)
{
    if (!set || file == SRC_NO_FILE || file >= set->n ||
        !set->files[file].name)
        return;
    source_file_t *f = &set->files[file];
    free(f->name);
    free(f->text);
    free(f->line_starts);
    memset(f, 0, sizeof *f);
    if (set->nfree == set->cap_free) {
        set->cap_free = set->cap_free ? 2 * set->cap_free : 8;
        set->free_slots = src_xrealloc(
            set->free_slots, set->cap_free * sizeof *set->free_slots);
    }
    set->free_slots[set->nfree++] = file;
}

size_t source_slots(const source_set_t *set) { return set ? set->n : 0; }

size_t source_live(const source_set_t *set)
{
    return set ? set->n - set->nfree : 0;
}

static const source_file_t *src_file(const source_set_t *set, uint32_t file)
{
    if (!set || file == SRC_NO_FILE || file >= set->n ||
        !set->files[file].name)
        return NULL;
    return &set->files[file];
}

unsigned source_line_count(const source_set_t *set, uint32_t file)
{
    const source_file_t *f = src_file(set, file);
    if (!f || f->len == 0)
        return 0;
    /* the last line start is past the end when the text ends in '\n' */
    return (unsigned)f->nlines - (f->text[f->len - 1] == '\n');
}

const char *source_name(const source_set_t *set, uint32_t file)
{
    const source_file_t *f = src_file(set, file);
    return f ? f->name : "nh";
}

const char *source_text(const source_set_t *set, uint32_t file, size_t *len)
{
    const source_file_t *f = src_file(set, file);
    if (!f) {
        if (len)
            *len = 0;
        return "";
    }
    if (len)
        *len = f->len;
    return f->text;
}

/* Length of the well-formed UTF-8 sequence at P (at most AVAIL bytes), or
 * 0 when P does not start one (RFC 3629: no overlongs, no surrogates). */
static size_t src_utf8_len(const unsigned char *p, size_t avail)
{
    unsigned c = p[0];
    size_t n;
    unsigned lo = 0x80, hi = 0xBF; /* range of the second byte */
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (avail < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

/* Step over one character at P: a UTF-8 sequence or a single byte. */
static size_t src_char_len(const unsigned char *p, size_t avail)
{
    size_t n = src_utf8_len(p, avail);
    return n ? n : 1;
}

/* Index (0-based) of the line holding OFFSET. */
static size_t src_line_index(const source_file_t *f, uint32_t offset)
{
    size_t lo = 0, hi = f->nlines; /* line_starts[lo] <= offset */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->line_starts[mid] <= offset)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Characters from FROM to TO (byte offsets in F, FROM <= TO <= len); a
 * character that starts before TO counts. */
static unsigned src_count_chars(const source_file_t *f, size_t from,
                                size_t to)
{
    const unsigned char *t = (const unsigned char *)f->text;
    unsigned n = 0;
    size_t i = from;
    while (i < to) {
        i += src_char_len(t + i, f->len - i);
        n++;
    }
    return n;
}

void source_line_col(const source_set_t *set, uint32_t file, uint32_t offset,
                     unsigned *line, unsigned *col)
{
    const source_file_t *f = src_file(set, file);
    if (!f) {
        *line = 0;
        *col = 0;
        return;
    }
    if (offset > f->len)
        offset = (uint32_t)f->len;
    size_t li = src_line_index(f, offset);
    *line = (unsigned)li + f->first_line;
    *col = src_count_chars(f, f->line_starts[li], offset) + 1;
}

src_span_t src_span_join(src_span_t a, src_span_t b)
{
    if (a.file == SRC_NO_FILE)
        return b;
    if (b.file == SRC_NO_FILE || b.file != a.file)
        return a;
    src_span_t r = a;
    if (b.begin < r.begin)
        r.begin = b.begin;
    if (b.end > r.end)
        r.end = b.end;
    return r;
}

/* Whether the UTF-8 sequence of N bytes at P is a C1 control character
 * (U+0080..U+009F), which a terminal may obey as ESC [ and the like. */
static bool src_c1(const unsigned char *p, size_t n)
{
    return n == 2 && p[0] == 0xC2 && p[1] <= 0x9F;
}

/* S with what a terminal would obey rather than show — control bytes
 * (ESC, BEL, ...; not the tab), C1 controls, bytes outside a UTF-8
 * sequence — each made '?', in place (issue 31: `load` of a name with
 * ESC ] 0 ; TITLE BEL set the terminal's title through the message). */
static void src_sanitize(char *s)
{
    unsigned char *r = (unsigned char *)s, *w = r;
    size_t avail = strlen(s);
    while (avail > 0) {
        size_t n = src_utf8_len(r, avail);
        if (n > 1 && !src_c1(r, n)) {
            memmove(w, r, n);
            w += n;
        } else {
            unsigned c = *r;
            *w++ = (n == 1 && (c == '\t' || (c >= 0x20 && c < 0x7F)))
                       ? (unsigned char)c
                       : '?';
        }
        n = n ? n : 1;
        r += n;
        avail -= n;
    }
    *w = '\0';
}

int diag_verror(diag_t *d, src_span_t span, const char *fmt, va_list ap)
{
    if (!d || d->set)
        return -1;
    d->set = true;
    d->span = span;
    vsnprintf(d->msg, sizeof d->msg, fmt, ap);
    /* a message quotes names, files and text from the input: it reaches a
     * terminal or a notebook as the echoed line does, made harmless */
    src_sanitize(d->msg);
    return -1;
}

int diag_error(diag_t *d, src_span_t span, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_verror(d, span, fmt, ap);
    va_end(ap);
    return -1;
}

void diag_clear(diag_t *d)
{
    d->set = false;
    d->span = SRC_SPAN_NONE;
    d->msg[0] = '\0';
}

/* Source lines longer than this many bytes show as a window. */
#define DIAG_LINE_WINDOW 160

/* Writes the line of F that spans bytes [BEGIN, END) (no newline) so that a terminal
 * shows one cell per character as counted by src_count_chars: control
 * bytes and bytes outside a UTF-8 sequence become '?'; tabs stay. */
static void src_print_line_open(FILE *out, const source_file_t *f,
                                size_t begin, size_t end)
{
    const unsigned char *t = (const unsigned char *)f->text;
    size_t i = begin;
    while (i < end) {
        size_t n = src_utf8_len(t + i, f->len - i);
        if (n > 1 && i + n <= end && !src_c1(t + i, n)) {
            fwrite(t + i, 1, n, out);
            i += n;
            continue;
        }
        unsigned c = t[i];
        if (c == '\t' || (c >= 0x20 && c < 0x7F))
            fputc((int)c, out);
        else
            fputc('?', out);
        i += n > 1 ? n : 1;
    }
}

static void diag_print_kind(FILE *out, const source_set_t *set,
                            const diag_t *d, const char *kind)
{
    const source_file_t *f = src_file(set, d->span.file);
    if (!f) {
        fprintf(out, "nh: %s: %s\n", kind, d->msg);
        return;
    }
    /* the file's name as the message is: it comes from the input too */
    char name[DIAG_MSG_MAX];
    snprintf(name, sizeof name, "%s", f->name);
    src_sanitize(name);
    uint32_t begin = d->span.begin, end = d->span.end;
    if (begin > f->len)
        begin = (uint32_t)f->len;
    if (end < begin)
        end = begin;
    if (end > f->len)
        end = (uint32_t)f->len;
    unsigned line, col;
    source_line_col(set, d->span.file, begin, &line, &col);
    fprintf(out, "%s:%u:%u: %s: %s\n", name, line, col, kind, d->msg);

    size_t li = src_line_index(f, begin);
    size_t lb = f->line_starts[li];
    size_t le = li + 1 < f->nlines ? f->line_starts[li + 1] - 1 : f->len;
    if (le > lb && f->text[le - 1] == '\r')
        le--; /* a CRLF line shows without its CR */

    /* A long line shows a window around the column, marked with "...". */
    const unsigned char *t = (const unsigned char *)f->text;
    size_t wb = lb, we = le;
    if (le - lb > DIAG_LINE_WINDOW) {
        if (begin > lb + DIAG_LINE_WINDOW / 2)
            wb = begin - DIAG_LINE_WINDOW / 2;
        while (wb > lb && (t[wb] & 0xC0) == 0x80)
            wb--; /* not inside a UTF-8 sequence */
        if (we > wb + DIAG_LINE_WINDOW)
            we = wb + DIAG_LINE_WINDOW;
        while (we < le && (t[we] & 0xC0) == 0x80)
            we++;
        if (we < end && end <= le)
            end = (uint32_t)we; /* the tildes stop at the window */
    }
    if (wb > lb)
        fputs("...", out);
    src_print_line_open(out, f, wb, we);
    fputs(we < le ? "...\n" : "\n", out);

    /* The caret line: the line's tabs kept, so the caret lines up. */
    if (wb > lb)
        fputs("   ", out);
    size_t i = wb;
    while (i < begin && i < we) {
        fputc(t[i] == '\t' ? '\t' : ' ', out);
        i += src_char_len(t + i, f->len - i);
    }
    fputc('^', out);
    if (end <= we && end > begin) {
        unsigned rest = src_count_chars(f, begin, end);
        for (unsigned k = 1; k < rest; k++)
            fputc('~', out);
    }
    fputc('\n', out);
}

void diag_print(FILE *out, const source_set_t *set, const diag_t *d)
{
    diag_print_kind(out, set, d, "error");
}

void diag_print_warning(FILE *out, const source_set_t *set, const diag_t *d)
{
    diag_print_kind(out, set, d, "warning");
}

void diag_print_note(FILE *out, const source_set_t *set, const diag_t *d)
{
    diag_print_kind(out, set, d, "note");
}

size_t source_edit_distance(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    if (na > 64 || nb > 64)
        return (size_t)-1;
    /* three rows of the table: i - 2, i - 1, i */
    size_t rows[3][65];
    size_t *prev2 = rows[0], *prev = rows[1], *row = rows[2];
    for (size_t j = 0; j <= nb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= na; i++) {
        row[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t best = prev[j - 1] + (a[i - 1] != b[j - 1]);
            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
                a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < best)
                best = prev2[j - 2] + 1;
            row[j] = best;
        }
        size_t *t = prev2;
        prev2 = prev;
        prev = row;
        row = t;
    }
    return prev[nb];
}

size_t source_slip_distance(const char *name, const char *candidate)
{
    if (strcasecmp(name, candidate) == 0)
        return 0;
    size_t la = strlen(name), lb = strlen(candidate);
    size_t longer = la > lb ? la : lb;
    size_t d = source_edit_distance(name, candidate);
    return d <= 2 && 2 * d <= longer ? d : SIZE_MAX;
}

const char *source_closest(const char *name, const char *const *candidates)
{
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (size_t i = 0; candidates[i]; i++) {
        size_t d = source_slip_distance(name, candidates[i]);
        if (d < best_d) {
            best_d = d;
            best = candidates[i];
        }
    }
    return best;
}

size_t source_utf8_len(const unsigned char *p, size_t avail)
{
    return src_utf8_len(p, avail);
}
