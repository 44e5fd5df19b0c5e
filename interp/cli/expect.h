/*
 * expect.h — `nh --check FILE…`: runs scripts and compares what each
 * statement prints with the `# expect:` lines written after it, the
 * format of the tests' scripts (tests/run_lang_test.sh) and of a
 * teacher's worked example (doc/language.md, "Checking a script"):
 *
 *   print x'                  a statement
 *   # expect: x' = -0.3       the next line it prints, exactly
 *   # expect: y = ~0.5        ~VALUE: a number within 1e-9 of VALUE,
 *                             relative to max(1, |VALUE|); ~VALUE@TOL
 *                             within TOL
 *   # expect-error: TEXT      the next error line ("FILE:L:C: error: …";
 *                             TEXT ending in "..." matches a line it
 *                             begins)
 *   # expect-warning: TEXT    the same for warnings; a file with such
 *                             lines must print exactly those warnings
 *
 * Every line a statement prints must be expected, in order; a mismatch
 * is reported as "FILE:LINE: …" at the expectation (or at the statement,
 * for a line nobody expected), with the expected line after '-' and the
 * printed one after '+'.
 *
 * Ownership: nothing is kept between calls.
 * Must not: exit().
 */
#ifndef NH_CLI_EXPECT_H
#define NH_CLI_EXPECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Runs the NFILES files FILES in order in one session (quiet with QUIET,
 * `import` looking in LIBDIRS, NLIBDIRS of them, after NH_PATH) and
 * compares each one's output with its expectations.  The mismatches go
 * to REPORT, and, unless QUIET, one line per file that matched to OUT.
 * Returns 0 when every file matched, 1 otherwise. */
int expect_check_files(const char *const *files, size_t nfiles, bool quiet,
                       const char *const *libdirs, size_t nlibdirs,
                       FILE *out, FILE *report);

/* Whether the printed line GOT matches the expected line WANT (with
 * ~VALUE and ~VALUE@TOL as above). */
bool expect_line_matches(const char *got, const char *want);

#endif
