/*
 * print.c — expressions as text in the language's own syntax
 * (LANGUAGE.md §3) and as LaTeX, and numbers in their shortest exact form.
 *
 * Text uses the fewest parentheses that keep the meaning under the
 * language's precedence (+ - < * / < unary - < ^, ^ right-associative),
 * and reads back, through the parser and the constructors of expr.c, as
 * the very same node:
 *   - a sum keeps its canonical order, except that a positive term is
 *     moved to the front if there is one; negative terms print as
 *     subtraction (a - 2*b);
 *   - a product prints as [-]numerator[/denominator]: the factors with a
 *     negative constant exponent go below the line (a/(b*c), 1/x^2), and
 *     an exact fractional coefficient p/q prints as p.../q (m*x'^2/2,
 *     4*m/25), which is exactly what the parser rebuilds; the factors
 *     print in the order of their variables' ranks (expr_var_set_rank:
 *     m*R^2*x'', not x''*m*R^2), canonical within a rank;
 *   - a constant prints as the fraction it is (1/3, -7/5), or in the
 *     shortest decimal that reads back when it is a double or a decimal
 *     with a denominator over FRACTION_MAX (3.141592653589793);
 *   - a negative constant as a base is parenthesised ((-2)^x), and so is
 *     any exponent that is not a power or an atom (x^(-y), x^(a*b)).
 * LaTeX follows the same structure with \frac, \left( \right), ^{...},
 * \sin etc.; variable names become \theta, \dot{x}, x_{1}.
 *
 * Must not: change the graph (it is const here); print to a stream.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp/expr/expr.h"
#include "interp/expr/expr_impl.h"

/* ---- numbers ----------------------------------------------------------- */

/* A number as printed: a fraction NUM/DEN (DEN > 1), or the double V
 * (DEN = 1: an integer or a decimal); with PI = 1, NUM/DEN times pi, with
 * PI = -1, NUM/DEN over pi (DEN may be 1). */
typedef struct pnum {
    double v;
    int64_t num, den;
    int pi;
} pnum_t;

/* pi as the graph holds it: the fraction of its shortest decimal,
 * 3.141592653589793 (the language's `pi`, rational.c). */
#define PI_NUM 3141592653589793LL
#define PI_DEN 1000000000000000LL

/* A/B reduced into *NUM, *DEN when both are at most 1000 (B > 0). */
static bool small_ratio(__int128 a, __int128 b, int64_t *num, int64_t *den)
{
    __int128 x = a < 0 ? -a : a, y = b;
    while (y) {
        __int128 t = x % y;
        x = y;
        y = t;
    }
    if (x == 0)
        return false;
    a /= x;
    b /= x;
    if (a > 1000 || a < -1000 || b > 1000)
        return false;
    *num = (int64_t)a;
    *den = (int64_t)b;
    return true;
}

/* Whether constant C is K*pi (1) or K/pi (-1) for a fraction K of terms
 * up to 1000: `pi` written with small numbers (2*pi, pi/2, x/(2*pi)),
 * exactly when C is a fraction (2*pi folds exactly), or as IEEE folded it
 * (3*pi/4 leaves the fractions' bounds: the double of 3*pi then /4); *K
 * gets it.  0 when it is no such number.  (LANGUAGE.md §7.1: a number
 * that is not rational stays a symbol.) */
static int pi_multiple(const expr_graph_t *g, const expr_t *c,
                       int64_t *num, int64_t *den)
{
    double v = c->value;
    if (v == 0 || !isfinite(v))
        return 0;
    if (c->den > 0) {
        if (small_ratio((__int128)c->num * PI_DEN, (__int128)c->den * PI_NUM,
                        num, den))
            return 1;
        if (small_ratio((__int128)c->num * PI_NUM, (__int128)c->den * PI_DEN,
                        num, den))
            return -1;
    }
    if (!g || !expr_graph_is_display(g))
        return 0;
    for (int64_t q = 1; q <= 12; q++) {
        double n = nearbyint(v * (double)q / M_PI);
        if (n != 0 && fabs(n) <= 100 && n * M_PI / (double)q == v &&
            small_ratio((__int128)n, q, num, den))
            return 1;
    }
    return 0;
}

/* Where a number prints: alone, as the coefficient of a product
 * (p*x/q against d*x), as an exponent (x^(p/q) against x^d). */
typedef enum { AS_ALONE, AS_COEF, AS_EXPONENT } pnum_use_t;

/* How constant C prints where USE says: a fraction that is its double's
 * shortest decimal (a decimal literal) prints as that decimal when the
 * decimal is shorter there (9.81*m, 0.3*x, 0.001, 3.141592653589793,
 * x^0.5), else as the fraction (4*m/25, 7*m/5, x/10, 1/2); other
 * fractions (1/3) always as fractions, so the text reads back to the
 * same constant. */
