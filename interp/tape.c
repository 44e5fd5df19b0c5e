/*
 * tape.c — output nodes compiled into a flat instruction tape, and the
 * loop that runs it.
 *
 * Compilation walks the graph below the outputs in post-order (children
 * first, in argument order), emits the instructions of each node that is
 * neither a constant nor a variable (a sum or product folds each operand
 * in as soon as it is computed), and assigns work slots with a free list:
 * a node's slot is released after its last reader, and the next node
 * takes the most recently released one.
 *
 * Instruction format (16 bytes):
 *
 *     0        8                32               64               96    128
 *    +--------+----------------+----------------+----------------+
 *    |   op   |    (unused)    |      dst       |       a        |   b   |
 *    +--------+----------------+----------------+----------------+
 *
 *    dst   work slot written
 *    a, b  operands: a work slot, or TAPE_VAR | v for input variable v,
 *          read in place from the caller's vector
 *
 * The work buffer is [constants | temporaries]: tape_eval copies the
 * constant pool into its first nconst slots, so a constant is an ordinary
 * slot operand.
 *
 * Arithmetic is expr_apply()'s, operand for operand:
 *   ADD, MUL of n operands  chain: dst = x0 OP x1; dst = dst OP x2; ...
 *                           (left to right in canonical order, as the
 *                           tree folds them)
 *   POW with exponent 2, 3, -1, -2  SQR a*a, CUBE a*a*a, RECIP 1/a,
 *                           RSQR 1/(a*a): expr_apply takes the same branch
 *   POW with another constant exponent  POWK: pow(a, b)
 *   POW otherwise           POW: expr_apply(EXPR_POW, ...)
 *   functions               the libm call expr_apply makes; sign, min, max
 *                           and atan2 through expr_apply itself
 * so tape_eval and expr_eval agree bit for bit.
 *
 * Must not: allocate, recurse or hash in tape_eval; reference the graph
 * after tape_compile.
 */
#include "interp/tape.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TAPE_VAR 0x80000000u

typedef enum tape_op {
    /* ADD and MUL by operand kind: W a work slot, V an input variable:
     * dst = a OP b */
    T_ADD_WW,
    T_ADD_WV,
    T_ADD_VW,
    T_ADD_VV,
    T_MUL_WW,
    T_MUL_WV,
    T_MUL_VW,
    T_MUL_VV,
    /* one step of a chain whose accumulator the previous instruction
     * wrote, so it is still in a register: dst = acc OP b */
    T_ADDR_W,
    T_ADDR_V,
    T_MULR_W,
    T_MULR_V,
    /* two steps of a chain: dst = (a OP b) OP c, a a work slot */
    T_ADD2_WW,
    T_ADD2_WV,
    T_ADD2_VW,
    T_ADD2_VV,
    T_MUL2_WW,
    T_MUL2_WV,
    T_MUL2_VW,
    T_MUL2_VV,
    /* the same with the accumulator in a register: dst = (acc OP b) OP c */
    T_ADD2R_WW,
    T_ADD2R_WV,
    T_ADD2R_VW,
    T_ADD2R_VV,
    T_MUL2R_WW,
    T_MUL2R_WV,
    T_MUL2R_VW,
    T_MUL2R_VV,
    T_SQR,
    T_CUBE,
    T_RECIP,
    T_RSQR,
    T_POWK,
    T_POW,
    T_SIN,
    T_COS,
    T_TAN,
    T_ASIN,
    T_ACOS,
    T_ATAN,
    T_SINH,
    T_COSH,
    T_TANH,
    T_EXP,
    T_LOG,
    T_SQRT,
    T_ABS,
    T_SIGN,
    T_ATAN2,
    T_MIN,
    T_MAX,
    T_END /* the last instruction of every tape */
} tape_op_t;

typedef struct tape_ins {
    uint32_t op : 8;
    uint32_t dst : 24;
    uint32_t a, b, c;
} tape_ins_t;

struct tape {
    tape_ins_t *code;
    size_t len;
    double *consts;
    size_t nconst;
    size_t work;
    uint32_t *outs; /* operand of each output */
    size_t nout;
};

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        abort();
    return p;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        abort();
    return p;
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        abort();
    return p;
}

