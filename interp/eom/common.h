/*
 * common.h — what the method files of the equations of motion share
 * (private to interp/eom/; nothing outside includes it but the
 * white-box benchmark, bench/bench.c, which reads the tapes' lengths).
 *
 * common.c owns the eom_t life cycle, the derived objects every method
 * starts from (M, h, B, c: LANGUAGE.md §5), the hot-path plumbing
 * (eom_accel, eom_rhs) and the text buffer used by the describers.  Each
 * method family fills an eom_t in its prepare function: the nodes it
 * wants to show, one compiled tape, the scratch sizes, and the compute
 * function that turns one tape evaluation into accelerations.
 *
 * Ownership: every array hanging off an eom_t is malloc'ed and freed by
 * eom_free; nodes belong to the system's graph.
 */
#ifndef NH_EOM_COMMON_H
#define NH_EOM_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interp/eom/eom.h"
#include "interp/expr/tape.h"

/* The objects of LANGUAGE.md §5 as nodes, derived once per prepare.
 * Matrices are row-major, full (M is symmetric; both halves point at the
 * same nodes). */
typedef struct eom_derived {
    const expr_t **p;    /* ∂L/∂q_i'                                 (n)  */
    const expr_t **M;    /* ∂²L/∂q_i'∂q_j'                           (n×n) */
    const expr_t **h0;   /* h without forces: Σ ∂p_i/∂q_j q_j' + ∂p_i/∂t − ∂L/∂q_i */
    const expr_t **h;    /* h0 − Q                                    (n)  */
    const expr_t **Ceff; /* C, or f' for a holonomic f                (r)  */
    bool *holonomic;     /* C had no velocity                         (r)  */
    const expr_t **B;    /* ∂Ceff/∂q_i'                               (r×n) */
    const expr_t **c;    /* Σ ∂Ceff/∂q_i q_i' + ∂Ceff/∂t              (r)  */
} eom_derived_t;

typedef int (*eom_compute_fn)(eom_t *e, double *vars, diag_t *err);
/* The derivatives of a compute (eom_tangent): the compute itself, then
 * the directional derivatives of what it wrote, K directions. */
typedef int (*eom_tangent_fn)(eom_t *e, double *vars, double *dvars,
                              size_t k, diag_t *err);
typedef char *(*eom_describe_fn)(const eom_t *e, bool latex);

struct eom {
    const nh_system_t *sys;
    eom_method_t method;
    const char *name;   /* the method's name, from the table in methods.c */
    eom_derived_t d;
    uint32_t nvars;

    /* ODE state: state[k] is a variable, deriv[k] the variable holding
     * its time derivative after a compute. */
    size_t nstate;
    uint32_t *state, *deriv;

    tape_t *tape;
    double *out, *work; /* tape outputs and work slots */
    double *scratch;    /* matrices and vectors of the compute step */
    size_t *perm;       /* pivots of the compute step's factorisations */
    size_t nscratch;

    eom_compute_fn compute;
    eom_describe_fn describe;

    /* Forward-mode derivatives (eom_tangent): the family's function, and
     * buffers for TK directions (eom_tangent_reserve), so that the ODE
     * Jacobian allocates nothing: e->tape's values and derivatives
     * (t_out, t_dout), its work slots (t_work, t_dwork), the same for
     * e->pre, and the scratch of the linear algebra.  TK is at most what
     * EOM_TANGENT_BUDGET holds: more directions are taken TK at a time
     * (T_BLOCK the directions of one block, nvars × TK; T_AGAIN set for
     * the blocks after the first, at the same state, whose function may
     * keep the values and the factorization the first one made). */
    eom_tangent_fn tangent;
    size_t tk;
    double *t_out, *t_dout, *t_work, *t_dwork;
    double *t_pout, *t_pdout, *t_pwork, *t_pdwork;
    double *t_scratch;
    size_t *t_perm;
    double *t_block;
    bool t_again;
    size_t t_max_block; /* tests: at most this many directions a block (0:
                           as the budget allows) */

    /* voronec, naive: the split of the coordinates and the coefficients
     * of the explicit constraints q_dep' = Σ_j a_νj q_ind_j'. */
    size_t k, mi;        /* dependent, independent coordinates */
    size_t *dep, *ind;   /* coordinate indices */
    const expr_t **a;    /* a_νj                                 (k×mi) */
    const expr_t **b;    /* b^ν_ij                               (k×mi×mi) */
    const expr_t *Lbar;  /* the reduced Lagrangian */
    const expr_t **vdep; /* Σ_j a_νj q_ind_j'                    (k)  */
    const expr_t **rowl, **rowr; /* describe: row i reads rowl = rowr */
    size_t nrows;
    struct eom_buf *collect; /* eom_rows: where the describer's rows go */

