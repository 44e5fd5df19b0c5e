/*
 * test_json.c — the strict JSON reader and the writer (interp/cli/json.c)
 * against RFC 8259: what it accepts and what each value reads as, what
 * it refuses (with the byte), and that what it writes reads back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "interp/cli/json.h"

static json_t *parse(const char *text)
{
    char msg[160];
    return json_parse(text, strlen(text), msg, sizeof msg);
}

/* The error message for TEXT (LEN bytes), which must be refused. */
static const char *refused(const char *text, size_t len)
{
    static char msg[160];
    msg[0] = '\0';
    json_t *v = json_parse(text, len, msg, sizeof msg);
    if (v) {
        json_free(v);
        fail_msg("accepted: %.*s", (int)len, text);
    }
    return msg;
}
#define REFUSED(s) refused((s), sizeof(s) - 1)

static void test_values(void **state)
{
    (void)state;
    json_t *v = parse(" {\"a\": [1, -2.5e3, 0, -0, 1E2, true, false, null],"
                      " \"b\": {\"c\": \"d\"}, \"\": \"\"}\n");
    assert_non_null(v);
    assert_int_equal(v->kind, JSON_OBJECT);
    assert_int_equal(v->len, 3);
    const json_t *a = json_get(v, "a");
    assert_non_null(a);
    assert_int_equal(a->kind, JSON_ARRAY);
    assert_int_equal(a->len, 8);
    assert_true(a->items[0].number == 1.0);
    assert_true(a->items[1].number == -2500.0);
    assert_true(a->items[2].number == 0.0);
    assert_true(a->items[4].number == 100.0);
    assert_int_equal(a->items[5].kind, JSON_TRUE);
    assert_int_equal(a->items[6].kind, JSON_FALSE);
    assert_int_equal(a->items[7].kind, JSON_NULL);
    const json_t *c = json_get(json_get(v, "b"), "c");
    assert_non_null(c);
    assert_string_equal(c->str, "d");
    assert_non_null(json_get(v, ""));
    assert_null(json_get(v, "z"));
    assert_null(json_get(a, "a")); /* not an object */
    json_free(v);

    /* 0.1 reads as the double nearest to it, as strtod gives. */
    v = parse("0.1");
    assert_true(v->number == 0.1);
    json_free(v);
}

static void test_strings(void **state)
{
    (void)state;
    /* Every escape; \u00e9 is é (C3 A9), a surrogate pair 𝄞 (F0 9D 84
     * 9E), \u0000 a NUL kept inside the length. */
    json_t *v = parse("\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 "
                      "\\ud834\\udd1e \\u0000.\"");
    assert_non_null(v);
    static const char want[] = "\" \\ / \b \f \n \r \t \xC3\xA9 "
                               "\xF0\x9D\x84\x9E \0.";
    assert_int_equal(v->len, sizeof want - 1);
    assert_memory_equal(v->str, want, sizeof want - 1);
    json_free(v);
    /* Raw UTF-8 passes through. */
    v = parse("\"\xCE\xB8 = \xE2\x88\x82\"");
    assert_string_equal(v->str, "\xCE\xB8 = \xE2\x88\x82");
    json_free(v);
}

static void test_refused(void **state)
{
    (void)state;
    assert_non_null(strstr(REFUSED(""), "expected a value at byte 0"));
    assert_non_null(strstr(REFUSED("  "), "expected a value at byte 2"));
    assert_non_null(strstr(REFUSED("{\"a\" 1}"), "expected ':' after a name at byte 5"));
    assert_non_null(strstr(REFUSED("{\"a\":1,}"), "expected a name"));
    assert_non_null(strstr(REFUSED("[1,]"), "expected a value at byte 3"));
    assert_non_null(strstr(REFUSED("[1 2]"), "expected ',' or ']'"));
    assert_non_null(strstr(REFUSED("{a:1}"), "expected a name in quotes"));
    assert_non_null(strstr(REFUSED("{'a':1}"), "expected a name in quotes"));
    assert_non_null(strstr(REFUSED("{\"a\":1,\"a\":2}"), "a name given twice"));
    assert_non_null(strstr(REFUSED("01"), "leading zero"));
    assert_non_null(strstr(REFUSED("+1"), "expected a value"));
    assert_non_null(strstr(REFUSED(".5"), "expected a value"));
    assert_non_null(strstr(REFUSED("1."), "after the decimal point"));
    assert_non_null(strstr(REFUSED("1e"), "in the exponent"));
    assert_non_null(strstr(REFUSED("-"), "expected a digit"));
    assert_non_null(strstr(REFUSED("1e999"), "number out of range at byte 0"));
    assert_non_null(strstr(REFUSED("NaN"), "expected a value"));
    assert_non_null(strstr(REFUSED("Infinity"), "expected a value"));
    assert_non_null(strstr(REFUSED("tru"), "expected a value"));
    assert_non_null(strstr(REFUSED("true false"), "text after the value at byte 5"));
    assert_non_null(strstr(REFUSED("{} x"), "text after the value"));
    assert_non_null(strstr(REFUSED("/* c */ 1"), "expected a value"));
    assert_non_null(strstr(REFUSED("\"abc"), "unterminated string"));
    assert_non_null(strstr(REFUSED("\"a\\"), "unterminated string"));
    assert_non_null(strstr(REFUSED("\"a\nb\""), "control character"));
    assert_non_null(strstr(REFUSED("\"a\\x\""), "unknown escape in a string at byte 3"));
    assert_non_null(strstr(REFUSED("\"\\u12\""), "four hex digits"));
    assert_non_null(strstr(REFUSED("\"\\ud834\""), "unpaired high surrogate"));
    assert_non_null(strstr(REFUSED("\"\\ud834\\u0041\""), "unpaired high surrogate"));
    assert_non_null(strstr(REFUSED("\"\\udd1e\""), "unpaired low surrogate"));
    /* Invalid UTF-8: a stray continuation byte, an overlong '/', an
     * encoded surrogate, a code point past U+10FFFF, a cut sequence. */
    assert_non_null(strstr(REFUSED("\"\x80\""), "invalid UTF-8 in a string at byte 1"));
    assert_non_null(strstr(REFUSED("\"\xC0\xAF\""), "invalid UTF-8"));
    assert_non_null(strstr(REFUSED("\"\xED\xA0\x80\""), "invalid UTF-8"));
    assert_non_null(strstr(REFUSED("\"\xF4\x90\x80\x80\""), "invalid UTF-8"));
    assert_non_null(strstr(REFUSED("\"\xE2\x88\""), "invalid UTF-8"));
    /* A NUL outside a string. */
    assert_non_null(strstr(refused("1\0", 2), "text after the value at byte 1"));
}