static pnum_t pnum_use(const expr_graph_t *g, const expr_t *c,
                       pnum_use_t use)
{
    pnum_t r = {c->value, 0, 1, 0};
    r.pi = pi_multiple(g, c, &r.num, &r.den);
    if (r.pi)
        return r; /* a number that is not rational stays a symbol */
    if (c->den > 1) {
        expr_q_t q = expr_q_double(c->value);
        char dec[40], p[24], d[24];
        expr_format_number(fabs(c->value), dec, sizeof dec);
        snprintf(p, sizeof p, "%lld", (long long)llabs(c->num));
        snprintf(d, sizeof d, "%lld", (long long)c->den);
        size_t lf = strlen(p) + 1 + strlen(d), ld = strlen(dec);
        if (use == AS_COEF) {
            lf = strcmp(p, "1") == 0 ? strlen(d) + 1 : lf + 1; /* p*, /q */
            ld++;                                              /* d* */
        } else if (use == AS_EXPONENT) {
            lf += 2; /* (p/q) */
        }
        if (q.den != c->den || q.num != c->num || lf <= ld) {
            r.num = c->num;
            r.den = c->den;
        }
    }
    return r;
}

static pnum_t pnum_of(const expr_graph_t *g, const expr_t *c)
{
    return pnum_use(g, c, AS_ALONE);
}

static pnum_t pnum_neg(pnum_t a)
{
    a.v = -a.v;
    a.num = -a.num;
    return a;
}

/* ---- output buffer ----------------------------------------------------- */

typedef struct printer {
    const expr_graph_t *g;
    bool latex;
    char *s;
    size_t n, cap;
    /* expr_print_terms: where each top-level term starts (NULL: none) */
    size_t *marks, nmarks;
    /* expr_to_text_atoms: nodes printed as a stand-in name */
    bool (*atom)(void *ctx, const expr_t *e);
    void *actx;
    /* LaTeX with its fractions inline: a/b, \tfrac{2}{5} */
    bool slash;
} printer_t;

static void put_n(printer_t *p, const char *s, size_t n)
{
    if (p->n + n + 1 > p->cap) {
        while (p->n + n + 1 > p->cap)
            p->cap = p->cap ? p->cap * 2 : 128;
        p->s = expr_xrealloc(p->s, p->cap);
    }
    memcpy(p->s + p->n, s, n);
    p->n += n;
    p->s[p->n] = '\0';
}

static void put(printer_t *p, const char *s)
{
    put_n(p, s, strlen(s));
}

static void put_number(printer_t *p, double v);

/* K*pi: 2*pi, pi/2, -3*pi/4; \pi, 2 \pi, \frac{3 \pi}{4}; K/pi:
 * 1/(2*pi), \frac{1}{2 \pi}. */
static void put_pi(printer_t *p, pnum_t a)
{
    char buf[64];
    long long n = (long long)(a.num < 0 ? -a.num : a.num);
    if (a.num < 0)
        put(p, "-");
    if (a.pi < 0) {
        if (p->latex) {
            snprintf(buf, sizeof buf, "\\frac{%lld}{", n);
            put(p, buf);
            if (a.den > 1) {
                snprintf(buf, sizeof buf, "%lld ", (long long)a.den);
                put(p, buf);
            }
            put(p, "\\pi}");
        } else if (a.den > 1) {
            snprintf(buf, sizeof buf, "%lld/(%lld*pi)", n, (long long)a.den);
            put(p, buf);
        } else {
            snprintf(buf, sizeof buf, "%lld/pi", n);
            put(p, buf);
        }
        return;
    }
    if (p->latex) {
        if (a.den > 1)
            put(p, "\\frac{");
        if (n != 1) {
            snprintf(buf, sizeof buf, "%lld ", n);
            put(p, buf);
        }
        put(p, "\\pi");
        if (a.den > 1) {
            snprintf(buf, sizeof buf, "}{%lld}", (long long)a.den);
            put(p, buf);
        }
        return;
    }
    if (n != 1) {
        snprintf(buf, sizeof buf, "%lld*", n);
        put(p, buf);
    }
    put(p, "pi");
    if (a.den > 1) {
        snprintf(buf, sizeof buf, "/%lld", (long long)a.den);
        put(p, buf);
    }
}

/* A number that may be a fraction: p/q, \frac{p}{q}, -\frac{p}{q}. */
static void put_pnum(printer_t *p, pnum_t a)
{
    if (a.pi) {
        put_pi(p, a);
        return;
    }
    if (a.den <= 1) {
        put_number(p, a.v);
        return;
    }
    char buf[64];
    if (p->latex) {
        snprintf(buf, sizeof buf, "%s\\%sfrac{%lld}{%lld}",
                 a.num < 0 ? "-" : "", p->slash ? "t" : "",
                 (long long)(a.num < 0 ? -a.num : a.num), (long long)a.den);
    } else {
        snprintf(buf, sizeof buf, "%lld/%lld", (long long)a.num,
                 (long long)a.den);
    }
    put(p, buf);
}

