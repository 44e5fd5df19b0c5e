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

/* Texts that several topics share: a family of functions, a module of
 * the standard library and its functions. */
#define HELP_TRIG                                                          \
    "sin(x) cos(x) tan(x)       x in radians\n"                            \
    "asin(x) acos(x)            for -1 <= x <= 1 (else an error with the\n" \
    "                           state); asin in [-pi/2, pi/2], acos in\n"   \
    "                           [0, pi]\n"                                  \
    "atan(x)                    in (-pi/2, pi/2)\n"                         \
    "atan2(y, x)                the angle of the point (x, y), in\n"       \
    "                           (-pi, pi]; atan2(0, 0) = 0\n"               \
    "  Derivatives are exact (help diff).  Example: print atan2(y, x)\n"
#define HELP_HYP                                                           \
    "sinh(x) cosh(x) tanh(x)    the hyperbolic functions\n"                \
    "exp(x)                     e^x (an overflow is an error)\n"           \
    "log(x)                     the natural logarithm, for x > 0\n"        \
    "sqrt(x)                    for x >= 0; x^(1/2) is the same\n"         \
    "  A value outside a function's domain is an error with the state\n"   \
    "  (help errors).  Example: let r = sqrt(x^2 + y^2)\n"
#define HELP_ABS                                                           \
    "abs(x)                     |x|\n"                                     \
    "sign(x)                    -1, 0 or 1 (sign(0) = 0)\n"                \
    "  Their derivatives are taken where x != 0: diff(abs(x), x) is\n"     \
    "  sign(x), diff(sign(x), x) is 0.\n"
#define HELP_MINMAX                                                        \
    "min(a, b, ...) max(a, b, ...)\n"                                      \
    "  The smallest (largest) of one or more values; a vector argument\n"  \
    "  counts with each of its components: max([x, y, z], 0).  The\n"      \
    "  derivative is that of the argument that wins at the state.\n"
#define HELP_VECTORS                                                       \
    "dot(u, v)                  the scalar product of two vectors of one\n" \
    "                           length\n"                                   \
    "cross(u, v)                the vector product of two 3-vectors\n"     \
    "norm(v)                    sqrt(dot(v, v)); for a scalar use abs()\n" \
    "  Components are on the inertial axes (help vectors).\n"              \
    "  Example: let r = norm(P1 - P2)\n"
#define HELP_CONTACT                                                       \
    "import \"contact\"   (stdlib/contact.nh)\n"                          \
    "  Contact points of rigid bodies on the ground, the plane z = 0 of\n" \
    "  the inertial frame with z up, as functions of a body's place and\n" \
    "  its axes (unit vectors on the inertial axes, like W.x, W.y, W.z):\n" \
    "  contact_up(N)              the unit vector of the plane normal to N\n" \
    "                             that points most upwards\n"               \
    "  disk_contact(G, N, R)      the lowest point of a disk (a wheel):\n"  \
    "                             centre G, axis N, radius R\n"             \
    "  disk_centre(P, N, R)       the centre of a disk touching the ground\n" \
    "                             at P\n"                                   \
    "  disk_height(N, R)          that centre's height, R*sqrt(1 - N[3]^2)\n" \
    "  sphere_contact(G, R)       the lowest point of a sphere\n"          \
    "  ellipsoid_depth(EX, EY, EZ, A, B, C3)\n"                             \
    "                             how far the lowest point of an ellipsoid\n" \
    "                             with axes EX, EY, EZ and semi-axes A, B,\n" \
    "                             C3 lies below its centre\n"              \
    "  ellipsoid_contact(C, EX, EY, EZ, A, B, C3)   that point (centre C)\n" \
    "  paraboloid_contact(V, EX, EY, EZ, R1, R2)\n"                         \
    "                             the lowest point of a body bounded near\n" \
    "                             its vertex V by z = x^2/(2 R1) +\n"       \
    "                             y^2/(2 R2) (the rattleback; EZ up)\n"     \
    "  A rolling constraint is then velocity(POINT, BODY) = [0, 0, 0].\n"  \
    "  Example: import \"contact\"\n"                                     \
    "           let G = [x, y, disk_height(W.y, r)]\n"                      \
    "           body wheel mass m at G frame W inertia [A, B, A]\n"        \
    "           constraint roll: velocity(disk_contact(G, W.y, r), wheel)\n" \
    "             = [0, 0, 0]\n"
#define HELP_EULER                                                         \
    "import \"euler\"   (stdlib/euler.nh)\n"                              \
    "  ZXZ Euler angles (phi, theta, psi): the angular velocity,\n"        \
    "  omega_space(phi, theta, psi)   components on the fixed axes\n"      \
    "  omega_body(phi, theta, psi)    components on the body's principal\n" \
    "                                 axes\n"                               \
    "  The arguments are expressions, usually coordinates; their primes\n" \
    "  are the angle rates.  Example: import \"euler\"\n"                 \
    "           let w = omega_space(phi, theta, psi)\n"
