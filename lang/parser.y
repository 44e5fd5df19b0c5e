/*
 * parser.y — the grammar of the .nh language (LANGUAGE.md §2–10).
 *
 * A pure bison parser over the reentrant scanner of lexer.l.  Actions call
 * the constructors of ast_build.h and nothing else; every node gets the
 * span of its text (locations are src_span_t byte ranges).  All nodes live
 * in the caller's arena, so an aborted parse leaks nothing and needs no
 * %destructor.  Syntax errors are rendered here for a user to read
 * ("unexpected ')', expected an expression"), with LAC so that the list
 * of expected tokens is exact.  Must not: resolve names, check meaning,
 * print.
 *
 * Build: bison -d -o lang/parser.c lang/parser.y
 */

%define api.pure full
%define api.prefix {nhyy}
%define api.location.type {src_span_t}
%define parse.error custom
%define parse.lac full
/* IELR: `constraint NAME:` and `sweep ... step EXPR:` both meet a name
 * before a colon, in states LALR would merge. */
%define lr.type ielr
%locations
%expect 0

%lex-param {yyscan_t scanner}
%parse-param {yyscan_t scanner} {parse_ctx_t *ctx}

%code requires {
#include "lang/parse_impl.h"
#ifndef NH_YYSCAN_T
#define NH_YYSCAN_T
typedef void *yyscan_t;
#endif
}

%code provides {
/* Flex's bison bridge names the value and location types without the
 * prefix. */
#ifndef YYSTYPE
#define YYSTYPE NHYYSTYPE
#endif
#ifndef YYLTYPE
#define YYLTYPE NHYYLTYPE
#endif
/* The scanner of lexer.l, with the bison-bridge signature. */
int nhyylex(NHYYSTYPE *lval, NHYYLTYPE *lloc, yyscan_t scanner);
}

%code {
#include <stdio.h>
#include <string.h>

#include "lang/keywords.h"
#include "lang/parse.h"

/* Spans: a rule covers its first to its last symbol; an empty rule is the
 * empty span where the previous symbol ended. */
#define YYLLOC_DEFAULT(Cur, Rhs, N)                                         \
    do {                                                                    \
        if (N) {                                                            \
            (Cur).file = YYRHSLOC(Rhs, 1).file;                             \
            (Cur).begin = YYRHSLOC(Rhs, 1).begin;                           \
            (Cur).end = YYRHSLOC(Rhs, N).end;                               \
        } else {                                                            \
            (Cur).file = YYRHSLOC(Rhs, 0).file;                             \
            (Cur).begin = (Cur).end = YYRHSLOC(Rhs, 0).end;                 \
        }                                                                   \
    } while (0)

/* The parser's stacks grow on the heap up to this depth.  An expression
 * within PARSE_MAX_DEPTH needs a few entries per level; deeper input is
 * stopped here (bison reports "memory exhausted", which yyerror turns into
 * the nesting error) instead of growing without bound. */
#define YYMAXDEPTH (10 * PARSE_MAX_DEPTH + 200)

#define A (ctx->arena)

/* Expression constructors return NULL past the nesting limit. */
#define DEPTH_OK(node, loc)                                                 \
    do {                                                                    \
        if (!(node)) {                                                      \
            parse_too_deep(ctx, (loc));                                     \
            YYABORT;                                                        \
        }                                                                   \
    } while (0)

static void nhyyerror(NHYYLTYPE *loc, yyscan_t scanner, parse_ctx_t *ctx,
                      const char *msg);
static void parse_too_deep(parse_ctx_t *ctx, src_span_t where);
}

%union {
    double num;
    const char *str;
    ast_expr_t *expr;
    ast_stmt_t *stmt;
    ast_list_t *list;
    ast_ident_t ident;
    ast_binding_t *binding;
    ast_sim_option_t *opt;
    ast_sweep_axis_t *opt_axis;
    unsigned count;
}

%token <num> NUMBER "number"
%token <str> IDENT "name"
%token <str> MEMBER "frame's unit vector"
%token <str> STRING "string"
%token NEWLINE "end of line"

/* LANGUAGE.md §10; each carries its spelling as its value.  Keep them in
 * one block from PARAM to EXIT: the error messages test that range. */
