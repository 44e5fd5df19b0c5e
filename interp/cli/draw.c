/*
 * draw.c — seeing the motion (LANGUAGE.md §7.5): the `draw` declarations
 * and `animate`, which shows them at the recorded samples.
 *
 * A draw is kept in the model (model.h: model_draw_t) as the expressions
 * written, checked for their shapes when declared and evaluated at every
 * sample by `animate` (motion.h), which hands the numbers to run/animate.h
 * to be projected and written.  A draw changes nothing the equations
 * read: declaring one swaps in a model with the draw and the same
 * generation, so the lowering, the equations and the samples stay
 * (doc/language.md, "Animation").
 *
 * Must not: print except through the context's streams; change the model
 * but by swapping in a whole new one (a failed statement changes nothing).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "interp/base/outfile.h"
#include "interp/cli/motion.h"
#include "interp/cli/stmts.h"
#include "interp/run/animate.h"

/* The draws one model may hold (doc/limits.md): a redeclaration is found
 * by comparing texts with every draw before it. */
#define DRAW_MAX 1000

/* What each kind takes (LANGUAGE.md §7.5), in the order written. */
typedef struct draw_kind_info {
    const char *name;
    model_draw_kind_t kind;
    size_t nargs;
    const char *args;        /* for the message about their number */
    const char *what[3];     /* each argument in a shape error */
    unsigned dim[3];
    size_t nkey;             /* the arguments that say which draw it is */
} draw_kind_info_t;

static const draw_kind_info_t kinds[] = {
    {"disk", MODEL_DRAW_DISK, 3, "a centre, a normal and a radius",
     {"the centre of a disk", "the normal of a disk", "the radius of a disk"},
     {3, 3, 0}, 1},
    {"sphere", MODEL_DRAW_SPHERE, 2, "a centre and a radius",
     {"the centre of a sphere", "the radius of a sphere", NULL},
     {3, 0, 0}, 1},
    {"line", MODEL_DRAW_LINE, 2, "its two ends",
     {"an end of a line", "an end of a line", NULL}, {3, 3, 0}, 2},
    {"point", MODEL_DRAW_POINT, 1, "a position",
     {"a point", NULL, NULL}, {3, 0, 0}, 1},
};
#define NKINDS (sizeof kinds / sizeof *kinds)
static const char *const kind_names[] = {"disk", "sphere", "line", "point",
                                         NULL};
static const char *const mark_what = "the mark of a sphere";

static const draw_kind_info_t *kind_info(model_draw_kind_t k)
{
    for (size_t i = 0; i < NKINDS; i++)
        if (kinds[i].kind == k)
            return &kinds[i];
    return &kinds[0];
}

/* The span of the end of E (for "missing" messages: after the last
 * argument). */
static src_span_t end_of(src_span_t sp)
{
    return (src_span_t){sp.file, sp.end, sp.end};
}

/* Whether draws A and B (A of the session's model, B the new one) draw
 * the same thing: the same kind at the same places, written the same
 * (whitespace and comments aside).  Then B replaces A. */
static bool same_draw(const ctx_t *s, const model_draw_t *a,
                      const model_draw_t *b)
{
    if (a->kind != b->kind)
        return false;
    size_t nkey = kind_info(a->kind)->nkey;
    for (size_t i = 0; i < nkey; i++) {
        char *ta = ctx_span_text(s, a->arg[i]->span),
             *tb = ctx_span_text(s, b->arg[i]->span);
        bool same = strcmp(ta, tb) == 0;
        free(ta);
        free(tb);
        if (!same)
            return false;
    }
    return true;
}