    /* The fast path of a small system (common.c): a second tape that also
     * solves the method's definite linear system, by an LDLᵀ built from
     * nodes (so structural zeros and constants cost nothing and every
     * shared product is computed once), and writes its values straight
     * into the variables.  Its pivots are checked at run time; when a
     * matrix is not definite or a value not finite, full_compute (the
     * numeric path on e->tape, with the errors) takes over.  For the
     * right-hand side (eom_rhs) only the derivatives of the state need
     * be finite. */
    tape_t *fast;
    double *fast_out, *fast_work;
    uint32_t *fast_var;  /* the variable each value output goes to */
    size_t fast_nval;
    size_t fast_ngroup, fast_group[2]; /* sizes of the factored matrices */
    bool fast_clear_lambda;
    eom_compute_fn full_compute;
    /* By state entry: the fast value that is its derivative (>= 0), or
     * -1 - j for the state entry j; NULL when the fast path does not give
     * every derivative (eom_rhs then runs compute). */
    int32_t *fast_dydt;

    /* A first tape, run before e->tape by the compute functions that
     * use it (eom_run_pre): its NPRE outputs are written into the
     * variables PRE_VAR, which e->tape then reads.  maggi writes q' = ψ
     * this way, so that its tape reads h, M and β at the velocities
     * instead of carrying ψ substituted into them. */
    tape_t *pre;
    double *pre_out, *pre_work;
    uint32_t *pre_var;
    size_t npre;

    /* A verdict of a layer above about these equations (eom_memo): 0
     * until it is set. */
    int memo_energy;
    /* simulate's monitors (eom_monitor_tape): built on first use. */
    struct tape *mon;
    size_t *mon_hol, mon_nh;
    eom_native_monitors_fn native_mon;
    eom_native_tangent_fn native_tan, native_tan_pre;
    double *t_nval, *t_pnval; /* their value arrays */
    void *native_tan_handle;
    void (*native_tan_release)(void *handle);
    /* compiled constraint Jacobians (eom_set_native_constraints): the
     * velsolver's buffers hold their values */
    eom_native_values_fn native_jac;
    eom_native_tangent_fn native_ceff;
    size_t ceff_values;
    /* Native code (eom_set_native): called before compute. */
    eom_native_fn native;
    eom_native_rhs_fn native_rhs;
    void *native_handle;
    void (*native_release)(void *handle);

    /* maggi, gibbs_appell */
    const expr_t **Psi;  /* ∂ψ_i/∂z_a                            (n×m) */
    const expr_t **beta; /* maggi: β at the velocities q'          (n)  */
    const expr_t *S;     /* gibbs_appell: the Gibbs function */
    bool S_particles;    /* S from the particles (else eq. 68 form) */
    /* The kinematic equations completed from the constraints
     * (kinematics.h), and ψ for every coordinate: the given ones, and
     * the dependent ones as nodes, or NULL when they are solved at each
     * evaluation (kin_numeric).  Then the first tape also gives A (k×k)
     * and b0 (k) after ψ_I, the compute step solves A q_D' = −b0 (LU in
     * kin_lu, kin_perm; kin_x scratch), and the main tape also gives c
     * and the independent columns of B of those rows (after Ψ), from
     * which Ψ_D and β_D follow (B Ψ = 0, B β + c = 0).  KIN_BLOCK_MAX:
     * the largest block solved symbolically (eom_prepare_kin). */
    struct eom_kin *kin;
    const expr_t *const *psi;
    bool kin_numeric;
    size_t kin_k, kin_block_max;
    /* During the prepare only: the state where the motion is
     * (eom_prepare_at; NULL when none was given). */
    const double *near;
    const size_t *kin_dep;  /* the dependent coordinates (of kin) */
    size_t *kin_ind;        /* the others */
    double *kin_lu, *kin_x;
    size_t *kin_perm;
    /* The family's own resources, released by eom_free (NULL: none). */
    void (*release)(eom_t *e);
};

/* ---- common.c -------------------------------------------------------- */

/* p, M, h, Ceff and B of SYS into *D (arrays malloc'ed): p, M and h from
 * the particles when eom_particle_form(SYS), else from L.  c is left NULL
 * for eom_derive_c: only the methods that solve for q'' need it, and for
 * a chain it is an O(N) time derivative of every constraint. */
