/*
 * test_outfile.c — a file written whole or not at all (interp/base/outfile.h,
 * LANGUAGE.md §7: "a failed write is an error and leaves an existing file
 * as it was").
 *
 * Each test runs in a fresh temporary folder (chdir).  A failing write is
 * made by a file-size limit (RLIMIT_FSIZE, with SIGXFSZ ignored, so that
 * write(2) fails with EFBIG as it would on a full disk) and by /dev/full.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "interp/base/outfile.h"

typedef struct fixture {
    char dir[64];
    char old_cwd[4096];
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/nh-outfile-XXXXXX");
    if (!mkdtemp(f->dir) || !getcwd(f->old_cwd, sizeof f->old_cwd) ||
        chdir(f->dir) != 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    DIR *d = opendir(".");
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            unlink(e->d_name);
    if (d)
        closedir(d);
    rmdir("sub");
    if (chdir(f->old_cwd) != 0)
        return -1;
    rmdir(f->dir);
    free(f);
    return 0;
}

/* The entries of the current folder. */
static size_t entries(void)
{
    DIR *d = opendir(".");
    assert_non_null(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* The file's text (at most 255 bytes). */
static const char *get(const char *path)
{
    static char buf[256];
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void test_new_and_replaced(void **state)
{
    (void)state;
    outfile_t o;
    assert_int_equal(outfile_open(&o, "a.txt"), 0);
    fputs("one\n", o.f);
    /* Nothing at the target until the commit: only the temporary. */
    assert_null(get("a.txt"));
    assert_int_equal(entries(), 1);
    assert_int_equal(outfile_commit(&o), 0);
    assert_string_equal(get("a.txt"), "one\n");
    assert_int_equal(entries(), 1);

    /* fopen's mode for a new file: 0666 less the umask. */
    mode_t mask = umask(022);
    assert_int_equal(outfile_open(&o, "b.txt"), 0);
    assert_int_equal(outfile_commit(&o), 0);
    struct stat sb;
    assert_int_equal(stat("b.txt", &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0644);
    umask(mask);

    /* A replaced file keeps its mode. */
    assert_int_equal(chmod("a.txt", 0640), 0);
    assert_int_equal(outfile_open(&o, "a.txt"), 0);
    fputs("two\n", o.f);
    assert_int_equal(outfile_commit(&o), 0);
    assert_string_equal(get("a.txt"), "two\n");
    assert_int_equal(stat("a.txt", &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0640);
}

static void test_abort_keeps_the_file(void **state)
{
    (void)state;
    put("keep.txt", "old\n");
    outfile_t o;
    assert_int_equal(outfile_open(&o, "keep.txt"), 0);
    fputs("new, half written", o.f);
    outfile_abort(&o);
    assert_string_equal(get("keep.txt"), "old\n");
    assert_int_equal(entries(), 1); /* no temporary left */
    outfile_t never = {0};
    outfile_abort(&never); /* a zeroed one is fine */
}

/* A write that fails (EFBIG past RLIMIT_FSIZE, as ENOSPC on a full
 * disk): the commit says so and the old text stays. */
static void test_failed_write_keeps_the_file(void **state)
{
    (void)state;
    put("keep.txt", "old\n");
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    lim = old;
    lim.rlim_cur = 1000;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    outfile_t o;
    assert_int_equal(outfile_open(&o, "keep.txt"), 0);
    for (int i = 0; i < 1000; i++)
        fputs("more than the limit allows\n", o.f);
    int e = outfile_commit(&o);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, old_handler);
    assert_int_equal(e, EFBIG);
    assert_string_equal(get("keep.txt"), "old\n");
    assert_int_equal(entries(), 1);
}

static void test_special_targets(void **state)
{
    (void)state;
    outfile_t o;
    /* A folder that does not exist; a folder as the target. */
    assert_int_equal(outfile_open(&o, "no/such/dir.csv"), ENOENT);
    assert_null(o.f);
    assert_int_equal(mkdir("sub", 0700), 0);
    assert_int_equal(outfile_open(&o, "sub"), EISDIR);
    assert_int_equal(outfile_open(&o, ""), ENOENT);

    /* A device is written directly, and its errors reported. */
    assert_int_equal(outfile_open(&o, "/dev/full"), 0);
    assert_null(o.tmp);
    fputs("x\n", o.f);
    assert_int_equal(outfile_commit(&o), ENOSPC);
    assert_int_equal(outfile_open(&o, "/dev/null"), 0);
    fputs("x\n", o.f);
    assert_int_equal(outfile_commit(&o), 0);

    /* A link: the file it names is replaced, the link stays. */
    put("real.txt", "old\n");
    assert_int_equal(symlink("real.txt", "link.txt"), 0);
    assert_int_equal(outfile_open(&o, "link.txt"), 0);
    fputs("new\n", o.f);
    assert_int_equal(outfile_commit(&o), 0);
    struct stat sb;
    assert_int_equal(lstat("link.txt", &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    assert_string_equal(get("real.txt"), "new\n");
    assert_int_equal(entries(), 3); /* sub, real.txt, link.txt */
}

/* A FIFO that no process reads is refused at once, not waited on (issue
 * 31: `print 1 > "fifo"` hung); with a reader it is written directly.
 * outfile_open_regular takes a regular file (through a link) or a new
 * one, and refuses a device and a FIFO. */
static void test_fifo_and_regular(void **state)
{
    (void)state;
    outfile_t o;
    assert_int_equal(mkfifo("f", 0600), 0);
    assert_int_equal(outfile_open(&o, "f"), OUTFILE_NO_READER);
    assert_null(o.f);
    assert_string_equal(outfile_strerror(OUTFILE_NO_READER),
                        "it is a FIFO that no process reads (nh does not "
                        "wait for one)");
    int rd = open("f", O_RDONLY | O_NONBLOCK);
    assert_true(rd >= 0);
    assert_int_equal(outfile_open(&o, "f"), 0);
    assert_null(o.tmp);
    fputs("x\n", o.f);
    assert_int_equal(outfile_commit(&o), 0);
    char buf[8] = {0};
    assert_int_equal(read(rd, buf, sizeof buf), 2);
    assert_string_equal(buf, "x\n");
    close(rd);

    assert_int_equal(outfile_open_regular(&o, "f"), OUTFILE_NOT_REGULAR);
    assert_int_equal(outfile_open_regular(&o, "/dev/null"),
                     OUTFILE_NOT_REGULAR);
    assert_null(o.f);
    assert_string_equal(outfile_strerror(OUTFILE_NOT_REGULAR),
                        "it is not a regular file (a device, a FIFO or a "
                        "socket)");
    assert_int_equal(symlink("/dev/null", "null"), 0);
    assert_int_equal(outfile_open_regular(&o, "null"), OUTFILE_NOT_REGULAR);
    /* a link to a file: the file is replaced, the link stays */
    put("real.c", "old\n");
    assert_int_equal(symlink("real.c", "link.c"), 0);
    assert_int_equal(outfile_open_regular(&o, "link.c"), 0);
    fputs("new\n", o.f);
    assert_int_equal(outfile_commit(&o), 0);
    struct stat sb;
    assert_int_equal(lstat("link.c", &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    assert_string_equal(get("real.c"), "new\n");
    assert_int_equal(outfile_open_regular(&o, "new.c"), 0);
    assert_int_equal(outfile_commit(&o), 0);
    assert_string_equal(get("new.c"), "");
    assert_int_equal(entries(), 5); /* f, null, real.c, link.c, new.c */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_new_and_replaced, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_abort_keeps_the_file, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_failed_write_keeps_the_file,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_special_targets, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fifo_and_regular, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