%token <str>
    PARAM "param" COORD "coord" SPEED "speed" LET "let" KINETIC "kinetic"
    POTENTIAL "potential" LAGRANGIAN "lagrangian" PARTICLE "particle"
    MASS "mass" AT "at" FORCE "force" CONSTRAINT "constraint"
    KINEMATIC "kinematic" EQUATIONS "equations" INIT "initial"
    SIMULATE "simulate" TO "to" STEP "step" INTEGRATOR "integrator"
    RTOL "rtol" ATOL "atol" PROJECT "project" RESET "reset" PRINT "print"
    ACCEL "accel" TABLE "table" PLOT "plot" VS "vs" SHOW "show"
    LATEX "latex" CHECK "check" COMPARE "compare" SAMPLES "samples"
    WORKSHEET "worksheet" SET "set" LOAD "load" IMPORT "import" HELP "help"
    FRAME "frame" BODY "body" GRAVITY "gravity" TORQUE "torque"
    LINEARIZE "linearize" EIGEN "eigen" SWEEP "sweep"
    FROM "from" ABOUT "about" BY "by" INERTIA "inertia"
    INPUT "input" OUTPUT "output" TRANSFER "transfer" BODE "bode"
    STEADY "steady" FOLLOW "follow" LYAPUNOV "lyapunov" DRAW "draw"
    ANIMATE "animate" UNTIL "until" RISING "rising" FALLING "falling"
    SAMPLE "sample"
    EXPORT "export" QUIT "quit" EXIT "exit"

/* A sweep's statements run to the end of the line (LANGUAGE.md §7.2): a
 * ';' after them continues the sweep, not the line around it. */
%precedence SWEEP_END
%precedence ';' 

%type <stmt> stmt printing opt_inner steady
%type <expr> expr sum term unary power postfix primary opt_vs
%type <list> exprs opt_exprs names bindings pbindings opt_params params
%type <list> sim_options sweep_body follow_rest axes ibindings set_bindings
%type <list> lvars
%type <expr> lvar
%type <binding> binding pbinding set_binding ibinding
%type <opt_axis> axis
%type <expr> opt_step
%type <num> opt_dir
%type <count> primes
%type <opt> sim_option
%type <ident> name opt_redirect set_name topic
%type <str> keyword

%%

program:
    stmt_seq
    ;

stmt_seq:
    opt_stmt
  | stmt_seq sep opt_stmt
    ;

sep:
    NEWLINE
  | ';'
    ;

opt_stmt:
    %empty
  | stmt                { ctx->stmts = ast_list_push(A, ctx->stmts, $1); }
    ;

