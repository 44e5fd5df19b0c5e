/*
 * context.h — what a statement may use of the session that runs it: the
 * model, what is derived from it (the lowering, the chosen equations),
 * the recorded samples, the simulation settings and the output streams.
 * This is the narrow interface between the statement modules (decl.c,
 * output.c, motion.c, help.c) and the session (session.c), which owns a
 * context and hands it to each statement; the statements never see the
 * session's files, arenas or imports.
 *
 * Ownership: the context belongs to its session.  It borrows the source
 * set (the session's) and the arena of the text being run; it owns the
 * model, the lowering, the equations and the samples (ctx_free).
 * Must not: print except through OUT and ERR; exit().
 */
#ifndef NH_CLI_CONTEXT_H
#define NH_CLI_CONTEXT_H

#include <stdbool.h>
#include <stdio.h>

#include "interp/base/outfile.h"
#include "interp/base/util.h"
#include "interp/eom/eom.h"
#include "interp/mech/lower.h"
#include "interp/mech/model.h"
#include "interp/run/sim.h"
#include "lang/ast.h"
#include "lang/source.h"

/* The equations are dense in the coordinates (M is n x n): these bound
 * the memory and time one model can ask for (doc/limits.md). */
#define SESSION_MAX_COORDS 1000
#define SESSION_MAX_CONSTRAINTS 1000
/* A lowering whose graph holds more nodes after a failed statement is
 * dropped and rebuilt when next needed, so the memory goes back. */
#define SESSION_REBUILD_NODES 500000
/* The values one sweep may take (LANGUAGE.md §7.2, doc/limits.md): its
 * rows are kept for `plot sweep`. */
#define SWEEP_MAX_VALUES 100000
/* The ranges one grid may have (`sweep a from …, b from …`). */
#define SWEEP_MAX_AXES 16

/* What a statement printed on OUT, for a front end that shows kinds of
 * output apart (the machine interface, doc/protocol.md).  The session
 * sets CTX_OUT_TEXT before each statement; `show latex` sets LaTeX, a
 * `plot` drawn as SVG text sets SVG and an `animate` shown in place sets
 * HTML. */
typedef enum ctx_output {
    CTX_OUT_TEXT,
    CTX_OUT_LATEX,
    CTX_OUT_SVG,
    CTX_OUT_HTML,
} ctx_output_t;

/* A table of numbers built a row at a time: the rows of a sweep
 * (LANGUAGE.md §7.2).  The first row fixes the columns (titles, and
 * which are drawn dashed: the imaginary parts of eigenvalues); each
 * later row must add the same number of values. */
typedef struct ctx_rows {
    size_t ncols;      /* fixed by the first row */
    char **titles;     /* ncols, malloc'ed */
    bool *dashed;      /* ncols */
    double *data;      /* nrows × ncols */
    size_t nrows, cap; /* complete rows, rows allocated */
    double *cur;       /* the row being built */
    size_t col, curcap;
    char **line; /* NULL, or cap: each row's text as a worker wrote it
                    (plot_table_row), NULL where this process writes it */
} ctx_rows_t;

void ctx_rows_free(ctx_rows_t *t);
/* Frees the rows' texts (after the table is written: the numbers stay). */
void ctx_rows_free_lines(ctx_rows_t *t);
/* Gives the last complete row the text LINE (owned from now on). */
void ctx_row_set_line(ctx_rows_t *t, char *line);
/* Ends the row being built: true when it has the first row's number of
 * columns (then it is kept), false otherwise (then it is dropped). */
bool ctx_row_end(ctx_rows_t *t);

/* The last follow's table (LANGUAGE.md §7.3): its rows as a sweep's
 * (NAME, the unknowns, what the statements printed), the `point` column
 * of each (a string, "" when empty), and the state at each point (WIDTH
 * doubles: the value vector of the lowering of model generation
 * GENERATION), from which `plot follow COLS` evaluates its expressions. */
typedef struct ctx_family {
    ctx_rows_t rows;
    char **marks;             /* rows.nrows strings */
    double *states;           /* rows.nrows × width */
    size_t width;
    unsigned long generation;
    char *name;               /* NAME */
} ctx_family_t;

void ctx_family_free(ctx_family_t *f);

struct lin;

