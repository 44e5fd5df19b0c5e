/*
 * ast.h — the syntax tree of the .nh language (LANGUAGE.md §2–4, §6–10).
 *
 * The tree says what was written and where, nothing more: no name is
 * resolved here and no mechanics is known.  Every node carries its source
 * span.  Meaning is given in interp/.
 *
 * Ownership: every node, list and string of a parse lives in one
 * ast_arena_t and is freed with it, all at once; nodes are never freed one
 * by one, so error recovery cannot leak.  The interpreter keeps the arenas
 * of declarations alive for as long as the session may derive from them.
 */
#ifndef NH_AST_H
#define NH_AST_H

#include <stdbool.h>
#include <stddef.h>

#include "lang/source.h"

typedef struct ast_arena ast_arena_t;

/* The height of an expression tree the parser hands out is at most this
 * (every operator, call and vector counts): code walking a tree
 * recursively cannot exhaust the stack.  parse.h's PARSE_MAX_DEPTH. */
#define AST_MAX_DEPTH 200

ast_arena_t *ast_arena_new(void);
void ast_arena_free(ast_arena_t *arena); /* accepts NULL */
void *ast_alloc(ast_arena_t *arena, size_t size); /* zeroed; aborts on OOM */
char *ast_strndup(ast_arena_t *arena, const char *s, size_t n);

/* ---- expressions ---------------------------------------------------- */

typedef enum ast_expr_kind {
    AST_NUM,    /* num */
    AST_NAME,   /* name (t, pi, a coordinate, a parameter, a let, ...) */
    AST_PRIME,  /* a'  (total time derivative) */
    AST_INDEX,  /* a[b] (1-based component) */
    AST_NEG,    /* -a */
    AST_POS,    /* +a */
    AST_ADD,    /* a + b */
    AST_SUB,    /* a - b */
    AST_MUL,    /* a * b */
    AST_DIV,    /* a / b */
    AST_POW,    /* a ^ b */
    AST_CALL,   /* name(args...) — functions, let functions, diff, lambda */
    AST_VECTOR, /* [args...] */
    AST_MEMBER, /* A.x: name the frame, member the axis (LANGUAGE.md §4.1) */
} ast_expr_kind_t;

typedef struct ast_expr ast_expr_t;
struct ast_expr {
    ast_expr_kind_t kind;
    src_span_t span;      /* the whole expression */
    double num;           /* AST_NUM */
    const char *name;     /* AST_NAME, AST_CALL (the callee), AST_MEMBER */
    src_span_t name_span; /* AST_CALL: the callee's name; AST_MEMBER: the
                           * frame's */
    const char *member;   /* AST_MEMBER: the axis, "x" in A.x */
    ast_expr_t *a, *b;    /* operands; AST_PRIME, AST_NEG, AST_POS use a */
    ast_expr_t **args;    /* AST_CALL, AST_VECTOR */
    size_t nargs;
};

/* ---- statements ----------------------------------------------------- */

typedef struct ast_ident {
    const char *name; /* NULL when absent (an optional name not given) */
    src_span_t span;
} ast_ident_t;

/* NAME = value, with NAME' (primes = 1) allowed where the grammar allows it
 * (initial).  Used by param, initial, set.  In `initial`, NAME ~ value
 * (guess) gives a starting value for the constraints to solve from, not
 * a value (LANGUAGE.md §6). */
typedef struct ast_binding {
    ast_ident_t name;
    unsigned primes;
    bool guess;
    ast_expr_t *value;
    src_span_t span; /* the whole binding */
} ast_binding_t;

/* An option of `simulate` as written; the interpreter checks repeats. */
typedef enum ast_sim_option_kind {
    SIM_OPT_STEP,       /* step EXPR */
    SIM_OPT_INTEGRATOR, /* integrator NAME */
    SIM_OPT_RTOL,       /* rtol EXPR */
    SIM_OPT_ATOL,       /* atol EXPR */
    SIM_OPT_PROJECT,    /* project */
    SIM_OPT_UNTIL,      /* until EXPR = VALUE [rising|falling] (v3, §6.1) */
    SIM_OPT_SAMPLE_AT,  /* sample at EXPR = VALUE [rising|falling] */
} ast_sim_option_kind_t;

typedef struct ast_sim_option {
    ast_sim_option_kind_t kind;
    ast_expr_t *value;  /* step, rtol, atol; until and sample at: EXPR;
                         * integrator: the step after `h` (`integrator
                         * dla h 0.01`, §6.2), NULL when not given */
    ast_expr_t *target; /* until, sample at: VALUE */
    int dir;            /* until, sample at: +1 rising, -1 falling, 0 */
    ast_ident_t ident;  /* integrator: the name */
    ast_ident_t h;      /* integrator: the word before the step, which
                         * the grammar leaves to the interpreter to check
                         * is `h` (NULL name when absent) */
    src_span_t span;    /* keyword and value */
} ast_sim_option_t;

