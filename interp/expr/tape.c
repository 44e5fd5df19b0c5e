/*
 * tape.c — output nodes compiled into a flat instruction tape, and the
 * loop that runs it.
 *
 * Compilation has four passes.
 *
 *  1. Lowering.  The graph below the outputs becomes a small IR of binary
 *     and unary operations, itself hash-consed, so equal operations are
 *     computed once.  A sum or product is the left fold of its operands in
 *     canonical order, exactly as expr_apply() folds them, one IR node per
 *     step: two products that begin with the same operands (m*R*sin(phi)
 *     and m*R*cos(phi)) share the steps of that prefix, which computes the
 *     same bits in both.  A product with a negative coefficient c is
 *     lowered as the negation of the product with |c| (and without it when
 *     |c| = 1); a sum folds such a term in with a subtraction, which is
 *     the same IEEE operation (x + (−y) is x − y, bit for bit).
 *  2. Scheduling: a post-order walk of the IR from the outputs, so each
 *     term of a sum is computed just before it is folded in and few
 *     values are alive at once.  sin(u) and cos(u) of the same u are
 *     then scheduled together and become one SINCOS instruction (libm
 *     computes both by the same code as sin and cos apart).
 *  3. Fusion: an operation whose value is read once, by the next step of
 *     a chain, is computed inside that step's instruction: (a+b)+c,
 *     (a*b)*c, a + b*c, (a−b)*c, ... — one dispatch instead of two.
 *  4. Slots: a work slot is released after the last instruction that
 *     reads its value and reused by the next value computed.
 *
 * Instruction format (16 bytes):
 *
 *     0        8                        32              64              96             128
 *    +--------+------------------------+---------------+---------------+---------------+
 *    |   op   |          dst           |       a       |       b       |       c       |
 *    +--------+------------------------+---------------+---------------+---------------+
 *
 *    dst      work slot written (24 bits)
 *    a, b, c  work slots read: two-operand forms use a and b, the fused
 *             forms a, b and c; SINCOS writes sin(a) to dst and cos(a)
 *             to c; GUARD writes a when b is finite, else NaN.
 *
 * The work buffer is [constants | input variables | temporaries]:
 * tape_eval copies the constant pool and gathers the variables the tape
 * reads into their slots, so every operand is a work slot (and those
 * slots, too, are reused once their value is dead).
 *
 * Arithmetic is expr_apply()'s, operation for operation:
 *   ADD, MUL of n operands  the left fold x0 OP x1 OP ... in canonical
 *                           order, as the tree folds them
 *   POW with exponent 2, 3, -1, -2  SQR a*a, CUBE a*a*a, RECIP 1/a,
 *                           RSQR 1/(a*a): expr_apply takes the same branch
 *   POW with another constant exponent  POWK: pow(a, b)
 *   POW otherwise           POW: expr_apply(EXPR_POW, ...)
 *   GUARD(v, d1, ..., dk)   a chain GUARD(...GUARD(v, d1)..., dk): v, or
 *                           NaN when some di is not finite
 *   functions               the libm call expr_apply makes; sign, min, max
 *                           and atan2 through expr_apply itself
 * No operation hides an operand that is not finite (LANGUAGE.md §3.4.1):
 * RECIP, RSQR, POWK, POW, ATAN, TANH and EXP give NaN where IEEE would
 * map such an operand to a finite result, by expr_impl.h's helpers, as
 * SIGN, MIN, MAX and ATAN2 do through expr_apply; the other operations
 * keep a NaN or an infinity by themselves.
 *
 * The rewrites above are exact in IEEE arithmetic ((−a)·b = −(a·b),
 * x + (−y) = x − y, a + b = b + a), so tape_eval and expr_eval agree bit
 * for bit, save for which NaN comes out when two different NaNs meet in
 * one operation: IEEE 754 leaves that open and C lets the compiler
 * commute + and *.  The fused forms that mix * with + or − are used only
 * where the compiler cannot contract them into a fused multiply-add
 * (which rounds once where the tree rounds twice): not when it defines
 * __FP_FAST_FMA.
 *
 * Must not: allocate, recurse or hash in tape_eval; reference the graph
 * after tape_compile; recurse in tape_compile (chains may be long).
 */
#include "interp/expr/tape.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp/expr/expr_impl.h"
#include "interp/base/util.h"

/* An output operand read from the caller's vector (a bare variable). */
#define TAPE_VAR 0x80000000u

/* Mixed fused forms (a*b)+c, a+b*c, ... only where they cannot become a
 * fused multiply-add (see the file comment). */
#if defined(__FP_FAST_FMA)
#define TAPE_FUSE_MIXED 0
#else
#define TAPE_FUSE_MIXED 1
#endif

/* X(NAME, VALUE, SECOND): the opcodes, and the C text of the value each
 * computes, for the generated C of `export c` (tape_write_c): %a, %b, %c
 * stand for the operands, SECOND is the value written to slot c (SINCOS
 * only).  The text is the handler's arithmetic in tape_eval below,
 * operation for operation and in the same order: C's + - * / associate
 * to the left, so "%a + %b + %c" is (a + b) + c with two roundings, as
 * the handler computes it.  A change to a handler changes its text here.
 * The fused ones are named outer-first by shape: L_AB is (a A b) B c,
 * R_AB is a A (b B c). */
#define TAPE_OPS(X)                                                           \
    X(ADD, "%a + %b", 0) X(SUB, "%a - %b", 0) X(MUL, "%a * %b", 0)            \
    X(NEG, "-%a", 0)                                                          \
    X(L_ADD_ADD, "%a + %b + %c", 0) X(L_ADD_SUB, "%a + %b - %c", 0)           \
    X(L_SUB_ADD, "%a - %b + %c", 0) X(L_SUB_SUB, "%a - %b - %c", 0)           \
    X(L_MUL_MUL, "%a * %b * %c", 0) X(L_MUL_ADD, "%a * %b + %c", 0)           \
    X(L_MUL_SUB, "%a * %b - %c", 0) X(L_ADD_MUL, "(%a + %b) * %c", 0)         \
    X(L_SUB_MUL, "(%a - %b) * %c", 0)                                         \
    X(R_ADD_MUL, "%a + %b * %c", 0) X(R_SUB_MUL, "%a - %b * %c", 0)           \
    X(SQR, "%a * %a", 0) X(CUBE, "%a * %a * %a", 0)                           \
    X(RECIP, "nh_recip(%a)", 0) X(RSQR, "nh_rsqr(%a)", 0)                     \
    X(POWK, "nh_pow_ieee(%a, %b)", 0) X(POW, "nh_pow(%a, %b)", 0)             \
    X(GUARD, "nh_guard(%a, %b)", 0)                                           \
    X(SIN, "sin(%a)", 0) X(COS, "cos(%a)", 0)                                 \
    X(SINCOS, "sin(%a)", "cos(%a)")                                           \
    X(TAN, "tan(%a)", 0) X(ASIN, "asin(%a)", 0) X(ACOS, "acos(%a)", 0)        \
    X(ATAN, "nh_keep(atan(%a), %a)", 0) X(SINH, "sinh(%a)", 0)                \
    X(COSH, "cosh(%a)", 0) X(TANH, "nh_keep(tanh(%a), %a)", 0)                \
    X(EXP, "nh_keep(exp(%a), %a)", 0) X(LOG, "log(%a)", 0)                    \
    X(SQRT, "sqrt(%a)", 0) X(ABS, "fabs(%a)", 0)                              \
    X(SIGN, "nh_sign(%a)", 0) X(ATAN2, "nh_atan2(%a, %b)", 0)                 \
    X(MIN, "nh_min(%a, %b)", 0) X(MAX, "nh_max(%a, %b)", 0)                   \
    X(END, 0, 0)

/* X(NAME, TEXT): the functions the C text of an op may call, as C99 text:
 * the scalar semantics of expr_impl.h (expr_keep_bad, expr_recip,
 * expr_rsqr, expr_pow_ieee, expr_guard_apply: no operation hides a
 * non-finite operand, LANGUAGE.md §3.4.1) and of expr_apply where the
 * handler calls it (expr.c's apply_pow, apply_sign, apply_minmax, the
 * ATAN2 case).  A generated file gets the ones its ops' texts name
 * (tape_write_c looks for "NAME(" in them), and the ones those call: a
 * helper comes after the helpers it calls. */
#define TAPE_HELPERS(X)                                                       \
    X("nh_keep", "static double nh_keep(double r, double a)\n"                \
            "{\n"                                                              \
            "    return isfinite(a) || !isfinite(r) ? r : NAN;\n"              \
            "}\n")                                                             \
    X("nh_recip", "static double nh_recip(double a)\n"                        \
            "{\n"                                                              \
            "    return isinf(a) ? NAN : 1 / a;\n"                             \
            "}\n")                                                             \
    X("nh_rsqr", "static double nh_rsqr(double a)\n"                          \
            "{\n"                                                              \
            "    return isinf(a) ? NAN : 1 / (a * a);\n"                       \
            "}\n")                                                             \
    X("nh_pow_ieee", "static double nh_pow_ieee(double a, double b)\n"        \
            "{\n"                                                              \
            "    return nh_keep(nh_keep(pow(a, b), a), b);\n"                  \
            "}\n")                                                             \
    X("nh_pow", "static double nh_pow(double a, double b)\n"                  \
            "{\n"                                                              \
            "    if (b == 2)\n"                                                \
            "        return a * a;\n"                                          \
            "    if (b == 3)\n"                                                \
            "        return a * a * a;\n"                                      \
            "    if (b == -1)\n"                                               \
            "        return nh_recip(a);\n"                                    \
            "    if (b == -2)\n"                                               \
            "        return nh_rsqr(a);\n"                                     \
            "    return nh_pow_ieee(a, b);\n"                                  \
            "}\n")                                                             \
    X("nh_guard", "static double nh_guard(double v, double cond)\n"           \
            "{\n"                                                              \
            "    return isfinite(cond) ? v : NAN;\n"                           \
            "}\n")                                                             \
    X("nh_sign", "static double nh_sign(double x)\n"                          \
            "{\n"                                                              \
            "    return nh_keep(x > 0 ? 1.0 : x < 0 ? -1.0 : x, x);\n"         \
            "}\n")                                                             \
    X("nh_atan2", "static double nh_atan2(double a, double b)\n"              \
            "{\n"                                                              \
            "    return nh_keep(nh_keep(atan2(a, b), a), b);\n"                \
            "}\n")                                                             \
    X("nh_minmax", "static double nh_minmax(double r, double a, double b)\n"  \
            "{\n"                                                              \
            "    if (isnan(a))\n"                                              \
            "        return a;\n"                                              \
            "    if (isnan(b))\n"                                              \
            "        return b;\n"                                              \
            "    return nh_keep(nh_keep(r, a), b);\n"                          \
            "}\n")                                                             \
    X("nh_min", "static double nh_min(double a, double b)\n"                  \
            "{\n"                                                              \
            "    return nh_minmax(b < a ? b : a, a, b);\n"                     \
            "}\n")                                                             \
    X("nh_max", "static double nh_max(double a, double b)\n"                  \
            "{\n"                                                              \
            "    return nh_minmax(b > a ? b : a, a, b);\n"                     \
            "}\n")

typedef enum tape_op {
#define TAPE_ENUM(NAME, VALUE, SECOND) T_##NAME,
    TAPE_OPS(TAPE_ENUM)
#undef TAPE_ENUM
    T_COUNT
} tape_op_t;

typedef struct tape_ins {
    uint32_t op : 8;
    uint32_t dst : 24;
    uint32_t a, b, c;
} tape_ins_t;

struct tape {
    tape_ins_t *code; /* len instructions, then END */
    size_t len;
    double *consts;
    size_t nconst;
    uint32_t *in_var; /* variable gathered into slot nconst + j */
    size_t nin;
    size_t work;
    uint32_t *outs; /* slot of each output, or TAPE_VAR | variable */
    size_t nout;
};

/* ---- the IR -------------------------------------------------------------- */

/* IR operations: the leaves, then one per tape operation (fused forms
 * and SINCOS are chosen later). */
typedef enum ir_op {
    IR_CONST, /* a, b: the low and high halves of the bits; slot: index
                 in the constant pool */
    IR_VAR,   /* a: the variable */
    IR_ADD,
    IR_SUB,
    IR_MUL,
    IR_NEG,
    IR_SQR,
    IR_CUBE,
    IR_RECIP,
    IR_RSQR,
    IR_POWK,
    IR_POW,
    IR_GUARD,
    IR_FUNC /* IR_FUNC + (expr op - EXPR_SIN): the functions */
} ir_op_t;

#define IR_NONE UINT32_MAX

typedef struct ir_node {
    uint32_t op;
    uint32_t a, b;   /* operands (IR ids), IR_NONE when absent */
    uint32_t uses;   /* readers among the live nodes, plus outputs */
    uint32_t fuse;   /* the operand computed inside this node's
                        instruction, or IR_NONE */
    uint32_t slot;
    size_t last;     /* the last instruction reading the value */
    uint8_t state;   /* walk state */
    bool absorbed;   /* computed inside its reader's instruction */
} ir_node_t;

enum { UNSEEN = 0, OPEN = 1, DONE = 2 };

