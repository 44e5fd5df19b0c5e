/*
 * work.h — independent items of a statement run on worker processes
 * (LANGUAGE.md §1.2: `set threads = N`): the points of a sweep or a grid.
 *
 * Why processes, not threads: an item runs whole statements on the
 * session — its model, its equations' buffers, the caches that derive
 * and compile on first use — none of which is shared safely between
 * threads, while a forked worker gets all of it, copy on write, for the
 * price of a page fault where it writes.  The results come back as bytes
 * in a pipe and are put in the serial order, so the output is the same,
 * byte for byte, whatever the number of workers (doc/scale.md).
 *
 * The items are claimed in increasing order, each by whichever worker
 * is free (a counter in memory shared with the workers; the calling
 * process is one of them, running items between reads of the others'
 * records): a worker slowed by the rest of the machine takes fewer, and
 * an early failure stops the claims after it, while every item before
 * it was claimed earlier and is finished.
 *
 * Ownership: work_run fills a work_result_t that the caller frees with
 * work_result_free.  Must not: be called from a worker (no nesting); run
 * with threads in the process (fork copies only the calling one).
 */
#ifndef NH_CLI_WORK_H
#define NH_CLI_WORK_H

#include <stdbool.h>
#include <stddef.h>

#include "interp/base/util.h"
#include "lang/source.h"

/* Runs item K in a worker: appends the result's bytes to OUT and returns
 * 0, or returns -1 with *err set (the item failed; OUT is dropped).  It
 * runs in the calling process too (worker 0), so what it changes there
 * it must leave as a serial run of the items would. */
typedef int (*work_fn)(void *arg, size_t k, strbuf_t *out, diag_t *err);

typedef struct work_result {
    size_t n;          /* items 0..n-1 */
    strbuf_t *out;     /* each item's bytes (items before first_fail) */
    size_t first_fail; /* the first item that failed, or n */
    diag_t fail;       /* its error */
} work_result_t;

/* Runs items FIRST..N-1 of FN on WORKERS processes (at least 1; at most
 * WORK_MAX_WORKERS are used), looking at STOP while it waits (a Ctrl-C
 * reaches the workers too, as they share the terminal's process group; a
 * time limit they inherit).  SELF: this process is one of the WORKERS
 * (WORKERS - 1 forks); false: WORKERS forks run every item (a test that
 * kills a worker must not kill itself).  Items before FIRST count as done
 * by the caller.  Returns 0 with *RES filled (first_fail = N when every
 * item ran), or -1 with *err set when the workers could not be started
 * (no item ran). */
int work_run(size_t first, size_t n, unsigned workers, bool self, work_fn fn,
             void *arg, const nh_stop_t *stop, work_result_t *res,
             diag_t *err);
void work_result_free(work_result_t *res);

/* The machine's processors online (at least 1), NH_THREADS when set to a
 * whole number from 1 to WORK_MAX_WORKERS. */
unsigned work_default_threads(void);

#define WORK_MAX_WORKERS 1024

#endif
