/*
 * parse.c — parse_program(): one scanner and one parser run over a whole
 * text.
 *
 * The scanner's buffer is a copy that flex owns and frees in
 * nhyylex_destroy; every tree node goes into the caller's arena.  So each
 * path out of here, success or error, frees what it allocated.  Must not:
 * print; keep state between calls.
 */
#include "lang/parse.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"
#include "lang/parse_impl.h"
#include "lang/parser.h"
#include "lang/lexer.h"

parse_status_t parse_program(const source_set_t *set, uint32_t file,
                             ast_arena_t *arena, ast_program_t *out,
                             diag_t *err)
{
    out->stmts = NULL;
    out->n = 0;

    size_t len;
    const char *text = source_text(set, file, &len);
    parse_ctx_t ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.set = set;
    ctx.text = text;
    ctx.len = (uint32_t)len; /* source_add keeps texts below 4 GiB */
    ctx.file = file;
    ctx.arena = arena;
    ctx.diag = err;

    /* Only this parse's errors count: a diag set before is left alone but
     * a fresh one collects ours. */
    diag_t local;
    diag_clear(&local);
    ctx.diag = &local;

    if (len > INT_MAX - 2) { /* flex counts its buffer in int */
        diag_error(err, SRC_SPAN_NONE, "%s: text too large to parse",
                   source_name(set, file));
        return PARSE_ERROR;
    }

    yyscan_t scanner;
    if (nhyylex_init_extra(&ctx, &scanner) != 0)
        nh_out_of_memory();
    YY_BUFFER_STATE buf = nhyy_scan_bytes(text, (int)len, scanner);
    int rc = nhyyparse(scanner, &ctx);
    nhyy_delete_buffer(buf, scanner);
    nhyylex_destroy(scanner);

    if (rc != 0 || local.set) {
        if (!local.set) /* cannot happen: every failure path reports */
            diag_error(&local, SRC_SPAN_NONE, "syntax error");
        if (err && !err->set)
            *err = local;
        return ctx.incomplete ? PARSE_INCOMPLETE : PARSE_ERROR;
    }
    ast_program_from_list(arena, ctx.stmts, out);
    return PARSE_OK;
}
