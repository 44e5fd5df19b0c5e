/*
 * rigid.c — see rigid.h.
 *
 * Must not: print; know the model.
 */
#include "interp/mech/rigid.h"

void rigid_inertial(expr_graph_t *g, rigid_frame_t *out)
{
    const expr_t *zero = expr_num(g, 0), *one = expr_num(g, 1);
    for (int i = 0; i < 3; i++) {
        for (int c = 0; c < 3; c++)
            out->axis[i][c] = i == c ? one : zero;
        out->omega[i] = out->wloc[i] = zero;
    }
    out->turn = -1;
}

const expr_t *rigid_dot(expr_graph_t *g, const expr_t *const *a,
                        const expr_t *const *b, unsigned n)
{
    const expr_t *s = expr_num(g, 0);
    for (unsigned k = 0; k < n; k++)
        s = expr_add(g, s, expr_mul(g, a[k], b[k]));
    return s;
}

void rigid_cross(expr_graph_t *g, const expr_t *const a[3],
                 const expr_t *const b[3], const expr_t *out[3])
{
    out[0] = expr_sub(g, expr_mul(g, a[1], b[2]), expr_mul(g, a[2], b[1]));
    out[1] = expr_sub(g, expr_mul(g, a[2], b[0]), expr_mul(g, a[0], b[2]));
    out[2] = expr_sub(g, expr_mul(g, a[0], b[1]), expr_mul(g, a[1], b[0]));
}

void rigid_turn(expr_graph_t *g, const rigid_frame_t *p,
                const expr_t *const u[3], const expr_t *angle,
                const expr_t *rate, rigid_frame_t *out)
{
    const expr_t *c = expr_call(g, EXPR_COS, angle, NULL);
    const expr_t *s = expr_call(g, EXPR_SIN, angle, NULL);
    const expr_t *one_c = expr_sub(g, expr_num(g, 1), c);
    /* Rodrigues: R = c I + s [u]x + (1 − c) u uᵀ; column i is A's unit
     * vector i on P's axes, R e_i = c e_i + s u × e_i + (1 − c) u_i u. */
    const expr_t *R[3][3];
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 3; i++) {
            const expr_t *r = expr_mul(g, one_c, expr_mul(g, u[j], u[i]));
            if (i == j)
                r = expr_add(g, c, r);
            /* (u × e_i)_j = ε_jmi u_m: nonzero for m the third index */
            int m = 3 - i - j;
            if (i != j) {
                int sign = (j - i + 3) % 3 == 1 ? 1 : -1; /* ε_jmi */
                const expr_t *t = expr_mul(g, s, u[m]);
                r = sign > 0 ? expr_add(g, r, t) : expr_sub(g, r, t);
            }
            R[j][i] = r;
        }
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++) {
            const expr_t *a = expr_num(g, 0);
            for (int j = 0; j < 3; j++)
                a = expr_add(g, a, expr_mul(g, R[j][i], p->axis[j][k]));
            out->axis[i][k] = a;
        }
    /* On A's own axes, w_A = Rᵀ w_P + ANGLE'·u, since the axis has the
     * same components on A's axes as on P's; on the inertial ones
     * (rigid_omega) when asked for. */
    for (int k = 0; k < 3; k++) {
        out->omega[k] = NULL;
        out->u[k] = u[k];
    }
    for (int i = 0; i < 3; i++) {
        const expr_t *w = expr_mul(g, rate, u[i]);
        for (int j = 0; j < 3; j++)
            w = expr_add(g, w, expr_mul(g, R[j][i], p->wloc[j]));
        out->wloc[i] = w;
    }
    out->turn = -1;
    for (int k = 0; k < 3; k++)
        if (expr_is_const(u[k], 1.0) && expr_is_const(u[(k + 1) % 3], 0.0) &&
            expr_is_const(u[(k + 2) % 3], 0.0))
            out->turn = k;
    for (int i = 0; i < 3; i++) {
        for (int c = 0; c < 3; c++)
            out->paxis[i][c] = p->axis[i][c];
        out->pwloc[i] = p->wloc[i];
    }
    out->rate = rate;
}