struct ctx;
/* A statement run on a context: 0, or -1 with *err set (and nothing
 * changed: LANGUAGE.md §9). */
typedef int (*stmt_fn)(struct ctx *s, const ast_stmt_t *st, diag_t *err);

typedef struct ctx {
    const source_set_t *src; /* the session's texts (borrowed) */
    ast_arena_t *arena;      /* the arena of the text being run (borrowed) */

    model_t model;

    /* Derived from the model, rebuilt when model.generation changes. */
    lower_t *lw;
    unsigned long lw_generation;
    eom_t *eom;
    unsigned long eom_generation;
    int eom_method;
    struct lin *lin; /* linearize.h's, for s->eom (ctx_lin) */
    struct eom_velsolver *vs; /* for s->lw (ctx_velsolver) */
    struct react *react;      /* for s->lw (ctx_react) */

    /* Recorded samples: rows of the value vector of the lowering of
     * generation samples_generation, made by the method samples_method.
     * A declaration that changes the model, `initial` and `reset` clear
     * them; declaring an analysis name (a let, a parameter the model
     * does not read) keeps them (LANGUAGE.md §6).  The rows hold the
     * variables samples_layout names (NUL-separated, one per column), as
     * the lowering that recorded them numbered them: ctx_samples_sync()
     * lays them out as the current lowering does. */
    sim_samples_t samples;
    unsigned long samples_generation;
    int samples_method;
    char *samples_layout;
    size_t samples_layout_len;
    /* The declaration that last cleared samples, until the next
     * simulate (SRC_SPAN_NONE: none), for the message of a statement
     * that needs them. */
    src_span_t samples_cleared_at;

    /* Simulation defaults (`set rtol = ...`). */
    double rtol, atol, step;
    size_t max_steps; /* 0: sim's default */
    char integrator[32];

    /* `set threads = N` (LANGUAGE.md §1.2): the worker processes of a
     * sweep (work.h); 1 runs in this one.  --shard K/N: every sweep runs
     * only the points whose index i has i mod N = K − 1 and writes an
     * index column (shard_n 0: no sharding). */
    unsigned threads;
    unsigned shard_k, shard_n;

    /* `set compile = on` (LANGUAGE.md §8.1): the equations of simulate
     * and compare run compiled (run/native.h).  A method whose compile
     * failed for the model of compile_failed_generation (bit METHOD of
     * compile_failed) runs on the tapes without trying again; so do its
     * derivatives when their compile failed (compile_failed_tangents). */
    bool compile;
    unsigned long compile_failed_generation;
    unsigned compile_failed, compile_failed_tangents;
    /* The model generation whose mass matrix was last looked at for a
     * negative direction (ctx_eom; doc/language.md "Warnings"). */
    unsigned long definite_generation;

    bool quiet;
    FILE *out, *err;
    ctx_output_t out_kind; /* what the statement running now prints */
    bool svg_plots; /* `plot` without a file: SVG text on OUT (a notebook),
                       not gnuplot's text drawing */
    bool html_inline; /* `animate` without a file: an HTML part on OUT (a
                         notebook), not animation.html */
    unsigned long animations; /* shown in place so far: their pages' ids */
    char *plot_png, *plot_pdf; /* and the same plot as PNG and PDF, in
                       base64 (the front end takes them and frees them;
                       NULL when none) */
    /* The descriptors nh --protocol serves on (requests, replies; -1 when
     * none): a statement's file must not be one of them (ctx_check_output),
     * or its text would enter the channel and put it out of step. */
    int channel_fd[2];
    nh_stop_t stop; /* session_interrupt, the time limit */

    /* While a sweep runs its statements (LANGUAGE.md §7.2), ROW is the
     * table its rows go to: print, eigen and accel add their values to
     * the row being built (ctx_row_add) instead of printing, and the
     * statements say nothing else.  SWEEP is the last sweep's table, for
     * `plot sweep`. */
    ctx_rows_t *row;
    ctx_rows_t sweep;
    /* The statement table (table.h's stmt_lookup, set by the session):
     * how a statement that runs others inside (sweep, follow) reaches
     * them without using their modules, which may use it in turn. */
    stmt_fn (*lookup)(ast_stmt_kind_t kind);
    /* The last follow (`plot follow`), and, while a follow runs its
     * statements, what the first eigen at the current point found: its
     * verdict (lin_verdict_t) and how many eigenvalues, and complex
     * pairs, have a positive real part (the point column's marks). */
    ctx_family_t family;
    struct {
        bool set;
        int verdict;
        size_t unstable, unstable_pairs;
    } eig_seen;
} ctx_t;

