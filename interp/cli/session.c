/*
 * session.c — a session (session.h): its texts and their arenas, the
 * files it loads and the modules it imports, statements read a line at a
 * time, and the running of statements, each through the statement table
 * (table.h) on the session's context (context.h).  load, import, quit and
 * exit act on the session itself and are run here; so does `> "file"`,
 * which every printing statement takes (LANGUAGE.md §7).
 *
 * Memory (LANGUAGE.md §9: a long session uses memory in proportion to its
 * model, not to the lines typed).  Each text run is parsed into an arena
 * of its own.  The model points into the arenas of the declarations it
 * holds (doc/architecture.md, "A lowering layer"); every other text —
 * a `print`, a declaration since replaced — is garbage once it has run.
 * session_collect frees those arenas and their texts when their number
 * has doubled since the last collection, so the work stays linear in the
 * statements run and the memory in the model.
 *
 * Must not: print except through the session's streams; exit(); call a
 * statement module except through the table.
 */
#include "interp/cli/session.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "interp/base/outfile.h"
#include "interp/base/util.h"
#include "interp/cli/complete.h"
#include "interp/cli/context.h"
#include "interp/cli/table.h"
#include "lang/parse.h"

#define SESSION_MAX_LOAD_DEPTH 16
/* The largest file. */
#define SESSION_MAX_TEXT (64u << 20)
/* The largest statement read a line at a time (the REPL, `nh -`): its
 * lines are kept until it ends, and its parse takes some fifty times its
 * size; a longer one belongs in a file. */
#define SESSION_MAX_STATEMENT (1u << 20)
/* Collect unused texts once this many are kept (and then when their
 * number has doubled). */
#define SESSION_COLLECT_MIN 64
/* A lowering's graph also keeps the nodes of every expression printed
 * since it was built; past twice its size then plus this many, it is
 * rebuilt (session_trim). */
#define SESSION_GRAPH_SLACK 200000

/* A text that ran, and the arena of its parse. */
typedef struct session_text {
    uint32_t file;
    ast_arena_t *arena;
} session_text_t;

/* A stream of texts whose lines are numbered on from text to text: the
 * REPL's statements, a notebook's cells, `nh -`. */
typedef struct session_stream {
    char *name;
    unsigned next_line;
} session_stream_t;

struct session {
    ctx_t ctx;           /* what the statements see */
    source_set_t *src;   /* the texts read so far */
    session_text_t *texts; /* the texts that ran, with their arenas */
    size_t ntexts, cap_texts;
    size_t collect_at;   /* session_collect runs at this many texts */
    session_stream_t *streams;
    size_t nstreams;
    /* The lowering as last seen by session_trim, and its graph's size. */
    const void *trim_lw, *trim_eom;
    unsigned long trim_generation;
    size_t trim_base;

    bool quit;
    double time_limit; /* seconds per session_run_text; 0: none */
    unsigned load_depth;
    src_span_t top_stmt; /* the top-level statement running (SRC_SPAN_NONE) */
    char **imported; /* modules already imported */
    size_t nimported;
    char **libdirs;
    size_t nlibdirs;
    complete_list_t completions; /* the last session_completions */
    session_observer_fn observer;
    void *observer_data;
};

/* ---- life cycle ------------------------------------------------------ */

session_t *session_new(bool quiet, FILE *out, FILE *err)
{
    session_t *s = xcalloc(1, sizeof *s);
    s->src = source_set_new();
    s->collect_at = SESSION_COLLECT_MIN;
    s->top_stmt = SRC_SPAN_NONE;
    ctx_init(&s->ctx, s->src, quiet, out, err);
    s->ctx.lookup = stmt_lookup;
    return s;
}

void session_free(session_t *s)
{
    if (!s)
        return;
    ctx_free(&s->ctx);
    for (size_t i = 0; i < s->ntexts; i++)
        ast_arena_free(s->texts[i].arena);
    free(s->texts);
    for (size_t i = 0; i < s->nstreams; i++)
        free(s->streams[i].name);
    free(s->streams);
    for (size_t i = 0; i < s->nimported; i++)
        free(s->imported[i]);
    free(s->imported);
    for (size_t i = 0; i < s->nlibdirs; i++)
        free(s->libdirs[i]);
    free(s->libdirs);
    complete_list_free(&s->completions);
    source_set_free(s->src);
    free(s);
}

