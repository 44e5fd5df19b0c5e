/*
 * kernelspec.h — `nh --install-kernel [--user]` (LANGUAGE.md §1.1): the
 * Jupyter kernel spec of nh, a folder `nh` holding kernel.json, written
 * where Jupyter looks for kernels.  The spec starts the kernel wrapper
 * (jupyter/nh_kernel.py, run by Python with ipykernel), which starts
 * `nh --protocol`.
 *
 * Where: with USER, Jupyter's data folder for the user —
 * $JUPYTER_DATA_DIR, else $XDG_DATA_HOME/jupyter, else
 * ~/.local/share/jupyter — under kernels/nh; without, the system folder
 * Jupyter searches first, /usr/local/share/jupyter/kernels/nh (as
 * `jupyter kernelspec install` does).
 *
 * Ownership: the strings are borrowed; kernelspec_json's text is the
 * caller's to free.  Must not: print (main reports).
 */
#ifndef NH_KERNELSPEC_H
#define NH_KERNELSPEC_H

#include <stdbool.h>
#include <stddef.h>

/* The text of kernel.json: PYTHON runs SCRIPT, which starts NH. */
char *kernelspec_json(const char *nh, const char *script, const char *python);

/* Writes the spec (folders made as needed).  Returns 0 with the folder
 * in WHERE, or -1 with a message in MSG. */
int kernelspec_install(bool user, const char *nh, const char *script,
                       const char *python, char *where, size_t wsize,
                       char *msg, size_t msize);

#endif