static void put_number(printer_t *p, double v)
{
    char buf[40];
    expr_format_number(v, buf, sizeof buf);
    if (!p->latex) {
        put(p, buf);
        return;
    }
    if (isnan(v)) {
        put(p, "\\mathrm{NaN}");
        return;
    }
    if (isinf(v)) {
        put(p, v > 0 ? "\\infty" : "-\\infty");
        return;
    }
    char *e = strchr(buf, 'e');
    if (!e) {
        put(p, buf);
        return;
    }
    *e = '\0';
    if (strcmp(buf, "1") == 0)
        put(p, "10^{");
    else if (strcmp(buf, "-1") == 0)
        put(p, "-10^{");
    else {
        put(p, buf);
        put(p, " \\cdot 10^{");
    }
    put(p, e + 1);
    put(p, "}");
}

/* ---- structure --------------------------------------------------------- */

enum { P_NONE = 0, P_SUM, P_PROD, P_UNARY, P_POW, P_ATOM };

/* A product as printed: coefficient and the other factors. */
typedef struct mul_view {
    pnum_t coef;
    const expr_t *const *f;
    size_t n;
} mul_view_t;

static bool is_negative(double v)
{
    return !isnan(v) && signbit(v);
}

/* A factor printed below the line: a power with a negative constant
 * exponent and a base that is not a number (0^-2 stays a power: its
 * reading back as 1/0^2 would fold 0^2 first). */
static bool is_den(const expr_t *f)
{
    return f->op == EXPR_POW && f->args[1]->op == EXPR_CONST &&
           f->args[1]->value < 0 && f->args[0]->op != EXPR_CONST;
}

static const pnum_t pnum_one = {1.0, 1, 1, 0};

static mul_view_t view_of(const printer_t *p, const expr_t *const *e)
{
    const expr_t *m = *e;
    if (m->op == EXPR_MUL && m->args[0]->op == EXPR_CONST)
        return (mul_view_t){pnum_use(p->g, m->args[0], AS_COEF), m->args + 1,
                            m->nargs - 1};
    if (m->op == EXPR_MUL)
        return (mul_view_t){pnum_one, m->args, m->nargs};
    return (mul_view_t){pnum_one, e, 1};
}

static bool latex_number_is_atom(double v)
{
    char buf[40];
    expr_format_number(v, buf, sizeof buf);
    return !strchr(buf, 'e');
}

static int prec_of(const printer_t *p, const expr_t *e);

static int prec_view(const printer_t *p, mul_view_t v)
{
    size_t nden = v.coef.den > 1;
    for (size_t i = 0; i < v.n; i++)
        nden += is_den(v.f[i]);
    if (nden > 0)
        return P_PROD;
    if (fabs(v.coef.v) == 1 && v.n == 1)
        return is_negative(v.coef.v) ? P_UNARY : prec_of(p, v.f[0]);
    return P_PROD;
}

static int prec_of(const printer_t *p, const expr_t *e)
{
    e = expr_unguarded(e);
    if (p->atom && p->atom(p->actx, e))
        return P_ATOM;
    switch (e->op) {
    case EXPR_CONST: {
        pnum_t a = pnum_of(p->g, e);
        if (is_negative(e->value))
            return P_UNARY;
        if (a.pi)
            return a.pi > 0 && a.num == 1 && a.den == 1 ? P_ATOM : P_PROD;
        if (a.den > 1)
            return p->latex ? P_POW : P_PROD;
        if (p->latex && !latex_number_is_atom(e->value))
            return P_PROD;
        return P_ATOM;
    }
    case EXPR_ADD:
        return P_SUM;
    case EXPR_MUL:
        return prec_view(p, view_of(p, &e));
    case EXPR_POW:
        return is_den(e) ? P_PROD : P_POW;
    default:
        return P_ATOM;
    }
}

static void open_paren(printer_t *p)
{
    put(p, p->latex ? "\\left(" : "(");
}

static void close_paren(printer_t *p)
{
    put(p, p->latex ? "\\right)" : ")");
}

static void emit(printer_t *p, const expr_t *e, int need);
static void emit_sum_signed(printer_t *p, const expr_t *e, bool negate);
static bool term_is_negative(const expr_t *t);

/* Base^exponent with the numeric exponent -X (X the negative exponent
 * constant of a denominator factor). */
