/*
 * cgen_jac.h — the exact Jacobian of the generated right-hand side as C
 * text (cgen_jac.c), for cgen.c to append to the file when asked
 * (cgen_options_t.jacobian: `export python`, LANGUAGE.md §8.2).
 *
 * Ownership: appends to the caller's buffer; reads E.
 * Must not: print; change E.
 */
#ifndef NH_CGEN_JAC_H
#define NH_CGEN_JAC_H

#include "interp/base/util.h"
#include "interp/eom/eom.h"

/* Appends to B, after the rest of cgen_text's file for NAME (it calls
 * nh_load, nh_values, nh_tan_main and nh_tan_pre, which that text
 * defines):
 *   const int NAME_jacobian_work;
 *   int NAME_jacobian(double t, const double *y, const double *p,
 *                     double *jac, double *work);
 * the nstate × nstate Jacobian of NAME_rhs, row-major, WORK holding
 * NAME_jacobian_work doubles; 0, or the status of NAME_rhs_status. */
void cgen_jacobian(const eom_t *e, const char *name, strbuf_t *b);

#endif
