/*
 * layout.c — widths of LaTeX formulas and rows broken into lines
 * (layout.h).
 *
 * The width of a formula is read off the LaTeX that print.c writes, a
 * small vocabulary: letters and digits, + - = and the other relations,
 * \frac, \sqrt, \left( \right), scripts, \dot and friends, \mathrm and
 * \text, the operator names (\sin), Greek letters, spacing commands and
 * pmatrix.  Each glyph counts with its advance width in Computer Modern
 * at 10 pt (math italic for letters, roman inside \mathrm and for the
 * operator names; cmmi10 and cmr10 metrics, rounded up), binary
 * operators and relations with the medium and thick spaces TeX puts
 * around them, scripts at 7/10 of the size, and everything times 1.06:
 * an estimate from above (checked against TeX's own widths in
 * tests/latex.sh, which fails on any overfull line).
 *
 * Must not: change the graph; print to a stream.
 */
#include "interp/expr/layout.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"

/* ---- widths -------------------------------------------------------------- */

/* cmmi10 (math italic) and cmr10 (roman) advance widths of a..z, A..Z,
 * in points at 10 pt. */
static const double italic_lower[26] = {
    5.29, 4.29, 4.33, 5.20, 4.66, 4.90, 4.77, 5.77, 3.45, 4.12, 5.21, 2.98,
    8.78, 6.00, 4.85, 5.03, 4.46, 4.51, 4.69, 3.61, 5.72, 4.85, 7.16, 5.72,
    4.90, 4.65};
static const double italic_upper[26] = {
    7.50, 7.59, 7.15, 8.28, 7.38, 6.43, 7.86, 8.31, 4.40, 5.54, 8.49, 6.81,
    9.70, 8.03, 7.63, 6.42, 7.90, 7.59, 6.13, 5.84, 6.83, 5.83, 9.44, 8.28,
    5.81, 6.82};
static const double roman_lower[26] = {
    5.00, 5.56, 4.44, 5.56, 4.44, 3.06, 5.00, 5.56, 2.78, 3.06, 5.28, 2.78,
    8.33, 5.56, 5.00, 5.56, 5.28, 3.92, 3.94, 3.89, 5.56, 5.28, 7.22, 5.28,
    5.28, 4.44};
static const double roman_upper[26] = {
    7.50, 7.08, 7.22, 7.64, 6.81, 6.53, 7.85, 7.50, 3.61, 5.14, 7.78, 6.25,
    9.17, 7.50, 7.78, 6.81, 7.78, 7.36, 5.56, 7.22, 7.50, 7.50, 10.28, 7.50,
    7.50, 6.11};

#define W_DIGIT 5.0
#define W_BIN 12.22    /* + - \cdot-like binary operators: 7.78 + 2 × 2.22 */
#define W_UNARY 7.78   /* a sign */
#define W_REL 13.34    /* = and the relations: 7.78 + 2 × 2.78 */
#define W_PAREN 3.89
#define W_BRACKET 2.78
#define W_COMMA 4.45   /* 2.78 and the thin space after it */
#define W_THIN 1.67
#define W_GREEK 6.0
#define W_GREEK_UPPER 7.6
#define SAFETY 1.08

static double letter(int c, bool roman)
{
    const char *lower = "abcdefghijklmnopqrstuvwxyz";
    const char *upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    const char *at;
    if (c > 0 && (at = strchr(lower, c)) != NULL) {
        size_t k = (size_t)(at - lower);
        return roman ? roman_lower[k] : italic_lower[k];
    }
    if (c > 0 && (at = strchr(upper, c)) != NULL) {
        size_t k = (size_t)(at - upper);
        return roman ? roman_upper[k] : italic_upper[k];
    }
    if (c >= '0' && c <= '9')
        return W_DIGIT;
    return 5.0;
}

/* The parser's position and what the last thing read was (a sign after
 * an operand is a binary operator, elsewhere a unary one). */
typedef struct tw {
    const char *p;
    bool operand;
} tw_t;

static double tw_seq(tw_t *t, double scale, char stop);

/* One argument: a {group}, a \command (its width) or one character. */
static double tw_arg(tw_t *t, double scale, bool roman);

static bool is_command(const char *name, size_t n, const char *const *list)
{
    for (const char *const *l = list; *l; l++)
        if (strlen(*l) == n && strncmp(*l, name, n) == 0)
            return true;
    return false;
}