static void emit_power_neg(printer_t *p, const expr_t *base, const expr_t *x)
{
    pnum_t ex = pnum_neg(pnum_use(p->g, x, p->latex ? AS_ALONE : AS_EXPONENT));
    if (ex.v == 1) {
        emit(p, base, P_POW);
        return;
    }
    emit(p, base, P_ATOM);
    put(p, p->latex ? "^{" : "^");
    bool paren = !p->latex && ex.den > 1;
    if (paren)
        put(p, "(");
    put_pnum(p, ex);
    put(p, paren ? ")" : "");
    if (p->latex)
        put(p, "}");
}

/* Whether the printed item starts with a digit (LaTeX needs \cdot). */
static bool starts_with_digit(const expr_t *e)
{
    if (e->op == EXPR_CONST)
        return !is_negative(e->value);
    if (e->op == EXPR_POW)
        return starts_with_digit(e->args[0]);
    return false;
}

static bool is_greek(const char *s, size_t n);
static bool latex_operator(expr_op_t op);

/* Whether variable NAME prints in LaTeX as an upright word (\mathrm{th},
 * \dot{\mathrm{th}}): a main part of several letters that is no Greek
 * letter's name (emit_latex_name). */
static bool latex_name_wordy(const char *name)
{
    size_t len = strlen(name), core = len;
    if (len >= 9 && strncmp(name, "lambda(", 7) == 0)
        return false;
    while (core > 0 && name[core - 1] == '\'')
        core--;
    size_t main_len = core;
    const char *us = memchr(name, '_', core);
    if (us && us > name) {
        main_len = (size_t)(us - name);
    } else {
        size_t j = core;
        while (j > 0 && isdigit((unsigned char)name[j - 1]))
            j--;
        if (j > 0 && j < core)
            main_len = j;
    }
    return main_len > 1 && !is_greek(name, main_len);
}

/* How a factor F of a LaTeX product meets its neighbours: WORDY when it
 * is (a power of) a variable printed as an upright word, OPCALL when it
 * is a function written as an operator without parentheses
 * (\cos{\mathrm{th}}, \sin^{2}{x}), whose argument a following factor
 * would seem to continue. */
enum { F_PLAIN = 0, F_WORDY = 1, F_OPCALL = 2 };

static int factor_kind(const printer_t *p, const expr_t *f)
{
    f = expr_unguarded(f);
    if (f->op == EXPR_POW)
        f = expr_unguarded(f->args[0]);
    if (f->op == EXPR_VAR)
        return !expr_var_latex(p->g, f->var) &&
                       latex_name_wordy(expr_var_name(p->g, f->var))
                   ? F_WORDY
                   : F_PLAIN;
    if (latex_operator(f->op) && expr_unguarded(f->args[0])->op == EXPR_VAR)
        return F_OPCALL;
    return F_PLAIN;
}

/* The separator of two factors of a LaTeX product: \cdot before a
 * digit, a thin space where either would run into the other
 * (\mathrm{rR}\,\mathrm{mR}, \cos{\mathrm{th}}\, v), else a space. */
static const char *latex_factor_sep(int prev, int next, bool digit)
{
    if (digit)
        return " \\cdot ";
    /* \sin\alpha \cos\phi reads right: a function after a function
     * begins a factor of its own */
    if ((prev == F_OPCALL && next != F_OPCALL) || prev == F_WORDY ||
        next == F_WORDY)
        return "\\, ";
    return " ";
}

/* The factors of V that go above (DEN false) or below the line, in
 * print order, into OUT (V.n entries); returns how many. */
static size_t view_factors(const printer_t *p, mul_view_t v, bool den,
                           const expr_t **out)
{
    size_t k = 0;
    unsigned rl[16];
    unsigned *rank = v.n <= 16 ? rl : expr_xmalloc(v.n * sizeof *rank);
    for (size_t i = 0; i < v.n; i++) {
        if (is_den(v.f[i]) != den)
            continue;
        unsigned r = expr_rank(p->g, den ? v.f[i]->args[0] : v.f[i]);
        /* insertion: stable, factors are few */
        size_t j = k;
        while (j > 0 && rank[j - 1] > r) {
            rank[j] = rank[j - 1];
            out[j] = out[j - 1];
            j--;
        }
        rank[j] = r;
        out[j] = v.f[i];
        k++;
    }
    if (rank != rl)
        free(rank);
    return k;
}

