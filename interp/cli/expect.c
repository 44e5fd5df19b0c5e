/*
 * expect.c — see expect.h.
 *
 * A file's output is told apart by statement: the session's observer
 * (session.h) is called after each statement and before an error, and
 * session_statement_at names the top-level statement running (a `load`
 * stands for the file it runs), so each line of standard output is known
 * to come from a line of the file.  The `# expect:` lines come in blocks,
 * parted by lines of code: a block expects what the statements between
 * the block before it and itself printed (`print a; print b` and then two
 * lines, or a statement whose output the next one's follows), and the
 * statements after the last block must print nothing — the whole output
 * is expected, line by line, as the tests' driver (tests/run_lang_test.sh)
 * expects it, but a mismatch is found at its statement.  A block that no
 * statement reached (the run stopped at an error) says so.  Errors and
 * warnings are compared in order, as lines of standard error, like the
 * driver does.  Each file runs from its own folder under its base name,
 * as the driver runs it: its messages read x.nh:4:7 however it was named,
 * and a relative path it writes or loads is its folder's.
 */
#include "interp/cli/expect.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interp/base/util.h"
#include "interp/cli/session.h"

/* ---- one expected line -------------------------------------------------- */

/* The length of the number at the start of S (as the tests' driver reads
 * one: -?digits[.digits][e[+-]digits], or -?.digits…), or 0. */
static size_t num_len(const char *s)
{
    size_t i = 0;
    if (s[i] == '-')
        i++;
    size_t d0 = i;
    while (s[i] >= '0' && s[i] <= '9')
        i++;
    bool digits = i > d0;
    if (s[i] == '.' && s[i + 1] >= '0' && s[i + 1] <= '9') {
        i++;
        while (s[i] >= '0' && s[i] <= '9')
            i++;
        digits = true;
    }
    if (!digits)
        return 0;
    if (s[i] == 'e' || s[i] == 'E') {
        size_t j = i + 1;
        if (s[j] == '+' || s[j] == '-')
            j++;
        size_t k = j;
        while (s[k] >= '0' && s[k] <= '9')
            k++;
        if (k > j)
            i = k;
    }
    return i;
}

bool expect_line_matches(const char *got, const char *want)
{
    const char *tilde;
    while ((tilde = strchr(want, '~'))) {
        size_t pre = (size_t)(tilde - want);
        if (strncmp(got, want, pre) != 0)
            return false;
        got += pre;
        want = tilde + 1;
        size_t k = num_len(want);
        if (k == 0)
            return false;
        double v = strtod(want, NULL), tol = 1e-9;
        want += k;
        if (*want == '@') {
            want++;
            k = num_len(want);
            if (k == 0)
                return false;
            tol = strtod(want, NULL);
            want += k;
        }
        size_t n = num_len(got);
        if (n == 0)
            return false;
        double g = strtod(got, NULL);
        got += n;
        if (!(fabs(g - v) <= tol * fmax(1.0, fabs(v))))
            return false;
    }
    return strcmp(got, want) == 0;
}

/* An error or warning line: exactly, or its beginning when WANT ends in
 * "...". */
static bool diag_line_matches(const char *got, const char *want)
{
    size_t wl = strlen(want);
    if (wl >= 3 && strcmp(want + wl - 3, "...") == 0)
        return strncmp(got, want, wl - 3) == 0;
    return strcmp(got, want) == 0;
}

/* ---- a file's expectations ---------------------------------------------- */

typedef enum want_kind { WANT_OUT, WANT_ERROR, WANT_WARNING } want_kind_t;

typedef struct want {
    want_kind_t kind;
    unsigned line;
    bool starts_block; /* WANT_OUT: a line of code came since the last one */
    char *text;
} want_t;

typedef struct wants {
    want_t *v;
    size_t n, cap;
} wants_t;

static void wants_free(wants_t *w)
{
    for (size_t i = 0; i < w->n; i++)
        free(w->v[i].text);
    free(w->v);
}

/* The `# expect…:` lines of TEXT (LEN bytes), in order; an output line
 * starts a block when a line of code (neither blank nor a comment) came
 * since the last output line expected. */
