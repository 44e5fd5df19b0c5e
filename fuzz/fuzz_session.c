/*
 * fuzz_session.c — libFuzzer harness for the whole nh pipeline: every
 * input is one script, run as a text in a fresh quiet session (parse,
 * lowering and derivation, evaluation, simulation, output), as
 * `nh -q script.nh` would run it.  LANGUAGE.md §9: no input may crash the
 * interpreter, leak, or keep it busy for long; a clean error is fine.
 *
 * Must not: touch files outside the working directory (fuzz/run.sh runs
 * it in a scratch folder), so an input whose string literal holds a '/'
 * (a path for load, table >, plot > or export c) is skipped, and the
 * compile cache of `set compile = on` is the scratch folder's cache/
 * (XDG_CACHE_HOME); nor print anything
 * for the inputs it runs unless NH_FUZZ_VERBOSE is set in the
 * environment (then nh's output and errors go to standard output and
 * error, for reproducing a finding by hand).
 *
 * Long work that an input asks for (a 100-coordinate model sampled 1000
 * times, a simulation of a million steps) is legitimate, and slower by
 * 30x under the sanitizers: each input runs under a time limit
 * (session_set_time_limit, FUZZ_TIME_LIMIT), which stops a `simulate` or
 * a `compare` before its next evaluation or draw with an error, as
 * Ctrl-C does in the REPL.
 * An input that ran into it is written to limited-HASH.nh in the working
 * directory, for fuzz/run.sh to show (not as a finding); anything that
 * keeps nh busy without looking at the limit still hits libFuzzer's
 * -timeout and is a finding.
 *
 * Ownership: the two /dev/null streams are opened once and kept for the
 * life of the process; each input's session is created and freed here.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interp/cli/session.h"
#include "interp/base/util.h"

/* Longer inputs are skipped: every statement of nh is meant to be
 * bounded, but a long script is only many short ones, and a short input
 * that hangs is the finding this harness looks for. */
#define FUZZ_MAX_INPUT 8192

/* Seconds: under half of run.sh's -timeout=10, so that what the limit
 * does not cover (parsing, derivation) has the rest. */
#define FUZZ_TIME_LIMIT 4.0

/* Keeps DATA as limited-HASH.nh (FNV-1a) in the working directory. */
static void fuzz_keep_limited(const uint8_t *data, size_t size)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 0x100000001b3ULL;
    char name[64];
    snprintf(name, sizeof name, "limited-%016llx.nh", (unsigned long long)h);
    FILE *f = fopen(name, "wb");
    if (!f)
        return;
    fwrite(data, 1, size, f);
    fclose(f);
}

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
        char cache[4096];
        if (!getcwd(cache, sizeof cache - 8))
            abort();
        strcat(cache, "/cache");
        setenv("XDG_CACHE_HOME", cache, 1);
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
    session_set_time_limit(s, FUZZ_TIME_LIMIT);
    /* sweeps run in this process (an input may still ask for workers
     * with `set threads`: they end with _exit, and their findings would
     * show here as a worker that ended without its result) */
    session_set_threads(s, 1);
    double t0 = nh_clock();
    session_run_text(s, "<fuzz>", (const char *)data, size, false);
    if (nh_clock() - t0 >= FUZZ_TIME_LIMIT)
        fuzz_keep_limited(data, size);
    session_free(s);
    return 0;
}