static const char *const operators[] = {
    "sin",  "cos",  "tan",  "cot",  "sec",  "csc",  "arcsin", "arccos",
    "arctan", "sinh", "cosh", "tanh", "exp", "ln", "log", "det", "min",
    "max", "lim", "sup", "inf", NULL};
static const char *const greek_lower[] = {
    "alpha", "beta",  "gamma", "delta",   "epsilon", "varepsilon", "zeta",
    "eta",   "theta", "vartheta", "iota", "kappa",   "lambda",     "mu",
    "nu",    "xi",    "pi",    "varpi",   "rho",     "varrho",     "sigma",
    "varsigma", "tau", "upsilon", "phi",  "varphi",  "chi",        "psi",
    "omega", "ell",   "partial", "nabla", NULL};
static const char *const greek_upper[] = {
    "Gamma", "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma", "Upsilon",
    "Phi",   "Psi",   "Omega", NULL};
static const char *const relations[] = {
    "leq", "geq", "neq", "le", "ge", "ne", "approx", "equiv", "to", "sim",
    "mapsto", "rightarrow", "leftarrow", "in", NULL};

/* Text in a roman font: \mathrm{…}, \text{…}, \operatorname{…}. */
static double tw_roman(tw_t *t, double scale, bool text)
{
    double w = 0;
    if (*t->p != '{')
        return tw_arg(t, scale, true);
    t->p++;
    int depth = 0;
    while (*t->p && (*t->p != '}' || depth > 0)) {
        char c = *t->p;
        if (c == '{') {
            depth++;
            t->p++;
        } else if (c == '}') {
            depth--;
            t->p++;
        } else if (c == '\\') {
            /* \_ and the like: one glyph; a command: its argument's
             * width is counted as it comes */
            t->p++;
            if (isalpha((unsigned char)*t->p)) {
                const char *s = t->p;
                while (isalpha((unsigned char)*t->p))
                    t->p++;
                size_t n = (size_t)(t->p - s);
                w += (n == 1 ? 5.0 : 3.33) * scale;
            } else if (*t->p) {
                t->p++;
                w += 5.0 * scale;
            }
        } else if (c == '$') {
            t->p++; /* math inside \text: measured as text */
        } else {
            w += (c == ' ' ? (text ? 3.33 : 0) : letter(c, true)) * scale;
            t->p++;
        }
    }
    if (*t->p == '}')
        t->p++;
    t->operand = true;
    return w;
}

/* \begin{pmatrix} … \end{pmatrix}: the widest entry of each column, the
 * column separation and the parentheses. */
static double tw_matrix(tw_t *t, double scale)
{
    double col[64] = {0};
    size_t c = 0, ncol = 0;
    for (;;) {
        tw_t cell = {t->p, false};
        double w = tw_seq(&cell, scale, '&');
        t->p = cell.p;
        if (c < 64 && w > col[c])
            col[c] = w;
        if (c + 1 > ncol)
            ncol = c + 1;
        if (*t->p == '&') {
            t->p++;
            c++;
            continue;
        }
        if (strncmp(t->p, "\\\\", 2) == 0) {
            t->p += 2;
            c = 0;
            continue;
        }
        break; /* \end{…} or the end */
    }
    if (strncmp(t->p, "\\end{", 5) == 0) {
        const char *e = strchr(t->p, '}');
        t->p = e ? e + 1 : t->p + strlen(t->p);
    }
    double w = 2 * 7.5 * scale; /* the parentheses, stretched */
    for (size_t i = 0; i < ncol && i < 64; i++)
        w += col[i] + 10.0 * scale; /* 2 \arraycolsep */
    t->operand = true;
    return w;
}

