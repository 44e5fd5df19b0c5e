/*
 * native.c — compiled equations of motion: generate, compile, cache,
 * load (native.h).
 *
 * Why the cache checks what it checks: a shared object is code that nh
 * runs in its own process, so nothing may reach dlopen that nh did not
 * compile from the text it generated.  The folder is the user's alone
 * (created 0700; refused when another user owns it or others may write
 * it, since they could then place a HASH.so there), and so is the way to
 * it: every folder above it is root's or the user's, and one that every
 * user may write is sticky (else another user could swap the cache for a
 * folder of their own between a check and a use; issue 31).  The folder
 * is opened once, component by component without following a link, and
 * everything after is relative to that descriptor: the files are opened
 * with openat (no links) and checked on their descriptors, a HASH.so is
 * loaded through its own descriptor (/proc/self/fd), and the compilers
 * run in the folder (fchdir) on relative names.  A cached HASH.so is used
 * only when HASH.c beside it holds the very text just generated
 * (compared byte for byte, not only by hash).  The compilers write into
 * temporary names made exclusively in that folder, renamed when they
 * succeed; a SIGINT, SIGTERM or SIGHUP meanwhile ends them and removes
 * the temporaries before nh takes the signal, and those a killed nh left
 * are removed when NATIVE_STALE_SECONDS old.
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

#include "interp/base/sha256.h"
#include "interp/eom/cgen.h"

extern char **environ;

/* The compiler's flags: ISO C99 (GCC then contracts nothing), the same
 * operations as written (-ffp-contract=off says it to any compiler), a
 * shared object; the optimization level is the text's (native_opt).
 * Not -march=native: on the development machine it gained 2 ns of 35 on
 * the sphere, with AVX-512 instructions that valgrind cannot run, and an
 * object built for one machine could not be loaded on another with a
 * home folder shared between them. */
static const char *const native_flags[] = {
    "-std=c99", "-ffp-contract=off", "-fPIC", "-shared",
};

/* The optimization flags of each text (NULL-terminated).  The equations
 * at -O2: -O1 took GCC a quarter less time on the bicycle's but ran its
 * right-hand side in 11 % more instructions (13.1 k against 11.9 k; the
 * 16-trailer's 3.5 % more).  Without GCC 12's basic-block vectorizer,
 * which -O2 turns on and which paired almost nothing in the tapes'
 * straight-line code (the same instruction counts within 0.5 %) but took
 * a fifth of the 64-trailer's compile and 60 % of its memory (5.4 s
 * against 4.1 s); clang takes the flag too.  The derivatives at -O1: a
 * third less compile time (the bicycle's 0.64 s against 0.93 s, the
 * 64-trailer's 6.2 s against 14.8 s) for 3-4 % more instructions in a
 * call, which linearize's dense algebra after it dwarfs
 * (doc/performance.md). */
static const char *const native_opt[2][3] = {
    {"-O2", "-fno-tree-slp-vectorize", NULL},
    {"-O1", NULL, NULL},
};

/* -mavx2 on a machine that has AVX2, for the derivatives' text, which
 * then takes four directions at once instead of two (tape.c,
 * doc/performance.md).  AVX2 without FMA (-mfma is not implied)
 * computes what SSE2 computes, bit for bit; valgrind runs it; and the
 * flag is among the text's optimization flags, so part of the cached
 * text's key: a machine without AVX2 never takes such an object from a
 * home folder shared with one that has it.  A compiler that refuses the
 * flag compiles the derivatives without it (native_attach_what). */