bool session_quit_requested(const session_t *s) { return s->quit; }

void session_set_observer(session_t *s, session_observer_fn fn, void *data)
{
    s->observer = fn;
    s->observer_data = data;
}

/* Tells the observer of EV, OUT flushed first so that it can take what
 * was printed. */
static void session_notify(session_t *s, session_event_t ev)
{
    fflush(s->ctx.out);
    if (s->observer)
        s->observer(s->observer_data, ev);
}

/* Prints the error ERR on ERR, the observer told first. */
static void session_report(session_t *s, const diag_t *err)
{
    session_notify(s, SESSION_ERROR_NEXT);
    diag_print(s->ctx.err, s->src, err);
}

void session_interrupt(session_t *s) { s->ctx.stop.raised = 1; }

void session_set_time_limit(session_t *s, double seconds)
{
    s->time_limit = seconds > 0.0 ? seconds : 0.0;
}

void session_set_threads(session_t *s, unsigned threads)
{
    s->ctx.threads = threads ? threads : 1;
}

void session_set_shard(session_t *s, unsigned k, unsigned n)
{
    s->ctx.shard_k = k;
    s->ctx.shard_n = n;
}

bool session_interrupted(const session_t *s) { return s->ctx.stop.raised != 0; }

void session_clear_interrupt(session_t *s) { s->ctx.stop.raised = 0; }

void session_set_library_dirs(session_t *s, const char *const *dirs, size_t n)
{
    for (size_t i = 0; i < s->nlibdirs; i++)
        free(s->libdirs[i]);
    free(s->libdirs);
    s->libdirs = xcalloc(n + 1, sizeof *s->libdirs);
    for (size_t i = 0; i < n; i++)
        s->libdirs[i] = xstrdup(dirs[i]);
    s->nlibdirs = n;
}

/* ---- files ----------------------------------------------------------- */

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return xstrdup(".");
    size_t n = (size_t)(slash - path);
    char *d = xmalloc(n + 2);
    memcpy(d, path, n ? n : 1);
    d[n ? n : 1] = '\0';
    return d;
}

/* Reads a whole file of at most SESSION_MAX_TEXT bytes; -1 with a
 * message in MSG on failure.  With FILES_ONLY (load, import) anything but
 * a regular file is refused: opening a FIFO blocks until something writes
 * to it, and a device may never end.  A file named on the command line
 * may be a pipe or a device (`nh <(make-model)`), read up to the limit. */
static int read_file(const char *path, bool files_only, char **text,
                     size_t *len, char *msg, size_t size)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        snprintf(msg, size, "cannot read '%s': %s", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(sb.st_mode)) {
        snprintf(msg, size, "'%s' is a directory, not a script", path);
        return -1;
    }
    if (files_only && !S_ISREG(sb.st_mode)) {
        snprintf(msg, size,
                 "'%s' is not a regular file: load and import read files, "
                 "not FIFOs or devices",
                 path);
        return -1;
    }
    if (S_ISREG(sb.st_mode) && (uintmax_t)sb.st_size > SESSION_MAX_TEXT) {
        snprintf(msg, size, "'%s' is larger than 64 MiB", path);
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(msg, size, "cannot read '%s': %s", path, strerror(errno));
        return -1;
    }
    strbuf_t b;
    strbuf_init(&b);
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        strbuf_addn(&b, chunk, n);
        if (b.len > SESSION_MAX_TEXT) {
            fclose(f);
            strbuf_free(&b);
            snprintf(msg, size, "'%s' is larger than 64 MiB", path);
            return -1;
        }
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        strbuf_free(&b);
        snprintf(msg, size, "cannot read '%s'", path);
        return -1;
    }
    *len = b.len;
    *text = strbuf_take(&b);
    return 0;
}

static run_status_t run_source(session_t *s, uint32_t file,
                               bool allow_incomplete);

