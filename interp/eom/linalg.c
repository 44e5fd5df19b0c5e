/*
 * linalg.c — small dense LU, LDLᵀ, rank and least-squares steps
 * (linalg.h).
 *
 * Why not gsl_linalg_LU_decomp: for the sizes of a model the call and the
 * gsl_matrix/gsl_permutation bookkeeping cost more than the arithmetic.
 * Measured on the development machine (gcc 12 -O2, AMD EPYC, factor + one
 * solve of a random diagonally dominant n×n matrix, 2·10⁶ repetitions,
 * copying the matrix in each time; ns per call, the noise is about 15%):
 *
 *       n     linalg_lu + linalg_lu_solve   gsl_linalg_LU_decomp + _solve
 *       2             23                            124
 *       3             37                            174
 *       5             86                            369
 *       7            183                            478
 *      10            385                            768
 *
 * so this file keeps its own loops.  LDLᵀ (no pivoting) serves the
 * definite symmetric matrices of mechanics at a third of LU's work; the
 * callers fall back on LU when it finds a matrix not definite.  The
 * singularity test is relative to the largest entry of the matrix, which
 * is enough for the well-scaled
 * matrices of mechanics (M, H, G, [M -B^T; B 0]); a model whose masses
 * differ by twelve orders of magnitude from its constraint coefficients
 * would need equilibration first.
 *
 * Must not: allocate (the ODE right-hand side calls it), print.
 */
#include "interp/eom/linalg.h"

#include <math.h>
#include <string.h>

/* Two numbers at once as a GCC vector (SSE2), each lane the scalar
 * operations (the same bits), or as two doubles: the loops of the
 * factorisation and of the solves take pairs of columns this way.
 * linalg_sub2: a[0..1] −= f·b[0..1] in place; linalg_pair_sub: s −
 * f·b[0..1]; linalg_pair_mul: s·f. */
#if defined(__GNUC__)
typedef double linalg_pair_t __attribute__((vector_size(16), aligned(8)));
static inline linalg_pair_t linalg_pair(double a, double b)
{
    return (linalg_pair_t){a, b};
}
static inline linalg_pair_t linalg_pair_sub(linalg_pair_t s, double f,
                                            const double *b)
{
    linalg_pair_t y;
    memcpy(&y, b, sizeof y);
    return s - f * y;
}
static inline linalg_pair_t linalg_pair_mul(linalg_pair_t s, double f)
{
    return s * f;
}
static inline void linalg_pair_store(double *a, linalg_pair_t s)
{
    memcpy(a, &s, sizeof s);
}
#else
typedef struct linalg_pair {
    double x, y;
} linalg_pair_t;
static inline linalg_pair_t linalg_pair(double a, double b)
{
    return (linalg_pair_t){a, b};
}
static inline linalg_pair_t linalg_pair_sub(linalg_pair_t s, double f,
                                            const double *b)
{
    return (linalg_pair_t){s.x - f * b[0], s.y - f * b[1]};
}
static inline linalg_pair_t linalg_pair_mul(linalg_pair_t s, double f)
{
    return (linalg_pair_t){s.x * f, s.y * f};
}
static inline void linalg_pair_store(double *a, linalg_pair_t s)
{
    a[0] = s.x;
    a[1] = s.y;
}
#endif

static inline void linalg_sub2(double *a, double f, const double *b)
{
    linalg_pair_store(a, linalg_pair_sub(linalg_pair(a[0], a[1]), f, b));
}

static double linalg_max_abs(const double *a, size_t count)
{
    double m = 0.0;
    for (size_t k = 0; k < count; k++) {
        double v = fabs(a[k]);
        if (v > m)
            m = v;
    }
    return m;
}

int linalg_lu(double *a, size_t n, size_t *perm, double rtol)
{
    double tol = rtol * linalg_max_abs(a, n * n);
    for (size_t k = 0; k < n; k++)
        perm[k] = k;
    if (!(tol > 0.0)) /* a zero matrix (or NaN): singular unless empty */
        return n == 0 ? 0 : -1;
    for (size_t k = 0; k < n; k++) {
        size_t p = k;
        double best = fabs(a[k * n + k]);
        for (size_t i = k + 1; i < n; i++) {
            double v = fabs(a[i * n + k]);
            if (v > best) {
                best = v;
                p = i;
            }
        }
        if (!(best > tol))
            return -1;
        if (p != k) {
            double *rk = a + k * n, *rp = a + p * n;
            for (size_t j = 0; j < n; j++) {
                double t = rk[j];
                rk[j] = rp[j];
                rp[j] = t;
            }
            size_t t = perm[k];
            perm[k] = perm[p];
            perm[p] = t;
        }
        /* Rows k and i are disjoint, hence restrict. */
        double *restrict rk = a + k * n;
        double inv = 1.0 / rk[k];
        rk[k] = inv; /* stored inverted: the solve multiplies */
        for (size_t i = k + 1; i < n; i++) {
            double *restrict ri = a + i * n;
            double f = ri[k] * inv;
            ri[k] = f;
            size_t j = k + 1;
            for (; j + 1 < n; j += 2)
                linalg_sub2(ri + j, f, rk + j);
            if (j < n)
                ri[j] -= f * rk[j];
        }
    }
    return 0;
}

