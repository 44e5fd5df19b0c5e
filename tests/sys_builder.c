/*
 * sys_builder.c — test scaffolding that builds an nh_system_t from
 * strings (see sys_builder.h).  Must not: be linked into the program; it
 * aborts on a malformed string because that is a bug in a test.
 */
#include "tests/sys_builder.h"

#include "interp/eom/common.h"
#include "interp/expr/tape.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SB_MAX 64

typedef struct sb_name {
    const char *name;
    uint32_t var;
} sb_name_t;

struct sb {
    expr_graph_t *g;
    nh_system_t sys;
    bool built;

    size_t n, m, np, r, npart;
    char *qname[SB_MAX], *zname[SB_MAX], *pname[SB_MAX], *cname[SB_MAX];
    uint32_t q[SB_MAX], qd[SB_MAX], qdd[SB_MAX], z[SB_MAX], zd[SB_MAX];
    uint32_t p[SB_MAX], lam[SB_MAX];
    double pval[SB_MAX];
    uint32_t t;

    const expr_t *T, *V, *L;
    bool had_kinetic, had_lagrangian;
    const expr_t *Q[SB_MAX];
    const expr_t *C[SB_MAX];
    src_span_t cspan[SB_MAX];
    long cleft[SB_MAX];
    const expr_t *psi[SB_MAX];
    src_span_t psi_span[SB_MAX];
    bool any_psi;
    nh_particle_t part[SB_MAX];
    char *partname[SB_MAX];

    double *vars[SB_MAX];
    size_t nvarsvec;
};

static void sb_die(const char *what, const char *text)
{
    fprintf(stderr, "sys_builder: %s: %s\n", what, text);
    abort();
}

static char *sb_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (!c)
        abort();
    memcpy(c, s, n);
    return c;
}

sb_t *sb_new(void)
{
    sb_t *b = calloc(1, sizeof *b);
    if (!b)
        abort();
    b->g = expr_graph_new();
    b->t = expr_var_declare(b->g, "t");
    return b;
}

void sb_free(sb_t *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++)
        free(b->qname[i]);
    for (size_t i = 0; i < b->m; i++)
        free(b->zname[i]);
    for (size_t i = 0; i < b->np; i++)
        free(b->pname[i]);
    for (size_t i = 0; i < b->r; i++)
        free(b->cname[i]);
    for (size_t i = 0; i < b->npart; i++)
        free(b->partname[i]);
    for (size_t i = 0; i < b->nvarsvec; i++)
        free(b->vars[i]);
    expr_graph_free(b->g);
    free(b);
}

expr_graph_t *sb_graph(sb_t *b) { return b->g; }

static uint32_t sb_declare(sb_t *b, const char *name, const char *suffix)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s%s", name, suffix);
    return expr_var_declare(b->g, buf);
}

size_t sb_coord(sb_t *b, const char *name)
{
    size_t i = b->n++;
    b->qname[i] = sb_strdup(name);
    b->q[i] = sb_declare(b, name, "");
    b->qd[i] = sb_declare(b, name, "'");
    b->qdd[i] = sb_declare(b, name, "''");
    b->Q[i] = expr_num(b->g, 0.0);
    return i;
}

size_t sb_speed(sb_t *b, const char *name)
{
    size_t a = b->m++;
    b->zname[a] = sb_strdup(name);
    b->z[a] = sb_declare(b, name, "");
    b->zd[a] = sb_declare(b, name, "'");
    return a;
}

size_t sb_param(sb_t *b, const char *name, double value)
{
    size_t k = b->np++;
    b->pname[k] = sb_strdup(name);
    b->p[k] = sb_declare(b, name, "");
    b->pval[k] = value;
    return k;
}

/* ---- the little parser ----------------------------------------------- */

typedef struct sb_parser {
    sb_t *b;
    const char *s, *text;
} sb_parser_t;

static void sp_ws(sb_parser_t *p)
{
    while (isspace((unsigned char)*p->s))
        p->s++;
}

static const expr_t *sp_expr(sb_parser_t *p);

static size_t sp_find(char *const *names, size_t n, const char *id)
{
    for (size_t k = 0; k < n; k++)
        if (strcmp(names[k], id) == 0)
            return k;
    return SIZE_MAX;
}

