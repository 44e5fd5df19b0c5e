/*
 * table.h — which function runs each kind of statement: the one thing
 * the session knows of the statement modules.  Statements that act on
 * the session itself (load, import, quit, exit) are not in the table.
 */
#ifndef NH_CLI_TABLE_H
#define NH_CLI_TABLE_H

#include "interp/cli/context.h"

/* The function for KIND, or NULL when the session runs it itself. */
stmt_fn stmt_lookup(ast_stmt_kind_t kind);

/* Whether a statement of KIND writes the file of its `> "file"` itself
 * (plot); for the others the session sends their output there. */
bool stmt_names_own_file(ast_stmt_kind_t kind);

#endif
