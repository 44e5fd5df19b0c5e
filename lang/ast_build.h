/*
 * ast_build.h — constructors for the syntax tree (internal to lang/: the
 * grammar's actions call these and nothing else).
 *
 * Ownership: everything is allocated in the arena passed as the first
 * argument and lives until that arena is freed; nothing here is freed one
 * by one.  Strings passed in (names, paths) must already live in the same
 * arena or be static.  Must not: resolve names, check meaning, print.
 *
 * Expression constructors that take sub-expressions return NULL when the
 * new node would be more than AST_MAX_DEPTH levels deep (the height of
 * the tree, counting every operator, call and vector); the caller reports
 * the error.  So every tree the parser hands out has height at most
 * AST_MAX_DEPTH, and code walking it recursively cannot exhaust the stack.
 */
#ifndef NH_AST_BUILD_H
#define NH_AST_BUILD_H

#include "lang/ast.h"

/* A growable list of pointers in the arena (old arrays are left to the
 * arena when the list grows: at most as much again is wasted). */
typedef struct ast_list {
    void **items;
    size_t n, cap;
} ast_list_t;

ast_list_t *ast_list_new(ast_arena_t *arena);
/* Appends ITEM to LIST (a NULL list is a new one); returns the list. */
ast_list_t *ast_list_push(ast_arena_t *arena, ast_list_t *list, void *item);

/* An identifier value; NAME may be NULL for "absent". */
ast_ident_t ast_ident(const char *name, src_span_t span);
ast_ident_t *ast_ident_new(ast_arena_t *arena, ast_ident_t id);

/* ---- expressions ---- */
ast_expr_t *ast_num(ast_arena_t *arena, double value, src_span_t span);
ast_expr_t *ast_name(ast_arena_t *arena, const char *name, src_span_t span);
/* AST_PRIME, AST_NEG, AST_POS. */
ast_expr_t *ast_unop(ast_arena_t *arena, ast_expr_kind_t kind, ast_expr_t *a,
                     src_span_t span);
/* AST_ADD, AST_SUB, AST_MUL, AST_DIV, AST_POW, AST_INDEX (a[b]). */
ast_expr_t *ast_binop(ast_arena_t *arena, ast_expr_kind_t kind,
                      ast_expr_t *a, ast_expr_t *b, src_span_t span);
/* ARGS: a list of ast_expr_t * (NULL: no arguments). */
ast_expr_t *ast_call(ast_arena_t *arena, ast_ident_t callee, ast_list_t *args,
                     src_span_t span);
ast_expr_t *ast_vector(ast_arena_t *arena, ast_list_t *items, src_span_t span);
/* A.x: TEXT is the token as written ("A.x"), split at its dot. */
ast_expr_t *ast_member(ast_arena_t *arena, const char *text, src_span_t span);
/* Widens E's span to SPAN (a parenthesized expression covers its
 * parentheses); returns E. */
ast_expr_t *ast_paren(ast_expr_t *e, src_span_t span);
/* The height of a tree built here (a leaf is 1). */
unsigned ast_expr_height(const ast_expr_t *e);

/* ---- statement parts ---- */
ast_binding_t *ast_binding_new(ast_arena_t *arena, ast_ident_t name,
                               unsigned primes, ast_expr_t *value,
                               src_span_t span);
/* NAME ~ value in `initial`: a binding with guess set. */
ast_binding_t *ast_guess_new(ast_arena_t *arena, ast_ident_t name,
                             unsigned primes, ast_expr_t *value,
                             src_span_t span);
ast_sim_option_t *ast_sim_option_new(ast_arena_t *arena,
                                     ast_sim_option_kind_t kind,
                                     ast_expr_t *value, ast_ident_t ident,
                                     src_span_t span);

/* until / sample at (KIND): EXPR = TARGET, DIR +1 rising, -1 falling,
 * 0 either. */
ast_sim_option_t *ast_sim_event_new(ast_arena_t *arena,
                                    ast_sim_option_kind_t kind,
                                    ast_expr_t *expr, ast_expr_t *target,
                                    int dir, src_span_t span);
