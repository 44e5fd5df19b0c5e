/*
 * decl.c — the statements that declare and set state: param, coord,
 * speed, let, the energies, particle, force, constraint, kinematic,
 * equations, initial, reset and set (LANGUAGE.md §4–§6, §8).
 *
 * How "a statement that fails changes nothing" is kept: a declaration is
 * applied to a clone of the model, the clone is lowered (which checks
 * every name, shape and derivative), and only then swapped in.  When the
 * clone only adds declarations, the current lowering is extended by them
 * instead (lower_extend), which leaves it as it was when they fail.  State
 * statements compute the whole new state before storing any of it.
 *
 * Must not: print except through the context's streams; exit().
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/analysis/slips.h"
#include "interp/cli/stmts.h"
#include "interp/cli/work.h"
#include "interp/eom/velocity.h"

/* ---- helpers --------------------------------------------------------- */

/* The names of the simulation settings (`set NAME = …`, LANGUAGE.md §6,
 * §8, §8.1): a parameter named so could never be set. */
static const char *const setting_names[] = {
    "rtol", "atol", "step", "integrator", "max_steps", "compile", "threads",
    NULL};

static int check_free_name(const ctx_t *s, const model_t *m,
                           const ast_ident_t *id, model_kind_t kind,
                           diag_t *err)
{
    src_span_t where;
    model_kind_t old = model_lookup(m, id->name, NULL, &where);
    if (old == MODEL_BUILTIN)
        return diag_error(err, id->span,
                          "'%s' is a built-in name (%s); choose another "
                          "name",
                          id->name,
                          strcmp(id->name, "t") == 0 ? "time" : "3.14159...");
    /* LANGUAGE.md §3.4: a let named sin would change what every sin(...)
     * of the model means. */
    if (lower_is_builtin_function(id->name))
        return diag_error(err, id->span,
                          "'%s' is a built-in function and cannot be "
                          "declared; choose another name",
                          id->name);
    for (size_t i = 0; setting_names[i]; i++)
        if (strcmp(id->name, setting_names[i]) == 0)
            return diag_error(err, id->span,
                              "'%s' is the name of a simulation setting "
                              "(`set %s = ...`) and cannot be declared; "
                              "choose another name",
                              id->name, id->name);
    if (old == MODEL_NONE || old == kind)
        return 0;
    char place[256];
    ctx_where_text(s, where, place, sizeof place);
    return diag_error(err, id->span,
                      "'%s' is already declared as %s at %s; it cannot also "
                      "be %s",
                      id->name, model_kind_name(old), place,
                      model_kind_name(kind));
}

/* Whether the declaration of KIND number IDX of the session's model is
 * read by the model's own expressions (energies, particles, forces,
 * constraints, kinematic equations): redeclaring one that is not keeps
 * the samples (LANGUAGE.md §6).  The session's lowering answers even when
 * it runs ahead of the model (decl_param extends it by the statement's
 * new parameters, which no model expression reads): it is not lowered
 * again here, which would free the lowering decl_param holds. */
static bool read_by_model(ctx_t *s, model_kind_t kind, size_t idx)
{
    diag_t tmp = {0};
    lower_t *lw = s->lw ? s->lw : ctx_lowered(s, &tmp);
    return !lw || lower_model_reads(lw, kind, idx);
}

/* Lowers the candidate model; on success it becomes the session's model
 * and its lowering the cached one.  Consumes *cand either way.
 * DECLARATIONS: cand declares something new or different (not only new
 * values of parameters).  KEEP: the statement only declares analysis
 * names (lets, parameters the model does not read), which keeps the
 * recorded samples; any other change of the model clears them, and ST is
 * remembered as the statement that did (LANGUAGE.md §6). */
static int commit(ctx_t *s, const ast_stmt_t *st, model_t *cand,
                  bool declarations, bool keep, diag_t *err)
{
    if (declarations) {
        cand->generation = s->model.generation + 1;
        /* A statement that only adds declarations extends the current
         * lowering: lowering the whole model for every statement would
         * cost O(statements x model).  lower_extend() says when it
         * cannot (1), compares the lowering's own model with the
         * candidate (so a lowering left ahead of the session's model by
         * a failed `param` statement is handled too), and leaves the
         * lowering as it was on failure. */
        int rc = 1;
        if (s->lw)
            rc = lower_extend(s->lw, cand, err);
        if (rc < 0) {
            model_free(cand);
            return -1;
        }
        if (rc > 0) {
            lower_t *lw = lower_model(cand, s->src, err);
            if (!lw) {
                model_free(cand);
                return -1;
            }
            lower_free(s->lw);
            s->lw = lw;
        }
        ctx_free_derived(s);
        s->lw_generation = cand->generation;
        if (keep && s->samples_generation == s->model.generation)
            s->samples_generation = cand->generation;
    }
    if (!keep)
        ctx_clear_samples(s, st->span);
    model_free(&s->model);
    s->model = *cand;
    return 0;
}

/* The commit of a declaration that changes the model. */
static int commit_model(ctx_t *s, const ast_stmt_t *st, model_t *cand,
                        diag_t *err)
{
    return commit(s, st, cand, true, false, err);
}

/* The candidate model of a declaration: a clone of the session's that
 * shares its state (O(1), where a copy of the state would make n
 * coordinate statements cost n^2).  Nothing writes the state until the
 * candidate is committed or freed (model_clone_sharing_state). */
static void begin(const ctx_t *s, model_t *cand)
{
    model_clone_sharing_state(cand, &s->model);
}

/* ---- declarations ---------------------------------------------------- */

/* The error when the model has a lagrangian, which excludes WHAT. */
static int lagrangian_excludes(const ctx_t *s, const ast_stmt_t *st,
                               const char *what, diag_t *err)
{
    char place[256];
    ctx_where_text(s, s->model.lagrangian.span, place, sizeof place);
    return diag_error(err, st->span,
                      "the model has a lagrangian (at %s), which excludes "
                      "%s declarations",
                      place, what);
}

/* A number as written (12, -0.5, +3): its value without lowering. */
static bool literal_number(const ast_expr_t *e, double *x)
{
    double sign = 1;
    while (e->kind == AST_NEG || e->kind == AST_POS) {
        if (e->kind == AST_NEG)
            sign = -sign;
        e = e->a;
    }
    if (e->kind != AST_NUM)
        return false;
    *x = sign * e->num;
    return true;
}

/* A lowering of CAND, which is the session's model with the parameters
 * (or inputs) of the statement so far: the session's lowering, extended by them
 * (extending cannot fail: parameters lower nothing).  The session's
 * lowering then runs ahead of its model, so it is marked stale: commit()
 * extends it to the whole statement, and after a failure the next
 * statement lowers afresh.  NULL with *err set. */
