/*
 * native.c — compiled equations of motion: generate, compile, cache,
 * load (native.h).
 *
 * Why the cache checks what it checks: a shared object is code that nh
 * runs in its own process, so nothing may reach dlopen that nh did not
 * compile from the text it generated.  The folder is the user's alone
 * (created 0700; refused when another user owns it or others may write
 * it, since they could then place a HASH.so there), and so is the way to
 * it: every folder above it is root's or the user's, and one that others
 * may write is sticky (else they could swap the cache for a folder of
 * their own between a check and a use).  The folder is opened once,
 * component by component without following a link, and everything after
 * is relative to that descriptor: the files are opened with openat (no
 * links), checked on the descriptor, a HASH.so is loaded through its own
 * descriptor (/proc/self/fd), and the compiler runs in the folder on
 * relative names.  A cached HASH.so is used only when HASH.c beside it
 * holds the very text just generated (compared byte for byte, not only
 * by hash).  The compiler writes into temporary names made exclusively
 * in that folder, renamed when it succeeds; a SIGINT, SIGTERM or SIGHUP
 * meanwhile ends the compiler and removes them before nh takes the
 * signal, and those a killed nh left are removed when ten minutes old.
 *
 * Must not: print; run a shell; leave temporary files behind.
 */
#define _GNU_SOURCE /* posix_spawn_file_actions_addfchdir_np */
#include "interp/run/native.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "interp/base/util.h"
#include "interp/base/sha256.h"
#include "interp/eom/cgen.h"

extern char **environ;

/* The compiler's flags: ISO C99 (GCC then contracts nothing), the same
 * operations as written (-ffp-contract=off says it to any compiler), a
 * shared object.  Not -march=native: on the development machine it
 * gained 2 ns of 35 on the sphere, with AVX-512 instructions that
 * valgrind cannot run, and an object built for one machine could not be
 * loaded on another with a home folder shared between them. */
static const char *const native_flags[] = {
    "-std=c99", "-O2", "-ffp-contract=off", "-fPIC", "-shared",
};

/* ---- the compiler ------------------------------------------------------- */

/* The words of $CC (at most MAX, in the malloc'ed copy *STORE), or cc. */
static size_t native_cc_words(char **words, size_t max, char **store)
{
    const char *cc = getenv("CC");
    *store = NULL;
    size_t n = 0;
    if (cc && strspn(cc, " \t") < strlen(cc)) {
        *store = xstrdup(cc);
        for (char *tok = strtok(*store, " \t"); tok && n < max;
             tok = strtok(NULL, " \t"))
            words[n++] = tok;
    }
    if (n == 0)
        words[n++] = (char *)NATIVE_DEFAULT_CC;
    return n;
}

/* Whether PROG is an executable file (a path) or one on the PATH; its
 * path into BUF. */
static bool native_find(const char *prog, char *buf, size_t size)
{
    struct stat st;
    if (strchr(prog, '/')) {
        snprintf(buf, size, "%s", prog);
        return stat(prog, &st) == 0 && S_ISREG(st.st_mode) &&
               access(prog, X_OK) == 0;
    }
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    while (*path) {
        size_t len = strcspn(path, ":");
        snprintf(buf, size, "%.*s/%s", (int)len, len ? path : ".", prog);
        if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) &&
            access(buf, X_OK) == 0)
            return true;
        path += len;
        if (*path == ':')
            path++;
    }
    return false;
}

bool native_compiler(char *buf, size_t size)
{
    char *words[1], *store;
    native_cc_words(words, 1, &store);
    bool ok = native_find(words[0], buf, size);
    free(store);
    return ok;
}

/* ---- the cache folder ------------------------------------------------------ */

/* Whether ST (of a file or folder in the cache) is the user's own, of
 * type S_IFMT bits TYPE, and writable by no one else; else *WHY says
 * what is wrong. */
static bool native_private_stat(const struct stat *st, mode_t type,
                                const char **why)
{
    if ((st->st_mode & S_IFMT) != type) {
        *why = type == S_IFDIR ? "it is not a folder" : "it is not a file";
        return false;
    }
    if (st->st_uid != geteuid()) {
        *why = "it belongs to another user";
        return false;
    }
    if (st->st_mode & (S_IWGRP | S_IWOTH)) {
        *why = "others may write to it";
        return false;
    }
    return true;
}

