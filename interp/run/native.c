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
 * shared object.  Not -march=native: on the development machine it
 * gained 2 ns of 35 on the sphere, with AVX-512 instructions that
 * valgrind cannot run, and an object built for one machine could not be
 * loaded on another with a home folder shared between them. */
static const char *const native_flags[] = {
    "-std=c99", "-O2", "-ffp-contract=off", "-fPIC", "-shared",
};

/* -mavx2 on a machine that has AVX2, for the derivatives' C text, which
 * then takes four directions at once instead of two (tape.c): the
 * bicycle's tangent in 6 directions took 3.0 µs against 4.3.  AVX2
 * without FMA (-mfma is not implied) computes what SSE2 computes, bit
 * for bit; valgrind runs it; and the flag is part of the cached text's
 * key, so a machine without AVX2 never takes such an object from a
 * shared home folder.  A compiler that refuses the flag compiles
 * without it (native_build). */
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

/* Compiles the C file SRC into SO with the compiler's words CC and the
 * flag ISA (may be NULL); output into LOG. */
static int native_compile(char **cc, size_t ncc, const char *isa,
                          const char *src, const char *so, const char *log,
                          const char *dir, const nh_stop_t *stop,
                          diag_t *err)
{
    size_t nflags = sizeof native_flags / sizeof *native_flags;
    const char **argv = xcalloc(ncc + nflags + 7, sizeof *argv);
    size_t k = 0;
    for (size_t i = 0; i < ncc; i++)
        argv[k++] = cc[i];
    for (size_t i = 0; i < nflags; i++)
        argv[k++] = native_flags[i];
    if (isa)
        argv[k++] = isa;
    argv[k++] = "-o";
    argv[k++] = so;
    argv[k++] = src;
    argv[k++] = "-lm";
    argv[k] = NULL;
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0)
        abort();
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, cc[0], &fa, NULL, (char *const *)argv,
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
        if (nh_stop_due(stop)) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
            return diag_error(err, SRC_SPAN_NONE, "%s (while compiling)",
                              nh_stop_reason(stop));
        }
        struct timespec nap = {0, 2000000}; /* 2 ms */
        nanosleep(&nap, NULL);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    char msg[600];
    native_first_message(log, dir, msg, sizeof msg);
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

/* Writes TEXT under temporary names in DIR, compiles it, and renames
 * the source and the object to C and SO. */
static int native_build(const char *dir, const char *text, size_t len,
                        const char *c, const char *so,
                        const nh_stop_t *stop, diag_t *err)
{
    char tmp_c[NATIVE_PATH], tmp_so[NATIVE_PATH], tmp_log[NATIVE_PATH];
    snprintf(tmp_c, sizeof tmp_c, "%s/tmp-XXXXXX.c", dir);
    int fd = mkstemps(tmp_c, 2);
    if (fd < 0)
        return diag_error(err, SRC_SPAN_NONE,
                          "cannot write to the compile cache '%s': %s", dir,
                          strerror(errno));
    size_t stem = strlen(tmp_c) - 2;
    snprintf(tmp_so, sizeof tmp_so, "%.*s.so", (int)stem, tmp_c);
    snprintf(tmp_log, sizeof tmp_log, "%.*s.log", (int)stem, tmp_c);
    int rc = 0;
    if (native_write(fd, text, len) != 0)
        rc = diag_error(err, SRC_SPAN_NONE,
                        "cannot write to the compile cache '%s': %s", dir,
                        strerror(errno));
    char *store;
    char *words[32];
    size_t nw = native_cc_words(words, 32, &store);
    const char *isa = native_isa_flag();
    if (rc == 0) {
        rc = native_compile(words, nw, isa, tmp_c, tmp_so, tmp_log, dir,
                            stop, err);
        if (rc != 0 && isa && !nh_stop_due(stop)) {
            /* a compiler without -mavx2: the portable object */
            diag_clear(err);
            rc = native_compile(words, nw, NULL, tmp_c, tmp_so, tmp_log,
                                dir, stop, err);
        }
    }
    free(store);
    /* the object first: a HASH.c without its HASH.so is compiled again */
    if (rc == 0 && (rename(tmp_so, so) != 0 || rename(tmp_c, c) != 0))
        rc = diag_error(err, SRC_SPAN_NONE,
                        "cannot write to the compile cache '%s': %s", dir,
                        strerror(errno));
    unlink(tmp_log);
    if (rc != 0) {
        unlink(tmp_c);
        unlink(tmp_so);
    }
    return rc;
}

/* ---- loading ----------------------------------------------------------- */

static void native_release(void *handle)
{
    dlclose(handle);
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
    if (native_isa_flag())
        strbuf_addf(&key, " %s", native_isa_flag());
    strbuf_add(&key, " */\n");
    size_t len = key.len;
    char *text = strbuf_take(&key);
    char dir[4096];
    if (native_cache_dir(dir, sizeof dir, err) != 0) {
        free(text);
        return -1;
    }
    char hex[65], c[NATIVE_PATH], so[NATIVE_PATH];
    sha256_hex(text, len, hex);
    snprintf(c, sizeof c, "%s/%s.c", dir, hex);
    snprintf(so, sizeof so, "%s/%s.so", dir, hex);
    const char *why;
    info->cached = native_same_text(c, text, len) &&
                   native_private(so, S_IFREG, &why);
    void *h = NULL;
    int rc = 0;
    if (info->cached && !(h = dlopen(so, RTLD_NOW | RTLD_LOCAL)))
        info->cached = false; /* damaged: compiled again */
    if (!h) {
        rc = native_build(dir, text, len, c, so, stop, err);
        if (rc == 0 && !(h = dlopen(so, RTLD_NOW | RTLD_LOCAL))) {
            const char *msg = dlerror();
            rc = diag_error(err, SRC_SPAN_NONE,
                            "cannot load the compiled equations '%s': %s",
                            so, msg ? msg : "unknown error");
        }
    }
    free(text);
    if (rc != 0) {
        /* what does not load is not kept */
        unlink(c);
        unlink(so);
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
        unlink(c);
        unlink(so);
        return diag_error(err, SRC_SPAN_NONE,
                          "the compiled equations '%s' have no %s_values",
                          so, NATIVE_NAME);
    }
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
    /* the constraints' Jacobians (a model with constraints) */
    eom_native_values_fn jac;
    eom_native_tangent_fn ceff;
    *(void **)&jac = dlsym(h, NATIVE_NAME "_constraint_jacobians");
    *(void **)&ceff = dlsym(h, NATIVE_NAME "_constraint_tangent");
    const int *ceff_n = dlsym(h, NATIVE_NAME "_constraint_tangent_work");
    eom_set_native_constraints(e, ceff_n ? jac : NULL, ceff_n ? ceff : NULL,
                               ceff_n ? (size_t)*ceff_n : 0);
    snprintf(info->path, sizeof info->path, "%s", so);
    info->seconds = nh_clock() - t0;
    return 0;
}