/* ---- compilation ------------------------------------------------------- */

/*
 * The schedule is a list of steps.  A step is one instruction of a node:
 * step 0 of a node reads all its operands (for ADD/MUL: the first two),
 * step k >= 1 of an ADD/MUL folds operand k+1 into the accumulator.  The
 * walk emits step k of a sum right after its operand k+1 is complete, so
 * each term is folded in as soon as it exists instead of all terms
 * waiting for the sum: the order of the arithmetic is unchanged.
 */

enum { UNSEEN = 0, OPEN = 1, DONE = 2 };

typedef struct step {
    const expr_t *e;
    uint32_t k;
} step_t;

typedef struct compiler {
    size_t nvars;
    uint8_t *state;     /* by id */
    uint32_t *slot;     /* by id: temporary of a node, or operand of a leaf */
    size_t *last;       /* by id: last step that reads the node */
    step_t *steps;
    size_t nsteps, steps_cap;
    double *consts;
    size_t nconst, const_cap;
    uint32_t *free_slots;
    size_t nfree;
    size_t nslots;      /* temporaries handed out so far */
    tape_ins_t *code;
    size_t len, cap;
    uint32_t prev_dst;  /* dst of the last instruction emitted */
} compiler_t;

static bool computed(const expr_t *e)
{
    return e->op != EXPR_CONST && e->op != EXPR_VAR;
}

static bool chain(const expr_t *e)
{
    return e->op == EXPR_ADD || e->op == EXPR_MUL;
}

/* Gives a constant or variable its operand, the first time it is met. */
static void leaf(compiler_t *c, const expr_t *a)
{
    if (c->state[a->id] != UNSEEN)
        return;
    if (a->op == EXPR_CONST) {
        if (c->nconst == c->const_cap) {
            c->const_cap = c->const_cap ? 2 * c->const_cap : 16;
            c->consts = xrealloc(c->consts, c->const_cap * sizeof *c->consts);
        }
        c->slot[a->id] = (uint32_t)c->nconst;
        c->consts[c->nconst++] = a->value;
    } else {
        if (a->var >= c->nvars)
            abort(); /* a variable outside the input vector: caller's bug */
        c->slot[a->id] = TAPE_VAR | a->var;
    }
    c->state[a->id] = DONE;
}

static void schedule(compiler_t *c, const expr_t *e, uint32_t k)
{
    if (c->nsteps == c->steps_cap) {
        c->steps_cap = c->steps_cap ? 2 * c->steps_cap : 64;
        c->steps = xrealloc(c->steps, c->steps_cap * sizeof *c->steps);
    }
    c->steps[c->nsteps++] = (step_t){e, k};
}

/* Operand K of E is complete: a sum or product folds it in. */
static void after_operand(compiler_t *c, const expr_t *e, uint32_t k)
{
    if (chain(e) && k >= 1)
        schedule(c, e, k - 1);
}

/* Post-order walk from ROOT without recursion (chains may be long). */
static void walk(compiler_t *c, const expr_t *root)
{
    typedef struct {
        const expr_t *e;
        uint32_t next;
        bool pending; /* returned from operand next-1 */
    } frame_t;
    size_t cap = 64, top = 0;
    frame_t *st = xmalloc(cap * sizeof *st);
    st[top++] = (frame_t){root, 0, false};
    c->state[root->id] = OPEN;
    while (top) {
        frame_t *f = &st[top - 1];
        const expr_t *e = f->e;
        if (f->pending) {
            f->pending = false;
            after_operand(c, e, f->next - 1);
        }
        if (f->next < e->nargs) {
            const expr_t *a = e->args[f->next++];
            if (computed(a) && c->state[a->id] == UNSEEN) {
                f->pending = true;
                if (top == cap) {
                    cap *= 2;
                    st = xrealloc(st, cap * sizeof *st);
                }
                st[top++] = (frame_t){a, 0, false};
                c->state[a->id] = OPEN;
                continue;
            }
            leaf(c, a);
            after_operand(c, e, f->next - 1);
            continue;
        }
        if (!chain(e))
            schedule(c, e, 0);
        c->state[e->id] = DONE;
        top--;
    }
    free(st);
}