int draw_declare(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    const ast_ident_t *kw = &st->u.draw.kind;
    const draw_kind_info_t *info = NULL;
    for (size_t i = 0; i < NKINDS; i++)
        if (strcmp(kw->name, kinds[i].name) == 0)
            info = &kinds[i];
    if (!info) {
        const char *best = source_closest(kw->name, kind_names);
        if (best)
            return diag_error(err, kw->span,
                              "unknown kind of draw '%s'; did you mean "
                              "'%s'? (disk, sphere, line or point)",
                              kw->name, best);
        return diag_error(err, kw->span,
                          "unknown kind of draw '%s': draw disk, sphere, "
                          "line or point",
                          kw->name);
    }
    size_t nargs = st->u.draw.nargs;
    if (nargs < info->nargs)
        return diag_error(err, end_of(st->u.draw.args[nargs - 1]->span),
                          "draw %s takes %s (%zu expressions), not %zu",
                          info->name, info->args, info->nargs, nargs);
    if (nargs > info->nargs)
        return diag_error(err, st->u.draw.args[info->nargs]->span,
                          "draw %s takes %s (%zu expression%s): this one "
                          "is one too many",
                          info->name, info->args, info->nargs,
                          info->nargs == 1 ? "" : "s");
    const ast_ident_t *mw = &st->u.draw.mark_word, *tw = &st->u.draw.trail_word;
    if (mw->name && strcmp(mw->name, "mark") != 0)
        return diag_error(err, mw->span,
                          "unexpected '%s' after the expressions of draw %s%s",
                          mw->name, info->name,
                          info->kind == MODEL_DRAW_SPHERE
                              ? " (`mark M` shows the sphere's turning)"
                              : "");
    if (mw->name && info->kind != MODEL_DRAW_SPHERE)
        return diag_error(err, mw->span,
                          "a mark belongs to draw sphere (a point on the "
                          "ball that shows its turning), not to draw %s",
                          info->name);
    if (tw->name && strcmp(tw->name, "trail") != 0)
        return diag_error(err, tw->span,
                          "unexpected '%s' after the expressions of draw %s%s",
                          tw->name, info->name,
                          info->kind == MODEL_DRAW_POINT
                              ? " (`trail` shows the point's path so far)"
                              : "");
    if (tw->name && info->kind != MODEL_DRAW_POINT)
        return diag_error(err, tw->span,
                          "a trail belongs to draw point (draw point P "
                          "trail shows the path of P), not to draw %s",
                          info->name);

    /* The shapes, at once: a mistake is shown where it is written, not
     * at a later animate. */
    lower_t *lw = ctx_lowered(s, err);
    if (!lw)
        return -1;
    model_draw_t d = {info->kind, {NULL, NULL, NULL}, nargs,
                      st->u.draw.mark, st->u.draw.trail, st->span};
    for (size_t i = 0; i < nargs; i++) {
        motion_item_t it = {st->u.draw.args[i], info->dim[i], info->what[i]};
        value_t v;
        if (motion_lower_item(lw, &it, &v, err))
            return -1;
        d.arg[i] = st->u.draw.args[i];
    }
    if (d.mark) {
        motion_item_t it = {d.mark, 3, mark_what};
        value_t v;
        if (motion_lower_item(lw, &it, &v, err))
            return -1;
    }

    /* the same draw again replaces it where it was */
    long at = -1;
    for (size_t i = 0; i < s->model.draws.n && at < 0; i++)
        if (same_draw(s, &s->model.draws.v[i], &d))
            at = (long)i;
    if (at < 0 && s->model.draws.n >= DRAW_MAX)
        return diag_error(err, st->span,
                          "a model may have at most %d draws", DRAW_MAX);
    model_t cand;
    model_clone_sharing_state(&cand, &s->model);
    if (at < 0)
        model_push_draw(&cand, d);
    else
        model_set_draw(&cand, (size_t)at, d);
    /* same generation: nothing derived from the model changes */
    model_free(&s->model);
    s->model = cand;
    return 0;
}

/* ---- animate ----------------------------------------------------------- */

static anim_kind_t anim_kind_of(model_draw_kind_t k)
{
    switch (k) {
    case MODEL_DRAW_DISK: return ANIM_DISK;
    case MODEL_DRAW_SPHERE: return ANIM_SPHERE;
    case MODEL_DRAW_LINE: return ANIM_LINE;
    case MODEL_DRAW_POINT: return ANIM_POINT;
    }
    return ANIM_POINT;
}

/* The format that FILE's extension names (case-insensitive); -1 with
 * *err set at SPAN for another one. */
static int file_format(const char *file, src_span_t span, diag_t *err)
{
    const char *dot = strrchr(file, '.');
    if (dot && strchr(dot, '/') == NULL) {
        if (strcasecmp(dot, ".html") == 0 || strcasecmp(dot, ".htm") == 0)
            return ANIM_HTML;
        if (strcasecmp(dot, ".svg") == 0)
            return ANIM_SVG;
    }
    return diag_error(err, span,
                      "animate writes an HTML page (.html) or an SVG "
                      "image (.svg); '%s' is neither",
                      file);
}

/* The error at the expression E of a draw for a value that cannot be
 * drawn in sample K (ROW its values): X is negative, or (ZERO) the
 * vector is zero. */