stmt:
    "param" bindings    { $$ = ast_stmt_bindings(A, STMT_PARAM, $2, @$); }
  | "coord" names       { $$ = ast_stmt_names(A, STMT_COORD, $2, @$); }
  | "speed" names       { $$ = ast_stmt_names(A, STMT_SPEED, $2, @$); }
  | "let" name '=' expr
        { $$ = ast_stmt_let(A, $2, false, NULL, $4, @$); }
  | "let" name '(' opt_params ')' '=' expr
        { $$ = ast_stmt_let(A, $2, true, $4, $7, @$); }
  | "kinetic" name '=' expr
        { $$ = ast_stmt_energy(A, STMT_KINETIC, $2, $4, @$); }
  | "potential" name '=' expr
        { $$ = ast_stmt_energy(A, STMT_POTENTIAL, $2, $4, @$); }
  | "lagrangian" name '=' expr
        { $$ = ast_stmt_energy(A, STMT_LAGRANGIAN, $2, $4, @$); }
  | "particle" name "mass" expr "at" expr
        { $$ = ast_stmt_particle(A, $2, $4, $6, @$); }
  | "force" name '=' expr
        { $$ = ast_stmt_force(A, STMT_FORCE, $2, NULL, $4, @$); }
  | "force" name "at" expr '=' expr
        { $$ = ast_stmt_force(A, STMT_FORCE, $2, $4, $6, @$); }
  | "torque" name '=' expr
        { $$ = ast_stmt_force(A, STMT_TORQUE, $2, NULL, $4, @$); }
  | "frame" name
        { $$ = ast_stmt_frame(A, $2, ast_ident(NULL, SRC_SPAN_NONE), NULL,
                              NULL, @$); }
  | "frame" name "from" name "about" expr "by" expr
        { $$ = ast_stmt_frame(A, $2, $4, $6, $8, @$); }
  | "body" name "mass" expr "at" expr "frame" name "inertia" expr
        { $$ = ast_stmt_body(A, $2, $4, $6, $8, $10, @$); }
  | "gravity" expr      { $$ = ast_stmt_gravity(A, $2, @$); }
  | "constraint" name ':' expr '=' expr
        { $$ = ast_stmt_constraint(A, STMT_CONSTRAINT, $2, $4, $6, @$); }
  | "constraint" expr '=' expr
        { $$ = ast_stmt_constraint(A, STMT_CONSTRAINT,
                                   ast_ident(NULL, SRC_SPAN_NONE), $2, $4,
                                   @$); }
  | "kinematic" expr '=' expr
        { $$ = ast_stmt_constraint(A, STMT_KINEMATIC,
                                   ast_ident(NULL, SRC_SPAN_NONE), $2, $4,
                                   @$); }
  | "input" ibindings   { $$ = ast_stmt_bindings(A, STMT_INPUT, $2, @$); }
  | "output" bindings   { $$ = ast_stmt_bindings(A, STMT_OUTPUT, $2, @$); }
    /* LANGUAGE.md §7.5: the words mark and trail are names here, checked
     * by the interpreter (an expression cannot go on with a name) */
  | "draw" name exprs
        { $$ = ast_stmt_draw(A, $2, $3, ast_ident(NULL, SRC_SPAN_NONE), NULL,
                             ast_ident(NULL, SRC_SPAN_NONE), @$); }
  | "draw" name exprs name
        { $$ = ast_stmt_draw(A, $2, $3, ast_ident(NULL, SRC_SPAN_NONE), NULL,
                             $4, @$); }
  | "draw" name exprs name expr
        { $$ = ast_stmt_draw(A, $2, $3, $4, $5,
                             ast_ident(NULL, SRC_SPAN_NONE), @$); }
  | "draw" name exprs name expr name
        { $$ = ast_stmt_draw(A, $2, $3, $4, $5, $6, @$); }
  | "equations" name    { $$ = ast_stmt_word(A, STMT_EQUATIONS, $2, @$); }
  | "initial" pbindings { $$ = ast_stmt_bindings(A, STMT_INITIAL, $2, @$); }
  | "simulate" "to" expr sim_options
        { $$ = ast_stmt_simulate(A, $3, $4, @$); }
  | "reset"             { $$ = ast_stmt_new(A, STMT_RESET, @$); }
  | printing opt_redirect { $$ = ast_stmt_to_file($1, $2, @$); }
  | "set" set_bindings  { $$ = ast_stmt_bindings(A, STMT_SET, $2, @$); }
  | steady
  | "load" STRING
        { $$ = ast_stmt_path(A, STMT_LOAD, ast_ident($2, @2), @$); }
  | "import" STRING
        { $$ = ast_stmt_path(A, STMT_IMPORT, ast_ident($2, @2), @$); }
  | "export" name STRING
        { $$ = ast_stmt_export(A, $2, ast_ident($3, @3), @$); }
  | "quit"              { $$ = ast_stmt_new(A, STMT_QUIT, @$); }
  | "exit"              { $$ = ast_stmt_new(A, STMT_EXIT, @$); }
    /* LANGUAGE.md §7.2: its `> "file"` comes before the statements */
  | "sweep" axes opt_redirect ':' sweep_body %prec SWEEP_END
        { $$ = ast_stmt_sweep(A, $2, $3, $5,
                              (src_span_t){@1.file, @1.begin, @4.end}, @$); }
    /* LANGUAGE.md §7.3: the family through the steady motion that comes
     * first after the colon */
  | "follow" name "from" expr "to" expr opt_step opt_redirect ':' steady
        follow_rest %prec SWEEP_END
        { $$ = ast_stmt_follow(A, $2, $4, $6, $7, $8, $10, $11,
                               (src_span_t){@1.file, @1.begin, @9.end}, @$); }
    ;

steady:
    "steady" pbindings  { $$ = ast_stmt_bindings(A, STMT_STEADY, $2, @$); }
    ;

follow_rest:
    %empty              { $$ = NULL; }
  | follow_rest ';' opt_inner { $$ = ast_list_push(A, $1, $3); }
    ;

/* A sweep over several parameters is a grid (LANGUAGE.md §1.2). */
axes:
    axis                { $$ = ast_list_push(A, NULL, $1); }
  | axes ',' axis       { $$ = ast_list_push(A, $1, $3); }
    ;

axis:
    name "from" expr "to" expr "step" expr
        { $$ = ast_sweep_axis_new(A, $1, $3, $5, $7, @$); }
    ;

opt_step:
    %empty              { $$ = NULL; }
  | "step" expr         { $$ = $2; }
    ;

sweep_body:
    opt_inner           { $$ = ast_list_push(A, NULL, $1); }
  | sweep_body ';' opt_inner { $$ = ast_list_push(A, $1, $3); }
    ;

opt_inner:
    %empty              { $$ = NULL; }
  | stmt
    ;

/* LANGUAGE.md §7: every statement that prints takes `> "file"` at its
 * end and writes there instead (the session does it: session.c).  A new
 * printing statement is one more line here. */