static void emit_view(printer_t *p, mul_view_t v)
{
    bool neg = is_negative(v.coef.v);
    pnum_t c = neg ? pnum_neg(v.coef) : v.coef;
    const expr_t *fl[16];
    const expr_t **fs = v.n <= 16 ? fl : expr_xmalloc(v.n * sizeof *fs);
    size_t nnum = view_factors(p, v, false, fs);
    size_t nden_f = v.n - nnum;
    size_t nden = nden_f + (c.den > 1) + (c.pi < 0);
    /* -x*(a - b) reads x*(b - a): the sign goes into the one sum factor
     * when that leaves fewer minus signs */
    const expr_t *flip = NULL;
    if (neg && v.n >= 2) {
        size_t nsum = 0;
        for (size_t i = 0; i < nnum; i++)
            if (fs[i]->op == EXPR_ADD) {
                nsum++;
                flip = fs[i];
            }
        if (nsum == 1) {
            uint32_t k = 0;
            for (uint32_t i = 0; i < flip->nargs; i++)
                k += term_is_negative(flip->args[i]);
            if (flip->nargs - k > k)
                flip = NULL;
        } else {
            flip = NULL;
        }
        if (flip)
            neg = false;
    }
    if (neg)
        put(p, "-");
    /* LaTeX: a fraction coefficient before the factors, \frac{2}{5} m R^2,
     * unless other factors go below the line too */
    bool lead = p->latex && (c.den > 1 || c.pi < 0) && nden_f == 0 &&
                nnum > 0;
    if (lead) {
        put_pnum(p, c);
        put(p, " ");
        nden = 0;
    }
    /* LaTeX sets a fraction as \frac, or inline as text does (SLASH) */
    bool frac = p->latex && !p->slash;
    if (frac && nden > 0)
        put(p, "\\frac{");

    /* numerator */
    bool first = true;
    if (!lead && c.pi > 0) {
        pnum_t k = c;
        k.den = 1; /* its denominator goes below the line */
        put_pi(p, k);
        first = false;
    } else if (!lead && c.pi < 0 && (c.num != 1 || nnum == 0)) {
        put_number(p, (double)c.num); /* and pi below the line */
        first = false;
    } else if (!lead && (c.den > 1 ? c.num != 1 : c.v != 1)) {
        put_number(p, c.den > 1 ? (double)c.num : c.v);
        first = false;
    } else if (!lead && nnum == 0) {
        put_number(p, 1.0);
        first = false;
    }
    int need = frac && nden > 0 && nnum == 1 && first ? P_NONE : P_POW;
    /* what the last thing written was, for the LaTeX separators: a
     * number written counts as plain */
    int prev = F_PLAIN;
    for (size_t i = 0; i < nnum; i++) {
        int kind = p->latex ? factor_kind(p, fs[i]) : F_PLAIN;
        if (!first)
            put(p, !p->latex ? "*"
                             : latex_factor_sep(prev, kind,
                                                starts_with_digit(fs[i])));
        prev = kind;
        if (fs[i] == flip) {
            open_paren(p);
            emit_sum_signed(p, flip, true);
            close_paren(p);
        } else {
            emit(p, fs[i], need);
        }
        first = false;
    }
    if (nden == 0) {
        if (fs != fl)
            free(fs);
        return;
    }

    /* denominator */
    size_t k = view_factors(p, v, true, fs);
    if (frac)
        put(p, "}{");
    else
        put(p, "/");
    bool paren = !frac && nden > 1;
    if (paren)
        open_paren(p);
    first = true;
    if (c.den > 1 && !lead) {
        put_number(p, (double)c.den);
        first = false;
    }
    if (c.pi < 0 && !lead) {
        put(p, first ? "" : p->latex ? " " : "*");
        put(p, p->latex ? "\\pi" : "pi");
        first = false;
    }
    prev = F_PLAIN;
    for (size_t i = 0; i < k; i++) {
        int kind = p->latex ? factor_kind(p, fs[i]->args[0]) : F_PLAIN;
        if (!first)
            put(p, !p->latex ? "*"
                             : latex_factor_sep(prev, kind,
                                                starts_with_digit(
                                                    fs[i]->args[0])));
        prev = kind;
        if (frac && nden == 1 && fs[i]->args[1]->value == -1)
            emit(p, fs[i]->args[0], P_NONE);
        else
            emit_power_neg(p, fs[i]->args[0], fs[i]->args[1]);
        first = false;
    }
    if (paren)
        close_paren(p);
    if (frac)
        put(p, "}");
    if (fs != fl)
        free(fs);
}

static bool term_is_negative(const expr_t *t)
{
    if (t->op == EXPR_CONST)
        return is_negative(t->value);
    return t->op == EXPR_MUL && t->args[0]->op == EXPR_CONST &&
           is_negative(t->args[0]->value);
}

/* T negated when FLIP, else T itself, at precedence NEED (the sum's
 * printer gives the sign: a term it calls this for reads positive). */
static void emit_abs_signed(printer_t *p, const expr_t *t, int need,
                            bool flip)
{
    if (!flip) {
        emit(p, t, need);
        return;
    }
    if (t->op == EXPR_CONST) {
        put_pnum(p, pnum_neg(pnum_of(p->g, t)));
        return;
    }
    mul_view_t v = view_of(p, &t);
    v.coef = pnum_neg(v.coef);
    bool paren = prec_view(p, v) < need;
    if (paren)
        open_paren(p);
    emit_view(p, v);
    if (paren)
        close_paren(p);
}