static void read_wants(const char *text, size_t len, wants_t *w)
{
    static const struct {
        const char *prefix;
        want_kind_t kind;
    } forms[] = {{"# expect-error: ", WANT_ERROR},
                 {"# expect-warning: ", WANT_WARNING},
                 {"# expect:", WANT_OUT}};
    unsigned line = 1;
    bool code = true;
    for (size_t i = 0; i < len; line++) {
        const char *p = text + i;
        const char *nl = memchr(p, '\n', len - i);
        size_t n = nl ? (size_t)(nl - p) : len - i;
        i += n + 1;
        while (n && (*p == ' ' || *p == '\t' || *p == '\r')) {
            p++;
            n--;
        }
        if (n && *p != '#')
            code = true;
        for (size_t f = 0; f < sizeof forms / sizeof *forms; f++) {
            size_t pl = strlen(forms[f].prefix);
            if (n < pl || strncmp(p, forms[f].prefix, pl) != 0)
                continue;
            const char *t = p + pl;
            size_t tl = n - pl;
            if (forms[f].kind == WANT_OUT && tl && *t == ' ') {
                t++; /* "# expect: TEXT"; "# expect:" alone, an empty line */
                tl--;
            }
            xgrow(&w->v, &w->cap, w->n + 1, sizeof *w->v);
            char *copy = xmalloc(tl + 1);
            memcpy(copy, t, tl);
            copy[tl] = '\0';
            bool starts = forms[f].kind == WANT_OUT && code;
            w->v[w->n++] = (want_t){forms[f].kind, line, starts, copy};
            if (forms[f].kind == WANT_OUT)
                code = false;
            break;
        }
    }
}

/* ---- the run ------------------------------------------------------------ */

/* What one line of the file printed: bytes [begin, end) of the output.
 * The observer's calls cut a statement's output in pieces; they follow
 * each other in the output. */
typedef struct piece {
    unsigned line;
    size_t begin, end;
} piece_t;

typedef struct run {
    session_t *s;
    FILE *out;
    char **buf; /* the memstream's */
    size_t *len;
    size_t mark;
    piece_t *pieces;
    size_t npieces, cap;
    unsigned stopped_at; /* the line of the statement that failed, or 0 */
} run_t;

/* The observer: what was printed since the last call is the output of the
 * statement running (an error comes next: that statement failed). */
static void on_event(void *data, session_event_t ev)
{
    run_t *r = data;
    const char *file;
    unsigned line = 0;
    if (!session_statement_at(r->s, &file, &line))
        line = 0;
    if (ev == SESSION_ERROR_NEXT && !r->stopped_at)
        r->stopped_at = line ? line : 1;
    if (*r->len > r->mark) {
        xgrow(&r->pieces, &r->cap, r->npieces + 1, sizeof *r->pieces);
        r->pieces[r->npieces++] = (piece_t){line, r->mark, *r->len};
        r->mark = *r->len;
    }
}

/* Lines of text, each its own copy, with the line of the statement that
 * printed it (0 for standard error's). */
typedef struct lines {
    char **v;
    unsigned *from;
    size_t n, cap, cap_from;
} lines_t;

static void lines_free(lines_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    free(l->from);
}

static void lines_add(lines_t *l, const char *p, size_t n, unsigned from)
{
    xgrow(&l->v, &l->cap, l->n + 1, sizeof *l->v);
    xgrow(&l->from, &l->cap_from, l->n + 1, sizeof *l->from);
    char *c = xmalloc(n + 1);
    memcpy(c, p, n);
    c[n] = '\0';
    l->from[l->n] = from;
    l->v[l->n++] = c;
}

/* Splits TEXT (LEN bytes) into lines; a last one without '\n' counts. */
static void lines_split(lines_t *l, const char *text, size_t len,
                        unsigned from)
{
    size_t i = 0;
    while (i < len) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
        lines_add(l, text + i, n, from);
        i += n + 1;
    }
}

/* ---- the report ---------------------------------------------------------- */

typedef struct report {
    FILE *f;
    const char *path;
    size_t mismatches;
} report_t;