/* A control sequence: the backslash read, T at the name. */
static double tw_command(tw_t *t, double scale)
{
    if (!isalpha((unsigned char)*t->p)) {
        char c = *t->p ? *t->p++ : '\0';
        switch (c) {
        case ',':
            return W_THIN * scale;
        case ':':
            return 2.22 * scale;
        case ';':
            return 2.78 * scale;
        case '!':
            return -W_THIN * scale;
        case ' ':
            return 3.33 * scale;
        case '\\':
            return 0; /* a line break: the caller measures lines */
        case '{':
        case '}':
            t->operand = c == '}';
            return 5.0 * scale;
        default:
            t->operand = true;
            return 5.0 * scale;
        }
    }
    const char *s = t->p;
    while (isalpha((unsigned char)*t->p))
        t->p++;
    size_t n = (size_t)(t->p - s);
#define IS(lit) (n == sizeof lit - 1 && strncmp(s, lit, n) == 0)
    if (IS("frac") || IS("dfrac") || IS("tfrac")) {
        double f = IS("tfrac") ? 0.7 : 1.0;
        tw_t a = *t;
        double wn = tw_arg(&a, scale * f, false);
        double wd = tw_arg(&a, scale * f, false);
        t->p = a.p;
        t->operand = true;
        return (wn > wd ? wn : wd) + 2.4 * scale;
    }
    if (IS("sqrt")) {
        double w = tw_arg(t, scale, false);
        t->operand = true;
        return w + 8.33 * scale;
    }
    if (IS("dot") || IS("ddot") || IS("dddot") || IS("ddddot") ||
        IS("hat") || IS("bar") || IS("tilde") || IS("vec") ||
        IS("overline") || IS("mathit") || IS("boldsymbol") || IS("mathbf"))
        return tw_arg(t, scale, false) + 0.3 * scale;
    if (IS("mathrm") || IS("operatorname") || IS("textrm")) {
        double w = tw_roman(t, scale, false);
        return w + (IS("operatorname") ? W_THIN * scale : 0);
    }
    if (IS("textbf")) /* bold glyphs are a tenth wider */
        return 1.1 * tw_roman(t, scale, true);
    if (IS("text") || IS("textit") || IS("mbox"))
        return tw_roman(t, scale, true);
    if (IS("left") || IS("right") || IS("bigl") || IS("bigr") ||
        IS("Bigl") || IS("Bigr")) {
        bool open = s[0] == 'l' || s[n - 1] == 'l';
        double w = 0;
        if (*t->p == '\\') {
            t->p++;
            if (*t->p == '|' || *t->p == '{' || *t->p == '}')
                t->p++;
            else
                while (isalpha((unsigned char)*t->p))
                    t->p++;
            w = 5.0;
        } else if (*t->p) {
            char d = *t->p++;
            w = d == '.' ? 1.2 : d == '(' || d == ')' ? 4.6 : 3.4;
        }
        t->operand = !open;
        return w * scale;
    }
    if (IS("begin")) {
        const char *e = strchr(t->p, '}');
        bool matrix = e && (strncmp(t->p, "{pmatrix}", 9) == 0 ||
                            strncmp(t->p, "{matrix}", 8) == 0 ||
                            strncmp(t->p, "{bmatrix}", 9) == 0);
        t->p = e ? e + 1 : t->p + strlen(t->p);
        return matrix ? tw_matrix(t, scale) : 0;
    }
    if (IS("end")) {
        const char *e = strchr(t->p, '}');
        t->p = e ? e + 1 : t->p + strlen(t->p);
        return 0;
    }
    if (IS("cdot") || IS("times") || IS("pm") || IS("mp")) {
        t->operand = false;
        return (IS("cdot") ? 7.22 : W_BIN) * scale;
    }
    if (IS("quad"))
        return 10.0 * scale;
    if (IS("qquad"))
        return 20.0 * scale;
    if (IS("infty")) {
        t->operand = true;
        return 10.0 * scale;
    }
    if (IS("dots") || IS("ldots") || IS("cdots")) {
        t->operand = true;
        return 13.4 * scale;
    }
    if (IS("displaybreak") || IS("allowdisplaybreaks") || IS("nonumber") ||
        IS("notag") || IS("displaystyle") || IS("textstyle"))
        return 0;
    if (is_command(s, n, relations)) {
        t->operand = false;
        return W_REL * scale;
    }
    if (is_command(s, n, operators)) {
        double w = 0;
        for (size_t i = 0; i < n; i++)
            w += letter(s[i], true);
        t->operand = false; /* its argument follows */
        return (w + W_THIN) * scale;
    }
    t->operand = true;
    if (is_command(s, n, greek_lower))
        return W_GREEK * scale;
    if (is_command(s, n, greek_upper))
        return W_GREEK_UPPER * scale;
    return 7.0 * scale; /* an unknown symbol */
#undef IS
}

static double tw_arg(tw_t *t, double scale, bool roman)
{
    while (*t->p == ' ')
        t->p++;
    if (*t->p == '{') {
        t->p++;
        bool op = t->operand;
        t->operand = false;
        double w = tw_seq(t, scale, '}');
        if (*t->p == '}')
            t->p++;
        t->operand = op || w > 0;
        return w;
    }
    if (*t->p == '\\') {
        t->p++;
        return tw_command(t, scale);
    }
    if (!*t->p)
        return 0;
    char c = *t->p++;
    t->operand = true;
    return letter(c, roman) * scale;
}