typedef struct compiler {
    const expr_graph_t *g;
    size_t nvars;
    ir_node_t *ir;
    size_t nir, ir_cap;
    uint32_t *table; /* hash-consing of the IR, open addressing */
    size_t table_cap;
    double *consts;
    size_t nconst, const_cap;
    uint32_t *in_var;
    size_t nin, in_cap;
    uint32_t *sched; /* IR ids in evaluation order */
    size_t nsched;
    tape_ins_t *code;
    uint32_t *code_ir; /* the IR node each instruction computes */
    size_t len, cap;
} compiler_t;

static uint64_t ir_hash(uint32_t op, uint32_t a, uint32_t b)
{
    uint64_t h = ((uint64_t)op << 56) ^ ((uint64_t)a << 28) ^ b;
    h ^= h >> 31;
    h *= 0x9e3779b97f4a7c15ULL;
    return h ^ (h >> 29);
}

static void ir_table_grow(compiler_t *c)
{
    size_t cap = c->table_cap ? 2 * c->table_cap : 256;
    uint32_t *t = xmalloc(cap * sizeof *t);
    memset(t, 0xff, cap * sizeof *t);
    for (size_t i = 0; i < c->nir; i++) {
        const ir_node_t *n = &c->ir[i];
        size_t j = ir_hash(n->op, n->a, n->b) & (cap - 1);
        while (t[j] != IR_NONE)
            j = (j + 1) & (cap - 1);
        t[j] = (uint32_t)i;
    }
    free(c->table);
    c->table = t;
    c->table_cap = cap;
}

/* The IR node (op, a, b), created if new. */
static uint32_t ir_node(compiler_t *c, uint32_t op, uint32_t a, uint32_t b)
{
    if (2 * (c->nir + 1) > c->table_cap)
        ir_table_grow(c);
    size_t mask = c->table_cap - 1;
    size_t j = ir_hash(op, a, b) & mask;
    for (uint32_t k; (k = c->table[j]) != IR_NONE; j = (j + 1) & mask)
        if (c->ir[k].op == op && c->ir[k].a == a && c->ir[k].b == b)
            return k;
    if (c->nir == c->ir_cap) {
        c->ir_cap = c->ir_cap ? 2 * c->ir_cap : 256;
        c->ir = xrealloc(c->ir, c->ir_cap * sizeof *c->ir);
    }
    if (c->nir >= IR_NONE - 1)
        abort(); /* four billion operations */
    uint32_t id = (uint32_t)c->nir++;
    c->ir[id] = (ir_node_t){.op = op, .a = a, .b = b, .fuse = IR_NONE,
                            .slot = IR_NONE};
    c->table[j] = id;
    return id;
}

static bool ir_leaf(const ir_node_t *n)
{
    return n->op == IR_CONST || n->op == IR_VAR;
}

/* The IR node of constant V (by bits: -0 and 0 are different nodes). */
static uint32_t ir_const(compiler_t *c, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    uint32_t id = ir_node(c, IR_CONST, (uint32_t)bits, (uint32_t)(bits >> 32));
    if (c->ir[id].slot == IR_NONE) {
        if (c->nconst == c->const_cap) {
            c->const_cap = c->const_cap ? 2 * c->const_cap : 16;
            c->consts = xrealloc(c->consts, c->const_cap * sizeof *c->consts);
        }
        c->ir[id].slot = (uint32_t)c->nconst;
        c->consts[c->nconst++] = v;
    }
    return id;
}

static uint32_t ir_var(compiler_t *c, uint32_t var)
{
    if (var >= c->nvars)
        abort(); /* a variable outside the input vector: caller's bug */
    uint32_t id = ir_node(c, IR_VAR, var, 0);
    if (c->ir[id].uses == 0) { /* first time: a gathered input */
        c->ir[id].uses = 1;       /* (reset before counting the uses) */
        if (c->nin == c->in_cap) {
            c->in_cap = c->in_cap ? 2 * c->in_cap : 16;
            c->in_var = xrealloc(c->in_var, c->in_cap * sizeof *c->in_var);
        }
        c->ir[id].slot = (uint32_t)c->nin; /* offset, fixed up later */
        c->in_var[c->nin++] = var;
    }
    return id;
}

/* ---- lowering --------------------------------------------------------- */

/* The IR of each computed graph node: lo[id], negated when neg[id]
 * (a product with a negative coefficient). */
typedef struct lowering {
    uint32_t *lo;
    uint8_t *neg;
} lowering_t;

/* Node E as an IR value and a sign. */
static uint32_t low_val(compiler_t *c, const lowering_t *L, const expr_t *e,
                        bool *neg)
{
    *neg = false;
    if (e->op == EXPR_CONST)
        return ir_const(c, e->value);
    if (e->op == EXPR_VAR)
        return ir_var(c, e->var);
    *neg = L->neg[e->id];
    return L->lo[e->id];
}

/* Node E as an IR value with its sign applied. */
static uint32_t low_mat(compiler_t *c, const lowering_t *L, const expr_t *e)
{
    bool neg;
    uint32_t v = low_val(c, L, e, &neg);
    return neg ? ir_node(c, IR_NEG, v, IR_NONE) : v;
}

static uint32_t function_op(expr_op_t op)
{
    if (op < EXPR_SIN || op >= EXPR_OP_COUNT)
        abort(); /* not a function op */
    return IR_FUNC + (uint32_t)(op - EXPR_SIN);
}

/* Lowers computed node E, whose operands are lowered. */
static void lower_node(compiler_t *c, lowering_t *L, const expr_t *e)
{
    uint32_t v = IR_NONE;
    bool neg = false;
    switch (e->op) {
    case EXPR_MUL: {
        /* c*f1*...*fk with c < 0 is −(|c|*f1*...*fk): (c*f1) = −(|c|*f1)
         * and (−p)*f = −(p*f) exactly */
        uint32_t i = 0;
        const expr_t *a0 = e->args[0];
        if (a0->op == EXPR_CONST && a0->value < 0) {
            neg = true;
            i = 1;
            if (a0->value != -1.0)
                v = ir_const(c, -a0->value);
        }
        for (; i < e->nargs; i++) {
            uint32_t x = low_mat(c, L, e->args[i]);
            v = v == IR_NONE ? x : ir_node(c, IR_MUL, v, x);
        }
        break;
    }
    case EXPR_ADD: {
        bool n0, n1;
        uint32_t u0 = low_val(c, L, e->args[0], &n0);
        uint32_t u1 = low_val(c, L, e->args[1], &n1);
        if (!n0)
            v = ir_node(c, n1 ? IR_SUB : IR_ADD, u0, u1);
        else if (!n1) /* (−u0) + u1 = u1 − u0 */
            v = ir_node(c, IR_SUB, u1, u0);
        else
            v = ir_node(c, IR_SUB, ir_node(c, IR_NEG, u0, IR_NONE), u1);
        for (uint32_t i = 2; i < e->nargs; i++) {
            bool ni;
            uint32_t u = low_val(c, L, e->args[i], &ni);
            v = ir_node(c, ni ? IR_SUB : IR_ADD, v, u);
        }
        break;
    }
    case EXPR_GUARD:
        /* GUARD(v, d1, ..., dk) = guard(...guard(v, d1)..., dk) */
        v = low_mat(c, L, e->args[0]);
        for (uint32_t i = 1; i < e->nargs; i++)
            v = ir_node(c, IR_GUARD, v, low_mat(c, L, e->args[i]));
        break;
    case EXPR_POW: {
        uint32_t a = low_mat(c, L, e->args[0]);
        const expr_t *b = e->args[1];
        if (b->op != EXPR_CONST) {
            v = ir_node(c, IR_POW, a, low_mat(c, L, b));
            break;
        }
        double x = b->value;
        if (x == 2 || x == 3 || x == -1 || x == -2)
            v = ir_node(c, x == 2 ? IR_SQR : x == 3 ? IR_CUBE
                           : x == -1 ? IR_RECIP : IR_RSQR,
                        a, IR_NONE);
        else
            v = ir_node(c, IR_POWK, a, ir_const(c, x));
        break;
    }
    default:
        v = ir_node(c, function_op(e->op), low_mat(c, L, e->args[0]),
                    e->nargs > 1 ? low_mat(c, L, e->args[1]) : IR_NONE);
        break;
    }
    L->lo[e->id] = v;
    L->neg[e->id] = neg;
}

static bool computed(const expr_t *e)
{
    return e->op != EXPR_CONST && e->op != EXPR_VAR;
}

/* Lowers every computed node below the outputs, children first (an
 * explicit stack: no recursion), and returns the IR of each output. */
static uint32_t *lower_outputs(compiler_t *c, const expr_t *const *outs,
                               size_t nout)
{
    size_t n = expr_graph_count(c->g);
    lowering_t L = {xmalloc(n * sizeof *L.lo), xcalloc(n, 1)};
    uint8_t *state = xcalloc(n, 1);
    typedef struct frame {
        const expr_t *e;
        uint32_t next;
    } frame_t;
    size_t cap = 64;
    frame_t *st = xmalloc(cap * sizeof *st);
    for (size_t k = 0; k < nout; k++) {
        if (!computed(outs[k]) || state[outs[k]->id] != UNSEEN)
            continue;
        size_t top = 0;
        st[top++] = (frame_t){outs[k], 0};
        state[outs[k]->id] = OPEN;
        while (top) {
            frame_t *f = &st[top - 1];
            if (f->next < f->e->nargs) {
                const expr_t *a = f->e->args[f->next++];
                if (computed(a) && state[a->id] == UNSEEN) {
                    if (top == cap) {
                        cap *= 2;
                        st = xrealloc(st, cap * sizeof *st);
                    }
                    st[top++] = (frame_t){a, 0};
                    state[a->id] = OPEN;
                }
                continue;
            }
            lower_node(c, &L, f->e);
            state[f->e->id] = DONE;
            top--;
        }
    }
    uint32_t *out_ir = xmalloc((nout ? nout : 1) * sizeof *out_ir);
    for (size_t k = 0; k < nout; k++)
        out_ir[k] = low_mat(c, &L, outs[k]);
    free(st);
    free(state);
    free(L.lo);
    free(L.neg);
    return out_ir;
}

/* ---- scheduling ------------------------------------------------------- */

static void sched_push(compiler_t *c, uint32_t id)
{
    c->sched[c->nsched++] = id;
    c->ir[id].state = DONE;
}

/* The partner of a SIN or COS node: the other one on the same operand,
 * if it is live; else IR_NONE. */
static uint32_t sincos_partner(const compiler_t *c, uint32_t id)
{
    const ir_node_t *n = &c->ir[id];
    uint32_t sin = function_op(EXPR_SIN), cos = function_op(EXPR_COS);
    if (n->op != sin && n->op != cos)
        return IR_NONE;
    uint32_t want = n->op == sin ? cos : sin;
    size_t mask = c->table_cap - 1;
    for (size_t j = ir_hash(want, n->a, IR_NONE) & mask; c->table[j] != IR_NONE;
         j = (j + 1) & mask) {
        const ir_node_t *p = &c->ir[c->table[j]];
        if (p->op == want && p->a == n->a && p->b == IR_NONE)
            return p->uses > 0 ? c->table[j] : IR_NONE;
    }
    return IR_NONE;
}

/* A SIN and a COS of one operand become neighbours in the schedule (the
 * later one moves up: its operand is computed before the earlier one,
 * and its readers stay after it), so that they make one SINCOS.  The
 * moved value lives longer: a slot for one instruction saved.  The
 * schedule is written anew in one pass, each partner taken where the
 * first of the pair is and skipped where it was (moving it up entry by
 * entry cost the distance, quadratic for a chain of sines whose cosines
 * the derivative reads at the far end). */
static void pair_sincos(compiler_t *c)
{
    unsigned char *taken = xcalloc(c->nir ? c->nir : 1, 1);
    uint32_t *out = xmalloc((c->nsched ? c->nsched : 1) * sizeof *out);
    size_t k = 0;
    for (size_t s = 0; s < c->nsched; s++) {
        uint32_t id = c->sched[s];
        if (taken[id])
            continue; /* moved up to its partner */
        out[k++] = id;
        taken[id] = 1;
        uint32_t p = sincos_partner(c, id);
        if (p == IR_NONE || c->ir[p].state != DONE || taken[p])
            continue;
        out[k++] = p; /* the pair is made */
        taken[p] = 1;
    }
    free(c->sched);
    c->sched = out;
    free(taken);
}

/* Counts the readers of every IR node reachable from the outputs (a
 * walk with an explicit stack), then schedules them in post-order. */
