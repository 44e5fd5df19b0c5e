/*
 * merge.c — shards' outputs joined into one run's (merge.h).
 *
 * Each file is read whole and cut into lines, then into parts: a plain
 * line, or a table (the shard line, the header, and the rows the shard
 * line says this shard holds).  The files must have the same parts; the
 * tables' rows are then dealt back in index order — index i is row
 * i div N of shard (i mod N) + 1 — with the index column cut off as
 * written, so the bytes of every row are those of the single run.
 */
#include "interp/cli/merge.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"

typedef struct merge_line {
    const char *s;
    size_t len; /* without the '\n' */
} merge_line_t;

/* A part of a file: a plain line (table false), or a table. */
typedef struct merge_part {
    bool table;
    merge_line_t line;     /* a plain line; a table's header */
    unsigned k, n;         /* the table's shard K/N */
    size_t points;         /* the table's M */
    merge_line_t *rows;    /* the shard's rows, in the file's order */
    size_t nrows;
} merge_part_t;

typedef struct merge_file {
    const char *path;
    char *text;
    size_t len;
    merge_line_t *lines;
    size_t nlines;
    merge_part_t *parts;
    size_t nparts;
} merge_file_t;

static int merge_fail(char *msg, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int merge_fail(char *msg, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, size, fmt, ap);
    va_end(ap);
    return -1;
}

static int merge_read(merge_file_t *f, char *msg, size_t size)
{
    FILE *in = fopen(f->path, "rb");
    if (!in)
        return merge_fail(msg, size, "cannot read '%s': %s", f->path,
                          strerror(errno));
    size_t cap = 0;
    for (;;) {
        xgrow(&f->text, &cap, f->len + 65536 + 1, 1);
        size_t got = fread(f->text + f->len, 1, 65536, in);
        f->len += got;
        if (f->len > MERGE_MAX_FILE) {
            fclose(in);
            return merge_fail(msg, size, "'%s' is larger than %zu bytes",
                              f->path, MERGE_MAX_FILE);
        }
        if (got < 65536)
            break;
    }
    bool bad = ferror(in);
    fclose(in);
    if (bad)
        return merge_fail(msg, size, "cannot read '%s'", f->path);
    f->text[f->len] = '\0';
    size_t cap_l = 0;
    for (size_t at = 0; at < f->len;) {
        const char *nl = memchr(f->text + at, '\n', f->len - at);
        size_t end = nl ? (size_t)(nl - f->text) : f->len;
        xgrow(&f->lines, &cap_l, f->nlines + 1, sizeof *f->lines);
        f->lines[f->nlines++] = (merge_line_t){f->text + at, end - at};
        at = end + 1;
    }
    return 0;
}

/* Whether LINE is "# nh --shard K/N: M points"; its numbers if so. */
static bool merge_shard_line(merge_line_t line, unsigned *k, unsigned *n,
                             size_t *m)
{
    static const char head[] = "# nh --shard ";
    if (line.len < sizeof head - 1 || memcmp(line.s, head, sizeof head - 1))
        return false;
    char buf[128];
    if (line.len >= sizeof buf)
        return false;
    memcpy(buf, line.s, line.len);
    buf[line.len] = '\0';
    unsigned long kk, nn;
    unsigned long long mm;
    int used = 0;
    if (sscanf(buf + sizeof head - 1, "%lu/%lu: %llu points%n", &kk, &nn, &mm,
               &used) != 3 ||
        (size_t)used != line.len - (sizeof head - 1) || kk < 1 || kk > nn ||
        nn > UINT32_MAX || mm > SIZE_MAX)
        return false;
    *k = (unsigned)kk;
    *n = (unsigned)nn;
    *m = (size_t)mm;
    return true;
}

/* The rows of shard K of N out of M points: i < M with i mod N = K − 1. */
static size_t merge_count(unsigned k, unsigned n, size_t m)
{
    return m > k - 1 ? (m - k) / n + 1 : 0;
}

/* The index a row starts with, as the sweep writes it ("12,"); false
 * when it does not start with a whole number and a comma. */
static bool merge_row_index(merge_line_t row, size_t *index, size_t *skip)
{
    size_t i = 0, v = 0;
    while (i < row.len && row.s[i] >= '0' && row.s[i] <= '9' && i < 19)
        v = 10 * v + (size_t)(row.s[i++] - '0');
    if (i == 0 || i >= row.len || row.s[i] != ',')
        return false;
    *index = v;
    *skip = i + 1;
    return true;
}

