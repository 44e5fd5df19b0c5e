/*
 * complete.c — see complete.h.
 *
 * The text before the word is scanned as the language's scanner would
 * see it, roughly: names (with a frame's `A.x`), numbers, strings,
 * comments and single characters, and brackets are matched.  Only the
 * statement the cursor is in counts: it begins after the last `;` or
 * line end outside brackets (a line that ends with an operator, `,`,
 * `=`, `:` or `>` goes on, LANGUAGE.md §2), and a sweep's statements
 * after its `:`.  Its words at the top level (outside brackets) say which
 * statement it is and where in it the cursor stands; inside brackets, the
 * call whose argument the cursor is in decides (omega(A), velocity(P, B),
 * lambda(NAME), …), and otherwise an expression goes there.  Text that
 * does not parse still gets the candidates its words suggest: this is a
 * guess at what the user means to type, never a check.
 */
#include "interp/cli/complete.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "interp/analysis/worksheet.h"
#include "interp/base/util.h"
#include "interp/cli/stmts.h"
#include "interp/eom/eom.h"
#include "interp/mech/lower.h"
#include "interp/run/sim.h"
#include "lang/keywords.h"

/* Keywords that never begin a statement (the rest do). */
static const char *const inner_keywords[] = {
    "mass", "at", "to", "step", "integrator", "rtol", "atol", "project",
    "vs", "latex", "samples", "from", "about", "by", "inertia", NULL};
/* What `set` changes besides parameters (decl.c). */
static const char *const settings[] = {"rtol", "atol", "step", "integrator",
                                       "max_steps", "compile", "threads",
                                       NULL};
static const char *const simulate_options[] = {
    "step", "integrator", "rtol", "atol", "project", "until", "sample",
    NULL};
/* after `until EXPR = VALUE` or `sample at EXPR = VALUE` (§6.1) */
static const char *const event_directions[] = {"rising", "falling", NULL};
static const char *const draw_kinds[] = {"disk", "sphere", "line", "point",
                                         NULL};
static const char *const on_off[] = {"on", "off", NULL};
static const char *const axes[] = {"x", "y", "z", NULL};
static const char *const export_formats[] = {"c", "python", NULL};

/* ---- the list -------------------------------------------------------- */

typedef struct builder {
    complete_list_t list;
    const char *word; /* what the names must begin with */
    size_t wlen;
} builder_t;

void complete_list_free(complete_list_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
    l->names = NULL;
    l->n = l->cap = 0;
}

static void add_n(builder_t *b, const char *name, size_t len)
{
    if (len < b->wlen || strncmp(name, b->word, b->wlen) != 0)
        return;
    xgrow(&b->list.names, &b->list.cap, b->list.n + 2, sizeof *b->list.names);
    char *copy = xmalloc(len + 1);
    memcpy(copy, name, len);
    copy[len] = '\0';
    b->list.names[b->list.n++] = copy;
}

static void add(builder_t *b, const char *name)
{
    if (name)
        add_n(b, name, strlen(name));
}

static void add_all(builder_t *b, const char *const *names)
{
    for (size_t i = 0; names && names[i]; i++)
        add(b, names[i]);
}

static int cmp_names(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Sorts the names, drops repeats, ends the list with NULL. */
static complete_list_t finish(builder_t *b)
{
    complete_list_t *l = &b->list;
    if (l->n)
        qsort(l->names, l->n, sizeof *l->names, cmp_names);
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (k && strcmp(l->names[k - 1], l->names[i]) == 0)
            free(l->names[i]);
        else
            l->names[k++] = l->names[i];
    }
    l->n = k;
    xgrow(&l->names, &l->cap, k + 1, sizeof *l->names);
    l->names[k] = NULL;
    return *l;
}

/* ---- the model's names ----------------------------------------------- */

static void add_coords(builder_t *b, const model_t *m)
{
    for (size_t i = 0; i < m->coords.n; i++)
        add(b, m->coords.v[i].name);
}

static void add_speeds(builder_t *b, const model_t *m)
{
    for (size_t i = 0; i < m->speeds.n; i++)
        add(b, m->speeds.v[i].name);
}

static void add_params(builder_t *b, const model_t *m)
{
    for (size_t i = 0; i < m->params.n; i++)
        add(b, m->params.v[i].name);
}

static void add_frames(builder_t *b, const model_t *m)
{
    for (size_t i = 0; i < m->frames.n; i++)
        add(b, m->frames.v[i].name);
}

static void add_bodies(builder_t *b, const model_t *m)
{
    for (size_t i = 0; i < m->bodies.n; i++)
        add(b, m->bodies.v[i].name);
}

