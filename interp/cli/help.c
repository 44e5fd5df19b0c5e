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
     "Notebooks:    notebook\n"
     "\n"
     "`help TOPIC` tells more about any of these.\n"},
    {"param",
     "param NAME = VALUE, ...\n"
     "  Declares named numbers.  Parameters stay symbols in the equations:\n"
     "  `set NAME = VALUE` changes one at once, with no new derivation.\n"
     "  A value may use parameters declared before.\n"
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
     "  time derivative of the argument expression.\n"
     "  Example: let wx = theta'*cos(phi) + psi'*sin(theta)*sin(phi)\n"},
    {"kinetic",
     "kinetic NAME = EXPR\n"
     "  The kinetic energy (added to the particles' energies).  NAME can be\n"
     "  used in expressions.  A second `kinetic` replaces the first.\n"
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
     "  multipliers.  `show accel` gives them solved symbolically.\n"},
    {"table",
     "table EXPR, ... [> \"file.csv\"]\n"
     "  One CSV row per recorded sample: a header with the expression texts,\n"
     "  then values.\n"},
    {"plot",
     "plot Y, ... [vs X] [> \"file.png\" | \"file.svg\"]\n"
     "  Draws the recorded samples with gnuplot (X defaults to t); in a\n"
     "  notebook, without a file, the figure is shown inline.\n"},
    {"vs", "vs: part of `plot Y vs X` (help plot).\n"},
    {"show",
     "show EXPR         the expression simplified, as text\n"
     "show latex EXPR   the same as LaTeX\n"
     "show model        coordinates, parameters, energies, forces, constraints\n"
     "show eom          the chosen equations, symbolically\n"
     "show accel        the accelerations solved: x'' = ... per coordinate\n"
     "                  (z' = ... per speed for maggi, gibbs_appell)\n"
     "show x''          one of them; an expression with accelerations in it\n"
     "                  is shown with the solved ones put in\n"
     "show mass         the mass matrix M_ij = d2L/dq_i'dq_j'\n"
     "show reduced      the reduced Lagrangian (voronec, naive)\n"
     "show voronec      the coefficients a and b of Voronec's equations\n"
     "  `latex` after `show` works for all of them: the LaTeX compiles in an\n"
     "  amsmath document as it is (an align* environment); in a notebook it\n"
     "  is shown as typeset mathematics.  What show prints is simplified:\n"
     "  expanded, cancelled, collected, with sin^2 + cos^2 = 1, in exact\n"
     "  fractions; a form that lost a part which may be undefined says\n"
     "  where it holds: show x/x prints 1  (where x != 0).  A solved form\n"
     "  longer than 1000 characters is not shown: it says so and shows the\n"
     "  equations it comes from.\n"},
    {"latex",
     "latex: `show latex ...` and `worksheet latex NAME` print LaTeX\n"
     "  (help show, help worksheet).\n"},
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
     "worksheet latex NAME\n"
     "  Benenti's worksheets, step by step and numbered as in his text\n"
     "  (seed 001, §12): each object symbolically (simplified, as `show`\n"
     "  shows it, where no entry is longer than 1000 characters) and at the\n"
     "  current state, with one line saying what it is for.  `latex` prints\n"
     "  the sheet as one align* environment.\n"
     "  Reading the sheets beside Benenti's text:\n"
     "  - the active forces A_i (and A^i = g^ij A_j) are computed at the end\n"
     "    of the sheets of the first and second kind, as in his text, though\n"
     "    Phi_i (first kind, step 8) and F^i (second kind, step 9) use them;\n"
     "  - preliminary step 5, variant: \"formula (59)\" is eq. 16 (eq. 59 is\n"
     "    Gauss's function);\n"
     "  - first kind, step 7: the P_i come from step 5 of the preliminary\n"
     "    sheet (the text says step 6, which it does not have);\n"
     "  - second kind, step 6: X_a^i = H_ab C^bi (the text prints G_ab);\n"
     "  - second kind, steps 10-12, and eqs. 49, 71: q'^i dC^a/dq^i (the text\n"
     "    prints dC/dq'^i; the derivative of C along the motion,\n"
     "    C^a_i q''^i + q'^i dC^a/dq^i = 0, shows dC/dq is meant);\n"
     "  - reduced sheet, step 12: dq'^i/dt = D^i (the text prints dq^i/dt).\n"
     "  The objects of the first and second kind hold where their matrices\n"
     "  (G; g and H) are invertible; their factors cancel there.\n"},
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
     "  form qd' = sum_j a_dj(q) qj'.  State: q and the independent\n"
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
     "or t; lambda(NAME) and reaction(x) in print, table and show.\n"},
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
     "never ends the session; in a script the first error stops the run.\n"},
    {"notebook",
     "nh in Jupyter: `nh --install-kernel` (or --user) registers the kernel\n"
     "`nh` (`make install` installs it too); pick it in Jupyter.  One\n"
     "notebook is one session; a cell holds statements as a script does,\n"
     "and an error names the cell: <cell 3>:2:7 is line 2 of cell [3].\n"
     "`show latex ...` is typeset, `plot` without a file is drawn inline,\n"
     "Tab completes as in the REPL, and interrupting the kernel stops a\n"
     "long simulate as Ctrl-C does.  `quit` ends the session: the next\n"
     "cell starts a fresh one.  Front ends drive nh with `nh --protocol`\n"
     "(doc/protocol.md).\n"},
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
    "notebook", NULL};

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

