/*
 * main.c — the command line of LANGUAGE.md §1:
 *   nh [OPTIONS] [FILE.nh ...]   with -e STATEMENTS, -i, -q, -, --help,
 *   --version; `nh --check FILE...` (expect.h); and for notebooks (§1.1)
 *   `nh --protocol`, the machine interface, and `nh --install-kernel
 *   [--user]`.  Exit status: 0
 *   success, 1 an error in a script or statement, 2 bad usage.
 *
 * Must not: interpret anything itself (the session does).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gsl/gsl_errno.h>

#include "config.h"
#include "interp/cli/expect.h"
#include "interp/cli/kernelspec.h"
#include "interp/cli/merge.h"
#include "interp/cli/protocol.h"
#include "interp/base/outfile.h"
#include "interp/cli/repl.h"
#include "interp/cli/session.h"
#include "interp/base/util.h"

#ifndef NH_STDLIB_DIR
#define NH_STDLIB_DIR "/usr/local/share/nh/stdlib"
#endif
#ifndef NH_KERNEL_SCRIPT
#define NH_KERNEL_SCRIPT "/usr/local/share/nh/jupyter/nh_kernel.py"
#endif
#ifndef NH_PYTHON
#define NH_PYTHON "/usr/bin/python3"
#endif
#ifndef NH_BINDIR
#define NH_BINDIR "/usr/local/bin"
#endif

static const char usage[] =
    "usage: nh [OPTIONS] [FILE.nh ...]\n"
    "Describe mechanical systems with nonholonomic constraints; derive,\n"
    "evaluate and integrate their equations of motion.\n"
    "\n"
    "  FILE.nh        run the file (files run in order, in one session)\n"
    "  -              read a script from standard input\n"
    "  -e STATEMENTS  run the statements after the files (repeatable)\n"
    "  -i             enter the REPL after the files and -e statements\n"
    "  -q             quiet: no banner, no summaries\n"
    "  --check FILE.nh ...\n"
    "                 run the files and compare what each statement prints\n"
    "                 with the `# expect:` lines after it (and errors with\n"
    "                 `# expect-error:` lines); status 1, and each\n"
    "                 mismatch as FILE:LINE, when they differ\n"
    "  --shard K/N    run every sweep's points i with i mod N = K - 1 only,\n"
    "                 with an index column (one of N shards of a study)\n"
    "  --merge FILE...\n"
    "                 join the shards' outputs into the one run's output\n"
    "  --protocol     serve a front end: JSON requests on standard input,\n"
    "                 replies on standard output (doc/protocol.md)\n"
    "  --install-kernel [--user]\n"
    "                 register the Jupyter kernel (for all users, or for\n"
    "                 you with --user)\n"
    "  --help         this help\n"
    "  --version      the version\n"
    "\n"
    "Without a file or -e, nh starts the REPL.  `help` there tells more.\n";

/* The path of this executable in EXE; false when it cannot be known. */
static bool exe_path(char exe[PATH_MAX])
{
    ssize_t len = readlink("/proc/self/exe", exe, PATH_MAX - 1);
    if (len <= 0)
        return false;
    exe[len] = '\0';
    return true;
}

/* The folder of this executable in DIR; false when it cannot be known. */
static bool exe_dir(char dir[PATH_MAX])
{
    if (!exe_path(dir))
        return false;
    char *slash = strrchr(dir, '/');
    if (!slash)
        return false;
    *slash = '\0';
    return true;
}

/* TARGET (a configured installation path, absolute) as it lies from
 * this executable when the installation has moved as a whole — `make
 * install prefix=DIR`, or DESTDIR: the executable is in DIR/bin, not in
 * NH_BINDIR, and TARGET then is DIR/share/… .  The relative path from
 * NH_BINDIR to TARGET, from the executable's folder, in OUT (SIZE bytes);
 * false when it cannot be made. */