static void add_constraints(builder_t *b, const model_t *m)
{
    for (size_t i = 0; i < m->constraints.n; i++)
        add(b, m->constraints.v[i].name);
}

/* The names an expression may use (LANGUAGE.md §3.2, §3.4): t, pi, the
 * model's values, a frame's unit vectors and the built-in functions. */
static void add_expression_names(builder_t *b, const model_t *m)
{
    add(b, "t");
    add(b, "pi");
    add_params(b, m);
    add_coords(b, m);
    add_speeds(b, m);
    for (size_t i = 0; i < m->lets.n; i++)
        add(b, m->lets.v[i].name);
    add(b, m->kinetic.name);
    add(b, m->potential.name);
    add(b, m->lagrangian.name);
    for (size_t i = 0; i < m->particles.n; i++)
        add(b, m->particles.v[i].name);
    for (size_t i = 0; i < m->frames.n; i++)
        for (const char *ax = "xyz"; *ax; ax++) {
            char member[256];
            int len = snprintf(member, sizeof member, "%s.%c",
                               m->frames.v[i].name, *ax);
            if (len > 0 && (size_t)len < sizeof member)
                add(b, member);
        }
    add_all(b, lower_builtin_functions());
}

/* The modules `import "…` may name: NAME.nh in NH_PATH and LIBDIRS. */
static void add_modules_in(builder_t *b, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len > 3 && strcmp(e->d_name + len - 3, ".nh") == 0)
            add_n(b, e->d_name, len - 3);
    }
    closedir(d);
}

static void add_modules(builder_t *b, const char *const *libdirs)
{
    const char *env = getenv("NH_PATH");
    if (env && *env) {
        char *list = xstrdup(env), *save = NULL;
        for (char *d = strtok_r(list, ":", &save); d;
             d = strtok_r(NULL, ":", &save))
            add_modules_in(b, d);
        free(list);
    }
    for (size_t i = 0; libdirs && libdirs[i]; i++)
        add_modules_in(b, libdirs[i]);
}

/* ---- the text before the word ----------------------------------------- */

typedef enum tok_kind { TOK_WORD, TOK_NUMBER, TOK_STRING, TOK_PUNCT } tok_kind_t;

typedef struct tok {
    tok_kind_t kind;
    const char *p;
    size_t len;
} tok_t;

/* An open bracket: '(' or '[', whether it opens a call, the word before
 * it (the call's function) and how many of its arguments came before. */
typedef struct open_bracket {
    char c;
    bool call;
    tok_t fn;
    size_t arg;
} open_bracket_t;

#define COMPLETE_MAX_DEPTH 64

typedef struct scan {
    tok_t *top; /* the statement's tokens outside brackets */
    size_t ntop, cap;
    open_bracket_t open[COMPLETE_MAX_DEPTH];
    size_t depth;     /* brackets open (those past the array too) */
    bool in_string;   /* the word is inside a string: `import "eu` */
} scan_t;

static bool word_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (unsigned char)c >= 0x80;
}

static bool word_char(char c)
{
    return word_start(c) || (c >= '0' && c <= '9');
}

static bool tok_is(const tok_t *t, const char *w)
{
    return t && t->kind != TOK_STRING && strlen(w) == t->len &&
           strncmp(t->p, w, t->len) == 0;
}

/* Whether a line that ends with T goes on (LANGUAGE.md §2). */
static bool continues(const tok_t *t)
{
    return t && t->kind == TOK_PUNCT && strchr("+-*/^=:,>", t->p[0]);
}

static void push_top(scan_t *s, tok_t t)
{
    xgrow(&s->top, &s->cap, s->ntop + 1, sizeof *s->top);
    s->top[s->ntop++] = t;
}

/* Starts a new statement: what came before no longer counts. */
static void new_statement(scan_t *s)
{
    s->ntop = 0;
    s->depth = 0;
}