/* One mismatch: "FILE:LINE: WHAT", then the expected line after '-' and
 * the printed one after '+' (either may be missing). */
static void mismatch(report_t *rp, unsigned line, const char *what,
                     const char *want, const char *got)
{
    rp->mismatches++;
    if (line)
        fprintf(rp->f, "%s:%u: %s\n", rp->path, line, what);
    else
        fprintf(rp->f, "%s: %s\n", rp->path, what);
    if (want)
        fprintf(rp->f, "-%s\n", want);
    if (got)
        fprintf(rp->f, "+%s\n", got);
}

/* A block this large (expected lines × printed lines) is compared line by
 * line rather than aligned: the alignment's table would be too large. */
#define EXPECT_MAX_ALIGN 4000000

/* Compares the lines GOT[G0, G1), printed by the statements before a
 * block of expectations, with the block W[0..N), as a diff does: the
 * longest common subsequence (under expect_line_matches) aligns them,
 * and what is left is reported — a pair as a line that differs, an
 * expected line alone as missing, a printed line alone as unexpected. */
static void compare_block(report_t *rp, const lines_t *got, size_t g0,
                          size_t g1, want_t *const *w, size_t n)
{
    size_t m = g1 - g0;
    if (n && m && n + 1 <= EXPECT_MAX_ALIGN / (m + 1)) {
        /* L[i][j]: the longest common subsequence of w[i..] and got[j..] */
        size_t cols = m + 1;
        unsigned *L = xcalloc((n + 1) * cols, sizeof *L);
        for (size_t i = n; i-- > 0;)
            for (size_t j = m; j-- > 0;)
                L[i * cols + j] =
                    expect_line_matches(got->v[g0 + j], w[i]->text)
                        ? L[(i + 1) * cols + j + 1] + 1
                        : (L[(i + 1) * cols + j] > L[i * cols + j + 1]
                               ? L[(i + 1) * cols + j]
                               : L[i * cols + j + 1]);
        size_t i = 0, j = 0;
        while (i < n || j < m) {
            if (i < n && j < m &&
                expect_line_matches(got->v[g0 + j], w[i]->text) &&
                L[i * cols + j] == L[(i + 1) * cols + j + 1] + 1) {
                i++, j++;
                continue;
            }
            /* a hunk: the expected and printed lines up to the next match */
            size_t i1 = i, j1 = j;
            while (i1 < n || j1 < m) {
                if (i1 < n && j1 < m &&
                    expect_line_matches(got->v[g0 + j1], w[i1]->text) &&
                    L[i1 * cols + j1] == L[(i1 + 1) * cols + j1 + 1] + 1)
                    break;
                if (i1 < n && (j1 == m || L[(i1 + 1) * cols + j1] >=
                                              L[i1 * cols + j1 + 1]))
                    i1++;
                else
                    j1++;
            }
            for (; i < i1 && j < j1; i++, j++)
                mismatch(rp, w[i]->line,
                         "the output differs from this expectation:",
                         w[i]->text, got->v[g0 + j]);
            for (; i < i1; i++)
                mismatch(rp, w[i]->line,
                         "expected this line, but it was not printed:",
                         w[i]->text, NULL);
            for (; j < j1; j++)
                mismatch(rp, got->from[g0 + j],
                         "the statement printed a line that no `# expect:` "
                         "line expects:",
                         NULL, got->v[g0 + j]);
        }
        free(L);
        return;
    }
    size_t i = 0;
    for (; i < n && i < m; i++)
        if (!expect_line_matches(got->v[g0 + i], w[i]->text))
            mismatch(rp, w[i]->line,
                     "the output differs from this expectation:",
                     w[i]->text, got->v[g0 + i]);
    for (; i < n; i++)
        mismatch(rp, w[i]->line,
                 "expected this line, but it was not printed:", w[i]->text,
                 NULL);
    for (; i < m; i++)
        mismatch(rp, got->from[g0 + i],
                 "the statement printed a line that no `# expect:` line "
                 "expects:",
                 NULL, got->v[g0 + i]);
}

/* Errors or warnings (KIND) printed on standard error, against the
 * expectations of that kind. */