/* A sum prints its terms in canonical order with the constant (which
 * sorts first) moved to the end, as polynomials are written (x + 1), and
 * the first positive term of that order first (a - b, not -b + a). */
static void emit_sum_signed(printer_t *p, const expr_t *e, bool negate)
{
    /* expr_print_terms marks the terms of the outermost sum only */
    size_t *marks = p->marks;
    p->marks = NULL;
    uint32_t n = e->nargs;
    uint32_t ol[16];
    uint32_t *order = n <= 16 ? ol : expr_xmalloc(n * sizeof *order);
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (e->args[i]->op != EXPR_CONST)
            order[k++] = i;
    for (uint32_t i = 0; i < n; i++)
        if (e->args[i]->op == EXPR_CONST)
            order[k++] = i;
    uint32_t first = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (term_is_negative(e->args[order[i]]) == negate) {
            first = i;
            break;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t at = i == 0 ? first : i <= first ? i - 1 : i;
        const expr_t *t = e->args[order[at]];
        bool minus = term_is_negative(t) != negate;
        if (marks)
            marks[p->nmarks++] = p->n;
        /* the term shown is -t when NEGATE; a minus before it shows
         * its absolute value, which is t when the shown term is -t */
        if (i == 0) {
            if (minus) {
                put(p, "-");
                emit_abs_signed(p, t, P_PROD, !negate);
            } else {
                emit_abs_signed(p, t, P_SUM, negate);
            }
            continue;
        }
        put(p, minus ? " - " : " + ");
        emit_abs_signed(p, t, P_PROD, minus ? !negate : negate);
    }
    if (order != ol)
        free(order);
    p->marks = marks;
}

static void emit_sum(printer_t *p, const expr_t *e)
{
    emit_sum_signed(p, e, false);
}

static const char *latex_function(expr_op_t op)
{
    switch (op) {
    case EXPR_SIN:
        return "\\sin";
    case EXPR_COS:
        return "\\cos";
    case EXPR_TAN:
        return "\\tan";
    case EXPR_ASIN:
        return "\\arcsin";
    case EXPR_ACOS:
        return "\\arccos";
    case EXPR_ATAN:
        return "\\arctan";
    case EXPR_ATAN2:
        return "\\operatorname{atan2}";
    case EXPR_SINH:
        return "\\sinh";
    case EXPR_COSH:
        return "\\cosh";
    case EXPR_TANH:
        return "\\tanh";
    case EXPR_EXP:
        return "\\exp";
    case EXPR_LOG:
        return "\\ln";
    case EXPR_SIGN:
        return "\\operatorname{sign}";
    case EXPR_MIN:
        return "\\min";
    case EXPR_MAX:
        return "\\max";
    default:
        return "\\operatorname{?}";
    }
}

/* The functions written as operators in LaTeX (\\sin\\theta, \\sin^{2}\\theta). */
static bool latex_operator(expr_op_t op)
{
    switch (op) {
    case EXPR_SIN:
    case EXPR_COS:
    case EXPR_TAN:
    case EXPR_SINH:
    case EXPR_COSH:
    case EXPR_TANH:
    case EXPR_LOG:
        return true;
    default:
        return false;
    }
}

/* \\sin\\theta, \\sin{x_{1}}, \\sin\\left(a + b\\right); with POWER (a
 * positive integer's text, or NULL) as \\sin^{2}\\theta. */
static void emit_operator(printer_t *p, const expr_t *e, const char *power)
{
    put(p, latex_function(e->op));
    if (power) {
        put(p, "^{");
        put(p, power);
        put(p, "}");
    }
    const expr_t *a = expr_unguarded(e->args[0]);
    if (a->op == EXPR_VAR) {
        put(p, "{");
        emit(p, a, P_NONE);
        put(p, "}");
        return;
    }
    open_paren(p);
    emit(p, a, P_NONE);
    close_paren(p);
}

static void emit_call(printer_t *p, const expr_t *e)
{
    if (p->latex && latex_operator(e->op)) {
        emit_operator(p, e, NULL);
        return;
    }
    if (p->latex && e->op == EXPR_SQRT) {
        put(p, "\\sqrt{");
        emit(p, e->args[0], P_NONE);
        put(p, "}");
        return;
    }
    if (p->latex && e->op == EXPR_ABS) {
        put(p, "\\left|");
        emit(p, e->args[0], P_NONE);
        put(p, "\\right|");
        return;
    }
    put(p, p->latex ? latex_function(e->op) : expr_op_name(e->op));
    open_paren(p);
    for (uint32_t i = 0; i < e->nargs; i++) {
        if (i)
            put(p, ", ");
        emit(p, e->args[i], P_NONE);
    }
    close_paren(p);
}

