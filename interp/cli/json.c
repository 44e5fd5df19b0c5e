/*
 * json.c — the strict JSON reader and the writer of json.h.
 *
 * The reader is recursive descent over the grammar of RFC 8259 §2–7, one
 * function per production, with the depth counted so that nesting stops
 * at JSON_MAX_DEPTH.  On an error it frees what it built and reports the
 * first problem only.
 */
#include "interp/cli/json.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/source.h"

typedef struct json_reader {
    const unsigned char *p, *end, *start;
    unsigned depth;
    char *msg;
    size_t size;
    bool failed;
} json_reader_t;

static void json_fail(json_reader_t *r, const char *what)
{
    if (r->failed)
        return;
    r->failed = true;
    snprintf(r->msg, r->size, "%s at byte %zu", what,
             (size_t)(r->p - r->start));
}

static void json_skip_space(json_reader_t *r)
{
    while (r->p < r->end &&
           (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

static void json_add_utf8(strbuf_t *b, uint32_t cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    strbuf_addn(b, u, n);
}

/* The four hex digits after "\u"; -1 when they are not. */
static long json_hex4(json_reader_t *r)
{
    if (r->end - r->p < 4)
        return -1;
    long v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = r->p[i];
        int d = c >= '0' && c <= '9'   ? (int)(c - '0')
                : c >= 'a' && c <= 'f' ? (int)(c - 'a' + 10)
                : c >= 'A' && c <= 'F' ? (int)(c - 'A' + 10)
                                       : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    r->p += 4;
    return v;
}

/* A string, R->p at its opening quote (RFC 8259 §7). */
static bool json_read_string(json_reader_t *r, json_t *v)
{
    r->p++; /* the quote */
    strbuf_t b;
    strbuf_init(&b);
    for (;;) {
        if (r->p >= r->end) {
            json_fail(r, "unterminated string");
            break;
        }
        unsigned c = *r->p;
        if (c == '"') {
            r->p++;
            v->kind = JSON_STRING;
            v->len = b.len;
            v->str = strbuf_take(&b);
            return true;
        }
        if (c < 0x20) {
            json_fail(r, "control character in a string (escape it)");
            break;
        }
        if (c != '\\') {
            size_t n = source_utf8_len(r->p, (size_t)(r->end - r->p));
            if (n == 0) {
                json_fail(r, "invalid UTF-8 in a string");
                break;
            }
            strbuf_addn(&b, (const char *)r->p, n);
            r->p += n;
            continue;
        }
        r->p++;
        if (r->p >= r->end) {
            json_fail(r, "unterminated string");
            break;
        }
        c = *r->p++;
        const char *simple = NULL;
        switch (c) {
        case '"': simple = "\""; break;
        case '\\': simple = "\\"; break;
        case '/': simple = "/"; break;
        case 'b': simple = "\b"; break;
        case 'f': simple = "\f"; break;
        case 'n': simple = "\n"; break;
        case 'r': simple = "\r"; break;
        case 't': simple = "\t"; break;
        case 'u': break;
        default:
            r->p--;
            json_fail(r, "unknown escape in a string");
            break;
        }
        if (r->failed)
            break;
        if (simple) {
            strbuf_addn(&b, simple, 1);
            continue;
        }
        long cp = json_hex4(r);
        if (cp < 0) {
            json_fail(r, "\\u needs four hex digits");
            break;
        }
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
            json_fail(r, "unpaired low surrogate in a \\u escape");
            break;
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            long lo = -1;
            if (r->end - r->p >= 2 && r->p[0] == '\\' && r->p[1] == 'u') {
                r->p += 2;
                lo = json_hex4(r);
            }
            if (lo < 0xDC00 || lo > 0xDFFF) {
                json_fail(r, "unpaired high surrogate in a \\u escape");
                break;
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        json_add_utf8(&b, (uint32_t)cp);
    }
    strbuf_free(&b);
    return false;
}

static bool json_digits(json_reader_t *r)
{
    const unsigned char *s = r->p;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
        r->p++;
    return r->p > s;
}

/* A number (RFC 8259 §6): -? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)? */
static bool json_read_number(json_reader_t *r, json_t *v)
{
    const unsigned char *s = r->p;
    if (*r->p == '-')
        r->p++;
    if (r->p < r->end && *r->p == '0') {
        r->p++;
        if (r->p < r->end && *r->p >= '0' && *r->p <= '9') {
            json_fail(r, "a number cannot have a leading zero");
            return false;
        }
    } else if (!json_digits(r)) {
        json_fail(r, "expected a digit");
        return false;
    }
    if (r->p < r->end && *r->p == '.') {
        r->p++;
        if (!json_digits(r)) {
            json_fail(r, "expected a digit after the decimal point");
            return false;
        }
    }
    if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
        r->p++;
        if (r->p < r->end && (*r->p == '+' || *r->p == '-'))
            r->p++;
        if (!json_digits(r)) {
            json_fail(r, "expected a digit in the exponent");
            return false;
        }
    }
    size_t n = (size_t)(r->p - s);
    char buf[64];
    char *text = n < sizeof buf ? buf : xmalloc(n + 1);
    memcpy(text, s, n);
    text[n] = '\0';
    double x = strtod(text, NULL);
    if (text != buf)
        free(text);
    if (!isfinite(x)) {
        r->p = s;
        json_fail(r, "number out of range");
        return false;
    }
    v->kind = JSON_NUMBER;
    v->number = x;
    return true;
}

static bool json_read_value(json_reader_t *r, json_t *v);

static bool json_literal(json_reader_t *r, const char *word, json_kind_t kind,
                         json_t *v)
{
    size_t n = strlen(word);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0) {
        json_fail(r, "expected a value");
        return false;
    }
    r->p += n;
    v->kind = kind;
    return true;
}

/* The members of an array or an object, R->p after the opening
 * bracket. */
static bool json_read_members(json_reader_t *r, json_t *v, bool object)
{
    size_t cap = 0, kcap = 0;
    v->kind = object ? JSON_OBJECT : JSON_ARRAY;
    if (++r->depth > JSON_MAX_DEPTH) {
        json_fail(r, "nested deeper than 64 levels");
        return false;
    }
    char close = object ? '}' : ']';
    json_skip_space(r);
    if (r->p < r->end && *r->p == close) {
        r->p++;
        r->depth--;
        return true;
    }
    for (;;) {
        json_skip_space(r);
        json_t key = {0};
        if (object) {
            if (r->p >= r->end || *r->p != '"') {
                json_fail(r, "expected a name in quotes");
                return false;
            }
            if (!json_read_string(r, &key))
                return false;
            for (size_t i = 0; i < v->len; i++)
                if (v->keys[i].len == key.len &&
                    memcmp(v->keys[i].str, key.str, key.len) == 0) {
                    free(key.str);
                    json_fail(r, "a name given twice in one object");
                    return false;
                }
            json_skip_space(r);
            if (r->p >= r->end || *r->p != ':') {
                free(key.str);
                json_fail(r, "expected ':' after a name");
                return false;
            }
            r->p++;
        }
        xgrow(&v->items, &cap, v->len + 1, sizeof *v->items);
        if (object) {
            xgrow(&v->keys, &kcap, v->len + 1, sizeof *v->keys);
            v->keys[v->len] = key;
        }
        json_t *item = &v->items[v->len];
        memset(item, 0, sizeof *item);
        v->len++; /* counted now, so that json_free frees a half-read one */
        if (!json_read_value(r, item))
            return false;
        json_skip_space(r);
        if (r->p < r->end && *r->p == ',') {
            r->p++;
            continue;
        }
        if (r->p < r->end && *r->p == close) {
            r->p++;
            r->depth--;
            return true;
        }
        json_fail(r, object ? "expected ',' or '}'" : "expected ',' or ']'");
        return false;
    }
}

static bool json_read_value(json_reader_t *r, json_t *v)
{
    json_skip_space(r);
    if (r->p >= r->end) {
        json_fail(r, "expected a value");
        return false;
    }
    switch (*r->p) {
    case '{': r->p++; return json_read_members(r, v, true);
    case '[': r->p++; return json_read_members(r, v, false);
    case '"': return json_read_string(r, v);
    case 't': return json_literal(r, "true", JSON_TRUE, v);
    case 'f': return json_literal(r, "false", JSON_FALSE, v);
    case 'n': return json_literal(r, "null", JSON_NULL, v);
    default:
        if (*r->p == '-' || (*r->p >= '0' && *r->p <= '9'))
            return json_read_number(r, v);
        json_fail(r, "expected a value");
        return false;
    }
}

static void json_free_members(json_t *v)
{
    if (v->kind == JSON_STRING)
        free(v->str);
    if (v->kind == JSON_ARRAY || v->kind == JSON_OBJECT) {
        for (size_t i = 0; i < v->len; i++) {
            json_free_members(&v->items[i]);
            if (v->keys)
                free(v->keys[i].str);
        }
        free(v->items);
        free(v->keys);
    }
}

void json_free(json_t *v)
{
    if (!v)
        return;
    json_free_members(v);
    free(v);
}

json_t *json_parse(const char *text, size_t len, char *msg, size_t size)
{
    json_reader_t r = {(const unsigned char *)text,
                       (const unsigned char *)text + len,
                       (const unsigned char *)text,
                       0,
                       msg,
                       size,
                       false};
    json_t *v = xcalloc(1, sizeof *v);
    if (json_read_value(&r, v)) {
        json_skip_space(&r);
        if (r.p == r.end)
            return v;
        json_fail(&r, "text after the value");
    }
    json_free(v);
    return NULL;
}

const json_t *json_get(const json_t *obj, const char *name)
{
    if (!obj || obj->kind != JSON_OBJECT)
        return NULL;
    size_t n = strlen(name);
    for (size_t i = 0; i < obj->len; i++)
        if (obj->keys[i].len == n && memcmp(obj->keys[i].str, name, n) == 0)
            return &obj->items[i];
    return NULL;
}

bool json_get_count(const json_t *v, double max, size_t *out)
{
    if (!v || v->kind != JSON_NUMBER || v->number < 0 || v->number > max ||
        v->number != floor(v->number))
        return false;
    *out = (size_t)v->number;
    return true;
}

/* ---- the writer ------------------------------------------------------- */

void json_put_string(strbuf_t *b, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    strbuf_addn(b, "\"", 1);
    while (p < end) {
        const unsigned char *run = p;
        /* Plain printable ASCII is copied in one go. */
        while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
            p++;
        if (p > run)
            strbuf_addn(b, (const char *)run, (size_t)(p - run));
        if (p >= end)
            break;
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            strbuf_addn(b, e, 2);
            p++;
        } else if (c < 0x20) {
            switch (c) {
            case '\n': strbuf_add(b, "\\n"); break;
            case '\t': strbuf_add(b, "\\t"); break;
            case '\r': strbuf_add(b, "\\r"); break;
            default: strbuf_addf(b, "\\u%04x", c); break;
            }
            p++;
        } else {
            size_t n = source_utf8_len(p, (size_t)(end - p));
            if (n == 0) {
                strbuf_add(b, "\\ufffd"); /* not UTF-8: the replacement */
                p++;
            } else {
                strbuf_addn(b, (const char *)p, n);
                p += n;
            }
        }
    }
    strbuf_addn(b, "\"", 1);
}

void json_put_number(strbuf_t *b, double x)
{
    if (!isfinite(x))
        strbuf_add(b, "null");
    else if (x == floor(x) && fabs(x) < 9007199254740992.0)
        strbuf_addf(b, "%.0f", x);
    else
        strbuf_addf(b, "%.17g", x);
}

void json_put_value(strbuf_t *b, const json_t *v)
{
    switch (v->kind) {
    case JSON_NULL: strbuf_add(b, "null"); return;
    case JSON_FALSE: strbuf_add(b, "false"); return;
    case JSON_TRUE: strbuf_add(b, "true"); return;
    case JSON_NUMBER: json_put_number(b, v->number); return;
    case JSON_STRING: json_put_string(b, v->str, v->len); return;
    case JSON_ARRAY:
    case JSON_OBJECT: break;
    }
    bool object = v->kind == JSON_OBJECT;
    strbuf_add(b, object ? "{" : "[");
    for (size_t i = 0; i < v->len; i++) {
        if (i)
            strbuf_add(b, ",");
        if (object) {
            json_put_string(b, v->keys[i].str, v->keys[i].len);
            strbuf_add(b, ":");
        }
        json_put_value(b, &v->items[i]);
    }
    strbuf_add(b, object ? "}" : "]");
}