/* The variable of identifier ID followed by PRIMES primes. */
static const expr_t *sp_name(sb_parser_t *p, const char *id, int primes)
{
    sb_t *b = p->b;
    expr_graph_t *g = b->g;
    size_t k;
    if ((k = sp_find(b->qname, b->n, id)) != SIZE_MAX) {
        if (primes > 2)
            sb_die("third derivative", p->text);
        uint32_t v = primes == 0 ? b->q[k] : primes == 1 ? b->qd[k] : b->qdd[k];
        return expr_var(g, v);
    }
    if ((k = sp_find(b->zname, b->m, id)) != SIZE_MAX) {
        if (primes > 1)
            sb_die("second derivative of a speed", p->text);
        return expr_var(g, primes ? b->zd[k] : b->z[k]);
    }
    if (primes)
        sb_die("prime on a name that is no coordinate or speed", p->text);
    if ((k = sp_find(b->pname, b->np, id)) != SIZE_MAX)
        return expr_var(g, b->p[k]);
    if (strcmp(id, "t") == 0)
        return expr_var(g, b->t);
    if (strcmp(id, "pi") == 0)
        return expr_num(g, M_PI);
    sb_die("unknown name", id);
    return NULL;
}

static const expr_t *sp_primary(sb_parser_t *p)
{
    expr_graph_t *g = p->b->g;
    sp_ws(p);
    if (*p->s == '(') {
        p->s++;
        const expr_t *e = sp_expr(p);
        sp_ws(p);
        if (*p->s != ')')
            sb_die("expected )", p->text);
        p->s++;
        return e;
    }
    if (isdigit((unsigned char)*p->s) || *p->s == '.') {
        char *end;
        double v = strtod(p->s, &end);
        p->s = end;
        return expr_num(g, v);
    }
    if (isalpha((unsigned char)*p->s) || *p->s == '_') {
        char id[64];
        size_t n = 0;
        while ((isalnum((unsigned char)*p->s) || *p->s == '_') && n < 63)
            id[n++] = *p->s++;
        id[n] = '\0';
        sp_ws(p);
        if (*p->s == '(') {
            int op = expr_op_lookup(id);
            if (op < 0)
                sb_die("unknown function", id);
            p->s++;
            const expr_t *a = sp_expr(p), *c = NULL;
            sp_ws(p);
            if (*p->s == ',') {
                p->s++;
                c = sp_expr(p);
                sp_ws(p);
            }
            if (*p->s != ')')
                sb_die("expected ) after arguments", p->text);
            p->s++;
            if ((expr_op_arity((expr_op_t)op) == 2) != (c != NULL))
                sb_die("wrong argument count", id);
            return expr_call(g, (expr_op_t)op, a, c);
        }
        int primes = 0;
        while (*p->s == '\'') {
            primes++;
            p->s++;
        }
        return sp_name(p, id, primes);
    }
    sb_die("unexpected character", p->s);
    return NULL;
}

static const expr_t *sp_unary(sb_parser_t *p);

static const expr_t *sp_power(sb_parser_t *p)
{
    const expr_t *base = sp_primary(p);
    sp_ws(p);
    if (*p->s == '^') {
        p->s++;
        return expr_pow(p->b->g, base, sp_unary(p));
    }
    return base;
}

static const expr_t *sp_unary(sb_parser_t *p)
{
    sp_ws(p);
    if (*p->s == '-') {
        p->s++;
        return expr_neg(p->b->g, sp_unary(p));
    }
    if (*p->s == '+') {
        p->s++;
        return sp_unary(p);
    }
    return sp_power(p);
}

static const expr_t *sp_term(sb_parser_t *p)
{
    const expr_t *e = sp_unary(p);
    for (;;) {
        sp_ws(p);
        if (*p->s == '*') {
            p->s++;
            e = expr_mul(p->b->g, e, sp_unary(p));
        } else if (*p->s == '/') {
            p->s++;
            e = expr_div(p->b->g, e, sp_unary(p));
        } else
            return e;
    }
}