static int run_path(session_t *s, const char *path, src_span_t at,
                    diag_t *err)
{
    if (s->load_depth >= SESSION_MAX_LOAD_DEPTH)
        return diag_error(err, at,
                          "files load each other more than %d deep (a load "
                          "cycle?)",
                          SESSION_MAX_LOAD_DEPTH);
    char *text;
    size_t len;
    char msg[512];
    if (read_file(path, true, &text, &len, msg, sizeof msg) != 0)
        return diag_error(err, at, "%s", msg);
    uint32_t file = source_add(s->src, path, text, len);
    free(text);
    s->load_depth++;
    run_status_t rc = run_source(s, file, false);
    s->load_depth--;
    /* The inner error was reported where it happened. */
    return rc == RUN_OK ? 0 : 1;
}

/* A relative path of `load` is taken from the directory of the file that
 * says it (the working directory for the REPL and -e). */
static char *resolve_path(const session_t *s, src_span_t at, const char *path)
{
    if (path[0] == '/' || at.file == SRC_NO_FILE)
        return xstrdup(path);
    const char *from = source_name(s->src, at.file);
    if (from[0] == '<')
        return xstrdup(path);
    char *dir = dir_of(from);
    size_t n = strlen(dir) + strlen(path) + 2;
    char *full = xmalloc(n);
    snprintf(full, n, "%s/%s", dir, path);
    free(dir);
    return full;
}

static int exec_load(session_t *s, const ast_stmt_t *st, diag_t *err)
{
    char *path = resolve_path(s, st->u.path.span, st->u.path.path);
    int rc = run_path(s, path, st->u.path.span, err);
    free(path);
    return rc;
}

static int exec_import(session_t *s, const ast_stmt_t *st, diag_t *err)
{
    const char *name = st->u.path.path;
    if (!*name || strchr(name, '/') || strcmp(name, "..") == 0)
        return diag_error(err, st->u.path.span,
                          "import takes a module name like \"euler\", not a "
                          "path; use load for files");
    for (size_t i = 0; i < s->nimported; i++)
        if (strcmp(s->imported[i], name) == 0)
            return 0; /* a module runs once per session */
    strbuf_t dirs;
    strbuf_init(&dirs);
    const char *env = getenv("NH_PATH");
    if (env && *env)
        strbuf_add(&dirs, env);
    for (size_t i = 0; i < s->nlibdirs; i++) {
        if (dirs.len)
            strbuf_add(&dirs, ":");
        strbuf_add(&dirs, s->libdirs[i]);
    }
    char *list = strbuf_take(&dirs);
    char *save = NULL;
    int rc = -2;
    for (char *d = strtok_r(list, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        size_t n = strlen(d) + strlen(name) + 8;
        char *path = xmalloc(n);
        snprintf(path, n, "%s/%s.nh", d, name);
        struct stat sb;
        if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
            s->imported = xrealloc(s->imported,
                                   (s->nimported + 1) * sizeof *s->imported);
            s->imported[s->nimported++] = xstrdup(name);
            rc = run_path(s, path, st->u.path.span, err);
            if (rc != 0)
                free(s->imported[--s->nimported]);
            free(path);
            break;
        }
        free(path);
    }
    free(list);
    if (rc == -2) {
        /* every place searched, in order (issue 24) */
        strbuf_t where;
        strbuf_init(&where);
        strbuf_addf(&where, "NH_PATH (%s)",
                    env && *env ? env : "not set");
        for (size_t i = 0; i < s->nlibdirs; i++)
            strbuf_addf(&where, "%s%s", i + 1 < s->nlibdirs ? ", " : " and ",
                        s->libdirs[i]);
        rc = diag_error(err, st->u.path.span,
                        "no module '%s' in the library: no %s.nh in %s", name,
                        name, where.data);
        strbuf_free(&where);
    }
    return rc;
}

/* ---- running --------------------------------------------------------- */

static int not_yet(const ast_stmt_t *st, diag_t *err)
{
    return diag_error(err, st->span, "%s is not available yet",
                      ast_stmt_keyword(st->kind));
}

/* The errno value of a write to F that failed since the last call, or 0;
 * what could not be written is dropped and the error cleared, so that
 * the next statement starts afresh (a REPL whose disk filled up goes on
 * once there is room). */
