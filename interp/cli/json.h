/*
 * json.h — a small, strict JSON reader and writer (RFC 8259), for nh's
 * machine interface (`nh --protocol`, doc/protocol.md).
 *
 * The reader takes exactly one value, with nothing but whitespace around
 * it, and refuses everything RFC 8259 does not allow: comments, trailing
 * commas, single quotes, leading zeros, NaN and Infinity, numbers beyond
 * the range of a double, control characters and invalid UTF-8 in strings,
 * unpaired surrogates in \u escapes, a repeated name in one object, and
 * nesting deeper than JSON_MAX_DEPTH (so hostile input cannot exhaust the
 * stack).  Its error says what is wrong and at which byte.
 *
 * The writer appends to a strbuf_t and always writes valid JSON in
 * UTF-8: a byte that is not part of valid UTF-8 is written as U+FFFD,
 * control characters as escapes, a non-finite number as null.
 *
 * Ownership: json_parse returns a tree the caller frees with json_free
 * (every string, array and object inside belongs to it).  The writer
 * borrows what it writes.
 * Must not: print; know anything about nh's language.
 */
#ifndef NH_JSON_H
#define NH_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "interp/base/util.h"

#define JSON_MAX_DEPTH 64

typedef enum json_kind {
    JSON_NULL,
    JSON_FALSE,
    JSON_TRUE,
    JSON_NUMBER,
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT,
} json_kind_t;

typedef struct json json_t;
struct json {
    json_kind_t kind;
    double number; /* NUMBER */
    char *str;     /* STRING: UTF-8, NUL-terminated (it may hold NULs) */
    size_t len;    /* STRING: bytes; ARRAY, OBJECT: members */
    json_t *items; /* ARRAY: the elements; OBJECT: the values */
    json_t *keys;  /* OBJECT: the names (STRING values), in order */
};

/* Parses TEXT (LEN bytes).  Returns the value, or NULL with a message
 * ("expected ':' after a name at byte 12") in MSG. */
json_t *json_parse(const char *text, size_t len, char *msg, size_t size);
void json_free(json_t *v); /* accepts NULL */

/* The member NAME of object OBJ, or NULL (also when OBJ is no object). */
const json_t *json_get(const json_t *obj, const char *name);

/* Whether V is a number that is a whole number in [0, MAX]; its value in
 * *OUT. */
bool json_get_count(const json_t *v, double max, size_t *out);

/* Appends S (LEN bytes) as a JSON string. */
void json_put_string(strbuf_t *b, const char *s, size_t len);
/* Appends X as a JSON number (null when it is not finite). */
void json_put_number(strbuf_t *b, double x);
/* Appends V as JSON text. */
void json_put_value(strbuf_t *b, const json_t *v);

#endif
