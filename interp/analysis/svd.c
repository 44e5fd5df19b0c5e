/*
 * svd.c — the singular value decomposition of small dense matrices
 * (svd.h), on GSL's one-sided Jacobi method.
 *
 * Must not: print.
 */
#include "interp/analysis/svd.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"

int svd_factor(svd_t *d, const double *a, size_t rows, size_t cols)
{
    size_t p = rows > cols ? rows : cols;
    if (!d->u || d->rows != rows || d->cols != cols) {
        svd_free(d);
        d->u = xcalloc(p * cols + 1, sizeof *d->u);
        d->s = xcalloc(cols + 1, sizeof *d->s);
        d->v = xcalloc(cols * cols + 1, sizeof *d->v);
    }
    d->rows = rows;
    d->cols = cols;
    d->p = p;
    if (cols == 0)
        return 0;
    memset(d->u, 0, p * cols * sizeof *d->u);
    if (rows)
        memcpy(d->u, a, rows * cols * sizeof *d->u);
    for (size_t k = 0; k < rows * cols; k++)
        if (!isfinite(a[k]))
            return -1;
    gsl_matrix_view A = gsl_matrix_view_array(d->u, p, cols);
    gsl_matrix_view V = gsl_matrix_view_array(d->v, cols, cols);
    gsl_vector_view S = gsl_vector_view_array(d->s, cols);
    int rc = gsl_linalg_SV_decomp_jacobi(&A.matrix, &V.matrix, &S.vector);
    return rc == GSL_SUCCESS ? 0 : -1;
}

void svd_free(svd_t *d)
{
    free(d->u);
    free(d->s);
    free(d->v);
    memset(d, 0, sizeof *d);
}

double svd_max(const svd_t *d)
{
    double m = 0.0;
    for (size_t i = 0; i < d->cols; i++)
        m = fmax(m, d->s[i]);
    return m;
}

size_t svd_rank(const svd_t *d, double rtol)
{
    double tol = rtol * svd_max(d);
    size_t r = 0;
    for (size_t i = 0; i < d->cols; i++)
        r += d->s[i] > tol && d->s[i] > 0.0;
    return r;
}

void svd_solve(const svd_t *d, const double *b, double rtol, double *x)
{
    size_t m = d->rows, n = d->cols;
    double tol = rtol * svd_max(d);
    for (size_t j = 0; j < n; j++)
        x[j] = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!(d->s[i] > tol) || d->s[i] == 0.0)
            continue;
        /* (uᵢ · b) / σᵢ along vᵢ; U's padded rows meet b's zeros */
        double c = 0.0;
        for (size_t r = 0; r < m; r++)
            c += d->u[r * n + i] * b[r];
        c /= d->s[i];
        for (size_t j = 0; j < n; j++)
            x[j] += c * d->v[j * n + i];
    }
}

double svd_null(const svd_t *d, double *x)
{
    size_t n = d->cols;
    if (n == 0)
        return 0.0;
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (d->s[i] < d->s[best])
            best = i;
    for (size_t j = 0; j < n; j++)
        x[j] = d->v[j * n + best];
    return d->s[best];
}

size_t svd_null_space(const svd_t *d, double rtol, double *x)
{
    size_t n = d->cols, k = 0;
    double tol = rtol * svd_max(d);
    for (size_t i = 0; i < n; i++) {
        if (d->s[i] > tol && d->s[i] > 0.0)
            continue;
        for (size_t j = 0; j < n; j++)
            x[j * n + k] = d->v[j * n + i];
        k++;
    }
    return k;
}
