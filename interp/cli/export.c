/*
 * export.c — `export c "file.c"` (LANGUAGE.md §8.1): the chosen
 * equations' right-hand side as one self-contained C99 file
 * (eom/cgen.h), its functions named after the file.
 *
 * The file is written under a temporary name in its folder and renamed
 * over FILE only when complete, so a failed write leaves an existing
 * file as it was (outfile.h): through a symbolic link, which stays, to
 * the file it names; a device, a FIFO or anything else that is not a
 * regular file is refused (issue 31: a link was replaced by the file, and
 * as root /dev/stdout's device node was).
 *
 * Must not: print except through the context's streams; exit().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "interp/cli/stmts.h"
#include "interp/eom/cgen.h"

/* TEXT into OF (opened on PATH), which ends: committed or not. */
static int export_write(outfile_t *of, const char *path, const char *text,
                        src_span_t span, diag_t *err)
{
    fputs(text, of->f);
    int e = outfile_commit(of);
    if (e)
        return diag_error(err, span, "cannot write '%s': %s", path,
                          outfile_strerror(e));
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
    if (!cgen_name_from_path(path, ".c", name, sizeof name))
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
    /* the file first: one that cannot be written fails before the work */
    outfile_t of;
    if (ctx_open_output(s, &of, path, true, pspan, err) != 0)
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
        outfile_abort(&of);
        err->span = st->span;
        return -1;
    }
    int rc = export_write(&of, path, text, pspan, err);
    free(text);
    if (rc == 0 && !s->quiet)
        fprintf(s->out,
                "wrote %s: %s_rhs, equations %s, %zu state values, %zu "
                "parameters\n",
                path, name, eom_method_name(eom_method(e)), eom_state_size(e),
                sys->np);
    return rc;
}