/* One parameter's range in a sweep (a grid has several, LANGUAGE.md
 * §1.2): NAME from FROM to TO step STEP. */
typedef struct ast_sweep_axis {
    ast_ident_t name;
    ast_expr_t *from, *to, *step;
    src_span_t span; /* NAME to STEP's end */
} ast_sweep_axis_t;

typedef enum ast_stmt_kind {
    STMT_PARAM,      /* param a = 1, b = 2            u.bindings */
    STMT_COORD,      /* coord x, y                     u.names */
    STMT_SPEED,      /* speed u1, u2                   u.names */
    STMT_LET,        /* let w = e  |  let f(a, b) = e  u.let */
    STMT_KINETIC,    /* kinetic T = e                  u.energy */
    STMT_POTENTIAL,  /* potential V = e                u.energy */
    STMT_LAGRANGIAN, /* lagrangian L = e               u.energy */
    STMT_PARTICLE,   /* particle P mass e at e         u.particle */
    STMT_FORCE,      /* force x = e | force B at e = e u.force */
    STMT_CONSTRAINT, /* constraint [NAME:] e = e       u.constraint */
    STMT_KINEMATIC,  /* kinematic e = e (lhs is x')    u.constraint */
    STMT_EQUATIONS,  /* equations NAME                 u.word */
    STMT_INITIAL,    /* initial x = 1, x' = 2, t = 0   u.bindings */
    STMT_SIMULATE,   /* simulate to e [options]        u.simulate */
    STMT_RESET,      /* reset */
    STMT_PRINT,      /* print e, e [> "file"]          u.output */
    STMT_ACCEL,      /* accel [> "file"] */
    STMT_TABLE,      /* table e, e [> "file"]          u.output */
    STMT_PLOT,       /* plot e, e [vs e] [> "file"]    u.output */
    STMT_SHOW,       /* show [latex] e [> "file"]      u.show */
    STMT_CHECK,      /* check [> "file"] */
    STMT_COMPARE,    /* compare A B [samples e] [> "file"]  u.compare */
    STMT_WORKSHEET,  /* worksheet [latex] NAME [> "file"]  u.worksheet */
    STMT_SET,        /* set NAME = e                   u.bindings (n = 1) */
    STMT_LOAD,       /* load "file"                    u.path */
    STMT_IMPORT,     /* import "name"                  u.path */
    STMT_HELP,       /* help [TOPIC] [> "file"]        u.word (name NULL) */
    STMT_QUIT,       /* quit */
    STMT_EXIT,       /* exit */
    STMT_FRAME,      /* frame A [from P about e by e]  u.frame */
    STMT_BODY,       /* body B mass e at e frame F inertia e  u.body */
    STMT_GRAVITY,    /* gravity e                      u.gravity */
    STMT_TORQUE,     /* torque B = e                   u.force */
    STMT_LINEARIZE,  /* linearize [VARS] [> "file"]    u.output (no vs) */
    STMT_EIGEN,      /* eigen [VARS] [> "file"]        u.output (no vs) */
    STMT_SWEEP,      /* sweep NAME from e to e step e [> "file"]: stmts
                                                       u.sweep */
    STMT_PLOT_SWEEP, /* plot sweep [> "file"] */
    STMT_EXPORT,     /* export c "file" | export python "file"  u.export_ */
    /* v3 */
    STMT_INPUT,      /* input NAME [= e], ...          u.bindings (value
                                                       NULL: not given) */
    STMT_OUTPUT,     /* output NAME = e, ...           u.bindings */
    STMT_DRAW,       /* draw KIND e, ... [mark e] [trail]  u.draw */
    STMT_STEADY,     /* steady x = 1, y ~ 0.1          u.bindings */
    STMT_FOLLOW,     /* follow NAME from e to e [step e] [> "file"]:
                        steady ...; stmts              u.follow */
    STMT_PLOT_FOLLOW, /* plot follow [e, e [vs e]] [> "file"]  u.output */
    STMT_LYAPUNOV,   /* lyapunov to e [step e] [VARS] [> "file"]
                                                       u.lyapunov */
    STMT_TRANSFER,   /* transfer OUT from IN at s = e [> "file"]
                                                       u.transfer */
    STMT_BODE,       /* bode OUT from IN from e to e [> "file"]
                                                       u.transfer */
    STMT_ANIMATE,    /* animate [speed e] [view e, e] [> "file"]
                                                       u.animate */
} ast_stmt_kind_t;