/* Whether NAME in the folder DIR (not followed when a link) is private
 * (native_private_stat). */
static bool native_private(int dir, const char *name, mode_t type,
                           const char **why)
{
    struct stat st;
    if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        *why = strerror(errno);
        return false;
    }
    return native_private_stat(&st, type, why);
}

/* Opens the folder PATH (absolute, its links resolved) component by
 * component from the root, none of them followed as a link, and checks
 * each on the way: owned by root or the user, and if every user may
 * write to it, sticky (as /tmp is: then they cannot rename what is not
 * theirs).  A folder above the cache that another user could change
 * would let that user swap the cache for a folder of their own between
 * the check and the use (issue 31).  A folder that its group may write
 * is accepted: with a umask of 002 (a group of one's own, as Debian
 * gives every user) every folder one makes is.  Returns the folder's
 * descriptor, or -1 with *WHY (and the folder at fault in BAD). */
static int native_walk(const char *path, char *bad, size_t size,
                       const char **why)
{
    int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        *why = strerror(errno);
        snprintf(bad, size, "/");
        return -1;
    }
    const char *p = path;
    size_t at = 0;
    for (;;) {
        struct stat st;
        if (fstat(fd, &st) != 0) {
            *why = strerror(errno);
            break;
        }
        snprintf(bad, size, "%.*s", (int)(at ? at : 1), at ? path : "/");
        if (st.st_uid != 0 && st.st_uid != geteuid()) {
            *why = "it belongs to another user";
            break;
        }
        if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
            *why = "every user may write to it";
            break;
        }
        while (*p == '/')
            p++;
        if (!*p)
            return fd;
        size_t len = strcspn(p, "/");
        char comp[NAME_MAX + 1];
        if (len > NAME_MAX) {
            *why = strerror(ENAMETOOLONG);
            break;
        }
        memcpy(comp, p, len);
        comp[len] = '\0';
        int next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                                        O_CLOEXEC);
        if (next < 0) {
            *why = errno == ELOOP || errno == ENOTDIR ? "it is not a folder"
                                                      : strerror(errno);
            snprintf(bad, size, "%.*s", (int)((size_t)(p - path) + len),
                     path);
            break;
        }
        close(fd);
        fd = next;
        p += len;
        at = (size_t)(p - path);
    }
    close(fd);
    return -1;
}

/* native_cache_dir, keeping the folder open: its descriptor, or -1. */
static int native_cache_open(char *buf, size_t size, diag_t *err)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = NULL;
    if (!xdg || xdg[0] != '/') { /* the XDG spec: ignore a relative one */
        xdg = NULL;
        home = getenv("HOME");
        if (!home || home[0] != '/') {
            struct passwd *pw = getpwuid(getuid());
            home = pw ? pw->pw_dir : NULL;
        }
        if (!home || home[0] != '/')
            return diag_error(err, SRC_SPAN_NONE,
                              "no folder for the compile cache: set "
                              "XDG_CACHE_HOME or HOME");
    }
    /* BUF is the base ($XDG_CACHE_HOME or ~/.cache), then the folder */
    int w = xdg ? snprintf(buf, size, "%s/nh", xdg)
                : snprintf(buf, size, "%s/.cache/nh", home);
    if (w < 0 || (size_t)w >= size)
        return diag_error(err, SRC_SPAN_NONE,
                          "the compile cache's folder name is too long");
    buf[w - 3] = '\0';
    if (mkdir(buf, 0700) != 0 && errno != EEXIST)
        return diag_error(err, SRC_SPAN_NONE,
                          "cannot create the compile cache's folder '%s': %s",
                          buf, strerror(errno));
    buf[w - 3] = '/';
    if (mkdir(buf, 0700) != 0 && errno != EEXIST)
        return diag_error(err, SRC_SPAN_NONE,
                          "cannot create the compile cache '%s': %s", buf,
                          strerror(errno));
    /* The base's own links are the user's to make (a home that is a
     * link): resolved, and the folders on the way checked; the cache
     * itself is not followed. */
    buf[w - 3] = '\0';
    char *real = realpath(buf, NULL);
    buf[w - 3] = '/';
    if (!real)
        return diag_error(err, SRC_SPAN_NONE,
                          "cannot create the compile cache '%s': %s", buf,
                          strerror(errno));
    char bad[NATIVE_PATH];
    const char *why;
    int base = native_walk(real, bad, sizeof bad, &why);
    free(real);
    if (base < 0)
        return diag_error(err, SRC_SPAN_NONE,
                          "the compile cache '%s' is refused: the folder "
                          "'%s' above it: %s (every folder above the cache "
                          "must be root's or yours, and not writable by "
                          "every user unless it is sticky as /tmp is)",
                          buf, bad, why);
    int fd = openat(base, "nh", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                                    O_CLOEXEC);
    int e = errno;
    close(base);
    struct stat st;
    if (fd < 0)
        why = e == ELOOP || e == ENOTDIR ? "it is not a folder" : strerror(e);
    else if (fstat(fd, &st) != 0)
        why = strerror(errno);
    else if (native_private_stat(&st, S_IFDIR, &why))
        return fd;
    if (fd >= 0)
        close(fd);
    return diag_error(err, SRC_SPAN_NONE,
                      "the compile cache '%s' is refused: %s (it must "
                      "be a folder of your own that only you may "
                      "write)",
                      buf, why);
}