static lower_t *lowered_candidate(ctx_t *s, const model_t *cand,
                                  diag_t *err)
{
    lower_t *lw = ctx_lowered(s, err);
    if (!lw)
        return NULL;
    if (cand->params.n == s->model.params.n &&
        cand->inputs.n == s->model.inputs.n)
        return lw;
    eom_free(s->eom); /* borrows the system's arrays, which may move */
    s->eom = NULL;
    s->lw_generation = CTX_STALE;
    int rc = lower_extend(lw, cand, err);
    if (rc > 0) { /* not expected: parameters alone always extend */
        lower_t *fresh = lower_model(cand, s->src, err);
        if (!fresh)
            return NULL;
        lower_free(s->lw);
        s->lw = lw = fresh;
        rc = 0;
    }
    return rc == 0 ? lw : NULL;
}

/* param NAME = VALUE, ... and input NAME [= VALUE], ... (KIND
 * MODEL_PARAM or MODEL_INPUT): a name declared again takes the new value
 * (an input without one, 0).  A number needs no lowering; other values
 * may use parameters declared before, in this statement too: the
 * session's lowering extended by those (O(1) per parameter, not a
 * lowering of the whole model per statement: fuzz finding 009, issue
 * 12).  A new value changes the motion, and the samples go (LANGUAGE.md
 * §6): a parameter's where the model reads it, an input's always. */
static int decl_values(ctx_t *s, const ast_stmt_t *st, model_kind_t kind,
                       diag_t *err)
{
    bool param = kind == MODEL_PARAM;
    model_t cand;
    begin(s, &cand);
    bool added = false, keep = true, current = false;
    lower_t *lw = NULL;
    for (size_t i = 0; i < st->u.bindings.n; i++) {
        const ast_binding_t *b = &st->u.bindings.items[i];
        if (param && b->primes) {
            diag_error(err, b->name.span, "a parameter has no derivative");
            goto fail;
        }
        if (check_free_name(s, &cand, &b->name, kind, err))
            goto fail;
        double x = 0;
        if (b->value && !literal_number(b->value, &x)) {
            if (!current) {
                lw = lowered_candidate(s, &cand, err);
                if (!lw)
                    goto fail;
                current = true;
            }
            if (ctx_eval_const(s, lw, &cand, b->value, &x, err))
                goto fail;
        }
        size_t idx;
        if (model_lookup(&cand, b->name.name, &idx, NULL) == kind) {
            size_t nold = param ? s->model.params.n : s->model.inputs.n;
            if (idx < nold && s->samples.n &&
                x != (param ? s->model.params.v[idx].value
                            : s->model.inputs.v[idx].value) &&
                (!param || read_by_model(s, MODEL_PARAM, idx)))
                keep = false;
            if (param)
                model_set_param_value(&cand, idx, x);
            else
                model_set_input_value(&cand, idx, x);
        } else {
            model_param_t p = {b->name.name, b->name.span, x};
            if (param)
                model_push_param(&cand, p);
            else
                model_push_input(&cand, p);
            added = true;
            current = false;
        }
    }
    return commit(s, st, &cand, added, keep, err);
fail:
    model_free(&cand);
    return -1;
}

int decl_param(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    return decl_values(s, st, MODEL_PARAM, err);
}

/* input NAME [= VALUE], ... (LANGUAGE.md §7.2.1): parameters that
 * linearize differentiates by for B; 0 unless a value is given. */
int decl_input(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    return decl_values(s, st, MODEL_INPUT, err);
}

/* output NAME = EXPR, ... (LANGUAGE.md §7.2.1): named scalar expressions
 * of the state and the inputs, for C and D of linearize and transfer,
 * and names in queries.  Checked as a query is (any name print reads,
 * accelerations too), except the multipliers, which are no function of
 * the state and the inputs that every method gives.  An analysis name:
 * declaring one keeps the samples. */
int decl_output(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    model_t cand;
    begin(s, &cand);
    for (size_t i = 0; i < st->u.bindings.n; i++) {
        const ast_binding_t *b = &st->u.bindings.items[i];
        if (check_free_name(s, &cand, &b->name, MODEL_OUTPUT, err))
            goto fail;
        /* the expression against the model so far (earlier outputs of
         * the statement included; itself not: a redeclared output reads
         * its old value, as a redeclared let would) */
        lower_t *lw = ctx_lowered(s, err);
        if (!lw)
            goto fail;
        /* the equations borrow the system's arrays, which may move */
        ctx_free_derived(s);
        int rc = lower_extend(lw, &cand, err);
        if (rc > 0) {
            lower_t *fresh = lower_model(&cand, s->src, err);
            if (!fresh)
                goto fail;
            lower_free(s->lw);
            s->lw = lw = fresh;
            rc = 0;
        }
        s->lw_generation = CTX_STALE;
        if (rc < 0)
            goto fail;
        value_t v;
        if (lower_expr(lw, b->value, LOWER_QUERY, &v, err) != 0)
            goto fail;
        if (v.dim != 0) {
            diag_error(err, b->value->span,
                       "an output is a scalar (C and D have one row per "
                       "output), but this is a %u-vector; declare one "
                       "output per component, as `output %s1 = (...)[1]`",
                       v.dim, b->name.name);
            goto fail;
        }
        if (lower_needs_lambda(lw, &v)) {
            diag_error(err, b->value->span,
                       "an output is an expression of the state and the "
                       "inputs; a multiplier (lambda, reaction) is not one "
                       "that every method gives");
            goto fail;
        }
        model_output_t o = {b->name.name, b->name.span, b->value};
        size_t idx;
        if (model_lookup(&cand, b->name.name, &idx, NULL) == MODEL_OUTPUT)
            model_set_output(&cand, idx, o);
        else
            model_push_output(&cand, o);
    }
    return commit(s, st, &cand, true, true, err);
fail:
    model_free(&cand);
    return -1;
}

int decl_names(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    bool coord = st->kind == STMT_COORD;
    model_kind_t kind = coord ? MODEL_COORD : MODEL_SPEED;
    model_t cand;
    begin(s, &cand);
    for (size_t i = 0; i < st->u.names.n; i++) {
        const ast_ident_t *id = &st->u.names.items[i];
        if (check_free_name(s, &cand, id, kind, err)) {
            model_free(&cand);
            return -1;
        }
        if (model_lookup(&cand, id->name, NULL, NULL) == kind)
            continue; /* declared again: it keeps its place */
        if (cand.coords.n + cand.speeds.n >= SESSION_MAX_COORDS) {
            model_free(&cand);
            return diag_error(err, id->span,
                              "a model may have at most %d coordinates and "
                              "speeds together",
                              SESSION_MAX_COORDS);
        }
        model_name_t nm = {id->name, id->span};
        if (coord)
            model_push_coord(&cand, nm);
        else
            model_push_speed(&cand, nm);
    }
    return commit_model(s, st, &cand, err);
}