/* Appends OP dst, a, b (, x for the fused steps).  ADD and MUL variants
 * are chosen here by operand kind, and their fields become plain
 * indices. */
static void emit3(compiler_t *c, tape_op_t op, uint32_t dst, uint32_t a,
                  uint32_t b, uint32_t x)
{
    switch (op) {
    case T_ADD_WW:
    case T_MUL_WW:
        op = (tape_op_t)(op + 2 * !!(a & TAPE_VAR) + !!(b & TAPE_VAR));
        break;
    case T_ADDR_W:
    case T_MULR_W:
        op = (tape_op_t)(op + !!(b & TAPE_VAR));
        break;
    case T_ADD2_WW:
    case T_MUL2_WW:
    case T_ADD2R_WW:
    case T_MUL2R_WW:
        op = (tape_op_t)(op + 2 * !!(b & TAPE_VAR) + !!(x & TAPE_VAR));
        break;
    default:
        break;
    }
    if (op < T_SQR) { /* kinds are in the opcode: plain indices */
        a &= ~TAPE_VAR;
        b &= ~TAPE_VAR;
        x &= ~TAPE_VAR;
    }
    if (dst >= (1u << 24))
        abort(); /* more than 16M work slots */
    if (c->len == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        c->code = xrealloc(c->code, c->cap * sizeof *c->code);
    }
    c->code[c->len++] = (tape_ins_t){(uint32_t)op, dst, a, b, x};
    c->prev_dst = dst;
}

static void emit(compiler_t *c, tape_op_t op, uint32_t dst, uint32_t a,
                 uint32_t b)
{
    emit3(c, op, dst, a, b, 0);
}

static uint32_t slot_alloc(compiler_t *c)
{
    if (c->nfree)
        return c->free_slots[--c->nfree];
    return (uint32_t)c->nslots++;
}

/* Releases the temporary of operand A if step S is its last reader (once,
 * even if A is read twice by the step). */
static void slot_release(compiler_t *c, const expr_t *a, size_t s)
{
    if (!computed(a) || c->last[a->id] != s)
        return;
    c->last[a->id] = SIZE_MAX; /* released */
    c->free_slots[c->nfree++] = c->slot[a->id];
}

static tape_op_t function_op(expr_op_t op)
{
    switch (op) {
    case EXPR_SIN:
        return T_SIN;
    case EXPR_COS:
        return T_COS;
    case EXPR_TAN:
        return T_TAN;
    case EXPR_ASIN:
        return T_ASIN;
    case EXPR_ACOS:
        return T_ACOS;
    case EXPR_ATAN:
        return T_ATAN;
    case EXPR_SINH:
        return T_SINH;
    case EXPR_COSH:
        return T_COSH;
    case EXPR_TANH:
        return T_TANH;
    case EXPR_EXP:
        return T_EXP;
    case EXPR_LOG:
        return T_LOG;
    case EXPR_SQRT:
        return T_SQRT;
    case EXPR_ABS:
        return T_ABS;
    case EXPR_SIGN:
        return T_SIGN;
    case EXPR_ATAN2:
        return T_ATAN2;
    case EXPR_MIN:
        return T_MIN;
    case EXPR_MAX:
        return T_MAX;
    default:
        abort(); /* not a function op */
    }
}

static tape_op_t pow_op(const expr_t *e)
{
    if (e->args[1]->op != EXPR_CONST)
        return T_POW;
    double x = e->args[1]->value;
    return x == 2 ? T_SQR : x == 3 ? T_CUBE : x == -1 ? T_RECIP
           : x == -2 ? T_RSQR : T_POWK;
}