/* Writes the rows of a sweep as CSV to OUT (a header, then one row each);
 * under --shard first a line `# nh --shard K/N: COUNT points` that
 * --merge reads (merge.h). */
void ctx_write_table(const ctx_t *s, const ctx_rows_t *t, size_t count,
                     FILE *out);
/* The file a sweep writes for `> "NAME"`: NAME, or under --shard K/N
 * NAME with `.K-of-N` before its extension (`rows.csv` → `rows.1-of-4.csv`),
 * so that shards on one machine do not write one file.  Newly allocated. */
char *ctx_shard_path(const ctx_t *s, const char *name);

/* lw_generation of a lowering that no model generation matches. */
#define CTX_STALE ((unsigned long)-1)

/* A context with an empty model and the default settings. */
void ctx_init(ctx_t *s, const source_set_t *src, bool quiet, FILE *out,
              FILE *err);
void ctx_free(ctx_t *s);

/* The lowered current model (built on demand); NULL with *err set. */
lower_t *ctx_lowered(ctx_t *s, diag_t *err);
/* The prepared equations of the chosen method (on demand); NULL with
 * *err set, at span WHERE. */
eom_t *ctx_eom(ctx_t *s, src_span_t where, diag_t *err);
/* METHOD prepared for LW's system (eom_prepare_at) with the current
 * state as where the motion is; NULL with *err set. */
eom_t *ctx_prepare_here(ctx_t *s, lower_t *lw, eom_method_t method,
                        src_span_t where, diag_t *err);
/* The solver of the velocities the constraints determine (velocity.h)
 * for the current lowering, prepared once per lowering (`initial` runs
 * once per value of a sweep); NULL with *err set. */
struct eom_velsolver *ctx_velsolver(ctx_t *s, diag_t *err);
/* The reactions of the dropped components (react.h) for the current
 * lowering, prepared once per lowering; NULL with *err set. */
struct react *ctx_react(ctx_t *s, diag_t *err);
/* Frees what is derived from the lowering — the equations, the
 * linearization, the velocity solver — when the lowering changes. */
void ctx_free_derived(ctx_t *s);
/* Replaces the equations by E (may be NULL), freeing the old ones and
 * what borrows them. */
void ctx_set_eom(ctx_t *s, eom_t *e);
/* The linearization of the chosen equations (linearize.h), prepared for
 * ctx_eom's equations and kept with them; NULL with *err set. */
struct lin *ctx_lin(ctx_t *s, src_span_t where, diag_t *err);
/* LANGUAGE.md §4: the components of vector constraints are dropped
 * where the motion is.  When the lowering's verdicts do not hold at the
 * state of AT (NULL: the session's model; AT has its declarations), the
 * lowering is made again there and what is derived from it dropped,
 * with a note per component that changed (not under -q).  Called before
 * each statement, and by `initial` and `reset` at the coordinates given
 * before they solve the rest.  A lowering borrowed before is freed. */
void ctx_drops_refresh(ctx_t *s, const model_t *at);
/* The note of each component of constraint NAME that LW drops and OLD
 * (NULL: a lowering without the constraint) kept, or the reverse. */
void ctx_note_dropped(ctx_t *s, const lower_t *old, const lower_t *lw,
                      const char *name);
/* Drops the lowering and the equations (rebuilt when next needed). */
void ctx_drop_lowering(ctx_t *s);
/* The same when a failed statement left the graph larger than
 * SESSION_REBUILD_NODES. */
void ctx_drop_large_lowering(ctx_t *s);

/* `set compile = on | off` with VALUE (a name) at its span; a note when
 * no compiler is found (not under -q).  0, or -1 with *err set. */
int ctx_set_compile(ctx_t *s, const ast_expr_t *value, diag_t *err);
/* E (prepared for the current model) compiled when compile is on, and on
 * its tapes when off; with TANGENTS the derivatives of its tapes too (for
 * linearize, eigen, the implicit integrators: a second compile, done
 * when first needed).  Returns 0 (also when no compiler is found, or the
 * method's compile failed before: the tapes then run), or -1 with *err
 * set at WHERE when the compile fails (remembered: the next statement
 * runs on the tapes). */