/* A sequence up to STOP ('}', '&', or '\0'); stops before a "\\\\" too
 * when STOP is '&' (a matrix row ends). */
static double tw_seq(tw_t *t, double scale, char stop)
{
    double w = 0;
    while (*t->p && *t->p != stop) {
        char c = *t->p;
        if (stop == '&' && strncmp(t->p, "\\\\", 2) == 0)
            break;
        if (stop == '&' && strncmp(t->p, "\\end{", 5) == 0)
            break;
        if (c == '}' && stop != '}') {
            t->p++;
            continue;
        }
        if (c == '%') {
            while (*t->p && *t->p != '\n')
                t->p++;
            continue;
        }
        if (c == '^' || c == '_') {
            t->p++;
            bool op = t->operand;
            double sub = scale > 0.75 ? 0.7 : 0.5;
            w += tw_arg(t, scale * sub / (scale > 0.75 ? 1.0 : 0.7), false);
            t->operand = op;
            continue;
        }
        if (c == '\\') {
            t->p++;
            w += tw_command(t, scale);
            continue;
        }
        if (c == '{') {
            t->p++;
            bool op = t->operand;
            t->operand = false;
            double g = tw_seq(t, scale, '}');
            if (*t->p == '}')
                t->p++;
            w += g;
            /* a group, even {} , is an atom: a sign after it is binary */
            (void)op;
            t->operand = true;
            continue;
        }
        t->p++;
        switch (c) {
        case ' ':
        case '\n':
        case '&':
        case '~':
            if (c == '~')
                w += 3.33 * scale;
            break;
        case '+':
        case '-':
            w += (t->operand ? W_BIN : W_UNARY) * scale;
            t->operand = false;
            break;
        case '=':
        case '<':
        case '>':
            w += W_REL * scale;
            t->operand = false;
            break;
        case '(':
        case ')':
            w += W_PAREN * scale;
            t->operand = c == ')';
            break;
        case '[':
        case ']':
        case '|':
            w += W_BRACKET * scale;
            t->operand = c != '[';
            break;
        case ',':
        case ';':
            w += W_COMMA * scale;
            t->operand = false;
            break;
        case '/':
            w += 5.0 * scale;
            t->operand = false;
            break;
        case '\'':
        case '.':
        case '!':
            w += 2.78 * scale;
            t->operand = true;
            break;
        default:
            w += letter(c, false) * scale;
            t->operand = true;
            break;
        }
    }
    return w;
}

/* The width of S; AFTER_OPERAND: S continues a formula after an operand
 * (a sign at its start is a binary operator, with its spaces). */
static double width_in(const char *s, bool after_operand)
{
    tw_t t = {s, after_operand};
    double w = 0;
    /* the widest of its lines (a string may hold several) */
    for (;;) {
        double line = tw_seq(&t, 1.0, '\0');
        if (line > w)
            w = line;
        if (!*t.p)
            break;
    }
    return w * SAFETY;
}

double layout_width(const char *s)
{
    return width_in(s, false);
}

/* ---- rows broken into lines -------------------------------------------- */

/* The terms PIECE (N of them) joined into lines: a line takes terms
 * while they fit, the first FIRST_ROOM wide, the others REST_ROOM; SEP
 * between lines.  Text (!LATEX) measures characters and keeps the
 * operator at the end of a line, so that the line reads as continued.
 * *FITS (may be NULL) false when a term does not fit a line alone. */
static char *join_lines(char **piece, size_t n, double first_room,
                        double rest_room, bool latex, const char *sep,
                        bool *fits)
{
    strbuf_t b;
    strbuf_init(&b);
    double room = first_room, used = 0;
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        const char *t = piece[i];
        /* a term after the first begins with its sign, a binary
         * operator where it follows another term */
        double w = latex ? width_in(t, i > 0) : (double)strlen(t);
        if (i > 0 && used > 0 && used + w > room) {
            room = rest_room;
            if (latex) {
                strbuf_add(&b, sep);
                used = 0;
            } else {
                /* " + b" becomes " +", SEP, "b" */
                size_t k = 0;
                while (t[k] == ' ')
                    k++;
                strbuf_add(&b, " ");
                strbuf_addn(&b, t + k, 1);
                strbuf_add(&b, sep);
                t += k + 1;
                while (*t == ' ')
                    t++;
                w = (double)strlen(t);
                used = 0;
            }
        }
        if (used + w > room)
            ok = false;
        strbuf_add(&b, t);
        used += w;
    }
    if (fits)
        *fits = ok;
    return strbuf_take(&b);
}

