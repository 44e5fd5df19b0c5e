/*
 * native.c — compiled equations of motion: generate, compile, cache,
 * load (native.h).
 *
 * Why the cache checks what it checks: a shared object is code that nh
 * runs in its own process, so nothing may reach dlopen that nh did not
 * compile from the text it generated.  The folder is the user's alone
 * (created 0700; refused when another user owns it or others may write
 * it, since they could then place a HASH.so there), a cached HASH.so is
 * used only when HASH.c beside it holds the very text just generated
 * (compared byte for byte, not only by hash), and files are opened
 * without following symbolic links.  The compiler writes into temporary
 * names made by mkstemps in that folder, renamed when it succeeds.
 *
 * Must not: print; run a shell; leave temporary files behind.
 */
#include "interp/run/native.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
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

/* Whether the file or folder at PATH (not followed when a link) is the
 * user's own, of type S_IFMT bits TYPE, and writable by no one else;
 * else *WHY says what is wrong. */
static bool native_private(const char *path, mode_t type, const char **why)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        *why = strerror(errno);
        return false;
    }
    if ((st.st_mode & S_IFMT) != type) {
        *why = type == S_IFDIR ? "it is not a folder" : "it is not a file";
        return false;
    }
    if (st.st_uid != geteuid()) {
        *why = "it belongs to another user";
        return false;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        *why = "others may write to it";
        return false;
    }
    return true;
}

int native_cache_dir(char *buf, size_t size, diag_t *err)
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
    const char *why;
    if (!native_private(buf, S_IFDIR, &why))
        return diag_error(err, SRC_SPAN_NONE,
                          "the compile cache '%s' is refused: %s (it must "
                          "be a folder of your own that only you may "
                          "write)",
                          buf, why);
    return 0;
}

/* ---- the cache's files ------------------------------------------------------ */

/* Whether the file at PATH is private (native_private) and holds exactly
 * TEXT[0..len). */
static bool native_same_text(const char *path, const char *text, size_t len)
{
    const char *why;
    if (!native_private(path, S_IFREG, &why))
        return false;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat st;
    bool same = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
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

/* The first message of the compiler's output in LOG: the first line
 * that says "error", else the first line, without the folder of the
 * temporary file. */
static void native_first_message(const char *log, const char *dir,
                                 char *msg, size_t size)
{
    msg[0] = '\0';
    FILE *f = fopen(log, "r");
    if (!f)
        return;
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
    const char *m = first;
    size_t dl = strlen(dir);
    if (strncmp(m, dir, dl) == 0 && m[dl] == '/')
        m += dl + 1;
    snprintf(msg, size, "%s", m);
}

/* ---- compiling --------------------------------------------------------------- */

/* A text on its way to being loaded: the cached text, its files in the
 * cache, and the compiler's process while it compiles under temporary
 * names beside them. */
typedef struct native_job {
    char *text;   /* the generated text and the build comment */
    size_t len;
    const char *const *opt; /* its optimization flags */
    char c[NATIVE_PATH], so[NATIVE_PATH]; /* HASH.c, HASH.so */
    char tmp_c[NATIVE_PATH], tmp_so[NATIVE_PATH], tmp_log[NATIVE_PATH];
    pid_t pid;    /* the compiler, while it runs; 0 when it is not */
    int status;   /* its wait status, once it ended */
    bool started; /* the temporary files exist */
    bool cached;
    void *h;      /* the loaded object */
} native_job_t;

/* Makes JOB's cached text of GEN (freed here) with the optimization
 * flags OPT (NULL-terminated), and loads its object from the cache folder
 * DIR when that holds it. */
static void native_job_prepare(native_job_t *job, char *gen,
                               const char *const *opt, const char *dir)
{
    memset(job, 0, sizeof *job);
    job->opt = opt;
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
    snprintf(job->c, sizeof job->c, "%s/%s.c", dir, hex);
    snprintf(job->so, sizeof job->so, "%s/%s.so", dir, hex);
    const char *why;
    job->cached = native_same_text(job->c, job->text, job->len) &&
                  native_private(job->so, S_IFREG, &why);
    if (job->cached && !(job->h = dlopen(job->so, RTLD_NOW | RTLD_LOCAL)))
        job->cached = false; /* damaged: compiled again */
}

/* Writes JOB's text under temporary names in DIR and starts the
 * compiler on it. */
static int native_job_start(native_job_t *job, const char *dir, diag_t *err)
{
    snprintf(job->tmp_c, sizeof job->tmp_c, "%s/tmp-XXXXXX.c", dir);
    int fd = mkstemps(job->tmp_c, 2);
    if (fd < 0)
        return diag_error(err, SRC_SPAN_NONE,
                          "cannot write to the compile cache '%s': %s", dir,
                          strerror(errno));
    job->started = true;
    size_t stem = strlen(job->tmp_c) - 2;
    snprintf(job->tmp_so, sizeof job->tmp_so, "%.*s.so", (int)stem,
             job->tmp_c);
    snprintf(job->tmp_log, sizeof job->tmp_log, "%.*s.log", (int)stem,
             job->tmp_c);
    if (native_write(fd, job->text, job->len) != 0)
        return diag_error(err, SRC_SPAN_NONE,
                          "cannot write to the compile cache '%s': %s", dir,
                          strerror(errno));
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
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0)
        abort();
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, job->tmp_log,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    int rc = posix_spawnp(&job->pid, cc[0], &fa, NULL, (char *const *)argv,
                          environ);
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
 * compiled on two cores at once); when STOP is due, they are killed and
 * the call fails. */
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
        if (running == 0)
            return 0;
        if (nh_stop_due(stop)) {
            native_jobs_kill(jobs, n);
            return diag_error(err, SRC_SPAN_NONE, "%s (while compiling)",
                              nh_stop_reason(stop));
        }
        struct timespec nap = {0, 2000000}; /* 2 ms */
        nanosleep(&nap, NULL);
    }
}