static void scan_text(scan_t *s, const char *text, size_t len)
{
    tok_t last = {TOK_PUNCT, ";", 1}; /* the last token, at any depth */
    bool any = false;
    size_t i = 0;
    while (i < len) {
        char c = text[i];
        if (c == '#') { /* a comment, to the end of the line */
            while (i < len && text[i] != '\n')
                i++;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\r') {
            i++;
            continue;
        }
        if (c == '\n') {
            i++;
            if (s->depth == 0 && !(any && continues(&last))) {
                new_statement(s);
                any = false;
            }
            continue;
        }
        tok_t t = {TOK_PUNCT, text + i, 1};
        if (c == '"') {
            size_t j = i + 1;
            while (j < len && text[j] != '"') {
                if (text[j] == '\\' && j + 1 < len)
                    j++;
                j++;
            }
            if (j >= len) { /* the word is inside this string */
                s->in_string = true;
                return;
            }
            t = (tok_t){TOK_STRING, text + i, j + 1 - i};
        } else if (word_start(c)) {
            size_t j = i;
            while (j < len && (word_char(text[j]) || text[j] == '.'))
                j++;
            t = (tok_t){TOK_WORD, text + i, j - i};
        } else if ((c >= '0' && c <= '9') || c == '.') {
            size_t j = i;
            while (j < len && (word_char(text[j]) || text[j] == '.' ||
                               ((text[j] == '+' || text[j] == '-') &&
                                (text[j - 1] == 'e' || text[j - 1] == 'E'))))
                j++;
            t = (tok_t){TOK_NUMBER, text + i, j - i};
        }
        i += t.len;
        if (t.kind == TOK_PUNCT && (c == '(' || c == '[')) {
            if (s->depth < COMPLETE_MAX_DEPTH)
                s->open[s->depth] = (open_bracket_t){
                    c, c == '(' && any && last.kind == TOK_WORD, last, 0};
            if (s->depth == 0)
                push_top(s, t);
            s->depth++;
        } else if (t.kind == TOK_PUNCT && (c == ')' || c == ']')) {
            if (s->depth > 0)
                s->depth--;
            if (s->depth == 0)
                push_top(s, t);
        } else if (t.kind == TOK_PUNCT && c == ',' && s->depth > 0) {
            if (s->depth <= COMPLETE_MAX_DEPTH)
                s->open[s->depth - 1].arg++;
        } else if (s->depth == 0 && t.kind == TOK_PUNCT && c == ';') {
            new_statement(s);
            any = false;
            last = t;
            continue;
        } else if (s->depth == 0 && t.kind == TOK_PUNCT && c == ':' &&
                   s->ntop > 0 && tok_is(&s->top[0], "sweep")) {
            new_statement(s); /* the sweep's statements begin */
            any = false;
            last = t;
            continue;
        } else if (s->depth == 0) {
            push_top(s, t);
        }
        last = t;
        any = true;
    }
}

/* The innermost bracket when it opens a call, else NULL. */
static const open_bracket_t *innermost_call(const scan_t *s)
{
    if (s->depth == 0 || s->depth > COMPLETE_MAX_DEPTH)
        return NULL;
    const open_bracket_t *o = &s->open[s->depth - 1];
    return o->call ? o : NULL;
}

/* ---- the contexts ------------------------------------------------------- */

/* Candidates inside a call: the argument that names a frame, a body, a
 * constraint or a variable.  False when the call's argument is an
 * expression like any other. */
static bool complete_call(builder_t *b, const model_t *m, const tok_t *fn,
                          size_t arg)
{
    if ((tok_is(fn, "omega") || tok_is(fn, "on")) && arg == 0) {
        add_frames(b, m);
        return true;
    }
    if (tok_is(fn, "velocity") && arg == 1) {
        add_bodies(b, m);
        return true;
    }
    if (tok_is(fn, "lambda") && arg == 0) {
        add_constraints(b, m);
        return true;
    }
    if (tok_is(fn, "reaction") && arg == 0) {
        add_coords(b, m);
        return true;
    }
    if (tok_is(fn, "diff") && arg == 1) {
        add(b, "t");
        add_coords(b, m);
        add_speeds(b, m);
        add_params(b, m);
        return true;
    }
    return false;
}

/* Where a name of a binding list goes (`initial x = 1, |`, `set |`): right
 * after the keyword or a comma. */
static bool at_binding_name(const scan_t *s)
{
    const tok_t *prev = &s->top[s->ntop - 1];
    return s->ntop == 1 || tok_is(prev, ",");
}

/* The name bound by the binding the cursor is in (`set integrator = |`):
 * the word before the last '=' after the last ',' or the keyword. */
static const tok_t *binding_name(const scan_t *s)
{
    for (size_t i = s->ntop; i-- > 1;) {
        if (tok_is(&s->top[i], ","))
            return NULL;
        if (tok_is(&s->top[i], "=") && s->top[i - 1].kind == TOK_WORD)
            return &s->top[i - 1];
    }
    return NULL;
}

/* The statement's words decide (the cursor outside brackets, or inside
 * ones that are an expression). */