static void schedule(compiler_t *c, const uint32_t *out_ir, size_t nout)
{
    for (size_t i = 0; i < c->nir; i++) {
        c->ir[i].uses = 0;
        c->ir[i].state = UNSEEN;
    }
    size_t cap = 64, top = 0;
    uint32_t *st = xmalloc(cap * sizeof *st);
    /* uses: each reachable node counts its operands once per reference */
    for (size_t k = 0; k < nout; k++) {
        uint32_t r = out_ir[k];
        c->ir[r].uses++;
        if (c->ir[r].state != UNSEEN)
            continue;
        c->ir[r].state = OPEN;
        st[top++] = r;
        while (top) {
            ir_node_t *n = &c->ir[st[--top]];
            if (ir_leaf(n))
                continue;
            uint32_t ops[2] = {n->a, n->b};
            for (int j = 0; j < 2; j++) {
                if (ops[j] == IR_NONE)
                    continue;
                ir_node_t *o = &c->ir[ops[j]];
                o->uses++;
                if (o->state == UNSEEN) {
                    o->state = OPEN;
                    if (top == cap) {
                        cap *= 2;
                        st = xrealloc(st, cap * sizeof *st);
                    }
                    st[top++] = ops[j];
                }
            }
        }
    }
    for (size_t i = 0; i < c->nir; i++)
        c->ir[i].state = UNSEEN;

    /* post-order; a frame is (node, operands visited) */
    c->sched = xmalloc((c->nir ? c->nir : 1) * sizeof *c->sched);
    c->nsched = 0;
    typedef struct frame {
        uint32_t id, next;
    } frame_t;
    size_t fcap = 64;
    frame_t *fs = xmalloc(fcap * sizeof *fs);
    for (size_t k = 0; k < nout; k++) {
        uint32_t r = out_ir[k];
        if (c->ir[r].state != UNSEEN || ir_leaf(&c->ir[r]))
            continue;
        size_t ft = 0;
        fs[ft++] = (frame_t){r, 0};
        c->ir[r].state = OPEN;
        while (ft) {
            frame_t *f = &fs[ft - 1];
            ir_node_t *n = &c->ir[f->id];
            if (f->next < 2) {
                uint32_t o = f->next++ == 0 ? n->a : n->b;
                if (o != IR_NONE && !ir_leaf(&c->ir[o]) &&
                    c->ir[o].state == UNSEEN) {
                    if (ft == fcap) {
                        fcap *= 2;
                        fs = xrealloc(fs, fcap * sizeof *fs);
                    }
                    fs[ft++] = (frame_t){o, 0};
                    c->ir[o].state = OPEN;
                }
                continue;
            }
            uint32_t id = f->id;
            ft--;
            sched_push(c, id);
        }
    }
    free(fs);
    free(st);
    pair_sincos(c);
}

/* ---- fusion and instruction selection ---------------------------------- */

static bool ir_arith(uint32_t op)
{
    return op == IR_ADD || op == IR_SUB || op == IR_MUL;
}

/* The fused opcode (a X b) Y c, or T_COUNT when there is none. */
static tape_op_t fused_left(uint32_t x, uint32_t y)
{
    static const tape_op_t t[3][3] = {
        /* y:   ADD          SUB          MUL */
        {T_L_ADD_ADD, T_L_ADD_SUB, T_L_ADD_MUL}, /* x = ADD */
        {T_L_SUB_ADD, T_L_SUB_SUB, T_L_SUB_MUL}, /* x = SUB */
        {T_L_MUL_ADD, T_L_MUL_SUB, T_L_MUL_MUL}, /* x = MUL */
    };
    if (!ir_arith(x) || !ir_arith(y))
        return T_COUNT;
    if (!TAPE_FUSE_MIXED && x == IR_MUL && y != IR_MUL)
        return T_COUNT;
    return t[x - IR_ADD][y - IR_ADD];
}

/* Whether X (an operand of the node being fused) can be computed inside
 * its reader's instruction: read once, a plain arithmetic operation that
 * absorbed nothing itself. */
static bool fusable(const compiler_t *c, uint32_t x)
{
    const ir_node_t *n = &c->ir[x];
    return ir_arith(n->op) && n->uses == 1 && n->fuse == IR_NONE &&
           !n->absorbed;
}

/* Chooses, in schedule order, the operand each arithmetic node computes
 * inside its own instruction: b*c of a ± b*c first (a sum of products
 * then takes one instruction per term), else its first operand. */
static void fuse(compiler_t *c)
{
    for (size_t s = 0; s < c->nsched; s++) {
        ir_node_t *y = &c->ir[c->sched[s]];
        if (!ir_arith(y->op) || y->a == y->b)
            continue;
        if (TAPE_FUSE_MIXED && y->op != IR_MUL && fusable(c, y->b) &&
            c->ir[y->b].op == IR_MUL) {
            y->fuse = y->b;
            c->ir[y->b].absorbed = true;
        } else if (fusable(c, y->a) &&
                   fused_left(c->ir[y->a].op, y->op) != T_COUNT) {
            y->fuse = y->a;
            c->ir[y->a].absorbed = true;
        }
    }
}

static void emit(compiler_t *c, tape_op_t op, uint32_t id, uint32_t a,
                 uint32_t b, uint32_t x)
{
    if (c->len == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        c->code = xrealloc(c->code, c->cap * sizeof *c->code);
        c->code_ir = xrealloc(c->code_ir, c->cap * sizeof *c->code_ir);
    }
    /* operands hold IR ids until slots are assigned */
    c->code[c->len] = (tape_ins_t){(uint32_t)op, 0, a, b, x};
    c->code_ir[c->len++] = id;
}

static tape_op_t plain_op(const ir_node_t *n)
{
    switch (n->op) {
    case IR_ADD: return T_ADD;
    case IR_SUB: return T_SUB;
    case IR_MUL: return T_MUL;
    case IR_NEG: return T_NEG;
    case IR_SQR: return T_SQR;
    case IR_CUBE: return T_CUBE;
    case IR_RECIP: return T_RECIP;
    case IR_RSQR: return T_RSQR;
    case IR_POWK: return T_POWK;
    case IR_POW: return T_POW;
    case IR_GUARD: return T_GUARD;
    default: break;
    }
    switch ((expr_op_t)(n->op - IR_FUNC + EXPR_SIN)) {
    case EXPR_SIN: return T_SIN;
    case EXPR_COS: return T_COS;
    case EXPR_TAN: return T_TAN;
    case EXPR_ASIN: return T_ASIN;
    case EXPR_ACOS: return T_ACOS;
    case EXPR_ATAN: return T_ATAN;
    case EXPR_ATAN2: return T_ATAN2;
    case EXPR_SINH: return T_SINH;
    case EXPR_COSH: return T_COSH;
    case EXPR_TANH: return T_TANH;
    case EXPR_EXP: return T_EXP;
    case EXPR_LOG: return T_LOG;
    case EXPR_SQRT: return T_SQRT;
    case EXPR_ABS: return T_ABS;
    case EXPR_SIGN: return T_SIGN;
    case EXPR_MIN: return T_MIN;
    case EXPR_MAX: return T_MAX;
    default: abort(); /* not a function op */
    }
}

/* Emits the schedule: one instruction per node that is not computed
 * inside another's, SIN and COS of one operand as one SINCOS. */
static void select_instructions(compiler_t *c)
{
    for (size_t s = 0; s < c->nsched; s++) {
        uint32_t id = c->sched[s];
        const ir_node_t *n = &c->ir[id];
        if (n->absorbed)
            continue;
        if (n->fuse != IR_NONE) {
            const ir_node_t *x = &c->ir[n->fuse];
            if (n->fuse == n->b) /* a Y (b X c) */
                emit(c, n->op == IR_ADD ? T_R_ADD_MUL : T_R_SUB_MUL, id,
                     n->a, x->a, x->b);
            else /* (a X b) Y c */
                emit(c, fused_left(x->op, n->op), id, x->a, x->b, n->b);
            continue;
        }
        if (s + 1 < c->nsched) {
            const ir_node_t *m = &c->ir[c->sched[s + 1]];
            uint32_t sin = function_op(EXPR_SIN), cos = function_op(EXPR_COS);
            if (((n->op == sin && m->op == cos) ||
                 (n->op == cos && m->op == sin)) && m->a == n->a) {
                uint32_t is = n->op == sin ? id : c->sched[s + 1];
                uint32_t ic = n->op == sin ? c->sched[s + 1] : id;
                /* the cos node rides along in field c */
                emit(c, T_SINCOS, is, n->a, IR_NONE, ic);
                s++;
                continue;
            }
        }
        emit(c, plain_op(n), id, n->a, n->b, IR_NONE);
    }
}

/* ---- slots -------------------------------------------------------------- */

typedef struct slots {
    uint32_t *free_slots;
    size_t nfree;
    size_t next; /* slots handed out so far */
} slots_t;

static uint32_t slot_alloc(slots_t *sl)
{
    if (sl->nfree)
        return sl->free_slots[--sl->nfree];
    if (sl->next >= (1u << 24))
        abort(); /* more than 16M work slots */
    return (uint32_t)sl->next++;
}

/* Operand fields of instruction I that hold IR ids. */
static size_t operands(const compiler_t *c, size_t i, uint32_t *ops)
{
    const tape_ins_t *ins = &c->code[i];
    size_t k = 0;
    ops[k++] = ins->a;
    if (ins->op != T_SINCOS) {
        if (ins->b != IR_NONE)
            ops[k++] = ins->b;
        if (ins->c != IR_NONE)
            ops[k++] = ins->c;
    }
    return k;
}

/* Liveness and slot assignment; rewrites the operand fields from IR ids
 * to slots. */
static size_t assign_slots(compiler_t *c, const uint32_t *out_ir,
                           size_t nout)
{
    for (size_t i = 0; i < c->len; i++) {
        uint32_t ops[3];
        size_t k = operands(c, i, ops);
        for (size_t j = 0; j < k; j++)
            c->ir[ops[j]].last = i;
    }
    for (size_t k = 0; k < nout; k++)
        c->ir[out_ir[k]].last = SIZE_MAX; /* outputs live to the end */

    /* constants and inputs are in place before the first instruction */
    slots_t sl = {xmalloc((c->nir + c->nconst + c->nin + 1) *
                          sizeof *sl.free_slots),
                  0, c->nconst + c->nin};
    for (size_t i = 0; i < c->nir; i++)
        if (c->ir[i].op == IR_VAR)
            c->ir[i].slot += (uint32_t)c->nconst;
    for (size_t i = 0; i < c->len; i++) {
        tape_ins_t *ins = &c->code[i];
        uint32_t ops[3];
        size_t k = operands(c, i, ops);
        uint32_t slot_of[3];
        for (size_t j = 0; j < k; j++)
            slot_of[j] = c->ir[ops[j]].slot;
        /* release the operands read here for the last time (once each):
         * the handlers read every operand before writing, so dst may
         * take one of their slots */
        for (size_t j = 0; j < k; j++) {
            ir_node_t *o = &c->ir[ops[j]];
            if (o->last == i) {
                o->last = SIZE_MAX - 1; /* released */
                sl.free_slots[sl.nfree++] = o->slot;
            }
        }
        uint32_t d = slot_alloc(&sl);
        c->ir[c->code_ir[i]].slot = d;
        ins->dst = d;
        if (ins->op == T_SINCOS) {
            uint32_t dc = slot_alloc(&sl);
            c->ir[ins->c].slot = dc;
            ins->a = slot_of[0];
            ins->b = 0;
            ins->c = dc;
            continue;
        }
        ins->a = k > 0 ? slot_of[0] : 0;
        ins->b = ins->b != IR_NONE ? slot_of[1] : 0;
        ins->c = ins->c != IR_NONE ? slot_of[2] : 0;
    }
    free(sl.free_slots);
    return sl.next;
}

/* ---- compile -------------------------------------------------------------- */

tape_t *tape_compile(const expr_graph_t *g, const expr_t *const *outs,
                     size_t nout, size_t nvars)
{
    compiler_t c = {.g = g, .nvars = nvars};
    uint32_t *out_ir = lower_outputs(&c, outs, nout);
    schedule(&c, out_ir, nout);
    fuse(&c);
    select_instructions(&c);
    size_t work = assign_slots(&c, out_ir, nout);
    size_t len = c.len;
    emit(&c, T_END, IR_NONE, 0, 0, 0);

    tape_t *t = xmalloc(sizeof *t);
    t->code = c.code;
    t->len = len;
    t->consts = c.consts;
    t->nconst = c.nconst;
    t->in_var = c.in_var;
    t->nin = c.nin;
    t->work = work;
    t->nout = nout;
    t->outs = xmalloc((nout ? nout : 1) * sizeof *t->outs);
    for (size_t k = 0; k < nout; k++) {
        const ir_node_t *n = &c.ir[out_ir[k]];
        t->outs[k] = n->op == IR_VAR ? TAPE_VAR | n->a : n->slot;
    }
    free(out_ir);
    free(c.ir);
    free(c.table);
    free(c.sched);
    free(c.code_ir);
    return t;
}

void tape_free(tape_t *t)
{
    if (!t)
        return;
    free(t->code);
    free(t->consts);
    free(t->in_var);
    free(t->outs);
    free(t);
}

size_t tape_length(const tape_t *t)
{
    return t->len;
}

size_t tape_work_size(const tape_t *t)
{
    return t->work;
}

size_t tape_nout(const tape_t *t)
{
    return t->nout;
}

const uint32_t *tape_inputs(const tape_t *t, size_t *n)
{
    *n = t->nin;
    return t->in_var;
}

/* ---- evaluation -------------------------------------------------------- */

/* Dispatch by computed goto where the compiler has it, a plain switch
 * elsewhere (or with -DNH_TAPE_SWITCH, which the tests also build).  The
 * tape ends with END, so the loop needs no bound test. */