void eom_derive(const nh_system_t *sys, eom_derived_t *d);
/* Whether T is the particles' energy in the form the particle derivation
 * needs (constant masses, positions of q and t, V without velocities). */
bool eom_particle_form(const nh_system_t *sys);
/* eom_derive with the form chosen: PARTICLES requires
 * eom_particle_form(SYS).  The same values either way (the tests compare
 * them); the particles' form is smaller and faster to derive. */
void eom_derive_form(const nh_system_t *sys, eom_derived_t *d,
                     bool particles);
/* D->c (the constraints' q''-free part, Ceff' = B q'' + c), once. */
void eom_derive_c(const nh_system_t *sys, eom_derived_t *d);
void eom_derived_free(eom_derived_t *d);
/* The constraint rows of *D: Ceff (f' for a holonomic f, else C), whether
 * each is holonomic, and B = ∂Ceff/∂q', with DV as eom_dvar gives it and
 * VMASK as eom_velocity_mask. */
void eom_derive_rows(const nh_system_t *sys, eom_derived_t *d,
                     const expr_t *const *dv, const bool *vmask);
/* True for the q_i' variables (malloc'ed, nvars entries). */
bool *eom_velocity_mask(const nh_system_t *sys);

/* dvar for expr_dt along a motion where q_i' = vel[i] (vel NULL: the
 * velocity variables q_i') and t' = 1; other variables constant.
 * Malloc'ed, nvars entries. */
const expr_t **eom_dvar(const nh_system_t *sys, const expr_t *const *vel);
/* OUT[i] = the total time derivative of E[i] along DV (as expr_dt), by
 * forward propagation through sums and products, memoised by node across
 * the N expressions (common.c): O(size) where expr_dt is O(size · vars). */
void eom_dt_forward(expr_graph_t *g, const expr_t *const *e, size_t n,
                    const expr_t *const *dv, const expr_t **out);
/* repl for expr_subst replacing every q_i' by vel[i] (NULL entries keep
 * q_i').  Malloc'ed, nvars entries. */
const expr_t **eom_subst_velocities(const nh_system_t *sys,
                                    const expr_t *const *vel);

/* Compiles OUTS into e->tape and allocates e->out and e->work. */
void eom_compile(eom_t *e, const expr_t *const *outs, size_t nout);
/* Compiles OUTS (NOUT of them) into e->pre (see struct eom): the values
 * of the first NVAR go into the variables VAR when it runs, the others
 * stay in e->pre_out for the compute step. */
void eom_compile_pre(eom_t *e, const expr_t *const *outs,
                     const uint32_t *var, size_t nvar, size_t nout);
void eom_run_pre(eom_t *e, double *vars);
/* Evaluates e->tape with derivatives into e->t_out, e->t_dout (the
 * buffers of eom_tangent_reserve), K directions, from DVARS. */
void eom_tangent_tape(eom_t *e, const double *vars, const double *dvars,
                      size_t k);
/* The same for e->pre, whose values and derivatives go into the
 * variables it writes (as eom_run_pre): VARS and DVARS. */
void eom_tangent_pre(eom_t *e, double *vars, double *dvars, size_t k);
/* The memory eom_tangent's buffers may take in all (bytes): with a
 * model's tapes of W values (outputs and work slots), about
 * EOM_TANGENT_BUDGET / (8 W) directions at a time, at least one.  A
 * linearization of 1000 uncoupled particles took 2000 directions of a
 * tape of 500 000 outputs at once, 8 GB (issue 31). */
#define EOM_TANGENT_BUDGET ((size_t)64 << 20)

/* Solves A X = B for the n×n matrix A (row-major, destroyed) and the
 * n×k right sides B (row-major: row i holds the k directions of unknown
 * i), overwritten by X; W has 2n doubles, PERM n entries.  Returns 0, or
 * -1 with *err set naming WHAT when A is singular.  When E->t_again, A
 * and PERM hold the factorization of the block before, which is used
 * as it is. */
int eom_tangent_solve(const eom_t *e, double *a, size_t n, double *b,
                      size_t k, double *w,
                      size_t *perm, const char *what, diag_t *err);

/* The place of entry (i, j) of a symmetric n×n matrix packed as its
 * upper triangle row by row (the layout of M, M̄ and G on the tapes). */
static inline size_t eom_upper_index(size_t n, size_t i, size_t j)
{
    if (i > j) {
        size_t t = i;
        i = j;
        j = t;
    }
    return i * (2 * n - i + 1) / 2 + (j - i);
}

