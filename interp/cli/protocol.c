/*
 * protocol.c — the machine interface (protocol.h, doc/protocol.md).
 *
 * The session's OUT and ERR are two capture streams (fopencookie) that
 * keep at most PROTOCOL_MAX_OUTPUT bytes each and count the rest.  The
 * session's observer (session_set_observer) is told when a statement
 * ends and when an error is about to be printed; at each, what the
 * captures hold is sent as one message of the kind the statement said it
 * printed (ctx_t.out_kind), and the captures are emptied.  What ERR
 * receives after "an error follows" is the error, whose first line is
 * "FILE:LINE:COL: error: MESSAGE" (LANGUAGE.md §9): the reply gives its
 * place and message apart as well as the whole text with the caret.
 *
 * SIGINT's handler, like the REPL's, needs the session without user
 * data: the interface serving now is kept in one file-static pointer for
 * the duration of protocol_run.
 *
 * Must not: run statements except through session_run_text; write on
 * OUT anything but whole reply lines.
 */
#define _GNU_SOURCE /* fopencookie */
#include "interp/cli/protocol.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "interp/cli/complete.h"
#include "interp/cli/json.h"
#include "interp/base/util.h"
#include "interp/cli/context.h"
#include "lang/parse.h"

static volatile sig_atomic_t proto_running; /* a request runs statements */
static protocol_t *active;                  /* see the file comment */

/* ---- capture streams ---------------------------------------------------- */

typedef struct capture {
    strbuf_t buf;
    size_t dropped; /* bytes past PROTOCOL_MAX_OUTPUT, not kept */
} capture_t;

static ssize_t capture_write(void *cookie, const char *data, size_t n)
{
    capture_t *c = cookie;
    size_t room =
        c->buf.len < PROTOCOL_MAX_OUTPUT ? PROTOCOL_MAX_OUTPUT - c->buf.len : 0;
    size_t keep = n < room ? n : room;
    strbuf_addn(&c->buf, data, keep);
    c->dropped += n - keep;
    return (ssize_t)n;
}

static FILE *capture_open(capture_t *c)
{
    strbuf_init(&c->buf);
    c->dropped = 0;
    cookie_io_functions_t io = {NULL, capture_write, NULL, NULL};
    FILE *f = fopencookie(c, "w", io);
    if (!f)
        nh_out_of_memory();
    return f;
}

static void capture_clear(capture_t *c)
{
    strbuf_free(&c->buf);
    c->dropped = 0;
}

/* ---- the interface ------------------------------------------------------- */

struct protocol {
    session_t *s;
    capture_t out, err;
    FILE *out_f, *err_f; /* the session's streams, into OUT and ERR */
    FILE *reply;         /* where the messages go (protocol_run's OUT) */
    const json_t *id;    /* of the request being served; NULL: null */
    bool error_next;     /* ERR now receives the error */
    unsigned long cells; /* execute requests so far */
};

protocol_t *protocol_new(bool quiet)
{
    protocol_t *p = xcalloc(1, sizeof *p);
    p->out_f = capture_open(&p->out);
    p->err_f = capture_open(&p->err);
    p->s = session_new(quiet, p->out_f, p->err_f);
    /* Plots are SVG text, which the front end shows as a figure. */
    session_ctx(p->s)->svg_plots = true;
    /* and animations an HTML part, which it shows in place */
    session_ctx(p->s)->html_inline = true;
    return p;
}

void protocol_free(protocol_t *p)
{
    if (!p)
        return;
    session_free(p->s);
    fclose(p->out_f);
    fclose(p->err_f);
    capture_clear(&p->out);
    capture_clear(&p->err);
    free(p);
}

session_t *protocol_session(protocol_t *p) { return p->s; }

/* ---- messages -------------------------------------------------------------- */

/* Starts a message: {"id":…, then the caller adds members and ends it
 * with proto_send. */
static void proto_begin(protocol_t *p, strbuf_t *b)
{
    strbuf_init(b);
    strbuf_add(b, "{\"id\":");
    if (p->id)
        json_put_value(b, p->id);
    else
        strbuf_add(b, "null");
}

/* Adds ,"NAME":"VALUE" (VALUE NUL-terminated). */
static void proto_member(strbuf_t *b, const char *name, const char *value)
{
    strbuf_addf(b, ",\"%s\":", name);
    json_put_string(b, value, strlen(value));
}