static bool relocated(const char *target, char *out, size_t size)
{
    char exe[PATH_MAX];
    if (!exe_dir(exe) || NH_BINDIR[0] != '/' || target[0] != '/')
        return false;
    /* the longest common leading run of whole components */
    const char *b = NH_BINDIR, *t = target;
    size_t common = 0;
    for (size_t i = 0;; i++) {
        bool bend = b[i] == '\0' || b[i] == '/';
        bool tend = t[i] == '\0' || t[i] == '/';
        if (bend && tend)
            common = i;
        if (b[i] != t[i] || b[i] == '\0')
            break;
    }
    strbuf_t p;
    strbuf_init(&p);
    strbuf_add(&p, exe);
    for (const char *c = b + common; *c; c++) /* up from the bin folder */
        if (*c == '/' && c[1] && c[1] != '/')
            strbuf_add(&p, "/..");
    strbuf_add(&p, t + common);
    bool ok = p.len < size;
    if (ok)
        snprintf(out, size, "%s", p.data);
    strbuf_free(&p);
    return ok;
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The library folders `import` searches after NH_PATH (doc/language.md,
 * "Files"): the stdlib beside the executable (a build tree), the
 * installed one where the executable now is (an installation moved as a
 * whole), and the configured one; the first two only when they exist,
 * each once.  DIRS points into BUF; returns how many. */
static size_t library_dirs(const char *dirs[3], char buf[2][PATH_MAX + 16])
{
    size_t n = 0;
    char exe[PATH_MAX];
    if (exe_dir(exe)) {
        snprintf(buf[0], PATH_MAX + 16, "%s/stdlib", exe);
        if (is_dir(buf[0]))
            dirs[n++] = buf[0];
    }
    char rel[PATH_MAX + 16];
    if (relocated(NH_STDLIB_DIR, rel, sizeof rel) &&
        realpath(rel, buf[1])) { /* it exists; named without its ".." */
        char b[PATH_MAX];
        bool same = realpath(NH_STDLIB_DIR, b) && strcmp(buf[1], b) == 0;
        for (size_t i = 0; i < n && !same; i++)
            same = realpath(dirs[i], b) && strcmp(buf[1], b) == 0;
        if (!same && is_dir(buf[1]))
            dirs[n++] = buf[1];
    }
    dirs[n++] = NH_STDLIB_DIR;
    return n;
}

static void set_library_dirs(session_t *s)
{
    const char *dirs[3];
    char buf[2][PATH_MAX + 16];
    size_t n = library_dirs(dirs, buf);
    session_set_library_dirs(s, dirs, n);
}

/* `--install-kernel [--user]`: the spec runs this nh, and the kernel
 * script beside it (a build tree) or the installed one. */
static int install_kernel(bool user)
{
    char exe[PATH_MAX], dir[PATH_MAX];
    char script[PATH_MAX + 32];
    if (!exe_path(exe) || !exe_dir(dir)) {
        fprintf(stderr, "nh: cannot tell where this nh is, for the kernel\n");
        return 1;
    }
    /* beside it (a build tree), where it is installed now (an
     * installation moved as a whole), or where it was configured */
    snprintf(script, sizeof script, "%s/jupyter/nh_kernel.py", dir);
    if (access(script, R_OK) != 0 &&
        !(relocated(NH_KERNEL_SCRIPT, script, sizeof script) &&
          access(script, R_OK) == 0))
        snprintf(script, sizeof script, "%s", NH_KERNEL_SCRIPT);
    char where[PATH_MAX], msg[PATH_MAX + 128];
    if (kernelspec_install(user, exe, script, NH_PYTHON, where, sizeof where,
                           msg, sizeof msg) != 0) {
        fprintf(stderr, "nh: %s\n", msg);
        return 1;
    }
    printf("installed the Jupyter kernel nh in %s\n", where);
    return 0;
}

/* LANGUAGE.md §7: a write error on standard output is an error, never
 * silent — also for what nh writes outside statements (the usage, the
 * version, the banner).  The session reports the statements' own. */
static int finish_output(int status)
{
    int e = outfile_flush_error(stdout);
    if (e) {
        fprintf(stderr, "nh: error: cannot write to standard output: %s\n",
                strerror(e));
        return status ? status : 1;
    }
    return status;
}

/* "K/N" with 1 <= K <= N <= 1000000 into *K, *N. */
static bool parse_shard(const char *text, unsigned *k, unsigned *n)
{
    char *end;
    errno = 0;
    unsigned long a = strtoul(text, &end, 10);
    if (end == text || *end != '/' || text[0] == '-')
        return false;
    const char *second = end + 1;
    unsigned long b = strtoul(second, &end, 10);
    if (end == second || *end != '\0' || second[0] == '-' || errno != 0)
        return false;
    if (a < 1 || a > b || b > 1000000)
        return false;
    *k = (unsigned)a;
    *n = (unsigned)b;
    return true;
}

int main(int argc, char **argv)
{
    bool quiet = false, interactive = false;
    bool protocol = false, kernel = false, user = false, merge = false;
    bool check = false;
    unsigned shard_k = 0, shard_n = 0;
    const char **files = xcalloc((size_t)argc + 1, sizeof *files);
    const char **stmts = xcalloc((size_t)argc + 1, sizeof *stmts);
    size_t nfiles = 0, nstmts = 0;
    int status = 0;
    xmalloc_setup();

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            goto out;
        } else if (strcmp(a, "--version") == 0) {
            printf("nh %s\n", PACKAGE_VERSION);
            goto out;
        } else if (strcmp(a, "-q") == 0) {
            quiet = true;
        } else if (strcmp(a, "-i") == 0) {
            interactive = true;
        } else if (strcmp(a, "--protocol") == 0) {
            protocol = true;
        } else if (strcmp(a, "--check") == 0) {
            check = true;
        } else if (strcmp(a, "--install-kernel") == 0) {
            kernel = true;
        } else if (strcmp(a, "--user") == 0) {
            user = true;
        } else if (strcmp(a, "--shard") == 0) {
            if (i + 1 >= argc || !parse_shard(argv[i + 1], &shard_k, &shard_n)) {
                fprintf(stderr,
                        "nh: --shard needs K/N, whole numbers with 1 <= K <= "
                        "N <= 1000000\n%s",
                        usage);
                status = 2;
                goto out;
            }
            i++;
        } else if (strcmp(a, "--merge") == 0) {
            merge = true;
        } else if (strcmp(a, "-e") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "nh: -e needs statements after it\n%s", usage);
                status = 2;
                goto out;
            }
            stmts[nstmts++] = argv[++i];
        } else if (strcmp(a, "--") == 0) {
            while (++i < argc)
                files[nfiles++] = argv[i];
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "nh: unknown option '%s'\n%s", a, usage);
            status = 2;
            goto out;
        } else {
            files[nfiles++] = a;
        }
    }

    if (user && !kernel) {
        fprintf(stderr, "nh: --user goes with --install-kernel\n%s", usage);
        status = 2;
        goto out;
    }
    if (protocol && kernel) {
        fprintf(stderr, "nh: --protocol and --install-kernel go apart\n%s",
                usage);
        status = 2;
        goto out;
    }
    if ((protocol || kernel) && (nfiles || nstmts || interactive)) {
        fprintf(stderr, "nh: %s takes no files, -e or -i\n%s",
                protocol ? "--protocol" : "--install-kernel", usage);
        status = 2;
        goto out;
    }
    if (check && (protocol || kernel || nstmts || interactive || merge ||
                  shard_n || !nfiles)) {
        fprintf(stderr, "nh: --check takes files (and -q), not %s\n%s",
                protocol      ? "--protocol"
                : kernel      ? "--install-kernel"
                : nstmts      ? "-e"
                : interactive ? "-i"
                : merge       ? "--merge"
                : shard_n     ? "--shard"
                              : "nothing: name the files to check",
                usage);
        status = 2;
        goto out;
    }
    for (size_t i = 0; check && i < nfiles; i++)
        if (strcmp(files[i], "-") == 0) {
            fprintf(stderr, "nh: --check reads files, not standard input\n%s",
                    usage);
            status = 2;
            goto out;
        }
    if (kernel) {
        status = install_kernel(user);
        goto out;
    }
    if (merge) {
        if (nstmts || interactive || protocol || shard_n || nfiles == 0) {
            fprintf(stderr,
                    "nh: --merge takes the shards' files and nothing else\n%s",
                    usage);
            status = 2;
            goto out;
        }
        char msg[1024];
        if (merge_files(files, nfiles, stdout, msg, sizeof msg) != 0) {
            fprintf(stderr, "nh: error: %s\n", msg);
            status = 1;
        }
        goto out;
    }
    if (shard_n && (protocol || interactive)) {
        fprintf(stderr, "nh: --shard goes with files and -e, not %s\n%s",
                protocol ? "--protocol" : "-i", usage);
        status = 2;
        goto out;
    }
    gsl_set_error_handler_off();
    if (protocol) {
        protocol_t *p = protocol_new(quiet);
        set_library_dirs(protocol_session(p));
        status = protocol_run(p, STDIN_FILENO, stdout);
        protocol_free(p);
        goto out;
    }
    if (check) {
        const char *dirs[3];
        char buf[2][PATH_MAX + 16];
        size_t n = library_dirs(dirs, buf);
        status = expect_check_files(files, nfiles, quiet, dirs, n, stdout,
                                    stderr);
        goto out;
    }
    session_t *s = session_new(quiet, stdout, stderr);
    set_library_dirs(s);
    if (shard_n)
        session_set_shard(s, shard_k, shard_n);
    bool failed = false;
    for (size_t i = 0; i < nfiles && !failed && !session_quit_requested(s); i++)
        failed = session_run_file(s, files[i]) != RUN_OK;
    for (size_t i = 0; i < nstmts && !failed && !session_quit_requested(s); i++)
        failed = session_run_text(s, "<-e>", stmts[i], strlen(stmts[i]),
                                  false) != RUN_OK;
    if ((interactive || (nfiles == 0 && nstmts == 0)) &&
        !session_quit_requested(s))
        status = repl_run(s, !quiet);
    else
        status = failed ? 1 : 0;
    session_free(s);
out:
    free(files);
    free(stmts);
    return finish_output(status);
}
