/*
 * ref_sphere.c — the hand-written reference of the benchmark: the rolling
 * sphere's right-hand side in closed form, and its integration with GSL's
 * rk8pd the way sim.c drives it.  What nh's own figures are measured
 * against (bench.c); compiled on its own so that the benchmark loop
 * cannot fold it in.
 *
 * The homogeneous sphere (LANGUAGE.md §11): the angular velocity in space
 * is constant, which with Lemos eq. 16 gives (state φ, θ, ψ, x, y, φ', θ',
 * ψ' — Voronec's: the coordinates and the independent velocities)
 *   θ'' = −φ'ψ' sin θ,
 *   ψ'' = θ'(φ' − ψ' cos θ)/sin θ,
 *   φ'' = ψ'θ' sin θ − ψ'' cos θ,
 * and the rolling constraints give x' = R θ' sin φ − R ψ' sin θ cos φ,
 * y' = −R θ' cos φ − R ψ' sin θ sin φ.
 *
 * Must not: depend on nh.
 */
#include "bench/ref_sphere.h"

#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_odeiv2.h>

void ref_sphere_rhs(double t, const double *y, double *f, double R)
{
    (void)t;
    double phi = y[0], th = y[1];
    double dphi = y[5], dth = y[6], dpsi = y[7];
    double sth = sin(th), cth = cos(th), sph = sin(phi), cph = cos(phi);
    f[0] = dphi;
    f[1] = dth;
    f[2] = dpsi;
    f[3] = R * dth * sph - R * dpsi * sth * cph;
    f[4] = -R * dth * cph - R * dpsi * sth * sph;
    double ddpsi = dth * (dphi - dpsi * cth) / sth;
    f[5] = dpsi * dth * sth - ddpsi * cth;
    f[6] = -dphi * dpsi * sth;
    f[7] = ddpsi;
}

typedef struct ref_ctx {
    double R;
    long evals;
} ref_ctx_t;

static int ref_f(double t, const double *y, double *f, void *p)
{
    ref_ctx_t *c = p;
    c->evals++;
    ref_sphere_rhs(t, y, f, c->R);
    return GSL_SUCCESS;
}

long ref_sphere_integrate(double *y, double t_end, double step, double rtol,
                          double atol)
{
    ref_ctx_t c = {1.0, 0};
    gsl_odeiv2_system sys = {ref_f, NULL, 8, &c};
    double h = 1e-2 * step, t = 0.0;
    gsl_odeiv2_driver *d = gsl_odeiv2_driver_alloc_y_new(
        &sys, gsl_odeiv2_step_rk8pd, h, atol, rtol);
    if (!d)
        abort();
    /* as sim.c: evolve up to each sample time in turn */
    long count = (long)floor(t_end / step + 1e-9);
    for (long k = 1; k <= count; k++) {
        double tk = k == count ? t_end : (double)k * step;
        while (t != tk)
            if (gsl_odeiv2_evolve_apply(d->e, d->c, d->s, &sys, &t, tk, &h,
                                        y) != GSL_SUCCESS) {
                gsl_odeiv2_driver_free(d);
                return -1;
            }
    }
    gsl_odeiv2_driver_free(d);
    return c.evals;
}