#if defined(__GNUC__) && !defined(NH_TAPE_SWITCH)
#define VM_BEGIN                                                              \
    goto *jump[ip->op];                                                       \
    {
#define VM_END }
#define VM_CASE(op) L_##op:
#define VM_NEXT()                                                             \
    do {                                                                      \
        ip++;                                                                 \
        goto *jump[ip->op];                                                   \
    } while (0)
#else
#define VM_BEGIN                                                              \
    for (;;)                                                                  \
        switch (ip->op) {
#define VM_END }
#define VM_CASE(op) case op:
#define VM_NEXT()                                                             \
    ip++;                                                                     \
    continue
#endif

void tape_eval(const tape_t *t, const double *vars, double *out,
               double *work)
{
#if defined(__GNUC__) && !defined(NH_TAPE_SWITCH)
    static const void *const jump[] = {
#define TAPE_LABEL(NAME, VALUE, SECOND) &&L_T_##NAME,
        TAPE_OPS(TAPE_LABEL)
#undef TAPE_LABEL
    };
    _Static_assert(sizeof jump / sizeof *jump == T_COUNT,
                   "one label per opcode");
#endif
    if (t->nconst)
        memcpy(work, t->consts, t->nconst * sizeof *work);
    double *in = work + t->nconst;
    for (size_t j = 0; j < t->nin; j++)
        in[j] = vars[t->in_var[j]];
#define A work[ip->a]
#define B work[ip->b]
#define C work[ip->c]
#define W work[ip->dst]
    const tape_ins_t *ip = t->code;
    double a, x[2];
    VM_BEGIN
        VM_CASE(T_ADD) W = A + B;
        VM_NEXT();
        VM_CASE(T_SUB) W = A - B;
        VM_NEXT();
        VM_CASE(T_MUL) W = A * B;
        VM_NEXT();
        VM_CASE(T_NEG) W = -A;
        VM_NEXT();
        /* (a X b) Y c: two roundings, as two instructions would */
        VM_CASE(T_L_ADD_ADD) a = A + B;
        W = a + C;
        VM_NEXT();
        VM_CASE(T_L_ADD_SUB) a = A + B;
        W = a - C;
        VM_NEXT();
        VM_CASE(T_L_SUB_ADD) a = A - B;
        W = a + C;
        VM_NEXT();
        VM_CASE(T_L_SUB_SUB) a = A - B;
        W = a - C;
        VM_NEXT();
        VM_CASE(T_L_MUL_MUL) a = A * B;
        W = a * C;
        VM_NEXT();
        VM_CASE(T_L_MUL_ADD) a = A * B;
        W = a + C;
        VM_NEXT();
        VM_CASE(T_L_MUL_SUB) a = A * B;
        W = a - C;
        VM_NEXT();
        VM_CASE(T_L_ADD_MUL) a = A + B;
        W = a * C;
        VM_NEXT();
        VM_CASE(T_L_SUB_MUL) a = A - B;
        W = a * C;
        VM_NEXT();
        /* a Y (b X c) */
        VM_CASE(T_R_ADD_MUL) a = B * C;
        W = A + a;
        VM_NEXT();
        VM_CASE(T_R_SUB_MUL) a = B * C;
        W = A - a;
        VM_NEXT();
        VM_CASE(T_SQR) a = A;
        W = a * a;
        VM_NEXT();
        VM_CASE(T_CUBE) a = A;
        W = a * a * a;
        VM_NEXT();
        VM_CASE(T_RECIP) W = expr_recip(A);
        VM_NEXT();
        VM_CASE(T_RSQR) W = expr_rsqr(A);
        VM_NEXT();
        VM_CASE(T_POWK) W = expr_pow_ieee(A, B);
        VM_NEXT();
        VM_CASE(T_GUARD) W = expr_guard_apply(A, B);
        VM_NEXT();
        VM_CASE(T_SIN) W = sin(A);
        VM_NEXT();
        VM_CASE(T_COS) W = cos(A);
        VM_NEXT();
        /* GCC turns the pair into one sincos call: the same bits as sin
         * and cos apart (glibc computes them by the same code) */
        VM_CASE(T_SINCOS) a = A;
        W = sin(a);
        C = cos(a);
        VM_NEXT();
        VM_CASE(T_TAN) W = tan(A);
        VM_NEXT();
        VM_CASE(T_ASIN) W = asin(A);
        VM_NEXT();
        VM_CASE(T_ACOS) W = acos(A);
        VM_NEXT();
        VM_CASE(T_ATAN) a = A;
        W = expr_keep_bad(atan(a), a);
        VM_NEXT();
        VM_CASE(T_SINH) W = sinh(A);
        VM_NEXT();
        VM_CASE(T_COSH) W = cosh(A);
        VM_NEXT();
        VM_CASE(T_TANH) a = A;
        W = expr_keep_bad(tanh(a), a);
        VM_NEXT();
        VM_CASE(T_EXP) a = A;
        W = expr_keep_bad(exp(a), a);
        VM_NEXT();
        VM_CASE(T_LOG) W = log(A);
        VM_NEXT();
        VM_CASE(T_SQRT) W = sqrt(A);
        VM_NEXT();
        VM_CASE(T_ABS) W = fabs(A);
        VM_NEXT();
        /* the rarer ops go through expr_apply itself */
        VM_CASE(T_POW) x[0] = A;
        x[1] = B;
        W = expr_apply(EXPR_POW, x, 2);
        VM_NEXT();
        VM_CASE(T_SIGN) x[0] = A;
        W = expr_apply(EXPR_SIGN, x, 1);
        VM_NEXT();
        VM_CASE(T_ATAN2) x[0] = A;
        x[1] = B;
        W = expr_apply(EXPR_ATAN2, x, 2);
        VM_NEXT();
        VM_CASE(T_MIN) x[0] = A;
        x[1] = B;
        W = expr_apply(EXPR_MIN, x, 2);
        VM_NEXT();
        VM_CASE(T_MAX) x[0] = A;
        x[1] = B;
        W = expr_apply(EXPR_MAX, x, 2);
        VM_NEXT();
        VM_CASE(T_END) goto done;
#if !defined(__GNUC__) || defined(NH_TAPE_SWITCH)
    default:
        goto done; /* T_COUNT: never on a tape */
#endif
    VM_END
done:
    for (size_t k = 0; k < t->nout; k++) {
        uint32_t o = t->outs[k];
        out[k] = o & TAPE_VAR ? vars[o & ~TAPE_VAR] : work[o];
    }
#undef A
#undef B
#undef C
#undef W
}

/* ---- forward-mode derivatives ------------------------------------------- */

/* The derivative of one instruction's value in K directions at once:
 * d[j] for j < K, with the operands' values VA, VB, VC and their
 * derivative rows DA, DB, DC (which may alias DW: each direction reads
 * its own entry before writing it).  The rules are diff.c's, one per op
 * (LANGUAGE.md §3.4's functions): a non-differentiable point takes the
 * value diff.c's formula gives there (|a|' = sign(a) a', 0 at a = 0;
 * min and max the mean of the two slopes where a = b). */
static void tape_tangent_ins(const tape_ins_t *ip, double *work,
                             double *dwork, size_t k)
{
    double va = work[ip->a], vb = work[ip->b], vc = work[ip->c];
    const double *da = dwork + (size_t)ip->a * k;
    const double *db = dwork + (size_t)ip->b * k;
    const double *dc = dwork + (size_t)ip->c * k;
    double *dw = dwork + (size_t)ip->dst * k;
    double w, f, x[2];
    switch ((tape_op_t)ip->op) {
    case T_ADD:
        work[ip->dst] = va + vb;
        for (size_t j = 0; j < k; j++)
            dw[j] = da[j] + db[j];
        return;
    case T_SUB:
        work[ip->dst] = va - vb;
        for (size_t j = 0; j < k; j++)
            dw[j] = da[j] - db[j];
        return;
    case T_MUL:
        work[ip->dst] = va * vb;
        for (size_t j = 0; j < k; j++)
            dw[j] = da[j] * vb + va * db[j];
        return;
    case T_NEG:
        work[ip->dst] = -va;
        for (size_t j = 0; j < k; j++)
            dw[j] = -da[j];
        return;
    case T_L_ADD_ADD:
    case T_L_ADD_SUB:
    case T_L_SUB_ADD:
    case T_L_SUB_SUB: {
        double s1 = ip->op == T_L_ADD_ADD || ip->op == T_L_ADD_SUB ? 1 : -1;
        double s2 = ip->op == T_L_ADD_ADD || ip->op == T_L_SUB_ADD ? 1 : -1;
        double a = s1 > 0 ? va + vb : va - vb;
        work[ip->dst] = s2 > 0 ? a + vc : a - vc;
        for (size_t j = 0; j < k; j++)
            dw[j] = da[j] + s1 * db[j] + s2 * dc[j];
        return;
    }
    case T_L_MUL_MUL: {
        double a = va * vb;
        work[ip->dst] = a * vc;
        for (size_t j = 0; j < k; j++)
            dw[j] = (da[j] * vb + va * db[j]) * vc + a * dc[j];
        return;
    }
    case T_L_MUL_ADD:
    case T_L_MUL_SUB: {
        double s = ip->op == T_L_MUL_ADD ? 1 : -1, a = va * vb;
        work[ip->dst] = s > 0 ? a + vc : a - vc;
        for (size_t j = 0; j < k; j++)
            dw[j] = da[j] * vb + va * db[j] + s * dc[j];
        return;
    }
    case T_L_ADD_MUL:
    case T_L_SUB_MUL: {
        double s = ip->op == T_L_ADD_MUL ? 1 : -1;
        double a = s > 0 ? va + vb : va - vb;
        work[ip->dst] = a * vc;
        for (size_t j = 0; j < k; j++)
            dw[j] = (da[j] + s * db[j]) * vc + a * dc[j];
        return;
    }
    case T_R_ADD_MUL:
    case T_R_SUB_MUL: {
        double s = ip->op == T_R_ADD_MUL ? 1 : -1, a = vb * vc;
        work[ip->dst] = s > 0 ? va + a : va - a;
        for (size_t j = 0; j < k; j++)
            dw[j] = da[j] + s * (db[j] * vc + vb * dc[j]);
        return;
    }
    case T_SQR:
        work[ip->dst] = va * va;
        f = 2 * va;
        break;
    case T_CUBE:
        work[ip->dst] = va * va * va;
        f = 3 * va * va;
        break;
    case T_RECIP:
        w = work[ip->dst] = expr_recip(va);
        f = -w * w;
        break;
    case T_RSQR:
        w = work[ip->dst] = expr_rsqr(va);
        f = -2 * w / va;
        break;
    case T_POWK: /* b is a constant */
        work[ip->dst] = expr_pow_ieee(va, vb);
        f = vb * pow(va, vb - 1);
        break;
    case T_POW:
        x[0] = va;
        x[1] = vb;
        w = work[ip->dst] = expr_apply(EXPR_POW, x, 2);
        for (size_t j = 0; j < k; j++) {
            double t = 0;
            if (da[j] != 0)
                t += vb * pow(va, vb - 1) * da[j];
            if (db[j] != 0)
                t += w * log(va) * db[j];
            dw[j] = t;
        }
        return;
    case T_GUARD: /* (v where d)' = v' where d */
        w = work[ip->dst] = expr_guard_apply(va, vb);
        for (size_t j = 0; j < k; j++)
            dw[j] = isnan(w) ? NAN : da[j];
        return;
    case T_SIN:
        work[ip->dst] = sin(va);
        f = cos(va);
        break;
    case T_COS:
        work[ip->dst] = cos(va);
        f = -sin(va);
        break;
    case T_SINCOS: {
        double s = sin(va), c = cos(va);
        double *dcos = dwork + (size_t)ip->c * k;
        work[ip->dst] = s;
        work[ip->c] = c;
        for (size_t j = 0; j < k; j++) {
            double d = da[j];
            dw[j] = c * d;
            dcos[j] = -s * d;
        }
        return;
    }
    case T_TAN:
        w = work[ip->dst] = tan(va);
        f = 1 + w * w;
        break;
    case T_ASIN:
        work[ip->dst] = asin(va);
        f = 1 / sqrt(1 - va * va);
        break;
    case T_ACOS:
        work[ip->dst] = acos(va);
        f = -1 / sqrt(1 - va * va);
        break;
    case T_ATAN:
        work[ip->dst] = expr_keep_bad(atan(va), va);
        f = 1 / (1 + va * va);
        break;
    case T_SINH:
        work[ip->dst] = sinh(va);
        f = cosh(va);
        break;
    case T_COSH:
        work[ip->dst] = cosh(va);
        f = sinh(va);
        break;
    case T_TANH:
        w = work[ip->dst] = expr_keep_bad(tanh(va), va);
        f = 1 - w * w;
        break;
    case T_EXP:
        f = work[ip->dst] = expr_keep_bad(exp(va), va);
        break;
    case T_LOG:
        work[ip->dst] = log(va);
        f = 1 / va;
        break;
    case T_SQRT:
        w = work[ip->dst] = sqrt(va);
        f = 0.5 / w;
        break;
    case T_ABS:
        work[ip->dst] = fabs(va);
        f = va > 0 ? 1 : va < 0 ? -1 : 0;
        break;
    case T_SIGN:
        x[0] = va;
        work[ip->dst] = expr_apply(EXPR_SIGN, x, 1);
        f = 0;
        break;
    case T_ATAN2: { /* (x y' - y x') / (x^2 + y^2), y = a, x = b */
        x[0] = va;
        x[1] = vb;
        work[ip->dst] = expr_apply(EXPR_ATAN2, x, 2);
        double r = va * va + vb * vb;
        for (size_t j = 0; j < k; j++)
            dw[j] = (vb * da[j] - va * db[j]) / r;
        return;
    }
    case T_MIN:
    case T_MAX: {
        x[0] = va;
        x[1] = vb;
        bool min = ip->op == T_MIN;
        work[ip->dst] = expr_apply(min ? EXPR_MIN : EXPR_MAX, x, 2);
        double wa = va == vb ? 0.5 : (va < vb) == min ? 1 : 0;
        for (size_t j = 0; j < k; j++)
            dw[j] = wa * da[j] + (1 - wa) * db[j];
        return;
    }
    default: /* T_END, T_COUNT: never here */
        return;
    }
    /* a direction in which the operand does not move does not move the
     * value, whatever f is there (sqrt at 0, along another variable) */
    for (size_t j = 0; j < k; j++)
        dw[j] = da[j] == 0 ? 0 : f * da[j];
}

void tape_eval_tangent(const tape_t *t, const double *vars,
                       const double *dvars, size_t k, double *out,
                       double *dout, double *work, double *dwork)
{
    if (t->nconst) {
        memcpy(work, t->consts, t->nconst * sizeof *work);
        memset(dwork, 0, t->nconst * k * sizeof *dwork);
    }
    double *in = work + t->nconst, *din = dwork + t->nconst * k;
    for (size_t j = 0; j < t->nin; j++) {
        in[j] = vars[t->in_var[j]];
        memcpy(din + j * k, dvars + (size_t)t->in_var[j] * k,
               k * sizeof *din);
    }
    for (const tape_ins_t *ip = t->code; ip->op != T_END; ip++)
        tape_tangent_ins(ip, work, dwork, k);
    for (size_t o = 0; o < t->nout; o++) {
        uint32_t s = t->outs[o];
        bool var = s & TAPE_VAR;
        uint32_t at = s & ~TAPE_VAR;
        out[o] = var ? vars[at] : work[at];
        memcpy(dout + o * k, (var ? dvars : dwork) + (size_t)at * k,
               k * sizeof *dout);
    }
}

/* ---- C text --------------------------------------------------------------- */

/* The C text of each opcode (TAPE_OPS), its second value, and the
 * helpers (TAPE_HELPERS) by name. */
static const char *const tape_value_text[] = {
#define TAPE_VALUE(NAME, VALUE, SECOND) VALUE,
    TAPE_OPS(TAPE_VALUE)
#undef TAPE_VALUE
};
static const char *const tape_second_text[] = {
#define TAPE_SECOND(NAME, VALUE, SECOND) SECOND,
    TAPE_OPS(TAPE_SECOND)
#undef TAPE_SECOND
};
static const char *const tape_helper_text[] = {
#define TAPE_HELPER_TEXT(NAME, TEXT) TEXT,
    TAPE_HELPERS(TAPE_HELPER_TEXT)
#undef TAPE_HELPER_TEXT
};
static const char *const tape_helper_name[] = {
#define TAPE_HELPER_NAME(NAME, TEXT) NAME,
    TAPE_HELPERS(TAPE_HELPER_NAME)
#undef TAPE_HELPER_NAME
};
enum { TAPE_NHELPERS = sizeof tape_helper_name / sizeof *tape_helper_name };

/* The helpers TEXT calls (bits by index in TAPE_HELPERS). */
static unsigned tape_c_calls(const char *text)
{
    unsigned set = 0;
    for (size_t h = 0; text && h < TAPE_NHELPERS; h++) {
        char call[64];
        snprintf(call, sizeof call, "%s(", tape_helper_name[h]);
        if (strstr(text, call))
            set |= 1u << h;
    }
    return set;
}

void tape_c_literal(double v, char *buf, size_t size)
{
    if (isnan(v)) {
        snprintf(buf, size, "NAN");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, size, v > 0 ? "HUGE_VAL" : "(-HUGE_VAL)");
        return;
    }
    char num[48];
    expr_format_number(v, num, sizeof num);
    /* a double literal: "2" would be an int (1 / 2 is 0) */
    const char *dot = strpbrk(num, ".e") ? "" : ".0";
    snprintf(buf, size, signbit(v) ? "(%s%s)" : "%s%s", num, dot);
}

/* A long tape is written as pieces of at most this many instructions,
 * each a function of its own, called in turn: C compilers spend time
 * superlinear in the size of a function (GCC -O2 took 26 s and 1.4 GB on
 * the 22 000 instructions of the 64-trailer's multipliers as one
 * function; doc/performance.md). */
#define TAPE_C_PIECE 800

/* The helper bit of the NH_NOINLINE macro that keeps the pieces apart. */
#define TAPE_C_PIECES_BIT (1u << TAPE_NHELPERS)
/* The helper bit of the derivatives' vector type and its operations
 * (tape_write_c_tangent). */
#define TAPE_C_VECTOR_BIT (1u << (TAPE_NHELPERS + 1))
/* The most directions the derivative pass of tape_write_c_tangent takes
 * at once (NH_LANES of the C text is at most this): its slots take this
 * many doubles each at the end of the value array. */
#define TAPE_C_MAX_LANES 4

/* What a work slot holds at a point of the tape: a constant, an input,
 * or the value (or the second value, SINCOS's) of an instruction. */
typedef struct tape_c_slot {
    enum { SLOT_CONST, SLOT_INPUT, SLOT_VALUE } kind;
    size_t index; /* the constant, the input, or the value: 2i, 2i + 1 */
} tape_c_slot_t;

/* The state of tape_write_c. */
typedef struct tape_c {
    const tape_t *t;
    const expr_graph_t *g;
    tape_c_slot_t *cur;   /* by slot */
    char (*lit)[48];      /* the constants as C */
    size_t *last_write;   /* by slot: the last instruction writing it */
    size_t *first, *next; /* the outputs of each slot, as lists */
    size_t *last_read;    /* by value: the last instruction reading it */
    size_t *seen;         /* by input and value: the piece + 1 that named
                             it last (an input is read, an older value
                             loaded, once per piece) */
    size_t *ready;        /* by instruction: where its statement goes (the
                             instruction before which it is written) */
    size_t *hoist_first, *hoist_next; /* the calls written before each */
    size_t piece, begin;  /* the piece being written, its first instruction */
    bool pieces;
    const char *const *input; /* by variable: its C text (NULL: v[VAR]) */
    const tape_c_frame_t *frame; /* the caller's frame, or NULL */
    bool used_v, used_o, used_w;
    strbuf_t *decl;       /* where declarations go: before the statement */
} tape_c_t;

/* Whether op OP calls libm: its statement is written as soon as its
 * operands are computed (within its piece), so that fewer values are
 * alive across the call, which saves every register that a call does
 * not preserve.  The order of the arithmetic of each value, and so its
 * bits, is unchanged: only independent statements change places. */
static bool tape_c_call(unsigned op)
{
    switch (op) {
    case T_POWK: case T_POW: case T_SIN: case T_COS: case T_SINCOS:
    case T_TAN: case T_ASIN: case T_ACOS: case T_ATAN: case T_SINH:
    case T_COSH: case T_TANH: case T_EXP: case T_LOG: case T_SQRT:
    case T_ATAN2:
        return true;
    default:
        return false;
    }
}

/* Which operand fields op OP's text reads: bits 1 a, 2 b, 4 c. */
static unsigned tape_c_reads(unsigned op)
{
    unsigned m = 0;
    for (int k = 0; k < 2; k++) {
        const char *p = k ? tape_second_text[op] : tape_value_text[op];
        for (; p && *p; p++)
            if (p[0] == '%' && p[1] >= 'a' && p[1] <= 'c')
                m |= 1u << (p[1] - 'a');
    }
    return m;
}

/* Appends the C operand held by SLOT: a literal, an input (declared at
 * its first read in the piece: the value vector does not change while
 * the tape runs, so this is tape_eval's gather), or a value (loaded from
 * the pieces' array w at its first read in a later piece). */
static void tape_c_operand(tape_c_t *c, uint32_t slot, strbuf_t *b)
{
    const tape_c_slot_t *s = &c->cur[slot];
    size_t mark = c->piece + 1;
    switch (s->kind) {
    case SLOT_CONST:
        strbuf_add(b, c->lit[s->index]);
        return;
    case SLOT_INPUT: {
        uint32_t var = c->t->in_var[s->index];
        if (c->seen[s->index] != mark) {
            c->seen[s->index] = mark;
            if (c->input && c->input[var])
                strbuf_addf(c->decl, "    const double x%u = %s;", var,
                            c->input[var]);
            else
                strbuf_addf(c->decl, "    const double x%u = v[%u];", var, var);
            if (c->g)
                strbuf_addf(c->decl, " /* %s */", expr_var_name(c->g, var));
            strbuf_add(c->decl, "\n");
            c->used_v = true;
        }
        strbuf_addf(b, "x%u", var);
        return;
    }
    case SLOT_VALUE: {
        size_t i = s->index / 2;
        const char *suffix = s->index % 2 ? "c" : "";
        size_t *seen = &c->seen[c->t->nin + s->index];
        if (i < c->begin && *seen != mark) {
            *seen = mark;
            strbuf_addf(c->decl, "    const double w%zu%s = w[%u];\n", i,
                        suffix, slot);
            c->used_w = true;
        }
        strbuf_addf(b, "w%zu%s", i, suffix);
        return;
    }
    }
}

/* Appends TEXT with %a, %b, %c replaced by the operands of INS. */
static void tape_c_expand(tape_c_t *c, const char *text,
                          const tape_ins_t *ins, strbuf_t *b)
{
    for (const char *p = text; *p; p++) {
        if (*p == '%' && (p[1] == 'a' || p[1] == 'b' || p[1] == 'c')) {
            tape_c_operand(c, p[1] == 'a' ? ins->a : p[1] == 'b' ? ins->b
                                                              : ins->c,
                           b);
            p++;
        } else {
            strbuf_addn(b, p, 1);
        }
    }
}

/* Output K is TEXT: "o[K] = TEXT;", or what the frame makes of it. */
static void tape_c_output(tape_c_t *c, size_t k, const char *text,
                          strbuf_t *b)
{
    if (c->frame) {
        c->frame->value(c->frame->ctx, k, text, b);
        return;
    }
    strbuf_addf(b, "    o[%zu] = %s;\n", k, text);
    c->used_o = true;
}

/* "o[k] = NAME;" for the outputs K held in slot S. */
static void tape_c_outputs(tape_c_t *c, uint32_t s, const char *name,
                           strbuf_t *b)
{
    for (size_t k = c->first[s]; k != SIZE_MAX; k = c->next[k])
        tape_c_output(c, k, name, b);
}

/* Liveness: the last write of each slot, the outputs by slot, the last
 * read of each value. */
static void tape_c_liveness(tape_c_t *c)
{
    const tape_t *t = c->t;
    for (size_t s = 0; s <= t->work; s++)
        c->last_write[s] = c->first[s] = SIZE_MAX;
    for (size_t i = 0; i < t->len; i++) {
        c->last_write[t->code[i].dst] = i;
        if (tape_second_text[t->code[i].op])
            c->last_write[t->code[i].c] = i;
    }
    for (size_t k = t->nout; k-- > 0;) {
        uint32_t o = t->outs[k];
        c->next[k] = SIZE_MAX;
        if (!(o & TAPE_VAR) && c->last_write[o] != SIZE_MAX) {
            c->next[k] = c->first[o];
            c->first[o] = k;
        }
    }
    /* which value each slot holds as the tape runs; where each call's
     * statement can go: after its operands, in its piece */
    size_t *holds = xmalloc((t->work + 1) * sizeof *holds);
    for (size_t s = 0; s <= t->work; s++)
        holds[s] = SIZE_MAX;
    for (size_t i = 0; i <= t->len; i++)
        c->hoist_first[i] = c->hoist_next[i] = SIZE_MAX;
    for (size_t i = 0; i < t->len; i++) {
        const tape_ins_t *ins = &t->code[i];
        unsigned reads = tape_c_reads(ins->op);
        uint32_t f[3] = {ins->a, ins->b, ins->c};
        size_t ready = c->pieces ? i / TAPE_C_PIECE * TAPE_C_PIECE : 0;
        for (int k = 0; k < 3; k++)
            if ((reads & (1u << k)) && holds[f[k]] != SIZE_MAX) {
                c->last_read[holds[f[k]]] = i;
                if (holds[f[k]] / 2 + 1 > ready)
                    ready = holds[f[k]] / 2 + 1;
            }
        c->ready[i] = tape_c_call(ins->op) ? ready : i;
        holds[ins->dst] = 2 * i;
        if (tape_second_text[ins->op])
            holds[ins->c] = 2 * i + 1;
    }
    /* the lists of calls by place, in the tape's order */
    for (size_t i = t->len; i-- > 0;)
        if (c->ready[i] != i) {
            c->hoist_next[i] = c->hoist_first[c->ready[i]];
            c->hoist_first[c->ready[i]] = i;
        }
    free(holds);
}

/* Writes the statement of instruction I: its value (and second value)
 * from its operands, which are read before the results are named, as
 * the handlers read every operand before writing; the declarations an
 * operand needs go to B before it. */
static void tape_c_statement(tape_c_t *c, size_t i, strbuf_t *b,
                             strbuf_t *body)
{
    const tape_ins_t *ins = &c->t->code[i];
    body->len = 0;
    strbuf_addf(body, "    const double w%zu = ", i);
    tape_c_expand(c, tape_value_text[ins->op], ins, body);
    strbuf_add(body, ";\n");
    if (tape_second_text[ins->op]) {
        strbuf_addf(body, "    const double w%zuc = ", i);
        tape_c_expand(c, tape_second_text[ins->op], ins, body);
        strbuf_add(body, ";\n");
    }
    strbuf_add(b, body->data);
}

/* Closes the piece that ends before instruction END: the values it made
 * that a later piece reads go into w. */
static void tape_c_end_piece(tape_c_t *c, strbuf_t *b, size_t end)
{
    const tape_t *t = c->t;
    if (c->pieces)
        for (size_t i = c->begin; i < end; i++)
            for (int k = 0; k < (tape_second_text[t->code[i].op] ? 2 : 1);
                 k++) {
                size_t v = 2 * i + (size_t)k;
                if (c->last_read[v] != SIZE_MAX && c->last_read[v] >= end) {
                    strbuf_addf(b, "    w[%u] = w%zu%s;\n",
                                k ? t->code[i].c : t->code[i].dst, i,
                                k ? "c" : "");
                    c->used_w = true;
                }
            }
    if (c->input)
        strbuf_add(b, "    (void)t;\n    (void)y;\n    (void)v;\n");
    else if (!c->used_v)
        strbuf_add(b, "    (void)v;\n");
    if (c->frame)
        c->frame->end(c->frame->ctx, b);
    else if (!c->used_o)
        strbuf_add(b, "    (void)o;\n");
    if (c->pieces && !c->used_w)
        strbuf_add(b, "    (void)w;\n");
    strbuf_add(b, "}\n");
}

/* The parameters of the function: the value vector V and the outputs O,
 * with time T and the state Y before them when inputs are given. */
static const char *tape_c_params(const tape_c_t *c)
{
    return c->input ? "double t, const double *restrict y, const double "
                      "*restrict v,\n        double *restrict o"
                    : "const double *restrict v, double *restrict o";
}

/* Opens piece P (of the instructions from BEGIN). */
static void tape_c_begin_piece(tape_c_t *c, strbuf_t *b, const char *name,
                               size_t p, size_t begin)
{
    c->piece = p;
    c->begin = begin;
    c->used_v = c->used_o = c->used_w = false;
    if (c->frame)
        strbuf_addf(b, "%s\n{\n", c->frame->head);
    else if (c->pieces)
        strbuf_addf(b,
                    "static NH_NOINLINE void %s_%zu(%s,\n"
                    "        double *restrict w)\n{\n",
                    name, p, tape_c_params(c));
    else
        strbuf_addf(b, "static void %s(%s)\n{\n", name, tape_c_params(c));
}

/* Past this many outputs that are constants, tape_write_c writes them
 * from a table: GCC -O2 spent 1.1 s on the 2212 stores of a literal
 * (the zeros of the mass matrix) that ended the 64-trailer's multipliers
 * tape, one statement each.  Fewer are stored one by one, so that the
 * compiler can fold them into the small solves that follow the tape:
 * from a table, the sphere's 17 (multipliers) made its compiled
 * `simulate to 100` 3.2 ms instead of 1.2 ms; the 64-trailer's
 * right-hand side takes 0.4 % more instructions from its table. */
#define TAPE_C_CONST_TABLE 256

/* Whether output K is a constant no instruction writes. */
static bool tape_c_const_output(const tape_c_t *c, size_t k)
{
    uint32_t o = c->t->outs[k];
    return !(o & TAPE_VAR) && c->last_write[o] == SIZE_MAX &&
           c->cur[o].kind == SLOT_CONST;
}

/* The outputs no instruction writes: constants, inputs, variables. */
static void tape_c_known_outputs(tape_c_t *c, strbuf_t *b, strbuf_t *body)
{
    const tape_t *t = c->t;
    size_t nk = 0;
    for (size_t k = 0; !c->frame && k < t->nout; k++)
        nk += tape_c_const_output(c, k);
    bool table = nk > TAPE_C_CONST_TABLE;
    for (size_t k = 0; k < t->nout; k++) {
        uint32_t o = t->outs[k];
        if (!(o & TAPE_VAR) && c->last_write[o] != SIZE_MAX)
            continue;
        if (table && tape_c_const_output(c, k))
            continue;
        body->len = 0;
        body->data[0] = '\0';
        if (o & TAPE_VAR) {
            uint32_t var = o & ~TAPE_VAR;
            if (c->input && c->input[var])
                strbuf_add(body, c->input[var]);
            else
                strbuf_addf(body, "v[%u]", var);
            c->used_v = true;
        } else {
            tape_c_operand(c, o, body);
        }
        char *text = xstrdup(body->data);
        tape_c_output(c, k, text, b);
        free(text);
    }
    if (!table)
        return;
    for (int pass = 0; pass < 2; pass++) {
        strbuf_add(b, pass ? "        static const double kv[] = {"
                           : "    {\n        static const unsigned ko[] = {");
        size_t n = 0;
        for (size_t k = 0; k < t->nout; k++) {
            if (!tape_c_const_output(c, k))
                continue;
            strbuf_add(b, n ? n % 8 ? ", " : ",\n            " : "");
            if (pass)
                strbuf_add(b, c->lit[c->cur[t->outs[k]].index]);
            else
                strbuf_addf(b, "%zu", k);
            n++;
        }
        strbuf_add(b, "};\n");
    }
    strbuf_addf(b, "        unsigned i;\n"
                   "        for (i = 0; i < %zu; i++)\n"
                   "            o[ko[i]] = kv[i];\n"
                   "    }\n",
                nk);
    c->used_o = true;
}

static void tape_c_write(const tape_t *t, strbuf_t *b, const char *name,
                         const tape_c_frame_t *frame, const expr_graph_t *g,
                         const char *const *input, unsigned *helpers)
{
    tape_c_t c = {.t = t, .g = g, .pieces = t->len > TAPE_C_PIECE,
                  .input = input, .frame = frame};
    c.cur = xcalloc(t->work + 1, sizeof *c.cur);
    c.lit = xcalloc(t->nconst + 1, sizeof *c.lit);
    c.last_write = xmalloc((t->work + 1) * sizeof *c.last_write);
    c.first = xmalloc((t->work + 1) * sizeof *c.first);
    c.next = xmalloc((t->nout + 1) * sizeof *c.next);
    c.last_read = xmalloc((2 * t->len + 1) * sizeof *c.last_read);
    for (size_t v = 0; v <= 2 * t->len; v++)
        c.last_read[v] = SIZE_MAX;
    c.seen = xcalloc(t->nin + 2 * t->len + 1, sizeof *c.seen);
    c.ready = xmalloc((t->len + 1) * sizeof *c.ready);
    c.hoist_first = xmalloc((t->len + 1) * sizeof *c.hoist_first);
    c.hoist_next = xmalloc((t->len + 1) * sizeof *c.hoist_next);
    tape_c_liveness(&c);
    for (size_t k = 0; k < t->nconst; k++) {
        tape_c_literal(t->consts[k], c.lit[k], sizeof c.lit[k]);
        c.cur[k] = (tape_c_slot_t){SLOT_CONST, k};
    }
    for (size_t j = 0; j < t->nin; j++)
        c.cur[t->nconst + j] = (tape_c_slot_t){SLOT_INPUT, j};
    if (c.pieces)
        *helpers |= TAPE_C_PIECES_BIT;
    unsigned op_calls[T_COUNT];
    for (unsigned op = 0; op < T_COUNT; op++)
        op_calls[op] = tape_c_calls(tape_value_text[op]) |
                       tape_c_calls(tape_second_text[op]);

    strbuf_t body;
    strbuf_init(&body);
    strbuf_add(&body, ""); /* allocated: reset by writing a NUL */
    c.decl = b;
    size_t npieces = 0;
    tape_c_begin_piece(&c, b, name, npieces++, 0);
    if (frame) /* first: what the frame does with them need not wait */
        tape_c_known_outputs(&c, b, &body);
    for (size_t i = 0; i < t->len; i++) {
        if (c.pieces && i > 0 && i % TAPE_C_PIECE == 0) {
            tape_c_end_piece(&c, b, i);
            tape_c_begin_piece(&c, b, name, npieces++, i);
        }
        const tape_ins_t *ins = &t->code[i];
        *helpers |= op_calls[ins->op];
        /* the calls that are ready here, then this instruction unless it
         * was one of them */
        for (size_t h = c.hoist_first[i]; h != SIZE_MAX; h = c.hoist_next[h])
            tape_c_statement(&c, h, b, &body);
        if (c.ready[i] == i)
            tape_c_statement(&c, i, b, &body);
        /* its value takes its slot here, in the tape's order; an output
         * is written where it is computed (the last write of its slot,
         * which is never reused): a value kept for the end of a long
         * function would be alive all along it */
        body.len = 0;
        body.data[0] = '\0';
        char vname[32];
        if (tape_second_text[ins->op]) {
            c.cur[ins->c] = (tape_c_slot_t){SLOT_VALUE, 2 * i + 1};
            snprintf(vname, sizeof vname, "w%zuc", i);
            if (c.last_write[ins->c] == i)
                tape_c_outputs(&c, ins->c, vname, &body);
        }
        c.cur[ins->dst] = (tape_c_slot_t){SLOT_VALUE, 2 * i};
        snprintf(vname, sizeof vname, "w%zu", i);
        if (c.last_write[ins->dst] == i)
            tape_c_outputs(&c, ins->dst, vname, &body);
        strbuf_add(b, body.data);
    }
    if (!frame)
        tape_c_known_outputs(&c, b, &body);
    tape_c_end_piece(&c, b, t->len);
    if (c.pieces) {
        strbuf_addf(b,
                    "static void %s(%s)\n"
                    "{\n"
                    "    double w[%zu];\n",
                    name, tape_c_params(&c), t->work ? t->work : 1);
        for (size_t p = 0; p < npieces; p++)
            strbuf_addf(b, "    %s_%zu(%s, o, w);\n", name, p,
                        input ? "t, y, v" : "v");
        strbuf_add(b, "}\n");
    }
    strbuf_free(&body);
    free(c.cur);
    free(c.lit);
    free(c.last_write);
    free(c.first);
    free(c.next);
    free(c.last_read);
    free(c.seen);
    free(c.ready);
    free(c.hoist_first);
    free(c.hoist_next);
}

void tape_write_c(const tape_t *t, strbuf_t *b, const char *name,
                  const expr_graph_t *g, const char *const *input,
                  unsigned *helpers)
{
    tape_c_write(t, b, name, NULL, g, input, helpers);
}

bool tape_write_c_fits(const tape_t *t)
{
    return t->len <= TAPE_C_PIECE;
}

void tape_write_c_frame(const tape_t *t, strbuf_t *b, const tape_c_frame_t *f,
                        const expr_graph_t *g, const char *const *input,
                        unsigned *helpers)
{
    if (!input || !tape_write_c_fits(t))
        abort(); /* the caller's to check: a bug */
    tape_c_write(t, b, NULL, f, g, input, helpers);
}

/* ---- forward-mode derivatives as C text ------------------------------- */

/* tape_write_c_tangent writes a value pass and a derivative pass.  The
 * value pass computes every instruction's value once, as tape_eval does,
 * into its own entry of the array V (after the constants and the inputs:
 * two per instruction, the second SINCOS's cosine), with the numbers its
 * derivative rule needs for every direction (two more per instruction:
 * f of the rule d = f·da, a product, ...).  The derivative pass runs the
 * rules of tape_tangent_ins on NH_LANES directions at once, as GCC's
 * vectors (tape_c_vector_text: four doubles with AVX2, two with SSE2,
 * one direction at a time elsewhere), on the tape's slots (a slot reused
 * by the instruction that reads it last is read before it is written),
 * the slots of the directions in hand at the end of V, their input
 * derivatives gathered after the slots first: the caller loops over the
 * groups of directions, so every entry a piece reads is at a constant
 * place and a piece holds no loop.  Each lane does exactly the scalar
 * operations, so the numbers are the tapes' bit for bit.  On the
 * bicycle's multipliers (1260 instructions, 6 directions, at -O2 then)
 * the tangent took 6.3 µs direction by direction, 4.3 µs two at a time
 * (SSE2) and 3.0 µs four at a time (AVX2); four at a time in SSE2 (two
 * registers a value) took 8.2 µs, the values no longer fitting in
 * registers (doc/performance.md has the figures at -O1).  Both passes
 * are straight-line code, which compilers handle fast.  Measured with
 * GCC 12 on the bicycle's multipliers (user seconds of the derivative
 * pieces alone, one direction at a time): a loop over the directions per
 * instruction, 14 s; entries at slot·k + j, 4.7 s; the directions' loop
 * inside each piece, 1.5 s at -O2 (GCC's register allocator and loop
 * passes over a loop body of 800 statements); the loop in the caller,
 * 0.86 s (doc/performance.md). */
/* The pieces of the derivatives are shorter: their values are in V, so
 * a piece boundary costs no loads and stores of values, and GCC's time
 * fell with their size (the bicycle's derivatives, -O1: pieces of 800
 * instructions 1.14 s, 400 0.90 s, 200 0.72 s, 100 0.64 s; the
 * 64-trailer's 11.8 s against 6.2 s with 100; doc/performance.md). */
#define TAPE_C_TAN_PIECE 100

typedef struct tape_c_tan {
    const tape_t *t;
    size_t *holds;       /* by slot: the entry of V it holds now */
    size_t vbase, abase; /* the instructions' values, their numbers */
    size_t dbase;        /* the directions' input derivatives: in the
                            slots' array, after the work slots */
    size_t begin;        /* the first instruction of the piece */
    size_t *vseen, *dseen; /* by entry: the piece + 1 that named it */
    size_t piece;
    bool in_der;         /* expanding for the derivative pass: values are
                            read from V there */
    strbuf_t *val, *der; /* the statements of the two passes */
} tape_c_tan_t;

/* The instruction that made entry E of V, or SIZE_MAX for a constant or
 * an input. */
static size_t tape_c_tan_maker(const tape_c_tan_t *c, size_t e)
{
    return e < c->vbase ? SIZE_MAX : (e - c->vbase) / 2;
}

/* Appends the value of entry E as the value pass names it: "vE", loaded
 * from V at its first use in the piece when an earlier piece (or the
 * caller: constants and inputs) made it. */
static void tape_c_tan_value(tape_c_tan_t *c, size_t e, strbuf_t *b)
{
    if (c->in_der) {
        strbuf_addf(b, "V[%zu]", e);
        return;
    }
    size_t m = tape_c_tan_maker(c, e);
    if ((m == SIZE_MAX || m < c->begin) && c->vseen[e] != c->piece + 1) {
        c->vseen[e] = c->piece + 1;
        strbuf_addf(c->val, "    const double v%zu = V[%zu];\n", e, e);
    }
    strbuf_addf(b, "v%zu", e);
}

/* Appends the derivative (directions j …) of the value slot S holds: 0
 * for a constant, "dE" otherwise, loaded at its first use in the piece
 * from dv (an input) or from the slots (an earlier piece's). */
static void tape_c_tan_deriv(tape_c_tan_t *c, uint32_t s, strbuf_t *b)
{
    size_t e = c->holds[s], m = tape_c_tan_maker(c, e);
    if (e < c->t->nconst) {
        strbuf_add(b, "NH_VZERO");
        return;
    }
    if ((m == SIZE_MAX || m < c->begin) && c->dseen[e] != c->piece + 1) {
        c->dseen[e] = c->piece + 1;
        if (m == SIZE_MAX)
            strbuf_addf(c->der, "    const nh_vd d%zu = d[%zu];\n", e,
                        c->dbase + (e - c->t->nconst));
        else
            strbuf_addf(c->der, "    const nh_vd d%zu = d[%u];\n", e, s);
    }
    strbuf_addf(b, "d%zu", e);
}

/* Appends TEXT to B with %a, %b, %c as the operands' values, %x and %y
 * as the instruction's value and cosine, %f and %g as its two numbers,
 * %A, %B, %C as the operands' derivatives, %D and %E as the declarations
 * of its own two (direction j). */
static void tape_c_tan_expand(tape_c_tan_t *c, size_t i, const char *text,
                              strbuf_t *b)
{
    const tape_ins_t *ip = &c->t->code[i];
    for (const char *p = text; *p; p++) {
        if (*p != '%') {
            strbuf_addn(b, p, 1);
            continue;
        }
        switch (*++p) {
        case 'a': tape_c_tan_value(c, c->holds[ip->a], b); break;
        case 'b': tape_c_tan_value(c, c->holds[ip->b], b); break;
        case 'c': tape_c_tan_value(c, c->holds[ip->c], b); break;
        case 'x': strbuf_addf(b, c->in_der ? "V[%zu]" : "v%zu",
                              c->vbase + 2 * i); break;
        case 'y': strbuf_addf(b, c->in_der ? "V[%zu]" : "v%zu",
                              c->vbase + 2 * i + 1); break;
        case 'f': strbuf_addf(b, "V[%zu]", c->abase + 2 * i); break;
        case 'g': strbuf_addf(b, "V[%zu]", c->abase + 2 * i + 1); break;
        case 'A': tape_c_tan_deriv(c, ip->a, b); break;
        case 'B': tape_c_tan_deriv(c, ip->b, b); break;
        case 'C': tape_c_tan_deriv(c, ip->c, b); break;
        case 'D': strbuf_addf(b, "const nh_vd d%zu", c->vbase + 2 * i); break;
        case 'E': strbuf_addf(b, "const nh_vd d%zu", c->vbase + 2 * i + 1);
            break;
        default: strbuf_addn(b, p - 1, 2); break;
        }
    }
}

/* Appends to the value pass "const double vE = TEXT; V[E] = vE;" (TEXT
 * expanded for instruction I), its operands' loads before it. */
static void tape_c_tan_define(tape_c_tan_t *c, size_t i, size_t e,
                              const char *text)
{
    strbuf_t rhs;
    strbuf_init(&rhs);
    strbuf_add(&rhs, "");
    tape_c_tan_expand(c, i, text, &rhs);
    strbuf_addf(c->val, "    const double v%zu = %s;\n    V[%zu] = v%zu;\n",
                e, rhs.data, e, e);
    strbuf_free(&rhs);
}

/* Instruction I's statements in both passes: its value by
 * tape_value_text, then tape_tangent_ins's rule for its op, expression
 * for expression (a change to one is a change to the other; test_cgen
 * compares the two bit for bit). */
static void tape_c_tan_ins(tape_c_tan_t *c, size_t i)
{
    const tape_ins_t *ip = &c->t->code[i];
    const char *f = NULL, *g = NULL, *rule = NULL;
    switch ((tape_op_t)ip->op) {
    case T_ADD: rule = "%D = %A + %B"; break;
    case T_SUB: rule = "%D = %A - %B"; break;
    case T_MUL: rule = "%D = %A * %b + %a * %B"; break;
    case T_NEG: rule = "%D = -%A"; break;
    /* da + s1·db + s2·dc with s = ±1: exactly da ± db ± dc */
    case T_L_ADD_ADD: rule = "%D = %A + %B + %C"; break;
    case T_L_ADD_SUB: rule = "%D = %A + %B - %C"; break;
    case T_L_SUB_ADD: rule = "%D = %A - %B + %C"; break;
    case T_L_SUB_SUB: rule = "%D = %A - %B - %C"; break;
    case T_L_MUL_MUL:
        f = "%a * %b";
        rule = "%D = (%A * %b + %a * %B) * %c + %f * %C";
        break;
    case T_L_MUL_ADD: rule = "%D = %A * %b + %a * %B + %C"; break;
    case T_L_MUL_SUB: rule = "%D = %A * %b + %a * %B - %C"; break;
    case T_L_ADD_MUL:
        f = "%a + %b";
        rule = "%D = (%A + %B) * %c + %f * %C";
        break;
    case T_L_SUB_MUL:
        f = "%a - %b";
        rule = "%D = (%A - %B) * %c + %f * %C";
        break;
    case T_R_ADD_MUL: rule = "%D = %A + (%B * %c + %b * %C)"; break;
    case T_R_SUB_MUL: rule = "%D = %A - (%B * %c + %b * %C)"; break;
    case T_SQR: f = "2 * %a"; break;
    case T_CUBE: f = "3 * %a * %a"; break;
    case T_RECIP: f = "-%x * %x"; break;
    case T_RSQR: f = "-2 * %x / %a"; break;
    case T_POWK: f = "%b * pow(%a, %b - 1)"; break;
    case T_POW:
        /* t = 0; t += f·da where da ≠ 0; t += g·db where db ≠ 0, lane
         * by lane (nh_dpow) */
        f = "%b * pow(%a, %b - 1)";
        g = "%x * log(%a)";
        rule = "%D = nh_dpow(%A, %B, %f, %g)";
        break;
    case T_GUARD: rule = "%D = isnan(%x) ? NH_VNAN : %A"; break;
    case T_SIN: f = "cos(%a)"; break;
    case T_COS: f = "-sin(%a)"; break;
    case T_SINCOS: rule = "%D = %y * %A;\n    %E = -%x * %A"; break;
    case T_TAN: f = "1 + %x * %x"; break;
    case T_ASIN: f = "1 / sqrt(1 - %a * %a)"; break;
    case T_ACOS: f = "-1 / sqrt(1 - %a * %a)"; break;
    case T_ATAN: f = "1 / (1 + %a * %a)"; break;
    case T_SINH: f = "cosh(%a)"; break;
    case T_COSH: f = "sinh(%a)"; break;
    case T_TANH: f = "1 - %x * %x"; break;
    case T_EXP: f = "%x"; break;
    case T_LOG: f = "1 / %a"; break;
    case T_SQRT: f = "0.5 / %x"; break;
    case T_ABS: f = "%a > 0 ? 1 : %a < 0 ? -1 : 0"; break;
    case T_SIGN: f = "0"; break;
    case T_ATAN2:
        f = "%a * %a + %b * %b";
        rule = "%D = (%b * %A - %a * %B) / %f";
        break;
    case T_MIN:
        f = "%a == %b ? 0.5 : (%a < %b) == 1 ? 1 : 0";
        rule = "%D = %f * %A + (1 - %f) * %B";
        break;
    case T_MAX:
        f = "%a == %b ? 0.5 : (%a < %b) == 0 ? 1 : 0";
        rule = "%D = %f * %A + (1 - %f) * %B";
        break;
    default: /* T_END, T_COUNT: never here */
        break;
    }
    /* the value (and the cosine), and the numbers every direction
     * shares */
    tape_c_tan_define(c, i, c->vbase + 2 * i, tape_value_text[ip->op]);
    if (tape_second_text[ip->op])
        tape_c_tan_define(c, i, c->vbase + 2 * i + 1,
                          tape_second_text[ip->op]);
    if (f)
        tape_c_tan_define(c, i, c->abase + 2 * i, f);
    if (g)
        tape_c_tan_define(c, i, c->abase + 2 * i + 1, g);
    /* the derivative: a direction in which the operand does not move
     * does not move the value, whatever f is there */
    strbuf_t line;
    strbuf_init(&line);
    strbuf_add(&line, "    ");
    c->in_der = true;
    tape_c_tan_expand(c, i, rule ? rule : "%D = NH_NZ(%A, %f * %A)",
                      &line);
    c->in_der = false;
    strbuf_add(&line, ";\n");
    strbuf_add(c->der, line.data);
    strbuf_free(&line);
    /* its values take their slots */
    c->holds[ip->dst] = c->vbase + 2 * i;
    if (tape_second_text[ip->op])
        c->holds[ip->c] = c->vbase + 2 * i + 1;
}

/* The table "static const TYPE NAME[] = {...};" of COUNT ints. */
static void tape_c_table(strbuf_t *b, const char *type, const char *name,
                         const long *x, size_t count)
{
    strbuf_addf(b, "    static const %s %s[] = {", type, name);
    for (size_t i = 0; i < count; i++)
        strbuf_addf(b, "%s%ld", i ? i % 10 ? ", " : ",\n        " : "", x[i]);
    strbuf_add(b, "};\n");
}

void tape_write_c_tangent(const tape_t *t, strbuf_t *b, const char *name,
                          unsigned *helpers)
{
    strbuf_t val, der;
    strbuf_init(&val);
    strbuf_init(&der);
    tape_c_tan_t c = {.t = t, .val = &val, .der = &der,
                      .vbase = t->nconst + t->nin};
    c.abase = c.vbase + 2 * t->len;
    c.dbase = t->work;
    size_t nv = c.abase + 2 * t->len;
    c.holds = xcalloc(t->work + 1, sizeof *c.holds);
    c.vseen = xcalloc(nv + 1, sizeof *c.vseen);
    c.dseen = xcalloc(nv + 1, sizeof *c.dseen);
    for (size_t s = 0; s < t->nconst + t->nin && s < t->work; s++)
        c.holds[s] = s;
    size_t npieces = (t->len + TAPE_C_TAN_PIECE - 1) / TAPE_C_TAN_PIECE;
    const char *noinline = npieces > 1 ? "NH_NOINLINE " : "";
    if (npieces > 1)
        *helpers |= TAPE_C_PIECES_BIT;
    *helpers |= TAPE_C_VECTOR_BIT;
    for (size_t p = 0; p < npieces; p++) {
        val.len = der.len = 0;
        strbuf_add(&val, "");
        strbuf_add(&der, "");
        c.piece = p;
        c.begin = p * TAPE_C_TAN_PIECE;
        size_t end = c.begin + TAPE_C_TAN_PIECE < t->len
                         ? c.begin + TAPE_C_TAN_PIECE
                         : t->len;
        for (size_t i = c.begin; i < end; i++) {
            *helpers |= tape_c_calls(tape_value_text[t->code[i].op]) |
                        tape_c_calls(tape_second_text[t->code[i].op]);
            tape_c_tan_ins(&c, i);
        }
        /* the derivatives a later piece, or the outputs, read; the
         * others said to be used (a value read by no rule) */
        for (size_t s = 0; s < t->work; s++) {
            size_t m = tape_c_tan_maker(&c, c.holds[s]);
            if (m != SIZE_MAX && m >= c.begin && m < end)
                strbuf_addf(&der, "    d[%zu] = d%zu;\n", s, c.holds[s]);
        }
        for (size_t i = c.begin; i < end; i++) {
            strbuf_addf(&der, "    (void)d%zu;\n", c.vbase + 2 * i);
            if (tape_second_text[t->code[i].op])
                strbuf_addf(&der, "    (void)d%zu;\n", c.vbase + 2 * i + 1);
        }
        strbuf_addf(b, "static %svoid %s_v%zu(double *restrict V)\n{\n%s}\n\n",
                    noinline, name, p, val.data);
        /* directions j … j + NH_LANES − 1 (those below k) */
        strbuf_addf(b,
                    "static %svoid %s_d%zu(const double *restrict V, "
                    "nh_vd *restrict d)\n"
                    "{\n%s"
                    "    (void)V;\n"
                    "}\n\n",
                    noinline, name, p, der.data);
    }
    /* the constants and inputs in, the value pass; per group of NH_LANES
     * directions (their slots after the values) its input derivatives
     * in, the derivative pass, the outputs' derivatives out (from a
     * slot, 0, or a variable's own); the outputs (from V, or a
     * variable) */
    strbuf_addf(b,
                "static void %s(const double *restrict v, const double "
                "*restrict dv, long k,\n"
                "        double *restrict o, double *restrict dout, double "
                "*restrict V,\n"
                "        double *restrict dw)\n{\n"
                "    long i, j;\n"
                "    nh_vd *restrict d = (nh_vd *)(V + %zu);\n",
                name, nv);
    if (t->nconst) {
        strbuf_add(b, "    static const double c[] = {");
        for (size_t i = 0; i < t->nconst; i++) {
            char lit[48];
            tape_c_literal(t->consts[i], lit, sizeof lit);
            strbuf_addf(b, "%s%s", i ? i % 4 ? ", " : ",\n        " : "", lit);
        }
        strbuf_add(b, "};\n");
    }
    size_t nt = t->nin > t->nout ? t->nin : t->nout;
    long *x = xcalloc(nt + 1, sizeof *x);
    if (t->nin) {
        for (size_t i = 0; i < t->nin; i++)
            x[i] = t->in_var[i];
        tape_c_table(b, "unsigned", "in", x, t->nin);
    }
    if (t->nout) {
        /* the value: V's entry (>= 0) or variable -1 - x */
        for (size_t o = 0; o < t->nout; o++) {
            uint32_t s = t->outs[o];
            x[o] = s & TAPE_VAR ? -1 - (long)(s & ~TAPE_VAR)
                                : (long)c.holds[s];
        }
        tape_c_table(b, "int", "os", x, t->nout);
        /* the derivative: a slot (>= 0), 0 (-1), variable -2 - x's */
        for (size_t o = 0; o < t->nout; o++) {
            uint32_t s = t->outs[o];
            size_t e = s & TAPE_VAR ? 0 : c.holds[s];
            if (s & TAPE_VAR)
                x[o] = -2 - (long)(s & ~TAPE_VAR);
            else if (e < t->nconst)
                x[o] = -1;
            else if (e < c.vbase)
                x[o] = -2 - (long)t->in_var[e - t->nconst];
            else
                x[o] = (long)s;
        }
        tape_c_table(b, "int", "od", x, t->nout);
    }
    free(x);
    if (t->nconst)
        strbuf_addf(b, "    for (i = 0; i < %zu; i++)\n"
                       "        V[i] = c[i];\n",
                    t->nconst);
    if (t->nin)
        strbuf_addf(b, "    for (i = 0; i < %zu; i++)\n"
                       "        V[%zu + i] = v[in[i]];\n",
                    t->nin, t->nconst);
    for (size_t p = 0; p < npieces; p++)
        strbuf_addf(b, "    %s_v%zu(V);\n", name, p);
    strbuf_add(b, "    for (j = 0; j < k; j += NH_LANES) {\n");
    if (t->nin)
        strbuf_addf(b, "        for (i = 0; i < %zu; i++)\n"
                       "            d[%zu + i] = nh_vload(dv + in[i] * k + j, "
                       "k - j);\n",
                    t->nin, c.dbase);
    for (size_t p = 0; p < npieces; p++)
        strbuf_addf(b, "        %s_d%zu(V, d);\n", name, p);
    if (t->nout)
        strbuf_addf(b,
                    "        for (i = 0; i < %zu; i++)\n"
                    "            nh_vstore(dout + i * k + j,\n"
                    "                      od[i] >= 0 ? d[od[i]]\n"
                    "                      : od[i] == -1 ? NH_VZERO\n"
                    "                      : nh_vload(dv + (-2 - od[i]) * k "
                    "+ j, k - j),\n"
                    "                      k - j);\n",
                    t->nout);
    strbuf_add(b, "    }\n    NH_VEND();\n");
    if (t->nout)
        strbuf_addf(b, "    for (i = 0; i < %zu; i++)\n"
                       "        o[i] = os[i] >= 0 ? V[os[i]] : v[-1 - os[i]];\n",
                    t->nout);
    strbuf_add(b, "    (void)v;\n    (void)dv;\n    (void)o;\n    (void)dout;\n"
                  "    (void)V;\n    (void)dw;\n    (void)d;\n    (void)i;\n}\n");
    strbuf_free(&val);
    strbuf_free(&der);
    free(c.holds);
    free(c.vseen);
    free(c.dseen);
}

size_t tape_c_tangent_values(const tape_t *t)
{
    /* the values, then the slots of the directions in hand and their
     * input derivatives */
    return t->nconst + t->nin + 4 * t->len +
           TAPE_C_MAX_LANES * (t->work + t->nin);
}

/* The prelude of the derivatives' C text (TAPE_C_VECTOR_BIT): NH_LANES
 * directions at once as GCC's vectors — four where the compiler targets
 * AVX2 (nh's compile cache asks for it on a machine that has it,
 * native.c), else two (SSE2, on every x86-64) — or one direction with
 * another compiler, on another processor, or with NH_NO_VECTORS defined
 * (test_tape's third build).  Each lane is the scalar arithmetic, bit for
 * bit.  NH_NZ(a, x) is x where a is not 0, else +0: the compare of
 * SSE2 or AVX (unordered or not equal, 4: a NaN is not 0), as the
 * compilers' builtin that their own <emmintrin.h> and <immintrin.h> call
 * (so the file still includes <math.h> alone, §8.1), and an and.  Written
 * with GCC's vector compare (a == 0), GCC 12 made the mask a select that
 * it then failed to compile (an internal compiler error in
 * gimple_expand_vec_cond_expr on some of test_tape's random tapes);
 * nh_dpow, the rule of a^b, lane by lane, is out of line for the same
 * reason.  nh_vload and nh_vstore move the N < NH_LANES directions of a
 * last group alone, always inline: -O1 inlines no function called more
 * than once, and as calls they took a sixth of the compiled tangent's
 * instructions in lyapunov on the bicycle.  NH_VEND() clears the upper halves of the AVX
 * registers when the derivative pass is done (vzeroupper): GCC inserts
 * it only from -O2 on (-fexpensive-optimizations), and at -O1, as the
 * derivatives are compiled, the dirty registers made every SSE
 * instruction after them slow — the compiled equations' (-O2, without
 * -mavx2), GSL's: `simulate to 100` of the bicycle after a `linearize`
 * took 36 ms instead of 15 (doc/performance.md). */
static const char tape_c_vector_text[] =
    "/* The derivatives of NH_LANES directions at once: GCC's vectors (each "
    "lane\n"
    " * the scalar arithmetic, bit for bit), or one direction (another "
    "compiler,\n"
    " * or NH_NO_VECTORS defined).  NH_NZ(a, x) is x where a is not 0, else "
    "+0;\n"
    " * nh_dpow the rule of a^b; NH_VEND() leaves the AVX registers' "
    "upper\n"
    " * halves clear for the SSE code after it (vzeroupper). */\n"
    "#if defined(__GNUC__) && !defined(NH_NO_VECTORS) && defined(__AVX2__)\n"
    "#define NH_LANES 4\n"
    "typedef double nh_vd __attribute__((vector_size(32), aligned(8)));\n"
    "typedef long long nh_vl __attribute__((vector_size(32), aligned(8)));\n"
    "#define NH_VZERO ((nh_vd){0.0, 0.0, 0.0, 0.0})\n"
    "#define NH_VNAN ((nh_vd){NAN, NAN, NAN, NAN})\n"
    "#define NH_VEND() __builtin_ia32_vzeroupper()\n"
    "#define NH_NZ(a, x) \\\n"
    "    ((nh_vd)((nh_vl)__builtin_ia32_cmppd256((a), NH_VZERO, 4) & (nh_vl)(x)))\n"
    "#elif defined(__GNUC__) && !defined(NH_NO_VECTORS) && defined(__SSE2__)\n"
    "#define NH_LANES 2\n"
    "typedef double nh_vd __attribute__((vector_size(16), aligned(8)));\n"
    "typedef long long nh_vl __attribute__((vector_size(16), aligned(8)));\n"
    "#define NH_VZERO ((nh_vd){0.0, 0.0})\n"
    "#define NH_VNAN ((nh_vd){NAN, NAN})\n"
    "#define NH_VEND() ((void)0)\n"
    "#define NH_NZ(a, x) \\\n"
    "    ((nh_vd)((nh_vl)__builtin_ia32_cmpneqpd((a), NH_VZERO) & (nh_vl)(x)))\n"
    "#endif\n"
    "#if defined(NH_LANES)\n"
    "__attribute__((unused, always_inline))\n"
    "static inline nh_vd nh_vload(const double *p, long n)\n"
    "{\n"
    "    nh_vd r = NH_VZERO;\n"
    "    long l;\n"
    "    if (n >= NH_LANES)\n"
    "        __builtin_memcpy(&r, p, sizeof r);\n"
    "    else\n"
    "        for (l = 0; l < n; l++)\n"
    "            r[l] = p[l];\n"
    "    return r;\n"
    "}\n"
    "__attribute__((unused, always_inline))\n"
    "static inline void nh_vstore(double *p, nh_vd v, long n)\n"
    "{\n"
    "    long l;\n"
    "    if (n >= NH_LANES)\n"
    "        __builtin_memcpy(p, &v, sizeof v);\n"
    "    else\n"
    "        for (l = 0; l < n; l++)\n"
    "            p[l] = v[l];\n"
    "}\n"
    "__attribute__((unused, noinline))\n"
    "static nh_vd nh_dpow(nh_vd a, nh_vd b, double f, double g)\n"
    "{\n"
    "    nh_vd r;\n"
    "    int l;\n"
    "    for (l = 0; l < NH_LANES; l++)\n"
    "        r[l] = b[l] != 0 ? (a[l] != 0 ? 0 + f * a[l] : 0) + g * b[l]\n"
    "                         : (a[l] != 0 ? 0 + f * a[l] : 0);\n"
    "    return r;\n"
    "}\n"
    "#else\n"
    "#define NH_LANES 1\n"
    "typedef double nh_vd;\n"
    "#define NH_VZERO 0.0\n"
    "#define NH_VNAN NAN\n"
    "#define NH_VEND() ((void)0)\n"
    "#define NH_NZ(a, x) ((a) == 0 ? 0 : (x))\n"
    "#define nh_vload(p, n) (*(p))\n"
    "#define nh_vstore(p, v, n) (*(p) = (v))\n"
    "#define nh_dpow(a, b, f, g) \\\n"
    "    ((b) != 0 ? ((a) != 0 ? 0 + (f) * (a) : 0) + (g) * (b) \\\n"
    "              : ((a) != 0 ? 0 + (f) * (a) : 0))\n"
    "#endif\n\n";

void tape_write_c_helpers(strbuf_t *b, unsigned helpers)
{
    if (helpers & TAPE_C_PIECES_BIT)
        strbuf_add(b, "/* The pieces of a long tape stay functions of their "
                      "own: compilers are\n"
                      " * slow on one huge function. */\n"
                      "#if defined(__GNUC__)\n"
                      "#define NH_NOINLINE __attribute__((noinline))\n"
                      "#else\n"
                      "#define NH_NOINLINE\n"
                      "#endif\n\n");
    if (helpers & TAPE_C_VECTOR_BIT)
        strbuf_add(b, tape_c_vector_text);
    /* with the helpers they call, which come earlier in the list */
    for (size_t h = TAPE_NHELPERS; h-- > 0;)
        if (helpers & (1u << h))
            helpers |= tape_c_calls(tape_helper_text[h]) & ((1u << h) - 1);
    for (size_t h = 0; h < TAPE_NHELPERS; h++)
        if (helpers & (1u << h)) {
            strbuf_add(b, tape_helper_text[h]);
            strbuf_add(b, "\n");
        }
}