static const expr_t *sp_expr(sb_parser_t *p)
{
    const expr_t *e = sp_term(p);
    for (;;) {
        sp_ws(p);
        if (*p->s == '+') {
            p->s++;
            e = expr_add(p->b->g, e, sp_term(p));
        } else if (*p->s == '-') {
            p->s++;
            e = expr_sub(p->b->g, e, sp_term(p));
        } else
            return e;
    }
}

const expr_t *sb_expr(sb_t *b, const char *text)
{
    sb_parser_t p = {b, text, text};
    const expr_t *e = sp_expr(&p);
    sp_ws(&p);
    if (*p.s)
        sb_die("trailing text", text);
    return e;
}

uint32_t sb_var(sb_t *b, const char *name)
{
    const expr_t *e = sb_expr(b, name);
    if (e->op != EXPR_VAR)
        sb_die("not a variable", name);
    return e->var;
}

/* ---- the model ------------------------------------------------------------ */

void sb_kinetic(sb_t *b, const char *text)
{
    const expr_t *e = sb_expr(b, text);
    b->T = b->T ? expr_add(b->g, b->T, e) : e;
    b->had_kinetic = true;
}

void sb_potential(sb_t *b, const char *text)
{
    const expr_t *e = sb_expr(b, text);
    b->V = b->V ? expr_add(b->g, b->V, e) : e;
}

void sb_lagrangian(sb_t *b, const char *text)
{
    b->L = sb_expr(b, text);
    b->had_lagrangian = true;
}

static size_t sb_coord_index(sb_t *b, const char *coord)
{
    size_t i = sp_find(b->qname, b->n, coord);
    if (i == SIZE_MAX)
        sb_die("unknown coordinate", coord);
    return i;
}

void sb_force(sb_t *b, const char *coord, const char *text)
{
    size_t i = sb_coord_index(b, coord);
    b->Q[i] = expr_add(b->g, b->Q[i], sb_expr(b, text));
}

void sb_particle(sb_t *b, const char *name, const char *mass, size_t dim,
                 const char *const *pos, const char *const *force)
{
    expr_graph_t *g = b->g;
    size_t k = b->npart++;
    nh_particle_t *P = &b->part[k];
    b->partname[k] = sb_strdup(name);
    P->name = b->partname[k];
    P->span = SRC_SPAN_NONE;
    P->mass = sb_expr(b, mass);
    P->dim = dim;
    /* dvar for P': q -> q', t -> 1 (expr_dt with nvars entries). */
    uint32_t nv = expr_graph_nvars(g);
    const expr_t **dv = calloc(nv, sizeof *dv);
    if (!dv)
        abort();
    for (size_t i = 0; i < b->n; i++)
        dv[b->q[i]] = expr_var(g, b->qd[i]);
    dv[b->t] = expr_num(g, 1.0);
    const expr_t *v2 = expr_num(g, 0.0);
    for (size_t c = 0; c < dim; c++) {
        P->pos[c] = sb_expr(b, pos[c]);
        P->force[c] = force ? sb_expr(b, force[c]) : NULL;
        const expr_t *v = expr_dt(g, P->pos[c], dv);
        v2 = expr_add(g, v2, expr_mul(g, v, v));
        if (P->force[c])
            for (size_t i = 0; i < b->n; i++)
                b->Q[i] = expr_add(g, b->Q[i],
                                   expr_mul(g, P->force[c],
                                            expr_diff(g, P->pos[c], b->q[i])));
    }
    free(dv);
    const expr_t *Tp = expr_mul(g, expr_num(g, 0.5), expr_mul(g, P->mass, v2));
    b->T = b->T ? expr_add(g, b->T, Tp) : Tp;
}

size_t sb_constraint(sb_t *b, const char *name, const char *text)
{
    size_t a = b->r++;
    b->cname[a] = sb_strdup(name);
    b->C[a] = sb_expr(b, text);
    /* The written left side: a text that starts with a velocity q' (not
     * q'') reads as q' = (the rest, negated), as C = LHS - RHS. */
    b->cleft[a] = -1;
    size_t len = strcspn(text, "' +-*/^()");
    if (len && text[len] == '\'' && text[len + 1] != '\'') {
        char nm[64];
        snprintf(nm, sizeof nm, "%.*s", (int)len, text);
        size_t i = sp_find(b->qname, b->n, nm);
        if (i != SIZE_MAX)
            b->cleft[a] = (long)i;
    }
    /* A recognisable fake span per constraint: file 0, bytes 100a.. */
    b->cspan[a] = (src_span_t){0, (uint32_t)(100 * (a + 1)),
                               (uint32_t)(100 * (a + 1) + 10)};
    char buf[128];
    snprintf(buf, sizeof buf, "lambda(%s)", name);
    b->lam[a] = expr_var_declare(b->g, buf);
    return a;
}

