/*
 * kernelspec.c — the Jupyter kernel spec and its installation
 * (kernelspec.h).  The format of kernel.json is Jupyter's ("Kernel
 * specs" in the jupyter_client documentation): argv with
 * {connection_file} for the kernel to read, the name shown, the
 * language, and interrupt_mode "signal" (an interrupt is SIGINT to the
 * kernel, which passes it on to nh).
 */
#include "interp/cli/kernelspec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "interp/cli/json.h"
#include "interp/base/util.h"

char *kernelspec_json(const char *nh, const char *script, const char *python)
{
    strbuf_t b;
    strbuf_init(&b);
    strbuf_add(&b, "{\n  \"argv\": [");
    json_put_string(&b, python, strlen(python));
    strbuf_add(&b, ", ");
    json_put_string(&b, script, strlen(script));
    strbuf_add(&b, ", \"--nh\", ");
    json_put_string(&b, nh, strlen(nh));
    strbuf_add(&b, ", \"-f\", \"{connection_file}\"],\n"
                   "  \"display_name\": \"nh\",\n"
                   "  \"language\": \"nh\",\n"
                   "  \"interrupt_mode\": \"signal\"\n}\n");
    return strbuf_take(&b);
}

/* mkdir -p DIR (modified in place and restored). */
static int kernelspec_mkdirs(char *dir, char *msg, size_t msize)
{
    for (char *p = dir + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        struct stat st;
        if (stat(dir, &st) != 0 && mkdir(dir, 0755) != 0 && errno != EEXIST) {
            snprintf(msg, msize, "cannot create the folder '%s': %s", dir,
                     strerror(errno));
            *p = c;
            return -1;
        }
        *p = c;
        if (c == '\0')
            return 0;
    }
}

int kernelspec_install(bool user, const char *nh, const char *script,
                       const char *python, char *where, size_t wsize,
                       char *msg, size_t msize)
{
    const char *jdd = getenv("JUPYTER_DATA_DIR");
    const char *xdg = getenv("XDG_DATA_HOME");
    const char *home = getenv("HOME");
    int n;
    if (!user)
        n = snprintf(where, wsize, "/usr/local/share/jupyter/kernels/nh");
    else if (jdd && *jdd)
        n = snprintf(where, wsize, "%s/kernels/nh", jdd);
    else if (xdg && *xdg)
        n = snprintf(where, wsize, "%s/jupyter/kernels/nh", xdg);
    else if (home && *home)
        n = snprintf(where, wsize, "%s/.local/share/jupyter/kernels/nh",
                     home);
    else {
        snprintf(msg, msize, "--user: neither JUPYTER_DATA_DIR nor HOME is "
                             "set, so there is no user folder for Jupyter");
        return -1;
    }
    if (n < 0 || (size_t)n >= wsize) {
        snprintf(msg, msize, "the folder name for the kernel is too long");
        return -1;
    }
    if (where[0] != '/') {
        snprintf(msg, msize, "the folder for the kernel, '%s', is not an "
                             "absolute path", where);
        return -1;
    }
    if (kernelspec_mkdirs(where, msg, msize) != 0)
        return -1;
    size_t plen = strlen(where) + 16;
    char *path = xmalloc(plen);
    snprintf(path, plen, "%s/kernel.json", where);
    char *text = kernelspec_json(nh, script, python);
    FILE *f = fopen(path, "w");
    int rc = 0;
    if (!f) {
        snprintf(msg, msize, "cannot write '%s': %s", path, strerror(errno));
        rc = -1;
    } else {
        fputs(text, f);
        bool bad = ferror(f);
        if (fclose(f) != 0 || bad) {
            snprintf(msg, msize, "cannot write '%s': %s", path,
                     strerror(errno));
            rc = -1;
        }
    }
    free(text);
    free(path);
    return rc;
}
