/*
 * eom.h — the equations of motion of LANGUAGE.md §5, one method per
 * module behind one interface.
 *
 *   prepare   derive the nodes the method needs from an nh_system_t and
 *             compile them into one tape (errors: the method does not
 *             apply, e.g. voronec on a constraint not in explicit form);
 *   state     which variables make the ODE state and what their
 *             derivatives are;
 *   accel     at a full value vector: q'' (and z', lambda) written back
 *             into the vector; singular states are errors;
 *   describe  the equations as text or LaTeX rows for `show eom`.
 *
 * The hot path (eom_rhs, called by the ODE driver) evaluates one tape into
 * preallocated buffers and does one small dense solve: no allocation.
 *
 * Ownership: an eom_t borrows the nh_system_t it was prepared from (which
 * must outlive it) and owns its tapes and buffers; eom_free releases them.
 * Must not: print; change the system.
 */
#ifndef NH_EOM_H
#define NH_EOM_H

#include <stdbool.h>
#include <stddef.h>

#include "interp/mech/system.h"
#include "lang/source.h"

typedef enum eom_method {
    EOM_LAGRANGE,
    EOM_MULTIPLIERS,
    EOM_SECOND_KIND,
    EOM_VORONEC,
    EOM_NAIVE,
    EOM_MAGGI,        /* aliases first_kind, kane */
    EOM_GIBBS_APPELL,
    EOM_METHOD_COUNT
} eom_method_t;

/* "lagrange", ..., with the aliases; -1 when unknown. */
int eom_method_lookup(const char *name);
const char *eom_method_name(eom_method_t m);
/* All accepted names, NULL-terminated (for suggestions and completion). */
extern const char *const eom_method_names[];
/* The default method of a system: lagrange without constraints, else
 * multipliers. */
eom_method_t eom_default_method(const nh_system_t *sys);

typedef struct eom eom_t;

/* Prepares METHOD for SYS.  On failure returns NULL and fills *err (its
 * span is WHERE, the `equations` statement, unless the fault has a better
 * place, such as the constraint that is not in explicit form). */
eom_t *eom_prepare(const nh_system_t *sys, eom_method_t method,
                   src_span_t where, diag_t *err);
/* eom_prepare with VARS (a value vector of SYS's graph, borrowed for the
 * call), the state where the motion is: maggi and gibbs_appell accept a
 * declared constraint that fails their check against the kinematic
 * equations at sample points far from the state if it holds at every
 * one near it (a contact whose height is written r*sin(theta) holds
 * where the disk stands: LANGUAGE.md §4, where the components of
 * vector constraints are dropped where the motion is too). */
eom_t *eom_prepare_at(const nh_system_t *sys, eom_method_t method,
                      src_span_t where, const double *vars, diag_t *err);
void eom_free(eom_t *e); /* accepts NULL */
eom_method_t eom_method(const eom_t *e);
bool eom_has_multipliers(const eom_t *e);

/* ODE state: eom_state_size(e) variables, listed by eom_state_vars:
 *   lagrange, multipliers, second_kind: q_1..q_n, q_1'..q_n'
 *   voronec, naive: q_1..q_n, then the independent velocities
 *   maggi, gibbs_appell: q_1..q_n, z_1..z_m. */
size_t eom_state_size(const eom_t *e);
const uint32_t *eom_state_vars(const eom_t *e);

/* A memo slot for the layers above, freed with the equations it is
 * about: simulate keeps the verdict of check on the energy integral there
 * (sim.c), a property of the system the equations were derived from.
 * 0 until set. */
int eom_memo_energy(const eom_t *e);
void eom_set_memo_energy(eom_t *e, int verdict);
/* The variable holding the time derivative of each state variable after
 * eom_accel (q_i', q_i'', z_a'), in the order of eom_state_vars. */
const uint32_t *eom_state_derivs(const eom_t *e);

/* Completes VARS (inputs q, independent q' or z, parameters, t) with the
 * velocities the method derives (voronec, naive: the dependent ones;
 * maggi, gibbs_appell: q' = psi), then computes and writes q'' for every
 * coordinate, z' for every speed (maggi, gibbs_appell) and lambda for
 * every constraint (multipliers, second_kind; others leave lambda NaN).
 * Returns 0, or -1 with *err set for a singular state or a non-finite
 * value (the message names the matrix at fault; the span is NONE: the
 * caller adds the statement's place and the state). */
int eom_accel(eom_t *e, double *vars, diag_t *err);

/* The ODE right-hand side on the state layout above: VARS is a full value
 * vector used as scratch (parameters set by the caller).  Returns 0, or -1
 * with *err set as for eom_accel.  A value it does not return (the
 * acceleration of a dependent coordinate, a multiplier) need not be
 * finite for it to succeed on a small system's fast path, as it does not
 * enter the integration; eom_accel checks every value.  Y and T must be
 * finite (simulate checks them before it calls): every derivative it
 * returns on success is then finite (the callers need not check DYDT) —
 * the fast path returns the state's own entries (q' of a state that holds
 * the velocities) as they are. */