int decl_let(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    const ast_ident_t *id = &st->u.let.name;
    if (check_free_name(s, &s->model, id, MODEL_LET, err))
        return -1;
    for (size_t i = 0; i < st->u.let.nparams; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(st->u.let.params[i].name, st->u.let.params[j].name) == 0)
                return diag_error(err, st->u.let.params[i].span,
                                  "the argument '%s' is named twice",
                                  st->u.let.params[i].name);
    /* A let is an analysis name unless the model reads it: declaring
     * one keeps the samples (LANGUAGE.md §6). */
    model_t cand;
    begin(s, &cand);
    size_t idx;
    bool keep = true;
    model_let_t l = {id->name, id->span, st};
    if (model_lookup(&cand, id->name, &idx, NULL) == MODEL_LET) {
        keep = !s->samples.n || !read_by_model(s, MODEL_LET, idx);
        model_set_let(&cand, idx, l);
    } else {
        model_push_let(&cand, l);
    }
    return commit(s, st, &cand, true, keep, err);
}

/* Warnings about likely slips in the kinetic energy (whole: particles
 * included) or the Lagrangian just declared (LANGUAGE.md §4), at SPAN, its
 * expression.  Warnings are shown under -q too: unlike a note, a warning
 * says the model is probably not what was meant (doc/language.md). */
static void warn_slips(ctx_t *s, model_kind_t kind, const char *name,
                       src_span_t span)
{
    const nh_system_t *sys = lower_system(s->lw);
    const expr_t *e = kind == MODEL_KINETIC ? sys->T : sys->L;
    if (!e)
        return;
    char what[128], msgs[4][SLIP_MSG_MAX];
    snprintf(what, sizeof what, "%s %s",
             kind == MODEL_KINETIC ? "the kinetic energy" : "the Lagrangian",
             name);
    size_t k = slip_energy(sys, e, what, kind == MODEL_KINETIC, msgs, 4);
    if (k)
        fflush(s->out);
    for (size_t i = 0; i < k; i++) {
        diag_t w = {0};
        diag_error(&w, span, "%s", msgs[i]);
        diag_print_warning(s->err, s->src, &w);
    }
}

int decl_energy(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    model_kind_t kind = st->kind == STMT_KINETIC     ? MODEL_KINETIC
                        : st->kind == STMT_POTENTIAL ? MODEL_POTENTIAL
                                                     : MODEL_LAGRANGIAN;
    const ast_ident_t *id = &st->u.energy.name;
    model_t cand;
    begin(s, &cand);
    model_energy_t *slot = kind == MODEL_KINETIC     ? &cand.kinetic
                           : kind == MODEL_POTENTIAL ? &cand.potential
                                                     : &cand.lagrangian;
    /* A new energy of the same kind replaces the old one, whatever its
     * name (doc/language.md): forget the old name first. */
    model_energy_t old = *slot;
    slot->name = NULL;
    if (check_free_name(s, &cand, id, kind, err))
        goto fail;
    char place[256];
    if (kind == MODEL_LAGRANGIAN) {
        const model_energy_t *other =
            cand.kinetic.name ? &cand.kinetic : cand.potential.name ? &cand.potential : NULL;
        src_span_t at = other            ? other->span
                        : cand.particles.n ? cand.particles.v[0].span
                        : cand.bodies.n    ? cand.bodies.v[0].span
                        : cand.gravity     ? cand.gravity_span
                                           : SRC_SPAN_NONE;
        if (at.file != SRC_NO_FILE) {
            ctx_where_text(s, at, place, sizeof place);
            diag_error(err, st->span,
                       "a lagrangian excludes kinetic, potential, particle, "
                       "body and gravity declarations, and the model has one "
                       "at %s",
                       place);
            goto fail;
        }
    } else if (cand.lagrangian.name) {
        lagrangian_excludes(s, st,
                            kind == MODEL_KINETIC ? "kinetic" : "potential",
                            err);
        goto fail;
    }
    (void)old;
    slot->name = id->name;
    slot->span = id->span;
    slot->value = st->u.energy.value;
    if (commit_model(s, st, &cand, err))
        return -1;
    if (kind != MODEL_POTENTIAL)
        warn_slips(s, kind, id->name, st->u.energy.value->span);
    return 0;
fail:
    model_free(&cand);
    return -1;
}

int decl_particle(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    const ast_ident_t *id = &st->u.particle.name;
    if (check_free_name(s, &s->model, id, MODEL_PARTICLE, err))
        return -1;
    if (s->model.lagrangian.name)
        return lagrangian_excludes(s, st, "particle", err);
    model_t cand;
    begin(s, &cand);
    model_particle_t p = {id->name, id->span, st->u.particle.mass,
                          st->u.particle.position};
    size_t idx;
    if (model_lookup(&cand, id->name, &idx, NULL) == MODEL_PARTICLE)
        model_set_particle(&cand, idx, p);
    else
        model_push_particle(&cand, p);
    return commit_model(s, st, &cand, err);
}

/* "unknown name 'X'; did you mean 'Y'? (WHAT)", or without the
 * suggestion when none is close. */
static int unknown_target(ctx_t *s, const ast_ident_t *id, const char *what,
                          diag_t *err)
{
    diag_t tmp = {0};
    lower_t *lw = ctx_lowered(s, &tmp);
    const char *best = lw ? lower_suggest(lw, id->name) : NULL;
    if (best)
        return diag_error(err, id->span,
                          "unknown name '%s'; did you mean '%s'? (%s)",
                          id->name, best, what);
    return diag_error(err, id->span, "unknown name '%s': %s, declared before it",
                      id->name, what);
}

/* force x = F, force P = F, force B at X = F (LANGUAGE.md §4, §4.1), and
 * torque B = M. */
int decl_force(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    const ast_ident_t *id = &st->u.force.target;
    bool torque = st->kind == STMT_TORQUE;
    const ast_expr_t *at = st->u.force.at;
    model_kind_t k = model_lookup(&s->model, id->name, NULL, NULL);
    if (torque) {
        if (k == MODEL_NONE)
            return unknown_target(s, id, "a torque acts on a body", err);
        if (k != MODEL_BODY)
            return diag_error(err, id->span,
                              "a torque acts on a body, and '%s' is %s",
                              id->name, model_kind_name(k));
    } else if (k != MODEL_COORD && k != MODEL_PARTICLE && k != MODEL_BODY) {
        if (k == MODEL_NONE)
            return unknown_target(s, id,
                                  "a force acts on a coordinate, a particle "
                                  "or a body",
                                  err);
        return diag_error(err, id->span,
                          "a force acts on a coordinate, a particle or a "
                          "body, and '%s' is %s",
                          id->name, model_kind_name(k));
    } else if (k == MODEL_BODY && !at) {
        return diag_error(err, st->span,
                          "a force on a body acts at a point: write force "
                          "%s at POINT = [Fx, Fy, Fz]",
                          id->name);
    } else if (k != MODEL_BODY && at) {
        return diag_error(err, at->span,
                          "only a force on a body is applied at a point, and "
                          "'%s' is %s",
                          id->name, model_kind_name(k));
    }
    model_t cand;
    begin(s, &cand);
    model_force_t f = {id->name, id->span, st->u.force.value, at, torque};
    model_push_force(&cand, f);
    return commit_model(s, st, &cand, err);
}