/* integrator NAME [H STEP]: H the word before STEP (NULL name and STEP
 * NULL when absent). */
ast_sim_option_t *ast_sim_integrator_new(ast_arena_t *arena, ast_ident_t name,
                                         ast_ident_t h, ast_expr_t *step,
                                         src_span_t span);
/* One range of a sweep: NAME from FROM to TO step STEP. */
ast_sweep_axis_t *ast_sweep_axis_new(ast_arena_t *arena, ast_ident_t name,
                                     ast_expr_t *from, ast_expr_t *to,
                                     ast_expr_t *step, src_span_t span);

/* ---- statements ---- */
/* A statement with no operands (reset, accel, check, quit, exit). */
ast_stmt_t *ast_stmt_new(ast_arena_t *arena, ast_stmt_kind_t kind,
                         src_span_t span);
/* param, initial, set, steady, input, output: BINDINGS is a list of
 * ast_binding_t *. */
ast_stmt_t *ast_stmt_bindings(ast_arena_t *arena, ast_stmt_kind_t kind,
                              ast_list_t *bindings, src_span_t span);
/* coord, speed: NAMES is a list of ast_ident_t *. */
ast_stmt_t *ast_stmt_names(ast_arena_t *arena, ast_stmt_kind_t kind,
                           ast_list_t *names, src_span_t span);
/* let: PARAMS is a list of ast_ident_t * (NULL for none). */
ast_stmt_t *ast_stmt_let(ast_arena_t *arena, ast_ident_t name,
                         bool is_function, ast_list_t *params,
                         ast_expr_t *body, src_span_t span);
/* kinetic, potential, lagrangian. */
ast_stmt_t *ast_stmt_energy(ast_arena_t *arena, ast_stmt_kind_t kind,
                            ast_ident_t name, ast_expr_t *value,
                            src_span_t span);
ast_stmt_t *ast_stmt_particle(ast_arena_t *arena, ast_ident_t name,
                              ast_expr_t *mass, ast_expr_t *position,
                              src_span_t span);
/* force (AT NULL unless `force B at P = F`), torque (AT NULL). */
ast_stmt_t *ast_stmt_force(ast_arena_t *arena, ast_stmt_kind_t kind,
                           ast_ident_t target, ast_expr_t *at,
                           ast_expr_t *value, src_span_t span);
/* frame A (PARENT.name NULL, AXIS and ANGLE NULL: the inertial frame),
 * frame A from P about AXIS by ANGLE. */
ast_stmt_t *ast_stmt_frame(ast_arena_t *arena, ast_ident_t name,
                           ast_ident_t parent, ast_expr_t *axis,
                           ast_expr_t *angle, src_span_t span);
ast_stmt_t *ast_stmt_body(ast_arena_t *arena, ast_ident_t name,
                          ast_expr_t *mass, ast_expr_t *position,
                          ast_ident_t frame, ast_expr_t *inertia,
                          src_span_t span);
ast_stmt_t *ast_stmt_gravity(ast_arena_t *arena, ast_expr_t *g,
                             src_span_t span);
/* constraint (NAME.name NULL when unnamed), kinematic. */
ast_stmt_t *ast_stmt_constraint(ast_arena_t *arena, ast_stmt_kind_t kind,
                                ast_ident_t name, ast_expr_t *lhs,
                                ast_expr_t *rhs, src_span_t span);
/* equations, worksheet, help (WORD.name NULL: no topic). */
ast_stmt_t *ast_stmt_word(ast_arena_t *arena, ast_stmt_kind_t kind,
                          ast_ident_t word, src_span_t span);
ast_stmt_t *ast_stmt_worksheet(ast_arena_t *arena, bool latex,
                               ast_ident_t name, src_span_t span);
/* OPTIONS: a list of ast_sim_option_t * (NULL for none). */
ast_stmt_t *ast_stmt_simulate(ast_arena_t *arena, ast_expr_t *to,
                              ast_list_t *options, src_span_t span);
