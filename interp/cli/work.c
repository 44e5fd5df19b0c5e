/*
 * work.c — independent items on worker processes (work.h).
 *
 * The items are claimed in increasing order from a counter shared with
 * the workers (a page mapped before the forks), each by whichever
 * process is free: the calling process too, between reads of the pipes.
 * A forked worker writes one record per item to its pipe: the item's
 * index, a status, and the bytes of the result or the error (a diag_t as
 * it is: the worker is a copy of this process, so its spans name the same
 * texts).  A failure lowers the shared bound on useful items, above which
 * nothing more is claimed; as claims go in order, every item below a
 * failure was claimed before it and is finished.  When the pipes close,
 * the parent waits for the workers and says which item stopped the run:
 * the first failure, or the first item without a result (the one a
 * worker that died had claimed, in the page, or one nobody claimed after
 * a stop).  Must not: let a worker return into the caller (it ends with
 * _exit, so no atexit handler, buffer or history of the session runs
 * twice).
 */
#include "interp/cli/work.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- records ------------------------------------------------------------ */

typedef struct work_head {
    uint64_t k;
    uint32_t failed; /* 0: OUT follows; 1: a diag_t follows */
    uint64_t len;    /* bytes that follow */
} work_head_t;

/* Writes all of N bytes, or returns false. */
static bool work_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        c += w;
        n -= (size_t)w;
    }
    return true;
}

/* What the processes share (a page or more mapped before the forks):
 * the bound on useful items (the first failure's index), the next item
 * not claimed, and what each worker is working on (NO_ITEM: nothing). */
typedef struct work_shared {
    uint64_t bound, next;
    uint64_t claimed[];
} work_shared_t;

#define NO_ITEM UINT64_MAX