static int stream_error(FILE *f)
{
    int e = outfile_flush_error(f);
    if (e) {
        __fpurge(f);
        clearerr(f);
    }
    return e;
}

/* Runs ST with its output in the file it names (`> "file"`, LANGUAGE.md
 * §7): the statement writes to a temporary file beside it, which takes
 * the file's place only when the statement succeeded and every byte was
 * written (outfile.h); otherwise an existing file stays as it was. */
static int exec_to_file(session_t *s, stmt_fn run, const ast_stmt_t *st,
                        diag_t *err)
{
    const ast_ident_t *to = &st->to_file;
    outfile_t of;
    if (ctx_open_output(&s->ctx, &of, to->name, false, to->span, err) != 0)
        return -1;
    FILE *out = s->ctx.out;
    s->ctx.out = of.f;
    int rc = run(&s->ctx, st, err);
    s->ctx.out = out;
    if (rc != 0) {
        outfile_abort(&of);
        return rc;
    }
    int e = outfile_commit(&of);
    if (e)
        return diag_error(err, to->span, "cannot write '%s': %s", to->name,
                          outfile_strerror(e));
    return 0;
}

static int exec_stmt(session_t *s, const ast_stmt_t *st, diag_t *err)
{
    switch (st->kind) {
    case STMT_LOAD: return exec_load(s, st, err);
    case STMT_IMPORT: return exec_import(s, st, err);
    case STMT_QUIT:
    case STMT_EXIT: s->quit = true; return 0;
    default: break;
    }
    stmt_fn run = stmt_lookup(st->kind);
    if (!run)
        return not_yet(st, err);
    /* LANGUAGE.md §4: components dropped where the motion is now */
    ctx_drops_refresh(&s->ctx, NULL);
    if (st->to_file.name && !stmt_names_own_file(st->kind))
        return exec_to_file(s, run, st, err);
    int rc = run(&s->ctx, st, err);
    /* LANGUAGE.md §7: a write error on standard output (a full disk) is
     * an error too.  What the statement did stays done: the error says
     * that its output was lost. */
    int e = stream_error(s->ctx.out);
    if (e && rc == 0)
        rc = diag_error(err, st->span, "cannot write %s: %s",
                        s->ctx.out == stdout ? "to standard output"
                                             : "the output",
                        strerror(e));
    return rc;
}

/* Keeps the arena of a text that ran (session_collect frees it). */
static void keep_text(session_t *s, uint32_t file, ast_arena_t *arena)
{
    xgrow(&s->texts, &s->cap_texts, s->ntexts + 1, sizeof *s->texts);
    s->texts[s->ntexts++] = (session_text_t){file, arena};
}

static run_status_t run_source(session_t *s, uint32_t file,
                               bool allow_incomplete)
{
    ast_arena_t *arena = ast_arena_new();
    ast_program_t prog;
    diag_t err = {0};
    parse_status_t ps = parse_program(s->src, file, arena, &prog, &err);
    if (ps == PARSE_INCOMPLETE && allow_incomplete) {
        ast_arena_free(arena);
        source_release(s->src, file);
        return RUN_INCOMPLETE;
    }
    if (ps != PARSE_OK) {
        session_report(s, &err);
        ast_arena_free(arena);
        source_release(s->src, file); /* nothing ran: nothing points in */
        return RUN_ERROR;
    }
    keep_text(s, file, arena);
    bool top = s->load_depth == 0;
    run_status_t status = RUN_OK;
    for (size_t i = 0; i < prog.n && !s->quit; i++) {
        diag_clear(&err);
        s->ctx.arena = arena;
        s->ctx.out_kind = CTX_OUT_TEXT;
        if (top)
            s->top_stmt = prog.stmts[i]->span;
        /* Ctrl-C during a statement that does not look for it (show,
         * check, …) stops the text before the next one (doc/language.md);
         * the time limit stays with the statements that look */
        int rc = s->ctx.stop.raised
                     ? diag_error(&err, prog.stmts[i]->span,
                                  "interrupted before this statement, which "
                                  "did not run, nor did any after it")
                     : exec_stmt(s, prog.stmts[i], &err);
        s->ctx.arena = NULL;
        fflush(s->ctx.out);
        if (rc != 0) {
            if (err.set) /* else it was reported deeper (a loaded file) */
                session_report(s, &err);
            /* A failed statement may have grown the graph (an expression
             * too large): drop the lowering, rebuilt when next needed. */
            ctx_drop_large_lowering(&s->ctx);
            status = RUN_ERROR;
            break;
        }
        session_notify(s, SESSION_STATEMENT_DONE);
    }
    if (top)
        s->top_stmt = SRC_SPAN_NONE;
    return status;
}