void rigid_omega(expr_graph_t *g, const rigid_frame_t *p, rigid_frame_t *f)
{
    /* omega(A) = omega(P) + ANGLE'·axis, the axis on the inertial axes
     * (LANGUAGE.md §4.1) */
    for (int k = 0; k < 3; k++) {
        const expr_t *ax = expr_num(g, 0);
        for (int m = 0; m < 3; m++)
            ax = expr_add(g, ax, expr_mul(g, f->u[m], p->axis[m][k]));
        f->omega[k] = expr_add(g, p->omega[k], expr_mul(g, f->rate, ax));
    }
}

void rigid_omega_axes(expr_graph_t *g, const rigid_frame_t *f,
                      const expr_t *out[3])
{
    for (int k = 0; k < 3; k++) {
        const expr_t *w = expr_num(g, 0);
        for (int i = 0; i < 3; i++)
            w = expr_add(g, w, expr_mul(g, f->wloc[i], f->axis[i][k]));
        out[k] = w;
    }
}

void rigid_body_axes(const rigid_frame_t *f, const expr_t *const inertia[6],
                     expr_graph_t *g, const expr_t *axis[3][3],
                     const expr_t *wloc[3], const expr_t *waxes[3])
{
    int k = f->turn, a = (k + 1) % 3, b = (k + 2) % 3;
    bool symmetric = k >= 0 && inertia[a] == inertia[b];
    for (int e = 3; e < 6 && symmetric; e++)
        symmetric = expr_is_const(inertia[e], 0.0);
    for (int i = 0; i < 3; i++) {
        for (int c = 0; c < 3; c++)
            axis[i][c] = symmetric ? f->paxis[i][c] : f->axis[i][c];
        /* on the parent's axes: its angular velocity and the turn's rate
         * about axis k, which both frames share */
        wloc[i] = !symmetric ? f->wloc[i]
                  : i == k   ? expr_add(g, f->pwloc[i], f->rate)
                             : f->pwloc[i];
        waxes[i] = symmetric ? f->pwloc[i] : wloc[i];
    }
}

void rigid_point_velocity(expr_graph_t *g, const rigid_frame_t *f,
                          const expr_t *const x[3], const expr_t *const G[3],
                          const expr_t *const Gdot[3], const expr_t *out[3])
{
    const expr_t *r[3], *wr[3];
    for (int k = 0; k < 3; k++)
        r[k] = expr_sub(g, x[k], G[k]);
    rigid_cross(g, f->omega, r, wr);
    for (int k = 0; k < 3; k++)
        out[k] = expr_add(g, Gdot[k], wr[k]);
}

void rigid_inertia_times(expr_graph_t *g, const expr_t *const inertia[6],
                         const expr_t *const v[3], const expr_t *out[3])
{
    /* row a: I_aa v_a + I_(a,a+1) v_(a+1) + I_(a-1,a) v_(a-1), where
     * inertia[3 + a] is the entry (a, a+1) */
    for (int a = 0; a < 3; a++) {
        int b = (a + 1) % 3, c = (a + 2) % 3;
        const expr_t *t[3] = {expr_mul(g, inertia[a], v[a]),
                              expr_mul(g, inertia[3 + a], v[b]),
                              expr_mul(g, inertia[3 + c], v[c])};
        out[a] = expr_sum(g, t, 3);
    }
}

const expr_t *rigid_kinetic(expr_graph_t *g, const expr_t *const w[3],
                            const expr_t *mass, const expr_t *const Gdot[3],
                            const expr_t *const inertia[6])
{
    const expr_t *half = expr_num(g, 0.5);
    const expr_t *T = expr_mul(g, expr_mul(g, half, mass),
                               rigid_dot(g, Gdot, Gdot, 3));
    /* ½ (Ixx w1² + Iyy w2² + Izz w3²) + Ixy w1 w2 + Iyz w2 w3 + Izx w3 w1 */
    for (int a = 0; a < 3; a++) {
        T = expr_add(g, T, expr_mul(g, half,
                                    expr_mul(g, inertia[a],
                                             expr_mul(g, w[a], w[a]))));
        int b = (a + 1) % 3;
        T = expr_add(g, T, expr_mul(g, inertia[3 + a],
                                    expr_mul(g, w[a], w[b])));
    }
    return T;
}