/* The error for a name that should be a frame and is not. */
static int not_a_frame(const ctx_t *s, const ast_ident_t *id, diag_t *err)
{
    const model_t *m = &s->model;
    model_kind_t k = model_lookup(m, id->name, NULL, NULL);
    if (k != MODEL_NONE)
        return diag_error(err, id->span, "'%s' is %s, not a frame", id->name,
                          model_kind_name(k));
    const char *best = model_closest(m, MODEL_FRAME, id->name);
    if (best)
        return diag_error(err, id->span,
                          "unknown frame '%s'; did you mean '%s'?", id->name,
                          best);
    if (m->frames.n == 0)
        return diag_error(err, id->span,
                          "unknown frame '%s': declare the inertial frame "
                          "first (frame %s)",
                          id->name, id->name);
    return diag_error(err, id->span, "unknown frame '%s'", id->name);
}

/* frame A  |  frame A from P about AXIS by ANGLE (LANGUAGE.md §4.1).  The
 * frames form a tree under the one inertial frame: a parent is declared
 * before its children, so only a redeclaration can make a cycle. */
int decl_frame(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    const ast_ident_t *id = &st->u.frame.name;
    const ast_ident_t *parent = &st->u.frame.parent;
    const model_t *m = &s->model;
    if (check_free_name(s, m, id, MODEL_FRAME, err))
        return -1;
    long self = model_frame_index(m, id->name);
    char place[256];
    if (!parent->name) {
        long in = model_inertial_frame(m);
        if (in >= 0 && in != self) {
            ctx_where_text(s, m->frames.v[in].span, place, sizeof place);
            return diag_error(err, id->span,
                              "the model has an inertial frame already, %s "
                              "(at %s): every other frame turns from one, "
                              "as in frame %s from %s about z by ANGLE",
                              m->frames.v[in].name, place, id->name,
                              m->frames.v[in].name);
        }
    } else {
        long p = model_frame_index(m, parent->name);
        if (p < 0)
            return not_a_frame(s, parent, err);
        /* The chain from the parent up to the inertial frame must not pass
         * through this frame (only a redeclaration can make it do so: a
         * new frame is not walked to, which kept a chain of n frames
         * declared in order O(n²)). */
        char chain[512];
        int len = snprintf(chain, sizeof chain, "%s", id->name);
        for (long f = self >= 0 ? p : -1; f >= 0;) {
            const model_frame_t *fr = &m->frames.v[f];
            if (len >= 0 && (size_t)len < sizeof chain)
                len += snprintf(chain + len, sizeof chain - (size_t)len,
                                " -> %s", fr->name);
            if (f == self)
                return diag_error(err, parent->span,
                                  "frames cannot turn from each other in a "
                                  "cycle: %s",
                                  chain);
            f = fr->parent ? model_frame_index(m, fr->parent) : -1;
        }
    }
    model_t cand;
    begin(s, &cand);
    model_frame_t f = {id->name,          id->span,          parent->name,
                       parent->span,      st->u.frame.axis,  st->u.frame.angle,
                       st->span};
    if (self >= 0)
        model_set_frame(&cand, (size_t)self, f);
    else
        model_push_frame(&cand, f);
    return commit_model(s, st, &cand, err);
}

/* body B mass M at G frame F inertia I (LANGUAGE.md §4.1). */
int decl_body(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    const ast_ident_t *id = &st->u.body.name;
    if (check_free_name(s, &s->model, id, MODEL_BODY, err))
        return -1;
    if (s->model.lagrangian.name)
        return lagrangian_excludes(s, st, "body", err);
    if (model_frame_index(&s->model, st->u.body.frame.name) < 0)
        return not_a_frame(s, &st->u.body.frame, err);
    model_t cand;
    begin(s, &cand);
    model_body_t b = {id->name,
                      id->span,
                      st->u.body.mass,
                      st->u.body.position,
                      st->u.body.inertia,
                      st->u.body.frame.name,
                      st->u.body.frame.span,
                      st->span};
    long idx = model_body_index(&cand, id->name);
    if (idx >= 0)
        model_set_body(&cand, (size_t)idx, b);
    else
        model_push_body(&cand, b);
    return commit_model(s, st, &cand, err);
}

/* gravity G: replaces an earlier one (LANGUAGE.md §4.1). */
int decl_gravity(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    if (s->model.lagrangian.name)
        return lagrangian_excludes(s, st, "gravity", err);
    model_t cand;
    begin(s, &cand);
    cand.gravity = st->u.gravity;
    cand.gravity_span = st->span;
    return commit_model(s, st, &cand, err);
}

int decl_constraint(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    model_t cand;
    begin(s, &cand);
    const ast_ident_t *id = &st->u.constraint.name;
    model_constraint_t c = {NULL, false, st->span, st->u.constraint.lhs,
                            st->u.constraint.rhs};
    if (id->name) {
        if (check_free_name(s, &cand, id, MODEL_CONSTRAINT, err)) {
            model_free(&cand);
            return -1;
        }
        c.name = id->name;
    } else {
        /* Auto-named c1, c2, ...: the first free one from the count. */
        char buf[32];
        for (size_t k = cand.constraints.n + 1;; k++) {
            snprintf(buf, sizeof buf, "c%zu", k);
            if (model_lookup(&cand, buf, NULL, NULL) == MODEL_NONE)
                break;
        }
        /* The name must live as long as the session: keep it in the
         * arena of the statement's parse (the newest one). */
        c.name = ast_strndup(s->arena, buf, strlen(buf));
        c.auto_named = true;
    }
    long idx = model_constraint_index(&cand, c.name);
    if (idx >= 0) {
        model_set_constraint(&cand, (size_t)idx, c);
    } else if (cand.constraints.n >= SESSION_MAX_CONSTRAINTS) {
        model_free(&cand);
        return diag_error(err, st->span,
                          "a model may have at most %d constraints",
                          SESSION_MAX_CONSTRAINTS);
    } else {
        model_push_constraint(&cand, c);
    }
    const char *name = c.name;
    if (commit_model(s, st, &cand, err) != 0)
        return -1;
    /* The components of a vector constraint that vanish identically are
     * dropped, with a note (LANGUAGE.md §4). */
    ctx_note_dropped(s, NULL, s->lw, name);
    return 0;
}

