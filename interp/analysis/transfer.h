/*
 * transfer.h — transfer functions of the linearized motion (LANGUAGE.md
 * §7.2.1, `transfer` and `bode`): G(s) = c (sI − A)⁻¹ b + d for one
 * output (row c of C, entry d of D) and one input (column b of B), with
 * A, B, C, D as lin_io gives them (linearize.h).  G does not depend on
 * which variables make the state: a change of variables x = T x̃ gives
 * c T (sI − T⁻¹AT)⁻¹ T⁻¹ b, the same number.
 *
 * The solve is an LU factorization in complex arithmetic (GSL's
 * gsl_linalg_complex_LU_decomp, partial pivoting), so G is exact to the
 * rounding of one solve: no polynomial coefficients, whose roots an
 * ill-conditioned bicycle would lose.
 *
 * Ownership: the functions read the caller's arrays and write into the
 * caller's; tf_bode allocates nothing the caller frees.
 * Must not: print.
 */
#ifndef NH_TRANSFER_H
#define NH_TRANSFER_H

#include <stddef.h>

#include "lang/source.h"

/* A pivot of sI − A below this times its largest entry: s is a pole (an
 * eigenvalue of A, to rounding). */
#define TF_POLE_RTOL 1e-14

/* G(s) at s = SRE + i·SIM for the N×N matrix A (row-major), the column
 * B (N entries, stride BSTRIDE: a column of a row-major B), the row C
 * (N entries) and D, into *GRE, *GIM.  Returns 0, or -1 with *err set
 * (span NONE) when s is a pole of the motion (sI − A singular). */
int tf_eval(const double *a, size_t n, const double *b, size_t bstride,
            const double *c, double d, double sre, double sim, double *gre,
            double *gim, diag_t *err);

/* The points of a Bode plot from W1 to W2 (0 < W1 < W2): log-spaced,
 * TF_BODE_PER_DECADE a decade, at least TF_BODE_MIN and at most
 * TF_BODE_MAX of them, both ends included. */
#define TF_BODE_PER_DECADE 100
#define TF_BODE_MIN 201
#define TF_BODE_MAX 10001
size_t tf_bode_points(double w1, double w2);

/* G(iω) at the NPTS = tf_bode_points(W1, W2) frequencies into W, its
 * magnitude in dB into MAG and its phase in degrees into PHASE,
 * unwrapped (consecutive phases differ by less than 180°; the first in
 * (−180, 180]).  Returns 0, or -1 with *err set (span NONE) at a pole on
 * the imaginary axis or where G is 0 (its magnitude in dB is not
 * finite). */
int tf_bode(const double *a, size_t n, const double *b, size_t bstride,
            const double *c, double d, double w1, double w2, double *w,
            double *mag, double *phase, diag_t *err);

#endif