tape_t *tape_compile(const expr_graph_t *g, const expr_t *const *outs,
                     size_t nout, size_t nvars)
{
    size_t n = expr_graph_count(g);
    compiler_t c = {0};
    c.nvars = nvars;
    c.state = xcalloc(n, 1);
    c.slot = xcalloc(n, sizeof *c.slot);
    c.last = xcalloc(n, sizeof *c.last);
    for (size_t k = 0; k < nout; k++) {
        if (computed(outs[k]) && c.state[outs[k]->id] == UNSEEN)
            walk(&c, outs[k]);
        else
            leaf(&c, outs[k]);
    }

    /* The last step that reads each node; outputs live to the end. */
    for (size_t s = 0; s < c.nsteps; s++) {
        const expr_t *e = c.steps[s].e;
        uint32_t k = c.steps[s].k;
        if (chain(e) && k > 0) {
            c.last[e->args[k + 1]->id] = s;
        } else {
            uint32_t m = chain(e) ? 2 : e->nargs;
            for (uint32_t j = 0; j < m; j++)
                c.last[e->args[j]->id] = s;
        }
    }
    for (size_t k = 0; k < nout; k++)
        c.last[outs[k]->id] = SIZE_MAX - 1;

    /* Temporaries are numbered from 0 here and placed after the constants
     * in the work buffer. */
    c.free_slots = xmalloc((c.nsteps + 1) * sizeof *c.free_slots);
    uint32_t base = (uint32_t)c.nconst;
#define OPND(x) (computed(x) ? base + c.slot[(x)->id] : c.slot[(x)->id])
    for (size_t s = 0; s < c.nsteps; s++) {
        const expr_t *e = c.steps[s].e;
        uint32_t k = c.steps[s].k;
        if (chain(e) && k > 0) {
            /* dst = dst OP operand k+1; that operand's temporary was
             * taken after dst, so it is not dst.  When the next step
             * folds operand k+2 into the same chain, one instruction
             * does both: dst = (dst OP x) OP y. */
            uint32_t d = base + c.slot[e->id];
            bool reg = c.len > 0 && c.prev_dst == d;
            bool add = e->op == EXPR_ADD;
            const expr_t *x = e->args[k + 1];
            if (s + 1 < c.nsteps && c.steps[s + 1].e == e) {
                const expr_t *y = e->args[k + 2];
                tape_op_t op = reg ? (add ? T_ADD2R_WW : T_MUL2R_WW)
                                   : (add ? T_ADD2_WW : T_MUL2_WW);
                emit3(&c, op, d, d, OPND(x), OPND(y));
                slot_release(&c, x, s);
                slot_release(&c, y, s + 1);
                s++;
                continue;
            }
            tape_op_t op = reg ? (add ? T_ADDR_W : T_MULR_W)
                               : (add ? T_ADD_WW : T_MUL_WW);
            emit(&c, op, d, d, OPND(x));
            slot_release(&c, x, s);
            continue;
        }
        uint32_t a = e->nargs > 0 ? OPND(e->args[0]) : 0;
        uint32_t b = e->nargs > 1 ? OPND(e->args[1]) : a;
        uint32_t m = chain(e) ? 2 : e->nargs;
        /* the operands are read before dst is written: dst may reuse
         * the temporary of an operand read here for the last time */
        for (uint32_t j = 0; j < m; j++)
            slot_release(&c, e->args[j], s);
        uint32_t d = slot_alloc(&c);
        c.slot[e->id] = d;
        tape_op_t op = e->op == EXPR_ADD   ? T_ADD_WW
                       : e->op == EXPR_MUL ? T_MUL_WW
                       : e->op == EXPR_POW ? pow_op(e)
                                           : function_op(e->op);
        emit(&c, op, base + d, a, b);
    }

    size_t len = c.len;
    emit(&c, T_END, 0, 0, 0);

    tape_t *t = xmalloc(sizeof *t);
    t->code = c.code;
    t->len = len;
    t->consts = c.consts;
    t->nconst = c.nconst;
    t->work = c.nconst + c.nslots;
    t->nout = nout;
    t->outs = xmalloc((nout ? nout : 1) * sizeof *t->outs);
    for (size_t k = 0; k < nout; k++)
        t->outs[k] = OPND(outs[k]);
#undef OPND
    free(c.state);
    free(c.slot);
    free(c.last);
    free(c.steps);
    free(c.free_slots);
    return t;
}