int native_cache_dir(char *buf, size_t size, diag_t *err)
{
    int fd = native_cache_open(buf, size, err);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

/* Temporaries left by an nh that died while it compiled (killed, or the
 * machine stopped) are removed when they are older than this: a younger
 * one may be another nh's compile in progress. */
#define NATIVE_STALE_SECONDS 600

/* Removes the cache's stale temporaries (tmp-*, the user's own regular
 * files older than NATIVE_STALE_SECONDS). */
static void native_sweep(int dir)
{
    int fd = dup(dir);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    time_t now = time(NULL);
    for (struct dirent *de; (de = readdir(d));) {
        if (strncmp(de->d_name, "tmp-", 4) != 0)
            continue;
        struct stat st;
        if (fstatat(dir, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
            now - st.st_mtime > NATIVE_STALE_SECONDS)
            unlinkat(dir, de->d_name, 0);
    }
    closedir(d);
}

/* ---- the cache's files ------------------------------------------------------ */

/* Whether NAME in the folder DIR is private (native_private_stat) and
 * holds exactly TEXT[0..len): checked on the descriptor read, not on a
 * name that could change in between. */
static bool native_same_text(int dir, const char *name, const char *text,
                             size_t len)
{
    int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat st;
    const char *why;
    bool same = fstat(fd, &st) == 0 &&
                native_private_stat(&st, S_IFREG, &why) &&
                (size_t)st.st_size == len;
    char chunk[65536];
    size_t at = 0;
    while (same && at < len) {
        ssize_t got = read(fd, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0 || at + (size_t)got > len ||
            memcmp(chunk, text + at, (size_t)got) != 0)
            same = false;
        else
            at += (size_t)got;
    }
    close(fd);
    return same && at == len;
}

/* Writes TEXT into the new file FD (closed here). */
static int native_write(int fd, const char *text, size_t len)
{
    size_t at = 0;
    while (at < len) {
        ssize_t w = write(fd, text + at, len - at);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            errno = e ? e : EIO;
            return -1;
        }
        at += (size_t)w;
    }
    return close(fd);
}

/* The first message of the compiler's output, read from LOG: the first
 * line that says "error", else the first line. */
static void native_first_message(int log, char *msg, size_t size)
{
    msg[0] = '\0';
    int fd = dup(log);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return;
    }
    rewind(f);
    char line[512], first[512] = "";
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!line[0])
            continue;
        if (!first[0])
            snprintf(first, sizeof first, "%s", line);
        if (strstr(line, "error")) {
            snprintf(first, sizeof first, "%s", line);
            break;
        }
    }
    fclose(f);
    snprintf(msg, size, "%s", first);
}

/* SIGINT, SIGTERM and SIGHUP while the compiler runs: the compile is
 * ended and its temporaries removed, then the signal is delivered as it
 * would have been (nh ends, or the REPL's Ctrl-C stops the statement).
 * Without it a SIGTERM left tmp-*.c, .log and .so in the cache for good
 * and the compiler running (issue 31).  A signal handler can only set a
 * flag: the one state of the process that is global. */