void sb_kinematic(sb_t *b, const char *coord, const char *text)
{
    size_t i = sb_coord_index(b, coord);
    b->psi[i] = sb_expr(b, text);
    b->psi_span[i] = (src_span_t){0, (uint32_t)(5000 + 100 * i),
                                  (uint32_t)(5000 + 100 * i + 10)};
    b->any_psi = true;
}

const nh_system_t *sb_system(sb_t *b)
{
    if (b->built)
        return &b->sys;
    b->built = true;
    expr_graph_t *g = b->g;
    nh_system_t *s = &b->sys;
    s->g = g;
    s->n = b->n;
    s->qname = (const char *const *)b->qname;
    s->q = b->q;
    s->qd = b->qd;
    s->qdd = b->qdd;
    s->m = b->m;
    s->zname = (const char *const *)b->zname;
    s->z = b->z;
    s->zd = b->zd;
    s->np = b->np;
    s->pname = (const char *const *)b->pname;
    s->p = b->p;
    s->t = b->t;
    if (b->had_lagrangian) {
        s->L = b->L;
        s->T = s->V = NULL;
        s->T_only_particles = false;
    } else {
        s->T = b->T ? b->T : expr_num(g, 0.0);
        s->V = b->V ? b->V : expr_num(g, 0.0);
        s->L = expr_sub(g, s->T, s->V);
        s->T_only_particles = !b->had_kinetic && b->npart > 0;
    }
    s->Q = b->Q;
    s->r = b->r;
    s->C = b->C;
    s->cname = (const char *const *)b->cname;
    s->cspan = b->cspan;
    s->cleft = b->cleft;
    s->lam = b->lam;
    s->psi = b->any_psi ? b->psi : NULL;
    s->psi_span = b->any_psi ? b->psi_span : NULL;
    s->nparticles = b->npart;
    s->particles = b->part;
    return s;
}

double *sb_vars(sb_t *b)
{
    if (b->nvarsvec == SB_MAX)
        sb_die("too many value vectors", "");
    size_t nv = expr_graph_nvars(b->g);
    double *v = calloc(nv ? nv : 1, sizeof *v);
    if (!v)
        abort();
    for (size_t k = 0; k < b->np; k++)
        v[b->p[k]] = b->pval[k];
    b->vars[b->nvarsvec++] = v;
    return v;
}

/* ---- closed forms shared by the suites ------------------------------ */

void sb_bipendulum_benenti(double m1, double m2, const double A[4],
                           const double q[4], const double qd[4],
                           double qdd[4])
{
    double Ax1 = A[0], Ay1 = A[1], Ax2 = A[2], Ay2 = A[3];
    double x1 = q[0], x2 = q[2];
    double dx1 = qd[0], dy1 = qd[1], dx2 = qd[2], dy2 = qd[3];
    double v1 = dx1 * dx1 + dy1 * dy1, v2 = dx2 * dx2 + dy2 * dy2;
    double D = m1 * x2 * x2 * pow(dy1, 4) * v2 + m2 * x1 * x1 * pow(dy2, 4) * v1;
    qdd[0] = (x2 * x2 * pow(dy1, 4) * v2 * Ax1 +
              m2 / m1 * x1 * x1 * dx1 * pow(dy2, 4) * (dx1 * Ax1 + dy1 * Ay1) +
              x1 * x2 * pow(dy1, 3) * dy2 * dy2 * (dy2 * Ax2 - dx2 * Ay2) +
              m2 * x1 * (dy1 * v2 - dy2 * v1) * dy1 * dy1 * pow(dy2, 3)) /
             D;
    qdd[1] = dy1 / D *
             (x2 * x2 * pow(dy1, 3) * v2 * Ay1 +
              m2 / m1 * x1 * x1 * pow(dy2, 4) * (dx1 * Ax1 + dy1 * Ay1) +
              x1 * x2 * dx1 * dy1 * dy2 * dy2 * (dx2 * Ay2 - dy2 * Ax2) +
              m2 * x1 * dx1 * pow(dy2, 3) * (dy2 * v1 - dy1 * v2));
    qdd[2] = (x1 * x1 * pow(dy2, 4) * v1 * Ax2 +
              m1 / m2 * x2 * x2 * dx2 * pow(dy1, 4) * (dx2 * Ax2 + dy2 * Ay2) +
              x1 * x2 * pow(dy2, 3) * dy1 * dy1 * (dy1 * Ax1 - dx1 * Ay1) +
              m1 * x2 * (dy2 * v1 - dy1 * v2) * dy2 * dy2 * pow(dy1, 3)) /
             D;
    qdd[3] = dy2 / D *
             (x1 * x1 * pow(dy2, 3) * v1 * Ay2 +
              m1 / m2 * x2 * x2 * pow(dy1, 4) * (dx2 * Ax2 + dy2 * Ay2) +
              x1 * x2 * dx2 * dy2 * dy1 * dy1 * (dx1 * Ay1 - dy1 * Ax1) +
              m1 * x2 * dx2 * pow(dy1, 3) * (dy1 * v2 - dy2 * v1));
}

