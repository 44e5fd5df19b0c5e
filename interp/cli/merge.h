/*
 * merge.h — `nh --merge FILE…` (LANGUAGE.md §1.2): the outputs of one
 * study run as shards (`nh --shard K/N`), joined into what one run
 * writes.
 *
 * A shard's output is the run's output with each sweep's table changed:
 * a line `# nh --shard K/N: M points` before it, an `index` column first,
 * and only the rows whose index i has i mod N = K − 1.  Everything else
 * must be the same in every file.  The merge needs all N shards, each
 * once and each table whole: a shard missing, given twice, of another
 * split, or a table cut short is an error that names the file (and the
 * index), and nothing is written.
 *
 * Ownership: merge_files reads the files and writes OUT; it keeps
 * nothing.  Must not: write anything when it fails.
 */
#ifndef NH_CLI_MERGE_H
#define NH_CLI_MERGE_H

#include <stddef.h>
#include <stdio.h>

/* Joins the N files PATHS onto OUT.  Returns 0, or -1 with a sentence in
 * MSG (MSGSIZE bytes). */
int merge_files(const char *const *paths, size_t n, FILE *out, char *msg,
                size_t msgsize);

/* The largest file --merge reads (bytes). */
#define MERGE_MAX_FILE ((size_t)1 << 30)

#endif