static void emit_latex_name(printer_t *p, const char *name);

static void emit(printer_t *p, const expr_t *e, int need)
{
    /* a guard prints as its value: the domain it keeps is no text (x/x
     * reads 1, and is still undefined at x = 0) */
    e = expr_unguarded(e);
    if (p->atom && p->atom(p->actx, e)) {
        put(p, p->latex ? "k_{99}" : "k99");
        return;
    }
    bool paren = prec_of(p, e) < need;
    if (paren)
        open_paren(p);
    switch (e->op) {
    case EXPR_CONST:
        put_pnum(p, pnum_of(p->g, e));
        break;
    case EXPR_VAR:
        if (p->latex && expr_var_latex(p->g, e->var))
            put(p, expr_var_latex(p->g, e->var));
        else if (p->latex)
            emit_latex_name(p, expr_var_name(p->g, e->var));
        else
            put(p, expr_var_name(p->g, e->var));
        break;
    case EXPR_ADD:
        emit_sum(p, e);
        break;
    case EXPR_MUL:
        emit_view(p, view_of(p, &e));
        break;
    case EXPR_POW:
        if (is_den(e)) {
            emit_view(p, view_of(p, &e));
            break;
        }
        if (p->latex && latex_operator(e->args[0]->op) &&
            e->args[1]->den == 1 && e->args[1]->num > 0) {
            char buf[24];
            snprintf(buf, sizeof buf, "%lld", (long long)e->args[1]->num);
            emit_operator(p, e->args[0], buf);
            break;
        }
        emit(p, e->args[0], P_ATOM);
        if (e->args[1]->op == EXPR_CONST) {
            /* x^0.5, x^(1/3); in LaTeX x^{1/3}, not a \frac up there */
            pnum_t ex = pnum_use(p->g, e->args[1], AS_EXPONENT);
            bool paren = ex.den > 1 || is_negative(ex.v) ||
                         (ex.pi && ex.num != 1);
            put(p, p->latex ? "^{" : paren ? "^(" : "^");
            if (ex.pi) {
                put_pi(p, ex);
            } else if (ex.den > 1) {
                char buf[48];
                snprintf(buf, sizeof buf, "%lld/%lld", (long long)ex.num,
                         (long long)ex.den);
                put(p, buf);
            } else {
                put_number(p, ex.v);
            }
            put(p, p->latex ? "}" : paren ? ")" : "");
        } else if (p->latex) {
            put(p, "^{");
            emit(p, e->args[1], P_NONE);
            put(p, "}");
        } else {
            put(p, "^");
            emit(p, e->args[1], P_POW);
        }
        break;
    default:
        emit_call(p, e);
        break;
    }
    if (paren)
        close_paren(p);
}

char *expr_to_text(const expr_graph_t *g, const expr_t *e)
{
    printer_t p = {g, false, NULL, 0, 0, NULL, 0, NULL, NULL, false};
    put(&p, "");
    emit(&p, e, P_NONE);
    return p.s;
}

char *expr_latex_name(const char *name)
{
    printer_t p = {NULL, true, NULL, 0, 0, NULL, 0, NULL, NULL, false};
    put(&p, "");
    emit_latex_name(&p, name);
    return p.s;
}

char *expr_to_latex(const expr_graph_t *g, const expr_t *e)
{
    printer_t p = {g, true, NULL, 0, 0, NULL, 0, NULL, NULL, false};
    put(&p, "");
    emit(&p, e, P_NONE);
    return p.s;
}

char *expr_to_latex_inline(const expr_graph_t *g, const expr_t *e)
{
    printer_t p = {g, true, NULL, 0, 0, NULL, 0, NULL, NULL, true};
    put(&p, "");
    emit(&p, e, P_NONE);
    return p.s;
}

char *expr_to_text_atoms(const expr_graph_t *g, const expr_t *e,
                         bool (*atom)(void *ctx, const expr_t *e), void *ctx)
{
    printer_t p = {g, false, NULL, 0, 0, NULL, 0, atom, ctx, false};
    put(&p, "");
    emit(&p, e, P_NONE);
    return p.s;
}

