/*
 * cc_load.c — see cc_load.h.  Tests only: runs the compiler through the
 * shell, which nh itself never does.
 */
#include "tests/cc_load.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *cc_load(const char *text, const char *flags)
{
    char dir[] = "/tmp/nh-cc-XXXXXX";
    if (!mkdtemp(dir))
        return NULL;
    char src[64], so[64], cmd[1024];
    snprintf(src, sizeof src, "%s/t.c", dir);
    snprintf(so, sizeof so, "%s/t.so", dir);
    FILE *f = fopen(src, "w");
    if (!f)
        return NULL;
    fputs(text, f);
    fclose(f);
    const char *cc = getenv("CC");
    snprintf(cmd, sizeof cmd, "%s %s -fPIC -shared -o %s %s -lm",
             cc && *cc ? cc : "cc", flags, so, src);
    void *h = NULL;
    if (system(cmd) == 0)
        h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    else
        fprintf(stderr, "cc_load: failed: %s\n", cmd);
    unlink(src);
    unlink(so);
    rmdir(dir);
    return h;
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