/* Allocates e->scratch (nd doubles) and e->perm (np entries). */
void eom_alloc_scratch(eom_t *e, size_t nd, size_t np);
/* Sets the ODE state: the n coordinates, then NV velocity-like
 * variables VEL[] whose derivatives are DVEL[]; the coordinates'
 * derivatives are the q_i' variables. */
void eom_set_state(eom_t *e, const uint32_t *vel, const uint32_t *dvel,
                   size_t nv);

/* x = A⁻¹x for the symmetric n×n matrix A given as its upper triangle,
 * packed row by row (the layout of M, M̄ and G on the tapes): LDLᵀ when A
 * is definite, else LU with partial pivoting.  F has n×n doubles, W n,
 * PERM n entries.  Returns 0, or -1 when A is singular (F is then
 * scratch). */
int eom_solve_symmetric(const double *upper, size_t n, double *x, double *f,
                        double *w, size_t *perm);
/* Fills the full n×n matrix F (leading dimension LD) from the packed
 * upper triangle U. */
void eom_unpack_symmetric(const double *u, size_t n, double *f, size_t ld);
/* The lower triangle of the n×n F (row-major) from the packed upper
 * triangle U: what linalg_ldlt reads. */
void eom_unpack_lower(const double *u, size_t n, double *f);

/* Replaces each of E[0..n) by its expanded form: products and squares
 * of sums multiplied out (see common.c), so that terms which cancel do. */
void eom_expand(expr_graph_t *g, const expr_t **e, size_t n);

/* Whether velocity J stands in constraint A alone: a constant nonzero
 * coefficient B_aj, and none in every other row (voronec's dependent
 * velocities; the multipliers' fast path eliminates them). */
bool eom_velocity_alone(const eom_t *e, size_t a, size_t j);

/* Systems with up to this many coordinates (and multipliers) get the
 * fast path: beyond, the tape dominates and the numeric solve is cheap
 * next to it, while the solution by nodes grows as a cube. */
#define EOM_FAST_MAX 8

/* ... and numeric tapes (M, h, B, c and the like) of up to this many
 * instructions: the fast path pays where the method's expressions are
 * short, so that multiplied out and solved by nodes they still cancel or
 * share (the examples up to the rolling disk and Chaplygin's ball:
 * numeric tapes of 7 to 103 instructions, fast ones of 19 to 181; the
 * rattleback's 389 and the bicycle's 1260 go numeric).  On long
 * expressions the solution by nodes grows
 * far beyond the numeric path it replaces: the 4-trailer's 188
 * instructions became 837, slower to run; the benchmark bicycle's 1668
 * became 11 641, at 90% of its derivation time (doc/performance.md). */
#define EOM_FAST_TAPE_MAX 128

/* Whether the fast path pays for E, whose numeric tapes are compiled:
 * the sizes above (the caller checks its own counts against
 * EOM_FAST_MAX). */
bool eom_fast_pays(const eom_t *e);

/* The LDLᵀ of the symmetric n×n node matrix A (full, row-major) built
 * from nodes, and the solutions X (nrhs rows of n) of A x = b for the
 * NRHS right sides RHS (rows of n); D gets the n pivots. */
void eom_ldlt_nodes(expr_graph_t *g, const expr_t *const *A, size_t n,
                    const expr_t *const *rhs, size_t nrhs, const expr_t **d,
                    const expr_t **x);
/* Installs the fast path: NGROUP factored matrices of sizes SIZES, whose
 * diagonals DIAG and pivots PIV are given one group after the other, and
 * NVAL values VAL to be written into the variables VAR.  The compute
 * function set so far becomes the fallback.  CLEAR_LAMBDA: the method
 * has no multipliers (they read NaN). */
void eom_fast_install(eom_t *e, size_t ngroup, const size_t *sizes,
                      const expr_t *const *diag, const expr_t *const *piv,
                      const expr_t *const *val, const uint32_t *var,
                      size_t nval, bool clear_lambda);

/* Checks that COUNT values are finite; else sets *err naming WHAT and
 * returns -1. */
int eom_check_finite(const double *v, size_t count, const char *what,
                     diag_t *err);
/* Sets *err to "the NAME is singular (rank k of FULL)" with the rank of
 * the rows×cols matrix A (destroyed) and returns -1. */
int eom_singular(diag_t *err, const char *name, double *a, size_t rows,
                 size_t cols, size_t full);
