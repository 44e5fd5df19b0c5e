/*
 * sha256.h — SHA-256 (FIPS 180-4) of a byte string: the name under which
 * the compile cache keeps generated C (run/native.c), so that a file's
 * name says what text it holds.
 *
 * Ownership: nothing is allocated; the caller's buffers are written.
 */
#ifndef NH_SHA256_H
#define NH_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* The digest of DATA[0..n) into OUT (32 bytes). */
void sha256(const void *data, size_t n, uint8_t out[32]);
/* The digest as 64 lowercase hex digits and a NUL into HEX (65 bytes). */
void sha256_hex(const void *data, size_t n, char hex[65]);

#endif