static volatile sig_atomic_t native_signal;
static const int native_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define NATIVE_NSIGNALS 3

static void native_on_signal(int sig)
{
    native_signal = sig;
}

static void native_catch(struct sigaction *old)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = native_on_signal;
    sigemptyset(&sa.sa_mask);
    native_signal = 0;
    for (int i = 0; i < NATIVE_NSIGNALS; i++)
        sigaction(native_signals[i], &sa, &old[i]);
}

/* Puts the handlers back and delivers a signal that came meanwhile. */
static void native_release_signals(const struct sigaction *old)
{
    for (int i = 0; i < NATIVE_NSIGNALS; i++)
        sigaction(native_signals[i], &old[i], NULL);
    int sig = native_signal;
    native_signal = 0;
    if (sig)
        raise(sig);
}

/* Compiles SRC into SO, both in the folder DIR (the compiler runs in
 * it), with the compiler's words CC; its output into the file LOG. */
static int native_compile(char **cc, size_t ncc, int dir, const char *src,
                          const char *so, int log, const nh_stop_t *stop,
                          diag_t *err)
{
    size_t nflags = sizeof native_flags / sizeof *native_flags;
    const char **argv = xcalloc(ncc + nflags + 6, sizeof *argv);
    size_t k = 0;
    for (size_t i = 0; i < ncc; i++)
        argv[k++] = cc[i];
    for (size_t i = 0; i < nflags; i++)
        argv[k++] = native_flags[i];
    argv[k++] = "-o";
    argv[k++] = so;
    argv[k++] = src;
    argv[k++] = "-lm";
    argv[k] = NULL;
    /* a compiler given by a relative path is found from nh's folder */
    char prog[4096];
    if (strchr(cc[0], '/') && cc[0][0] != '/' && getcwd(prog, sizeof prog)) {
        size_t l = strlen(prog);
        snprintf(prog + l, sizeof prog - l, "/%s", cc[0]);
    } else {
        snprintf(prog, sizeof prog, "%s", cc[0]);
    }
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0)
        nh_out_of_memory();
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, log, 1);
    posix_spawn_file_actions_adddup2(&fa, log, 2);
    posix_spawn_file_actions_addfchdir_np(&fa, dir);
    pid_t pid;
    int rc = posix_spawnp(&pid, prog, &fa, NULL, (char *const *)argv,
                          environ);
    posix_spawn_file_actions_destroy(&fa);
    free(argv);
    if (rc != 0)
        return diag_error(err, SRC_SPAN_NONE, "cannot run the C compiler "
                          "'%s': %s", cc[0], strerror(rc));
    int status;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return diag_error(err, SRC_SPAN_NONE,
                              "lost the C compiler's process: %s",
                              strerror(errno));
        if (nh_stop_due(stop) || native_signal) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
            /* a signal: seen only when its handler returns (Ctrl-C in
             * the REPL); SIGTERM and SIGHUP end nh (native_build) */
            return diag_error(err, SRC_SPAN_NONE, "%s (while compiling)",
                              native_signal ? "interrupted"
                                            : nh_stop_reason(stop));
        }
        struct timespec nap = {0, 2000000}; /* 2 ms */
        nanosleep(&nap, NULL);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        /* a compiler that says it succeeded must have written the object
         * (CC=true, cc -fsyntax-only write nothing) */
        struct stat st;
        if (fstatat(dir, so, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode) || st.st_size == 0)
            return diag_error(err, SRC_SPAN_NONE,
                              "the C compiler '%s' succeeded but wrote no "
                              "shared object (is it a C compiler that links "
                              "with -shared?)",
                              cc[0]);
        return 0;
    }
    char msg[600];
    native_first_message(log, msg, sizeof msg);
    if (!msg[0]) {
        if (WIFSIGNALED(status))
            snprintf(msg, sizeof msg, "killed by signal %d", WTERMSIG(status));
        else
            snprintf(msg, sizeof msg, "exit status %d", WEXITSTATUS(status));
    }
    return diag_error(err, SRC_SPAN_NONE,
                      "the C compiler '%s' failed on the generated code: %s",
                      cc[0], msg);
}

