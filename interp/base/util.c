/*
 * util.c — see util.h.  Must not: print, except the one message before
 * aborting on exhausted memory.
 */
#include "interp/base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

void nh_out_of_memory(void)
{
    fputs("nh: out of memory\n", stderr);
    abort();
}

void xmalloc_setup(void)
{
#if defined(__GLIBC__)
    /* Blocks up to 32 MiB (glibc's largest mmap threshold) come from the
     * heap, and the heap's top is given back only past 64 MiB free. */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        nh_out_of_memory();
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        nh_out_of_memory();
    return p;
}

void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        nh_out_of_memory();
    return p;
}

char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

void xgrow(void *v, size_t *cap, size_t need, size_t elt)
{
    void **pv = v;
    if (need <= *cap)
        return;
    size_t c = *cap ? *cap : 4;
    while (c < need)
        c *= 2;
    *pv = xrealloc(*pv, c * elt);
    *cap = c;
}

void strbuf_init(strbuf_t *b)
{
    b->data = NULL;
    b->len = b->cap = 0;
}

void strbuf_free(strbuf_t *b)
{
    free(b->data);
    strbuf_init(b);
}

void strbuf_addn(strbuf_t *b, const char *s, size_t n)
{
    xgrow(&b->data, &b->cap, b->len + n + 1, 1);
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void strbuf_add(strbuf_t *b, const char *s)
{
    strbuf_addn(b, s, strlen(s));
}

void strbuf_vaddf(strbuf_t *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    xgrow(&b->data, &b->cap, b->len + (size_t)n + 1, 1);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void strbuf_addf(strbuf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    strbuf_vaddf(b, fmt, ap);
    va_end(ap);
}

char *strbuf_take(strbuf_t *b)
{
    char *s = b->data ? b->data : xstrdup("");
    strbuf_init(b);
    return s;
}

/* ---- stopping long work ------------------------------------------------- */

double nh_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *nh_stop_reason(const nh_stop_t *st)
{
    return st->raised ? "interrupted"
                      : "stopped: the statement ran past its time limit";
}