printing:
    "print" exprs
        { $$ = ast_stmt_output(A, STMT_PRINT, $2, NULL, @$); }
  | "accel"             { $$ = ast_stmt_new(A, STMT_ACCEL, @$); }
  | "table" exprs
        { $$ = ast_stmt_output(A, STMT_TABLE, $2, NULL, @$); }
  | "plot" exprs opt_vs
        { $$ = ast_stmt_output(A, STMT_PLOT, $2, $3, @$); }
  | "show" expr         { $$ = ast_stmt_show(A, false, $2, @$); }
  | "show" "latex" expr { $$ = ast_stmt_show(A, true, $3, @$); }
    /* `mass` is a keyword, yet `show mass` names a report like `show
     * model`: it becomes the name "mass"; */
  | "show" "mass"
        { $$ = ast_stmt_show(A, false, ast_name(A, $2, @2), @$); }
  | "show" "latex" "mass"
        { $$ = ast_stmt_show(A, true, ast_name(A, $3, @3), @$); }
    /* and `show accel`, the accelerations solved (LANGUAGE.md §7.1) */
  | "show" "accel"
        { $$ = ast_stmt_show(A, false, ast_name(A, $2, @2), @$); }
  | "show" "latex" "accel"
        { $$ = ast_stmt_show(A, true, ast_name(A, $3, @3), @$); }
  | "check"             { $$ = ast_stmt_new(A, STMT_CHECK, @$); }
  | "compare" name name { $$ = ast_stmt_compare(A, $2, $3, NULL, @$); }
  | "compare" name name "samples" expr
        { $$ = ast_stmt_compare(A, $2, $3, $5, @$); }
  | "worksheet" name    { $$ = ast_stmt_worksheet(A, false, $2, @$); }
  | "worksheet" "latex" name
                        { $$ = ast_stmt_worksheet(A, true, $3, @$); }
  | "help"
        { $$ = ast_stmt_word(A, STMT_HELP, ast_ident(NULL, SRC_SPAN_NONE),
                             @$); }
  | "help" topic        { $$ = ast_stmt_word(A, STMT_HELP, $2, @$); }
  | "linearize" opt_exprs
        { $$ = ast_stmt_output(A, STMT_LINEARIZE, $2, NULL, @$); }
  | "eigen" opt_exprs
        { $$ = ast_stmt_output(A, STMT_EIGEN, $2, NULL, @$); }
  | "plot" "sweep"      { $$ = ast_stmt_new(A, STMT_PLOT_SWEEP, @$); }
  | "plot" "follow"
        { $$ = ast_stmt_output(A, STMT_PLOT_FOLLOW, NULL, NULL, @$); }
  | "plot" "follow" exprs opt_vs
        { $$ = ast_stmt_output(A, STMT_PLOT_FOLLOW, $3, $4, @$); }
    /* VARS are variables (x, x'), not expressions: an expression could
     * go on with them */
  | "lyapunov" "to" expr opt_step
        { $$ = ast_stmt_lyapunov(A, $3, $4, NULL, @$); }
  | "lyapunov" "to" expr opt_step lvars
        { $$ = ast_stmt_lyapunov(A, $3, $4, $5, @$); }
    /* `at s = VALUE`: the name is checked by the interpreter */
  | "transfer" name "from" name "at" name '=' expr
        { $$ = ast_stmt_transfer(A, $2, $4, $6, $8, @$); }
  | "bode" name "from" name "from" expr "to" expr
        { $$ = ast_stmt_bode(A, $2, $4, $6, $8, @$); }
  | "animate"
        { $$ = ast_stmt_animate(A, NULL, ast_ident(NULL, SRC_SPAN_NONE), NULL,
                                NULL, @$); }
  | "animate" "speed" expr
        { $$ = ast_stmt_animate(A, $3, ast_ident(NULL, SRC_SPAN_NONE), NULL,
                                NULL, @$); }
  | "animate" name expr ',' expr
        { $$ = ast_stmt_animate(A, NULL, $2, $3, $5, @$); }
  | "animate" "speed" expr name expr ',' expr
        { $$ = ast_stmt_animate(A, $3, $4, $5, $7, @$); }
    ;

name:
    IDENT               { $$ = ast_ident($1, @1); }
    ;

names:
    name                { $$ = ast_list_push(A, NULL, ast_ident_new(A, $1)); }
  | names ',' name      { $$ = ast_list_push(A, $1, ast_ident_new(A, $3)); }
    ;

opt_params:
    %empty              { $$ = NULL; }
  | params
    ;

params:
    name                { $$ = ast_list_push(A, NULL, ast_ident_new(A, $1)); }
  | params ',' name     { $$ = ast_list_push(A, $1, ast_ident_new(A, $3)); }
    ;

bindings:
    binding             { $$ = ast_list_push(A, NULL, $1); }
  | bindings ',' binding { $$ = ast_list_push(A, $1, $3); }
    ;

/* input: a value is optional (0 by default). */
ibindings:
    ibinding            { $$ = ast_list_push(A, NULL, $1); }
  | ibindings ',' ibinding { $$ = ast_list_push(A, $1, $3); }
    ;

ibinding:
    binding
  | name                { $$ = ast_binding_new(A, $1, 0, NULL, @$); }
    ;