static void compare_diags(report_t *rp, const lines_t *got, const wants_t *w,
                          want_kind_t kind)
{
    const char *noun = kind == WANT_ERROR ? "error" : "warning";
    size_t g = 0;
    char what[160];
    for (size_t i = 0; i < w->n; i++) {
        if (w->v[i].kind != kind)
            continue;
        if (g < got->n) {
            if (!diag_line_matches(got->v[g], w->v[i].text)) {
                snprintf(what, sizeof what,
                         "the %s differs from this expectation:", noun);
                mismatch(rp, w->v[i].line, what, w->v[i].text, got->v[g]);
            }
            g++;
        } else {
            snprintf(what, sizeof what, "expected this %s, but none came:",
                     noun);
            mismatch(rp, w->v[i].line, what, w->v[i].text, NULL);
        }
    }
    for (; g < got->n; g++) {
        snprintf(what, sizeof what,
                 "%s %s that no `# expect-%s:` line expects:",
                 kind == WANT_ERROR ? "an" : "a", noun, noun);
        mismatch(rp, 0, what, NULL, got->v[g]);
    }
}

/* Reads PATH whole: its text, or NULL with a message in MSG. */
static char *read_whole(const char *path, size_t *len, char *msg, size_t size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(msg, size, "cannot read '%s': %s", path, strerror(errno));
        return NULL;
    }
    strbuf_t b;
    strbuf_init(&b);
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        strbuf_addn(&b, chunk, n);
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        strbuf_free(&b);
        snprintf(msg, size, "cannot read '%s'", path);
        return NULL;
    }
    *len = b.len;
    if (!b.data)
        strbuf_add(&b, "");
    return strbuf_take(&b);
}

/* The output expectations of W: each block of `# expect:` lines (not
 * parted by code) expects what the statements between the block before
 * it and itself printed, GOT's lines in order; what came after the last
 * block, nothing. */
static void compare_output(report_t *rp, const wants_t *w, const lines_t *got,
                           unsigned stopped_at)
{
    want_t **block = xcalloc(w->n + 1, sizeof *block);
    size_t g = 0, i = 0;
    bool reported_stop = false;
    while (i < w->n) {
        if (w->v[i].kind != WANT_OUT) {
            i++;
            continue;
        }
        size_t n = 0;
        size_t k = i;
        for (; k < w->n; k++) {
            if (w->v[k].kind != WANT_OUT)
                continue;
            if (n && w->v[k].starts_block)
                break;
            block[n++] = &w->v[k];
        }
        i = k;
        unsigned start = block[0]->line;
        size_t g1 = g;
        while (g1 < got->n && got->from[g1] < start)
            g1++;
        if (stopped_at && stopped_at < start && g1 == g) {
            /* not reached: the run stopped at an error before */
            if (!reported_stop) {
                char what[160];
                snprintf(what, sizeof what,
                         "expected this, but the run stopped at the error "
                         "on line %u",
                         stopped_at);
                mismatch(rp, block[0]->line, what, block[0]->text, NULL);
                reported_stop = true;
            }
        } else {
            compare_block(rp, got, g, g1, block, n);
        }
        g = g1;
    }
    compare_block(rp, got, g, got->n, block, 0);
    free(block);
}

/* Checks one file in R's session, whose error stream ERRF is the
 * memstream ERRBUF, ERRLEN.  Returns 0 when it is as expected. */