int decl_kinematic(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    const ast_expr_t *lhs = st->u.constraint.lhs;
    if (lhs->kind != AST_PRIME || lhs->a->kind != AST_NAME ||
        model_coord_index(&s->model, lhs->a->name) < 0)
        return diag_error(err, lhs->span,
                          "the left side of a kinematic equation is the "
                          "velocity of a coordinate, like x'");
    model_t cand;
    begin(s, &cand);
    model_kinematic_t k = {lhs->a->name, st->span, st->u.constraint.rhs};
    size_t i;
    for (i = 0; i < cand.kinematics.n; i++)
        if (strcmp(cand.kinematics.v[i].coord, k.coord) == 0)
            break;
    if (i < cand.kinematics.n)
        model_set_kinematic(&cand, i, k);
    else
        model_push_kinematic(&cand, k);
    return commit_model(s, st, &cand, err);
}

int decl_equations(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    const ast_ident_t *id = &st->u.word;
    int m = ctx_lookup_method(id, err);
    if (m < 0)
        return -1;
    lower_t *lw = ctx_lowered(s, err);
    if (!lw)
        return -1;
    eom_t *e = ctx_prepare_here(s, lw, (eom_method_t)m, st->span, err);
    if (!e)
        return -1;
    ctx_set_eom(s, e);
    s->eom_generation = s->model.generation;
    s->eom_method = m;
    s->model.method = m;
    s->model.method_span = st->span;
    if (m == EOM_NAIVE) {
        diag_t w = {0};
        diag_error(&w, st->span,
                   "naive: the reduced-Lagrangian shortcut is not valid in "
                   "general (Lemos); kept for teaching and comparison");
        fflush(s->out);
        diag_print_warning(s->err, s->src, &w);
    }
    return 0;
}

/* ---- state ----------------------------------------------------------- */

/* memcpy of N doubles that may be 0 (with NULL arrays). */
static void copy_doubles(double *dst, const double *src, size_t n)
{
    if (n)
        memcpy(dst, src, n * sizeof *dst);
}

/* What `initial` was given (LANGUAGE.md §6): values and how each was
 * given (model_init_how_t), per coordinate, velocity and speed, and t.
 * The model remembers it for `reset` (q0, q0_how, ...). */
typedef struct init_spec {
    const double *q, *qd, *z;
    const unsigned char *q_how, *qd_how, *z_how;
    double t;
} init_spec_t;

static init_spec_t remembered_spec(const model_t *m)
{
    return (init_spec_t){m->q0.v, m->qd0.v, m->z0.v, m->q0_how.v,
                         m->qd0_how.v, m->z0_how.v, m->t0};
}

/* Appends "NAME = VALUE" to SAID (", " between). */
static void say_value(strbuf_t *said, const char *name, const char *prime,
                      double v)
{
    char num[40];
    strbuf_addf(said, "%s%s%s = %s", said->len ? ", " : "", name, prime,
                expr_format_number(v, num, sizeof num));
}

/* Rewrites an error of the solvers (span: the constraint's declaration)
 * to point at the statement AT, saying where the constraint is. */
static int at_statement_with_place(ctx_t *s, src_span_t at, diag_t *err)
{
    char place[256], msg[DIAG_MSG_MAX];
    ctx_where_text(s, err->span, place, sizeof place);
    snprintf(msg, sizeof msg, "%s", err->msg);
    diag_clear(err);
    return diag_error(err, at, "%s (the constraint is declared at %s)", msg,
                      place);
}

/* The state that SPEC determines (LANGUAGE.md §6), into VARS (which the
 * caller sized for LW's graph): names given keep their values; the
 * coordinates the holonomic constraints determine are solved for (from 0,
 * or from the guess), then the velocities the constraints determine; the
 * speeds and velocities follow each other through the kinematic
 * equations as doc/language.md says.  SAID (may be NULL) receives what
 * was solved for, "y = 0.8, y' = -0.75".  Errors point at AT. */