void linalg_lu_solve(const double *lu, size_t n, const size_t *perm,
                     double *b, double *y)
{
    /* Forward substitution L y = P b reads b through the permutation,
     * back substitution U x = y writes x into b. */
    for (size_t i = 0; i < n; i++) {
        double s = b[perm[i]];
        const double *ri = lu + i * n;
        for (size_t j = 0; j < i; j++)
            s -= ri[j] * y[j];
        y[i] = s;
    }
    for (size_t i = n; i-- > 0;) {
        double s = y[i];
        const double *ri = lu + i * n;
        for (size_t j = i + 1; j < n; j++)
            s -= ri[j] * b[j];
        b[i] = s * ri[i];
    }
}

void linalg_lu_solve_many(const double *lu, size_t n, const size_t *perm,
                          double *b, size_t k, double *work)
{
    /* Two right sides at a time, with WORK as their two columns of y
     * (interleaved: y_i of both at 2i): each side takes exactly
     * linalg_lu_solve's operations, in its order (the same bits), the
     * two at once, and the matrix is read half as often. */
    size_t j = 0;
    for (; j + 1 < k; j += 2) {
        double *restrict y = work;
        for (size_t i = 0; i < n; i++) {
            const double *ri = lu + i * n;
            linalg_pair_t s = linalg_pair(b[perm[i] * k + j],
                                          b[perm[i] * k + j + 1]);
            for (size_t l = 0; l < i; l++)
                s = linalg_pair_sub(s, ri[l], y + 2 * l);
            linalg_pair_store(y + 2 * i, s);
        }
        for (size_t i = n; i-- > 0;) {
            const double *ri = lu + i * n;
            linalg_pair_t s = linalg_pair(y[2 * i], y[2 * i + 1]);
            for (size_t l = i + 1; l < n; l++)
                s = linalg_pair_sub(s, ri[l], b + l * k + j);
            linalg_pair_store(b + i * k + j, linalg_pair_mul(s, ri[i]));
        }
    }
    for (; j < k; j++) {
        for (size_t i = 0; i < n; i++)
            work[i] = b[i * k + j];
        linalg_lu_solve(lu, n, perm, work, work + n);
        for (size_t i = 0; i < n; i++)
            b[i * k + j] = work[i];
    }
}

int linalg_ldlt(double *a, size_t n, double rtol)
{
    double amax = 0.0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j <= i; j++) {
            double v = fabs(a[i * n + j]);
            if (v > amax || v != v)
                amax = v;
        }
    double tol = rtol * amax;
    if (!(tol > 0.0)) /* a zero matrix (or NaN) */
        return n == 0 ? 0 : -1;
    /* Row j of L from the rows above (Crout): with w_k = L_jk·D_k,
     *   w_k = A_jk − Σ_{p<k} w_p L_kp,   L_jk = w_k / D_k,
     *   D_j = A_jj − Σ_{k<j} L_jk w_k.
     * w_k is kept in the upper triangle, at (k, j). */
    double first = 0.0;
    for (size_t j = 0; j < n; j++) {
        double *restrict rj = a + j * n;
        double d = rj[j];
        for (size_t k = 0; k < j; k++) {
            const double *rk = a + k * n;
            double w = rj[k];
            for (size_t p = 0; p < k; p++)
                w -= a[p * n + j] * rk[p];
            a[k * n + j] = w;
            double l = w * rk[k]; /* rk[k] = 1/D_k */
            rj[k] = l;
            d -= l * w;
        }
        if (!(fabs(d) > tol) || (j > 0 && (d > 0) != (first > 0)))
            return -1;
        if (j == 0)
            first = d;
        rj[j] = 1.0 / d;
    }
    return 0;
}

void linalg_ldlt_forward(const double *ld, size_t n, double *b)
{
    for (size_t i = 0; i < n; i++) {
        const double *ri = ld + i * n;
        double s = b[i];
        for (size_t k = 0; k < i; k++)
            s -= ri[k] * b[k];
        b[i] = s;
    }
}