/* Frees the texts and arenas that nothing refers to any more: those the
 * model has no span in (model_mark_files).  Only between top-level texts
 * (none is running), and only when their number has doubled since the
 * last time, so that each text costs O(1) amortised. */
static void session_collect(session_t *s)
{
    if (s->load_depth > 0 || s->ntexts < s->collect_at)
        return;
    ctx_t *c = &s->ctx;
    /* A lowering of an older model may point into its texts. */
    if (c->lw && c->lw_generation != c->model.generation)
        ctx_drop_lowering(c);
    size_t n = source_slots(s->src);
    bool *used = xcalloc(n + 1, sizeof *used);
    model_mark_files(&c->model, used, n);
    size_t k = 0;
    for (size_t i = 0; i < s->ntexts; i++) {
        session_text_t t = s->texts[i];
        if (t.file < n && used[t.file]) {
            s->texts[k++] = t;
        } else {
            ast_arena_free(t.arena);
            source_release(s->src, t.file);
        }
    }
    free(used);
    s->ntexts = k;
    s->collect_at = 2 * k > SESSION_COLLECT_MIN ? 2 * k : SESSION_COLLECT_MIN;
}

/* The lowering's graph keeps every node made in it, also those of each
 * expression a statement printed: after a million different `print`s,
 * most of it.  When it has grown to twice its size when last built plus
 * SESSION_GRAPH_SLACK nodes, it is dropped and rebuilt when next needed
 * (lowering is microseconds; the equations are derived again), so its
 * size follows the model, not the statements typed.  The size is taken
 * afresh whenever the lowering or the equations were rebuilt. */
static void session_trim(session_t *s)
{
    ctx_t *c = &s->ctx;
    if (s->load_depth > 0 || !c->lw)
        return;
    size_t nodes = expr_graph_count(lower_graph(c->lw));
    if (c->lw != s->trim_lw || c->eom != s->trim_eom ||
        c->lw_generation != s->trim_generation) {
        s->trim_lw = c->lw;
        s->trim_eom = c->eom;
        s->trim_generation = c->lw_generation;
        s->trim_base = nodes;
        return;
    }
    if (nodes > 2 * s->trim_base + SESSION_GRAPH_SLACK) {
        ctx_drop_lowering(c);
        s->trim_lw = s->trim_eom = NULL;
    }
}

/* Runs the text FILE of the set at the top level or from `load`, then
 * tidies up after it at the top level. */
static run_status_t run_added(session_t *s, uint32_t file,
                              bool allow_incomplete)
{
    if (s->load_depth == 0) {
        s->ctx.stop.raised = 0;
        s->ctx.stop.deadline =
            s->time_limit > 0.0 ? nh_clock() + s->time_limit : 0.0;
    }
    run_status_t rc = run_source(s, file, allow_incomplete);
    session_trim(s);
    session_collect(s);
    return rc;
}

run_status_t session_run_text(session_t *s, const char *name,
                              const char *text, size_t len,
                              bool allow_incomplete)
{
    return run_added(s, source_add(s->src, name, text, len),
                     allow_incomplete);
}

static session_stream_t *stream_of(session_t *s, const char *name)
{
    for (size_t i = 0; i < s->nstreams; i++)
        if (strcmp(s->streams[i].name, name) == 0)
            return &s->streams[i];
    s->streams = xrealloc(s->streams, (s->nstreams + 1) * sizeof *s->streams);
    session_stream_t *st = &s->streams[s->nstreams++];
    st->name = xstrdup(name);
    st->next_line = 1;
    return st;
}