static const char *native_isa_flag(void)
{
#if defined(__GNUC__) && defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        return "-mavx2";
#endif
    return NULL;
}

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
    size_t at = 0; /* PATH[0..at) is the folder FD */
    for (;;) {
        struct stat st;
        snprintf(bad, size, "%.*s", (int)(at ? at : 1), at ? path : "/");
        if (fstat(fd, &st) != 0) {
            *why = strerror(errno);
            break;
        }
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
    int e = errno;
    buf[w - 3] = '/';
    if (!real)
        return diag_error(err, SRC_SPAN_NONE,
                          "cannot create the compile cache '%s': %s", buf,
                          strerror(e));
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
    e = errno;
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

/* Temporaries left by an nh that died while it compiled (killed
 * outright, or the machine stopped) are removed when they are older than
 * this (doc/limits.md): a younger one may be another nh's compile in
 * progress, and a compile takes seconds (the 64-trailer's derivatives
 * 6 s at -O1), never ten minutes. */
#define NATIVE_STALE_SECONDS 600

/* Removes the cache DIR's stale temporaries: tmp-*, the user's own
 * regular files last changed more than NATIVE_STALE_SECONDS ago. */
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

/* A new file "tmp-XXXXXXXX" + SUFFIX in the folder DIR, made exclusively
 * (O_EXCL: not through a link, not one that exists): its descriptor, its
 * name into NAME.  With FRESH the stem is drawn anew (into STEM) until
 * the name is free; without, STEM is taken as given.  -1 on failure. */
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
            for (int i = 0; i < 8; i++) { /* Knuth's MMIX LCG */
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

/* The first message of the compiler's output, read from the file LOG:
 * the first line that says "error", else the first line.  The compiler
 * ran in the cache folder on relative names, so the message names the
 * temporary file without a folder. */
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

/* dlopen of NAME in the cache folder DIR (PATH is its path): the file
 * is checked private on its own descriptor, and loaded by the name
 * /proc/self/fd/DIR/NAME, reached from the folder's descriptor, not from
 * PATH (whose folders could have changed since they were checked); by
 * PATH where /proc is not mounted.  Not /proc/self/fd/N of the file's
 * own descriptor: glibc takes an object already loaded under the same
 * name without opening the file, and N is reused as soon as the
 * descriptor is closed, so the derivatives' file was given the
 * equations' object (and any later object an earlier one); a name that
 * ends in HASH.so names the same text wherever it is.  NULL when it is
 * not private or does not load (*MSG then says why, or is NULL). */
static void *native_open(int dir, const char *name, const char *path,
                         const char **msg)
{
    *msg = NULL;
    int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    const char *why = NULL;
    void *h = NULL;
    if (fstat(fd, &st) != 0) {
        *msg = strerror(errno);
    } else if (!native_private_stat(&st, S_IFREG, &why)) {
        *msg = why;
    } else {
        char via[128];
        snprintf(via, sizeof via, "/proc/self/fd/%d", dir);
        bool proc = access(via, X_OK) == 0;
        size_t l = strlen(via);
        snprintf(via + l, sizeof via - l, "/%s", name);
        h = dlopen(proc ? via : path, RTLD_NOW | RTLD_LOCAL);
        l = strlen(via);
        if (!h && (*msg = dlerror()) && proc && strncmp(*msg, via, l) == 0 &&
            (*msg)[l] == ':' && (*msg)[l + 1] == ' ')
            *msg += l + 2; /* "via: file too short": the name is ours */
    }
    close(fd);
    return h;
}

/* ---- signals while compiling ----------------------------------------------- */

/* SIGINT, SIGTERM and SIGHUP while the compilers run (issue 31: a
 * SIGTERM left tmp-*.c, .log and .so in the cache for good and cc
 * running).  Those whose disposition is the default, which would end nh
 * at once, are caught: the compilers are killed, the temporaries
 * removed, and then the signal is raised again with the default back, so
 * nh ends by it as it would have.  A handler of nh's own is left as it
 * is (the REPL's and the notebook's Ctrl-C raise the session's stop,
 * which the wait looks at: the statement fails with "interrupted (while
 * compiling)" and the session goes on), and so is an ignored signal
 * (nohup's SIGHUP must not stop a compile).  A signal handler can only
 * set a flag: the one state of this file that is global. */
static volatile sig_atomic_t native_signal;
static const int native_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define NATIVE_NSIGNALS 3

/* The dispositions native_catch replaced. */
typedef struct native_caught {
    struct sigaction old[NATIVE_NSIGNALS];
    bool caught[NATIVE_NSIGNALS];
} native_caught_t;

static void native_on_signal(int sig)
{
    native_signal = sig;
}

static void native_catch(native_caught_t *c)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = native_on_signal;
    sigemptyset(&sa.sa_mask);
    native_signal = 0;
    for (int i = 0; i < NATIVE_NSIGNALS; i++) {
        c->caught[i] = sigaction(native_signals[i], NULL, &c->old[i]) == 0 &&
                       !(c->old[i].sa_flags & SA_SIGINFO) &&
                       c->old[i].sa_handler == SIG_DFL;
        if (c->caught[i])
            sigaction(native_signals[i], &sa, NULL);
    }
}

/* Puts the dispositions back and delivers a signal that came meanwhile
 * (which ends nh). */
static void native_release_signals(const native_caught_t *c)
{
    for (int i = 0; i < NATIVE_NSIGNALS; i++)
        if (c->caught[i])
            sigaction(native_signals[i], &c->old[i], NULL);
    int sig = native_signal;
    native_signal = 0;
    if (sig)
        raise(sig);
}

/* ---- compiling --------------------------------------------------------------- */

/* A text on its way to being loaded: the cached text, its files in the
 * cache, and the compiler's process while it compiles under temporary
 * names beside them.  Names are relative to the cache folder. */
typedef struct native_job {
    char *text;   /* the generated text and the build comment */
    size_t len;
    const char *const *opt; /* its optimization flags */
    char c[72], so[72];     /* HASH.c, HASH.so */
    char path[NATIVE_PATH]; /* HASH.so's path, for messages */
    char tmp_c[48], tmp_so[48], tmp_log[48];
    int log;      /* the compiler's output, once started; -1 if none */
    pid_t pid;    /* the compiler, while it runs; 0 when it is not */
    int status;   /* its wait status, once it ended */
    bool started; /* the temporary files exist */
    bool cached;
    void *h;      /* the loaded object */
} native_job_t;

/* Makes JOB's cached text of GEN (freed here) with the optimization
 * flags OPT (NULL-terminated), and loads its object from the cache folder
 * DIR (its path DIRNAME) when that holds it. */
static void native_job_prepare(native_job_t *job, char *gen,
                               const char *const *opt, int dir,
                               const char *dirname)
{
    memset(job, 0, sizeof *job);
    job->opt = opt;
    job->log = -1;
    /* the cached text: the generated one and how it is built, so that
     * another compiler or level does not take this one's object */
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
    strbuf_addf(&key, " %s", native_flags[0]);
    for (size_t i = 0; opt[i]; i++)
        strbuf_addf(&key, " %s", opt[i]);
    for (size_t i = 1; i < sizeof native_flags / sizeof *native_flags; i++)
        strbuf_addf(&key, " %s", native_flags[i]);
    strbuf_add(&key, " */\n");
    job->len = key.len;
    job->text = strbuf_take(&key);
    char hex[65];
    sha256_hex(job->text, job->len, hex);
    snprintf(job->c, sizeof job->c, "%s.c", hex);
    snprintf(job->so, sizeof job->so, "%s.so", hex);
    snprintf(job->path, sizeof job->path, "%s/%s", dirname, job->so);
    const char *why;
    job->cached = native_same_text(dir, job->c, job->text, job->len) &&
                  native_private(dir, job->so, S_IFREG, &why);
    if (job->cached && !(job->h = native_open(dir, job->so, job->path, &why)))
        job->cached = false; /* damaged: compiled again */
}

/* Writes JOB's text under temporary names in the cache folder DIR (its
 * path DIRNAME) and starts the compiler on it there. */
static int native_job_start(native_job_t *job, int dir, const char *dirname,
                            diag_t *err)
{
    char stem[32];
    int fd = native_temp(dir, stem, sizeof stem, ".c", true, job->tmp_c,
                         sizeof job->tmp_c);
    if (fd < 0)
        return diag_error(err, SRC_SPAN_NONE,
                          "cannot write to the compile cache '%s': %s",
                          dirname, strerror(errno));
    job->started = true;
    snprintf(job->tmp_so, sizeof job->tmp_so, "%s.so", stem);
    job->log = native_temp(dir, stem, sizeof stem, ".log", false,
                           job->tmp_log, sizeof job->tmp_log);
    int e = errno;
    if (job->log < 0) {
        close(fd);
        return diag_error(err, SRC_SPAN_NONE,
                          "cannot write to the compile cache '%s': %s",
                          dirname, strerror(e));
    }
    if (native_write(fd, job->text, job->len) != 0)
        return diag_error(err, SRC_SPAN_NONE,
                          "cannot write to the compile cache '%s': %s",
                          dirname, strerror(errno));
    char *store, *cc[32];
    size_t ncc = native_cc_words(cc, 32, &store);
    size_t nflags = sizeof native_flags / sizeof *native_flags;
    const char **argv = xcalloc(ncc + nflags + 8, sizeof *argv);
    size_t k = 0;
    for (size_t i = 0; i < ncc; i++)
        argv[k++] = cc[i];
    argv[k++] = native_flags[0];
    for (size_t i = 0; job->opt[i]; i++) /* at most 2 */
        argv[k++] = job->opt[i];
    for (size_t i = 1; i < nflags; i++)
        argv[k++] = native_flags[i];
    argv[k++] = "-o";
    argv[k++] = job->tmp_so;
    argv[k++] = job->tmp_c;
    argv[k++] = "-lm";
    argv[k] = NULL;
    /* The program native_compiler found, run in the cache folder: a
     * relative path (CC=./cc, "." on the PATH) is made absolute first,
     * as it names a file from nh's folder. */
    char prog[4096], cwd[4096];
    bool found = native_find(cc[0], prog, sizeof prog);
    if (found && prog[0] != '/' && getcwd(cwd, sizeof cwd)) {
        size_t l = strlen(cwd);
        if (l + 1 + strlen(prog) < sizeof cwd) {
            snprintf(cwd + l, sizeof cwd - l, "/%s", prog);
            snprintf(prog, sizeof prog, "%s", cwd);
        }
    }
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0)
        nh_out_of_memory();
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, job->log, 1);
    posix_spawn_file_actions_adddup2(&fa, job->log, 2);
    posix_spawn_file_actions_addfchdir_np(&fa, dir);
    int rc = found ? posix_spawn(&job->pid, prog, &fa, NULL,
                                 (char *const *)argv, environ)
                   : posix_spawnp(&job->pid, cc[0], &fa, NULL,
                                  (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    free(argv);
    if (rc != 0) {
        job->pid = 0;
        diag_error(err, SRC_SPAN_NONE, "cannot run the C compiler '%s': %s",
                   cc[0], strerror(rc));
    }
    free(store);
    return rc ? -1 : 0;
}

/* Kills the compilers of the N jobs that still run. */
static void native_jobs_kill(native_job_t *jobs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (jobs[i].pid > 0) {
            kill(jobs[i].pid, SIGKILL);
            while (waitpid(jobs[i].pid, &jobs[i].status, 0) < 0 &&
                   errno == EINTR)
                ;
            jobs[i].pid = 0;
        }
}

/* Waits for the compilers of the N jobs, side by side (two texts are
 * compiled on two cores at once); when STOP is due or a signal came
 * (native_catch), they are killed and the call fails. */
static int native_jobs_wait(native_job_t *jobs, size_t n,
                            const nh_stop_t *stop, diag_t *err)
{
    for (;;) {
        size_t running = 0;
        for (size_t i = 0; i < n; i++) {
            if (jobs[i].pid <= 0)
                continue;
            pid_t w = waitpid(jobs[i].pid, &jobs[i].status, WNOHANG);
            if (w == jobs[i].pid)
                jobs[i].pid = 0;
            else if (w < 0 && errno != EINTR) {
                int e = errno;
                jobs[i].pid = 0;
                native_jobs_kill(jobs, n);
                return diag_error(err, SRC_SPAN_NONE,
                                  "lost the C compiler's process: %s",
                                  strerror(e));
            } else
                running++;
        }
        if (running == 0) {
            /* Ctrl-C at a terminal reaches the compilers too: one that
             * it ended is stopped, not failed (and tried again) */
            bool killed = false;
            for (size_t i = 0; i < n; i++)
                killed |= jobs[i].started && WIFSIGNALED(jobs[i].status);
            if (!killed || !(native_signal || nh_stop_due(stop)))
                return 0;
        }
        if (native_signal || nh_stop_due(stop)) {
            native_jobs_kill(jobs, n);
            /* a caught signal ends nh once the temporaries are gone
             * (native_release_signals) */
            return diag_error(err, SRC_SPAN_NONE, "%s (while compiling)",
                              native_signal ? "interrupted"
                                            : nh_stop_reason(stop));
        }
        struct timespec nap = {0, 2000000}; /* 2 ms */
        nanosleep(&nap, NULL);
    }
}

/* A job whose compiler ended: its object renamed into the cache folder
 * DIR (its path DIRNAME) and loaded, or the compiler's first message as
 * the error. */
static int native_job_finish(native_job_t *job, int dir, const char *dirname,
                             diag_t *err)
{
    int status = job->status;
    char *store, *cc[1];
    native_cc_words(cc, 1, &store);
    int rc = 0;
    struct stat st;
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        char msg[600];
        native_first_message(job->log, msg, sizeof msg);
        if (!msg[0]) {
            if (WIFSIGNALED(status))
                snprintf(msg, sizeof msg, "killed by signal %d",
                         WTERMSIG(status));
            else
                snprintf(msg, sizeof msg, "exit status %d",
                         WEXITSTATUS(status));
        }
        rc = diag_error(err, SRC_SPAN_NONE,
                        "the C compiler '%s' failed on the generated code: "
                        "%s",
                        cc[0], msg);
    } else if (fstatat(dir, job->tmp_so, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
               !S_ISREG(st.st_mode) || st.st_size == 0) {
        /* a compiler that says it succeeded must have written the object
         * (CC=true and cc -fsyntax-only write nothing: issue 31, reported
         * as "cannot write to the compile cache") */
        rc = diag_error(err, SRC_SPAN_NONE,
                        "the C compiler '%s' succeeded but wrote no shared "
                        "object (is it a C compiler that links with "
                        "-shared?)",
                        cc[0]);
    }
    free(store);
    if (rc != 0)
        return rc;
    /* the object first: a HASH.c without its HASH.so is compiled again */
    if (renameat(dir, job->tmp_so, dir, job->so) != 0 ||
        renameat(dir, job->tmp_c, dir, job->c) != 0)
        return diag_error(err, SRC_SPAN_NONE,
                          "cannot write to the compile cache '%s': %s",
                          dirname, strerror(errno));
    const char *msg;
    if (!(job->h = native_open(dir, job->so, job->path, &msg)))
        return diag_error(err, SRC_SPAN_NONE,
                          "cannot load the compiled equations '%s': %s",
                          job->path, msg ? msg : "unknown error");
    return 0;
}

/* Removes what JOB leaves behind in the cache folder DIR: its temporary
 * files, and when it failed (FAILED) its files in the cache, since what
 * does not load is not kept. */
static void native_job_clean(native_job_t *job, int dir, bool failed)
{
    if (job->started) {
        if (job->log >= 0)
            close(job->log);
        job->log = -1;
        unlinkat(dir, job->tmp_log, 0);
        unlinkat(dir, job->tmp_c, 0);
        unlinkat(dir, job->tmp_so, 0);
    }
    if (failed) {
        if (job->h)
            dlclose(job->h);
        job->h = NULL;
        unlinkat(dir, job->c, 0);
        unlinkat(dir, job->so, 0);
    }
    free(job->text);
    job->text = NULL;
}

/* Loads the N texts GEN (freed here; NULL entries are skipped) with the
 * flags OPT[i] from the cache folder DIR (its path DIRNAME), compiling
 * those it does not hold side by side: JOBS[i].h and .cached.  Returns
 * 0, or -1 with *err set by the first text (in their order) that failed;
 * the others are loaded all the same. */
static int native_load(char **gen, const char *const (*opt)[3], size_t n,
                       native_job_t *jobs, int dir, const char *dirname,
                       const nh_stop_t *stop, diag_t *err)
{
    native_sweep(dir);
    diag_t *why = xcalloc(n, sizeof *why);
    bool *failed = xcalloc(n, sizeof *failed);
    for (size_t i = 0; i < n; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].log = -1;
        if (gen[i])
            native_job_prepare(&jobs[i], gen[i], opt[i], dir, dirname);
    }
    /* from the first temporary file to the last removed */
    native_caught_t caught;
    native_catch(&caught);
    for (size_t i = 0; i < n; i++)
        if (jobs[i].text && !jobs[i].h)
            failed[i] = native_job_start(&jobs[i], dir, dirname, &why[i]) != 0;
    diag_t stopped = {0};
    bool all = native_jobs_wait(jobs, n, stop, &stopped) != 0;
    for (size_t i = 0; i < n; i++) {
        if (!jobs[i].started || failed[i])
            continue;
        if (all) {
            failed[i] = true;
            why[i] = stopped;
        } else {
            failed[i] = native_job_finish(&jobs[i], dir, dirname, &why[i]) !=
                        0;
        }
    }
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        native_job_clean(&jobs[i], dir, failed[i]);
        if (failed[i] && rc == 0) {
            *err = why[i];
            rc = -1;
        }
    }
    native_release_signals(&caught);
    free(why);
    free(failed);
    return rc;
}

