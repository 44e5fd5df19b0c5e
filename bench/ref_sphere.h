/*
 * ref_sphere.h — the benchmark's hand-written reference for the rolling
 * sphere (ref_sphere.c): its right-hand side in closed form and an rk8pd
 * integration of it with GSL.
 *
 * State (8): φ, θ, ψ, x, y, φ', θ', ψ' — the layout of `equations
 * voronec` (eom_state_vars).  Nothing is allocated that outlives a call.
 */
#ifndef NH_BENCH_REF_SPHERE_H
#define NH_BENCH_REF_SPHERE_H

/* f = dy/dt for the sphere of radius R (the mass drops out). */
void ref_sphere_rhs(double t, const double *y, double *f, double R);

/* Integrates Y (R = 1) from t = 0 to T_END with rk8pd, stopping at every
 * multiple of STEP as sim.c does for its samples; Y is left at T_END.
 * Returns the number of right-hand-side evaluations, or -1 on a GSL
 * failure. */
long ref_sphere_integrate(double *y, double t_end, double step, double rtol,
                          double atol);

#endif