/* ---- the two derivations of M and h ------------------------------------ */

static double sb_uniform(uint64_t *s, double lo, double hi)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * (double)(*s >> 11) * 0x1.0p-53;
}

double sb_forms_differ(const nh_system_t *sys, double *vars, uint64_t seed,
                       int trials, char *where, size_t size)
{
    size_t n = sys->n, nv = expr_graph_nvars(sys->g), nout = 3 * n + n * n;
    eom_derived_t dl, dp;
    eom_derive_form(sys, &dl, false);
    eom_derive_form(sys, &dp, true);
    const expr_t **ol = calloc(nout, sizeof *ol), **op = calloc(nout, sizeof *op);
    for (size_t i = 0; i < n; i++) {
        ol[i] = dl.p[i];
        op[i] = dp.p[i];
        ol[n + i] = dl.h0[i];
        op[n + i] = dp.h0[i];
        ol[2 * n + i] = dl.h[i];
        op[2 * n + i] = dp.h[i];
        for (size_t j = 0; j < n; j++) {
            ol[3 * n + i * n + j] = dl.M[i * n + j];
            op[3 * n + i * n + j] = dp.M[i * n + j];
        }
    }
    tape_t *tl = tape_compile(sys->g, ol, nout, (uint32_t)nv);
    tape_t *tp = tape_compile(sys->g, op, nout, (uint32_t)nv);
    double *vl = calloc(nout, sizeof *vl), *vp = calloc(nout, sizeof *vp);
    double *wl = calloc(tape_work_size(tl) + 1, sizeof *wl);
    double *wp = calloc(tape_work_size(tp) + 1, sizeof *wp);
    double worst = -1;
    for (int trial = 0; trial < trials; trial++) {
        for (size_t i = 0; i < n; i++) {
            vars[sys->q[i]] = sb_uniform(&seed, -1.5, 1.5);
            vars[sys->qd[i]] = sb_uniform(&seed, -2, 2);
        }
        vars[sys->t] = sb_uniform(&seed, 0, 3);
        tape_eval(tl, vars, vl, wl);
        tape_eval(tp, vars, vp, wp);
        for (size_t k = 0; k < nout; k++) {
            double d = fabs(vp[k] - vl[k]) / (1.0 + fabs(vl[k]));
            if (!(d <= worst)) { /* a NaN is the worst */
                worst = d != d ? INFINITY : d;
                snprintf(where, size, "%s[%zu] at state %d: %.17g, from L "
                         "%.17g",
                         k < n ? "p" : k < 2 * n ? "h0" : k < 3 * n ? "h" : "M",
                         k < 3 * n ? k % n : k - 3 * n, trial, vp[k], vl[k]);
            }
        }
    }
    free(vl);
    free(vp);
    free(wl);
    free(wp);
    tape_free(tl);
    tape_free(tp);
    free(ol);
    free(op);
    eom_derived_free(&dl);
    eom_derived_free(&dp);
    return worst;
}