/* ---- loading ----------------------------------------------------------- */

static void native_release(void *handle)
{
    dlclose(handle);
}

/* The equations of H attached to E; false when H lacks them. */
static bool native_set_equations(eom_t *e, void *h)
{
    eom_native_fn fn;
    eom_native_rhs_fn rhs;
    eom_native_monitors_fn mon;
    /* POSIX: a function's address from dlsym, through a void * */
    *(void **)&fn = dlsym(h, NATIVE_NAME "_values");
    *(void **)&rhs = dlsym(h, NATIVE_NAME "_rhs_vector");
    *(void **)&mon = dlsym(h, NATIVE_NAME "_monitors_vector");
    if (!fn || !rhs || !mon)
        return false;
    eom_set_native(e, fn, rhs, h, native_release);
    eom_set_native_monitors(e, mon);
    return true;
}

/* The derivatives of H attached to E; false when H lacks them. */
static bool native_set_tangents(eom_t *e, void *h)
{
    eom_native_tangent_fn tan, tan_pre;
    *(void **)&tan = dlsym(h, NATIVE_NAME "_tangent_main");
    *(void **)&tan_pre = dlsym(h, NATIVE_NAME "_tangent_pre");
    const int *tan_n = dlsym(h, NATIVE_NAME "_tangent_main_work");
    const int *tan_pre_n = dlsym(h, NATIVE_NAME "_tangent_pre_work");
    if (!tan || !tan_n || (tan_pre != NULL) != (tan_pre_n != NULL))
        return false;
    eom_set_native_tangents(e, tan, (size_t)*tan_n, tan_pre,
                            tan_pre ? (size_t)*tan_pre_n : 0, h,
                            native_release);
    /* the constraints' Jacobians (a model with constraints) */
    eom_native_values_fn jac;
    eom_native_tangent_fn ceff;
    *(void **)&jac = dlsym(h, NATIVE_NAME "_constraint_jacobians");
    *(void **)&ceff = dlsym(h, NATIVE_NAME "_constraint_tangent");
    const int *ceff_n = dlsym(h, NATIVE_NAME "_constraint_tangent_work");
    eom_set_native_constraints(e, ceff_n ? jac : NULL, ceff_n ? ceff : NULL,
                               ceff_n ? (size_t)*ceff_n : 0);
    return true;
}