static int solve_initial(ctx_t *s, lower_t *lw, const init_spec_t *spec,
                         src_span_t at, double *vars, strbuf_t *said,
                         diag_t *err)
{
    const nh_system_t *sys = lower_system(lw);
    expr_graph_t *g = lower_graph(lw);
    size_t nv = expr_graph_nvars(g), n = sys->n;
    model_t *m = &s->model;
    /* on the heap: the flags of every coordinate, five times */
    bool *flags = xcalloc(5 * (n + 1), sizeof *flags);
    bool *given_q = flags, *guess_q = flags + (n + 1);
    bool *given_v = flags + 2 * (n + 1), *guess_v = flags + 3 * (n + 1);
    bool *solved_v = flags + 4 * (n + 1);
    bool any_z = false, any_v = false;
    lower_fill_vars(lw, m, vars);
    for (size_t i = 0; i < n; i++) {
        vars[sys->q[i]] = spec->q[i];
        vars[sys->qd[i]] = spec->qd[i];
        given_q[i] = spec->q_how[i] == MODEL_INIT_GIVEN;
        guess_q[i] = spec->q_how[i] == MODEL_INIT_GUESS;
        given_v[i] = spec->qd_how[i] == MODEL_INIT_GIVEN;
        guess_v[i] = spec->qd_how[i] == MODEL_INIT_GUESS;
        solved_v[i] = false;
        any_v |= given_v[i];
    }
    for (size_t i = 0; i < sys->m; i++) {
        vars[sys->z[i]] = spec->z[i];
        any_z |= spec->z_how[i] == MODEL_INIT_GIVEN;
    }
    vars[sys->t] = spec->t;

    eom_velsolver_t *vs = ctx_velsolver(s, err);
    const size_t *which;
    int rc = 0;
    if (!vs) {
        rc = -1;
        goto done;
    }
    /* Coordinates first: the velocity constraints of a holonomic f are
     * f' = ∂f/∂q q' + ∂f/∂t, which depend on them. */
    if (eom_velsolver_positions(vs, vars, given_q, guess_q, err) != 0) {
        rc = at_statement_with_place(s, at, err);
        goto done;
    }
    size_t nq = eom_velsolver_solved(vs, true, &which);
    for (size_t j = 0; said && j < nq; j++)
        say_value(said, sys->qname[which[j]], "", vars[sys->q[which[j]]]);

    /* Velocities: from the kinematic equations when speeds are the state
     * (maggi, gibbs_appell, or speeds given), else solved from the
     * constraints; speeds then follow from the velocities when the model
     * has kinematic equations, so every method finds a complete state. */
    int method = m->method >= 0 ? m->method : (int)eom_default_method(sys);
    bool speeds_state = method == EOM_MAGGI || method == EOM_GIBBS_APPELL;
    bool have_psi = sys->psi != NULL;
    if (have_psi && (speeds_state || any_z)) {
        /* Velocities given without speeds: the speeds that produce them
         * (the velocities not given solved from the constraints first). */
        if (!any_z && any_v) {
            if (eom_velsolver_solve(vs, vars, given_v, guess_v, err) != 0 ||
                eom_velsolver_speeds(vs, vars, err) != 0) {
                char msg[DIAG_MSG_MAX];
                snprintf(msg, sizeof msg, "%s", err->msg);
                diag_clear(err);
                rc = diag_error(err, at,
                                "the velocities given do not fit the "
                                "kinematic equations: %s",
                                msg);
                goto done;
            }
        }
        /* The velocities are those of the speeds; a given one that differs
         * is an error.  Those without a kinematic equation are solved
         * from the constraints below, with the others given. */
        for (size_t i = 0; i < n; i++) {
            if (!sys->psi[i])
                continue;
            double v = expr_eval(g, sys->psi[i], vars);
            if (given_v[i] &&
                fabs(v - vars[sys->qd[i]]) > 1e-9 * fmax(1.0, fabs(v))) {
                char b1[40], b2[40];
                rc = diag_error(err, at,
                                "%s' = %s is given, but the kinematic "
                                "equation gives %s' = %s from the speeds",
                                sys->qname[i],
                                expr_format_number(vars[sys->qd[i]], b1,
                                                   sizeof b1),
                                sys->qname[i],
                                expr_format_number(v, b2, sizeof b2));
                goto done;
            }
            vars[sys->qd[i]] = v;
            given_v[i] = true;
        }
    }
    if (eom_velsolver_solve(vs, vars, given_v, guess_v, err) != 0) {
        /* The fault is in this statement's values: point here, and say
         * where the constraint they violate was declared. */
        rc = at_statement_with_place(s, at, err);
        goto done;
    }
    size_t nqd = eom_velsolver_solved(vs, false, &which);
    for (size_t j = 0; j < nqd; j++)
        solved_v[which[j]] = true;
    /* With speeds as the state, a velocity without a kinematic equation
     * is the constraints' to determine (doc/language.md, Kane's form). */
    for (size_t i = 0; have_psi && speeds_state && i < n; i++)
        if (!sys->psi[i] && !solved_v[i] && !given_v[i]) {
            rc = diag_error(err, at,
                            "coordinate %s has no kinematic equation, and "
                            "the constraints do not determine %s' here, "
                            "which %s needs",
                            sys->qname[i], sys->qname[i],
                            eom_method_name(method));
            goto done;
        }
    for (size_t i = 0; said && i < n; i++)
        if (solved_v[i])
            say_value(said, sys->qname[i], "'", vars[sys->qd[i]]);
    if (have_psi && sys->m > 0 && !(speeds_state || any_z)) {
        diag_t tmp = {0};
        if (eom_velsolver_speeds(vs, vars, &tmp) != 0)
            for (size_t i = 0; i < sys->m; i++)
                vars[sys->z[i]] = 0; /* the speeds do not fit: unused */
    }
    for (uint32_t v = 0; v < nv; v++) {
        bool state = v == sys->t;
        for (size_t i = 0; i < n; i++)
            state |= v == sys->q[i] || v == sys->qd[i];
        if (state && !isfinite(vars[v])) {
            rc = diag_error(err, at,
                            "the initial state is not finite (%s = %g)",
                            expr_var_name(g, v), vars[v]);
            goto done;
        }
    }
done:
    free(flags);
    return rc;
}

/* The lowering with the components of vector constraints dropped where
 * SPEC puts the state (LANGUAGE.md §4: where the motion is), before the
 * rest of it is solved from the constraints; NULL with *err set. */
static lower_t *drops_at_spec(ctx_t *s, const init_spec_t *spec,
                              diag_t *err)
{
    model_t at;
    model_clone(&at, &s->model);
    copy_doubles(at.q.v, spec->q, at.q.n);
    copy_doubles(at.qd.v, spec->qd, at.qd.n);
    copy_doubles(at.z.v, spec->z, at.z.n);
    at.t = spec->t;
    ctx_drops_refresh(s, &at);
    model_free(&at);
    return ctx_lowered(s, err);
}

/* decl_initial's work, with Q, QD, Z and their _HOW zeroed arrays of the
 * model's coordinates and speeds (which decl_initial allocates). */
static int initial_run(ctx_t *s, const ast_stmt_t *st, lower_t *lw,
                       double *q, double *qd, double *z,
                       unsigned char *q_how, unsigned char *qd_how,
                       unsigned char *z_how, diag_t *err)
{
    const nh_system_t *sys = lower_system(lw);
    size_t n = sys->n, nz = sys->m;
    double t = 0;
    unsigned char t_how = 0;
    model_t *m = &s->model;

    for (size_t i = 0; i < st->u.bindings.n; i++) {
        const ast_binding_t *b = &st->u.bindings.items[i];
        const char *name = b->name.name;
        double x;
        if (ctx_eval_const(s, lw, m, b->value, &x, err))
            return -1;
        long qi = model_coord_index(m, name), zi = model_speed_index(m, name);
        unsigned char *how = NULL;
        double *slot = NULL;
        if (qi >= 0 && b->primes <= 1) {
            how = b->primes ? &qd_how[qi] : &q_how[qi];
            slot = b->primes ? &qd[qi] : &q[qi];
        } else if (zi >= 0 && b->primes == 0) {
            how = &z_how[zi];
            slot = &z[zi];
        } else if (strcmp(name, "t") == 0 && b->primes == 0) {
            how = &t_how;
            slot = &t;
        } else if (qi >= 0 || zi >= 0) {
            return diag_error(err, b->name.span,
                              "initial sets positions and velocities; an "
                              "acceleration follows from the equations");
        } else {
            model_kind_t k = model_lookup(m, name, NULL, NULL);
            if (k == MODEL_PARAM || k == MODEL_INPUT)
                return diag_error(err, b->name.span,
                                  "'%s' is %s: change it with `set "
                                  "%s = ...`",
                                  name, model_kind_name(k), name);
            const char **cands = xcalloc(n + nz + 1, sizeof *cands);
            for (size_t j = 0; j < n + nz; j++)
                cands[j] = j < n ? sys->qname[j] : sys->zname[j - n];
            cands[n + nz] = NULL;
            const char *best = source_closest(name, cands);
            free(cands);
            if (k == MODEL_NONE && best)
                return diag_error(err, b->name.span,
                                  "unknown name '%s'; did you mean '%s'?",
                                  name, best);
            if (k == MODEL_NONE)
                return diag_error(err, b->name.span,
                                  "unknown name '%s': initial sets "
                                  "coordinates, velocities, speeds and t",
                                  name);
            return diag_error(err, b->name.span,
                              "initial sets coordinates, velocities, speeds "
                              "and t; '%s' is %s",
                              name, model_kind_name(k));
        }
        if (*how)
            return diag_error(err, b->span, "'%s%s' is given twice", name,
                              b->primes ? "'" : "");
        /* A guess is a starting value for what the constraints solve
         * for: coordinates and velocities, never a speed or t. */
        if (b->guess && (slot == &t || zi >= 0))
            return diag_error(err, b->span,
                              "'%s' cannot take a starting guess: `~` is for "
                              "coordinates and velocities that the "
                              "constraints determine; give it with `=`",
                              name);
        *how = b->guess ? MODEL_INIT_GUESS : MODEL_INIT_GIVEN;
        *slot = x;
    }

    init_spec_t spec = {q, qd, z, q_how, qd_how, z_how, t};
    if (!(lw = drops_at_spec(s, &spec, err)))
        return -1;
    size_t nv = expr_graph_nvars(lower_graph(lw));
    double *vars = xcalloc(nv ? nv : 1, sizeof *vars);
    strbuf_t said;
    strbuf_init(&said);
    if (solve_initial(s, lw, &spec, st->span, vars, &said, err) != 0) {
        strbuf_free(&said);
        free(vars);
        return -1;
    }
    lower_store_state(lw, vars, m);
    free(vars);
    copy_doubles(m->q0.v, q, n);
    copy_doubles(m->qd0.v, qd, n);
    copy_doubles(m->z0.v, z, nz);
    if (n) {
        memcpy(m->q0_how.v, q_how, n);
        memcpy(m->qd0_how.v, qd_how, n);
    }
    if (nz)
        memcpy(m->z0_how.v, z_how, nz);
    m->t0 = t;
    m->state_drift = 0;
    sim_samples_clear(&s->samples);
    /* LANGUAGE.md §6: without -q, one line of what was solved for. */
    if (!s->quiet && said.len)
        fprintf(s->out, "solved from the constraints: %s\n", said.data);
    strbuf_free(&said);
    return 0;
}