run_status_t session_run_lines(session_t *s, const char *name,
                               const char *text, size_t len,
                               bool allow_incomplete)
{
    session_stream_t *st = stream_of(s, name);
    uint32_t file = source_add_at(s->src, name, st->next_line, text, len);
    unsigned lines = source_line_count(s->src, file);
    run_status_t rc = run_added(s, file, allow_incomplete);
    if (rc != RUN_INCOMPLETE) /* an unfinished text is offered again */
        stream_of(s, name)->next_line += lines;
    return rc;
}

void session_skip_lines(session_t *s, const char *name, unsigned n)
{
    stream_of(s, name)->next_line += n;
}

void session_memory(const session_t *s, size_t *texts, size_t *arenas)
{
    if (texts)
        *texts = source_live(s->src);
    if (arenas)
        *arenas = s->ntexts;
}

/* ---- statements read a line at a time ---------------------------------- */

struct session_reader {
    session_t *s;
    char *name;         /* the stream: "<repl>", "<stdin>" */
    bool repl;          /* an empty line ends an open statement */
    strbuf_t pending;   /* the lines of the statement being read */
    unsigned lines;     /* how many */
    parse_lines_t scan; /* where the pending text stands */
    size_t parsed;      /* its length when last parsed */
};

session_reader_t *session_reader_new(session_t *s, const char *name,
                                     bool repl)
{
    session_reader_t *r = xcalloc(1, sizeof *r);
    r->s = s;
    r->name = xstrdup(name);
    r->repl = repl;
    strbuf_init(&r->pending);
    return r;
}

void session_reader_free(session_reader_t *r)
{
    if (!r)
        return;
    strbuf_free(&r->pending);
    free(r->name);
    free(r);
}

static void reader_reset(session_reader_t *r)
{
    r->pending.len = 0;
    if (r->pending.data)
        r->pending.data[0] = '\0';
    r->lines = 0;
    r->parsed = 0;
    memset(&r->scan, 0, sizeof r->scan);
}

bool session_reader_open(const session_reader_t *r) { return r->lines > 0; }

const char *session_reader_text(const session_reader_t *r)
{
    return r->lines > 0 && r->pending.data ? r->pending.data : "";
}

void session_reader_drop(session_reader_t *r)
{
    session_skip_lines(r->s, r->name, r->lines);
    reader_reset(r);
}

/* Runs the pending text; keeps it when it is unfinished and ALLOW_INCOMPLETE. */
static run_status_t reader_run(session_reader_t *r, bool allow_incomplete)
{
    run_status_t rc = session_run_lines(r->s, r->name, r->pending.data,
                                        r->pending.len, allow_incomplete);
    if (rc != RUN_INCOMPLETE)
        reader_reset(r);
    return rc;
}

static bool is_blank(const char *line, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
            return false;
    return true;
}

/* The error for a statement longer than SESSION_MAX_STATEMENT, at its
 * first line; the lines read of it are dropped. */
static run_status_t reader_too_long(session_reader_t *r)
{
    session_t *s = r->s;
    const char *text = r->pending.data;
    const char *nl = memchr(text, '\n', r->pending.len);
    size_t first = nl ? (size_t)(nl - text) + 1 : r->pending.len;
    if (first > PARSE_MAX_LINE)
        first = PARSE_MAX_LINE;
    session_stream_t *st = stream_of(s, r->name);
    uint32_t file = source_add_at(s->src, r->name, st->next_line, text, first);
    diag_t err = {0};
    diag_error(&err, (src_span_t){file, 0, 0},
               "a statement longer than 1 MiB: put it in a file and "
               "`load` it, or split it with `let`");
    fflush(s->ctx.out);
    diag_print(s->ctx.err, s->src, &err);
    source_release(s->src, file);
    session_reader_drop(r);
    return RUN_ERROR;
}