binding:
    name '=' expr       { $$ = ast_binding_new(A, $1, 0, $3, @$); }
    ;

/* initial: a name with primes (x' is the velocity of x). */
pbindings:
    pbinding            { $$ = ast_list_push(A, NULL, $1); }
  | pbindings ',' pbinding { $$ = ast_list_push(A, $1, $3); }
    ;

pbinding:
    name primes '=' expr { $$ = ast_binding_new(A, $1, $2, $4, @$); }
  | name primes '~' expr { $$ = ast_guess_new(A, $1, $2, $4, @$); }
    ;

primes:
    %empty              { $$ = 0; }
  | primes '\''         { $$ = $1 + 1; }
    ;

/* `set rtol = 1e-8`: the simulation defaults are set by their keyword;
 * `set a = 1, b = 2` sets several. */
set_bindings:
    set_binding         { $$ = ast_list_push(A, NULL, $1); }
  | set_bindings ',' set_binding { $$ = ast_list_push(A, $1, $3); }
    ;

set_binding:
    set_name '=' expr   { $$ = ast_binding_new(A, $1, 0, $3, @$); }
    ;

set_name:
    name
  | "step"              { $$ = ast_ident($1, @1); }
  | "integrator"        { $$ = ast_ident($1, @1); }
  | "rtol"              { $$ = ast_ident($1, @1); }
  | "atol"              { $$ = ast_ident($1, @1); }
  | "project"           { $$ = ast_ident($1, @1); }
    ;

sim_options:
    %empty              { $$ = NULL; }
  | sim_options sim_option { $$ = ast_list_push(A, $1, $2); }
    ;

sim_option:
    "step" expr
        { $$ = ast_sim_option_new(A, SIM_OPT_STEP, $2,
                                  ast_ident(NULL, SRC_SPAN_NONE), @$); }
  | "integrator" name
        { $$ = ast_sim_integrator_new(A, $2, ast_ident(NULL, SRC_SPAN_NONE),
                                      NULL, @$); }
    /* `integrator dla h 0.01` (LANGUAGE.md §6.2): the word is checked by
     * the interpreter */
  | "integrator" name name expr
        { $$ = ast_sim_integrator_new(A, $2, $3, $4, @$); }
  | "until" expr '=' expr opt_dir
        { $$ = ast_sim_event_new(A, SIM_OPT_UNTIL, $2, $4, (int)$5, @$); }
  | "sample" "at" expr '=' expr opt_dir
        { $$ = ast_sim_event_new(A, SIM_OPT_SAMPLE_AT, $3, $5, (int)$6, @$); }
  | "rtol" expr
        { $$ = ast_sim_option_new(A, SIM_OPT_RTOL, $2,
                                  ast_ident(NULL, SRC_SPAN_NONE), @$); }
  | "atol" expr
        { $$ = ast_sim_option_new(A, SIM_OPT_ATOL, $2,
                                  ast_ident(NULL, SRC_SPAN_NONE), @$); }
  | "project"
        { $$ = ast_sim_option_new(A, SIM_OPT_PROJECT, NULL,
                                  ast_ident(NULL, SRC_SPAN_NONE), @$); }
    ;

lvars:
    lvar                { $$ = ast_list_push(A, NULL, $1); }
  | lvars ',' lvar      { $$ = ast_list_push(A, $1, $3); }
    ;

lvar:
    IDENT               { $$ = ast_name(A, $1, @$); }
  | lvar '\''
        { $$ = ast_unop(A, AST_PRIME, $1, @$); DEPTH_OK($$, @$); }
    ;

opt_dir:
    %empty              { $$ = 0; }
  | "rising"            { $$ = 1; }
  | "falling"           { $$ = -1; }
    ;

exprs:
    expr                { $$ = ast_list_push(A, NULL, $1); }
  | exprs ',' expr      { $$ = ast_list_push(A, $1, $3); }
    ;

opt_exprs:
    %empty              { $$ = NULL; }
  | exprs
    ;

opt_vs:
    %empty              { $$ = NULL; }
  | "vs" expr           { $$ = $2; }
    ;

opt_redirect:
    %empty              { $$ = ast_ident(NULL, SRC_SPAN_NONE); }
  | '>' STRING          { $$ = ast_ident($2, @2); }
    ;

topic:
    name
  | keyword             { $$ = ast_ident($1, @1); }
    ;