static int bad_value(ctx_t *s, const ast_expr_t *e, const char *what,
                     bool zero, double x, size_t k, const double *row,
                     diag_t *err)
{
    char state[1024], num[40];
    ctx_describe_state(s, row, state, sizeof state);
    if (zero)
        return diag_error(err, e->span,
                          "%s is the zero vector in sample %zu%s", what,
                          k + 1, state);
    return diag_error(err, e->span, "%s is negative (%s) in sample %zu%s",
                      what, expr_format_number(x, num, sizeof num), k + 1,
                      state);
}

/* Checks what cannot be drawn — a negative radius, a normal or a mark of
 * length 0 — at every sample of the values V of draw D (INPUTS per
 * frame).  0, or -1 with *err set at the expression. */
static int check_draw(ctx_t *s, const model_draw_t *d, const double *v,
                      size_t inputs, diag_t *err)
{
    for (size_t k = 0; k < s->samples.n; k++) {
        const double *in = v + k * inputs,
                     *row = s->samples.data + k * s->samples.width;
        if (d->kind == MODEL_DRAW_DISK) {
            if (in[6] < 0)
                return bad_value(s, d->arg[2], "the radius of the disk",
                                 false, in[6], k, row, err);
            if (in[3] == 0 && in[4] == 0 && in[5] == 0)
                return bad_value(s, d->arg[1], "the normal of the disk", true,
                                 0, k, row, err);
        } else if (d->kind == MODEL_DRAW_SPHERE) {
            if (in[3] < 0)
                return bad_value(s, d->arg[1], "the radius of the sphere",
                                 false, in[3], k, row, err);
            if (d->mark && in[4] == 0 && in[5] == 0 && in[6] == 0)
                return bad_value(s, d->mark, "the mark of the sphere", true, 0,
                                 k, row, err);
        }
    }
    return 0;
}

/* A name for the page's root element, different for each animation of a
 * session and, with the numbers' hash, for those of other sessions: a
 * notebook holds many. */
static void page_id(ctx_t *s, const motion_columns_t *c, char *buf,
                    size_t size)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < c->n; i++)
        for (size_t k = 0; k < s->samples.n; k++) {
            uint64_t bits;
            memcpy(&bits, &c->col[i][k], sizeof bits);
            h = (h ^ bits) * 1099511628211ULL;
        }
    snprintf(buf, size, "nh-animation-%lu-%08llx", ++s->animations,
             (unsigned long long)(h >> 32));
}

/* Writes SC to the file PATH as FORMAT (whole or not at all); -1 with
 * *err set at SPAN. */
static int write_file(const ctx_t *s, const anim_scene_t *sc,
                      anim_format_t format, const char *path, src_span_t span,
                      diag_t *err)
{
    outfile_t of;
    if (ctx_open_output(s, &of, path, false, span, err) != 0)
        return -1;
    anim_write(sc, format, NULL, of.f);
    int e = outfile_commit(&of);
    if (e)
        return diag_error(err, span, "cannot write '%s': %s", path,
                          outfile_strerror(e));
    return 0;
}

