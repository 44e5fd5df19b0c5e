/*
 * svd.h — the singular value decomposition of a small dense matrix of any
 * shape, for the rank-revealing solves of steady motions and their
 * families (steady.c, follow.c, LANGUAGE.md §7.3): minimum-norm least
 * squares, the rank, a null vector.  GSL's one-sided Jacobi SVD
 * (gsl_linalg_SV_decomp_jacobi), which computes small singular values to
 * high relative accuracy; a matrix with fewer rows than columns is padded
 * with zero rows, which changes neither its singular vectors V nor its
 * nonzero singular values.
 *
 * Matrices are row-major: element (i, j) of an R×C matrix is a[i*C + j].
 * Ownership: an svd_t owns its buffers (svd_free); svd_factor copies A.
 * Must not: print, or know what the matrices mean.
 */
#ifndef NH_SVD_H
#define NH_SVD_H

#include <stddef.h>

typedef struct svd {
    size_t rows, cols; /* of the matrix factored */
    size_t p;          /* rows of U: max(rows, cols) */
    double *u;         /* p×cols, the left singular vectors as columns */
    double *s;         /* cols singular values (in no particular order) */
    double *v;         /* cols×cols, the right singular vectors as columns */
} svd_t;

/* Factors the ROWS×COLS matrix A into D (whose buffers it allocates, or
 * reuses when D held a factorization of the same shape; a zeroed svd_t
 * is empty).  Returns 0, or -1 when GSL fails (a non-finite entry). */
int svd_factor(svd_t *d, const double *a, size_t rows, size_t cols);
void svd_free(svd_t *d);

/* The largest singular value. */
double svd_max(const svd_t *d);
/* The number of singular values above RTOL times the largest. */
size_t svd_rank(const svd_t *d, double rtol);
/* The minimum-norm least-squares solution X (cols) of A x = B (rows),
 * the singular values below RTOL times the largest taken as zero. */
void svd_solve(const svd_t *d, const double *b, double rtol, double *x);
/* The right singular vector of the smallest singular value (unit, cols
 * entries) into X; returns that singular value. */
double svd_null(const svd_t *d, double *x);
/* The right singular vectors whose singular values are below RTOL times
 * the largest (a basis of the numerical null space, as columns of the
 * cols×*count matrix X, row-major with stride cols): their count. */
size_t svd_null_space(const svd_t *d, double rtol, double *x);

#endif
