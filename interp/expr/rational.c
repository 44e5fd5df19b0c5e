/*
 * rational.c — the exact numbers of the expression graph (LANGUAGE.md
 * §7.1 "Exact numbers"): a constant node is a fraction num/den whenever
 * its value is one within the bounds below, so 2/5*2/5 is 4/25 and 0.16
 * is 4/25 too, and the printer writes fractions.
 *
 * The bounds: |num| and den at most 2^53 (EXPR_Q_MAX).  Within them both
 * are doubles exactly, so the value of the fraction, the double a node
 * holds and the tape reads, is one IEEE division: the correctly rounded
 * double of num/den.  A result that would leave the bounds (a sum or
 * product of fractions, an integer power) falls back to IEEE arithmetic
 * on the values, as all folding was before; that double becomes a node
 * through expr_q_double, which makes it a fraction again only when its
 * shortest decimal is one within the bounds (so the fallback shows as
 * that decimal, e.g. 8.225263339969959e-20 for (1/3)^40).
 *
 * Every double is read the same way (expr_q_double): an integer within
 * 2^53 is n/1, any other finite double is the fraction of its shortest
 * decimal that reads back to it (0.1 is 1/10, 0.16 is 4/25) when that
 * fits; else it stays a double.  So a literal and the same number
 * computed exactly (0.4 and 2/5) are one constant, and a constant's
 * value is always exactly the double its fraction rounds to.  -0, the
 * infinities and NaN are doubles only (a fraction has no sign of zero).
 *
 * Also here: expr_format_number, the shortest decimal of a double, which
 * reading doubles as fractions starts from.
 *
 * Must not: allocate, print to a stream, or know the graph.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp/expr/expr_impl.h"

#define EXPR_Q_MAX ((int64_t)1 << 53)

/* ---- the shortest decimal ---------------------------------------------- */

/* The P significant digits of |V| rounded to nearest, into C (P chars),
 * and their decimal exponent, given D, V's 17 digits, and E, theirs
 * (snprintf "%.16e", exact in glibc).  Rounding D again gives what
 * rounding V gives except where D's digits after the P-th are exactly
 * 5000…: a P-digit midpoint has at most 17 digits, so V and D lie on
 * the same side of it unless D is the midpoint itself; there snprintf
 * rounds V. */
static int fmt_round(double v, const char *d, int e, int p, char *c)
{
    if (p >= 17) {
        memcpy(c, d, 17);
        return e;
    }
    bool tie = d[p] == '5';
    for (int i = p + 1; i < 17 && tie; i++)
        tie = d[i] == '0';
    if (tie) {
        char t[40];
        snprintf(t, sizeof t, "%.*e", p - 1, fabs(v));
        int j = 0;
        for (const char *s = t; *s != 'e'; s++)
            if (*s != '.')
                c[j++] = *s;
        return atoi(strchr(t, 'e') + 1);
    }
    memcpy(c, d, (size_t)p);
    if (d[p] >= '5') {
        int i = p - 1;
        while (i >= 0 && c[i] == '9')
            c[i--] = '0';
        if (i < 0) { /* 99…9 carried into a new first digit */
            c[0] = '1';
            return e + 1;
        }
        c[i]++;
    }
    return e;
}

/* V's P digits C with exponent X as printf's "%.Pg" writes them, with
 * the exponent's '+' and leading zeros left out — into BUF (at least 40
 * chars). */
static void fmt_g(double v, const char *c, int x, int p, char *buf)
{
    int k = p;
    while (k > 1 && c[k - 1] == '0')
        k--;
    char *o = buf;
    if (v < 0)
        *o++ = '-';
    if (x < -4 || x >= p) {
        *o++ = c[0];
        if (k > 1) {
            *o++ = '.';
            memcpy(o, c + 1, (size_t)(k - 1));
            o += k - 1;
        }
        sprintf(o, "e%d", x);
        return;
    }
    if (x < 0) {
        *o++ = '0';
        *o++ = '.';
        for (int i = -1; i > x; i--)
            *o++ = '0';
        memcpy(o, c, (size_t)k);
        o += k;
    } else {
        for (int i = 0; i <= x; i++)
            *o++ = i < k ? c[i] : '0';
        if (k > x + 1) {
            *o++ = '.';
            memcpy(o, c + x + 1, (size_t)(k - x - 1));
            o += k - x - 1;
        }
    }
    *o = '\0';
}

/* Whether V's P digits read back as V; the text in BUF. */
static bool fmt_reads_back(double v, const char *d, int e, int p, char *buf)
{
    char c[17];
    int x = fmt_round(v, d, e, p, c);
    fmt_g(v, c, x, p, buf);
    return strtod(buf, NULL) == v;
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
        /* The fewest digits that read back, as "%.Pg" writes them.
         * Whether P digits read back is monotone in P where v's rounding
         * interval is symmetric: the nearest (P+1)-digit decimal is no
         * farther from v than the nearest P-digit one, which is also a
         * (P+1)-digit decimal.  So a bisection (at a power of two, whose
         * interval is narrower below, every P in turn), over the digits
         * of one snprintf rounded here (fmt_round): a sweep's table, which
         * its workers cannot share, spent 12 % of its time in five
         * snprintf calls a number (doc/scale.md).  Computed values need
         * 15 to 17 digits, so 15 is tried first; D's digits without its
         * trailing zeros always read back. */
        char t[40], d[17], out[48];
        snprintf(t, sizeof t, "%.16e", fabs(v));
        d[0] = t[0];
        memcpy(d + 1, t + 2, 16);
        int e = atoi(t + 19);
        int hi = 17;
        while (hi > 1 && d[hi - 1] == '0')
            hi--;
        int ex;
        bool pow2 = fabs(frexp(v, &ex)) == 0.5;
        int lo = 1;
        if (pow2) {
            while (lo < hi && !fmt_reads_back(v, d, e, lo, out))
                lo++;
        } else {
            if (hi > 15) {
                if (fmt_reads_back(v, d, e, 15, out))
                    hi = 15;
                else
                    lo = 16;
            }
            while (lo < hi) {
                int mid = (lo + hi) / 2;
                if (fmt_reads_back(v, d, e, mid, out))
                    hi = mid;
                else
                    lo = mid + 1;
            }
        }
        char c[17];
        int x = fmt_round(v, d, e, lo, c);
        fmt_g(v, c, x, lo, out);
        snprintf(buf, size, "%s", out);
    }
    return buf;
}

