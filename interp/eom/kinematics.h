/*
 * kinematics.h — the kinematic equations q' = ψ(q, z, t) of the methods on
 * speeds (maggi, gibbs_appell: LANGUAGE.md §5), completed from the
 * constraints: the user writes `kinematic` equations for the independent
 * velocities only, and the velocities of the other coordinates (the
 * dependent ones) are solved from the constraints, which are linear in
 * them (doc/language.md, "Kane's form").
 *
 * With I the coordinates that have a kinematic equation and D the k that
 * have none, each constraint row used (Ceff: C, or f' for a holonomic f)
 * is affine in the dependent velocities:
 *     Σ_j A_aj q_Dj' + b0_a = 0,   A = ∂Ceff/∂q_D',  b0 = Ceff at q_D' = 0,
 * both with q_I' = ψ_I substituted, so functions of (q, z, t).  k rows of
 * A regular at sample states are chosen, and ψ_D = −A⁻¹ b0 is found
 *   — symbolically (EOM_KIN_SYMBOLIC): A is put in block triangular form
 *     by its structure (a matching of rows to velocities, then the
 *     strongly connected components of what each velocity's row uses),
 *     and each diagonal block is solved by Cramer's rule in the
 *     velocities solved before it.  The only divisors are the blocks'
 *     determinants, whose product is ±det A: ψ_D has no pole where the
 *     constraints determine the velocities (a pivot of an LU can vanish
 *     there: the bicycle's front wheel, at some heading, for any choice);
 *   — or numerically at each evaluation (EOM_KIN_NUMERIC), when a block
 *     is larger than the limit: the caller evaluates A and b0 and solves.
 *
 * Ownership: an eom_kin_t borrows the system (which must outlive it) and
 * owns its arrays; its nodes belong to the system's graph.
 * Must not: print; change the system (it adds nodes, as any derivation).
 */
#ifndef NH_EOM_KINEMATICS_H
#define NH_EOM_KINEMATICS_H

#include <stdbool.h>
#include <stddef.h>

#include "interp/mech/system.h"
#include "lang/source.h"

/* The largest block solved by Cramer's rule (its determinant by Laplace
 * expansion over the 2^(s+1) column sets of the block and its right
 * side); a larger block is solved numerically at each evaluation. */
#define EOM_KIN_BLOCK_MAX 6

typedef enum eom_kin_mode {
    EOM_KIN_GIVEN,    /* every coordinate has a kinematic equation */
    EOM_KIN_SYMBOLIC, /* ψ_D as nodes */
    EOM_KIN_NUMERIC   /* ψ_D solved at each evaluation from A, b0 */
} eom_kin_mode_t;

typedef struct eom_kin eom_kin_t;

/* Completes the kinematic equations of SYS for METHOD (its name, for the
 * messages), with blocks of up to BLOCK_MAX velocities solved
 * symbolically.  Errors (NULL, *err set): no speeds, no kinematic
 * equation at all, one that depends on a velocity (at its declaration),
 * velocities that the constraints do not determine (at WHERE, naming
 * them), or only through a constraint not linear in them (at that
 * constraint). */
eom_kin_t *eom_kin_new(const nh_system_t *sys, const char *method,
                       size_t block_max, src_span_t where, diag_t *err);
void eom_kin_free(eom_kin_t *k); /* accepts NULL */

eom_kin_mode_t eom_kin_mode(const eom_kin_t *k);
/* ψ for every coordinate (n entries): the given ones, and the dependent
 * ones as nodes in (q, z, t), or NULL in numeric mode. */
const expr_t *const *eom_kin_psi(const eom_kin_t *k);
/* The dependent coordinates (k of them, declaration order), and the
 * constraints solved for them (k, row i of A). */
size_t eom_kin_dependent(const eom_kin_t *k, const size_t **dep);
const size_t *eom_kin_rows(const eom_kin_t *k);
/* A (k×k, row i of constraint rows[i], column j of velocity dep[j]) and
 * b0 (k): Σ_j A_ij q_dep[j]' + b0_i = 0, with q_I' = ψ_I. */
const expr_t *const *eom_kin_matrix(const eom_kin_t *k);
const expr_t *const *eom_kin_offset(const eom_kin_t *k);
/* Symbolic mode: the blocks, in the order they are solved.  ORDER (k
 * entries, indices into dep) lists the velocities block after block;
 * *SIZES (the number of blocks returned) their sizes; SEQ (k, by index
 * into dep) each velocity in terms of (q, z, t) and the dependent
 * velocities of earlier blocks. */
size_t eom_kin_blocks(const eom_kin_t *k, const size_t **order,
                      const size_t **sizes, const expr_t *const **seq);
/* Symbolic mode: the constraint (an index of the system's) that
 * dependent velocity J (an index into dep) is solved from — with the
 * others of its block, when that is larger than 1. */
size_t eom_kin_row_of(const eom_kin_t *k, size_t j);
/* Symbolic mode: the accelerations' offsets β_D (q_D'' = β_D when every
 * z' is 0) of the dependent coordinates, from the constraints' derivative
 * Σ_j B_aj q_j'' + c_a = 0 solved by the blocks of ψ_D, given B
 * (= ∂Ceff/∂q', r×n), c (the rest of Ceff', r) and BETA's entries for the
 * other coordinates; writes BETA's dependent entries. */
void eom_kin_beta(const eom_kin_t *k, const expr_t *const *B,
                  const expr_t *const *c, const expr_t **beta);
/* The largest block (numeric mode: the one that was too large). */
size_t eom_kin_largest_block(const eom_kin_t *k);
/* The sample states that judged the rows and the structure. */
size_t eom_kin_samples(const eom_kin_t *k);

/* `show kinematics`: the given equations, then the dependent velocities
 * in the order they are solved (or, numerically, the rows they are
 * solved from), as text or LaTeX rows (malloc'ed). */
char *eom_kin_describe(const eom_kin_t *k, bool latex);

#endif
