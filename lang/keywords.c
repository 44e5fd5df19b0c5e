/*
 * keywords.c — the reserved words of LANGUAGE.md §10, for the parser's
 * "did you mean" and the REPL's completion (keywords.h).  The scanner
 * knows them as tokens; this list is what people are shown.
 */
#include "lang/keywords.h"

#include <stddef.h>

/* LANGUAGE.md §10. */
const char *const parse_keywords[] = {
    "param",     "coord",     "speed",      "let",        "kinetic",
    "potential", "lagrangian", "particle",  "mass",       "at",
    "force",     "constraint", "kinematic", "equations",  "initial",
    "simulate",  "to",         "step",      "integrator", "rtol",
    "atol",      "project",    "reset",     "print",      "accel",
    "table",     "plot",       "vs",        "show",       "latex",
    "check",     "compare",    "samples",   "worksheet",  "set",
    "load",      "import",     "help",      "quit",       "exit",
    /* new in v2 */
    "frame",     "body",       "gravity",   "torque",    "linearize",
    "eigen",     "sweep",      "export",
    /* new in v3 */
    "input",     "output",     "transfer",  "bode",      "steady",
    "follow",    "lyapunov",   "draw",      "animate",
    NULL,
};