static void proto_send(protocol_t *p, strbuf_t *b)
{
    strbuf_add(b, "}\n");
    fwrite(b->data, 1, b->len, p->reply);
    fflush(p->reply);
    strbuf_free(b);
}

/* An error reply to a request that could not be served. */
static void proto_reply_error(protocol_t *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void proto_reply_error(protocol_t *p, const char *fmt, ...)
{
    strbuf_t msg;
    strbuf_init(&msg);
    va_list ap;
    va_start(ap, fmt);
    strbuf_vaddf(&msg, fmt, ap);
    va_end(ap);
    strbuf_t b;
    proto_begin(p, &b);
    strbuf_add(&b, ",\"reply\":\"error\",\"message\":");
    json_put_string(&b, msg.data, msg.len);
    strbuf_free(&msg);
    proto_send(p, &b);
}

/* A piece of output of kind KIND ("text", "stderr", …): TEXT, LEN bytes. */
static void proto_output(protocol_t *p, const char *kind, const char *text,
                         size_t len)
{
    strbuf_t b;
    proto_begin(p, &b);
    proto_member(&b, "output", kind);
    strbuf_add(&b, ",\"text\":");
    json_put_string(&b, text, len);
    if (strcmp(kind, "latex") == 0) {
        char *mj = protocol_mathjax(text, len);
        proto_member(&b, "mathjax", mj);
        free(mj);
    }
    ctx_t *c = session_ctx(p->s);
    if (strcmp(kind, "svg") == 0) {
        /* the same plot as PNG and PDF, for what cannot show SVG */
        if (c->plot_png)
            proto_member(&b, "png", c->plot_png);
        if (c->plot_pdf)
            proto_member(&b, "pdf", c->plot_pdf);
    }
    proto_send(p, &b);
}

static void proto_cut_note(protocol_t *p, size_t dropped)
{
    char note[200];
    int n = snprintf(note, sizeof note,
                     "nh: %zu bytes more were printed and are not shown "
                     "(at most %u MiB per statement here); write them to a "
                     "file instead\n",
                     dropped, PROTOCOL_MAX_OUTPUT >> 20);
    proto_output(p, "stderr", note, (size_t)n);
}

/* Sends what the captures hold, OUT as KIND, ERR as "stderr", and
 * empties them.  A cut LaTeX text goes as plain text, a cut SVG image or
 * HTML animation not at all (neither would render). */
static void proto_flush(protocol_t *p, ctx_output_t kind)
{
    fflush(p->out_f);
    fflush(p->err_f);
    if (p->out.buf.len > 0) {
        const char *k = kind == CTX_OUT_LATEX  ? "latex"
                        : kind == CTX_OUT_SVG  ? "svg"
                        : kind == CTX_OUT_HTML ? "html"
                                               : "text";
        if (p->out.dropped > 0)
            k = kind == CTX_OUT_SVG || kind == CTX_OUT_HTML ? NULL : "text";
        if (k)
            proto_output(p, k, p->out.buf.data, p->out.buf.len);
    }
    if (p->out.dropped > 0)
        proto_cut_note(p, p->out.dropped);
    if (p->err.buf.len > 0)
        proto_output(p, "stderr", p->err.buf.data, p->err.buf.len);
    if (p->err.dropped > 0)
        proto_cut_note(p, p->err.dropped);
    capture_clear(&p->out);
    capture_clear(&p->err);
    /* (sent with their SVG, or not at all when it was cut) */
    ctx_t *c = session_ctx(p->s);
    free(c->plot_png);
    free(c->plot_pdf);
    c->plot_png = c->plot_pdf = NULL;
}

static void proto_observe(void *data, session_event_t ev)
{
    protocol_t *p = data;
    proto_flush(p, session_ctx(p->s)->out_kind);
    if (ev == SESSION_ERROR_NEXT)
        p->error_next = true;
}

/* Reads a decimal number of at most 9 digits from [S, E); -1 if none. */
static long proto_decimal(const char *s, const char *e)
{
    if (s >= e || e - s > 9)
        return -1;
    long v = 0;
    for (; s < e; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        v = v * 10 + (*s - '0');
    }
    return v;
}

/* Whether the text [T, M) is a place "FILE:LINE:COL" (FILE not empty);
 * its parts in *FILE_LEN, *LINE, *COL. */
static bool proto_place(const char *t, const char *m, size_t *file_len,
                        long *line, long *col)
{
    const char *c2 = m; /* after the last ':' */
    while (c2 > t && c2[-1] != ':')
        c2--;
    if (c2 == t)
        return false;
    const char *c1 = c2 - 1; /* after the ':' before it */
    while (c1 > t && c1[-1] != ':')
        c1--;
    if (c1 - 1 <= t)
        return false;
    *col = proto_decimal(c2, m);
    *line = proto_decimal(c1, c2 - 1);
    *file_len = (size_t)(c1 - 1 - t);
    return *line > 0 && *col > 0;
}

/* The error the session printed on ERR: its text, and from its first
 * line, "FILE:LINE:COL: error: MESSAGE" or "nh: error: MESSAGE" (no
 * place), the parts.  The mark ": error: " taken is the first with a
 * place before it (a file name or a message may hold the mark too). */
static void proto_error(protocol_t *p)
{
    fflush(p->err_f);
    const char *t = p->err.buf.data ? p->err.buf.data : "";
    size_t len = p->err.buf.len;
    const char *eol = memchr(t, '\n', len);
    const char *end = eol ? eol : t + len;
    static const char mark[] = ": error: ";
    const size_t mlen = sizeof mark - 1;
    const char *m = NULL, *first = NULL;
    size_t file_len = 0;
    long line = 0, col = 0;
    for (const char *q = t; q + mlen <= end && !m; q++)
        if (memcmp(q, mark, mlen) == 0) {
            if (!first)
                first = q;
            if (proto_place(t, q, &file_len, &line, &col))
                m = q;
        }
    const char *msg = m ? m + mlen : first ? first + mlen : t;
    strbuf_t b;
    proto_begin(p, &b);
    proto_member(&b, "output", "error");
    strbuf_add(&b, ",\"text\":");
    json_put_string(&b, t, len);
    strbuf_add(&b, ",\"message\":");
    json_put_string(&b, msg, (size_t)(end - msg));
    if (m) {
        strbuf_add(&b, ",\"file\":");
        json_put_string(&b, t, file_len);
        strbuf_addf(&b, ",\"line\":%ld,\"column\":%ld", line, col);
    } else {
        strbuf_add(&b, ",\"file\":null,\"line\":null,\"column\":null");
    }
    proto_send(p, &b);
    capture_clear(&p->err);
}

/* ---- LaTeX for MathJax -------------------------------------------------- */

static bool proto_starts(const char *s, const char *e, const char *word)
{
    size_t n = strlen(word);
    return (size_t)(e - s) >= n && memcmp(s, word, n) == 0;
}

static bool proto_has(const char *s, const char *e, const char *word)
{
    size_t n = strlen(word);
    for (; (size_t)(e - s) >= n; s++)
        if (memcmp(s, word, n) == 0)
            return true;
    return false;
}

/* The most lines protocol_mathjax puts in one display of a long output. */
#define PROTO_MATHJAX_ROWS 12

/* [S, E) without the white space at its ends, into *S, *E. */
static void proto_trim(const char **s, const char **e)
{
    while (*s < *e && (**s == ' ' || **s == '\n' || **s == '\t' ||
                       **s == '\r'))
        (*s)++;
    while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\n' ||
                       (*e)[-1] == '\t' || (*e)[-1] == '\r'))
        (*e)--;
}

