/*
 * export.c — `export c "file.c"` (LANGUAGE.md §8.1): the chosen
 * equations' right-hand side as one self-contained C99 file
 * (eom/cgen.h), its functions named after the file.
 *
 * The file is written under a temporary name in its folder and renamed
 * over FILE only when complete, so a failed write leaves an existing
 * file as it was.
 *
 * Must not: print except through the context's streams; exit().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "interp/cli/stmts.h"
#include "interp/eom/cgen.h"

/* NAME from PATH: its last component without ".c", other characters
 * than letters, digits and '_' made '_' ("my-model.c" gives my_model).
 * False when that does not begin with a letter or '_'. */
static bool export_name(const char *path, char *name, size_t size)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    if (len >= 2 && strcmp(base + len - 2, ".c") == 0)
        len -= 2;
    if (len == 0 || len >= size)
        return false;
    for (size_t i = 0; i < len; i++) {
        char ch = base[i];
        bool word = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '_';
        name[i] = word ? ch : '_';
    }
    name[len] = '\0';
    return cgen_name_ok(name);
}

/* TEXT into PATH, through a temporary file beside it. */
static int export_write(const char *path, const char *text, src_span_t span,
                        diag_t *err)
{
    size_t plen = strlen(path);
    char *tmp = xmalloc(plen + 16);
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
    snprintf(tmp, plen + 16, "%.*s.nh-XXXXXX", (int)dirlen, path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return diag_error(err, span, "cannot write '%s': %s", path,
                          strerror(e));
    }
    /* the mode a new file would get: mkstemp's is 0600 */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    FILE *f = fdopen(fd, "w");
    if (!f)
        abort(); /* a valid descriptor: only out of memory */
    size_t len = strlen(text);
    bool bad = fwrite(text, 1, len, f) != len;
    int e = errno;
    if (fclose(f) != 0 && !bad) {
        bad = true;
        e = errno;
    }
    if (!bad && rename(tmp, path) != 0) {
        bad = true;
        e = errno;
    }
    if (bad) {
        unlink(tmp);
        free(tmp);
        return diag_error(err, span, "cannot write '%s': %s", path,
                          strerror(e));
    }
    free(tmp);
    return 0;
}

int export_stmt(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    const ast_ident_t *format = &st->u.export_.format;
    const char *path = st->u.export_.path;
    src_span_t pspan = st->u.export_.span;
    if (strcmp(format->name, "python") == 0)
        return export_python(s, st, err);
    if (strcmp(format->name, "c") != 0)
        return diag_error(err, format->span,
                          "unknown export format '%s': `export c "
                          "\"file.c\"` writes the equations as C, `export "
                          "python \"file.py\"` as a Python module",
                          format->name);
    char name[80];
    if (!export_name(path, name, sizeof name))
        return diag_error(err, pspan,
                          "the C functions are named after the file "
                          "(\"sphere.c\" gives sphere_rhs): '%s' must begin "
                          "with a letter and be at most 64 characters",
                          path);
    if (s->model.method < 0)
        return diag_error(err, st->span,
                          "no equations chosen: export c writes the chosen "
                          "method's right-hand side; choose one first "
                          "(`equations multipliers`, `equations voronec`, ...)");
    eom_t *e = ctx_eom(s, st->span, err);
    if (!e)
        return -1;
    const nh_system_t *sys = lower_system(s->lw);
    double *params = xcalloc(sys->np ? sys->np : 1, sizeof *params);
    for (size_t k = 0; k < sys->np; k++)
        params[k] = s->model.params.v[k].value;
    cgen_options_t opt = {.name = name, .params = params,
                          .version = PACKAGE_VERSION};
    char *text = cgen_text(e, &opt, err);
    free(params);
    if (!text) {
        err->span = st->span;
        return -1;
    }
    int rc = export_write(path, text, pspan, err);
    free(text);
    if (rc == 0 && !s->quiet)
        fprintf(s->out,
                "wrote %s: %s_rhs, equations %s, %zu state values, %zu "
                "parameters\n",
                path, name, eom_method_name(eom_method(e)), eom_state_size(e),
                sys->np);
    return rc;
}