static int check_file(run_t *r, const char *path, char **errbuf,
                      size_t *errlen, FILE *errf, FILE *out, FILE *report,
                      bool quiet)
{
    size_t len;
    char msg[512];
    char *text = read_whole(path, &len, msg, sizeof msg);
    if (!text) {
        fprintf(report, "nh: %s\n", msg);
        return 1;
    }
    wants_t w = {0};
    read_wants(text, len, &w);
    free(text);

    /* From the file's folder, under its base name, as the tests' driver
     * runs it: its messages read NAME.nh:LINE:COL. */
    const char *slash = strrchr(path, '/');
    int here = -1;
    if (slash) {
        char *dir = xmalloc((size_t)(slash - path) + 2);
        memcpy(dir, path, (size_t)(slash - path) + 1);
        dir[slash - path + 1] = '\0';
        here = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (here < 0 || chdir(dir) != 0) {
            fprintf(report, "nh: cannot run '%s' from its folder: %s\n",
                    path, strerror(errno));
            if (here >= 0)
                close(here);
            free(dir);
            wants_free(&w);
            return 1;
        }
        free(dir);
    }
    fflush(r->out);
    fflush(errf);
    r->mark = *r->len;
    size_t err_mark = *errlen;
    r->npieces = 0;
    r->stopped_at = 0;
    session_run_file(r->s, slash ? slash + 1 : path);
    fflush(errf);
    on_event(r, SESSION_STATEMENT_DONE); /* what is left */
    if (here >= 0) {
        int rc = fchdir(here);
        close(here);
        if (rc != 0) {
            fprintf(report, "nh: cannot return to the working folder: %s\n",
                    strerror(errno));
            wants_free(&w);
            return 1;
        }
    }

    report_t rp = {report, path, 0};
    lines_t got = {0};
    for (size_t p = 0; p < r->npieces;) {
        size_t q = p; /* the pieces of one statement, one text */
        while (q + 1 < r->npieces &&
               r->pieces[q + 1].line == r->pieces[p].line)
            q++;
        lines_split(&got, *r->buf + r->pieces[p].begin,
                    r->pieces[q].end - r->pieces[p].begin, r->pieces[p].line);
        p = q + 1;
    }
    compare_output(&rp, &w, &got, r->stopped_at);
    lines_free(&got);

    /* errors and warnings */
    lines_t all = {0}, errs = {0}, warns = {0};
    lines_split(&all, *errbuf + err_mark, *errlen - err_mark, 0);
    bool want_warnings = false;
    size_t nwant_out = 0;
    for (size_t i = 0; i < w.n; i++) {
        want_warnings |= w.v[i].kind == WANT_WARNING;
        nwant_out += w.v[i].kind == WANT_OUT;
    }
    for (size_t i = 0; i < all.n; i++) {
        if (strstr(all.v[i], ": error: "))
            lines_add(&errs, all.v[i], strlen(all.v[i]), 0);
        else if (strstr(all.v[i], ": warning: "))
            lines_add(&warns, all.v[i], strlen(all.v[i]), 0);
    }
    compare_diags(&rp, &errs, &w, WANT_ERROR);
    if (want_warnings)
        compare_diags(&rp, &warns, &w, WANT_WARNING);
    lines_free(&all);
    lines_free(&errs);
    lines_free(&warns);

    if (rp.mismatches)
        fprintf(report, "%s: %zu mismatch%s\n", path, rp.mismatches,
                rp.mismatches == 1 ? "" : "es");
    else if (!quiet)
        fprintf(out, "%s: as expected (%zu line%s of output)\n", path,
                nwant_out, nwant_out == 1 ? "" : "s");
    wants_free(&w);
    return rp.mismatches ? 1 : 0;
}

int expect_check_files(const char *const *files, size_t nfiles, bool quiet,
                       const char *const *libdirs, size_t nlibdirs,
                       FILE *out, FILE *report)
{
    char *obuf = NULL, *ebuf = NULL;
    size_t olen = 0, elen = 0;
    FILE *of = open_memstream(&obuf, &olen);
    FILE *ef = open_memstream(&ebuf, &elen);
    if (!of || !ef) {
        fprintf(report, "nh: out of memory\n");
        if (of)
            fclose(of);
        if (ef)
            fclose(ef);
        return 1;
    }
    session_t *s = session_new(quiet, of, ef);
    session_set_library_dirs(s, libdirs, nlibdirs);
    run_t r = {s, of, &obuf, &olen, 0, NULL, 0, 0, 0};
    session_set_observer(s, on_event, &r);
    int status = 0;
    for (size_t i = 0; i < nfiles && !session_quit_requested(s); i++)
        status |= check_file(&r, files[i], &ebuf, &elen, ef, out, report,
                             quiet);
    session_free(s);
    fclose(of);
    fclose(ef);
    free(obuf);
    free(ebuf);
    free(r.pieces);
    return status;
}