/* Where the next "\begin{align*}" … "\end{align*}" of [S, E) starts and
 * ends (*B, *END after it), or false. */
static bool proto_next_align(const char *s, const char *e, const char **b,
                             const char **end)
{
    static const char ab[] = "\\begin{align*}", ae[] = "\\end{align*}";
    for (const char *p = s; p + (sizeof ab - 1) <= e; p++) {
        if (memcmp(p, ab, sizeof ab - 1) != 0)
            continue;
        for (const char *q = p; q + (sizeof ae - 1) <= e; q++)
            if (memcmp(q, ae, sizeof ae - 1) == 0) {
                *b = p;
                *end = q + sizeof ae - 1;
                return true;
            }
        return false;
    }
    return false;
}

char *protocol_mathjax(const char *latex, size_t len)
{
    const char *s = latex, *e = latex + len;
    proto_trim(&s, &e);
    /* A long output: a group that lets pdflatex break pages
     * ("{\allowdisplaybreaks" … "}"), around several displays (named
     * subexpressions, a worksheet's steps): each display a formula of
     * its own, shown as a display ($$ … $$), one under the other. */
    static const char grp[] = "{\\allowdisplaybreaks";
    if (proto_starts(s, e, grp) && e > s && e[-1] == '}') {
        s += sizeof grp - 1;
        e--;
        strbuf_t b;
        strbuf_init(&b);
        const char *ab, *ae;
        while (proto_next_align(s, e, &ab, &ae)) {
            static const char open[] = "\\begin{align*}",
                              close[] = "\\end{align*}";
            strbuf_add(&b, b.len ? "\n$$\\begin{aligned}\n" : "$$\\begin{aligned}\n");
            /* the lines, without the comments: inside $$ … $$ MathJax
             * reads the display as one line, so that a comment would
             * swallow the rest of it */
            const char *l = ab + sizeof open - 1;
            const char *end = ae - (sizeof close - 1);
            size_t rows = 0;
            while (l < end) {
                const char *nl = memchr(l, '\n', (size_t)(end - l));
                const char *le = nl ? nl : end;
                const char *t = l;
                while (t < le && (*t == ' ' || *t == '\t'))
                    t++;
                l = le + (nl ? 1 : 0);
                if (t == le || *t == '%')
                    continue;
                /* at most PROTO_MATHJAX_ROWS lines a display: MathJax's
                 * automatic line breaking (nbconvert's setting) fails on
                 * a display of hundreds ("Math Processing Error") */
                const char *te = le;
                while (te > t && te[-1] == ' ')
                    te--;
                bool cont = te - t >= 2 && te[-1] == '\\' && te[-2] == '\\';
                if (cont && ++rows % PROTO_MATHJAX_ROWS == 0) {
                    strbuf_addn(&b, t, (size_t)(te - 2 - t));
                    strbuf_add(&b, "\n\\end{aligned}$$\n$$\\begin{aligned}\n");
                    continue;
                }
                strbuf_addn(&b, t, (size_t)(te - t));
                strbuf_add(&b, "\n");
            }
            strbuf_add(&b, "\\end{aligned}$$");
            s = ae;
        }
        return strbuf_take(&b);
    }
    strbuf_t b;
    strbuf_init(&b);
    strbuf_add(&b, "$\\displaystyle ");
    /* A whole align* environment: its rows, aligned in the formula
     * (align* itself cannot stand inside $…$). */
    static const char ab[] = "\\begin{align*}", ae[] = "\\end{align*}";
    if (proto_starts(s, e, ab) && (size_t)(e - s) >= sizeof ab + sizeof ae &&
        memcmp(e - (sizeof ae - 1), ae, sizeof ae - 1) == 0) {
        strbuf_add(&b, "\\begin{aligned}");
        strbuf_addn(&b, s + sizeof ab - 1,
                    (size_t)(e - s) - (sizeof ab - 1) - (sizeof ae - 1));
        strbuf_add(&b, "\\end{aligned}$");
        return strbuf_take(&b);
    }
    if (proto_starts(s, e, "\\begin{")) { /* another environment: as it is */
        strbuf_addn(&b, s, (size_t)(e - s));
        strbuf_add(&b, "$");
        return strbuf_take(&b);
    }
    /* Rows, one a line, each perhaps ending in "\\"; lines starting with
     * '%' are TeX comments (MathJax skips them).  Equations align at
     * "&="; rows with '&' but no "&=" are a matrix's (`show latex mass`). */
    size_t rows = 0;
    bool any_amp = false;
    for (const char *l = s; l < e;) {
        const char *nl = memchr(l, '\n', (size_t)(e - l));
        const char *le = nl ? nl : e;
        if (l < le && *l != '%') {
            rows++;
            any_amp |= memchr(l, '&', (size_t)(le - l)) != NULL;
        }
        l = le + 1;
    }
    bool matrix = any_amp && !proto_has(s, e, "&=");
    if (rows <= 1 && !any_amp) {
        /* One formula; a comment line before it ends with its line. */
        strbuf_addn(&b, s, (size_t)(e - s));
        strbuf_add(&b, "\n$");
        return strbuf_take(&b);
    }
    strbuf_add(&b, matrix ? "\\left[\\begin{matrix}\n" : "\\begin{aligned}\n");
    size_t row = 0;
    for (const char *l = s; l < e;) {
        const char *nl = memchr(l, '\n', (size_t)(e - l));
        const char *le = nl ? nl : e;
        const char *te = le;
        while (te > l && (te[-1] == ' ' || te[-1] == '\r'))
            te--;
        if (l < te && *l == '%') {
            strbuf_addn(&b, l, (size_t)(te - l));
            strbuf_add(&b, "\n");
        } else if (l < te) {
            if (te - l >= 2 && te[-1] == '\\' && te[-2] == '\\')
                te -= 2;
            while (te > l && te[-1] == ' ')
                te--;
            strbuf_addn(&b, l, (size_t)(te - l));
            strbuf_add(&b, ++row < rows ? " \\\\\n" : "\n");
        }
        l = le + 1;
    }
    strbuf_add(&b, matrix ? "\\end{matrix}\\right]$" : "\\end{aligned}$");
    return strbuf_take(&b);
}