keyword:
    "param" | "coord" | "speed" | "let" | "kinetic" | "potential"
  | "lagrangian" | "particle" | "mass" | "at" | "force" | "constraint"
  | "kinematic" | "equations" | "initial" | "simulate" | "to" | "step"
  | "integrator" | "rtol" | "atol" | "project" | "reset" | "print"
  | "accel" | "table" | "plot" | "vs" | "show" | "latex" | "check"
  | "compare" | "samples" | "worksheet" | "set" | "load" | "import"
  | "help" | "quit" | "exit" | "frame" | "body" | "gravity" | "torque"
  | "linearize" | "eigen" | "sweep" | "export"
  | "input" | "output" | "transfer" | "bode" | "steady" | "follow"
  | "lyapunov" | "draw" | "animate"
    ;

/* ---- expressions: LANGUAGE.md §3.1, lowest precedence first ---- */

expr:
    sum
    ;

sum:
    sum '+' term
        { $$ = ast_binop(A, AST_ADD, $1, $3, @$); DEPTH_OK($$, @$); }
  | sum '-' term
        { $$ = ast_binop(A, AST_SUB, $1, $3, @$); DEPTH_OK($$, @$); }
  | term
    ;

term:
    term '*' unary
        { $$ = ast_binop(A, AST_MUL, $1, $3, @$); DEPTH_OK($$, @$); }
  | term '/' unary
        { $$ = ast_binop(A, AST_DIV, $1, $3, @$); DEPTH_OK($$, @$); }
  | unary
    ;

/* Unary signs bind looser than ^: -x^2 is -(x^2). */
unary:
    '-' unary   { $$ = ast_unop(A, AST_NEG, $2, @$); DEPTH_OK($$, @$); }
  | '+' unary   { $$ = ast_unop(A, AST_POS, $2, @$); DEPTH_OK($$, @$); }
  | power
    ;

/* ^ is right-associative (2^3^2 is 2^9) and its exponent may carry a
 * sign (2^-1). */
power:
    postfix '^' unary
        { $$ = ast_binop(A, AST_POW, $1, $3, @$); DEPTH_OK($$, @$); }
  | postfix
    ;

/* Postfix ' and [i] bind tightest: x'' is (x')', P1'[2] is (P1')[2]. */
postfix:
    primary
  | postfix '\''
        { $$ = ast_unop(A, AST_PRIME, $1, @$); DEPTH_OK($$, @$); }
  | postfix '[' expr ']'
        { $$ = ast_binop(A, AST_INDEX, $1, $3, @$); DEPTH_OK($$, @$); }
    ;

primary:
    NUMBER              { $$ = ast_num(A, $1, @$); }
  | IDENT               { $$ = ast_name(A, $1, @$); }
  | MEMBER              { $$ = ast_member(A, $1, @$); }
  | name '(' ')'
        { $$ = ast_call(A, $1, NULL, @$); DEPTH_OK($$, @$); }
  | name '(' exprs ')'
        { $$ = ast_call(A, $1, $3, @$); DEPTH_OK($$, @$); }
  | '(' expr ')'        { $$ = ast_paren($2, @$); }
  | '[' exprs ']'
        { $$ = ast_vector(A, $2, @$); DEPTH_OK($$, @$); }
    ;

%%

/* ---- syntax error messages ------------------------------------------- */

/* The symbol kind of a character token. */
#define SYM(c) YYTRANSLATE(c)

/* How a user reads an expected token. */
static const char *parse_token_desc(yysymbol_kind_t k, char *buf, size_t n)
{
    switch (k) {
    case YYSYMBOL_YYEOF: return "end of input";
    case YYSYMBOL_NEWLINE: return "end of line";
    case YYSYMBOL_IDENT: return "a name";
    case YYSYMBOL_MEMBER: return "a frame's unit vector";
    case YYSYMBOL_NUMBER: return "a number";
    case YYSYMBOL_STRING: return "a file name in quotes";
    default: break;
    }
    if (k == SYM('\''))
        return "a prime";
    const char *s = yysymbol_name(k);
    if (k >= YYSYMBOL_PARAM && k <= YYSYMBOL_EXIT) {
        snprintf(buf, n, "'%s'", s);
        return buf;
    }
    return s; /* a character token: bison names it "'='" */
}

/* How a user reads the token that was found: its text, quoted, for names,
 * numbers and strings (cut when long). */
static void parse_found_desc(const parse_ctx_t *ctx, yysymbol_kind_t k,
                             src_span_t at, char *buf, size_t n)
{
    const char *kind = NULL;
    switch (k) {
    case YYSYMBOL_IDENT: kind = "name"; break;
    case YYSYMBOL_MEMBER: kind = "name"; break;
    case YYSYMBOL_NUMBER: kind = "number"; break;
    case YYSYMBOL_STRING: kind = "string"; break;
    default: {
        if (k == SYM('\'')) {
            snprintf(buf, n, "prime");
            return;
        }
        char tmp[64];
        snprintf(buf, n, "%s", parse_token_desc(k, tmp, sizeof tmp));
        return;
    }
    }
    uint32_t len = at.end > at.begin ? at.end - at.begin : 0;
    const uint32_t max = 40;
    if (len > max)
        snprintf(buf, n, "%s '%.*s...'", kind, (int)max, ctx->text + at.begin);
    else if (k == YYSYMBOL_STRING)
        snprintf(buf, n, "%s %.*s", kind, (int)len, ctx->text + at.begin);
    else
        snprintf(buf, n, "%s '%.*s'", kind, (int)len, ctx->text + at.begin);
}