/* A job whose compiler ended: its object renamed into the cache and
 * loaded, or the compiler's first message as the error. */
static int native_job_finish(native_job_t *job, const char *dir, diag_t *err)
{
    int status = job->status;
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        char msg[600], *store, *cc[1];
        native_first_message(job->tmp_log, dir, msg, sizeof msg);
        if (!msg[0]) {
            if (WIFSIGNALED(status))
                snprintf(msg, sizeof msg, "killed by signal %d",
                         WTERMSIG(status));
            else
                snprintf(msg, sizeof msg, "exit status %d",
                         WEXITSTATUS(status));
        }
        native_cc_words(cc, 1, &store);
        diag_error(err, SRC_SPAN_NONE,
                   "the C compiler '%s' failed on the generated code: %s",
                   cc[0], msg);
        free(store);
        return -1;
    }
    /* the object first: a HASH.c without its HASH.so is compiled again */
    if (rename(job->tmp_so, job->so) != 0 || rename(job->tmp_c, job->c) != 0)
        return diag_error(err, SRC_SPAN_NONE,
                          "cannot write to the compile cache '%s': %s", dir,
                          strerror(errno));
    if (!(job->h = dlopen(job->so, RTLD_NOW | RTLD_LOCAL))) {
        const char *msg = dlerror();
        return diag_error(err, SRC_SPAN_NONE,
                          "cannot load the compiled equations '%s': %s",
                          job->so, msg ? msg : "unknown error");
    }
    return 0;
}

/* Removes what JOB leaves behind: its temporary files, and when it
 * failed (FAILED) its files in the cache, since what does not load is
 * not kept. */
static void native_job_clean(native_job_t *job, bool failed)
{
    if (job->started) {
        unlink(job->tmp_log);
        unlink(job->tmp_c);
        unlink(job->tmp_so);
    }
    if (failed) {
        if (job->h)
            dlclose(job->h);
        job->h = NULL;
        unlink(job->c);
        unlink(job->so);
    }
    free(job->text);
    job->text = NULL;
}

/* Loads the N texts GEN (freed here; NULL entries are skipped) with the
 * flags OPT[i], compiling those the cache does not hold side by side:
 * JOBS[i].h and .cached.  Returns 0, or -1 with *err set by the first text (in
 * their order) that failed; the others are loaded all the same. */
static int native_load(char **gen, const char *const (*opt)[3], size_t n,
                       native_job_t *jobs, const nh_stop_t *stop, diag_t *err)
{
    char dir[4096];
    if (native_cache_dir(dir, sizeof dir, err) != 0) {
        for (size_t i = 0; i < n; i++)
            free(gen[i]);
        return -1;
    }
    diag_t *why = xcalloc(n, sizeof *why);
    bool *failed = xcalloc(n, sizeof *failed);
    for (size_t i = 0; i < n; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        if (gen[i])
            native_job_prepare(&jobs[i], gen[i], opt[i], dir);
    }
    for (size_t i = 0; i < n; i++)
        if (jobs[i].text && !jobs[i].h)
            failed[i] = native_job_start(&jobs[i], dir, &why[i]) != 0;
    diag_t stopped = {0};
    bool all = native_jobs_wait(jobs, n, stop, &stopped) != 0;
    for (size_t i = 0; i < n; i++) {
        if (!jobs[i].started || failed[i])
            continue;
        if (all) {
            failed[i] = true;
            why[i] = stopped;
        } else {
            failed[i] = native_job_finish(&jobs[i], dir, &why[i]) != 0;
        }
    }
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        native_job_clean(&jobs[i], failed[i]);
        if (failed[i] && rc == 0) {
            *err = why[i];
            rc = -1;
        }
    }
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
    const char *opts[2][3];
    memcpy(opts, native_opt, sizeof opts);
    const char *isa = tangents ? native_isa_flag() : NULL;
    opts[1][1] = isa;
    native_job_t *jobs = xcalloc(4, sizeof *jobs); /* 87 KiB of paths */
    int rc = native_load(gen, (const char *const(*)[3])opts, 2, jobs, stop,
                         err);
    if (rc != 0 && isa && !jobs[1].h && (!equations || jobs[0].h) &&
        !nh_stop_due(stop)) {
        /* a compiler that refuses -mavx2: the derivatives without it */
        char *again[2] = {NULL, cgen_tangent_text(e, &opt, err)};
        opts[1][1] = NULL;
        if (again[1]) {
            diag_clear(err);
            rc = native_load(again, (const char *const(*)[3])opts, 2,
                             jobs + 2, stop, err);
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
            unlink(jobs[i].c);
            unlink(jobs[i].so);
            if (rc == 0)
                rc = diag_error(err, SRC_SPAN_NONE,
                                "the compiled equations '%s' have no %s",
                                jobs[i].so, lacks[i]);
            continue;
        }
        bool *cached = i == 0 ? &info->cached : &info->tangents_cached;
        char *path = i == 0 ? info->path : info->tangents_path;
        *cached = jobs[i].cached;
        snprintf(path, NATIVE_PATH, "%s", jobs[i].so);
    }
    free(jobs);
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
