/*
 * methods.c — the table of the methods of LANGUAGE.md §5 (eom.h): their
 * names and aliases, which family prepares each, and eom_prepare, which
 * reads the table.  The families (mult.c, voronec.c, maggi.c) build on
 * common.c; this file is the one place that knows all of them, so the
 * helper they share never calls back into a method.
 *
 * Must not: print; derive anything itself.
 */
#include "interp/eom/eom.h"

#include <string.h>

#include "interp/eom/common.h"
#include "interp/eom/kinematics.h"
#include "interp/eom/methods.h"

typedef int (*eom_prepare_fn)(eom_t *e, src_span_t where, diag_t *err);

/* One entry per method, in the order of eom_method_t. */
static const struct {
    const char *name;
    eom_prepare_fn prepare; /* the family that derives it */
    bool multipliers;       /* writes lambda for every constraint */
} eom_methods[EOM_METHOD_COUNT] = {
    [EOM_LAGRANGE] = {"lagrange", eom_prepare_mult, false},
    [EOM_MULTIPLIERS] = {"multipliers", eom_prepare_mult, true},
    [EOM_SECOND_KIND] = {"second_kind", eom_prepare_mult, true},
    [EOM_VORONEC] = {"voronec", eom_prepare_voronec, false},
    [EOM_NAIVE] = {"naive", eom_prepare_voronec, false},
    [EOM_MAGGI] = {"maggi", eom_prepare_maggi, false},
    [EOM_GIBBS_APPELL] = {"gibbs_appell", eom_prepare_maggi, false},
};

const char *const eom_method_names[] = {
    "lagrange", "multipliers", "second_kind", "voronec",      "naive",
    "maggi",    "first_kind",  "kane",        "gibbs_appell", NULL,
};

/* Other names of a method (LANGUAGE.md §5: maggi's aliases). */
static const struct {
    const char *name;
    eom_method_t method;
} eom_aliases[] = {
    {"first_kind", EOM_MAGGI},
    {"kane", EOM_MAGGI},
};

int eom_method_lookup(const char *name)
{
    if (!name)
        return -1;
    for (int m = 0; m < EOM_METHOD_COUNT; m++)
        if (strcmp(name, eom_methods[m].name) == 0)
            return m;
    for (size_t k = 0; k < sizeof eom_aliases / sizeof eom_aliases[0]; k++)
        if (strcmp(name, eom_aliases[k].name) == 0)
            return (int)eom_aliases[k].method;
    return -1;
}

const char *eom_method_name(eom_method_t m)
{
    if ((int)m < 0 || m >= EOM_METHOD_COUNT)
        return "?";
    return eom_methods[m].name;
}

eom_method_t eom_default_method(const nh_system_t *sys)
{
    return sys->r > 0 ? EOM_MULTIPLIERS : EOM_LAGRANGE;
}

bool eom_has_multipliers(const eom_t *e)
{
    return eom_methods[e->method].multipliers;
}

eom_t *eom_prepare(const nh_system_t *sys, eom_method_t method,
                   src_span_t where, diag_t *err)
{
    return eom_prepare_kin(sys, method, EOM_KIN_BLOCK_MAX, where, err);
}

/* The common part: with the state NEAR where the motion is, or NULL. */
static eom_t *prepare(const nh_system_t *sys, eom_method_t method,
                      size_t block_max, const double *near, src_span_t where,
                      diag_t *err);

eom_t *eom_prepare_at(const nh_system_t *sys, eom_method_t method,
                      src_span_t where, const double *vars, diag_t *err)
{
    return prepare(sys, method, EOM_KIN_BLOCK_MAX, vars, where, err);
}

eom_t *eom_prepare_kin(const nh_system_t *sys, eom_method_t method,
                       size_t block_max, src_span_t where, diag_t *err)
{
    return prepare(sys, method, block_max, NULL, where, err);
}

static eom_t *prepare(const nh_system_t *sys, eom_method_t method,
                      size_t block_max, const double *near, src_span_t where,
                      diag_t *err)
{
    if ((int)method < 0 || method >= EOM_METHOD_COUNT) {
        diag_error(err, where, "unknown equations of motion");
        return NULL;
    }
    eom_t *e = eom_alloc(1, sizeof *e);
    e->sys = sys;
    e->method = method;
    e->name = eom_methods[method].name;
    e->nvars = expr_graph_nvars(sys->g);
    e->kin_block_max = block_max;
    e->near = near;
    /* derived equations are defined where their formulas are: what
     * cancels while deriving (a pivot's reciprocal times 0) leaves no
     * guard (expr.h), so a zero entry stays the node 0 */
    bool keep = expr_graph_keep_domains(sys->g, false);
    eom_derive(sys, &e->d);
    int rc = eom_methods[method].prepare(e, where, err);
    expr_graph_keep_domains(sys->g, keep);
    e->near = NULL; /* borrowed for the prepare only */
    if (rc != 0) {
        eom_free(e);
        return NULL;
    }
    return e;
}
