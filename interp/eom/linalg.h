/*
 * linalg.h — the small dense linear algebra the equations of motion need:
 * LU with partial pivoting and a singularity test, LDLᵀ for the definite
 * symmetric matrices of mechanics, a rank by full
 * pivoting, and regularised normal equations for small least-squares
 * steps.  Sizes are those of a mechanical model (n ≲ 20), so plain loops
 * on row-major arrays beat calling out to a general library (see the
 * measurements in linalg.c).
 *
 * Matrices are row-major: element (i, j) of an R×C matrix is a[i*C + j].
 *
 * Ownership: every function works in the caller's buffers and allocates
 * nothing, so the ODE right-hand side can call it on the hot path.
 * Must not: allocate, print, or know what the matrices mean.
 */
#ifndef NH_LINALG_H
#define NH_LINALG_H

#include <stdbool.h>
#include <stddef.h>

/* The relative pivot size below which a matrix is called singular. */
#define LINALG_RTOL 1e-12

/* Factors the n×n matrix A in place into P·A = L·U (unit lower L below
 * the diagonal, U above it, and 1/U_kk on the diagonal so that solves
 * multiply instead of dividing); perm[k] is the original row now in
 * row k.  Returns 0, or -1 when a pivot is below rtol times the largest
 * entry of its original row (the matrix is singular or so near it that
 * the solution means nothing); A is then left partly factored. */
int linalg_lu(double *a, size_t n, size_t *perm, double rtol);

/* Solves A x = b with the factors of linalg_lu; b is overwritten by x.
 * WORK has n doubles. */
void linalg_lu_solve(const double *lu, size_t n, const size_t *perm,
                     double *b, double *work);

/* linalg_lu_solve for K right sides at once: B has n rows of K (row i
 * holds unknown i of every right side), overwritten by the solutions.
 * WORK has 2n doubles. */
void linalg_lu_solve_many(const double *lu, size_t n, const size_t *perm,
                          double *b, size_t k, double *work);

/* Factors the symmetric n×n matrix A, of which the lower triangle is
 * read, into A = L·D·Lᵀ without pivoting: unit lower L below the
 * diagonal, 1/D on the diagonal; the upper triangle is scratch.  For a
 * definite matrix (a mass matrix, G = ΨᵀMΨ, H = BM⁻¹Bᵀ) this is stable
 * and about a third of the work of linalg_lu.  Returns 0, or -1 when a
 * pivot differs in sign from the first or is below rtol times the
 * largest entry (A is not definite, or nearly singular): the caller
 * then falls back on linalg_lu, which also decides singularity. */
int linalg_ldlt(double *a, size_t n, double rtol);

/* Solves A x = b with the factors of linalg_ldlt; b is overwritten by x. */
void linalg_ldlt_solve(const double *ld, size_t n, double *b);
/* Its two halves: L y = b (unit lower L), and Lᵀ x = y; b is overwritten.
 * A x = b is forward, y_i *= 1/D_i (the diagonal of the factors), back. */
void linalg_ldlt_forward(const double *ld, size_t n, double *b);
void linalg_ldlt_back(const double *ld, size_t n, double *b);

/* Rank of the rows×cols matrix A by Gaussian elimination with full
 * pivoting; a pivot below rtol times the largest entry counts as zero.
 * A is destroyed. */
size_t linalg_rank(double *a, size_t rows, size_t cols, double rtol);

/* Greedily, in the order ORDER (N items), the items of V that are
 * linearly independent: item t is the vector V[t*SI + e*SE], e < LEN
 * (the rows of a row-major matrix with SI = cols, SE = 1; its columns
 * with SI = 1, SE = cols).  Each is reduced by those kept before
 * (elimination on their pivots) and kept when what is left exceeds RTOL
 * times the largest entry of it and of the items kept: the items that
 * raise linalg_rank one by one, in O(N · LEN · rank) instead of
 * O(N · LEN · rank²).  KEPT[t] (may be NULL) is set for them.  BASIS has
 * room for LEN × LEN doubles, PIV for LEN entries.  Returns how many were
 * kept: the rank of the items. */
size_t linalg_independent(const double *v, size_t si, size_t se, size_t len,
                          const size_t *order, size_t n, double rtol,
                          bool *kept, double *basis, size_t *piv);

/* A least-squares step: minimises |J d + r|² + mu |d|² for the
 * rows×cols matrix J (cols unknowns), writing d into D.  WORK has at
 * least cols*cols + cols doubles, PERM cols entries.  Returns 0, or -1
 * when the normal matrix is singular (only possible with mu = 0). */
int linalg_lsq_step(const double *j, size_t rows, size_t cols,
                    const double *r, double mu, double *d, double *work,
                    size_t *perm);

#endif
