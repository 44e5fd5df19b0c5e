/*
 * outfile.c — see outfile.h.
 *
 * The temporary file is named ".nh-XXXXXX" in the target's folder
 * (mkostemp), short so that a long target name cannot make it too long,
 * and hidden so that a listing in the middle of a long `table` does not
 * show it.  When the folder cannot hold it (it does not exist, it is not
 * writable), the statement fails: writing the target directly could
 * leave it half-written, which is what the temporary is for.
 */
#define _GNU_SOURCE /* mkostemp */
#include "interp/base/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "interp/base/util.h"

/* The mode fopen gives a new file: 0666 less the umask (which can only
 * be read by setting it; nh has one thread). */
static mode_t outfile_new_mode(void)
{
    mode_t mask = umask(0);
    umask(mask);
    return 0666 & ~mask;
}

/* "DIR/.nh-XXXXXX" for a file in DIR, the folder of TARGET. */
static char *outfile_tmp_name(const char *target)
{
    const char *slash = strrchr(target, '/');
    size_t n = slash ? (size_t)(slash - target) + 1 : 0;
    char *t = xmalloc(n + sizeof ".nh-XXXXXX");
    memcpy(t, target, n);
    memcpy(t + n, ".nh-XXXXXX", sizeof ".nh-XXXXXX");
    return t;
}

static void outfile_clear(outfile_t *o)
{
    free(o->target);
    free(o->tmp);
    o->f = NULL;
    o->target = o->tmp = NULL;
}

/* Opens TARGET, which is not a regular file, for writing directly: without
 * waiting (O_NONBLOCK: a FIFO without a reader fails with ENXIO at once,
 * where a blocking open waits for one for ever), and without making a
 * terminal the controlling one; the writes then block as usual. */
static int outfile_open_direct(outfile_t *o)
{
    int fd = open(o->target, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    int e = errno;
    if (fd < 0)
        return e == ENXIO ? OUTFILE_NO_READER : e;
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0 ||
        !(o->f = fdopen(fd, "w"))) {
        e = errno;
        close(fd);
        return e;
    }
    return 0;
}

const char *outfile_strerror(int e)
{
    switch (e) {
    case OUTFILE_NO_READER:
        return "it is a FIFO that no process reads (nh does not wait for "
               "one)";
    case OUTFILE_NOT_REGULAR:
        return "it is not a regular file (a device, a FIFO or a socket)";
    default:
        return strerror(e);
    }
}

/* outfile_open, with REGULAR: only a regular file (or none) as target. */
static int outfile_open_as(outfile_t *o, const char *path, bool regular)
{
    o->f = NULL;
    o->target = o->tmp = NULL;
    if (!*path)
        return ENOENT;
    struct stat sb;
    char *real = NULL;
    if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode))
        real = realpath(path, NULL); /* NULL: a dangling link, replaced */
    o->target = real ? real : xstrdup(path);

    mode_t mode;
    if (stat(o->target, &sb) == 0) {
        if (S_ISDIR(sb.st_mode)) {
            outfile_clear(o);
            return EISDIR;
        }
        if (!S_ISREG(sb.st_mode)) { /* a device or a FIFO: write to it */
            int e = regular ? OUTFILE_NOT_REGULAR : outfile_open_direct(o);
            if (e)
                outfile_clear(o);
            return e;
        }
        mode = sb.st_mode & 07777;
    } else if (errno == ENOENT) {
        mode = outfile_new_mode();
    } else {
        int e = errno;
        outfile_clear(o);
        return e;
    }

    o->tmp = outfile_tmp_name(o->target);
    int fd = mkostemp(o->tmp, O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        outfile_clear(o);
        return e;
    }
    if (fchmod(fd, mode) != 0 || !(o->f = fdopen(fd, "w"))) {
        int e = errno;
        close(fd);
        unlink(o->tmp);
        outfile_clear(o);
        return e;
    }
    return 0;
}

int outfile_open(outfile_t *o, const char *path)
{
    return outfile_open_as(o, path, false);
}

int outfile_open_regular(outfile_t *o, const char *path)
{
    return outfile_open_as(o, path, true);
}

int outfile_flush_error(FILE *f)
{
    errno = 0;
    if (fflush(f) != 0)
        return errno ? errno : EIO;
    return ferror(f) ? EIO : 0;
}

int outfile_commit(outfile_t *o)
{
    int e = outfile_flush_error(o->f);
    if (fclose(o->f) != 0 && !e)
        e = errno;
    o->f = NULL;
    if (o->tmp) {
        if (!e && rename(o->tmp, o->target) != 0)
            e = errno;
        if (e)
            unlink(o->tmp);
    }
    outfile_clear(o);
    return e;
}

void outfile_abort(outfile_t *o)
{
    if (o->f)
        fclose(o->f);
    if (o->tmp)
        unlink(o->tmp);
    outfile_clear(o);
}
