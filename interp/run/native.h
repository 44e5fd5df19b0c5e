/*
 * native.h — compiled equations of motion (`set compile = on`,
 * LANGUAGE.md §8.1): the C text of eom/cgen.h, compiled by the system's
 * C compiler into a shared object, cached by the hash of the text in a
 * folder private to the user, loaded with dlopen and attached to the
 * eom_t (eom_set_native), so that every eom_rhs and eom_accel — the
 * ones of `simulate`, `compare`, and whatever calls them — runs it.
 * The cached text is the generated one with a last comment naming the
 * compile command, so that another compiler never takes its object.
 *
 * The cache: $XDG_CACHE_HOME/nh, else $HOME/.cache/nh, created with mode
 * 0700 and refused when it is not a folder of the user's own that no one
 * else may write.  A text is kept as HASH.c beside HASH.so, HASH the
 * SHA-256 of the text; before a HASH.so is loaded, HASH.c must hold
 * exactly the text nh just generated (so the cache never runs code that
 * it did not write for this model), and both must be the user's own
 * files that no one else may write.  A compile writes to temporary names
 * in the folder and renames them into place, so a reader never sees half
 * a file and parallel sessions do not disturb each other.
 *
 * The compiler: $CC (split at blanks: CC="ccache gcc" works; no shell),
 * else `cc` on the PATH; run with -std=c99 -O2 -fno-tree-slp-vectorize
 * -ffp-contract=off -fPIC -shared (-O1 alone for the derivatives), which
 * keeps the bits of nh's own arithmetic (cgen.h).
 *
 * Ownership: the loaded object belongs to the eom_t it is attached to
 * (dlclose'd when that is freed or its native code replaced).
 * Must not: print; run a shell.
 */
#ifndef NH_NATIVE_H
#define NH_NATIVE_H

#include <stdbool.h>
#include <stddef.h>

#include "interp/base/util.h"
#include "interp/eom/eom.h"
#include "lang/source.h"

/* The name of the default compiler, looked up on the PATH. */
#define NATIVE_DEFAULT_CC "cc"
/* Room for a path in the cache. */
#define NATIVE_PATH 4352
/* The function prefix of the compiled text. */
#define NATIVE_NAME "nh_model"

/* What native_attach did. */
typedef struct native_info {
    bool cached;    /* the equations loaded from the cache, without
                       compiling (false also when they were there) */
    double seconds; /* generating, compiling and loading */
    char path[NATIVE_PATH]; /* their shared object ("" when none was
                               loaded) */
    bool tangents_cached; /* the same for the derivatives */
    char tangents_path[NATIVE_PATH];
} native_info_t;

/* The compiler's program ($CC's first word, or cc) into BUF when it can
 * be found (an absolute or relative path that is executable, or a name
 * on the PATH); false when there is none. */
bool native_compiler(char *buf, size_t size);

/* The cache folder into BUF, created if missing.  Returns 0, or -1 with
 * *err set (span NONE) when there is no home to put it in, or the folder
 * is not the user's own or others may write it. */
int native_cache_dir(char *buf, size_t size, diag_t *err);

/* Compiles E's equations (or finds them in the cache) and attaches them
 * to E.  Returns 0 (INFO, which may be NULL, says how); 1 when there is
 * no compiler (E is left on its tapes); -1 with *err set (span NONE) when
 * the text cannot be made (the model is too large), the cache folder is
 * refused, or the compiler fails (its first message).  STOP (may be
 * NULL) is looked at while the compiler runs: the compile is killed and
 * the call fails when it is due. */
int native_attach(eom_t *e, const char *version, const nh_stop_t *stop,
                  native_info_t *info, diag_t *err);

/* The same, and the derivatives of E's tapes (cgen_tangent_text, a file
 * of its own, cached alike), attached with eom_set_native_tangents: what
 * linearize, eigen, sweep and the implicit integrators need, compiled
 * when they first need it: the equations too when E has none, both at
 * once then (two compilers side by side).  What compiles is attached
 * when the other fails (-1): eom_has_native then says whether the
 * equations were the ones that failed. */
int native_attach_tangents(eom_t *e, const char *version,
                           const nh_stop_t *stop, native_info_t *info,
                           diag_t *err);

#endif