int decl_initial(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    lower_t *lw = ctx_lowered(s, err);
    if (!lw)
        return -1;
    const nh_system_t *sys = lower_system(lw);
    size_t n = sys->n, nz = sys->m;
    /* on the heap, zeroed: the values and how each was given */
    double *q = xcalloc(2 * (n + 1) + nz + 1, sizeof *q);
    unsigned char *how = xcalloc(2 * (n + 1) + nz + 1, 1);
    int rc = initial_run(s, st, lw, q, q + n + 1, q + 2 * (n + 1), how,
                         how + n + 1, how + 2 * (n + 1), err);
    free(q);
    free(how);
    return rc;
}

/* LANGUAGE.md §6: reset solves the state again from the remembered
 * `initial` values — with the parameters as they are now, so that after
 * `set` of a parameter the constraints use, the state fits them again. */
int decl_reset(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    lower_t *lw = ctx_lowered(s, err);
    if (!lw)
        return -1;
    init_spec_t spec = remembered_spec(&s->model);
    if (!(lw = drops_at_spec(s, &spec, err)))
        return -1;
    size_t nv = expr_graph_nvars(lower_graph(lw));
    double *vars = xcalloc(nv ? nv : 1, sizeof *vars);
    if (solve_initial(s, lw, &spec, st->span, vars, NULL, err) != 0) {
        free(vars);
        return -1;
    }
    lower_store_state(lw, vars, &s->model);
    free(vars);
    s->model.state_drift = 0;
    sim_samples_clear(&s->samples);
    return 0;
}

/* After `set` of parameter or input P (LANGUAGE.md §6): when the constraints use
 * it and the state now violates them by more than 1e-9 (relative), or by
 * more than the drift the last simulate left it with, a warning names
 * them, and the next simulate will refuse the state (state_drift 0). */
/* After `set` changed the parameters marked in CHANGED (indices of
 * lower_system(lw)->p) and the inputs marked in IN_CHANGED (of ->in):
 * warns once when the constraints use one of them and the state no
 * longer fits them (LANGUAGE.md §6). */
static void set_check_constraints(ctx_t *s, lower_t *lw,
                                  const ast_stmt_t *st, const bool *changed,
                                  const bool *in_changed)
{
    const nh_system_t *sys = lower_system(lw);
    expr_graph_t *g = lower_graph(lw);
    size_t nv = expr_graph_nvars(g);
    bool *mask = xcalloc(nv ? nv : 1, sizeof *mask);
    bool found = false;
    for (size_t j = 0; j < sys->np; j++)
        if (changed[j])
            found = mask[sys->p[j]] = true;
    for (size_t j = 0; j < sys->ni; j++)
        if (in_changed[j])
            found = mask[sys->in[j]] = true;
    bool used = false;
    for (size_t a = 0; found && a < sys->r && !used; a++)
        used = expr_depends_any(g, sys->C[a], mask);
    free(mask);
    if (!used)
        return;
    double *vars = xcalloc(nv ? nv : 1, sizeof *vars);
    lower_fill_vars(lw, &s->model, vars);
    char names[512];
    double v = eom_constraint_violation(sys, vars, names, sizeof names);
    free(vars);
    if (!(v > fmax(EOM_STATE_RTOL, s->model.state_drift)))
        return;
    s->model.state_drift = 0;
    diag_t w = {0};
    diag_error(&w, st->span,
               "the state now violates %s: `reset` solves it again from the "
               "remembered initial values, `simulate ... project` pulls it "
               "back first",
               names);
    fflush(s->out);
    diag_print_warning(s->err, s->src, &w);
}

/* What `set` changes besides parameters, as a whole, so that a statement
 * that fails part way can put it all back. */
typedef struct set_settings {
    double rtol, atol, step;
    size_t max_steps;
    unsigned threads;
    char integrator[sizeof ((ctx_t *)0)->integrator];
} set_settings_t;

static void settings_save(const ctx_t *s, set_settings_t *o)
{
    o->rtol = s->rtol;
    o->atol = s->atol;
    o->step = s->step;
    o->max_steps = s->max_steps;
    o->threads = s->threads;
    memcpy(o->integrator, s->integrator, sizeof o->integrator);
}

static void settings_restore(ctx_t *s, const set_settings_t *o)
{
    s->rtol = o->rtol;
    s->atol = o->atol;
    s->step = o->step;
    s->max_steps = o->max_steps;
    s->threads = o->threads;
    memcpy(s->integrator, o->integrator, sizeof s->integrator);
}