int eom_rhs(eom_t *e, double t, const double *y, double *dydt, double *vars,
            diag_t *err);

/* Forward-mode automatic differentiation of eom_accel (the exact
 * derivatives of the motion, for `linearize` and the implicit
 * integrators' Jacobian): VARS as for eom_accel, and DVARS one row of K
 * doubles per variable of the graph — on entry the derivatives of the
 * inputs (state, t, parameters) in K directions, the other rows zero; on
 * return also those of what eom_accel writes (the derived velocities or
 * q' = psi, q'', z', lambda where the method has them).  The tapes are
 * differentiated instruction by instruction (tape_eval_tangent) and the
 * method's dense solve by implicit differentiation of its linear system
 * A u = b: A du = db − dA u, with A factored once for the K directions.
 * Returns 0, or -1 with *err set as eom_accel (or when A is singular).
 * eom_tangent_reserve allocates the buffers for K directions, so that a
 * later call with at most K allocates nothing (the ODE Jacobian). */
int eom_tangent(eom_t *e, double *vars, double *dvars, size_t k,
                diag_t *err);
void eom_tangent_reserve(eom_t *e, size_t k);
/* Native code for what eom_accel and eom_rhs compute (`set compile =
 * on`: run/native.c compiles the C text of cgen.h): VALUES(vars) writes
 * what the compute step writes, RHS(t, y, vars, dydt) is eom_rhs; each
 * returns 0, or nonzero when it meets a singular state or a value that
 * is not finite.  Once set, eom_accel and eom_rhs call them first, and
 * the tapes only when they fail: the tapes meet the same failure and
 * word its error, so a compiled eom_t reports exactly what the tapes
 * would.  RELEASE(HANDLE) (may be NULL) is called when they are replaced
 * or cleared (all NULL) and by eom_free. */
typedef int (*eom_native_fn)(double *vars);
typedef int (*eom_native_rhs_fn)(double t, const double *y, double *vars,
                                 double *dydt);
void eom_set_native(eom_t *e, eom_native_fn values, eom_native_rhs_fn rhs,
                    void *handle, void (*release)(void *handle));
bool eom_has_native(const eom_t *e);

/* Compiled forward-mode derivatives of the main tape and of the first
 * tape (NULL where the method has none), as generated C writes them
 * (cgen.c, NAME_tangent_main), with the sizes of their value arrays
 * (NAME_tangent_main_work): once set, eom_tangent runs them instead of
 * the tapes, with the same numbers.  RELEASE(HANDLE) (may be NULL) is
 * called when they are replaced or cleared, which eom_set_native does
 * too (they are compiled after the code it sets, in a file of their
 * own: cgen.h). */
typedef void (*eom_native_tangent_fn)(const double *v, const double *dv,
                                      long k, double *o, double *dout,
                                      double *w, double *dw);
void eom_set_native_tangents(eom_t *e, eom_native_tangent_fn main_tape,
                             size_t main_values, eom_native_tangent_fn pre_tape,
                             size_t pre_values, void *handle,
                             void (*release)(void *handle));
bool eom_tangents_native(const eom_t *e);

/* Compiled constraint Jacobians: the C text of the tapes of
 * eom_velsolver_jacobian_tapes (cgen.c, NAME_constraint_jacobians and
 * NAME_constraint_tangent, with the size of the latter's value array),
 * which eom_velsolver_jacobians runs instead of them (lyapunov takes
 * them at every evaluation of the motion): the same numbers.  They live
 * in the derivatives' object (cgen_tangent_text): set after
 * eom_set_native_tangents, which clears them, as eom_set_native does. */
typedef void (*eom_native_values_fn)(const double *v, double *o);
void eom_set_native_constraints(eom_t *e, eom_native_values_fn jacobians,
                                eom_native_tangent_fn ceff,
                                size_t ceff_values);

/* The compiled right-hand side, or NULL: for a caller that calls it
 * first itself (simulate's callback, once per evaluation) and eom_rhs
 * only when it fails, as eom_rhs would. */
eom_native_rhs_fn eom_native_rhs(const eom_t *e);

/* What simulate watches along a run (sim.c), as one tape over the value
 * vector, built on first use and kept with the equations: the values of
 * the holonomic constraints (those of the system's constraints without a
 * velocity, in order: eom_monitor_holonomic), every constraint at the
 * velocity level (f' for a holonomic one, C itself otherwise), the
 * Lagrangian L and ∂L/∂q_i' for each coordinate — nh + r + 1 + n outputs
 * (eom_monitor_count).  Generated C writes the same tape (cgen.c), and
 * EOM_NATIVE_MONITORS, once set (native.c; cleared with the other native
 * functions), is called instead of it: the same numbers, bit for bit. */