/* native_attach and native_attach_tangents: the equations with
 * EQUATIONS, the derivatives with TANGENTS, compiled side by side. */
static int native_attach_what(eom_t *e, const char *version, bool equations,
                              bool tangents, const nh_stop_t *stop,
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
    char *gen[2] = {NULL, NULL};
    if (equations && !(gen[0] = cgen_text(e, &opt, err)))
        return -1;
    if (tangents && !(gen[1] = cgen_tangent_text(e, &opt, err))) {
        free(gen[0]);
        return -1;
    }
    char dirname[4096];
    int dir = native_cache_open(dirname, sizeof dirname, err);
    if (dir < 0) {
        free(gen[0]);
        free(gen[1]);
        return -1;
    }
    const char *opts[2][3];
    memcpy(opts, native_opt, sizeof opts);
    const char *isa = tangents ? native_isa_flag() : NULL;
    opts[1][1] = isa;
    native_job_t *jobs = xcalloc(4, sizeof *jobs); /* 18 KiB of paths */
    int rc = native_load(gen, (const char *const(*)[3])opts, 2, jobs, dir,
                         dirname, stop, err);
    if (rc != 0 && isa && !jobs[1].h && (!equations || jobs[0].h) &&
        !nh_stop_due(stop)) {
        /* a compiler that refuses -mavx2: the derivatives without it */
        char *again[2] = {NULL, cgen_tangent_text(e, &opt, err)};
        opts[1][1] = NULL;
        if (again[1]) {
            diag_clear(err);
            rc = native_load(again, (const char *const(*)[3])opts, 2,
                             jobs + 2, dir, dirname, stop, err);
            jobs[1] = jobs[3];
        }
    }
    static const char *const lacks[2] = {NATIVE_NAME "_values",
                                         NATIVE_NAME "_tangent_main"};
    for (int i = 0; i < 2; i++) {
        if (!jobs[i].h)
            continue;
        /* derivatives without their equations are not attached (they
         * stay cached: the next compile finds them) */
        bool ok = i == 0 ? native_set_equations(e, jobs[i].h)
                         : eom_has_native(e) &&
                               native_set_tangents(e, jobs[i].h);
        if (!ok && i == 1 && !eom_has_native(e)) {
            dlclose(jobs[i].h);
            continue;
        }
        if (!ok) {
            dlclose(jobs[i].h);
            unlinkat(dir, jobs[i].c, 0);
            unlinkat(dir, jobs[i].so, 0);
            if (rc == 0)
                rc = diag_error(err, SRC_SPAN_NONE,
                                "the compiled equations '%s' have no %s",
                                jobs[i].path, lacks[i]);
            continue;
        }
        bool *cached = i == 0 ? &info->cached : &info->tangents_cached;
        char *path = i == 0 ? info->path : info->tangents_path;
        *cached = jobs[i].cached;
        snprintf(path, NATIVE_PATH, "%s", jobs[i].path);
    }
    free(jobs);
    close(dir);
    info->seconds = nh_clock() - t0;
    return rc;
}

int native_attach(eom_t *e, const char *version, const nh_stop_t *stop,
                  native_info_t *info, diag_t *err)
{
    return native_attach_what(e, version, true, false, stop, info, err);
}

int native_attach_tangents(eom_t *e, const char *version,
                           const nh_stop_t *stop, native_info_t *info,
                           diag_t *err)
{
    return native_attach_what(e, version, !eom_has_native(e), true, stop,
                              info, err);
}