void tape_free(tape_t *t)
{
    if (!t)
        return;
    free(t->code);
    free(t->consts);
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

/* ---- evaluation -------------------------------------------------------- */

/* Threaded dispatch where the compiler has computed goto (each handler
 * jumps to the next one itself, which the branch predictor follows much
 * better than one shared switch); a plain switch elsewhere.  The tape
 * ends with T_END, so the loop needs no bound test. */
#if defined(__GNUC__)
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
#if defined(__GNUC__)
    static const void *const jump[] = {
        &&L_T_ADD_WW,   &&L_T_ADD_WV,   &&L_T_ADD_VW,   &&L_T_ADD_VV,
        &&L_T_MUL_WW,   &&L_T_MUL_WV,   &&L_T_MUL_VW,   &&L_T_MUL_VV,
        &&L_T_ADDR_W,   &&L_T_ADDR_V,   &&L_T_MULR_W,   &&L_T_MULR_V,
        &&L_T_ADD2_WW,  &&L_T_ADD2_WV,  &&L_T_ADD2_VW,  &&L_T_ADD2_VV,
        &&L_T_MUL2_WW,  &&L_T_MUL2_WV,  &&L_T_MUL2_VW,  &&L_T_MUL2_VV,
        &&L_T_ADD2R_WW, &&L_T_ADD2R_WV, &&L_T_ADD2R_VW, &&L_T_ADD2R_VV,
        &&L_T_MUL2R_WW, &&L_T_MUL2R_WV, &&L_T_MUL2R_VW, &&L_T_MUL2R_VV,
        &&L_T_SQR,      &&L_T_CUBE,     &&L_T_RECIP,    &&L_T_RSQR,
        &&L_T_POWK,     &&L_T_POW,      &&L_T_SIN,      &&L_T_COS,
        &&L_T_TAN,      &&L_T_ASIN,     &&L_T_ACOS,     &&L_T_ATAN,
        &&L_T_SINH,     &&L_T_COSH,     &&L_T_TANH,     &&L_T_EXP,
        &&L_T_LOG,      &&L_T_SQRT,     &&L_T_ABS,      &&L_T_SIGN,
        &&L_T_ATAN2,    &&L_T_MIN,      &&L_T_MAX,      &&L_T_END};
#endif
    if (t->nconst)
        memcpy(work, t->consts, t->nconst * sizeof *work);
    /* A generic operand x: bit 31 selects the input vector, else the work
     * buffer.  The ADD/MUL variants read their kinds from the opcode. */
    const double *const base[2] = {work, vars};
#define RD(x) (base[(x) >> 31][(x) & ~TAPE_VAR])
#define A RD(ip->a)
#define B RD(ip->b)
#define WA work[ip->a]
#define VA vars[ip->a]
#define WB work[ip->b]
#define VB vars[ip->b]
#define WC work[ip->c]
#define VC vars[ip->c]
/* r: the value the last instruction wrote, kept in a register so that
 * the next step of a chain does not wait for a store and a load. */
#define SET(v)                                                                \
    do {                                                                      \
        r = (v);                                                              \
        work[ip->dst] = r;                                                    \
    } while (0)
    const tape_ins_t *ip = t->code;
    double r = 0, a, x[2];
    /* Never write a*b + c in one handler: the compiler could contract it
     * into a fused multiply-add, which rounds once where the tree rounds
     * twice. */
    VM_BEGIN
        VM_CASE(T_ADD_WW) SET(WA + WB); VM_NEXT();
        VM_CASE(T_ADD_WV) SET(WA + VB); VM_NEXT();
        VM_CASE(T_ADD_VW) SET(VA + WB); VM_NEXT();
        VM_CASE(T_ADD_VV) SET(VA + VB); VM_NEXT();
        VM_CASE(T_MUL_WW) SET(WA * WB); VM_NEXT();
        VM_CASE(T_MUL_WV) SET(WA * VB); VM_NEXT();
        VM_CASE(T_MUL_VW) SET(VA * WB); VM_NEXT();
        VM_CASE(T_MUL_VV) SET(VA * VB); VM_NEXT();
        VM_CASE(T_ADDR_W) SET(r + WB); VM_NEXT();
        VM_CASE(T_ADDR_V) SET(r + VB); VM_NEXT();
        VM_CASE(T_MULR_W) SET(r * WB); VM_NEXT();
        VM_CASE(T_MULR_V) SET(r * VB); VM_NEXT();
        VM_CASE(T_ADD2_WW) a = WA + WB; SET(a + WC); VM_NEXT();
        VM_CASE(T_ADD2_WV) a = WA + WB; SET(a + VC); VM_NEXT();
        VM_CASE(T_ADD2_VW) a = WA + VB; SET(a + WC); VM_NEXT();
        VM_CASE(T_ADD2_VV) a = WA + VB; SET(a + VC); VM_NEXT();
        VM_CASE(T_MUL2_WW) a = WA * WB; SET(a * WC); VM_NEXT();
        VM_CASE(T_MUL2_WV) a = WA * WB; SET(a * VC); VM_NEXT();
        VM_CASE(T_MUL2_VW) a = WA * VB; SET(a * WC); VM_NEXT();
        VM_CASE(T_MUL2_VV) a = WA * VB; SET(a * VC); VM_NEXT();
        VM_CASE(T_ADD2R_WW) a = r + WB; SET(a + WC); VM_NEXT();
        VM_CASE(T_ADD2R_WV) a = r + WB; SET(a + VC); VM_NEXT();
        VM_CASE(T_ADD2R_VW) a = r + VB; SET(a + WC); VM_NEXT();
        VM_CASE(T_ADD2R_VV) a = r + VB; SET(a + VC); VM_NEXT();
        VM_CASE(T_MUL2R_WW) a = r * WB; SET(a * WC); VM_NEXT();
        VM_CASE(T_MUL2R_WV) a = r * WB; SET(a * VC); VM_NEXT();
        VM_CASE(T_MUL2R_VW) a = r * VB; SET(a * WC); VM_NEXT();
        VM_CASE(T_MUL2R_VV) a = r * VB; SET(a * VC); VM_NEXT();
        VM_CASE(T_SQR) a = A; SET(a * a); VM_NEXT();
        VM_CASE(T_CUBE) a = A; SET(a * a * a); VM_NEXT();
        VM_CASE(T_RECIP) SET(1 / A); VM_NEXT();
        VM_CASE(T_RSQR) a = A; SET(1 / (a * a)); VM_NEXT();
        VM_CASE(T_POWK) SET(pow(A, B)); VM_NEXT();
        VM_CASE(T_SIN) SET(sin(A)); VM_NEXT();
        VM_CASE(T_COS) SET(cos(A)); VM_NEXT();
        VM_CASE(T_TAN) SET(tan(A)); VM_NEXT();
        VM_CASE(T_ASIN) SET(asin(A)); VM_NEXT();
        VM_CASE(T_ACOS) SET(acos(A)); VM_NEXT();
        VM_CASE(T_ATAN) SET(atan(A)); VM_NEXT();
        VM_CASE(T_SINH) SET(sinh(A)); VM_NEXT();
        VM_CASE(T_COSH) SET(cosh(A)); VM_NEXT();
        VM_CASE(T_TANH) SET(tanh(A)); VM_NEXT();
        VM_CASE(T_EXP) SET(exp(A)); VM_NEXT();
        VM_CASE(T_LOG) SET(log(A)); VM_NEXT();
        VM_CASE(T_SQRT) SET(sqrt(A)); VM_NEXT();
        VM_CASE(T_ABS) SET(fabs(A)); VM_NEXT();
        /* the rarer ops go through expr_apply itself */
        VM_CASE(T_POW) x[0] = A; x[1] = B;
        SET(expr_apply(EXPR_POW, x, 2)); VM_NEXT();
        VM_CASE(T_SIGN) x[0] = A;
        SET(expr_apply(EXPR_SIGN, x, 1)); VM_NEXT();
        VM_CASE(T_ATAN2) x[0] = A; x[1] = B;
        SET(expr_apply(EXPR_ATAN2, x, 2)); VM_NEXT();
        VM_CASE(T_MIN) x[0] = A; x[1] = B;
        SET(expr_apply(EXPR_MIN, x, 2)); VM_NEXT();
        VM_CASE(T_MAX) x[0] = A; x[1] = B;
        SET(expr_apply(EXPR_MAX, x, 2)); VM_NEXT();
        VM_CASE(T_END) goto done;
    VM_END
done:
    for (size_t k = 0; k < t->nout; k++)
        out[k] = RD(t->outs[k]);
#undef RD
#undef A
#undef B
#undef WA
#undef VA
#undef WB
#undef VB
#undef WC
#undef VC
#undef SET
}