typedef void (*eom_native_monitors_fn)(const double *vars, double *out);
/* The system's constraints at the velocity level (LANGUAGE.md §4): CV[a]
 * is f' (d/dt along the motion, t' = 1) for a holonomic constraint — one
 * without a velocity — and C itself otherwise; HOL (r entries) gets the
 * holonomic ones' indices in order.  Returns their count.  The monitors
 * and simulate's projections (sim.c) derive them alike. */
size_t eom_velocity_level(const nh_system_t *sys, const expr_t **cv,
                          size_t *hol);
const struct tape *eom_monitor_tape(eom_t *e);
size_t eom_monitor_holonomic(eom_t *e, const size_t **hol);
size_t eom_monitor_count(eom_t *e);
void eom_monitors(eom_t *e, const double *vars, double *out, double *work);
size_t eom_monitor_work_size(eom_t *e);
void eom_set_native_monitors(eom_t *e, eom_native_monitors_fn fn);
bool eom_monitors_native(const eom_t *e);

/* The equations symbolically, one row per line, as text or LaTeX
 * (malloc'ed, the caller frees). */
char *eom_describe(const eom_t *e, bool latex);

/* The rows `show eom` shows, as nodes of the system's graph before their
 * display (l[i] = r[i]; a named object E as 0 = E): for tests that check
 * the display against them.  *L and *R are malloc'ed (the caller frees
 * both); returns the count. */
size_t eom_rows(eom_t *e, const expr_t ***l, const expr_t ***r);

/* The accelerations solved symbolically (LANGUAGE.md §7.1 `show accel`):
 * q'' of every coordinate, z' of every speed (maggi, gibbs_appell) and
 * lambda of every constraint (multipliers, second_kind), from the
 * method's linear system in its unknowns (q'' and lambda; the
 * independent q''; z'), by simp_solve in the display SP
 * (interp/expr/simplify.h), each in its display form.  VAL (expr_graph_
 * nvars entries) receives display nodes at those variables and NULL
 * elsewhere.  The forms hold where the system is regular (the method
 * reports a singular state as an error).  Returns 0, or -1 with a
 * sentence in WHY (WHYSIZE bytes) when the system is beyond the solver
 * (more unknowns than SIMP_SOLVE_MAX, a determinant with more than
 * SIMP_MAX_TERMS terms) or singular at every state. */
struct simp;
int eom_solved(const eom_t *e, struct simp *sp, const expr_t **val,
               char *why, size_t whysize);

/* Voronec's split and coefficients (voronec and naive only), for `show
 * voronec`, `show reduced` and tests.  eom_voronec_split returns the
 * number k of dependent coordinates and points *dep (k entries) and *ind
 * (*nind entries) at coordinate indices; 0 and NULLs for other methods.
 * eom_voronec_a gives a_νj (q_dep[ν]' = Σ_j a_νj q_ind[j]'),
 * eom_voronec_b gives b^ν_ij (Lemos eq. 11), eom_reduced_lagrangian L̄:
 * nodes of the system's graph, NULL when out of range or not voronec /
 * naive.  eom_describe_voronec: every a and the nonzero b^ν_ij (i < j),
 * as text or LaTeX rows (malloc'ed; NULL for other methods). */
size_t eom_voronec_split(const eom_t *e, const size_t **dep,
                         const size_t **ind, size_t *nind);
const expr_t *eom_voronec_a(const eom_t *e, size_t nu, size_t j);
const expr_t *eom_voronec_b(const eom_t *e, size_t nu, size_t i, size_t j);
const expr_t *eom_reduced_lagrangian(const eom_t *e);
char *eom_describe_voronec(const eom_t *e, bool latex);

/* maggi, gibbs_appell: the kinematic equations as completed from the
 * constraints (kinematics.h; borrowed from E), NULL for other methods. */
struct eom_kin;
const struct eom_kin *eom_kinematics(const eom_t *e);

/* Kane's form (maggi, gibbs_appell): for each speed z_r the generalized
 * active force F_r = Σ_i Q̃_i Ψ_ir (Q̃ = Q − ∂V/∂q: potential forces
 * included) and the generalized inertia force F*_r = −Σ_i (M q'' + h0 −
 * ∂V/∂q)_i Ψ_ir, with q' = ψ and q'' = β + Ψ z' (Benenti eq. 22), into
 * FR and FRS (m nodes each, in q, z, z', t), so that F_r + F*_r = 0 is
 * maggi's equation r.  *POTENTIAL_IN_INERTIA: the potential could not be
 * split off (a `lagrangian`, or a V with velocities), so it is in F*_r.
 * Returns 0, or -1 with *err set (span NONE): another method, or
 * velocities solved numerically at each evaluation.
 * eom_describe_kane: the rows F_r = …, F*_r = … as text or LaTeX
 * (malloc'ed; NULL when eom_kane fails). */
int eom_kane(const eom_t *e, const expr_t **Fr, const expr_t **Frs,
             bool *potential_in_inertia, diag_t *err);
char *eom_describe_kane(const eom_t *e, bool latex);

#endif
