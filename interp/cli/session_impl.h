/*
 * session_impl.h — the inside of a session, shared by the modules that
 * execute statements (session.c: declarations, state, files; output.c:
 * print, accel, show, compare, check).  Not for other modules.
 */
#ifndef NH_SESSION_IMPL_H
#define NH_SESSION_IMPL_H

#include "interp/eom/eom.h"
#include "interp/mech/lower.h"
#include "interp/mech/model.h"
#include "interp/run/sim.h"
#include "interp/cli/session.h"
#include "interp/base/util.h"
#include "lang/ast.h"

#define SESSION_MAX_LOAD_DEPTH 16
/* The equations are dense in the coordinates (M is n x n): these bound
 * the memory and time one model can ask for (doc/limits.md). */
#define SESSION_MAX_COORDS 1000
#define SESSION_MAX_CONSTRAINTS 1000
/* A lowering whose graph holds more nodes after a failed statement is
 * dropped and rebuilt when next needed, so the memory goes back. */
#define SESSION_REBUILD_NODES 500000

struct session {
    source_set_t *src;
    ast_arena_t **arenas; /* every parse's arena, kept for the session */
    size_t narenas, cap_arenas;

    model_t model;

    /* Derived from the model, rebuilt when model.generation changes. */
    lower_t *lw;
    unsigned long lw_generation;
    eom_t *eom;
    unsigned long eom_generation;
    int eom_method;

    /* Recorded samples: rows of the value vector of the lowering of
     * generation samples_generation, made by the method samples_method.
     * A declaration, `initial` and `reset` clear them. */
    sim_samples_t samples;
    unsigned long samples_generation;
    int samples_method;

    /* Simulation defaults (`set rtol = ...`). */
    double rtol, atol, step;
    size_t max_steps; /* 0: sim's default */
    char integrator[32];

    bool quiet;
    FILE *out, *err;
    bool quit;
    nh_stop_t stop;    /* session_interrupt, the time limit */
    double time_limit; /* seconds per session_run_text; 0: none */
    unsigned load_depth;
    char **imported; /* modules already imported */
    size_t nimported;
    char **libdirs;
    size_t nlibdirs;
    const char **completions;
};

/* The lowered current model (built on demand); NULL with *err set. */
lower_t *session_lowered(session_t *s, diag_t *err);
/* The prepared equations of the chosen method (on demand); NULL with
 * *err set, at span WHERE. */
eom_t *session_eom(session_t *s, src_span_t where, diag_t *err);

/* The method ID names (with "did you mean"); -1 with *err set. */
int session_lookup_method(const ast_ident_t *id, diag_t *err);

/* The error for NAME, which is not an integrator, at SPAN. */
int session_unknown_integrator(const char *name, src_span_t span,
                               diag_t *err);
/* Evaluates a constant expression (numbers and parameters) of model M,
 * lowered by LW; -1 with *err set. */
int session_eval_const(session_t *s, lower_t *lw, const model_t *m,
                       const ast_expr_t *e, double *out, diag_t *err);

/* Appends " at t = …; state: x = …, x' = …" to a message. */
void session_describe_state(session_t *s, const double *vars, char *buf,
                            size_t size);

/* The text of SPAN with whitespace runs collapsed to one space and
 * comments dropped (malloc'ed). */
char *session_span_text(const session_t *s, src_span_t span);

/* Output statements (output.c). */
int output_print(session_t *s, const ast_stmt_t *st, diag_t *err);
int output_accel(session_t *s, const ast_stmt_t *st, diag_t *err);
int output_show(session_t *s, const ast_stmt_t *st, diag_t *err);
int output_compare(session_t *s, const ast_stmt_t *st, diag_t *err);
int output_check(session_t *s, const ast_stmt_t *st, diag_t *err);
int output_worksheet(session_t *s, const ast_stmt_t *st, diag_t *err);

/* Motion statements (motion.c). */
int motion_simulate(session_t *s, const ast_stmt_t *st, diag_t *err);
int motion_table(session_t *s, const ast_stmt_t *st, diag_t *err);
int motion_plot(session_t *s, const ast_stmt_t *st, diag_t *err);

/* Help texts (help.c): the text of TOPIC (NULL: the overview), or NULL
 * when there is none. */
const char *help_text(const char *topic);
extern const char *const help_topics[];

#endif
