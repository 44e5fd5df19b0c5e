/*
 * cc_load.h — for the suites that test generated C (test_tape.c,
 * test_cgen.c): compile a C text with the system's compiler into a shared
 * object and load it.
 */
#ifndef NH_TEST_CC_LOAD_H
#define NH_TEST_CC_LOAD_H

#include <stdbool.h>

/* The flags every generated text must pass: ISO C99, no warning. */
#define CC_LOAD_STRICT "-std=c99 -O2 -Wall -Wextra -pedantic -Werror " \
                       "-ffp-contract=off"

/* Compiles TEXT ($CC, else cc; with FLAGS, -fPIC -shared, -lm) in a
 * fresh temporary folder and dlopens the result; NULL (with the
 * compiler's output on stderr) when it does not compile. */
void *cc_load(const char *text, const char *flags);
/* The address of the function NAME in H (NULL when absent). */
void *cc_sym(void *h, const char *name);
void cc_unload(void *h);

#endif