run_status_t session_reader_line(session_reader_t *r, const char *line,
                                 size_t len)
{
    if (r->lines == 0 && is_blank(line, len)) {
        session_skip_lines(r->s, r->name, 1);
        return RUN_OK;
    }
    if (r->repl && r->lines > 0 && is_blank(line, len)) {
        /* doc/language.md: in the REPL an empty line ends a statement
         * left open, which is then reported (at its open bracket). */
        strbuf_add(&r->pending, "\n");
        r->lines++;
        return reader_run(r, false);
    }
    size_t at = r->pending.len;
    strbuf_addn(&r->pending, line, len);
    strbuf_add(&r->pending, "\n");
    r->lines++;
    if (r->pending.len > SESSION_MAX_STATEMENT)
        return reader_too_long(r);
    /* Parse only when a statement may have ended, or to find an early
     * syntax error: at each line while the statement is short (as typed
     * by hand), then each time it has doubled since the last parse — so
     * a long one costs a few parses of its length, not one per line. */
    bool open = parse_lines_open(&r->scan, r->pending.data + at,
                                 r->pending.len - at);
    if (open && r->pending.len > 4096 && r->pending.len < 2 * r->parsed)
        return RUN_INCOMPLETE;
    r->parsed = r->pending.len;
    return reader_run(r, true);
}

run_status_t session_reader_end(session_reader_t *r)
{
    if (r->lines == 0)
        return RUN_OK;
    return reader_run(r, false);
}

run_status_t session_run_stream(session_t *s, FILE *in, const char *name,
                                bool repl)
{
    session_reader_t *r = session_reader_new(s, name, repl);
    strbuf_t line;
    strbuf_init(&line);
    bool failed = false;
    run_status_t rc = RUN_OK;
    while (!session_quit_requested(s) && !(failed && !repl)) {
        /* One line, of at most PARSE_MAX_LINE + 1 bytes: a longer one is
         * run as soon as it is that long, so that the parse reports it
         * even when the line never ends, and the rest is skipped. */
        int c;
        bool any = false, cut = false;
        line.len = 0;
        while ((c = getc_unlocked(in)) != EOF && c != '\n') {
            any = true;
            if (cut)
                continue;
            char ch = (char)c;
            strbuf_addn(&line, &ch, 1);
            if (line.len > PARSE_MAX_LINE) {
                cut = true;
                rc = session_reader_line(r, line.data, line.len);
                failed |= rc == RUN_ERROR;
                if (failed && !repl)
                    break; /* a script stops at its first error */
            }
        }
        if ((c == EOF && !any) || (failed && !repl))
            break;
        if (!cut) {
            rc = session_reader_line(r, line.data ? line.data : "", line.len);
            failed |= rc == RUN_ERROR;
        }
        if (c == EOF)
            break;
    }
    if (!session_quit_requested(s) && !(failed && !repl))
        failed |= session_reader_end(r) == RUN_ERROR;
    strbuf_free(&line);
    session_reader_free(r);
    return failed ? RUN_ERROR : RUN_OK;
}

run_status_t session_run_file(session_t *s, const char *path)
{
    if (strcmp(path, "-") == 0) /* statements run as they come */
        return session_run_stream(s, stdin, "<stdin>", false);
    char *text;
    size_t len;
    char msg[512];
    if (read_file(path, false, &text, &len, msg, sizeof msg) != 0) {
        diag_t err = {0};
        diag_error(&err, SRC_SPAN_NONE, "%s", msg);
        session_report(s, &err);
        return RUN_ERROR;
    }
    run_status_t rc = session_run_text(s, path, text, len, false);
    free(text);
    return rc;
}

const char *const *session_completions(session_t *s, const char *text,
                                       size_t start, size_t end)
{
    complete_list_free(&s->completions);
    s->completions = complete_names(&s->ctx, (const char *const *)s->libdirs,
                                    text, start, end);
    return (const char *const *)s->completions.names;
}

bool session_statement_at(const session_t *s, const char **file,
                          unsigned *line)
{
    if (s->top_stmt.file == SRC_NO_FILE)
        return false;
    unsigned col;
    *file = source_name(s->src, s->top_stmt.file);
    source_line_col(s->src, s->top_stmt.file, s->top_stmt.begin, line, &col);
    return true;
}

ctx_t *session_ctx(session_t *s) { return &s->ctx; }