/* ---- requests ------------------------------------------------------------- */

/* "a" or "an" before the request kind KIND. */
static const char *proto_article(const char *kind)
{
    return strchr("aeiou", kind[0]) ? "an" : "a";
}

/* Whether every member of request R is one of NAMES (NULL-terminated);
 * else an error reply naming the first that is not. */
static bool proto_members_known(protocol_t *p, const json_t *r,
                                const char *kind, const char *const *names)
{
    for (size_t i = 0; i < r->len; i++) {
        const json_t *k = &r->keys[i];
        bool known = false;
        for (size_t j = 0; names[j] && !known; j++)
            known = strlen(names[j]) == k->len &&
                    memcmp(names[j], k->str, k->len) == 0;
        if (!known) {
            strbuf_t q;
            strbuf_init(&q);
            json_put_string(&q, k->str, k->len);
            proto_reply_error(p, "unknown member %s in %s %s request", q.data,
                              proto_article(kind), kind);
            strbuf_free(&q);
            return false;
        }
    }
    return true;
}

/* The string member "code"; NULL after an error reply. */
static const json_t *proto_code(protocol_t *p, const json_t *r,
                                const char *kind)
{
    const json_t *code = json_get(r, "code");
    if (!code || code->kind != JSON_STRING) {
        proto_reply_error(p, "%s %s request needs \"code\", a string",
                          proto_article(kind), kind);
        return NULL;
    }
    return code;
}