static char *latex_lines(const expr_graph_t *g, const expr_t *e,
                         double first, double width, bool *fits,
                         expr_form_t form)
{
    size_t n;
    char **piece = expr_print_terms(g, e, form, &n);
    char *r = join_lines(piece, n, width - first, width - LAYOUT_INDENT_PT,
                         true, " \\\\\n&\\quad {}", fits);
    for (size_t i = 0; i < n; i++)
        free(piece[i]);
    free(piece);
    return r;
}

char *layout_latex_lines(const expr_graph_t *g, const expr_t *e, double first,
                         double width, bool *fits)
{
    return latex_lines(g, e, first, width, fits, EXPR_FORM_LATEX);
}

char *layout_latex_lines_inline(const expr_graph_t *g, const expr_t *e,
                                double first, double width, bool *fits)
{
    return latex_lines(g, e, first, width, fits, EXPR_FORM_LATEX_INLINE);
}

bool layout_latex_fits(const expr_graph_t *g, const expr_t *e, double first,
                       double width)
{
    bool fits;
    free(layout_latex_lines(g, e, first, width, &fits));
    return fits;
}

char *layout_text_lines(const expr_graph_t *g, const expr_t *e, size_t first,
                        size_t width, const char *indent)
{
    size_t n;
    char **piece = expr_print_terms(g, e, EXPR_FORM_TEXT, &n);
    strbuf_t sep;
    strbuf_init(&sep);
    strbuf_add(&sep, "\n");
    strbuf_add(&sep, indent);
    char *s = strbuf_take(&sep);
    char *r = join_lines(piece, n, (double)width - (double)first,
                         (double)(width - strlen(indent)), false, s, NULL);
    free(s);
    for (size_t i = 0; i < n; i++)
        free(piece[i]);
    free(piece);
    return r;
}

/* ---- prose as LaTeX ------------------------------------------------------- */

/* The math of a character of prose outside ASCII (UTF-8 at S, *LEN its
 * bytes): Greek letters and the few symbols nh's texts use; NULL for
 * another, which prints as "?". */
static const char *prose_symbol(const unsigned char *s, size_t *len)
{
    static const struct {
        const char *utf8, *tex;
    } map[] = {
        {"α", "\\alpha"},   {"β", "\\beta"},     {"γ", "\\gamma"},
        {"δ", "\\delta"},   {"ε", "\\varepsilon"}, {"ζ", "\\zeta"},
        {"η", "\\eta"},     {"θ", "\\theta"},    {"κ", "\\kappa"},
        {"λ", "\\lambda"},  {"μ", "\\mu"},       {"ν", "\\nu"},
        {"ξ", "\\xi"},      {"π", "\\pi"},       {"ρ", "\\rho"},
        {"σ", "\\sigma"},   {"τ", "\\tau"},      {"φ", "\\varphi"},
        {"χ", "\\chi"},     {"ψ", "\\psi"},      {"ω", "\\omega"},
        {"Γ", "\\Gamma"},   {"Δ", "\\Delta"},    {"Θ", "\\Theta"},
        {"Λ", "\\Lambda"},  {"Π", "\\Pi"},       {"Σ", "\\Sigma"},
        {"Φ", "\\Phi"},     {"Ψ", "\\Psi"},      {"Ω", "\\Omega"},
        {"∂", "\\partial"}, {"−", "-"},            {"×", "\\times"},
        {"·", "\\cdot"},    {"→", "\\to"},       {"≤", "\\leq"},
        {"≥", "\\geq"},     {"≠", "\\neq"},      {"≈", "\\approx"},
        {"⟨", "\\langle"},  {"⟩", "\\rangle"},   {"ℓ", "\\ell"},
        {"∧", "\\wedge"},   {"∇", "\\nabla"},    {"∈", "\\in"},
        {"ᵀ", "^{T}"},       {"⁻¹", "^{-1}"},      {"⁻", "^{-}"},
        {"¹", "^{1}"},        {"²", "^{2}"},        {"½", "\\tfrac{1}{2}"},
        {"′", "'"},           {"—", "\\text{---}"}, {"–", "\\text{--}"},
        {"§", "\\S"},        {"’", "\\text{'}"}, {"…", "\\dots"},
    };
    for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
        size_t n = strlen(map[i].utf8);
        if (strncmp((const char *)s, map[i].utf8, n) == 0) {
            *len = n;
            return map[i].tex;
        }
    }
    /* an unknown character: skip its bytes */
    size_t n = 1;
    while (s[n] && (s[n] & 0xC0) == 0x80)
        n++;
    *len = n;
    return NULL;
}