/* ---- fractions --------------------------------------------------------- */


static int64_t gcd64(int64_t a, int64_t b)
{
    if (a < 0)
        a = -a;
    if (b < 0)
        b = -b;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static expr_q_t q_plain(double v)
{
    return (expr_q_t){0, 0, v};
}

/* NUM/DEN reduced, or den 0 when out of bounds or DEN is 0.  The
 * arguments are 128-bit so the callers can pass exact products. */
static bool q_reduce(__int128 num, __int128 den, expr_q_t *out)
{
    if (den == 0)
        return false;
    if (den < 0) {
        num = -num;
        den = -den;
    }
    __int128 a = num < 0 ? -num : num, b = den;
    while (b) {
        __int128 t = a % b;
        a = b;
        b = t;
    }
    if (a > 1) {
        num /= a;
        den /= a;
    }
    if (num > EXPR_Q_MAX || num < -EXPR_Q_MAX || den > EXPR_Q_MAX)
        return false;
    out->num = (int64_t)num;
    out->den = (int64_t)den;
    /* both exact in double: one correctly rounded division */
    out->value = (double)out->num / (double)out->den;
    return true;
}

expr_q_t expr_q_double(double v)
{
    if (!isfinite(v) || (v == 0 && signbit(v)))
        return q_plain(v);
    expr_q_t q;
    if (v >= -(double)EXPR_Q_MAX && v <= (double)EXPR_Q_MAX &&
        v == trunc(v)) {
        q.num = (int64_t)v;
        q.den = 1;
        q.value = v;
        return q;
    }
    /* the shortest decimal that reads back: digits d1...dk and a
     * decimal exponent, as expr_format_number writes it */
    char buf[40];
    expr_format_number(v, buf, sizeof buf);
    const char *s = buf;
    bool neg = *s == '-';
    if (neg)
        s++;
    int64_t digits = 0;
    int ndig = 0, scale = 0;
    bool point = false;
    for (; *s && *s != 'e'; s++) {
        if (*s == '.') {
            point = true;
            continue;
        }
        if (ndig >= 17)
            return q_plain(v);
        digits = digits * 10 + (*s - '0');
        if (digits)
            ndig++;
        if (point)
            scale--;
    }
    if (*s == 'e')
        scale += atoi(s + 1);
    if (scale < -18 || scale > 18)
        return q_plain(v);
    __int128 num = neg ? -(__int128)digits : digits, den = 1;
    for (; scale > 0; scale--)
        num *= 10;
    for (; scale < 0; scale++)
        den *= 10;
    if (!q_reduce(num, den, &q) || q.value != v)
        return q_plain(v);
    return q;
}

expr_q_t expr_q_of(const expr_t *c)
{
    return (expr_q_t){c->num, c->den, c->value};
}

/* R, the exact result whose IEEE counterpart is IEEE: a zero keeps the
 * sign IEEE gives it (-1*0 is -0, as folding always gave: atan2(-0, -1)
 * is not atan2(0, -1)). */
static expr_q_t q_signed_zero(expr_q_t r, double ieee)
{
    return r.num == 0 && signbit(ieee) ? q_plain(ieee) : r;
}

expr_q_t expr_q_add(expr_q_t a, expr_q_t b)
{
    expr_q_t r;
    if (a.den && b.den &&
        q_reduce((__int128)a.num * b.den + (__int128)b.num * a.den,
                 (__int128)a.den * b.den, &r))
        return q_signed_zero(r, a.value + b.value);
    return expr_q_double(a.value + b.value);
}

expr_q_t expr_q_mul(expr_q_t a, expr_q_t b)
{
    expr_q_t r;
    if (a.den && b.den &&
        q_reduce((__int128)a.num * b.num, (__int128)a.den * b.den, &r))
        return q_signed_zero(r, a.value * b.value);
    return expr_q_double(a.value * b.value);
}

bool expr_q_pow(expr_q_t a, double n, expr_q_t *out)
{
    if (!a.den || !expr_is_int(n) || fabs(n) > 64 || (a.num == 0 && n < 0))
        return false;
    expr_q_t r = {1, 1, 1.0}, base = a;
    if (n < 0) {
        if (!q_reduce(a.den, a.num, &base))
            return false;
        n = -n;
    }
    for (long k = (long)n; k > 0; k--)
        if (!q_reduce((__int128)r.num * base.num, (__int128)r.den * base.den,
                      &r))
            return false;
    *out = r;
    return true;
}

bool expr_q_is(expr_q_t a, int64_t num, int64_t den)
{
    return a.den == den && a.num == num;
}

int64_t expr_q_gcd(int64_t a, int64_t b)
{
    return gcd64(a, b);
}
