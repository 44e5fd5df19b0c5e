/*
 * test_work.c — independent items on worker processes (interp/cli/work.h,
 * LANGUAGE.md §1.2): the results in the serial order whatever the number
 * of workers, the first failure as a serial run meets it, a worker that
 * dies, a time limit, and the default number of workers.
 *
 * The items here are small functions of their index, so the serial
 * answer is known without the module: item k's bytes are "k*k;".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "interp/cli/work.h"

/* What an item does besides its result, by index. */
typedef struct plan {
    size_t fail_at;   /* an error at this item (SIZE_MAX: none) */
    size_t kill_at;   /* SIGKILL to itself at this item */
    size_t exit_at;   /* _exit(3) at this item */
    double sleep;     /* seconds per item */
    const nh_stop_t *stop;
} plan_t;

static int square(void *arg, size_t k, strbuf_t *out, diag_t *err)
{
    const plan_t *p = arg;
    if (p->sleep > 0) {
        struct timespec ts = {0, (long)(p->sleep * 1e9)};
        nanosleep(&ts, NULL);
    }
    if (p->stop && nh_stop_due(p->stop))
        return diag_error(err, SRC_SPAN_NONE, "%s", nh_stop_reason(p->stop));
    if (k == p->kill_at)
        raise(SIGKILL);
    if (k == p->exit_at)
        _exit(3);
    if (k == p->fail_at)
        return diag_error(err, SRC_SPAN_NONE, "item %zu fails", k);
    strbuf_addf(out, "%zu;", k * k);
    return 0;
}

static plan_t plan_none(void)
{
    plan_t p = {SIZE_MAX, SIZE_MAX, SIZE_MAX, 0, NULL};
    return p;
}

static void expect_squares(const work_result_t *r, size_t first, size_t upto)
{
    for (size_t k = first; k < upto; k++) {
        char want[64];
        snprintf(want, sizeof want, "%zu;", k * k);
        if (r->out[k].len != strlen(want) ||
            memcmp(r->out[k].data, want, r->out[k].len) != 0)
            fail_msg("item %zu: '%.*s', expected '%s'", k,
                     (int)r->out[k].len, r->out[k].data ? r->out[k].data : "",
                     want);
    }
}

static void test_every_count_of_workers(void **state)
{
    (void)state;
    plan_t p = plan_none();
    for (unsigned w = 1; w <= 9; w++) {
        work_result_t r;
        diag_t err = {0};
        assert_int_equal(
            work_run(2, 50, w, true, square, &p, NULL, &r, &err), 0);
        assert_int_equal(r.first_fail, 50);
        assert_int_equal(r.out[0].len, 0); /* before FIRST: the caller's */
        assert_int_equal(r.out[1].len, 0);
        expect_squares(&r, 2, 50);
        work_result_free(&r);
    }
    /* more workers than items, and no items */
    work_result_t r;
    diag_t err = {0};
    assert_int_equal(work_run(0, 3, 64, true, square, &p, NULL, &r, &err), 0);
    expect_squares(&r, 0, 3);
    work_result_free(&r);
    assert_int_equal(work_run(5, 5, 4, true, square, &p, NULL, &r, &err), 0);
    assert_int_equal(r.first_fail, 5);
    work_result_free(&r);
}

/* The first failure in index order is reported, with every item before
 * it, whichever worker meets it first in time. */
static void test_first_failure(void **state)
{
    (void)state;
    /* whichever process claims it, this one (SELF) or a forked one */
    static const size_t at[] = {17, 12};
    for (size_t a = 0; a < 4; a++)
        for (unsigned w = 1; w <= 5; w++) {
            plan_t p = plan_none();
            p.fail_at = at[a % 2];
            work_result_t r;
            diag_t err = {0};
            char want[32];
            snprintf(want, sizeof want, "item %zu fails", at[a % 2]);
            assert_int_equal(work_run(0, 40, w, a < 2, square, &p, NULL, &r,
                                      &err),
                             0);
            assert_int_equal(r.first_fail, at[a % 2]);
            assert_string_equal(r.fail.msg, want);
            expect_squares(&r, 0, at[a % 2]);
            for (size_t k = at[a % 2]; k < 40; k++)
                assert_int_equal(r.out[k].len, 0);
            work_result_free(&r);
        }
}

