/*
 * transfer.c — G(s) = c (sI − A)⁻¹ b + d and its Bode plot (transfer.h,
 * LANGUAGE.md §7.2.1).
 *
 * One complex LU factorization of sI − A per frequency (GSL), one solve
 * for x = (sI − A)⁻¹ b, then G = c·x + d.  The phase of a Bode plot is
 * unwrapped point to point: the frequencies are close enough (100 a
 * decade) that a true change of the phase between neighbours is far
 * below 180° except at a pole or a zero on the imaginary axis, where
 * the phase jumps by 180° whichever way it is drawn.
 *
 * Must not: print.
 */
#include "interp/analysis/transfer.h"

#include <gsl/gsl_complex.h>
#include <gsl/gsl_complex_math.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_permutation.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "interp/base/util.h"
#include "interp/expr/expr.h"

/* "a + b*i" as eigen prints a complex number ("b*i" and "a" alone
 * when the other part is 0), into BUF. */
static const char *tf_complex_text(double re, double im, char *buf,
                                   size_t size)
{
    char a[40], b[40];
    expr_format_number(re == 0 ? 0.0 : re, a, sizeof a);
    expr_format_number(fabs(im), b, sizeof b);
    if (im == 0)
        snprintf(buf, size, "%s", a);
    else if (re == 0)
        snprintf(buf, size, "%s%s*i", im < 0 ? "-" : "", b);
    else
        snprintf(buf, size, "%s %c %s*i", a, im < 0 ? '-' : '+', b);
    return buf;
}

/* The workspace of one size, reused across the frequencies of a plot. */
typedef struct tf_work {
    gsl_matrix_complex *m;
    gsl_vector_complex *x;
    gsl_permutation *p;
} tf_work_t;

static void tf_work_init(tf_work_t *w, size_t n)
{
    w->m = gsl_matrix_complex_alloc(n, n);
    w->x = gsl_vector_complex_alloc(n);
    w->p = gsl_permutation_alloc(n);
    if (!w->m || !w->x || !w->p)
        abort(); /* out of memory: the one fatal case */
}

static void tf_work_free(tf_work_t *w)
{
    gsl_matrix_complex_free(w->m);
    gsl_vector_complex_free(w->x);
    gsl_permutation_free(w->p);
}

static int tf_eval_in(tf_work_t *w, const double *a, size_t n,
                      const double *b, size_t bstride, const double *c,
                      double d, double sre, double sim, double *gre,
                      double *gim, diag_t *err)
{
    if (n == 0) {
        *gre = d;
        *gim = 0;
        return 0;
    }
    double big = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            double re = (i == j ? sre : 0.0) - a[i * n + j];
            double im = i == j ? sim : 0.0;
            gsl_matrix_complex_set(w->m, i, j, gsl_complex_rect(re, im));
            big = fmax(big, hypot(re, im));
        }
    for (size_t i = 0; i < n; i++)
        gsl_vector_complex_set(w->x, i,
                               gsl_complex_rect(b[i * bstride], 0.0));
    int signum;
    int rc = gsl_linalg_complex_LU_decomp(w->m, w->p, &signum);
    for (size_t i = 0; i < n && rc == GSL_SUCCESS; i++)
        if (!(gsl_complex_abs(gsl_matrix_complex_get(w->m, i, i)) >
              TF_POLE_RTOL * big))
            rc = GSL_EDOM;
    if (rc == GSL_SUCCESS)
        rc = gsl_linalg_complex_LU_svx(w->m, w->p, w->x);
    char at[96];
    if (rc != GSL_SUCCESS)
        return diag_error(err, SRC_SPAN_NONE,
                          "s = %s is a pole of the linearized motion (an "
                          "eigenvalue of A): sI - A is singular there",
                          tf_complex_text(sre, sim, at, sizeof at));
    double re = d, im = 0;
    for (size_t i = 0; i < n; i++) {
        gsl_complex x = gsl_vector_complex_get(w->x, i);
        re += c[i] * GSL_REAL(x);
        im += c[i] * GSL_IMAG(x);
    }
    *gre = re;
    *gim = im;
    if (!isfinite(re) || !isfinite(im))
        return diag_error(err, SRC_SPAN_NONE, "G(s) is not finite at s = %s",
                          tf_complex_text(sre, sim, at, sizeof at));
    return 0;
}

int tf_eval(const double *a, size_t n, const double *b, size_t bstride,
            const double *c, double d, double sre, double sim, double *gre,
            double *gim, diag_t *err)
{
    tf_work_t w = {0};
    if (n)
        tf_work_init(&w, n);
    int rc = tf_eval_in(&w, a, n, b, bstride, c, d, sre, sim, gre, gim, err);
    if (n)
        tf_work_free(&w);
    return rc;
}

size_t tf_bode_points(double w1, double w2)
{
    double k = ceil(TF_BODE_PER_DECADE * log10(w2 / w1)) + 1;
    if (!(k >= TF_BODE_MIN))
        return TF_BODE_MIN;
    if (!(k <= TF_BODE_MAX))
        return TF_BODE_MAX;
    return (size_t)k;
}

int tf_bode(const double *a, size_t n, const double *b, size_t bstride,
            const double *c, double d, double w1, double w2, double *w,
            double *mag, double *phase, diag_t *err)
{
    size_t npts = tf_bode_points(w1, w2);
    double l1 = log(w1), l2 = log(w2);
    tf_work_t ws = {0};
    if (n)
        tf_work_init(&ws, n);
    int rc = 0;
    for (size_t k = 0; k < npts && rc == 0; k++) {
        /* both ends exactly as given */
        w[k] = k == 0          ? w1
               : k == npts - 1 ? w2
                               : exp(l1 + (l2 - l1) * (double)k /
                                              (double)(npts - 1));
        double gr, gi;
        rc = tf_eval_in(&ws, a, n, b, bstride, c, d, 0.0, w[k], &gr, &gi,
                        err);
        if (rc != 0)
            break;
        double m = hypot(gr, gi);
        if (!(m > 0)) {
            rc = diag_error(err, SRC_SPAN_NONE,
                            "G(i*w) is 0 at w = %.17g: its magnitude in dB "
                            "is not finite (the output does not depend on "
                            "the input there)",
                            w[k]);
            break;
        }
        mag[k] = 20.0 * log10(m);
        double p = atan2(gi, gr) * (180.0 / M_PI);
        if (p == -180.0)
            p = 180.0; /* (−180, 180] */
        if (k > 0) {
            /* the branch nearest the last point's */
            p += 360.0 * round((phase[k - 1] - p) / 360.0);
        }
        phase[k] = p;
    }
    if (n)
        tf_work_free(&ws);
    return rc;
}