static void proto_execute(protocol_t *p, const json_t *r)
{
    static const char *const names[] = {"request", "id", "code", "cell",
                                        NULL};
    if (!proto_members_known(p, r, "execute", names))
        return;
    const json_t *code = proto_code(p, r, "execute");
    if (!code)
        return;
    size_t cell = p->cells + 1;
    const json_t *c = json_get(r, "cell");
    if (c && !json_get_count(c, 1e9, &cell)) {
        proto_reply_error(p, "\"cell\" must be a whole number from 0 to "
                             "1000000000");
        return;
    }
    p->cells++;
    char name[48];
    snprintf(name, sizeof name, "<cell %zu>", cell);
    p->error_next = false;
    proto_running = 1;
    run_status_t rc =
        session_run_text(p->s, name, code->str, code->len, false);
    proto_running = 0;
    if (p->error_next)
        proto_error(p);
    proto_flush(p, session_ctx(p->s)->out_kind);
    session_clear_interrupt(p->s);
    strbuf_t b;
    proto_begin(p, &b);
    strbuf_addf(&b, ",\"reply\":\"execute\",\"status\":\"%s\",\"quit\":%s",
                rc == RUN_OK ? "ok" : "error",
                session_quit_requested(p->s) ? "true" : "false");
    proto_send(p, &b);
}

