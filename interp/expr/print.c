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
 *     negative constant exponent go below the line (a/(b*c), 1/x^2), and a
 *     coefficient equal to p*(1/q) in double arithmetic for small q prints
 *     as p.../q (m*x'^2/2), which is exactly what the parser rebuilds;
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

/* Removes '+' and leading zeros from the exponent of %g output. */
static void tidy_exponent(char *s)
{
    char *e = strchr(s, 'e');
    if (!e)
        return;
    char *src = e + 1, *dst = e + 1;
    if (*src == '+')
        src++;
    else if (*src == '-')
        *dst++ = *src++;
    while (*src == '0' && src[1] != '\0')
        src++;
    memmove(dst, src, strlen(src) + 1);
}

const char *expr_format_number(double v, char *buf, size_t size)
{
    if (isnan(v))
        snprintf(buf, size, "nan");
    else if (isinf(v))
        snprintf(buf, size, v > 0 ? "inf" : "-inf");
    else if (v == 0)
        snprintf(buf, size, signbit(v) ? "-0" : "0");
    else if (fabs(v) < 1e15 && v == trunc(v))
        snprintf(buf, size, "%.0f", v);
    else {
        for (int p = 1; p <= 17; p++) {
            snprintf(buf, size, "%.*g", p, v);
            if (strtod(buf, NULL) == v)
                break;
        }
        tidy_exponent(buf);
    }
    return buf;
}

/* ---- output buffer ----------------------------------------------------- */

typedef struct printer {
    const expr_graph_t *g;
    bool latex;
    char *s;
    size_t n, cap;
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
    double coef;
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

static mul_view_t view_of(const expr_t *const *e)
{
    const expr_t *m = *e;
    if (m->op == EXPR_MUL && m->args[0]->op == EXPR_CONST)
        return (mul_view_t){m->args[0]->value, m->args + 1, m->nargs - 1};
    if (m->op == EXPR_MUL)
        return (mul_view_t){1.0, m->args, m->nargs};
    return (mul_view_t){1.0, e, 1};
}

/* Coefficient C (> 0) as P/Q with P*(1/Q) == C in double arithmetic, as
 * the constructors fold "P*x/Q"; Q = 1 when no small Q fits. */
static void coef_fraction(double c, double *num, int *den)
{
    *num = c;
    *den = 1;
    if (!isfinite(c) || c == trunc(c))
        return;
    for (int q = 2; q <= 12; q++) {
        double pq = nearbyint(c * q);
        if (pq >= 1 && pq <= 1000 && pq * (1.0 / q) == c) {
            *num = pq;
            *den = q;
            return;
        }
    }
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
    size_t nden = 0;
    for (size_t i = 0; i < v.n; i++)
        nden += is_den(v.f[i]);
    if (nden > 0)
        return P_PROD;
    if (fabs(v.coef) == 1 && v.n == 1)
        return is_negative(v.coef) ? P_UNARY : prec_of(p, v.f[0]);
    return P_PROD;
}

static int prec_of(const printer_t *p, const expr_t *e)
{
    e = expr_unguarded(e);
    switch (e->op) {
    case EXPR_CONST:
        if (is_negative(e->value))
            return P_UNARY;
        if (p->latex && !latex_number_is_atom(e->value))
            return P_PROD;
        return P_ATOM;
    case EXPR_ADD:
        return P_SUM;
    case EXPR_MUL:
        return prec_view(p, view_of(&e));
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

/* Base^exponent with a numeric exponent (a denominator factor). */
static void emit_power_num(printer_t *p, const expr_t *base, double ex)
{
    if (ex == 1) {
        emit(p, base, P_POW);
        return;
    }
    emit(p, base, P_ATOM);
    put(p, p->latex ? "^{" : "^");
    put_number(p, ex);
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

static void emit_view(printer_t *p, mul_view_t v)
{
    bool neg = is_negative(v.coef);
    double num;
    int den;
    coef_fraction(fabs(v.coef), &num, &den);
    size_t nnum = 0, nden = den > 1;
    for (size_t i = 0; i < v.n; i++) {
        if (is_den(v.f[i]))
            nden++;
        else
            nnum++;
    }
    if (neg)
        put(p, "-");
    if (p->latex && nden > 0)
        put(p, "\\frac{");

    /* numerator */
    bool first = true;
    if (num != 1 || nnum == 0) {
        put_number(p, num);
        first = false;
    }
    int need = p->latex && nden > 0 && nnum == 1 && num == 1 ? P_NONE
                                                             : P_POW;
    for (size_t i = 0; i < v.n; i++) {
        if (is_den(v.f[i]))
            continue;
        if (!first)
            put(p, !p->latex ? "*"
                   : starts_with_digit(v.f[i]) ? " \\cdot "
                                               : " ");
        emit(p, v.f[i], need);
        first = false;
    }
    if (nden == 0)
        return;

    /* denominator */
    if (p->latex)
        put(p, "}{");
    else
        put(p, "/");
    bool paren = !p->latex && nden > 1;
    if (paren)
        put(p, "(");
    first = true;
    if (den > 1) {
        put_number(p, den);
        first = false;
    }
    for (size_t i = 0; i < v.n; i++) {
        if (!is_den(v.f[i]))
            continue;
        if (!first)
            put(p, !p->latex ? "*"
                   : starts_with_digit(v.f[i]->args[0]) ? " \\cdot "
                                                        : " ");
        double ex = -v.f[i]->args[1]->value;
        if (p->latex && nden == 1 && ex == 1)
            emit(p, v.f[i]->args[0], P_NONE);
        else
            emit_power_num(p, v.f[i]->args[0], ex);
        first = false;
    }
    if (paren)
        put(p, ")");
    if (p->latex)
        put(p, "}");
}

static bool term_is_negative(const expr_t *t)
{
    if (t->op == EXPR_CONST)
        return is_negative(t->value);
    return t->op == EXPR_MUL && t->args[0]->op == EXPR_CONST &&
           is_negative(t->args[0]->value);
}

/* |T| for a negative term T, at precedence NEED. */
static void emit_abs(printer_t *p, const expr_t *t, int need)
{
    if (t->op == EXPR_CONST) {
        put_number(p, -t->value);
        return;
    }
    mul_view_t v = view_of(&t);
    v.coef = -v.coef;
    bool paren = prec_view(p, v) < need;
    if (paren)
        open_paren(p);
    emit_view(p, v);
    if (paren)
        close_paren(p);
}

static void emit_sum(printer_t *p, const expr_t *e)
{
    uint32_t first = 0;
    for (uint32_t i = 0; i < e->nargs; i++) {
        if (!term_is_negative(e->args[i])) {
            first = i;
            break;
        }
    }
    emit(p, e->args[first], P_SUM);
    for (uint32_t i = 0; i < e->nargs; i++) {
        if (i == first)
            continue;
        const expr_t *t = e->args[i];
        if (term_is_negative(t)) {
            put(p, " - ");
            emit_abs(p, t, P_PROD);
        } else {
            put(p, " + ");
            emit(p, t, P_PROD);
        }
    }
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

static void emit_call(printer_t *p, const expr_t *e)
{
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
    bool paren = prec_of(p, e) < need;
    if (paren)
        open_paren(p);
    switch (e->op) {
    case EXPR_CONST:
        put_number(p, e->value);
        break;
    case EXPR_VAR:
        if (p->latex)
            emit_latex_name(p, expr_var_name(p->g, e->var));
        else
            put(p, expr_var_name(p->g, e->var));
        break;
    case EXPR_ADD:
        emit_sum(p, e);
        break;
    case EXPR_MUL:
        emit_view(p, view_of(&e));
        break;
    case EXPR_POW:
        if (is_den(e)) {
            emit_view(p, view_of(&e));
            break;
        }
        emit(p, e->args[0], P_ATOM);
        if (p->latex) {
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
    printer_t p = {g, false, NULL, 0, 0};
    put(&p, "");
    emit(&p, e, P_NONE);
    return p.s;
}

char *expr_to_latex(const expr_graph_t *g, const expr_t *e)
{
    printer_t p = {g, true, NULL, 0, 0};
    put(&p, "");
    emit(&p, e, P_NONE);
    return p.s;
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

/* x -> x, theta -> \theta, x' -> \dot{x}, x'' -> \ddot{x}, x1 -> x_{1},
 * theta0' -> \dot{\theta}_{0}, x_tip -> x_{tip}. */
static void emit_latex_name(printer_t *p, const char *name)
{
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