/* print, table, plot: ITEMS a list of ast_expr_t *; VS NULL when absent. */
ast_stmt_t *ast_stmt_output(ast_arena_t *arena, ast_stmt_kind_t kind,
                            ast_list_t *items, ast_expr_t *vs,
                            src_span_t span);
/* A printing statement with `> "file"` after it (FILE.name the unescaped
 * name, or NULL when there is none): ST, with its span widened to SPAN. */
ast_stmt_t *ast_stmt_to_file(ast_stmt_t *st, ast_ident_t file,
                             src_span_t span);
ast_stmt_t *ast_stmt_show(ast_arena_t *arena, bool latex, ast_expr_t *e,
                          src_span_t span);
ast_stmt_t *ast_stmt_compare(ast_arena_t *arena, ast_ident_t a, ast_ident_t b,
                             ast_expr_t *samples, src_span_t span);
/* load, import: PATH.name unescaped, PATH.span the string literal. */
/* sweep AXES [> FILE]: BODY — AXES a list of ast_sweep_axis_t * (a grid
 * when more than one), BODY statements (NULL entries for empty ones,
 * which are dropped); HEAD spans `sweep` to the colon. */
ast_stmt_t *ast_stmt_sweep(ast_arena_t *arena, ast_list_t *axes,
                           ast_ident_t file, ast_list_t *body,
                           src_span_t head, src_span_t span);
/* follow NAME from FROM to TO [step STEP] [> FILE]: STEADY; REST —
 * STEP NULL when absent; STEADY becomes body[0]. */
ast_stmt_t *ast_stmt_follow(ast_arena_t *arena, ast_ident_t name,
                            ast_expr_t *from, ast_expr_t *to,
                            ast_expr_t *step, ast_ident_t file,
                            ast_stmt_t *steady, ast_list_t *rest,
                            src_span_t head, src_span_t span);
/* lyapunov to TO [step STEP] [VARS]: STEP NULL and VARS NULL when absent. */
ast_stmt_t *ast_stmt_lyapunov(ast_arena_t *arena, ast_expr_t *to,
                              ast_expr_t *step, ast_list_t *vars,
                              src_span_t span);
/* transfer OUT from IN at SVAR = VALUE */
ast_stmt_t *ast_stmt_transfer(ast_arena_t *arena, ast_ident_t out,
                              ast_ident_t in, ast_ident_t svar,
                              ast_expr_t *value, src_span_t span);
/* bode OUT from IN from W1 to W2 */
ast_stmt_t *ast_stmt_bode(ast_arena_t *arena, ast_ident_t out, ast_ident_t in,
                          ast_expr_t *w1, ast_expr_t *w2, src_span_t span);
/* draw KIND ARGS [MARK_WORD MARK] [TRAIL_WORD]: names NULL and MARK NULL
 * when absent. */
ast_stmt_t *ast_stmt_draw(ast_arena_t *arena, ast_ident_t kind,
                          ast_list_t *args, ast_ident_t mark_word,
                          ast_expr_t *mark, ast_ident_t trail_word,
                          src_span_t span);
/* animate [speed SPEED] [VIEW AZ, EL]: NULL / NULL name when absent. */
ast_stmt_t *ast_stmt_animate(ast_arena_t *arena, ast_expr_t *speed,
                             ast_ident_t view, ast_expr_t *az, ast_expr_t *el,
                             src_span_t span);
ast_stmt_t *ast_stmt_path(ast_arena_t *arena, ast_stmt_kind_t kind,
                          ast_ident_t path, src_span_t span);
/* export FORMAT "PATH" */
ast_stmt_t *ast_stmt_export(ast_arena_t *arena, ast_ident_t format,
                            ast_ident_t path, src_span_t span);

/* Copies a list of ast_stmt_t * into PROGRAM (arrays in the arena). */
void ast_program_from_list(ast_arena_t *arena, ast_list_t *stmts,
                           ast_program_t *program);

#endif