static void proto_complete(protocol_t *p, const json_t *r)
{
    static const char *const names[] = {"request", "id", "code", "cursor",
                                        NULL};
    if (!proto_members_known(p, r, "complete", names))
        return;
    const json_t *code = proto_code(p, r, "complete");
    if (!code)
        return;
    size_t cursor = code->len;
    const json_t *c = json_get(r, "cursor");
    if (c && !json_get_count(c, (double)code->len, &cursor)) {
        proto_reply_error(p, "\"cursor\" must be a byte offset from 0 to %zu "
                             "(the length of the code)",
                          code->len);
        return;
    }
    size_t start = cursor;
    while (start > 0 && code->str[start - 1] != '\0' &&
           !strchr(COMPLETE_WORD_BREAKS, code->str[start - 1]))
        start--;
    /* by context (complete.h): sorted, each once, all beginning with the
     * word */
    const char *const *match =
        session_completions(p->s, code->str, start, cursor);
    strbuf_t b;
    proto_begin(p, &b);
    strbuf_add(&b, ",\"reply\":\"complete\",\"matches\":[");
    for (size_t i = 0; match && match[i]; i++) {
        if (i)
            strbuf_add(&b, ",");
        json_put_string(&b, match[i], strlen(match[i]));
    }
    strbuf_addf(&b, "],\"cursor_start\":%zu,\"cursor_end\":%zu", start,
                cursor);
    proto_send(p, &b);
}

static void proto_is_complete(protocol_t *p, const json_t *r)
{
    static const char *const names[] = {"request", "id", "code", NULL};
    if (!proto_members_known(p, r, "is_complete", names))
        return;
    const json_t *code = proto_code(p, r, "is_complete");
    if (!code)
        return;
    /* Parsed apart, in a set of its own: asking is not running, and the
     * session keeps no text for it. */
    source_set_t *set = source_set_new();
    uint32_t file = source_add(set, "<cell>", code->str, code->len);
    ast_arena_t *arena = ast_arena_new();
    ast_program_t prog;
    diag_t err = {0};
    parse_status_t ps = parse_program(set, file, arena, &prog, &err);
    ast_arena_free(arena);
    source_set_free(set);
    strbuf_t b;
    proto_begin(p, &b);
    strbuf_addf(&b, ",\"reply\":\"is_complete\",\"status\":\"%s\"",
                ps == PARSE_OK           ? "complete"
                : ps == PARSE_INCOMPLETE ? "incomplete"
                                         : "invalid");
    proto_send(p, &b);
}

static void proto_info(protocol_t *p, const json_t *r)
{
    static const char *const names[] = {"request", "id", NULL};
    if (!proto_members_known(p, r, "info", names))
        return;
    strbuf_t b;
    proto_begin(p, &b);
    strbuf_addf(&b, ",\"reply\":\"info\",\"protocol\":%d", PROTOCOL_VERSION);
    proto_member(&b, "implementation", "nh");
    proto_member(&b, "version", PACKAGE_VERSION);
    proto_member(&b, "language", "nh");
    proto_member(&b, "file_extension", ".nh");
    proto_member(&b, "mimetype", "text/x-nh");
    char banner[160];
    snprintf(banner, sizeof banner,
             "nh %s: nonholonomic mechanics.  `help` for help.",
             PACKAGE_VERSION);
    proto_member(&b, "banner", banner);
    proto_send(p, &b);
}

/* Serves the request on LINE (LEN bytes).  Returns false when nh should
 * end (shutdown). */