/* Nesting: JSON_MAX_DEPTH levels are read, one more is refused (and a
 * hostile depth does not reach the stack's end). */
static void test_depth(void **state)
{
    (void)state;
    char deep[2 * 100000 + 1];
    for (int levels = JSON_MAX_DEPTH; levels <= JSON_MAX_DEPTH + 1; levels++) {
        memset(deep, '[', (size_t)levels);
        memset(deep + levels, ']', (size_t)levels);
        char msg[160];
        json_t *v = json_parse(deep, 2 * (size_t)levels, msg, sizeof msg);
        if (levels == JSON_MAX_DEPTH) {
            assert_non_null(v);
            json_free(v);
        } else {
            assert_null(v);
            assert_non_null(strstr(msg, "nested deeper than 64 levels"));
        }
    }
    memset(deep, '[', 100000);
    memset(deep + 100000, ']', 100000);
    assert_non_null(strstr(refused(deep, 200000), "nested deeper"));
    /* Objects too, and a half-read object is freed (ASan would see). */
    assert_non_null(strstr(REFUSED("{\"a\":{\"b\":[1,{\"c\":tru}]}}"),
                           "expected a value"));
}

static void test_writer(void **state)
{
    (void)state;
    strbuf_t b;
    strbuf_init(&b);
    /* Control characters escaped; UTF-8 kept; a stray byte, an overlong
     * form and a cut sequence each become U+FFFD; NUL is \u0000. */
    static const char s[] = "a\"b\\c\n\t\r\x01\x7f \xCE\xB8 \xff \xC0\xAF \xE2\x88";
    json_put_string(&b, s, sizeof s - 1);
    json_put_string(&b, "\0x", 2);
    assert_string_equal(b.data,
                        "\"a\\\"b\\\\c\\n\\t\\r\\u0001\x7f \xCE\xB8 \\ufffd "
                        "\\ufffd\\ufffd \\ufffd\\ufffd\"\"\\u0000x\"");
    strbuf_free(&b);

    json_put_number(&b, 3);
    strbuf_add(&b, " ");
    json_put_number(&b, -0.1);
    strbuf_add(&b, " ");
    json_put_number(&b, 1.0 / 0.0);
    strbuf_add(&b, " ");
    json_put_number(&b, 1e300);
    assert_string_equal(b.data, "3 -0.10000000000000001 null 1.0000000000000001e+300");
    strbuf_free(&b);

    /* What the writer writes reads back to the same value. */
    const char *text = "{\"id\":[1,\"x\\u0000y\",{\"k\":null,\"t\":true}],"
                       "\"f\":false,\"n\":-2.5}";
    json_t *v = parse(text);
    assert_non_null(v);
    json_put_value(&b, v);
    assert_string_equal(b.data, text);
    char msg[160];
    json_t *w = json_parse(b.data, b.len, msg, sizeof msg);
    assert_non_null(w);
    assert_int_equal(json_get(w, "id")->items[1].len, 3);
    json_free(w);
    json_free(v);
    strbuf_free(&b);
}

static void test_count(void **state)
{
    (void)state;
    json_t *v = parse("[3, 3.5, -1, 1e10, \"3\"]");
    size_t n = 0;
    assert_true(json_get_count(&v->items[0], 10, &n));
    assert_int_equal(n, 3);
    assert_false(json_get_count(&v->items[1], 10, &n));
    assert_false(json_get_count(&v->items[2], 10, &n));
    assert_false(json_get_count(&v->items[3], 1e9, &n));
    assert_false(json_get_count(&v->items[4], 10, &n));
    assert_false(json_get_count(NULL, 10, &n));
    json_free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),  cmocka_unit_test(test_strings),
        cmocka_unit_test(test_refused), cmocka_unit_test(test_depth),
        cmocka_unit_test(test_writer),  cmocka_unit_test(test_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