int ctx_compile(ctx_t *s, eom_t *e, bool tangents, src_span_t where,
                diag_t *err);
/* Clears the samples, remembering that the declaration at SPAN did when
 * there were any. */
void ctx_clear_samples(ctx_t *s, src_span_t span);
/* Lays the recorded samples out as LW (the current lowering) numbers its
 * variables, fills the parameters the model does not read with their
 * current values (they are analysis names: `param scale = 10` after a run
 * scales a table), and forgets which declaration cleared samples.  Called
 * by simulate before it appends rows. */
void ctx_samples_sync(ctx_t *s, lower_t *lw);
/* For a statement at SPAN that reads the samples: the current lowering
 * with the samples laid out for it, or NULL with *err set — no samples
 * (saying which declaration cleared them, when one did). */
lower_t *ctx_samples_ready(ctx_t *s, src_span_t span, diag_t *err);

/* The method ID names (with "did you mean"); -1 with *err set. */
int ctx_lookup_method(const ast_ident_t *id, diag_t *err);

/* The error for NAME, which is not an integrator, at SPAN. */
/* The integrators of `simulate … integrator NAME` and `set integrator`:
 * GSL's (sim.h) and dla (run/dla.h, LANGUAGE.md §6.2), NULL-terminated;
 * ctx_integrator_known says whether NAME is one. */
extern const char *const ctx_integrators[];
bool ctx_integrator_known(const char *name);
int ctx_unknown_integrator(const char *name, src_span_t span, diag_t *err);
/* Evaluates a constant expression (numbers and parameters) of model M,
 * lowered by LW; -1 with *err set. */
int ctx_eval_const(ctx_t *s, lower_t *lw, const model_t *m,
                   const ast_expr_t *e, double *out, diag_t *err);

/* Inside a sweep: appends VALUE, in a column titled TITLE (drawn dashed
 * by `plot sweep` when DASHED), to the row being built.  The first row
 * sets the titles; in a later one a column beyond the first row's is an
 * error at WHERE (a statement whose values change in number). */
int ctx_row_add(ctx_t *s, const char *title, bool dashed, double value,
                src_span_t where, diag_t *err);
/* Rewrites *ERR, an error of the equations at the value vector VARS for
 * the statement at WHERE: at the declaration whose expression cannot be
 * evaluated (or differentiated) there when there is one (LANGUAGE.md §4),
 * else at WHERE; with the state either way.  Returns -1. */
int ctx_state_error(ctx_t *s, lower_t *lw, const double *vars,
                    src_span_t where, diag_t *err);
/* The first half of that: when a declaration cannot be evaluated at VARS,
 * *ERR says so at the declaration (true); else *ERR is left alone. */
bool ctx_blame_declaration(ctx_t *s, lower_t *lw, const double *vars,
                           src_span_t where, diag_t *err);

/* Appends " at t = …; state: x = …, x' = …" to a message. */
void ctx_describe_state(ctx_t *s, const double *vars, char *buf,
                        size_t size);
/* "FILE:LINE:COL" of SP, or "an earlier statement" without a place. */
void ctx_where_text(const ctx_t *s, src_span_t sp, char *buf, size_t size);

/* An error at AT when PATH (links followed) is one of the streams nh
 * --protocol serves on (s->channel_fd: the same device and inode, as
 * /dev/stdout, /dev/fd/1 and /proc/self/fd/1 are); else 0. */
int ctx_check_output(const ctx_t *s, const char *path, src_span_t at,
                     diag_t *err);
/* Opens PATH for a statement's output (outfile.h; REGULAR: it must be a
 * regular file, outfile_open_regular), after ctx_check_output.  Returns
 * 0, or -1 with "cannot write 'PATH': WHY" at AT. */
int ctx_open_output(const ctx_t *s, outfile_t *of, const char *path,
                    bool regular, src_span_t at, diag_t *err);

/* The text of SPAN with whitespace runs collapsed to one space and
 * comments dropped (malloc'ed). */
char *ctx_span_text(const ctx_t *s, src_span_t span);

#endif