static bool parse_sym_in(const bool *set, yysymbol_kind_t k)
{
    return set[k];
}

/* Folds the expected tokens into what a user thinks of: "a statement",
 * "an expression", "an operator", "end of line"; writes ", "/" or "
 * separated text into BUF, or nothing when the list is too long to help. */
static void parse_expected_desc(const yysymbol_kind_t *exp, int nexp,
                                char *buf, size_t n)
{
    bool in[YYNTOKENS] = {false};
    for (int i = 0; i < nexp; i++)
        in[exp[i]] = true;

    const char *items[YYNTOKENS + 4];
    char store[YYNTOKENS][32];
    int ni = 0;

    static const yysymbol_kind_t stmt_start[] = {
        YYSYMBOL_PARAM, YYSYMBOL_COORD, YYSYMBOL_SPEED, YYSYMBOL_LET,
        YYSYMBOL_KINETIC, YYSYMBOL_POTENTIAL, YYSYMBOL_LAGRANGIAN,
        YYSYMBOL_PARTICLE, YYSYMBOL_FORCE, YYSYMBOL_CONSTRAINT,
        YYSYMBOL_KINEMATIC, YYSYMBOL_EQUATIONS, YYSYMBOL_INIT,
        YYSYMBOL_SIMULATE, YYSYMBOL_RESET, YYSYMBOL_PRINT, YYSYMBOL_ACCEL,
        YYSYMBOL_TABLE, YYSYMBOL_PLOT, YYSYMBOL_SHOW, YYSYMBOL_CHECK,
        YYSYMBOL_COMPARE, YYSYMBOL_WORKSHEET, YYSYMBOL_SET, YYSYMBOL_LOAD,
        YYSYMBOL_IMPORT, YYSYMBOL_HELP, YYSYMBOL_QUIT, YYSYMBOL_EXIT,
        YYSYMBOL_FRAME, YYSYMBOL_BODY, YYSYMBOL_GRAVITY, YYSYMBOL_TORQUE,
        YYSYMBOL_LINEARIZE, YYSYMBOL_EIGEN, YYSYMBOL_SWEEP, YYSYMBOL_EXPORT,
        YYSYMBOL_INPUT, YYSYMBOL_OUTPUT, YYSYMBOL_TRANSFER, YYSYMBOL_BODE,
        YYSYMBOL_STEADY, YYSYMBOL_FOLLOW, YYSYMBOL_LYAPUNOV, YYSYMBOL_DRAW,
        YYSYMBOL_ANIMATE,
    };
    if (parse_sym_in(in, YYSYMBOL_PARAM) && parse_sym_in(in, YYSYMBOL_MASS)) {
        /* after `help`: any name or keyword */
        items[ni++] = "a topic";
        in[YYSYMBOL_IDENT] = false;
        for (int k = YYSYMBOL_PARAM; k <= YYSYMBOL_EXIT; k++)
            in[k] = false;
    } else if (parse_sym_in(in, YYSYMBOL_PARAM)) {
        items[ni++] = "a statement";
        for (size_t i = 0; i < sizeof stmt_start / sizeof *stmt_start; i++)
            in[stmt_start[i]] = false;
        in[YYSYMBOL_NEWLINE] = in[YYSYMBOL_YYEOF] = false;
        in[SYM(';')] = false;
    }
    if (parse_sym_in(in, YYSYMBOL_NUMBER)) {
        items[ni++] = "an expression";
        in[YYSYMBOL_NUMBER] = in[YYSYMBOL_IDENT] = false;
        in[YYSYMBOL_MEMBER] = false;
        in[SYM('(')] = in[SYM('[')] = false;
        in[SYM('-')] = in[SYM('+')] = false;
    }
    if (parse_sym_in(in, SYM('*'))) {
        items[ni++] = "an operator";
        in[SYM('+')] = in[SYM('-')] = false;
        in[SYM('*')] = in[SYM('/')] = false;
        in[SYM('^')] = in[SYM('\'')] = false;
        in[SYM('[')] = false;
    }
    bool eol = in[YYSYMBOL_NEWLINE];
    if (eol)
        in[YYSYMBOL_NEWLINE] = in[SYM(';')] = in[YYSYMBOL_YYEOF] = false;
    for (int k = 0; k < YYNTOKENS; k++)
        if (in[k])
            items[ni++] = parse_token_desc((yysymbol_kind_t)k, store[k],
                                           sizeof store[k]);
    if (eol)
        items[ni++] = "end of line";

    buf[0] = '\0';
    if (ni == 0 || ni > 8)
        return;
    size_t len = 0;
    len += (size_t)snprintf(buf + len, n - len, ", expected ");
    for (int i = 0; i < ni && len < n; i++) {
        const char *sep = i == 0 ? "" : i == ni - 1 ? " or " : ", ";
        len += (size_t)snprintf(buf + len, n - len, "%s%s", sep, items[i]);
    }
}

