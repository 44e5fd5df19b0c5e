/*
 * fuzz_session.c — libFuzzer harness for the whole nh pipeline: every
 * input is one script, run as a text in a fresh quiet session (parse,
 * lowering and derivation, evaluation, simulation, output), as
 * `nh -q script.nh` would run it.  LANGUAGE.md §9: no input may crash the
 * interpreter, leak, or keep it busy for long; a clean error is fine.
 *
 * Must not: touch files outside the working directory (fuzz/run.sh runs
 * it in a scratch folder), so an input whose string literal holds a '/'
 * (a path for load, table > or plot >) is skipped; nor print anything
 * for the inputs it runs unless NH_FUZZ_VERBOSE is set in the
 * environment (then nh's output and errors go to standard output and
 * error, for reproducing a finding by hand).
 *
 * Ownership: the two /dev/null streams are opened once and kept for the
 * life of the process; each input's session is created and freed here.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "interp/session.h"

/* Longer inputs are skipped: every statement of nh is meant to be
 * bounded, but a long script is only many short ones, and a short input
 * that hangs is the finding this harness looks for. */
#define FUZZ_MAX_INPUT 8192

/* True when some string literal of TEXT contains a '/'.  The scan follows
 * the lexer (LANGUAGE.md §2): '#' starts a comment outside strings, a
 * string is "..." with \" and \\ escapes.  Where the lexer would end a
 * string sooner (a line break inside it) this scan stays inside longer,
 * which can only skip more inputs, never let a path through. */
static bool fuzz_has_path(const uint8_t *text, size_t len)
{
    bool in_string = false, in_comment = false;
    for (size_t i = 0; i < len; i++) {
        uint8_t c = text[i];
        if (in_comment) {
            in_comment = c != '\n';
        } else if (in_string) {
            if (c == '\\' && i + 1 < len) {
                c = text[++i]; /* the escaped byte: \" or \\ (or an error) */
            } else if (c == '"') {
                in_string = false;
                continue;
            }
            if (c == '/')
                return true;
        } else if (c == '#') {
            in_comment = true;
        } else if (c == '"') {
            in_string = true;
        }
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    static bool verbose;
    if (!sink) {
        verbose = getenv("NH_FUZZ_VERBOSE") != NULL;
        sink = fopen("/dev/null", "w");
        if (!sink)
            abort();
    }
    if (size > FUZZ_MAX_INPUT || fuzz_has_path(data, size))
        return -1; /* not added to the corpus */

    session_t *s = verbose ? session_new(true, stdout, stderr)
                           : session_new(true, sink, sink);
    /* A tenth of the default step limit: a run of 10⁶ steps that the
     * script asked for (a fast oscillation over a long time, finding 014)
     * takes seconds natively and over the 10 s limit under the
     * sanitizers; the limit's error path is the same at 10⁵.  An input
     * may still raise it (`set max_steps`): fuzz/accepted says why such
     * runs are not findings. */
    static const char setup[] = "set max_steps = 100000\n";
    session_run_text(s, "<fuzz-setup>", setup, sizeof setup - 1, false);
    session_run_text(s, "<fuzz>", (const char *)data, size, false);
    session_free(s);
    return 0;
}