/* A new file "tmp-XXXXXXXX" + SUFFIX in DIR, made exclusively (not
 * following a link): its descriptor, its name into NAME (the stem into
 * STEM, which may be NULL to take STEM as given); -1 on failure. */
static int native_temp(int dir, char *stem, size_t size, const char *suffix,
                       bool fresh, char *name, size_t nsize)
{
    static const char digits[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    for (int tries = 0; tries < 100; tries++) {
        if (fresh) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^
                         (uint64_t)tries * 0x9E3779B97F4A7C15ULL;
            char r[9];
            for (int i = 0; i < 8; i++) {
                x = x * 6364136223846793005ULL + 1442695040888963407ULL;
                r[i] = digits[(x >> 33) % (sizeof digits - 1)];
            }
            r[8] = '\0';
            snprintf(stem, size, "tmp-%s", r);
        }
        snprintf(name, nsize, "%s%s", stem, suffix);
        int fd = openat(dir, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
                                       O_CLOEXEC,
                        0600);
        if (fd >= 0 || errno != EEXIST || !fresh)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

/* Writes TEXT under temporary names in the cache DIR (its path DIRNAME,
 * for messages), compiles it, and renames the source and the object to C
 * and SO there. */
static int native_build(int dir, const char *dirname, const char *text,
                        size_t len, const char *c, const char *so,
                        const nh_stop_t *stop, diag_t *err)
{
    struct sigaction old[NATIVE_NSIGNALS];
    native_catch(old);
    char stem[32], tmp_c[64], tmp_so[64], tmp_log[64];
    int fd = native_temp(dir, stem, sizeof stem, ".c", true, tmp_c,
                         sizeof tmp_c);
    if (fd < 0) {
        int e = errno;
        native_release_signals(old);
        return diag_error(err, SRC_SPAN_NONE,
                          "cannot write to the compile cache '%s': %s",
                          dirname, strerror(e));
    }
    snprintf(tmp_so, sizeof tmp_so, "%s.so", stem);
    int rc = 0;
    int log = native_temp(dir, stem, sizeof stem, ".log", false, tmp_log,
                          sizeof tmp_log);
    if (native_write(fd, text, len) != 0 || log < 0)
        rc = diag_error(err, SRC_SPAN_NONE,
                        "cannot write to the compile cache '%s': %s",
                        dirname, strerror(errno));
    char *store;
    char *words[32];
    size_t nw = native_cc_words(words, 32, &store);
    if (rc == 0)
        rc = native_compile(words, nw, dir, tmp_c, tmp_so, log, stop, err);
    free(store);
    /* the object first: a HASH.c without its HASH.so is compiled again */
    if (rc == 0 && (renameat(dir, tmp_so, dir, so) != 0 ||
                    renameat(dir, tmp_c, dir, c) != 0))
        rc = diag_error(err, SRC_SPAN_NONE,
                        "cannot write to the compile cache '%s': %s",
                        dirname, strerror(errno));
    if (log >= 0) {
        close(log);
        unlinkat(dir, tmp_log, 0);
    }
    if (rc != 0) {
        unlinkat(dir, tmp_c, 0);
        unlinkat(dir, tmp_so, 0);
    }
    native_release_signals(old);
    return rc;
}

/* ---- loading ----------------------------------------------------------- */

static void native_release(void *handle)
{
    dlclose(handle);
}

/* dlopen of NAME in the folder DIR (path PATH): through the descriptor of
 * the file checked private (/proc/self/fd), so that what is loaded is
 * what was checked; by PATH where /proc is not there.  NULL when it is
 * not private or does not load. */
static void *native_open(int dir, const char *name, const char *path)
{
    int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    const char *why;
    void *h = NULL;
    if (fstat(fd, &st) == 0 && native_private_stat(&st, S_IFREG, &why)) {
        char via[64];
        snprintf(via, sizeof via, "/proc/self/fd/%d", fd);
        h = dlopen(access(via, R_OK) == 0 ? via : path, RTLD_NOW | RTLD_LOCAL);
    }
    close(fd);
    return h;
}

int native_attach(eom_t *e, const char *version, const nh_stop_t *stop,
                  native_info_t *info, diag_t *err)
{
    double t0 = nh_clock();
    native_info_t local;
    if (!info)
        info = &local;
    memset(info, 0, sizeof *info);
    char cc[4096];
    if (!native_compiler(cc, sizeof cc))
        return 1;
    cgen_options_t opt = {.name = NATIVE_NAME, .params = NULL,
                          .version = version};
    char *gen = cgen_text(e, &opt, err);
    if (!gen)
        return -1;
    /* the cached text: the generated one and how it is built, so that
     * another compiler does not take this one's object */
    strbuf_t key;
    strbuf_init(&key);
    strbuf_add(&key, gen);
    free(gen);
    char *store, *words[32];
    size_t nw = native_cc_words(words, 32, &store);
    strbuf_add(&key, "\n/* built by nh's compile cache:");
    for (size_t i = 0; i < nw; i++)
        strbuf_addf(&key, " %s", words[i]);
    free(store);
    for (size_t i = 0; i < sizeof native_flags / sizeof *native_flags; i++)
        strbuf_addf(&key, " %s", native_flags[i]);
    strbuf_add(&key, " */\n");
    size_t len = key.len;
    char *text = strbuf_take(&key);
    char dirname[4096];
    int dir = native_cache_open(dirname, sizeof dirname, err);
    if (dir < 0) {
        free(text);
        return -1;
    }
    native_sweep(dir);
    char hex[65], c[80], so[80], sopath[NATIVE_PATH];
    sha256_hex(text, len, hex);
    snprintf(c, sizeof c, "%s.c", hex);
    snprintf(so, sizeof so, "%s.so", hex);
    snprintf(sopath, sizeof sopath, "%s/%s", dirname, so);
    const char *why;
    info->cached = native_same_text(dir, c, text, len) &&
                   native_private(dir, so, S_IFREG, &why);
    void *h = NULL;
    int rc = 0;
    if (info->cached && !(h = native_open(dir, so, sopath)))
        info->cached = false; /* damaged: compiled again */
    if (!h) {
        rc = native_build(dir, dirname, text, len, c, so, stop, err);
        if (rc == 0 && !(h = native_open(dir, so, sopath))) {
            const char *msg = dlerror();
            rc = diag_error(err, SRC_SPAN_NONE,
                            "cannot load the compiled equations '%s': %s",
                            sopath, msg ? msg : "unknown error");
        }
    }
    free(text);
    if (rc != 0) {
        /* what does not load is not kept */
        unlinkat(dir, c, 0);
        unlinkat(dir, so, 0);
        close(dir);
        return -1;
    }
    eom_native_fn fn;
    eom_native_rhs_fn rhs;
    eom_native_monitors_fn mon;
    /* POSIX: a function's address from dlsym, through a void * */
    *(void **)&fn = dlsym(h, NATIVE_NAME "_values");
    *(void **)&rhs = dlsym(h, NATIVE_NAME "_rhs_vector");
    *(void **)&mon = dlsym(h, NATIVE_NAME "_monitors_vector");
    if (!fn || !rhs || !mon) {
        dlclose(h);
        unlinkat(dir, c, 0);
        unlinkat(dir, so, 0);
        close(dir);
        return diag_error(err, SRC_SPAN_NONE,
                          "the compiled equations '%s' have no %s_values",
                          sopath, NATIVE_NAME);
    }
    close(dir);
    eom_native_tangent_fn tan, tan_pre;
    *(void **)&tan = dlsym(h, NATIVE_NAME "_tangent_main");
    *(void **)&tan_pre = dlsym(h, NATIVE_NAME "_tangent_pre");
    const int *tan_n = dlsym(h, NATIVE_NAME "_tangent_main_work");
    const int *tan_pre_n = dlsym(h, NATIVE_NAME "_tangent_pre_work");
    eom_set_native(e, fn, rhs, h, native_release);
    eom_set_native_monitors(e, mon);
    if (tan && tan_n)
        eom_set_native_tangents(e, tan, (size_t)*tan_n,
                                tan_pre && tan_pre_n ? tan_pre : NULL,
                                tan_pre && tan_pre_n ? (size_t)*tan_pre_n : 0);
    snprintf(info->path, sizeof info->path, "%s", sopath);
    info->seconds = nh_clock() - t0;
    return 0;
}