/* One binding of `set`, applied: a setting, or the parameter whose index
 * goes to *PARAM (else -1).  `compile` is only checked here (*COMPILE:
 * its binding), and applied by decl_set once every binding succeeded. */
static int set_one(ctx_t *s, lower_t *lw, const ast_binding_t *b,
                   long *param, const ast_binding_t **compile, diag_t *err)
{
    const char *name = b->name.name;
    *param = -1;
    if (strcmp(name, "compile") == 0) {
        const ast_expr_t *v = b->value;
        if (v->kind != AST_NAME ||
            (strcmp(v->name, "on") != 0 && strcmp(v->name, "off") != 0))
            return diag_error(err, v->span, "compile is on or off");
        *compile = b;
        return 0;
    }
    if (strcmp(name, "integrator") == 0) {
        if (b->value->kind == AST_NAME &&
            ctx_integrator_known(b->value->name)) {
            snprintf(s->integrator, sizeof s->integrator, "%s",
                     b->value->name);
            return 0;
        }
        return ctx_unknown_integrator(
            b->value->kind == AST_NAME ? b->value->name : "", b->value->span,
            err);
    }
    double x;
    if (ctx_eval_const(s, lw, &s->model, b->value, &x, err))
        return -1;
    if (strcmp(name, "threads") == 0) {
        /* LANGUAGE.md §1.2: the worker processes of a sweep (work.h) */
        if (!(x >= 1 && x <= WORK_MAX_WORKERS && x == floor(x)))
            return diag_error(err, b->value->span,
                              "threads must be a whole number from 1 to %d",
                              WORK_MAX_WORKERS);
        s->threads = (unsigned)x;
        return 0;
    }
    if (strcmp(name, "max_steps") == 0) {
        if (!(x >= 1 && x <= 1e15 && x == floor(x)))
            return diag_error(err, b->value->span,
                              "max_steps must be a whole number from 1 to "
                              "1e15");
        s->max_steps = (size_t)x;
        return 0;
    }
    double *setting = strcmp(name, "rtol") == 0   ? &s->rtol
                      : strcmp(name, "atol") == 0 ? &s->atol
                      : strcmp(name, "step") == 0 ? &s->step
                                                  : NULL;
    if (setting) {
        if (!(x > 0))
            return diag_error(err, b->value->span, "%s must be positive",
                              name);
        *setting = x;
        return 0;
    }
    size_t idx;
    model_kind_t k = model_lookup(&s->model, name, &idx, NULL);
    if (k == MODEL_PARAM || k == MODEL_INPUT) {
        /* no new derivation needed; through the model, whose arrays are
         * shared with its clones (model.h) */
        if (k == MODEL_PARAM) {
            model_set_param_value(&s->model, idx, x);
            *param = (long)idx;
        } else {
            /* an input: numbered after the model's parameters */
            model_set_input_value(&s->model, idx, x);
            *param = (long)(s->model.params.n + idx);
        }
        return 0;
    }
    if (k == MODEL_NONE) {
        const char *best = lower_suggest(lw, name);
        if (best)
            return diag_error(err, b->name.span,
                              "unknown name '%s'; did you mean '%s'?", name,
                              best);
        return diag_error(err, b->name.span,
                          "unknown name '%s': set changes a parameter, an "
                          "input, rtol, atol, step, integrator, max_steps, "
                          "threads or compile",
                          name);
    }
    return diag_error(err, b->name.span,
                      "set changes a parameter, an input, rtol, atol, "
                      "step, integrator, max_steps, threads or compile; "
                      "'%s' is %s%s",
                      name, model_kind_name(k),
                      k == MODEL_COORD ? " (use initial)" : "");
}

/* `set a = 1, b = 2, rtol = 1e-8` (doc/language.md): the bindings take
 * effect from left to right, so that a value may use a parameter set
 * before it in the same statement, as in `param`; the statement is one
 * change — when a binding fails, the ones before it are put back. */
int decl_set(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    size_t n = st->u.bindings.n;
    const ast_binding_t *items = st->u.bindings.items;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(items[i].name.name, items[j].name.name) == 0)
                return diag_error(err, items[i].name.span,
                                  "'%s' is set twice in one statement",
                                  items[i].name.name);
    /* Settings alone need no lowering: `set compile = on` works in a
     * model that does not lower yet. */
    bool need_lw = false;
    for (size_t i = 0; i < n; i++) {
        const char *name = items[i].name.name;
        need_lw |= strcmp(name, "compile") != 0 &&
                   strcmp(name, "integrator") != 0;
    }
    lower_t *lw = NULL;
    if (need_lw && !(lw = ctx_lowered(s, err)))
        return -1;
    /* the parameters, then the inputs (set_one numbers them so) */
    size_t np = s->model.params.n, ni = s->model.inputs.n;
    double *old = xcalloc(np + ni + 1, sizeof *old);
    bool *changed = xcalloc(np + ni + 1, sizeof *changed);
    for (size_t j = 0; j < np; j++)
        old[j] = s->model.params.v[j].value;
    for (size_t j = 0; j < ni; j++)
        old[np + j] = s->model.inputs.v[j].value;
    set_settings_t saved;
    settings_save(s, &saved);
    const ast_binding_t *compile = NULL;
    int rc = 0;
    bool any = false;
    for (size_t i = 0; i < n && rc == 0; i++) {
        long pi;
        rc = set_one(s, lw, &items[i], &pi, &compile, err);
        if (rc == 0 && pi >= 0)
            any = changed[pi] = true;
    }
    if (rc != 0) {
        for (size_t j = 0; j < np; j++)
            if (changed[j])
                model_set_param_value(&s->model, j, old[j]);
        for (size_t j = 0; j < ni; j++)
            if (changed[np + j])
                model_set_input_value(&s->model, j, old[np + j]);
        settings_restore(s, &saved);
    } else {
        if (compile)
            ctx_set_compile(s, compile->value, err); /* checked: cannot fail */
        if (any) {
            /* the lowering numbers the parameters as the model does */
            const nh_system_t *sys = lower_system(lw);
            bool *mark = xcalloc(sys->np ? sys->np : 1, sizeof *mark);
            bool *imark = xcalloc(sys->ni ? sys->ni : 1, sizeof *imark);
            for (size_t j = 0; j < sys->np; j++) {
                size_t k;
                mark[j] = model_lookup(&s->model, sys->pname[j], &k, NULL) ==
                              MODEL_PARAM &&
                          changed[k];
            }
            for (size_t j = 0; j < sys->ni; j++) {
                size_t k;
                imark[j] = model_lookup(&s->model, sys->iname[j], &k, NULL) ==
                               MODEL_INPUT &&
                           changed[np + k];
            }
            set_check_constraints(s, lw, st, mark, imark);
            free(mark);
            free(imark);
        }
    }
    free(old);
    free(changed);
    return rc;
}

