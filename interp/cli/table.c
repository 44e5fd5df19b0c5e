/*
 * table.c — the statement table (table.h): each kind of statement and the
 * module function that runs it.  The session dispatches through it, so it
 * depends on this file and not on the modules.
 */
#include "interp/cli/table.h"

#include "interp/cli/stmts.h"

static const stmt_fn stmt_table[] = {
    [STMT_PARAM] = decl_param,
    [STMT_COORD] = decl_names,
    [STMT_SPEED] = decl_names,
    [STMT_LET] = decl_let,
    [STMT_KINETIC] = decl_energy,
    [STMT_POTENTIAL] = decl_energy,
    [STMT_LAGRANGIAN] = decl_energy,
    [STMT_PARTICLE] = decl_particle,
    [STMT_FORCE] = decl_force,
    [STMT_CONSTRAINT] = decl_constraint,
    [STMT_KINEMATIC] = decl_kinematic,
    [STMT_EQUATIONS] = decl_equations,
    [STMT_INITIAL] = decl_initial,
    [STMT_SIMULATE] = motion_simulate,
    [STMT_RESET] = decl_reset,
    [STMT_PRINT] = output_print,
    [STMT_ACCEL] = output_accel,
    [STMT_TABLE] = motion_table,
    [STMT_PLOT] = motion_plot,
    [STMT_SHOW] = output_show,
    [STMT_CHECK] = output_check,
    [STMT_COMPARE] = output_compare,
    [STMT_WORKSHEET] = output_worksheet,
    [STMT_SET] = decl_set,
    [STMT_HELP] = help_stmt,
    [STMT_FRAME] = decl_frame,
    [STMT_BODY] = decl_body,
    [STMT_GRAVITY] = decl_gravity,
    [STMT_TORQUE] = decl_force,
    [STMT_LINEARIZE] = stability_linearize,
    [STMT_EIGEN] = stability_eigen,
    [STMT_SWEEP] = stability_sweep,
    [STMT_PLOT_SWEEP] = stability_plot_sweep,
    [STMT_LYAPUNOV] = stability_lyapunov,
    [STMT_EXPORT] = export_stmt,
    [STMT_STEADY] = family_steady,
    [STMT_FOLLOW] = family_follow,
    [STMT_PLOT_FOLLOW] = family_plot_follow,
    [STMT_DRAW] = draw_declare,
    [STMT_ANIMATE] = draw_animate,
    /* load, import, quit, exit: the session's own (session.c) */
};

bool stmt_names_own_file(ast_stmt_kind_t kind)
{
    /* plot's file is an image, and its extension chooses the format (so
     * bode's and animate's); a sweep or a follow keeps the rows it wrote
     * before a value that failed */
    return kind == STMT_PLOT || kind == STMT_PLOT_SWEEP ||
           kind == STMT_SWEEP || kind == STMT_FOLLOW ||
           kind == STMT_PLOT_FOLLOW || kind == STMT_BODE ||
           kind == STMT_ANIMATE;
}

stmt_fn stmt_lookup(ast_stmt_kind_t kind)
{
    if ((unsigned)kind >= sizeof stmt_table / sizeof stmt_table[0])
        return NULL;
    return stmt_table[kind];
}