int draw_animate(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    const ast_ident_t *view = &st->u.animate.view;
    if (view->name && strcmp(view->name, "view") != 0)
        return diag_error(err, view->span,
                          "unexpected '%s': animate takes `view AZ, EL` "
                          "(azimuth and elevation in degrees)",
                          view->name);
    const char *file = st->to_file.name;
    int format = ANIM_HTML;
    if (file && (format = file_format(file, st->to_file.span, err)) < 0)
        return -1;
    lower_t *lw = ctx_lowered(s, err);
    if (!lw)
        return -1;
    double speed = 1, az = ANIM_DEFAULT_AZ, el = ANIM_DEFAULT_EL;
    if (st->u.animate.speed) {
        if (ctx_eval_const(s, lw, &s->model, st->u.animate.speed, &speed,
                           err))
            return -1;
        if (!(speed > 0))
            return diag_error(err, st->u.animate.speed->span,
                              "the speed must be positive (model time "
                              "shown per second)");
    }
    if (view->name) {
        if (ctx_eval_const(s, lw, &s->model, st->u.animate.az, &az, err) ||
            ctx_eval_const(s, lw, &s->model, st->u.animate.el, &el, err))
            return -1;
        if (!(fabs(el) <= 90))
            return diag_error(err, st->u.animate.el->span,
                              "the elevation must be between -90 and 90 "
                              "degrees");
    }
    const model_t *m = &s->model;
    if (m->draws.n == 0)
        return diag_error(err, st->span,
                          "nothing is drawn: declare what the bodies look "
                          "like first (draw disk, sphere, line or point; "
                          "help draw)");
    if (!ctx_samples_ready(s, st->span, err))
        return -1;
    /* the size of the file, before any work (doc/limits.md) */
    anim_draw_t *shape = xcalloc(m->draws.n, sizeof *shape);
    for (size_t i = 0; i < m->draws.n; i++)
        shape[i] = (anim_draw_t){anim_kind_of(m->draws.v[i].kind),
                                 m->draws.v[i].mark != NULL,
                                 m->draws.v[i].trail, NULL, NULL};
    size_t per_frame = anim_frame_numbers(shape, m->draws.n);
    free(shape);
    if (s->samples.n > ANIM_MAX_NUMBERS / per_frame)
        return diag_error(err, st->span,
                          "%zu samples of %zu draws (%zu numbers each) are "
                          "more than an animation holds (%u numbers, "
                          "doc/limits.md): simulate with a larger step",
                          s->samples.n, m->draws.n, per_frame,
                          ANIM_MAX_NUMBERS);

    /* every draw's expressions at every sample */
    size_t nitems = 0;
    for (size_t i = 0; i < m->draws.n; i++)
        nitems += m->draws.v[i].nargs + (m->draws.v[i].mark ? 1 : 0);
    motion_item_t *items = xcalloc(nitems + 1, sizeof *items);
    size_t c = 0;
    for (size_t i = 0; i < m->draws.n; i++) {
        const model_draw_t *d = &m->draws.v[i];
        const draw_kind_info_t *info = kind_info(d->kind);
        for (size_t j = 0; j < d->nargs; j++)
            items[c++] = (motion_item_t){d->arg[j], info->dim[j],
                                         info->what[j]};
        if (d->mark)
            items[c++] = (motion_item_t){d->mark, 3, mark_what};
    }
    motion_columns_t cols;
    int rc = motion_columns(s, st->span, items, nitems, &cols, err);
    free(items);
    if (rc)
        return -1;

    size_t n = s->samples.n;
    anim_draw_t *draws = xcalloc(m->draws.n, sizeof *draws);
    double **vals = xcalloc(m->draws.n, sizeof *vals);
    char **labels = xcalloc(m->draws.n, sizeof *labels);
    double *times = xcalloc(n + 1, sizeof *times);
    const nh_system_t *sys = lower_system(s->lw);
    for (size_t k = 0; k < n; k++)
        times[k] = s->samples.data[k * s->samples.width + sys->t];
    size_t col = 0;
    for (size_t i = 0; i < m->draws.n && rc == 0; i++) {
        const model_draw_t *d = &m->draws.v[i];
        anim_kind_t kind = anim_kind_of(d->kind);
        size_t w = anim_inputs(kind, d->mark != NULL);
        vals[i] = xcalloc(n * w + 1, sizeof *vals[i]);
        for (size_t j = 0; j < w; j++, col++)
            for (size_t k = 0; k < n; k++)
                vals[i][k * w + j] = cols.col[col][k];
        labels[i] = ctx_span_text(s, d->span);
        draws[i] = (anim_draw_t){kind, d->mark != NULL, d->trail, labels[i],
                                 vals[i]};
        rc = check_draw(s, d, vals[i], w, err);
    }
    if (rc == 0) {
        anim_scene_t sc = {n, times, m->draws.n, draws, az, el, speed};
        if (file) {
            rc = write_file(s, &sc, (anim_format_t)format, file,
                            st->to_file.span, err);
        } else if (s->html_inline) {
            /* a notebook shows it in place */
            char id[64];
            page_id(s, &cols, id, sizeof id);
            s->out_kind = CTX_OUT_HTML;
            anim_write(&sc, ANIM_HTML_PART, id, s->out);
        } else {
            /* LANGUAGE.md §7.5: in the REPL, animation.html, said where */
            rc = write_file(s, &sc, ANIM_HTML, "animation.html", st->span,
                            err);
            if (rc == 0 && !s->quiet) {
                char cwd[4096];
                if (getcwd(cwd, sizeof cwd))
                    fprintf(s->out, "animation written to %s/animation.html "
                                    "(open it in a browser)\n",
                            strcmp(cwd, "/") == 0 ? "" : cwd);
                else
                    fputs("animation written to animation.html in the "
                          "current folder (open it in a browser)\n",
                          s->out);
            }
        }
    }
    for (size_t i = 0; i < m->draws.n; i++) {
        free(vals[i]);
        free(labels[i]);
    }
    free(vals);
    free(labels);
    free(draws);
    free(times);
    motion_columns_free(&cols);
    return rc;
}