#define HELP_RIGID                                                         \
    "import \"rigid\"   (stdlib/rigid.nh)\n"                              \
    "  rigid_T(m, v, I1, I2, I3, w)   the kinetic energy of a rigid body\n" \
    "    (Koenig's theorem): m/2*dot(v, v) + (I1*w1^2 + I2*w2^2 +\n"       \
    "    I3*w3^2)/2, with v the velocity of the centre of mass, I1, I2,\n" \
    "    I3 the principal moments about it and w the angular velocity on\n" \
    "    those axes (omega_body of \"euler\").  `body` does the same with\n" \
    "    frames (help body).\n"                                            \
    "  Example: import \"euler\"; import \"rigid\"\n"                    \
    "           kinetic T = rigid_T(m, [x', y'], I, I, I,\n"               \
    "                               omega_body(phi, theta, psi))\n"

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
     "Bodies:       frame body gravity torque\n"
     "Equations:    equations accel compare check show\n"
     "Motion:       initial simulate reset table plot\n"
     "Stability:    linearize eigen sweep\n"
     "Motions:      steady follow lyapunov\n"
     "Control:      input output transfer bode\n"
     "Seeing:       draw animate\n"
     "Teaching:     worksheet\n"
     "Session:      set load import export help quit exit\n"
     "Methods:      lagrange multipliers second_kind voronec naive maggi\n"
     "              gibbs_appell\n"
     "Language:     expressions functions vectors prime errors frames\n"
     "Library:      stdlib (import \"contact\", \"euler\", \"rigid\")\n"
     "Notebooks:    notebook\n"
     "\n"
     "Every statement that prints (print accel show check compare\n"
     "worksheet help table linearize eigen) takes > \"file\" at its end\n"
     "and writes there instead; the file is replaced only when all of it\n"
     "was written (plot and animate: an image or a page, by its extension).\n"
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
     "  kind (maggi, gibbs_appell), with kinematic equations for the\n"
     "  independent velocities (help kinematic).  Example: speed u1, u2\n"},
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
     "  The kinetic energy (added to the particles' and bodies'\n"
     "  energies).  NAME in expressions is the whole of it, particles and\n"
     "  bodies included (`kinetic T = 0` names it when they are all of\n"
     "  it).  A second `kinetic` replaces the first.  Likely slips get a\n"
     "  warning: a coordinate without its velocity, an energy not\n"
     "  quadratic in the velocities, a negative direction where the\n"
     "  equations are first evaluated.\n"
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
    {"mass", "mass: part of `particle NAME mass EXPR at VECTOR` (help particle)\n"
             "and of `body NAME mass EXPR at VECTOR ...` (help body).\n"},
    {"at", "at: part of `particle NAME mass EXPR at VECTOR` (help particle),\n"
           "`body NAME mass EXPR at VECTOR ...` (help body) and\n"
           "`force BODY at POINT = VECTOR` (help force).\n"},
    {"force",
     "force COORD = EXPR             a generalized force on a coordinate\n"
     "force PARTICLE = VEC           a force on a particle:\n"
     "                               Q_i += dot(F, diff(P, q_i))\n"
     "force BODY at POINT = VEC      a force on a body applied at POINT:\n"
     "                               Q_i += dot(F, diff(velocity(POINT, BODY), q_i'))\n"
     "  Forces add up.  Potential forces belong in `potential` (or\n"
     "  `gravity`).  Equal and opposite loads between two bodies are written\n"
     "  on each.\n"
     "  Example: force x = -c*x'\n"},
    {"torque",
     "torque BODY = VEC\n"
     "  A torque on a body (components on the inertial axes):\n"
     "  Q_i += dot(M, diff(omega(F), q_i')) with F the body's frame.\n"
     "  Example: torque wheel = [0, 0, tau]\n"},
    {"frame",
     "frame NAME                               the inertial frame\n"
     "frame NAME from PARENT about AXIS by ANGLE\n"
     "  A frame whose axes are PARENT's turned by ANGLE (right-handed)\n"
     "  about AXIS: x, y or z (PARENT's axis, which is also the new frame's),\n"
     "  or a constant vector of components on PARENT's axes, like [0, 1, 1]\n"
     "  (normalised; numbers and parameters only).  ANGLE may use\n"
     "  coordinates, parameters and t.  Exactly one frame is inertial; a\n"
     "  parent is declared before its children.  NAME.x, NAME.y, NAME.z are\n"
     "  the unit vectors (on the inertial axes); omega(NAME) is the angular\n"
     "  velocity, composed along the chain; on(NAME, v) the components of v\n"
     "  on NAME's axes.  `from`, `about`, `by` are keywords only here.\n"
     "  Example: frame N; frame A from N about z by psi\n"},
    {"body",
     "body NAME mass M at G frame F inertia [I1, I2, I3]\n"
     "body NAME mass M at G frame F inertia [Ixx, Iyy, Izz, Ixy, Iyz, Izx]\n"
     "  A rigid body of mass M with its centre of mass at G (a 3-vector),\n"
     "  fixed in frame F, with its inertia matrix about G on F's axes: the\n"
     "  principal moments, or the six entries of the symmetric matrix\n"
     "  (entries, not products of inertia with a sign).  Adds\n"
     "  M/2*dot(G', G') + 1/2*w.I.w, w = on(F, omega(F)), to the kinetic\n"
     "  energy.  velocity(P, NAME) is the velocity of the body's material\n"
     "  point at P: G' + cross(omega(F), P - G).  `inertia` is a keyword\n"
     "  only here.\n"
     "  Example: body disk mass m at G frame C inertia [m*r^2/4, m*r^2/4, m*r^2/2]\n"},
    {"gravity",
     "gravity VECTOR\n"
     "  A uniform field: adds -m*dot(g, P) to the potential energy for every\n"
     "  particle and -M*dot(g, G) for every body, whenever declared.  A\n"
     "  second `gravity` replaces the first; it excludes `lagrangian`.\n"
     "  Example: gravity [0, 0, -g]\n"},
    {"constraint",
     "constraint [NAME:] LHS = RHS\n"
     "  A constraint C = LHS - RHS = 0 on the coordinates, velocities and t:\n"
     "  linear, affine or nonlinear in the velocities.  Without velocities\n"
     "  it is holonomic, f(q, t) = 0, and the equations use f' = 0.\n"
     "  Unnamed constraints are called c1, c2, ...  Vector sides make one\n"
     "  constraint per component, NAME[1], NAME[2], NAME[3] (lambda(NAME[k])\n"
     "  is its multiplier); a component that vanishes identically near the\n"
     "  state is dropped, with a note, and lambda(NAME[k]) is still the\n"
     "  force along it (a normal force), from the momentum balance of the\n"
     "  whole system.\n"
     "  Example: constraint roll_x: x' = R*theta'*sin(phi)\n"
     "           constraint roll: velocity(Q, wheel) = [0, 0, 0]\n"},
    {"kinematic",
     "kinematic COORD' = EXPR\n"
     "  The kinematic equation q' = psi(q, z, t) of a coordinate in terms of\n"
     "  the speeds, for maggi and gibbs_appell.  Give them for the\n"
     "  independent velocities: the velocities of the other coordinates\n"
     "  are solved from the constraints, which must be linear in them and\n"
     "  determine them (an error names those they do not).  `show\n"
     "  kinematics` prints the result, `check` says which were solved and\n"
     "  from which constraints (help kane).\n"
     "  Example: kinematic x' = u1*cos(theta)\n"},
    {"equations",
     "equations METHOD\n"
     "  Chooses the equations of motion: lagrange, multipliers,\n"
     "  second_kind, voronec, naive, maggi (first_kind, kane),\n"
     "  gibbs_appell.  Default: lagrange without constraints, else\n"
     "  multipliers.  `help METHOD` tells what each one is.\n"},
    {"initial",
     "initial NAME = VALUE, NAME' = VALUE, NAME ~ GUESS, t = VALUE, ...\n"
     "  Sets the current state and remembers what was given for `reset`.\n"
     "  Names not given are 0, except what the constraints determine: the\n"
     "  coordinates that holonomic constraints fix (Newton's method from 0,\n"
     "  or from the starting guess given with `~`), then the velocities\n"
     "  (linear constraints exactly, nonlinear ones by Newton).  The ones\n"
     "  solved for are those declared last, guessed ones first; without -q\n"
     "  a line says which and their values.  Given values that violate a\n"
     "  constraint by more than 1e-9 (relative) are an error.\n"
     "  Example: initial theta = 1, phi' = 0.7, theta' = 0.3, psi' = 1.1\n"
     "  Example: initial th1 = 1, th2 ~ -1, th3 ~ -2   (a linkage)\n"},
    {"simulate",
     "simulate to T [step H] [integrator NAME] [rtol A] [atol B] [project]\n"
     "         [until EXPR = VALUE [rising|falling] | sample at EXPR = VALUE\n"
     "          [rising|falling]]\n"
     "  Integrates from the current state to time T, recording a sample\n"
     "  every H (default (T - t)/1000).  Integrators: rk2 rk4 rkf45 rkck\n"
     "  rk8pd (default) msadams rk1imp rk2imp rk4imp bsimp msbdf, and dla\n"
     "  (help dla).\n"
     "  `project` pulls the state back onto the constraints after each step.\n"
     "  A state off the constraints (after `set` of a parameter they use)\n"
     "  is an error unless `project` is given, which pulls it back first.\n"
     "  A run that fails keeps its samples and stops at the last of them.\n"
     "  `until` stops at the first time EXPR - VALUE changes sign (in that\n"
     "  direction only, when given), located on the integrator's solution\n"
     "  to 1e-12 relative; `sample at` records those crossings instead of\n"
     "  a grid (a Poincare section; no `step` with it): `help until`.\n"},
    {"until",
     "simulate to T until EXPR = VALUE [rising | falling]\n"
     "  Stops the run at the first time after its start at which EXPR -\n"
     "  VALUE changes sign (rising: from - to +, falling: from + to -).\n"
     "  The time is located on the integrator's own solution (the step\n"
     "  that holds it integrated again to trial times, Newton's method\n"
     "  with the exact rate of EXPR), to 1e-12 relative, never at a sample\n"
     "  or a step's end; the state there is the last sample and the\n"
     "  current state.  The summary says `stopped at EXPR = VALUE (falling)\n"
     "  at t = ...`, or `T first`.  EXPR is any scalar of the state, t and\n"
     "  the lets (accelerations and lambda too); one that is not finite at\n"
     "  a step is an error with the time and the state.  Two crossings\n"
     "  inside one step are found when EXPR turns back inside it.\n"
     "simulate to T sample at EXPR = VALUE [rising | falling]\n"
     "  A Poincare section: the samples are the crossings, located as for\n"
     "  until (no `step`); `table` and `plot` show them (plot draws dots).\n"
     "  The state is the final one, at T.  A run of another kind (a grid,\n"
     "  another section) starts the samples afresh; the same section run\n"
     "  again extends them.  until and sample at do not go together.\n"
     "  Example: simulate to 100 until theta = 0 falling\n"
     "  Example: simulate to 1e4 sample at phi' = 0 rising\n"},
    {"rising", "rising: the direction of an event, - to + (help until).\n"},
    {"falling", "falling: the direction of an event, + to - (help until).\n"},
    {"to", "to: part of `simulate to T` (help simulate).\n"},
    {"step", "step: part of `simulate to T step H` (help simulate).\n"},
    {"integrator", "integrator: part of `simulate ... integrator NAME` (help simulate).\n"},
    {"dla",
     "simulate to T [step S] integrator dla [h H]\n"
     "  A discrete Lagrange-d'Alembert integrator (LANGUAGE.md §6.2): the\n"
     "  midpoint discrete Lagrangian, the constraints imposed across each\n"
     "  step (holonomic ones at position level), Newton's method with the\n"
     "  exact Jacobian.  Second order, fixed step H (default the sample\n"
     "  step S, which must be a whole number of steps).  The constraints\n"
     "  hold to rounding at every step, and on reversible systems (the\n"
     "  rolling disk, the sphere) the energy error stays bounded over long\n"
     "  runs where other integrators drift.  Needs constraints linear in\n"
     "  the velocities; rtol, atol and project do not apply.  Also\n"
     "  `set integrator = dla`.  doc/dla.md gives the scheme.\n"},
    {"rtol", "rtol: the relative tolerance of `simulate` (default 1e-10).\n"},
    {"atol", "atol: the absolute tolerance of `simulate` (default 1e-12).\n"},
    {"project", "project: an option of `simulate` (help simulate).\n"},
    {"reset",
     "reset\n"
     "  Solves the state again from what the last `initial` was given (with\n"
     "  the parameters as they are now) and clears the samples.\n"},
    {"print",
     "print EXPR, ... [> \"file\"]\n"
     "  Prints `TEXT = VALUE` per expression at the current state.\n"
     "  Accelerations (x''), lambda(NAME) and reaction(x) take the values\n"
     "  the chosen equations give.\n"},
    {"accel",
     "accel [> \"file\"]\n"
     "  The accelerations of the chosen equations at the current state: one\n"
     "  `q'' = VALUE` line per coordinate (z' lines first for maggi and\n"
     "  gibbs_appell), then lambda(NAME) per constraint for the methods with\n"
     "  multipliers.  `show accel` gives them solved symbolically.\n"},
    {"table",
     "table EXPR, ... [> \"file.csv\"]\n"
     "  One CSV row per recorded sample: a header with the expression texts,\n"
     "  then values.  A declaration that changes the model clears the\n"
     "  samples; lets and parameters the model does not use keep them.\n"},
    {"plot",
     "plot Y, ... [vs X] [> \"file.png\" | \"file.svg\"]\n"
     "  Draws the recorded samples with gnuplot (X defaults to t); in a\n"
     "  notebook, without a file, the figure is shown inline.\n"
     "plot sweep [> \"file.png\" | \"file.svg\"]\n"
     "  Draws the last sweep's columns against its parameter: eigenvalues'\n"
     "  real parts solid and imaginary parts dashed, each eigenvalue followed\n"
     "  continuously from value to value (help sweep).\n"
     "plot follow [Y, ... [vs X]] [> \"file.png\" | \"file.svg\"]\n"
     "  Draws the last follow: its columns against NAME, or the expressions\n"
     "  Y (of the state at each point: any let, coordinate, velocity) against\n"
     "  X (default NAME) (help follow).\n"},
    {"vs", "vs: part of `plot Y vs X` (help plot).\n"},
    {"linearize",
     "linearize [VARS] [> \"file\"]\n"
     "  The motion of the chosen equations linearized at the current state,\n"
     "  on the constraint manifold: x' = A x in the independent variables.\n"
     "  The dependent ones are those `initial` solves for (the coordinates\n"
     "  the holonomic constraints fix, the velocities the constraints fix;\n"
     "  give a velocity in `initial` to keep it independent, `~` a coordinate\n"
     "  to make it dependent); they enter A through the constraints.  The\n"
     "  derivatives are exact (automatic differentiation), not differences.\n"
     "  The state need not be an equilibrium: at a steady motion the\n"
     "  coordinates the equations do not contain have zero columns.\n"
     "  Prints `dependent: ...`, `variables: ...`, then A row by row.\n"
     "  VARS (phi, delta, phi', delta') keeps those rows and columns, with a\n"
     "  warning when a variable left out feeds them.\n"
     "  With inputs (help input): a line `inputs: ...` and B, a row per\n"
     "  variable and a column per input; with outputs (help output): a\n"
     "  line `outputs: ...`, then C (a row per output, a column per\n"
     "  variable) and D (a row per output, a column per input).  All on the\n"
     "  constraint manifold: an input moves the dependent variables through\n"
     "  the constraints, as the state does.\n"
     "  Example: initial phi' = 0, delta' = 0, thR' = -v/rR; linearize phi,\n"
     "           delta, phi', delta'\n"},
    {"eigen",
     "eigen [VARS] [> \"file\"]\n"
     "  The eigenvalues of linearize's A (GSL), `eigN = a` or `a + b*i`, by\n"
     "  decreasing real part, then decreasing imaginary part; then whether\n"
     "  the state is asymptotically stable, unstable (naming the eigenvalues\n"
     "  with positive real part) or neither (some on the imaginary axis:\n"
     "  a real part below 1e-7 of A's largest entry counts as 0).  Inside a\n"
     "  sweep: the columns re(eig1), im(eig1), ...\n"},
    {"sweep",
     "sweep NAME from A to B step S [> \"file.csv\"]: STATEMENTS\n"
     "  Runs the statements (to the end of the line, separated by ;) once\n"
     "  for each value of parameter NAME from A to B (inclusive), then puts\n"
     "  back the parameter, the state, the samples and the settings.\n"
     "  `initial` solves the state again for each value; print, eigen,\n"
     "  accel and lyapunov write one CSV row per value (header: NAME, then\n"
     "  their columns; lyapunov's: lyap1, ..., sum, divergence) to the\n"
     "  output or the file.  Inside: initial, reset, simulate, set, steady,\n"
     "  print, eigen, accel, lyapunov.  At most 100000 values.  A value that\n"
     "  fails is reported with the error; the rows before it stay.  `plot sweep`\n"
     "  draws the last sweep (real parts solid, imaginary parts dashed).\n"
     "  Example: sweep v from 0 to 10 step 0.01: initial thR' = -v/rR;\n"
     "           eigen phi, delta, phi', delta'\n"
     "sweep A from .. to .. step .., B from .. to .. step ..: STATEMENTS\n"
     "  Several ranges make a grid: one row per point, in row-major order\n"
     "  (the last name varies fastest), one column per name; at most\n"
     "  100000 points in all.\n"},
    {"steady",
     "steady NAME = VALUE, NAME ~ GUESS, ...\n"
     "  A steady motion (relative equilibrium): every independent variable\n"
     "  of linearize keeps its value, except the cyclic coordinates, which\n"
     "  move at constant rates.  The cyclic coordinates are those the motion\n"
     "  of the other variables does not depend on: a rolling disk's centre\n"
     "  (x, y), then its heading, which only their rates contained, and its\n"
     "  spin; a bicycle's position, heading and wheel angles.  They are\n"
     "  found from the columns of linearize's A (a column zero outside the\n"
     "  cyclic rows).  An equilibrium is a steady motion with every\n"
     "  velocity 0.\n"
     "  `=` gives a value, `~` makes an unknown with its starting guess (the\n"
     "  syntax of initial); independent variables not named are 0, the\n"
     "  dependent ones (x' and y' of a disk, a bicycle's pitch) are what the\n"
     "  constraints determine, and naming one is an error.  The steady\n"
     "  equations (the rates of the variables that are not cyclic\n"
     "  coordinates = 0) are solved by Newton's method with the exact\n"
     "  Jacobian, to 1e-12 relative, on the constraints.  A conserved energy\n"
     "  makes one of them follow from the others: their rank is found at\n"
     "  the solution.  More unknowns than independent equations is a family\n"
     "  (give more values, or trace it with follow); a residual left is an\n"
     "  error that names the equation; either changes nothing.\n"
     "  The state becomes the motion found, and what reset returns to;\n"
     "  eigen then decides its stability.  One line says the unknowns, the\n"
     "  residual, the equations' rank, and the cyclic coordinates with their\n"
     "  rates (x' of a disk on a circle is not constant: it turns).\n"
     "  A velocity written as an inertial component (a sleigh's x', not its\n"
     "  speed along the blade) is not constant on a turning motion, so it\n"
     "  cannot be held in a steady one: use speeds (kinematic x' =\n"
     "  v*cos(th), ...); `check` names such velocities.\n"
     "  Example: steady phi = 0.1, delta ~ 0.05, thR' ~ -20   (a bicycle's\n"
     "           steady turn at lean 0.1: steer and speed solved for)\n"},
    {"follow",
     "follow NAME from A to B [step S] [> \"file.csv\"]: steady ...; STATEMENTS\n"
     "  Traces the one-parameter family of steady motions through the\n"
     "  steady's solution at NAME = A towards B: NAME is a parameter, or a\n"
     "  coordinate (or speed) the follow gives a value.  Pseudo-arclength\n"
     "  continuation: it goes round folds, where NAME turns back.  S is the\n"
     "  largest step, an arclength in NAME's units with each unknown\n"
     "  measured relative to its first value (default (B - A)/100; the sign\n"
     "  of B - A).  One CSV row per point: NAME, the unknowns, what print,\n"
     "  eigen and accel give, and a last column `point`: fold (located),\n"
     "  branch (another family crosses; located), hopf (a pair of eigen's\n"
     "  eigenvalues crosses the imaginary axis), stable / unstable (eigen's\n"
     "  verdict changes), or empty.  It stops when NAME leaves [A, B] (the\n"
     "  last row at A or B exactly), when the family closes on itself, or\n"
     "  after 10000 points; Ctrl-C stops it.  Then the parameter, the state\n"
     "  and the samples are as before; `plot follow` draws the rows.\n"
     "  Example: follow phi from 0.01 to 0.5 step 0.02: steady delta ~ 0,\n"
     "           thR' ~ -20; eigen phi, delta, phi', delta', thR'\n"},
    {"lyapunov",
     "lyapunov to T [step S] [VARS] [> \"file\"]\n"
     "  The Lyapunov exponents of the reduced motion (the independent\n"
     "  variables of linearize, or VARS) from the current state to t = T:\n"
     "  the motion and its tangent flow (linearize's exact A along the run)\n"
     "  integrated together by one explicit stepper (rk8pd unless `set\n"
     "  integrator` names rk2, rk4, rkf45 or rkck), the tangent vectors\n"
     "  re-orthonormalised by QR every S (default (T - t)/1000, and sooner\n"
     "  when their lengths or directions spread).  Prints lyap1 = ... in\n"
     "  decreasing order,\n"
     "  then `sum = ..., mean divergence = ...`: the time average of tr A,\n"
     "  integrated on its own, which the sum must equal (a warning when they\n"
     "  differ beyond the tolerances).  Where the constraints stop\n"
     "  determining the dependent variables well (a sleigh turning through\n"
     "  90 degrees), other ones are chosen and the summary says so; with\n"
     "  VARS they are fixed.  The state becomes the final one; Ctrl-C stops\n"
     "  it with an error and changes nothing.  Inside a sweep it gives\n"
     "  columns lyap1, ..., sum, divergence: a map of exponents over a grid\n"
     "  runs on the sweep's workers (set threads).\n"
     "  Example: lyapunov to 1000\n"
     "  Example: lyapunov to 100 step 0.5 phi, delta, phi', delta'\n"},
    {"input",
     "input NAME [= VALUE], ...\n"
     "  Declares inputs: signals that enter the model as parameters do\n"
     "  (their value, 0 unless given, is changed with `set`), in forces,\n"
     "  torques, the potential, constraints' right sides and kinematic\n"
     "  equations; linearize differentiates by them for B.  An input in a\n"
     "  kinetic energy (or in a position, mass, inertia or frame that makes\n"
     "  one) is an error: the equations take its rate as 0.  In generated\n"
     "  code the inputs come after the parameters in p.\n"
     "  Example: input Tphi, Tdelta; torque fork = Tdelta*H.z\n"},
    {"output",
     "output NAME = EXPR, ...\n"
     "  Names scalar expressions of the state and the inputs (accelerations\n"
     "  too; not multipliers) for C and D of linearize and for transfer and\n"
     "  bode; print, table and show read them by name.  Declaring one keeps\n"
     "  the recorded samples.  Example: output roll = phi, yaw_rate = psi'\n"},
    {"transfer",
     "transfer OUT from IN at s = VALUE [> \"file\"]\n"
     "  The transfer function G(s) = C (sI - A)^-1 B + D from input IN to\n"
     "  output OUT of the motion linearized at the current state (every\n"
     "  independent variable: G does not depend on which make the state),\n"
     "  printed as `G = a + b*i`.  VALUE is complex: i is the imaginary\n"
     "  unit there (+ - * / ^ and exp, sqrt, sin, cos).  s at a pole (an\n"
     "  eigenvalue of A) is an error.\n"
     "  Example: transfer roll from Tdelta at s = 2*i\n"},
    {"bode",
     "bode OUT from IN from W1 to W2 [> \"file.png\" | \"file.svg\" | \"file.csv\"]\n"
     "  The Bode plot of transfer's G(i w) for w from W1 to W2 (rad/s,\n"
     "  0 < W1 < W2, 100 points a decade): the magnitude in dB and the\n"
     "  phase in degrees (unwrapped), one above the other on a log scale,\n"
     "  drawn by gnuplot as plot draws; a .csv file gets the numbers\n"
     "  (w, magnitude, phase).  Inline in a notebook.\n"
     "  Example: bode roll from Tdelta from 0.1 to 100 > \"bode.png\"\n"},
    {"draw",
     "draw disk CENTRE, NORMAL, RADIUS     a rim (seen as an ellipse)\n"
     "draw sphere CENTRE, RADIUS [mark M]  a ball; M a direction fixed in\n"
     "                                     it: the dot at CENTRE + RADIUS*M/|M|\n"
     "                                     and the great circle across it turn\n"
     "                                     with the ball\n"
     "draw line P, Q                       a segment\n"
     "draw point P [trail]                 a dot, with its path so far\n"
     "  What the bodies look like, for animate: 3-vectors of positions and\n"
     "  directions (z up), scalars of radii, any expressions of the state,\n"
     "  checked when declared and evaluated at every sample by animate.  A\n"
     "  draw does not change the model: the samples stay.  The same kind at\n"
     "  the same place, written alike (a disk's, a sphere's centre, a line's\n"
     "  ends, a point), replaces the draw before; `show model` lists them.\n"
     "  Example: draw disk G, C.z, r; draw line G, G + r*C.x; draw point Q trail\n"
     "  LANGUAGE.md §7.5.\n"},
    {"animate",
     "animate [speed K] [view AZ, EL] [> \"file.html\" | \"file.svg\"]\n"
     "  Draws every draw declaration at every recorded sample in a 3D\n"
     "  orthographic view: from azimuth AZ (degrees from x towards y) and\n"
     "  elevation EL (degrees above the xy plane, z up; default view -60,\n"
     "  30), played in real time times K (default 1).  An HTML page has\n"
     "  play/pause and a time slider (file.html#t=1.5 opens it at t = 1.5);\n"
     "  an SVG image plays and loops by itself (SMIL).  Both are\n"
     "  self-contained: no network, no outside script.  Without a file it\n"
     "  writes animation.html in the current folder and says where; in a\n"
     "  notebook it is shown in place.  No samples, or no draws: an error\n"
     "  that says which.  LANGUAGE.md §7.5, doc/animation.md.\n"},
    {"view", "view: part of `animate view AZ, EL` (help animate).\n"},
    {"mark", "mark: part of `draw sphere CENTRE, RADIUS mark M` (help draw).\n"},
    {"trail", "trail: part of `draw point P trail` (help draw).\n"},
    {"disk", "disk: a kind of draw, a rim: draw disk CENTRE, NORMAL, RADIUS (help draw).\n"},
    {"sphere", "sphere: a kind of draw, a ball: draw sphere CENTRE, RADIUS [mark M] (help draw).\n"},
    {"line", "line: a kind of draw, a segment: draw line P, Q (help draw).\n"},
    {"point", "point: a kind of draw, a dot: draw point P [trail] (help draw).\n"},
    {"show",
     "show EXPR         the expression simplified, as text\n"
     "show latex EXPR   the same as LaTeX\n"
     "show model        coordinates, parameters, frames, bodies, energies,\n"
     "                  forces, constraints\n"
     "show eom          the chosen equations, symbolically\n"
     "show accel        the accelerations solved: x'' = ... per coordinate\n"
     "                  (z' = ... per speed for maggi, gibbs_appell)\n"
     "show x''          one of them; an expression with accelerations in it\n"
     "                  is shown with the solved ones put in\n"
     "show mass         the mass matrix M_ij = d2L/dq_i'dq_j'\n"
     "show reduced      the reduced Lagrangian (voronec, naive)\n"
     "show voronec      the coefficients a and b of Voronec's equations\n"
     "show kinematics   q' = psi(q, z, t): the kinematic equations given\n"
     "                  and the velocities solved from the constraints\n"
     "show kane         Kane's F_r and F*_r for each speed (help kane)\n"
     "  `latex` after `show` works for all of them: the LaTeX compiles in an\n"
     "  amsmath document as it is (an align* environment); in a notebook it\n"
     "  is shown as typeset mathematics.  > \"file\" at the end writes there:\n"
     "  show latex eom > \"eom.tex\".  What show prints is simplified:\n"
     "  expanded, cancelled, collected, with sin^2 + cos^2 = 1, in exact\n"
     "  fractions; a form that lost a part which may be undefined says\n"
     "  where it holds: show x/x prints 1  (where x != 0).  The LaTeX is\n"
     "  laid out to an A4 page at 10 pt, long rows broken between terms.\n"
     "  Equations too long for a line (the benchmark bicycle's) are shown\n"
     "  with named subexpressions: a line `where`, rows k1 = ..., k2 = ...\n"
     "  (sines and cosines of a coordinate named after it: c_phi = cos(phi))\n"
     "  each defined before it is used, then the equations in their terms\n"
     "  (each row reads back as a `let`).\n"},
    {"latex",
     "latex: `show latex ...` and `worksheet latex NAME` print LaTeX\n"
     "  (help show, help worksheet).\n"},
    {"check",
     "check [> \"file\"]\n"
     "  For each constraint: holonomic / linear / affine / nonlinear,\n"
     "  homogeneity, time dependence, integrability (Frobenius and\n"
     "  exactness); then the rank of B at the state, the degrees of\n"
     "  freedom, and whether energy is conserved (Benenti Thm 11.6).\n"
     "  With speeds: which velocities have no kinematic equation, the\n"
     "  constraints they are solved from, and how (help kane).\n"},
    {"compare",
     "compare A B [samples N] [> \"file\"]\n"
     "  The accelerations of equations A and B side by side at the current\n"
     "  state, or the largest difference over N random states consistent\n"
     "  with the constraints.  The last line, max |diff|, is the largest\n"
     "  |a - b| / max(1, |a|, |b|).\n"
     "  Example: compare voronec naive\n"},
    {"samples", "samples: part of `compare A B samples N` (help compare).\n"},
    {"worksheet",
     "worksheet preliminary | first | second | second_reduced [> \"file\"]\n"
     "worksheet latex NAME [> \"file\"]\n"
     "  Benenti's worksheets, step by step and numbered as in his text\n"
     "  (seed 001, §12): each object symbolically (simplified, as `show`\n"
     "  shows it, where no entry is longer than 1000 characters) and at the\n"
     "  current state, with one line saying what it is for.  Values that are\n"
     "  rounding (within 1e-12 of the size of their terms) are shown as 0.\n"
     "  `latex` prints the sheet as a display per step, each step's number\n"
     "  and title as typeset text, breaking across pages.\n"
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
     "set NAME = VALUE, ...\n"
     "  Changes parameters or inputs, or simulation defaults: rtol, atol,\n"
     "  step, integrator, max_steps (the most integrator steps one simulate may\n"
     "  take, 1000000 unless set).  Several at once take effect from left\n"
     "  to right (a value may use one set before it), all or none: when\n"
     "  one fails, nothing changes.  Example: set m = 2, M = 3*m\n"
     "  When the constraints use the parameter and the state no longer fits\n"
     "  them, a warning says so: `reset` solves the state again.\n"
     "set compile = on | off\n"
     "  on: simulate and compare run the equations as C, compiled with the\n"
     "  system's compiler ($CC, else cc) and cached by content in\n"
     "  $XDG_CACHE_HOME/nh (or ~/.cache/nh); same results as the tapes.\n"
     "  linearize, eigen, sweep and the implicit integrators also run their\n"
     "  derivatives as C, a second file compiled when first needed.\n"
     "  Without a compiler, a note, and the tapes run.  Default off.\n"
     "set threads = N\n"
     "  The worker processes a sweep's points run on (default: NH_THREADS,\n"
     "  else the machine's processors).  The rows are the same, byte for\n"
     "  byte, with 1 and with many: each point starts from the state the\n"
     "  sweep found.  set a = 1, b = 2 sets several at once.\n"},
    {"load", "load \"file.nh\"\n  Runs a file; a relative path is taken from the directory of\n  the file that loads it.\n"},
    {"import",
     "import \"name\"\n"
     "  Runs name.nh from the standard library (NH_PATH first, then the\n"
     "  installed library).  A module runs once per session.\n"},
    {"help", "help [TOPIC] [> \"file\"]\n  This help.\n"},
    {"export",
     "export c \"FILE.c\"\n"
     "  Writes the chosen equations' right-hand side as one self-contained\n"
     "  C99 file that needs only <math.h>: for \"sphere.c\",\n"
     "    void sphere_rhs(double t, const double *y, const double *p,\n"
     "                    double *dydt);\n"
     "  with the state layout (sphere_state_names), the parameters\n"
     "  (sphere_param_names, sphere_param_defaults: their current values),\n"
     "  the constraint residuals, the multipliers where the method has\n"
     "  them, and the dense solve, written into the file.  Same numbers\n"
     "  as nh, bit for bit when compiled without FP contraction (-std=c99).\n"
     "  The inputs (help input) come after the parameters in p\n"
     "  (sphere_ninput, sphere_input_names).\n"
     "  Needs `equations NAME` first.  Example: export c \"sphere.c\"\n"
     "export python \"FILE.py\"\n"
     "  A Python module that needs only NumPy and a C compiler: it carries\n"
     "  the C above, built once on first import into a cache folder under\n"
     "  the hash of its text (~/.cache/nh/python), and loaded with ctypes\n"
     "  (without a compiler, an ImportError that says so).  For \"bike.py\":\n"
     "    bike.rhs(t, y, p=None)       dy/dt, as solve_ivp calls it\n"
     "    bike.jacobian(t, y, p=None)  d(dy/dt)/dy, exact\n"
     "    bike.monitors(t, y, p=None)  constraint residuals, energy\n"
     "  and state_names, param_names, param_defaults, input_names,\n"
     "  input_defaults.  p: the parameters then the inputs (None: the\n"
     "  values when exported).  Example: export python \"bike.py\"\n"},
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
     "  z' = G^-1 Psi^T (-h - M (dpsi/dq psi + dpsi/dt)).  Needs speeds and\n"
     "  kinematic equations for the independent velocities; the others\n"
     "  are solved from the constraints (help kinematic, help kane).  The\n"
     "  constraints not solved for them are checked against psi.\n"},
    {"first_kind", "first_kind: another name of maggi (help maggi).\n"},
    {"kane",
     "equations kane   (another name of maggi)\n"
     "  Kane's method: speeds u_r for the independent rates, kinematic\n"
     "  equations q' = psi(q, u, t) for those rates only, and the other\n"
     "  velocities solved from the constraints, linearly: symbolically in\n"
     "  blocks (Cramer's rule; divided only by determinants that vanish\n"
     "  where the constraints stop determining them), or numerically at\n"
     "  each evaluation when more than 6 depend on each other.\n"
     "  Kane's equations F_r + F*_r = 0 are maggi's: with the partial\n"
     "  velocities Psi = dpsi/du, the generalized active force\n"
     "  F_r = sum_i Q_i Psi_ir (potential forces included) and the\n"
     "  generalized inertia force F*_r = -sum_i (M q'' + h)_i Psi_ir\n"
     "  (Kane and Levinson's sum of -m a . dv/du_r), at q' = psi and\n"
     "  q'' = dpsi/dq psi + dpsi/dt + Psi u'.\n"
     "  show kinematics   psi, as solved\n"
     "  show kane         F_r and F*_r for each speed\n"
     "  check             which velocities were solved, from what, how\n"
     "  Example: speed u1, u2, u3\n"
     "           kinematic phi' = u1; kinematic delta' = u2\n"
     "           kinematic thR' = u3; equations kane; show kane\n"},
    {"gibbs_appell",
     "equations gibbs_appell\n"
     "  The Gibbs-Appell equations dS/dz_a' = sum_i Q_i Psi_ia with the\n"
     "  Gibbs function S = 1/2 sum m |P''|^2 of the particles (Benenti eq. 68\n"
     "  when the kinetic energy is not made of particles).  Same motion as\n"
     "  maggi.\n"},
    {"sin", HELP_TRIG},
    {"cos", HELP_TRIG},
    {"tan", HELP_TRIG},
    {"asin", HELP_TRIG},
    {"acos", HELP_TRIG},
    {"atan", HELP_TRIG},
    {"atan2", HELP_TRIG},
    {"sinh", HELP_HYP},
    {"cosh", HELP_HYP},
    {"tanh", HELP_HYP},
    {"exp", HELP_HYP},
    {"log", HELP_HYP},
    {"sqrt", HELP_HYP},
    {"abs", HELP_ABS},
    {"sign", HELP_ABS},
    {"min", HELP_MINMAX},
    {"max", HELP_MINMAX},
    {"dot", HELP_VECTORS},
    {"cross", HELP_VECTORS},
    {"norm", HELP_VECTORS},
    {"diff",
     "diff(e, v)\n"
     "  The partial derivative of e with respect to v: a coordinate, a\n"
     "  velocity x', a speed, a parameter or t (the others held fixed;\n"
     "  e' is the total time derivative: help prime).  Exact, from the\n"
     "  expression graph; defined where e is.  An e that holds x'' or\n"
     "  lambda() is an error: those are the equations' values at the\n"
     "  state, not symbols.  A vector e gives the vector of derivatives.\n"
     "  Example: show diff(T, x')\n"},
    {"lambda",
     "lambda(NAME)   lambda(NAME[k])\n"
     "  The multiplier of constraint NAME (of component k of a vector\n"
     "  constraint) at the state, for the methods that have them\n"
     "  (multipliers, second_kind): the generalized constraint force is\n"
     "  B^T lambda, B = dC/dq'.  Only in print, table, plot and show.  A\n"
     "  component dropped because it vanishes identically has none.\n"
     "  Example: equations multipliers; print lambda(roll_x)\n"},
    {"reaction",
     "reaction(x)\n"
     "  The generalized reaction force on coordinate x: the sum over the\n"
     "  constraints of lambda_a dC^a/dx' (a holonomic one through its\n"
     "  derivative).  Only in print, table, plot and show, for the methods\n"
     "  with multipliers.  Example: print reaction(x), reaction(y)\n"},
    {"omega",
     "omega(A)\n"
     "  The angular velocity of frame A, on the inertial axes, composed\n"
     "  along the chain of frames: omega(A) = omega(parent) + ANGLE'*axis\n"
     "  (help frames).  Example: print on(B, omega(B))\n"},
    {"on",
     "on(A, v)\n"
     "  The components of the 3-vector v on frame A's axes:\n"
     "  [dot(v, A.x), dot(v, A.y), dot(v, A.z)].  Example: on(W, omega(W))\n"},
    {"velocity",
     "velocity(P, B)\n"
     "  The velocity of the material point of body B that is at position\n"
     "  P (a 3-vector): G' + cross(omega(F), P - G), with G the body's\n"
     "  centre of mass and F its frame.  For a rolling contact, P is the\n"
     "  contact point (help contact) and the constraint is\n"
     "  velocity(P, B) = [0, 0, 0].  A particle's velocity is its\n"
     "  position's prime, P1'.\n"},
    {"stdlib",
     "The standard library: modules of .nh declarations, run with\n"
     "import \"NAME\" (once per session), looked for in the folders of\n"
     "NH_PATH (separated by :), then beside nh (a build tree), then in\n"
     "the installed share/nh/stdlib (where nh is now, and where it was\n"
     "configured); a missing module's error names every folder searched.\n"
     "  contact   contact points of wheels, spheres, ellipsoids and\n"
     "            paraboloids on the ground (help contact)\n"
     "  euler     ZXZ Euler angles: the angular velocity (help euler)\n"
     "  rigid     the kinetic energy of a rigid body (help rigid)\n"
     "`help NAME` tells more about a module or any of its functions.\n"},
    {"contact", HELP_CONTACT},
    {"contact_up", HELP_CONTACT},
    {"disk_contact", HELP_CONTACT},
    {"disk_centre", HELP_CONTACT},
    {"disk_height", HELP_CONTACT},
    {"sphere_contact", HELP_CONTACT},
    {"ellipsoid_depth", HELP_CONTACT},
    {"ellipsoid_contact", HELP_CONTACT},
    {"paraboloid_contact", HELP_CONTACT},
    {"euler", HELP_EULER},
    {"omega_space", HELP_EULER},
    {"omega_body", HELP_EULER},
    {"rigid", HELP_RIGID},
    {"rigid_T", HELP_RIGID},
    {"expressions",
     "Expressions: numbers, names, + - * / ^ (right-associative; -x^2 is\n"
     "-(x^2)), the prime ' (total time derivative), v[i] (1-based), calls,\n"
     "and vectors [a, b] or [a, b, c].  Names: t, pi, coordinates,\n"
     "parameters, speeds, lets, energies, particles, frames' unit vectors\n"
     "A.x, A.y, A.z.\n"},
    {"functions",
     "Functions: sin cos tan asin acos atan atan2(y, x) sinh cosh tanh exp\n"
     "log sqrt abs sign min(a, b, ...) max(a, b, ...); dot(u, v) cross(u, v)\n"
     "norm(u);\n"
     "diff(e, v) with v a coordinate, a velocity x', a speed, a parameter\n"
     "or t (an e holding x'' is an error: x'' is the equations' value, not\n"
     "a symbol); lambda(NAME), lambda(NAME[k]) and reaction(x) in print,\n"
     "table and show; omega(A), on(A, v) and velocity(P, B) (help frames).\n"
     "Their names cannot be declared.  `help NAME` tells more about each;\n"
     "`help stdlib` lists the modules of the standard library.\n"},
    {"frames",
     "Frames and bodies: A.x, A.y, A.z are the unit vectors of frame A, with\n"
     "components on the inertial axes; a*A.x + b*A.y is an ordinary vector.\n"
     "omega(A) is A's angular velocity (inertial components), composed\n"
     "along the chain of frames: omega(A) = omega(P) + ANGLE'*axis.\n"
     "on(A, v) = [dot(v, A.x), dot(v, A.y), dot(v, A.z)].  velocity(P, B)\n"
     "is the velocity of the point of body B at P.  stdlib/contact.nh\n"
     "(import \"contact\") gives contact points of wheels, spheres and\n"
     "ellipsoids on a plane.  See help frame, body, gravity, torque.\n"},
    {"vectors",
     "Vectors: [e1, e2] or [e1, e2, e3]; + - componentwise, * and / by a\n"
     "scalar, u[i], dot, cross, norm.  Components are on the inertial\n"
     "frame's axes; A.x, A.y, A.z are a frame's unit vectors.\n"},
    {"prime",
     "The prime: e' is the total time derivative of e,\n"
     "sum de/dq_i q_i' + sum de/dz_a z_a' + de/dt.  So (x^2)' is 2*x*x'.\n"
     "Model expressions may not contain second derivatives.\n"},
    {"errors",
     "Errors read FILE:LINE:COL: error: MESSAGE, with the source line and a\n"
     "caret.  A statement that fails changes nothing; in the REPL an error\n"
     "never ends the session; in a script the first error stops the run.\n"
     "In the REPL (<repl>) LINE counts the lines typed since the session\n"
     "began, so a place named in a message can be found again.  An empty\n"
     "line ends a statement left open (an unclosed bracket), which is then\n"
     "reported at the bracket.  An expression that cannot be evaluated at\n"
     "the state is an error at the declaration that holds it.  Likely slips\n"
     "are warnings (FILE:LINE:COL: warning: ...), shown under -q too; the\n"
     "statement takes effect.\n"},
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
    "initial", "simulate", "to", "step", "integrator", "dla", "rtol", "atol",
    "project", "until", "rising", "falling", "lyapunov", "reset", "print",
    "accel", "table", "plot", "vs", "show", "latex", "check", "compare",
    "samples", "worksheet", "set", "load", "import", "help", "quit", "exit",
    "frame", "body", "gravity", "torque", "linearize", "eigen", "sweep",
    "steady", "follow", "export", "lagrange", "multipliers", "second_kind",
    "voronec", "naive", "maggi", "first_kind", "kane", "gibbs_appell",
    "expressions", "functions", "vectors", "prime", "errors", "frames",
    "notebook", "input", "output", "transfer", "bode", "draw", "animate",
    "view", "mark", "trail", "disk", "sphere", "line", "point",
    /* built-in functions (LANGUAGE.md §3.4) */
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh",
    "tanh", "exp", "log", "sqrt", "abs", "sign", "min", "max", "dot", "cross",
    "norm", "diff", "lambda", "reaction", "omega", "on", "velocity", "stdlib",
    "contact", "contact_up", "disk_contact", "disk_centre", "disk_height",
    "sphere_contact", "ellipsoid_depth", "ellipsoid_contact",
    "paraboloid_contact", "euler", "omega_space", "omega_body", "rigid",
    "rigid_T", NULL};

size_t help_entry_count(void)
{
    return sizeof entries / sizeof *entries - 1; /* the overview has none */
}

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