char **expr_print_terms(const expr_graph_t *g, const expr_t *e,
                        expr_form_t form, size_t *n)
{
    const expr_t *u = expr_unguarded(e);
    size_t nt = u->op == EXPR_ADD ? u->nargs : 1;
    printer_t p = {g, form != EXPR_FORM_TEXT, NULL, 0, 0, NULL, 0, NULL,
                   NULL, form == EXPR_FORM_LATEX_INLINE};
    p.marks = expr_xmalloc((nt + 1) * sizeof *p.marks);
    put(&p, "");
    if (u->op == EXPR_ADD) {
        emit_sum(&p, u); /* marks each term's start */
    } else {
        size_t *marks = p.marks;
        p.marks = NULL; /* no sum inside marks anything */
        emit(&p, u, P_NONE);
        p.marks = marks;
        p.marks[p.nmarks++] = 0;
    }
    char **out = expr_xmalloc((p.nmarks + 1) * sizeof *out);
    for (size_t i = 0; i < p.nmarks; i++) {
        size_t a = p.marks[i], b = i + 1 < p.nmarks ? p.marks[i + 1] : p.n;
        out[i] = expr_xmalloc(b - a + 1);
        memcpy(out[i], p.s + a, b - a);
        out[i][b - a] = '\0';
    }
    *n = p.nmarks;
    free(p.marks);
    free(p.s);
    return out;
}

/* ---- LaTeX names ------------------------------------------------------- */

static const char *const greek[] = {
    "alpha",   "beta",    "gamma",      "delta",  "epsilon", "varepsilon",
    "zeta",    "eta",     "theta",      "vartheta", "iota",  "kappa",
    "lambda",  "mu",      "nu",         "xi",     "pi",      "varpi",
    "rho",     "varrho",  "sigma",      "varsigma", "tau",   "upsilon",
    "phi",     "varphi",  "chi",        "psi",    "omega",   "Gamma",
    "Delta",   "Theta",   "Lambda",     "Xi",     "Pi",      "Sigma",
    "Upsilon", "Phi",     "Psi",        "Omega",  NULL};

static bool is_greek(const char *s, size_t n)
{
    for (const char *const *g = greek; *g; g++)
        if (strlen(*g) == n && strncmp(*g, s, n) == 0)
            return true;
    return false;
}

/* One part of a name: \theta, x, or \mathrm{abc}; '_' escaped. */
static void emit_name_part(printer_t *p, const char *s, size_t n, bool sub)
{
    if (is_greek(s, n)) {
        put(p, "\\");
        put_n(p, s, n);
        return;
    }
    bool roman = n > 1 && !sub;
    if (roman)
        put(p, "\\mathrm{");
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '_')
            put(p, "\\_");
        else
            put_n(p, s + i, 1);
    }
    if (roman)
        put(p, "}");
}

/* lambda(roll_x) -> \lambda_{\mathrm{roll\_x}}, lambda(roll[2]) ->
 * \lambda_{\mathrm{roll},2}: a multiplier named by its constraint. */
static bool emit_multiplier_name(printer_t *p, const char *name)
{
    size_t len = strlen(name);
    if (len < 9 || strncmp(name, "lambda(", 7) != 0 || name[len - 1] != ')')
        return false;
    const char *in = name + 7, *end = name + len - 1;
    const char *br = memchr(in, '[', (size_t)(end - in));
    put(p, "\\lambda_{\\mathrm{");
    for (const char *c = in; c < (br ? br : end); c++) {
        if (*c == '_')
            put(p, "\\_");
        else
            put_n(p, c, 1);
    }
    put(p, "}");
    if (br) {
        put(p, ",");
        for (const char *c = br + 1; c < end && *c != ']'; c++)
            put_n(p, c, 1);
    }
    put(p, "}");
    return true;
}

/* x -> x, theta -> \theta, x' -> \dot{x}, x'' -> \ddot{x}, x1 -> x_{1},
 * theta0' -> \dot{\theta}_{0}, x_tip -> x_{tip}. */
static void emit_latex_name(printer_t *p, const char *name)
{
    if (emit_multiplier_name(p, name))
        return;
    size_t len = strlen(name), primes = 0;
    while (primes < len && name[len - 1 - primes] == '\'')
        primes++;
    size_t core = len - primes, main_len = core, sub_at = core;
    const char *us = memchr(name, '_', core);
    if (us && us > name) {
        main_len = (size_t)(us - name);
        sub_at = main_len + 1;
    } else {
        size_t j = core;
        while (j > 0 && isdigit((unsigned char)name[j - 1]))
            j--;
        if (j > 0 && j < core) {
            main_len = j;
            sub_at = j;
        }
    }
    static const char *const dots[] = {"", "\\dot{", "\\ddot{", "\\dddot{",
                                       "\\ddddot{"};
    if (primes >= 1 && primes <= 4)
        put(p, dots[primes]);
    emit_name_part(p, name, main_len, false);
    if (primes >= 1 && primes <= 4)
        put(p, "}");
    else if (primes > 4) {
        char buf[32];
        snprintf(buf, sizeof buf, "^{(%zu)}", primes);
        put(p, buf);
    }
    if (sub_at < core) {
        put(p, "_{");
        emit_name_part(p, name + sub_at, core - sub_at, true);
        put(p, "}");
    }
}