void linalg_ldlt_back(const double *ld, size_t n, double *b)
{
    for (size_t i = n; i-- > 0;) {
        double s = b[i];
        for (size_t k = i + 1; k < n; k++)
            s -= ld[k * n + i] * b[k];
        b[i] = s;
    }
}

void linalg_ldlt_solve(const double *ld, size_t n, double *b)
{
    /* L y = b, then D z = y, then Lᵀ x = z, all in b */
    linalg_ldlt_forward(ld, n, b);
    for (size_t i = 0; i < n; i++)
        b[i] *= ld[i * n + i];
    linalg_ldlt_back(ld, n, b);
}

size_t linalg_rank(double *a, size_t rows, size_t cols, double rtol)
{
    double tol = rtol * linalg_max_abs(a, rows * cols);
    if (!(tol > 0.0))
        return 0;
    size_t rank = 0;
    size_t lim = rows < cols ? rows : cols;
    for (size_t k = 0; k < lim; k++) {
        size_t pi = k, pj = k;
        double best = 0.0;
        for (size_t i = k; i < rows; i++)
            for (size_t j = k; j < cols; j++) {
                double v = fabs(a[i * cols + j]);
                if (v > best) {
                    best = v;
                    pi = i;
                    pj = j;
                }
            }
        if (!(best > tol))
            break;
        if (pi != k)
            for (size_t j = 0; j < cols; j++) {
                double t = a[k * cols + j];
                a[k * cols + j] = a[pi * cols + j];
                a[pi * cols + j] = t;
            }
        if (pj != k)
            for (size_t i = 0; i < rows; i++) {
                double t = a[i * cols + k];
                a[i * cols + k] = a[i * cols + pj];
                a[i * cols + pj] = t;
            }
        double inv = 1.0 / a[k * cols + k];
        for (size_t i = k + 1; i < rows; i++) {
            double f = a[i * cols + k] * inv;
            for (size_t j = k; j < cols; j++)
                a[i * cols + j] -= f * a[k * cols + j];
        }
        rank++;
    }
    return rank;
}

size_t linalg_independent(const double *v, size_t si, size_t se, size_t len,
                          const size_t *order, size_t n, double rtol,
                          bool *kept, double *basis, size_t *piv)
{
    size_t nb = 0;
    double scale = 0.0; /* the largest entry of the items kept */
    for (size_t o = 0; o < n && nb < len; o++) {
        size_t t = order[o];
        double *r = basis + nb * len, sc = scale;
        for (size_t e = 0; e < len; e++) {
            r[e] = v[t * si + e * se];
            sc = fmax(sc, fabs(r[e]));
        }
        for (size_t b = 0; b < nb; b++) {
            double f = r[piv[b]];
            if (f != 0.0)
                for (size_t e = 0; e < len; e++)
                    r[e] -= f * basis[b * len + e];
        }
        size_t c = 0;
        for (size_t e = 1; e < len; e++)
            if (fabs(r[e]) > fabs(r[c]))
                c = e;
        if (!(sc > 0.0) || !(fabs(r[c]) > rtol * sc))
            continue;
        double inv = 1.0 / r[c];
        for (size_t e = 0; e < len; e++)
            r[e] *= inv;
        piv[nb++] = c;
        scale = sc;
        if (kept)
            kept[t] = true;
    }
    return nb;
}

int linalg_lsq_step(const double *j, size_t rows, size_t cols,
                    const double *r, double mu, double *d, double *work,
                    size_t *perm)
{
    /* Normal equations (JᵀJ + mu I) d = -Jᵀr: the matrices are tiny and
     * the caller iterates to a small residual, so the squared condition
     * number costs accuracy in the step only, not in the answer. */
    double *n = work, *g = work + cols * cols;
    for (size_t a = 0; a < cols; a++) {
        for (size_t b = a; b < cols; b++) {
            double s = 0.0;
            for (size_t i = 0; i < rows; i++)
                s += j[i * cols + a] * j[i * cols + b];
            n[a * cols + b] = s;
            n[b * cols + a] = s;
        }
        n[a * cols + a] += mu;
        double s = 0.0;
        for (size_t i = 0; i < rows; i++)
            s += j[i * cols + a] * r[i];
        g[a] = -s;
    }
    if (linalg_lu(n, cols, perm, 1e-15) != 0)
        return -1;
    for (size_t a = 0; a < cols; a++)
        d[a] = g[a];
    linalg_lu_solve(n, cols, perm, d, g);
    return 0;
}