/* Lowers *BOUND to K when K is below it (shared with the workers). */
static void work_lower(uint64_t *bound, uint64_t k)
{
    uint64_t cur = __atomic_load_n(bound, __ATOMIC_SEQ_CST);
    while (k < cur &&
           !__atomic_compare_exchange_n(bound, &cur, k, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        ;
}

/* Claims the next item for worker W below N and the bound, or returns
 * NO_ITEM (and W claims nothing). */
static uint64_t work_claim(work_shared_t *sh, unsigned w, size_t n)
{
    uint64_t k = __atomic_fetch_add(&sh->next, 1, __ATOMIC_SEQ_CST);
    if (k >= n || k > __atomic_load_n(&sh->bound, __ATOMIC_SEQ_CST))
        k = NO_ITEM;
    __atomic_store_n(&sh->claimed[w], k, __ATOMIC_SEQ_CST);
    return k;
}

/* The forked worker W: claims items and writes their records to FD. */
static _Noreturn void work_worker(int fd, size_t n, unsigned w, work_fn fn,
                                  void *arg, work_shared_t *sh)
{
    strbuf_t out, rec;
    strbuf_init(&out);
    strbuf_init(&rec);
    for (uint64_t k; (k = work_claim(sh, w, n)) != NO_ITEM;) {
        diag_t e;
        diag_clear(&e);
        out.len = 0;
        int rc = fn(arg, (size_t)k, &out, &e);
        work_head_t h = {k, rc != 0, rc != 0 ? sizeof e : out.len};
        if (rc != 0)
            work_lower(&sh->bound, k);
        /* the record in one write (two an item were 0.8 s of system
         * time in a sweep of 50 001 bicycle speeds), each item's as soon
         * as it is done: a worker that dies leaves only the item it
         * claimed last unreported */
        rec.len = 0;
        strbuf_addn(&rec, (const char *)&h, sizeof h);
        strbuf_addn(&rec, rc != 0 ? (const char *)&e : out.data,
                    (size_t)h.len);
        if (!work_write_all(fd, rec.data, rec.len))
            _exit(1);
        if (rc != 0)
            break;
    }
    _exit(0);
}

/* ---- the parent ------------------------------------------------------------ */

typedef struct work_pipe {
    int fd; /* -1 once closed */
    pid_t pid;
    unsigned w; /* its index in work_shared_t's claimed */
    int status; /* waitpid's, once it ended */
    char *buf;  /* what was read and not yet taken as records */
    size_t len, cap;
} work_pipe_t;

/* What work_run keeps while it runs. */
typedef struct work_state {
    work_result_t *res;
    work_shared_t *sh;
    bool *got; /* n: the item's record (or this process's result) came */
} work_state_t;

/* Item K failed with E: the first failure in index order is the one
 * reported. */
static void work_failed(work_state_t *ws, size_t k, const diag_t *e)
{
    work_lower(&ws->sh->bound, k);
    if (k < ws->res->first_fail) {
        ws->res->first_fail = k;
        ws->res->fail = *e;
    }
}

/* Takes the complete records out of P's buffer. */
static void work_take(work_pipe_t *p, work_state_t *ws)
{
    work_result_t *res = ws->res;
    size_t at = 0;
    while (p->len - at >= sizeof(work_head_t)) {
        work_head_t h;
        memcpy(&h, p->buf + at, sizeof h);
        if (p->len - at - sizeof h < h.len)
            break;
        const char *body = p->buf + at + sizeof h;
        if (h.k < res->n && !ws->got[h.k]) {
            if (h.failed && h.len == sizeof(diag_t)) {
                diag_t e;
                memcpy(&e, body, sizeof e);
                work_failed(ws, (size_t)h.k, &e);
                ws->got[h.k] = true;
            } else if (!h.failed) {
                strbuf_addn(&res->out[h.k], body, (size_t)h.len);
                ws->got[h.k] = true;
            }
        }
        at += sizeof h + (size_t)h.len;
    }
    memmove(p->buf, p->buf + at, p->len - at);
    p->len -= at;
}

/* Why item K has no result: the stop, or the end of the worker that had
 * claimed it (NC workers in P), into *E. */
static void work_missing(const work_state_t *ws, const work_pipe_t *p,
                         unsigned nc, size_t k, const nh_stop_t *stop,
                         diag_t *e)
{
    diag_clear(e);
    if (nh_stop_due(stop)) {
        diag_error(e, SRC_SPAN_NONE, "%s", nh_stop_reason(stop));
        return;
    }
    for (unsigned j = 0; j < nc; j++)
        if (__atomic_load_n(&ws->sh->claimed[p[j].w], __ATOMIC_SEQ_CST) == k &&
            WIFSIGNALED(p[j].status)) {
            diag_error(e, SRC_SPAN_NONE,
                       "a worker process ended by signal %d without its "
                       "result",
                       WTERMSIG(p[j].status));
            return;
        }
    diag_error(e, SRC_SPAN_NONE, "a worker process ended without its result");
}

int work_run(size_t first, size_t n, unsigned workers, bool self, work_fn fn,
             void *arg, const nh_stop_t *stop, work_result_t *res,
             diag_t *err)
{
    memset(res, 0, sizeof *res);
    res->n = n;
    res->first_fail = n;
    res->out = xcalloc(n ? n : 1, sizeof *res->out);
    if (first >= n)
        return 0;
    unsigned nw = workers < 1 ? 1 : workers;
    if (nw > WORK_MAX_WORKERS)
        nw = WORK_MAX_WORKERS;
    if (nw > n - first)
        nw = (unsigned)(n - first);
    /* This process runs items itself between reads of the pipes (SELF):
     * NW - 1 forks, and no process on a core of its own only to wait
     * for records (on 2 cores, 2 workers and a waiting parent cost a
     * quarter more CPU in a sweep of 1001 bicycle speeds) */
    unsigned nc = self ? nw - 1 : nw;
    size_t shsize = sizeof(work_shared_t) + (nw + 1) * sizeof(uint64_t);
    work_shared_t *sh = mmap(NULL, shsize, PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        work_result_free(res);
        return diag_error(err, SRC_SPAN_NONE,
                          "cannot share memory with worker processes: %s",
                          strerror(errno));
    }
    sh->bound = NO_ITEM;
    sh->next = first;
    for (unsigned w = 0; w <= nw; w++)
        sh->claimed[w] = NO_ITEM;
    work_state_t ws = {res, sh, xcalloc(n, sizeof *ws.got)};
    work_pipe_t *p = xcalloc(nc ? nc : 1, sizeof *p);
    fflush(NULL); /* nothing buffered is written twice */
    unsigned started = 0;
    for (; started < nc; started++) {
        int fds[2];
        if (pipe(fds) != 0)
            break;
        pid_t pid = fork();
        if (pid < 0) {
            close(fds[0]);
            close(fds[1]);
            break;
        }
        if (pid == 0) {
            close(fds[0]);
            for (unsigned j = 0; j < started; j++)
                close(p[j].fd);
            work_worker(fds[1], n, started + 1, fn, arg, sh);
        }
        close(fds[1]);
        p[started].fd = fds[0];
        p[started].pid = pid;
        p[started].w = started + 1;
    }
    if (started < nc) {
        /* what could be started stops at once; nothing is reported */
        int e = errno;
        sh->bound = 0;
        sh->next = n;
        for (unsigned j = 0; j < started; j++) {
            kill(p[j].pid, SIGTERM);
            close(p[j].fd);
            waitpid(p[j].pid, NULL, 0);
        }
        free(p);
        free(ws.got);
        munmap(sh, shsize);
        work_result_free(res);
        return diag_error(err, SRC_SPAN_NONE,
                          "cannot start %u worker processes: %s (set "
                          "threads = 1 runs in this one)",
                          nc, strerror(e));
    }

    struct pollfd *pf = xcalloc(nc ? nc : 1, sizeof *pf);
    unsigned open = nc;
    bool told = false, mine = self; /* this process still claims items */
    while (open > 0 || mine) {
        if (!told && nh_stop_due(stop)) {
            /* a time limit, or an interrupt the workers did not get
             * themselves (a notebook's): they stop where they are, and
             * nothing more is claimed */
            __atomic_store_n(&sh->next, (uint64_t)n, __ATOMIC_SEQ_CST);
            for (unsigned j = 0; j < nc; j++)
                if (p[j].fd >= 0)
                    kill(p[j].pid, SIGINT);
            told = true;
            mine = false;
        }
        if (mine) {
            /* one item here, as a worker runs it */
            uint64_t k = work_claim(sh, 0, n);
            if (k == NO_ITEM) {
                mine = false;
            } else {
                diag_t e;
                diag_clear(&e);
                if (fn(arg, (size_t)k, &res->out[k], &e) != 0) {
                    strbuf_free(&res->out[k]);
                    work_failed(&ws, (size_t)k, &e);
                    mine = false;
                }
                ws.got[k] = true;
            }
        }
        unsigned m = 0;
        for (unsigned j = 0; j < nc; j++)
            if (p[j].fd >= 0) {
                pf[m].fd = p[j].fd;
                pf[m].events = POLLIN;
                pf[m].revents = 0;
                m++;
            }
        if (m == 0)
            continue;
        /* between its own items it only looks; after them it waits */
        int r = poll(pf, m, mine ? 0 : 100);
        if (r < 0 && errno != EINTR)
            break;
        if (r <= 0)
            continue;
        for (unsigned j = 0, q = 0; j < nc; j++) {
            if (p[j].fd < 0)
                continue;
            short ev = pf[q++].revents;
            if (!(ev & (POLLIN | POLLHUP | POLLERR)))
                continue;
            xgrow(&p[j].buf, &p[j].cap, p[j].len + 65536, 1);
            ssize_t got = read(p[j].fd, p[j].buf + p[j].len, 65536);
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0) {
                /* it ended: what it had claimed and not reported stops
                 * the others from claiming past it */
                close(p[j].fd);
                p[j].fd = -1;
                open--;
                uint64_t k = __atomic_load_n(&sh->claimed[p[j].w],
                                             __ATOMIC_SEQ_CST);
                if (k != NO_ITEM && k < n && !ws.got[k])
                    work_lower(&sh->bound, k);
                continue;
            }
            p[j].len += (size_t)got;
            work_take(&p[j], &ws);
        }
    }
    free(pf);

    /* Every worker has closed its pipe: wait for it; then the first item
     * below the first failure without a result, if any, is where the run
     * stopped. */
    for (unsigned j = 0; j < nc; j++) {
        if (p[j].fd >= 0)
            close(p[j].fd);
        while (waitpid(p[j].pid, &p[j].status, 0) < 0 && errno == EINTR)
            ;
        free(p[j].buf);
    }
    for (size_t k = first; k < res->first_fail; k++)
        if (!ws.got[k]) {
            diag_t e;
            work_missing(&ws, p, nc, k, stop, &e);
            res->first_fail = k;
            res->fail = e;
            break;
        }
    free(p);
    free(ws.got);
    munmap(sh, shsize);
    /* what ran after the first failure is not the serial run's */
    for (size_t k = res->first_fail; k < n; k++)
        strbuf_free(&res->out[k]);
    return 0;
}

void work_result_free(work_result_t *res)
{
    if (!res->out)
        return;
    for (size_t k = 0; k < res->n; k++)
        strbuf_free(&res->out[k]);
    free(res->out);
    res->out = NULL;
}

unsigned work_default_threads(void)
{
    const char *env = getenv("NH_THREADS");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end == '\0' && v >= 1 && v <= WORK_MAX_WORKERS)
            return (unsigned)v;
    }
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    if (c < 1)
        return 1;
    return c > WORK_MAX_WORKERS ? WORK_MAX_WORKERS : (unsigned)c;
}
