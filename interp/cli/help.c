/*
 * help.c — the texts of `help` and `help TOPIC`: one per statement, one
 * per method of LANGUAGE.md §5, and a few on the language itself.
 *
 * Must not: print (the session prints what help_text returns).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "interp/cli/stmts.h"

typedef struct help_entry {
    const char *topic;
    const char *text;
} help_entry_t;

static const help_entry_t entries[] = {
    {NULL,
     "nh describes mechanical systems with nonholonomic constraints and\n"
     "derives, evaluates and integrates their equations of motion.\n"
     "\n"
     "Declarations: param coord speed let kinetic potential lagrangian\n"
     "              particle force constraint kinematic\n"
     "Equations:    equations accel compare check show\n"
     "Motion:       initial simulate reset table plot\n"
     "Teaching:     worksheet\n"
     "Session:      set load import help quit exit\n"
     "Methods:      lagrange multipliers second_kind voronec naive maggi\n"
     "              gibbs_appell\n"
     "Language:     expressions functions vectors prime errors\n"
     "\n"
     "`help TOPIC` tells more about any of these.\n"},
    {"param",
     "param NAME = VALUE, ...\n"
     "  Declares named numbers.  Parameters stay symbols in the equations:\n"
     "  `set NAME = VALUE` changes one at once, with no new derivation.\n"
     "  A value may use parameters declared before.  Declaring one that the\n"
     "  model does not use keeps the recorded samples.  The names of\n"
     "  built-in functions and of the settings (rtol, atol, step, integrator,\n"
     "  max_steps, compile) cannot be declared.\n"
     "  Example: param m = 1, R = 0.5, g = 9.81\n"},
    {"coord",
     "coord NAME, ...\n"
     "  Declares generalized coordinates, in this order.  For a coordinate\n"
     "  x, x' is its velocity and x'' its acceleration.\n"
     "  Example: coord phi, theta, psi, x, y\n"},
    {"speed",
     "speed NAME, ...\n"
     "  Declares speeds (quasi-velocities) z for the equations of the first\n"
     "  kind (maggi, gibbs_appell), with a kinematic equation per\n"
     "  coordinate.  Example: speed u1, u2\n"},
    {"let",
     "let NAME = EXPR          a named expression\n"
     "let NAME(A, B) = EXPR    an expression function\n"
     "  Bodies are substituted where used.  Inside a function, A' is the\n"
     "  time derivative of the argument expression.  Declaring a let keeps\n"
     "  the recorded samples, unless the model uses it.  `let sin(a) = ...`\n"
     "  is an error: built-in functions cannot be declared.\n"
     "  Example: let wx = theta'*cos(phi) + psi'*sin(theta)*sin(phi)\n"},
    {"kinetic",
     "kinetic NAME = EXPR\n"
     "  The kinetic energy (added to the particles' energies).  NAME in\n"
     "  expressions is the whole of it, particles included.  A second\n"
     "  `kinetic` replaces the first.  Likely slips get a warning: a\n"
     "  coordinate without its velocity, an energy not quadratic in the\n"
     "  velocities, a negative direction where the equations are first\n"
     "  evaluated.\n"
     "  Example: kinetic T = m/2*(x'^2 + y'^2)\n"},
    {"potential",
     "potential NAME = EXPR\n"
     "  The potential energy V; the Lagrangian is L = T - V.\n"
     "  Example: potential V = m*g*z\n"},
    {"lagrangian",
     "lagrangian NAME = EXPR\n"
     "  The Lagrangian, instead of kinetic/potential/particle.\n"},
    {"particle",
     "particle NAME mass EXPR at VECTOR\n"
     "  A point mass: adds m/2*dot(NAME', NAME') to the kinetic energy.  NAME\n"
     "  is its position vector in expressions, NAME' its velocity.\n"
     "  Example: particle P1 mass m1 at [x1, y1]\n"},
    {"mass", "mass: part of `particle NAME mass EXPR at VECTOR` (help particle).\n"},
    {"at", "at: part of `particle NAME mass EXPR at VECTOR` (help particle).\n"},
    {"force",
     "force COORD = EXPR     a generalized force on a coordinate\n"
     "force PARTICLE = VEC   a force on a particle: Q_i += dot(F, diff(P, q_i))\n"
     "  Forces add up.  Potential forces belong in `potential`.\n"
     "  Example: force x = -c*x'\n"},
    {"constraint",
     "constraint [NAME:] LHS = RHS\n"
     "  A constraint C = LHS - RHS = 0 on the coordinates, velocities and t:\n"
     "  linear, affine or nonlinear in the velocities.  Without velocities\n"
     "  it is holonomic, f(q, t) = 0, and the equations use f' = 0.\n"
     "  Unnamed constraints are called c1, c2, ...\n"
     "  Example: constraint roll_x: x' = R*theta'*sin(phi)\n"},
    {"kinematic",
     "kinematic COORD' = EXPR\n"
     "  The kinematic equation q' = psi(q, z, t) of a coordinate in terms of\n"
     "  the speeds (first-kind equations need one per coordinate).\n"
     "  Example: kinematic x' = u1*cos(theta)\n"},
    {"equations",
     "equations METHOD\n"
     "  Chooses the equations of motion: lagrange, multipliers,\n"
     "  second_kind, voronec, naive, maggi (first_kind, kane),\n"
     "  gibbs_appell.  Default: lagrange without constraints, else\n"
     "  multipliers.  `help METHOD` tells what each one is.\n"},
    {"initial",
     "initial NAME = VALUE, NAME' = VALUE, t = VALUE, ...\n"
     "  Sets the current state and remembers it for `reset`.  Names not\n"
     "  given are 0, except the velocities that the constraints determine:\n"
     "  those are solved from the constraints.  Given values that violate a\n"
     "  constraint are an error.\n"
     "  Example: initial theta = 1, phi' = 0.7, theta' = 0.3, psi' = 1.1\n"},
    {"simulate",
     "simulate to T [step H] [integrator NAME] [rtol A] [atol B] [project]\n"
     "  Integrates from the current state to time T, recording a sample\n"
     "  every H (default (T - t)/1000).  Integrators: rk2 rk4 rkf45 rkck\n"
     "  rk8pd (default) msadams rk1imp rk2imp rk4imp bsimp msbdf.\n"
     "  `project` pulls the state back onto the constraints after each step.\n"},
    {"to", "to: part of `simulate to T` (help simulate).\n"},
    {"step", "step: part of `simulate to T step H` (help simulate).\n"},
    {"integrator", "integrator: part of `simulate ... integrator NAME` (help simulate).\n"},
    {"rtol", "rtol: the relative tolerance of `simulate` (default 1e-10).\n"},
    {"atol", "atol: the absolute tolerance of `simulate` (default 1e-12).\n"},
    {"project", "project: an option of `simulate` (help simulate).\n"},
    {"reset", "reset\n  Returns to the state of the last `initial` and clears the samples.\n"},
    {"print",
     "print EXPR, ...\n"
     "  Prints `TEXT = VALUE` per expression at the current state.\n"
     "  Accelerations (x''), lambda(NAME) and reaction(x) take the values\n"
     "  the chosen equations give.\n"},
    {"accel",
     "accel\n"
     "  The accelerations of the chosen equations at the current state: one\n"
     "  `q'' = VALUE` line per coordinate (z' lines first for maggi and\n"
     "  gibbs_appell), then lambda(NAME) per constraint for the methods with\n"
     "  multipliers.\n"},
    {"table",
     "table EXPR, ... [> \"file.csv\"]\n"
     "  One CSV row per recorded sample: a header with the expression texts,\n"
     "  then values.  A declaration that changes the model clears the\n"
     "  samples; lets and parameters the model does not use keep them.\n"},
    {"plot",
     "plot Y, ... [vs X] [> \"file.png\" | \"file.svg\"]\n"
     "  Draws the recorded samples with gnuplot (X defaults to t).\n"},
    {"vs", "vs: part of `plot Y vs X` (help plot).\n"},
    {"show",
     "show EXPR         the expression simplified, as text\n"
     "show latex EXPR   the same as LaTeX\n"
     "show model        coordinates, parameters, energies, forces, constraints\n"
     "show eom          the chosen equations, symbolically\n"
     "show mass         the mass matrix M_ij = d2L/dq_i'dq_j'\n"
     "show reduced      the reduced Lagrangian (voronec, naive)\n"
     "show voronec      the coefficients a and b of Voronec's equations\n"
     "  `latex` after `show` works for all of them.\n"},
    {"latex", "latex: `show latex ...` prints LaTeX (help show).\n"},
    {"check",
     "check\n"
     "  For each constraint: holonomic / linear / affine / nonlinear,\n"
     "  homogeneity, time dependence, integrability (Frobenius and\n"
     "  exactness); then the rank of B at the state, the degrees of\n"
     "  freedom, and whether energy is conserved (Benenti Thm 11.6).\n"},
    {"compare",
     "compare A B [samples N]\n"
     "  The accelerations of equations A and B side by side at the current\n"
     "  state, or the largest difference over N random states consistent\n"
     "  with the constraints.  The last line, max |diff|, is the largest\n"
     "  |a - b| / max(1, |a|, |b|).\n"
     "  Example: compare voronec naive\n"},
    {"samples", "samples: part of `compare A B samples N` (help compare).\n"},
    {"worksheet",
     "worksheet preliminary | first | second | second_reduced\n"
     "  Benenti's worksheets, step by step, symbolically and at the state.\n"},
    {"set",
     "set NAME = VALUE\n"
     "  Changes a parameter, or a simulation default: rtol, atol, step,\n"
     "  integrator, max_steps (the most integrator steps one simulate may\n"
     "  take, 1000000 unless set).  Example: set m = 2\n"},
    {"load", "load \"file.nh\"\n  Runs a file; a relative path is taken from the directory of\n  the file that loads it.\n"},
    {"import",
     "import \"name\"\n"
     "  Runs name.nh from the standard library (NH_PATH first, then the\n"
     "  installed library).  A module runs once per session.\n"},
    {"help", "help [TOPIC]\n  This help.\n"},
    {"quit", "quit\n  Ends the session (also exit, or Ctrl-D in the REPL).\n"},
    {"exit", "exit\n  Ends the session (also quit, or Ctrl-D in the REPL).\n"},
    {"lagrange",
     "equations lagrange\n"
     "  Lagrange's equations M q'' = -h, with M_ij = d2L/dq_i'dq_j' and\n"
     "  h_i = sum_j d2L/dq_i'dq_j q_j' + d2L/dq_i'dt - dL/dq_i - Q_i.\n"
     "  Only for models without constraints.\n"},
    {"multipliers",
     "equations multipliers\n"
     "  M q'' + h = B^T lambda with B = dC/dq', together with the\n"
     "  differentiated constraints B q'' + sum dC/dq_i q_i' + dC/dt = 0: one\n"
     "  linear system in (q'', lambda).  Chetaev's rule for nonlinear\n"
     "  constraints (Benenti Thm 11.2).\n"},
    {"second_kind",
     "equations second_kind\n"
     "  Benenti's equations of the second kind (eqs. 43-48): F = -M^-1 h,\n"
     "  H = B M^-1 B^T, lambda = -H^-1 (B F + dC/dq q' + dC/dt),\n"
     "  q'' = F + M^-1 B^T lambda.  Same motion as multipliers.\n"},
    {"voronec",
     "equations voronec\n"
     "  Voronec's equations (Lemos eqs. 8-11) for constraints in explicit\n"
     "  form qd' = sum_j a_dj(q) qj': the dependent velocity written alone\n"
     "  on the left, in no other constraint.  State: q and the independent\n"
     "  velocities.  `show voronec` prints the a and b coefficients.\n"},
    {"naive",
     "equations naive\n"
     "  Lagrange's equations of the reduced Lagrangian, ignoring the\n"
     "  constraint terms.  NOT valid in general (Lemos: the rolling sphere);\n"
     "  kept for teaching and comparison.\n"},
    {"maggi",
     "equations maggi   (aliases first_kind, kane)\n"
     "  Maggi's equations in explicit form (Benenti eq. 27): with\n"
     "  q' = psi(q, z, t), Psi = dpsi/dz, G = Psi^T M Psi,\n"
     "  z' = G^-1 Psi^T (-h - M (dpsi/dq psi + dpsi/dt)).  Needs speeds and a\n"
     "  kinematic equation for every coordinate.\n"},
    {"first_kind", "first_kind: another name of maggi (help maggi).\n"},
    {"kane", "kane: another name of maggi (help maggi).\n"},
    {"gibbs_appell",
     "equations gibbs_appell\n"
     "  The Gibbs-Appell equations dS/dz_a' = sum_i Q_i Psi_ia with the\n"
     "  Gibbs function S = 1/2 sum m |P''|^2 of the particles (Benenti eq. 68\n"
     "  when the kinetic energy is not made of particles).  Same motion as\n"
     "  maggi.\n"},
    {"expressions",
     "Expressions: numbers, names, + - * / ^ (right-associative; -x^2 is\n"
     "-(x^2)), the prime ' (total time derivative), v[i] (1-based), calls,\n"
     "and vectors [a, b] or [a, b, c].  Names: t, pi, coordinates,\n"
     "parameters, speeds, lets, energies, particles.\n"},
    {"functions",
     "Functions: sin cos tan asin acos atan atan2(y, x) sinh cosh tanh exp\n"
     "log sqrt abs sign min(a, b) max(a, b); dot(u, v) cross(u, v) norm(u);\n"
     "diff(e, v) with v a coordinate, a velocity x', a speed, a parameter\n"
     "or t (an e holding x'' is an error: x'' is the equations' value, not\n"
     "a symbol); lambda(NAME) and reaction(x) in print, table and show.\n"
     "Their names, and omega, on and velocity, cannot be declared.\n"},
    {"vectors",
     "Vectors: [e1, e2] or [e1, e2, e3]; + - componentwise, * and / by a\n"
     "scalar, u[i], dot, cross, norm.\n"},
    {"prime",
     "The prime: e' is the total time derivative of e,\n"
     "sum de/dq_i q_i' + sum de/dz_a z_a' + de/dt.  So (x^2)' is 2*x*x'.\n"
     "Model expressions may not contain second derivatives.\n"},
    {"errors",
     "Errors read FILE:LINE:COL: error: MESSAGE, with the source line and a\n"
     "caret.  A statement that fails changes nothing; in the REPL an error\n"
     "never ends the session; in a script the first error stops the run.\n"
     "An expression that cannot be evaluated at the state is an error at\n"
     "the declaration that holds it.  Likely slips are warnings (FILE:LINE:\n"
     "COL: warning: ...), shown under -q too; the statement takes effect.\n"},
};

const char *const help_topics[] = {
    "param", "coord", "speed", "let", "kinetic", "potential", "lagrangian",
    "particle", "mass", "at", "force", "constraint", "kinematic", "equations",
    "initial", "simulate", "to", "step", "integrator", "rtol", "atol",
    "project", "reset", "print", "accel", "table", "plot", "vs", "show",
    "latex", "check", "compare", "samples", "worksheet", "set", "load",
    "import", "help", "quit", "exit", "lagrange", "multipliers",
    "second_kind", "voronec", "naive", "maggi", "first_kind", "kane",
    "gibbs_appell", "expressions", "functions", "vectors", "prime", "errors",
    NULL};

const char *help_text(const char *topic)
{
    for (size_t i = 0; i < sizeof entries / sizeof *entries; i++) {
        if (!topic && !entries[i].topic)
            return entries[i].text;
        if (topic && entries[i].topic && strcmp(topic, entries[i].topic) == 0)
            return entries[i].text;
    }
    return NULL;
}

int help_stmt(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    const char *topic = st->u.word.name;
    const char *text = help_text(topic);
    if (!text) {
        const char *best = source_closest(topic, help_topics);
        if (best)
            return diag_error(err, st->u.word.span,
                              "no help on '%s'; did you mean '%s'?", topic,
                              best);
        return diag_error(err, st->u.word.span,
                          "no help on '%s'; `help` lists the topics", topic);
    }
    fputs(text, s->out);
    return 0;
}

