/*
 * session.c — a session (session.h): its texts and their arenas, the
 * files it loads and the modules it imports, and the running of
 * statements, each through the statement table (table.h) on the
 * session's context (context.h).  load, import, quit and exit act on the
 * session itself and are run here.
 *
 * Must not: print except through the session's streams; exit(); call a
 * statement module except through the table.
 */
#include "interp/cli/session.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "interp/base/util.h"
#include "interp/cli/context.h"
#include "interp/cli/table.h"
#include "lang/keywords.h"
#include "lang/parse.h"

#define SESSION_MAX_LOAD_DEPTH 16

struct session {
    ctx_t ctx;           /* what the statements see */
    source_set_t *src;   /* the texts read so far */
    ast_arena_t **arenas; /* every parse's arena, kept for the session */
    size_t narenas, cap_arenas;

    bool quit;
    double time_limit; /* seconds per session_run_text; 0: none */
    unsigned load_depth;
    char **imported; /* modules already imported */
    size_t nimported;
    char **libdirs;
    size_t nlibdirs;
    const char **completions;
};

/* ---- life cycle ------------------------------------------------------ */

session_t *session_new(bool quiet, FILE *out, FILE *err)
{
    session_t *s = xcalloc(1, sizeof *s);
    s->src = source_set_new();
    ctx_init(&s->ctx, s->src, quiet, out, err);
    return s;
}

void session_free(session_t *s)
{
    if (!s)
        return;
    ctx_free(&s->ctx);
    for (size_t i = 0; i < s->narenas; i++)
        ast_arena_free(s->arenas[i]);
    free(s->arenas);
    for (size_t i = 0; i < s->nimported; i++)
        free(s->imported[i]);
    free(s->imported);
    for (size_t i = 0; i < s->nlibdirs; i++)
        free(s->libdirs[i]);
    free(s->libdirs);
    free(s->completions);
    source_set_free(s->src);
    free(s);
}

bool session_quit_requested(const session_t *s) { return s->quit; }

void session_interrupt(session_t *s) { s->ctx.stop.raised = 1; }

void session_set_time_limit(session_t *s, double seconds)
{
    s->time_limit = seconds > 0.0 ? seconds : 0.0;
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

/* Reads a whole file; -1 with a message in MSG on failure. */
static int read_file(const char *path, char **text, size_t *len, char *msg,
                     size_t size)
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
        if (b.len > (64u << 20)) {
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
    if (read_file(path, &text, &len, msg, sizeof msg) != 0)
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
    if (rc == -2)
        return diag_error(err, st->u.path.span,
                          "no module '%s' in the library (searched NH_PATH "
                          "and %s)",
                          name, s->nlibdirs ? s->libdirs[0] : "no folder");
    return rc;
}

/* ---- running --------------------------------------------------------- */

static int not_yet(const ast_stmt_t *st, diag_t *err)
{
    return diag_error(err, st->span, "%s is not available yet",
                      ast_stmt_keyword(st->kind));
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
    return run(&s->ctx, st, err);
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
        return RUN_INCOMPLETE;
    }
    if (ps != PARSE_OK) {
        fflush(s->ctx.out);
        diag_print(s->ctx.err, s->src, &err);
        ast_arena_free(arena);
        return RUN_ERROR;
    }
    xgrow(&s->arenas, &s->cap_arenas, s->narenas + 1, sizeof *s->arenas);
    s->arenas[s->narenas++] = arena;
    for (size_t i = 0; i < prog.n && !s->quit; i++) {
        diag_clear(&err);
        s->ctx.arena = arena;
        int rc = exec_stmt(s, prog.stmts[i], &err);
        fflush(s->ctx.out);
        if (rc != 0) {
            if (err.set) /* else it was reported deeper (a loaded file) */
                diag_print(s->ctx.err, s->src, &err);
            /* A failed statement may have grown the graph (an expression
             * too large): drop the lowering, rebuilt when next needed. */
            ctx_drop_large_lowering(&s->ctx);
            return RUN_ERROR;
        }
    }
    return RUN_OK;
}

run_status_t session_run_text(session_t *s, const char *name,
                              const char *text, size_t len,
                              bool allow_incomplete)
{
    uint32_t file = source_add(s->src, name, text, len);
    s->ctx.stop.raised = 0;
    s->ctx.stop.deadline = s->time_limit > 0.0 ? nh_clock() + s->time_limit : 0.0;
    return run_source(s, file, allow_incomplete);
}

run_status_t session_run_file(session_t *s, const char *path)
{
    char *text;
    size_t len;
    char msg[512];
    if (strcmp(path, "-") == 0) {
        strbuf_t b;
        strbuf_init(&b);
        char chunk[8192];
        size_t n;
        while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0)
            strbuf_addn(&b, chunk, n);
        len = b.len;
        text = strbuf_take(&b);
        run_status_t rc = session_run_text(s, "<stdin>", text, len, false);
        free(text);
        return rc;
    }
    if (read_file(path, &text, &len, msg, sizeof msg) != 0) {
        diag_t err = {0};
        diag_error(&err, SRC_SPAN_NONE, "%s", msg);
        diag_print(s->ctx.err, s->src, &err);
        return RUN_ERROR;
    }
    run_status_t rc = session_run_text(s, path, text, len, false);
    free(text);
    return rc;
}

const char *const *session_completions(session_t *s)
{
    diag_t err = {0};
    lower_t *lw = ctx_lowered(&s->ctx, &err);
    const char *const *names = lw ? lower_known_names(lw) : NULL;
    size_t nk = 0, nn = 0, nm = 0;
    while (parse_keywords[nk])
        nk++;
    while (names && names[nn])
        nn++;
    while (eom_method_names[nm])
        nm++;
    free(s->completions);
    s->completions = xcalloc(nk + nn + nm + 16, sizeof *s->completions);
    size_t k = 0;
    for (size_t i = 0; i < nk; i++)
        s->completions[k++] = parse_keywords[i];
    for (size_t i = 0; i < nn; i++)
        s->completions[k++] = names[i];
    for (size_t i = 0; i < nm; i++)
        s->completions[k++] = eom_method_names[i];
    /* show's reports; `set compile = on | off` */
    static const char *const topics[] = {"model", "eom",     "mass", "reduced",
                                         "voronec", "compile", "on", "off",
                                         NULL};
    for (size_t i = 0; topics[i]; i++)
        s->completions[k++] = topics[i];
    s->completions[k] = NULL;
    return s->completions;
}

ctx_t *session_ctx(session_t *s) { return &s->ctx; }