static void complete_statement(builder_t *b, const model_t *m,
                               const scan_t *s)
{
    size_t n = s->ntop;
    const tok_t *first = &s->top[0], *prev = &s->top[n - 1];
    bool top = s->depth == 0;
    if (top && n == 1 && tok_is(first, "equations")) {
        add_all(b, eom_method_names);
        return;
    }
    if (tok_is(first, "compare") && top) {
        if (n <= 2)
            add_all(b, eom_method_names);
        else if (n == 3)
            add(b, "samples");
        return;
    }
    if (tok_is(first, "worksheet") && top) {
        if (n == 1)
            add(b, "latex");
        if (n == 1 || (n == 2 && tok_is(prev, "latex")))
            add_all(b, worksheet_names);
        return;
    }
    if (tok_is(first, "help") && top) {
        if (n == 1) {
            add_all(b, help_topics);
            add_all(b, parse_keywords);
        }
        return;
    }
    if (tok_is(first, "export") && top) {
        if (n == 1)
            add_all(b, export_formats);
        return;
    }
    if (tok_is(first, "set") && top) {
        if (at_binding_name(s)) {
            add_params(b, m);
            add_all(b, settings);
            return;
        }
        const tok_t *name = binding_name(s);
        if (name && tok_is(name, "integrator") && tok_is(prev, "=")) {
            add_all(b, ctx_integrators);
            return;
        }
        if (name && tok_is(name, "compile") && tok_is(prev, "=")) {
            add_all(b, on_off);
            return;
        }
        add_expression_names(b, m);
        return;
    }
    if (tok_is(first, "simulate") && top) {
        if (n == 1) {
            add(b, "to");
        } else if (tok_is(prev, "integrator")) {
            add_all(b, ctx_integrators);
        } else if (tok_is(prev, "sample")) {
            add(b, "at");
        } else if (n >= 3 && tok_is(&s->top[n - 2], "integrator") &&
                   tok_is(prev, "dla")) {
            add(b, "h");
            add_all(b, simulate_options);
        } else {
            bool event = false;
            for (size_t k = 1; k < n && !event; k++)
                event = tok_is(&s->top[k], "until") ||
                        tok_is(&s->top[k], "sample");
            if (event && !tok_is(prev, "=") && !tok_is(prev, "until") &&
                !tok_is(prev, "at"))
                add_all(b, event_directions);
            add_all(b, simulate_options);
            add_expression_names(b, m);
        }
        return;
    }
    if (tok_is(first, "show") && top &&
        (n == 1 || (n == 2 && tok_is(prev, "latex")))) {
        if (n == 1)
            add(b, "latex");
        add_all(b, output_show_subjects);
        add_expression_names(b, m);
        return;
    }
    if (tok_is(first, "frame") && top) {
        if (n == 2)
            add(b, "from");
        else if (tok_is(prev, "from"))
            add_frames(b, m);
        else if (n == 4)
            add(b, "about");
        else if (tok_is(prev, "about"))
            add_all(b, axes);
        else if (n >= 6 && tok_is(&s->top[4], "about") && !tok_is(prev, "by")) {
            add(b, "by");
            add_expression_names(b, m);
        } else if (n > 2)
            add_expression_names(b, m);
        return;
    }
    if (tok_is(first, "body") && top) {
        if (tok_is(prev, "frame")) {
            add_frames(b, m);
        } else if (n == 2) {
            add(b, "mass");
        } else if (n > 2) {
            add(b, "at");
            add(b, "frame");
            add(b, "inertia");
            add_expression_names(b, m);
        }
        return;
    }
    if (tok_is(first, "torque") && top) {
        if (n == 1)
            add_bodies(b, m);
        else
            add_expression_names(b, m);
        return;
    }
    if (tok_is(first, "force") && top) {
        if (n == 1) {
            add_coords(b, m);
            for (size_t i = 0; i < m->particles.n; i++)
                add(b, m->particles.v[i].name);
            add_bodies(b, m);
        } else {
            if (n == 2)
                add(b, "at");
            add_expression_names(b, m);
        }
        return;
    }
    if ((tok_is(first, "initial") || tok_is(first, "steady")) && top &&
        at_binding_name(s)) {
        add(b, "t");
        add_coords(b, m);
        add_speeds(b, m);
        return;
    }
    if ((tok_is(first, "linearize") || tok_is(first, "eigen")) && top) {
        add_coords(b, m);
        add_speeds(b, m);
        return;
    }
    /* lyapunov to T [step S] [VARS] (§7.4) */
    if (tok_is(first, "lyapunov") && top) {
        if (n == 1) {
            add(b, "to");
        } else if (!tok_is(prev, "to") && !tok_is(prev, "step")) {
            add(b, "step");
            add_coords(b, m);
            add_speeds(b, m);
            add_expression_names(b, m);
        } else {
            add_expression_names(b, m);
        }
        return;
    }
    /* follow NAME from A to B [step S]: steady … (§7.3) */
    if (tok_is(first, "follow") && top) {
        if (n == 1) {
            add_params(b, m);
            add_coords(b, m);
        } else if (n == 2) {
            add(b, "from");
        } else {
            add(b, "to");
            add(b, "step");
            add_expression_names(b, m);
        }
        return;
    }
    /* transfer OUT from IN at s = V, bode OUT from IN from W1 to W2
     * (§7.2.1): the names of the outputs and inputs are the model's */
    if ((tok_is(first, "transfer") || tok_is(first, "bode")) && top) {
        if (n == 1 || n == 3)
            add_expression_names(b, m);
        else if (n == 2)
            add(b, "from");
        else if (n == 4)
            add(b, tok_is(first, "transfer") ? "at" : "from");
        else if (tok_is(first, "bode") && n == 6)
            add(b, "to");
        else
            add_expression_names(b, m);
        return;
    }
    /* draw KIND ARGS [mark P] [trail], animate [speed K] [view AZ, EL]
     * (§7.5) */
    if (tok_is(first, "draw") && top) {
        if (n == 1) {
            add_all(b, draw_kinds);
        } else {
            add(b, "mark");
            add(b, "trail");
            add_expression_names(b, m);
        }
        return;
    }
    if (tok_is(first, "animate") && top) {
        add(b, "speed");
        add(b, "view");
        return;
    }
    if (tok_is(first, "kinematic") && top && n == 1) {
        add_coords(b, m);
        return;
    }
    if (tok_is(first, "sweep") && top) {
        if (n == 1)
            add_params(b, m);
        else if (n == 2)
            add(b, "from");
        else {
            add(b, "to");
            add(b, "step");
            add_expression_names(b, m);
        }
        return;
    }
    if (tok_is(first, "plot") && top) {
        if (n == 1) {
            add(b, "sweep");
            add(b, "follow");
        }
        else
            add(b, "vs");
        add_expression_names(b, m);
        return;
    }
    if (tok_is(first, "particle") && top) {
        if (n == 2)
            add(b, "mass");
        else if (n > 2) {
            add(b, "at");
            add_expression_names(b, m);
        }
        return;
    }
    /* A declaration: its new name (and a let function's parameters) come
     * before its '=', where there is nothing to offer; an expression
     * after.  `param a = 1, |` names another. */
    static const char *const declares[] = {"param", "coord", "speed", "let",
                                           "kinetic", "potential",
                                           "lagrangian", NULL};
    for (size_t i = 0; declares[i]; i++)
        if (tok_is(first, declares[i])) {
            bool assigned = false;
            for (size_t k = 1; k < n && !assigned; k++)
                assigned = tok_is(&s->top[k], "=");
            if (!assigned || (top && tok_is(first, "param") &&
                              at_binding_name(s)))
                return;
            add_expression_names(b, m);
            return;
        }
    if (tok_is(first, "load") || tok_is(first, "import") ||
        tok_is(first, "quit") || tok_is(first, "exit") ||
        tok_is(first, "reset") || tok_is(first, "accel") ||
        tok_is(first, "check"))
        return;
    add_expression_names(b, m); /* print, table, constraint, … */
}

