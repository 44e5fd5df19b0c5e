/*
 * work.c — independent items on worker processes (work.h).
 *
 * A worker writes one record per item to its pipe: the item's index, a
 * status, and the bytes of the result or the error (a diag_t as it is:
 * the worker is a copy of this process, so its spans name the same
 * texts).  The parent runs worker 0's items itself and reads every pipe
 * between them and, once they are done, as records arrive; it lowers the
 * shared bound on useful items when one fails (a page shared with the
 * workers), and when the pipes close, waits for the workers and says
 * which item stopped the run.  Must not: let a worker return into the
 * caller (it ends with _exit, so no atexit handler, buffer or history of
 * the session runs twice).
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

/* Lowers *BOUND to K when K is below it (shared with the workers). */
static void work_lower(uint64_t *bound, uint64_t k)
{
    uint64_t cur = __atomic_load_n(bound, __ATOMIC_SEQ_CST);
    while (k < cur &&
           !__atomic_compare_exchange_n(bound, &cur, k, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        ;
}

/* The worker W of NW: its items FIRST + W, + NW, ... in order, each while
 * it is below the bound of useful items. */
static _Noreturn void work_worker(int fd, size_t first, size_t n, unsigned w,
                                  unsigned nw, work_fn fn, void *arg,
                                  uint64_t *bound)
{
    strbuf_t out, rec;
    strbuf_init(&out);
    strbuf_init(&rec);
    for (size_t k = first + w; k < n; k += nw) {
        if (k > __atomic_load_n(bound, __ATOMIC_SEQ_CST))
            break;
        diag_t e;
        diag_clear(&e);
        out.len = 0;
        int rc = fn(arg, k, &out, &e);
        work_head_t h = {k, rc != 0, rc != 0 ? sizeof e : out.len};
        if (rc != 0)
            work_lower(bound, k);
        /* the record in one write (two an item were 0.8 s of system
         * time in a sweep of 50 001 bicycle speeds), each item's as soon
         * as it is done: a worker that dies leaves every item before
         * its last one reported */
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
    char *buf; /* what was read and not yet taken as records */
    size_t len, cap;
    size_t next; /* the worker's next item it has not reported */
} work_pipe_t;

/* Takes the complete records out of P's buffer into RES. */
static void work_take(work_pipe_t *p, unsigned nw, work_result_t *res,
                      uint64_t *bound)
{
    size_t at = 0;
    while (p->len - at >= sizeof(work_head_t)) {
        work_head_t h;
        memcpy(&h, p->buf + at, sizeof h);
        if (p->len - at - sizeof h < h.len)
            break;
        const char *body = p->buf + at + sizeof h;
        if (h.k < res->n) {
            if (h.failed && h.len == sizeof(diag_t)) {
                work_lower(bound, h.k);
                if (h.k < res->first_fail) {
                    res->first_fail = h.k;
                    memcpy(&res->fail, body, sizeof res->fail);
                }
            } else if (!h.failed) {
                strbuf_addn(&res->out[h.k], body, (size_t)h.len);
            }
            p->next = (size_t)h.k + nw;
        }
        at += sizeof h + (size_t)h.len;
    }
    memmove(p->buf, p->buf + at, p->len - at);
    p->len -= at;
}

int work_run(size_t first, size_t n, unsigned workers, work_fn fn, void *arg,
             const nh_stop_t *stop, work_result_t *res, diag_t *err)
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

    uint64_t *bound = mmap(NULL, sizeof *bound, PROT_READ | PROT_WRITE,
                           MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (bound == MAP_FAILED) {
        work_result_free(res);
        return diag_error(err, SRC_SPAN_NONE,
                          "cannot share memory with worker processes: %s",
                          strerror(errno));
    }
    *bound = UINT64_MAX;
    /* This process runs worker 0's items itself, between reads of the
     * pipes: NW - 1 forks, and no process on a core of its own only to
     * wait for records (on 2 cores, 2 workers and a waiting parent cost
     * a quarter more CPU in a sweep of 1001 bicycle speeds) */
    unsigned nc = nw - 1;
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
            work_worker(fds[1], first, n, started + 1, nw, fn, arg, bound);
        }
        close(fds[1]);
        p[started].fd = fds[0];
        p[started].pid = pid;
        p[started].next = first + started + 1;
    }
    if (started < nc) {
        /* what could be started stops at once; nothing is reported */
        int e = errno;
        *bound = 0;
        for (unsigned j = 0; j < started; j++) {
            kill(p[j].pid, SIGTERM);
            close(p[j].fd);
            waitpid(p[j].pid, NULL, 0);
        }
        free(p);
        munmap(bound, sizeof *bound);
        work_result_free(res);
        return diag_error(err, SRC_SPAN_NONE,
                          "cannot start %u worker processes: %s (set "
                          "threads = 1 runs in this one)",
                          nc, strerror(e));
    }

    struct pollfd *pf = xcalloc(nc ? nc : 1, sizeof *pf);
    unsigned open = nc;
    bool told = false;
    size_t mine = first; /* this process's next item; n once done */
    while (open > 0 || mine < n) {
        if (!told && nh_stop_due(stop)) {
            /* a time limit, or an interrupt the workers did not get
             * themselves (a notebook's): they stop where they are */
            for (unsigned j = 0; j < nc; j++)
                if (p[j].fd >= 0)
                    kill(p[j].pid, SIGINT);
            told = true;
        }
        if (told && mine < n) {
            /* its own items stop too, as a worker's would */
            if (mine <= __atomic_load_n(bound, __ATOMIC_SEQ_CST) &&
                mine < res->first_fail) {
                work_lower(bound, mine);
                res->first_fail = mine;
                diag_clear(&res->fail);
                diag_error(&res->fail, SRC_SPAN_NONE, "%s",
                           nh_stop_reason(stop));
            }
            mine = n;
        }
        if (mine < n) {
            /* one of this process's items, as a worker runs it */
            if (mine > __atomic_load_n(bound, __ATOMIC_SEQ_CST)) {
                mine = n;
            } else {
                diag_t e;
                diag_clear(&e);
                if (fn(arg, mine, &res->out[mine], &e) != 0) {
                    strbuf_free(&res->out[mine]);
                    work_lower(bound, mine);
                    if (mine < res->first_fail) {
                        res->first_fail = mine;
                        res->fail = e;
                    }
                    mine = n;
                } else {
                    mine += nw;
                }
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
        int r = poll(pf, m, mine < n ? 0 : 100);
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
                close(p[j].fd);
                p[j].fd = -1;
                open--;
                continue;
            }
            p[j].len += (size_t)got;
            work_take(&p[j], nw, res, bound);
        }
    }
    free(pf);

    /* Every worker has closed its pipe: wait for it, and a worker that
     * ended before its items below the bound were reported fails at the
     * first of them. */
    for (unsigned j = 0; j < nc; j++) {
        if (p[j].fd >= 0)
            close(p[j].fd);
        int status = 0;
        while (waitpid(p[j].pid, &status, 0) < 0 && errno == EINTR)
            ;
        size_t k = p[j].next;
        if (k < n && k <= *bound && k < res->first_fail) {
            res->first_fail = k;
            diag_clear(&res->fail);
            if (nh_stop_due(stop))
                diag_error(&res->fail, SRC_SPAN_NONE, "%s",
                           nh_stop_reason(stop));
            else if (WIFSIGNALED(status))
                diag_error(&res->fail, SRC_SPAN_NONE,
                           "a worker process ended by signal %d without "
                           "its result",
                           WTERMSIG(status));
            else
                diag_error(&res->fail, SRC_SPAN_NONE,
                           "a worker process ended without its result");
        }
        free(p[j].buf);
    }
    free(p);
    munmap(bound, sizeof *bound);
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
