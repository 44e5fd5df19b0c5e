/*
 * stmts.h — the statements that run on a context (context.h), one
 * function each, by module.  The table in table.c maps statement kinds to
 * them; the session reads that table and never calls them by name.
 *
 * Every function runs one statement ST and returns 0, or -1 with *err
 * set (nothing changed: LANGUAGE.md §9).
 */
#ifndef NH_CLI_STMTS_H
#define NH_CLI_STMTS_H

#include "interp/cli/context.h"

/* Declarations and state (decl.c). */
int decl_param(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int decl_names(ctx_t *s, const ast_stmt_t *st, diag_t *err); /* coord, speed */
int decl_let(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int decl_energy(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int decl_particle(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int decl_force(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int decl_constraint(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int decl_kinematic(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int decl_frame(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int decl_body(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int decl_gravity(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int decl_equations(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int decl_initial(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int decl_reset(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int decl_set(ctx_t *s, const ast_stmt_t *st, diag_t *err);

/* Output statements (output.c). */
int output_print(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int output_accel(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int output_show(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int output_compare(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int output_check(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int output_worksheet(ctx_t *s, const ast_stmt_t *st, diag_t *err);
/* The reports `show NAME` prints (model, eom, …), NULL-terminated. */
extern const char *const output_show_subjects[];

/* Motion statements (motion.c). */
int motion_simulate(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int motion_table(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int motion_plot(ctx_t *s, const ast_stmt_t *st, diag_t *err);

/* Linear stability (stability.c, LANGUAGE.md §7.2). */
int stability_linearize(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int stability_eigen(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int stability_sweep(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int stability_plot_sweep(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int stability_lyapunov(ctx_t *s, const ast_stmt_t *st, diag_t *err);
/* Steady motions and their families (families.c, LANGUAGE.md §7.3). */
int family_steady(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int family_follow(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int family_plot_follow(ctx_t *s, const ast_stmt_t *st, diag_t *err);
/* draw and animate (draw.c, LANGUAGE.md §7.5). */
int draw_declare(ctx_t *s, const ast_stmt_t *st, diag_t *err);
int draw_animate(ctx_t *s, const ast_stmt_t *st, diag_t *err);
/* export c "file.c" (export.c). */
int export_stmt(ctx_t *s, const ast_stmt_t *st, diag_t *err);

/* help (help.c), and its texts: the text of TOPIC (NULL: the overview),
 * or NULL when there is none; the topics, NULL-terminated, one per entry
 * (help_entry_count of them). */
int help_stmt(ctx_t *s, const ast_stmt_t *st, diag_t *err);
const char *help_text(const char *topic);
extern const char *const help_topics[];
size_t help_entry_count(void);

#endif