complete_list_t complete_names(const ctx_t *c, const char *const *libdirs,
                               const char *text, size_t start, size_t end)
{
    builder_t b = {{NULL, 0, 0}, text + start, end - start};
    const model_t *m = &c->model;
    scan_t s = {0};
    scan_text(&s, text, start);
    if (s.in_string) {
        /* `import "eu|`: the modules; a file name (load, > "…") is the
         * front end's to complete */
        if (s.ntop == 1 && tok_is(&s.top[0], "import"))
            add_modules(&b, libdirs);
    } else if (s.ntop > 0 && tok_is(&s.top[s.ntop - 1], ">") &&
               s.depth == 0) {
        /* a file name follows */
    } else if (s.ntop == 0) {
        /* a statement begins */
        for (size_t i = 0; parse_keywords[i]; i++) {
            bool inner = false;
            for (size_t k = 0; inner_keywords[k] && !inner; k++)
                inner = strcmp(parse_keywords[i], inner_keywords[k]) == 0;
            if (!inner)
                add(&b, parse_keywords[i]);
        }
    } else {
        const open_bracket_t *call = innermost_call(&s);
        if (!(call && complete_call(&b, m, &call->fn, call->arg)))
            complete_statement(&b, m, &s);
    }
    free(s.top);
    return finish(&b);
}