/* Rank of the rows×cols matrix A (destroyed). */
size_t eom_rank(double *a, size_t rows, size_t cols);
/* Whether the constraints of SYS are independent at the state: the r×n
 * matrix B (the rows of holonomic constraints are those of their
 * derivatives) has rank r.  When not, sets *err naming the constraints
 * whose rows are dependent — those whose row lies in the span of the
 * others, so that leaving it out keeps the rank (LANGUAGE.md §4) — and
 * returns -1.  BUF has room for r*n doubles. */
int eom_check_independent(const nh_system_t *sys, const double *B,
                          double *buf, diag_t *err);
/* True when the Schur complement H = B M⁻¹ Bᵀ, whose largest entry is
 * HMAX, is negligible against the mass matrix, whose largest entry is
 * MMAX: H·M scales as B², so this is |B| below √LINALG_RTOL against M's
 * scale, the point where linalg_lu declares [M −Bᵀ; B 0] singular.  A
 * constraint whose gradient B shrinks towards 0 then counts as singular
 * in every path (multipliers' blocks, their fast path, second_kind)
 * instead of letting the integrator crawl towards the singular state
 * (fuzz findings 004, 012, 013). */
bool eom_schur_negligible(double hmax, double mmax);

/* eom_prepare with the dependent velocities solved symbolically in
 * blocks of at most BLOCK_MAX (EOM_KIN_BLOCK_MAX for eom_prepare; 0
 * solves them numerically at each evaluation): for the tests, which hold
 * the two ways to each other. */
eom_t *eom_prepare_kin(const nh_system_t *sys, eom_method_t method,
                       size_t block_max, src_span_t where, diag_t *err);

/* calloc that aborts when memory runs out (the one fatal case). */
void *eom_alloc(size_t count, size_t size);

/* Writes NaN into every multiplier variable. */
void eom_clear_lambda(const eom_t *e, double *vars);

/* ---- maggi.c, for solved.c ------------------------------------------ */

/* The m rows Σ_b G_ab z_b' = rhs_a of maggi or gibbs_appell, as `show
 * eom` shows them (maggi: with q' = ψ substituted). */
void eom_maggi_rows(const eom_t *e, const expr_t **rowl,
                    const expr_t **rowr);

/* ---- text for the describers ---------------------------------------
 * A describer writes headings, rows and named objects into an eom_buf_t
 * and returns eom_buf_finish's string.  Rows and objects are shown in
 * their display forms (LANGUAGE.md §7.1, interp/expr/simplify.h): a row
 * l = r as L = R with the accelerations on the left, expanded,
 * cancelled and collected; the block laid out by interp/expr/display.h
 * (LaTeX: an align* with the headings as comments, rows broken to fit
 * the page; named subexpressions where a row is too long for a line, the
 * coordinates that no row depends on set to 0 in them).  A buffer in
 * collecting mode (eom_rows) formats nothing and keeps the rows' nodes
 * instead. */

struct simp;
struct display;

typedef struct eom_buf {
    char *s;
    size_t len, cap;
    const nh_system_t *sys;
    struct simp *simp;   /* the display context, made at the first item */
    struct display *disp; /* the block (interp/expr/display.h) */
    /* collecting mode: the rows' sides, in the system's graph, handed
     * to SINK by eom_buf_finish */
    bool collect;
    const expr_t **cl, **cr;
    size_t nrow, rowcap;
    struct eom_buf *sink;
} eom_buf_t;

/* A describer's buffer: collecting when eom_rows runs the describer. */
eom_buf_t eom_buf_start(const eom_t *e);

void eom_buf_puts(eom_buf_t *b, const char *s);
void eom_buf_printf(eom_buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends the row "L = R" for the equation l = r (LaTeX "L &= R"),
 * newline-terminated. */
void eom_buf_row(eom_buf_t *b, expr_graph_t *g, const expr_t *l,
                 const expr_t *r, bool latex);
/* Appends the row "LABEL = E" for a named object (TEXT_LABEL "M[x, y]" or
 * "F_u1", LATEX_LABEL "M_{x,y}" or "F_{u_{1}}"), E in its display form. */
void eom_buf_object(eom_buf_t *b, expr_graph_t *g, const char *text_label,
                    const char *latex_label, const expr_t *e, bool latex);
/* Appends a heading line (LaTeX: as a comment "% ..."). */
void eom_buf_heading(eom_buf_t *b, bool latex, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The text written (malloc'ed, never NULL), the LaTeX environment
 * closed; the buffer's display freed. */
char *eom_buf_finish(eom_buf_t *b, bool latex);
/* The LaTeX of variable V of G (\ddot{\theta}, x_{1}); malloc'ed. */
char *eom_latex_var(expr_graph_t *g, uint32_t v);

#endif