typedef struct ast_stmt ast_stmt_t;
struct ast_stmt {
    ast_stmt_kind_t kind;
    src_span_t span; /* from the keyword to the end of the statement */
    /* `> "file"` after a statement that prints (LANGUAGE.md §7): the
     * unescaped name and the string's span; name NULL when absent. */
    ast_ident_t to_file;
    union {
        struct {
            ast_binding_t *items;
            size_t n;
        } bindings;
        struct {
            ast_ident_t *items;
            size_t n;
        } names;
        struct {
            ast_ident_t name;
            bool is_function;   /* let f(a, b) = ... (even with no params) */
            ast_ident_t *params;
            size_t nparams;
            ast_expr_t *body;
        } let;
        struct {
            ast_ident_t name;
            ast_expr_t *value;
        } energy;
        struct {
            ast_ident_t name;
            ast_expr_t *mass;
            ast_expr_t *position;
        } particle;
        struct {
            ast_ident_t target; /* a coordinate, a particle or a body */
            ast_expr_t *at;     /* force B at P = F: P; else NULL */
            ast_expr_t *value;
        } force;                /* also torque (at NULL) */
        struct {
            ast_ident_t name;
            ast_ident_t parent; /* parent.name NULL: the inertial frame */
            ast_expr_t *axis;   /* x, y, z (AST_NAME) or a vector; NULL
                                 * for the inertial frame */
            ast_expr_t *angle;
        } frame;
        struct {
            ast_ident_t name;
            ast_expr_t *mass, *position;
            ast_ident_t frame;
            ast_expr_t *inertia; /* [I1, I2, I3] or six entries */
        } body;
        ast_expr_t *gravity;
        struct {
            ast_ident_t name; /* name.name NULL: auto-named */
            ast_expr_t *lhs, *rhs;
        } constraint;
        struct {
            ast_expr_t *to;
            ast_sim_option_t *options;
            size_t noptions;
        } simulate;
        struct {
            ast_expr_t **items;
            size_t n;
            ast_expr_t *vs;       /* plot only; NULL: t */
        } output;
        struct {
            bool latex;
            ast_expr_t *expr; /* `show model` is AST_NAME "model" */
        } show;
        struct {
            ast_ident_t a, b;
            ast_expr_t *samples; /* NULL when not given */
        } compare;
        ast_ident_t word; /* equations, help */
        struct {
            ast_ident_t name;
            bool latex;
        } worksheet;
        struct {
            ast_sweep_axis_t *axes;    /* one per parameter; a grid has
                                        * several, the last varying
                                        * fastest */
            size_t naxes;
            ast_stmt_t **body;         /* to the end of the line */
            size_t n;
            src_span_t head;           /* `sweep` to the ':' */
        } sweep;
        struct {
            ast_ident_t name;          /* a parameter, or a variable given
                                        * with = in the steady */
            ast_expr_t *from, *to;
            ast_expr_t *step;          /* NULL when not given */
            ast_stmt_t **body;         /* body[0] is the STMT_STEADY */
            size_t n;
            src_span_t head;           /* `follow` to the ':' */
        } follow;
        struct {
            ast_expr_t *to;
            ast_expr_t *step;          /* NULL when not given */
            ast_expr_t **vars;         /* NULL, 0: every independent one */
            size_t nvars;
        } lyapunov;
        struct {
            ast_ident_t out, in;
            ast_ident_t svar;          /* transfer: the name before '='
                                        * (the interpreter checks it is
                                        * `s`) */
            ast_expr_t *s;             /* transfer: the value of s */
            ast_expr_t *w1, *w2;       /* bode: the frequency range */
        } transfer;
        struct {
            ast_ident_t kind;          /* disk, sphere, line, point: the
                                        * interpreter checks the word */
            ast_expr_t **args;
            size_t nargs;
            ast_ident_t mark_word;     /* the word before MARK (checked
                                        * to be `mark`); NULL name when
                                        * absent */
            ast_expr_t *mark;          /* NULL when absent */
            ast_ident_t trail_word;    /* the last word (checked to be
                                        * `trail`); NULL name: absent */
            bool trail;                /* trail_word given */
        } draw;
        struct {
            ast_expr_t *speed;         /* NULL when absent */
            ast_ident_t view;          /* the word `view` (checked by the
                                        * interpreter); NULL name when
                                        * absent */
            ast_expr_t *az, *el;
        } animate;
        struct {
            const char *path; /* unescaped */
            src_span_t span;
        } path;
        struct {
            ast_ident_t format; /* the word after `export`: c */
            const char *path;   /* unescaped */
            src_span_t span;    /* the string literal */
        } export_;
    } u;
};

typedef struct ast_program {
    ast_stmt_t **stmts;
    size_t n;
} ast_program_t;

const char *ast_stmt_keyword(ast_stmt_kind_t kind); /* "param", "coord", ... */

#endif