/* A forked worker that dies at an item: the run stops there, with every
 * item before it (the workers are all forks: this process must not run
 * the item that kills). */
static void test_worker_that_dies(void **state)
{
    (void)state;
    plan_t p = plan_none();
    p.kill_at = 11;
    work_result_t r;
    diag_t err = {0};
    assert_int_equal(work_run(0, 30, 3, false, square, &p, NULL, &r, &err),
                     0);
    assert_int_equal(r.first_fail, 11);
    assert_string_equal(r.fail.msg,
                        "a worker process ended by signal 9 without its "
                        "result");
    expect_squares(&r, 0, 11);
    work_result_free(&r);

    p = plan_none();
    p.exit_at = 5;
    assert_int_equal(work_run(0, 30, 2, false, square, &p, NULL, &r, &err),
                     0);
    assert_int_equal(r.first_fail, 5);
    assert_string_equal(r.fail.msg,
                        "a worker process ended without its result");
    expect_squares(&r, 0, 5);
    work_result_free(&r);
}

/* The item's square, and which process ran it. */
static int square_where(void *arg, size_t k, strbuf_t *out, diag_t *err)
{
    const pid_t *slow = arg;
    (void)err;
    if (getpid() == *slow) {
        struct timespec ts = {0, 50000000}; /* 50 ms an item here */
        nanosleep(&ts, NULL);
    }
    strbuf_addf(out, "%zu;%ld", k * k, (long)getpid());
    return 0;
}

/* The items go to whoever is free: with this process 50 ms an item and
 * a forked worker quick, this process runs far fewer than the half that
 * dealing them out in turn would give it, and every result is there. */
static void test_claimed_by_the_free(void **state)
{
    (void)state;
    pid_t me = getpid();
    work_result_t r;
    diag_t err = {0};
    assert_int_equal(work_run(0, 40, 2, true, square_where, &me, NULL, &r,
                              &err),
                     0);
    assert_int_equal(r.first_fail, 40);
    size_t here = 0;
    for (size_t k = 0; k < 40; k++) {
        size_t sq;
        long pid;
        assert_non_null(r.out[k].data);
        assert_int_equal(sscanf(r.out[k].data, "%zu;%ld", &sq, &pid), 2);
        assert_int_equal(sq, k * k);
        here += pid == (long)me;
    }
    assert_true(here < 20);
    work_result_free(&r);
}

/* A time limit the workers inherit: the run stops early with the limit's
 * message at the first item not done, and the items before it are
 * there. */
static void test_time_limit(void **state)
{
    (void)state;
    nh_stop_t stop = {0, nh_clock() + 0.05};
    plan_t p = plan_none();
    p.sleep = 0.01;
    p.stop = &stop;
    work_result_t r;
    diag_t err = {0};
    assert_int_equal(
        work_run(0, 1000, 2, true, square, &p, &stop, &r, &err), 0);
    assert_true(r.first_fail < 1000);
    assert_string_equal(r.fail.msg,
                        "stopped: the statement ran past its time limit");
    expect_squares(&r, 0, r.first_fail);
    work_result_free(&r);
}

static void test_default_threads(void **state)
{
    (void)state;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    setenv("NH_THREADS", "3", 1);
    assert_int_equal(work_default_threads(), 3);
    setenv("NH_THREADS", "0", 1); /* not 1 to 1024: the processors */
    assert_int_equal(work_default_threads(), cores < 1 ? 1 : cores);
    setenv("NH_THREADS", "2x", 1);
    assert_int_equal(work_default_threads(), cores < 1 ? 1 : cores);
    unsetenv("NH_THREADS");
    assert_int_equal(work_default_threads(), cores < 1 ? 1 : cores);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_count_of_workers),
        cmocka_unit_test(test_first_failure),
        cmocka_unit_test(test_worker_that_dies),
        cmocka_unit_test(test_claimed_by_the_free),
        cmocka_unit_test(test_time_limit),
        cmocka_unit_test(test_default_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
