/*
 * cc_load.h — for the suites that test generated C (test_tape.c,
 * test_cgen.c): compile a C text with the system's compiler into a shared
 * object and load it.
 */
#ifndef NH_TEST_CC_LOAD_H
#define NH_TEST_CC_LOAD_H

#include <stdbool.h>

/* The flags every generated text must pass: ISO C99, no warning; at
 * -O2 (the equations, as nh's compile cache builds them) or -O1 (the
 * derivatives). */
#define CC_LOAD_WARN "-std=c99 -Wall -Wextra -pedantic -Werror -ffp-contract=off"
#define CC_LOAD_STRICT "-O2 " CC_LOAD_WARN
#define CC_LOAD_STRICT_O1 "-O1 " CC_LOAD_WARN

/* Compiles TEXT ($CC, else cc; with FLAGS, -fPIC -shared, -lm) in a
 * fresh temporary folder and dlopens the result; NULL (with the
 * compiler's output on stderr) when it does not compile. */
void *cc_load(const char *text, const char *flags);
/* Two texts compiled side by side (two compilers at once), loaded into
 * *H1 and *H2 as cc_load does. */
void cc_load_pair(const char *text1, const char *flags1, void **h1,
                  const char *text2, const char *flags2, void **h2);
/* The address of the function NAME in H (NULL when absent). */
void *cc_sym(void *h, const char *name);
void cc_unload(void *h);

#endif
