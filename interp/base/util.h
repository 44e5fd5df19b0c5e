/*
 * util.h — allocation that aborts on exhaustion (the one fatal case), a
 * growable string buffer for the printers and reports, and the request
 * to stop long work (Ctrl-C, a time limit) with the clock it reads.
 *
 * Ownership: xmalloc & co. return memory the caller frees with free();
 * a strbuf_t owns its data until strbuf_take() hands it to the caller.
 */
#ifndef NH_UTIL_H
#define NH_UTIL_H

#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* Says "nh: out of memory" on standard error and aborts: what every
 * allocator of nh does when the system refuses memory (issue 31: an
 * allocation of 8 GB aborted without a word). */
_Noreturn void nh_out_of_memory(void);

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* The process's allocator set-up, called first by nh's main and by the
 * benchmark (which measures what nh does): memory that a derivation
 * frees stays in the process for the next one, up to 64 MiB, instead of
 * going back to the system.  glibc's defaults return every block over
 * 128 KiB at once, so that each derivation of a large model faulted its
 * tables back in page by page (doc/performance.md, fifth session). */
void xmalloc_setup(void);

/* Grows *v (element size ELT) so that it holds at least NEED elements. */
void xgrow(void *v, size_t *cap, size_t need, size_t elt);

typedef struct strbuf {
    char *data; /* NUL-terminated once anything was written */
    size_t len, cap;
} strbuf_t;

void strbuf_init(strbuf_t *b);
void strbuf_free(strbuf_t *b);
void strbuf_add(strbuf_t *b, const char *s);
void strbuf_addn(strbuf_t *b, const char *s, size_t n);
void strbuf_addf(strbuf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void strbuf_vaddf(strbuf_t *b, const char *fmt, va_list ap);
/* The string (never NULL; "" when empty); the buffer is left empty. */
char *strbuf_take(strbuf_t *b);

/* A request to stop long work (the evaluations of a `simulate`, the draws
 * of a `compare`), looked at before each: RAISED is set from a signal
 * handler (Ctrl-C in the REPL), DEADLINE is a time on the monotonic
 * clock (seconds; 0 for none) that the fuzzing harness sets. */
typedef struct nh_stop {
    volatile sig_atomic_t raised;
    double deadline;
} nh_stop_t;

/* Seconds on the monotonic clock. */
double nh_clock(void);

/* Whether the work should stop now: raised, or past the deadline.  NULL
 * never stops.  Inline: simulate asks it at every evaluation. */
static inline bool nh_stop_due(const nh_stop_t *st)
{
    return st && (st->raised || (st->deadline > 0.0 && nh_clock() >= st->deadline));
}

/* What stopped it, for the error: "interrupted" or a sentence naming the
 * time limit.  ST is not NULL and nh_stop_due(ST) was true. */
const char *nh_stop_reason(const nh_stop_t *st);

#endif
