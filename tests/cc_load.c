/*
 * cc_load.c — see cc_load.h.  Tests only: runs the compiler through the
 * shell, which nh itself never does.
 */
#include "tests/cc_load.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A text's temporary folder and files, and the command that compiles
 * it. */
typedef struct cc_job {
    char dir[32], src[64], so[64], cmd[1024];
} cc_job_t;

static bool cc_prepare(cc_job_t *j, const char *text, const char *flags)
{
    snprintf(j->dir, sizeof j->dir, "/tmp/nh-cc-XXXXXX");
    if (!mkdtemp(j->dir))
        return false;
    snprintf(j->src, sizeof j->src, "%s/t.c", j->dir);
    snprintf(j->so, sizeof j->so, "%s/t.so", j->dir);
    FILE *f = fopen(j->src, "w");
    if (!f) {
        rmdir(j->dir);
        return false;
    }
    fputs(text, f);
    fclose(f);
    const char *cc = getenv("CC");
    snprintf(j->cmd, sizeof j->cmd, "%s %s -fPIC -shared -o %s %s -lm",
             cc && *cc ? cc : "cc", flags, j->so, j->src);
    return true;
}

/* The object of J once its command ran with STATUS; the files removed. */
static void *cc_finish(cc_job_t *j, int status)
{
    void *h = NULL;
    if (status == 0)
        h = dlopen(j->so, RTLD_NOW | RTLD_LOCAL);
    else
        fprintf(stderr, "cc_load: failed: %s\n", j->cmd);
    unlink(j->src);
    unlink(j->so);
    rmdir(j->dir);
    return h;
}

void *cc_load(const char *text, const char *flags)
{
    cc_job_t j;
    if (!cc_prepare(&j, text, flags))
        return NULL;
    return cc_finish(&j, system(j.cmd));
}

void cc_load_pair(const char *text1, const char *flags1, void **h1,
                  const char *text2, const char *flags2, void **h2)
{
    cc_job_t a, b;
    *h1 = *h2 = NULL;
    bool oka = cc_prepare(&a, text1, flags1);
    bool okb = cc_prepare(&b, text2, flags2);
    if (!oka || !okb) {
        if (oka)
            cc_finish(&a, -1);
        if (okb)
            cc_finish(&b, -1);
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        _exit(system(a.cmd) == 0 ? 0 : 1);
    int sb = system(b.cmd), sa = -1;
    if (pid > 0 && waitpid(pid, &sa, 0) == pid)
        sa = WIFEXITED(sa) ? WEXITSTATUS(sa) : -1;
    *h1 = cc_finish(&a, pid > 0 ? sa : system(a.cmd));
    *h2 = cc_finish(&b, sb);
}

void *cc_sym(void *h, const char *name)
{
    return dlsym(h, name);
}

void cc_unload(void *h)
{
    if (h)
        dlclose(h);
}
