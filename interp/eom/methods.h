/*
 * methods.h — the method families' entry points, read by the table in
 * methods.c and by nothing else.  Each fills the eom_t that eom_prepare
 * allocated (method, system and derived objects set) for the methods of
 * its family: its nodes, its tape, its compute and describe functions.
 * Returns 0, or -1 with *err set (the method does not apply).
 */
#ifndef NH_EOM_METHODS_H
#define NH_EOM_METHODS_H

#include "interp/eom/common.h"

/* mult.c: lagrange, multipliers, second_kind. */
int eom_prepare_mult(eom_t *e, src_span_t where, diag_t *err);
/* voronec.c: voronec, naive. */
int eom_prepare_voronec(eom_t *e, src_span_t where, diag_t *err);
/* maggi.c: maggi, gibbs_appell. */
int eom_prepare_maggi(eom_t *e, src_span_t where, diag_t *err);

#endif