/* Whether the token at BEGIN is the first on its line. */
static bool parse_first_on_line(const parse_ctx_t *ctx, uint32_t begin)
{
    for (uint32_t i = begin; i > 0; i--) {
        char c = ctx->text[i - 1];
        if (c == '\n')
            return true;
        if (c != ' ' && c != '\t' && c != '\r')
            return false;
    }
    return false; /* the text's first line: nothing before it to leave open */
}

/* LANGUAGE.md §9: a statement left open — an unclosed bracket — that the
 * text's end or a new line cannot continue is reported at the opening
 * bracket, with what the new line had (WHAT, EXPECTED).  Returns whether
 * it was that case. */
static bool parse_unclosed(parse_ctx_t *ctx, yysymbol_kind_t found,
                           src_span_t at, const char *what,
                           const char *expected)
{
    unsigned depth = ctx->depth;
    if (found == SYM(')') || found == SYM(']'))
        return false; /* it closed one: the fault is before it */
    if (depth > 0 && ctx->open_at[depth - 1] == at.begin &&
        found != YYSYMBOL_YYEOF)
        depth--; /* the bracket found is not one left open */
    if (depth == 0 ||
        (found != YYSYMBOL_YYEOF && !parse_first_on_line(ctx, at.begin)))
        return false;
    uint32_t open = ctx->open_at[depth - 1];
    src_span_t sp = {ctx->file, open, open + 1};
    char bracket = ctx->text[open];
    if (found == YYSYMBOL_YYEOF) {
        diag_error(ctx->diag, sp, "'%c' is never closed", bracket);
        return true;
    }
    unsigned line, col;
    source_line_col(ctx->set, ctx->file, at.begin, &line, &col);
    diag_error(ctx->diag, sp,
               "'%c' is never closed: line %u cannot continue the statement "
               "(unexpected %s%s)",
               bracket, line, what, expected);
    return true;
}

static int yyreport_syntax_error(const yypcontext_t *yyctx, yyscan_t scanner,
                                 parse_ctx_t *ctx)
{
    (void)scanner;
    yysymbol_kind_t found = yypcontext_token(yyctx);
    src_span_t at = *yypcontext_location(yyctx);
    yysymbol_kind_t exp[YYNTOKENS];
    int nexp = yypcontext_expected_tokens(yyctx, exp, YYNTOKENS);
    if (nexp < 0)
        nexp = 0; /* out of LAC stack: report without the list */
    if (nexp == 1 && exp[0] == YYSYMBOL_YYEMPTY)
        nexp = 0;

    char what[128], expected[512];
    parse_found_desc(ctx, found, at, what, sizeof what);
    parse_expected_desc(exp, nexp, expected, sizeof expected);
    if (found == YYSYMBOL_YYEOF && !ctx->diag->set)
        ctx->incomplete = true;
    if (parse_unclosed(ctx, found, at, what, expected))
        return 0;
    /* A misspelt statement word: say which one was meant. */
    const char *best = NULL;
    if (found == YYSYMBOL_IDENT && strstr(expected, "a statement") &&
        at.end - at.begin < 64) {
        char word[64];
        memcpy(word, ctx->text + at.begin, at.end - at.begin);
        word[at.end - at.begin] = '\0';
        best = source_closest(word, parse_keywords);
    }
    if (best)
        diag_error(ctx->diag, at, "unexpected %s%s; did you mean '%s'?", what,
                   expected, best);
    else
        diag_error(ctx->diag, at, "unexpected %s%s", what, expected);
    return 0;
}

/* Bison calls this only when its stacks are full: input nested deeper
 * than YYMAXDEPTH allows. */
static void nhyyerror(NHYYLTYPE *loc, yyscan_t scanner, parse_ctx_t *ctx,
                      const char *msg)
{
    (void)scanner;
    (void)msg;
    parse_too_deep(ctx, *loc);
}

/* Reports that an expression is nested more than PARSE_MAX_DEPTH levels. */
static void parse_too_deep(parse_ctx_t *ctx, src_span_t where)
{
    diag_error(ctx->diag, where,
               "expression nested too deeply (more than %d levels)",
               PARSE_MAX_DEPTH);
}