static bool proto_serve(protocol_t *p, const char *line, size_t len)
{
    char msg[160];
    json_t *r = json_parse(line, len, msg, sizeof msg);
    p->id = NULL;
    if (!r) {
        proto_reply_error(p, "malformed request: %s", msg);
        return true;
    }
    bool go_on = true;
    const json_t *id = json_get(r, "id");
    const json_t *kind = json_get(r, "request");
    bool id_ok = !id || id->kind == JSON_NUMBER || id->kind == JSON_STRING ||
                 id->kind == JSON_NULL;
    if (id_ok)
        p->id = id; /* echoed from here on */
    if (r->kind != JSON_OBJECT) {
        proto_reply_error(p, "a request is a JSON object");
    } else if (!id_ok) {
        proto_reply_error(p, "\"id\" must be a number, a string or null");
    } else if (!kind || kind->kind != JSON_STRING) {
        proto_reply_error(p, "a request needs \"request\", a string: "
                             "execute, complete, is_complete, info or "
                             "shutdown");
    } else if (strcmp(kind->str, "execute") == 0) {
        proto_execute(p, r);
        go_on = !session_quit_requested(p->s);
    } else if (strcmp(kind->str, "complete") == 0) {
        proto_complete(p, r);
    } else if (strcmp(kind->str, "is_complete") == 0) {
        proto_is_complete(p, r);
    } else if (strcmp(kind->str, "info") == 0) {
        proto_info(p, r);
    } else if (strcmp(kind->str, "shutdown") == 0) {
        static const char *const names[] = {"request", "id", NULL};
        if (proto_members_known(p, r, "shutdown", names)) {
            strbuf_t b;
            proto_begin(p, &b);
            strbuf_add(&b, ",\"reply\":\"shutdown\"");
            proto_send(p, &b);
            go_on = false;
        }
    } else {
        strbuf_t q;
        strbuf_init(&q);
        json_put_string(&q, kind->str, kind->len);
        proto_reply_error(p, "unknown request %s: execute, complete, "
                             "is_complete, info or shutdown",
                          q.data);
        strbuf_free(&q);
    }
    p->id = NULL;
    json_free(r);
    return go_on;
}

/* ---- the loop ----------------------------------------------------------- */

typedef struct proto_reader {
    int fd;
    char buf[65536];
    size_t pos, end;
    bool eof;
} proto_reader_t;

/* The next line into *LINE (emptied first, without its '\n'): 1, or 0 at
 * the end of the input, or -1 when the line is longer than
 * PROTOCOL_MAX_REQUEST (read to its end, not kept). */
static int proto_read_line(proto_reader_t *rd, strbuf_t *line)
{
    strbuf_free(line);
    bool any = false, too_long = false;
    for (;;) {
        if (rd->pos == rd->end) {
            if (rd->eof)
                return too_long ? -1 : any ? 1 : 0;
            ssize_t n = read(rd->fd, rd->buf, sizeof rd->buf);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                rd->eof = true;
                continue;
            }
            rd->pos = 0;
            rd->end = (size_t)n;
        }
        any = true;
        char *s = rd->buf + rd->pos;
        char *nl = memchr(s, '\n', rd->end - rd->pos);
        size_t n = nl ? (size_t)(nl - s) : rd->end - rd->pos;
        if (!too_long && line->len + n > PROTOCOL_MAX_REQUEST) {
            too_long = true;
            strbuf_free(line);
        }
        if (!too_long)
            strbuf_addn(line, s, n);
        rd->pos += n + (nl ? 1 : 0);
        if (nl)
            return too_long ? -1 : 1;
    }
}

static void proto_on_sigint(int sig)
{
    if (!active || !proto_running)
        return; /* between requests: nothing to stop */
    if (!session_interrupted(active->s)) {
        session_interrupt(active->s);
        return;
    }
    signal(sig, SIG_DFL); /* the second: end nh, as in the REPL */
    raise(sig);
}

static bool proto_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return false;
    return true;
}

int protocol_run(protocol_t *p, int in, FILE *out)
{
    p->reply = out;
    session_set_observer(p->s, proto_observe, p);
    /* a statement's file must not be the channel itself: its text would
     * enter the replies (ctx_check_output) */
    ctx_t *cx = session_ctx(p->s);
    cx->channel_fd[0] = in;
    cx->channel_fd[1] = fileno(out);
    active = p;
    struct sigaction sa, old_sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = proto_on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, &old_sa);

    proto_reader_t *rd = xcalloc(1, sizeof *rd);
    rd->fd = in;
    strbuf_t line;
    strbuf_init(&line);
    int got;
    while ((got = proto_read_line(rd, &line)) != 0) {
        if (got < 0) {
            proto_reply_error(p, "request longer than %u MiB",
                              PROTOCOL_MAX_REQUEST >> 20);
            continue;
        }
        if (proto_blank(line.data, line.len))
            continue;
        if (!proto_serve(p, line.data, line.len))
            break;
    }
    strbuf_free(&line);
    free(rd);
    sigaction(SIGINT, &old_sa, NULL);
    active = NULL;
    cx->channel_fd[0] = cx->channel_fd[1] = -1;
    session_set_observer(p->s, NULL, NULL);
    return 0;
}
