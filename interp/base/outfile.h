/*
 * outfile.h — a file written whole or not at all (LANGUAGE.md §7: "a
 * failed write is an error and leaves an existing file as it was").
 *
 * The text goes to a temporary file in the target's own folder, which
 * replaces the target only when every byte was written (rename(2) within
 * one folder is atomic): a full disk, a file-size limit or a statement
 * that fails half-way leaves an existing file untouched and no temporary
 * behind.  The new file gets the mode the target had, or the one fopen
 * would give (0666 less the umask).  A target that exists and is not a
 * regular file (a terminal, /dev/null, /dev/full, a FIFO) cannot be
 * replaced and holds nothing to keep: it is opened and written directly,
 * without waiting: a FIFO that no process reads is refused at once
 * (OUTFILE_NO_READER) rather than blocking until one does (issue 31: a
 * `print > "fifo"` hung the REPL, and a notebook lost its session).  A
 * symbolic link is followed, so the file it names is replaced, not the
 * link.
 *
 * Ownership: outfile_open fills the caller's outfile_t; outfile_commit or
 * outfile_abort ends it (either closes the stream and frees what open
 * allocated).  Errors are errno values; the caller words the message.
 * Must not: print; leave a temporary file behind.
 */
#ifndef NH_OUTFILE_H
#define NH_OUTFILE_H

#include <stdio.h>

typedef struct outfile {
    FILE *f;      /* write the text here */
    char *target; /* the file that gets the text (a link resolved) */
    char *tmp;    /* the temporary file; NULL when writing directly */
} outfile_t;

/* Errors of outfile_open that are not errno values (negative). */
enum {
    OUTFILE_NO_READER = -1,   /* a FIFO that no process reads */
    OUTFILE_NOT_REGULAR = -2, /* outfile_open_regular: a device, a FIFO, a
                                 socket */
};

/* Opens a temporary file beside PATH (or PATH itself, see above).
 * Returns 0, or an errno value (or one of the codes above) with *O
 * cleared: ENOENT when the folder does not exist, EACCES, EISDIR when
 * PATH is a folder, ... */
int outfile_open(outfile_t *o, const char *path);

/* As outfile_open, for a file that must be a file (a C source): PATH, or
 * the file a link names, is a regular file or does not exist; anything
 * else is OUTFILE_NOT_REGULAR and is not opened. */
int outfile_open_regular(outfile_t *o, const char *path);

/* The text of an error of outfile_open or outfile_commit: strerror's, or
 * a sentence for the codes above. */
const char *outfile_strerror(int e);

/* Flushes and closes the stream and puts the file in place.  Returns 0,
 * or the errno value of the first failed write, flush, close or rename;
 * then the target is as it was (unless written directly). */
int outfile_commit(outfile_t *o);

/* Closes the stream and removes the temporary file: the target is as it
 * was.  Accepts an outfile that was never opened (zeroed). */
void outfile_abort(outfile_t *o);

/* Flushes F and returns the errno value of a write to it that failed
 * (since it was opened or its error cleared), or 0.  glibc keeps what a
 * failed write could not write and tries it again in the flush, so the
 * flush reports the failure's errno; EIO when it no longer can. */
int outfile_flush_error(FILE *f);

#endif