static int merge_parts(merge_file_t *f, char *msg, size_t size)
{
    size_t cap = 0;
    for (size_t l = 0; l < f->nlines;) {
        xgrow(&f->parts, &cap, f->nparts + 1, sizeof *f->parts);
        merge_part_t *p = &f->parts[f->nparts++];
        memset(p, 0, sizeof *p);
        if (!merge_shard_line(f->lines[l], &p->k, &p->n, &p->points)) {
            p->line = f->lines[l++];
            continue;
        }
        p->table = true;
        size_t at = l + 1;
        static const char idx[] = "index,";
        if (at >= f->nlines || f->lines[at].len < sizeof idx - 1 ||
            memcmp(f->lines[at].s, idx, sizeof idx - 1) != 0)
            return merge_fail(msg, size,
                              "%s:%zu: the shard line is not followed by a "
                              "header that begins with 'index,'",
                              f->path, l + 1);
        p->line = f->lines[at];
        p->nrows = merge_count(p->k, p->n, p->points);
        p->rows = f->lines + at + 1;
        for (size_t r = 0; r < p->nrows; r++) {
            size_t want = (size_t)(p->k - 1) + r * p->n, got, skip;
            if (at + 1 + r >= f->nlines ||
                !merge_row_index(p->rows[r], &got, &skip) || got != want)
                return merge_fail(msg, size,
                                  "%s:%zu: shard %u/%u's table has no row "
                                  "for index %zu (cut short, or its sweep "
                                  "failed there)",
                                  f->path, at + 2 + r, p->k, p->n, want);
        }
        l = at + 1 + p->nrows;
    }
    return 0;
}

static bool merge_same(merge_line_t a, merge_line_t b)
{
    return a.len == b.len && memcmp(a.s, b.s, a.len) == 0;
}

/* Checks that the files are the N shards of one run, table by table. */
static int merge_check(merge_file_t *f, size_t nf, char *msg, size_t size)
{
    for (size_t i = 1; i < nf; i++)
        if (f[i].nparts != f[0].nparts)
            return merge_fail(msg, size,
                              "'%s' and '%s' are not shards of one run (they "
                              "differ outside the tables)",
                              f[0].path, f[i].path);
    for (size_t j = 0; j < f[0].nparts; j++) {
        const merge_part_t *p0 = &f[0].parts[j];
        for (size_t i = 1; i < nf; i++) {
            const merge_part_t *p = &f[i].parts[j];
            if (p->table != p0->table ||
                (!p->table && !merge_same(p->line, p0->line)))
                return merge_fail(msg, size,
                                  "'%s' and '%s' are not shards of one run "
                                  "(they differ outside the tables)",
                                  f[0].path, f[i].path);
            if (p->table && (p->n != p0->n || p->points != p0->points ||
                             !merge_same(p->line, p0->line)))
                return merge_fail(msg, size,
                                  "'%s' holds shard %u/%u of %zu points and "
                                  "'%s' shard %u/%u of %zu points, or their "
                                  "headers differ: not one study",
                                  f[0].path, p0->k, p0->n, p0->points,
                                  f[i].path, p->k, p->n, p->points);
        }
        if (!p0->table)
            continue;
        /* every shard once: the indices neither overlap nor leave gaps */
        unsigned n = p0->n;
        if (nf != n) {
            bool *seen = xcalloc(n + 1, sizeof *seen);
            for (size_t i = 0; i < nf; i++)
                seen[f[i].parts[j].k] = true;
            unsigned missing = 1;
            while (missing <= n && seen[missing])
                missing++;
            free(seen);
            if (nf < n)
                return merge_fail(msg, size,
                                  "shard %u/%u is missing: %zu files for %u "
                                  "shards (its indices would be a gap)",
                                  missing, n, nf, n);
        }
        for (size_t a = 0; a < nf; a++)
            for (size_t b = a + 1; b < nf; b++)
                if (f[a].parts[j].k == f[b].parts[j].k)
                    return merge_fail(msg, size,
                                      "'%s' and '%s' both hold shard %u/%u "
                                      "(their indices overlap)",
                                      f[a].path, f[b].path,
                                      f[a].parts[j].k, n);
    }
    return 0;
}

static void merge_write_line(FILE *out, const char *s, size_t len)
{
    fwrite(s, 1, len, out);
    fputc('\n', out);
}

int merge_files(const char *const *paths, size_t nf, FILE *out, char *msg,
                size_t size)
{
    if (nf == 0)
        return merge_fail(msg, size, "--merge needs the shards' files");
    merge_file_t *f = xcalloc(nf, sizeof *f);
    int rc = 0;
    for (size_t i = 0; i < nf && rc == 0; i++) {
        f[i].path = paths[i];
        rc = merge_read(&f[i], msg, size);
        if (rc == 0)
            rc = merge_parts(&f[i], msg, size);
    }
    if (rc == 0)
        rc = merge_check(f, nf, msg, size);
    if (rc == 0) {
        for (size_t j = 0; j < f[0].nparts; j++) {
            const merge_part_t *p0 = &f[0].parts[j];
            if (!p0->table) {
                merge_write_line(out, p0->line.s, p0->line.len);
                continue;
            }
            const merge_part_t **by_k = xcalloc(p0->n + 1, sizeof *by_k);
            for (size_t i = 0; i < nf; i++)
                by_k[f[i].parts[j].k] = &f[i].parts[j];
            size_t cut = sizeof "index," - 1;
            merge_write_line(out, p0->line.s + cut, p0->line.len - cut);
            for (size_t x = 0; x < p0->points; x++) {
                const merge_part_t *p = by_k[x % p0->n + 1];
                merge_line_t row = p->rows[x / p0->n];
                size_t index, skip;
                merge_row_index(row, &index, &skip);
                merge_write_line(out, row.s + skip, row.len - skip);
            }
            free(by_k);
        }
    }
    for (size_t i = 0; i < nf; i++) {
        free(f[i].text);
        free(f[i].lines);
        free(f[i].parts);
    }
    free(f);
    return rc;
}