char *layout_prose(const char *utf8, bool bold)
{
    strbuf_t b;
    strbuf_init(&b);
    const char *open = bold ? "\\textbf{" : "\\text{";
    bool in_text = false;
    const unsigned char *p = (const unsigned char *)utf8;
    while (*p) {
        unsigned char c = *p;
        if (c >= 0x80 || strchr("_^%&#${}\\~<>", c)) {
            if (in_text) {
                strbuf_add(&b, "}");
                in_text = false;
            }
            if (c == '_' || c == '^') {
                /* a script: the letters, digits and commas after it */
                p++;
                strbuf_add(&b, c == '_' ? "_{" : "^{");
                /* letters, digits, commas, primes and Greek letters:
                 * Γ_jk,i, G_αβ */
                for (;;) {
                    if (*p && (isalnum(*p) || *p == ',' || *p == '\'')) {
                        strbuf_addn(&b, (const char *)p++, 1);
                        continue;
                    }
                    size_t n;
                    const char *t = *p >= 0x80 ? prose_symbol(p, &n) : NULL;
                    if (!t || strncmp(t, "\\", 1) != 0 ||
                        !isalpha((unsigned char)t[1]) ||
                        strcmp(t, "\\partial") == 0 || strcmp(t, "\\to") == 0 ||
                        strcmp(t, "\\cdot") == 0 || strcmp(t, "\\times") == 0)
                        break;
                    strbuf_add(&b, t);
                    strbuf_add(&b, " ");
                    p += n;
                }
                strbuf_add(&b, "}");
                continue;
            }
            if (c >= 0x80) {
                size_t n;
                const char *t = prose_symbol(p, &n);
                strbuf_add(&b, t ? t : "?");
                /* a command needs a space before the letters that
                 * follow it */
                if (t && t[strlen(t) - 1] != '}' && isalpha((unsigned char)
                                                    t[strlen(t) - 1]))
                    strbuf_add(&b, " ");
                p += n;
                continue;
            }
            static const char *const esc[] = {"\\%", "\\&", "\\#", "\\$",
                                              "\\{", "\\}", "\\backslash ",
                                              "\\sim ", "<", ">"};
            const char *which = "%&#${}\\~<>";
            strbuf_add(&b, esc[strchr(which, c) - which]);
            p++;
            continue;
        }
        if (!in_text) {
            strbuf_add(&b, open);
            in_text = true;
        }
        strbuf_addn(&b, (const char *)p++, 1);
    }
    if (in_text)
        strbuf_add(&b, "}");
    return strbuf_take(&b);
}

char *layout_prose_lines(const char *utf8, bool bold, double width)
{
    /* words, then lines of words that fit */
    strbuf_t out, line;
    strbuf_init(&out);
    strbuf_init(&line);
    const char *p = utf8;
    bool first = true;
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        const char *e = p;
        while (*e && *e != ' ')
            e++;
        strbuf_t trial;
        strbuf_init(&trial);
        if (line.len)
            strbuf_addn(&trial, line.data, line.len);
        if (line.len)
            strbuf_add(&trial, " ");
        strbuf_addn(&trial, p, (size_t)(e - p));
        char *t = strbuf_take(&trial);
        char *tex = layout_prose(t, bold);
        bool fits = layout_width(tex) <= width;
        free(tex);
        if (!fits && line.len) {
            char *l = strbuf_take(&line);
            char *lt = layout_prose(l, bold);
            if (!first)
                strbuf_add(&out, " \\\\\n&");
            strbuf_add(&out, lt);
            first = false;
            free(lt);
            free(l);
            strbuf_init(&line);
            strbuf_addn(&line, p, (size_t)(e - p));
        } else {
            strbuf_free(&line);
            strbuf_init(&line);
            strbuf_add(&line, t);
        }
        free(t);
        p = e;
    }
    if (line.len) {
        char *l = strbuf_take(&line);
        char *lt = layout_prose(l, bold);
        if (!first)
            strbuf_add(&out, " \\\\\n&");
        strbuf_add(&out, lt);
        free(lt);
        free(l);
    }
    strbuf_free(&line);
    return strbuf_take(&out);
}
