/*
 * test_source.c — the source set, line/column lookup and the error report
 * format of lang/source.c.
 *
 * Expected columns and report texts are written out by hand from the
 * inputs (counting characters, not bytes), never taken from a run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lang/source.h"

/* diag_print's output for D, as a malloc'ed string. */
static char *print_to_string(const source_set_t *set, const diag_t *d)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    diag_print(f, set, d);
    fclose(f);
    return buf;
}

static void check_lc(const source_set_t *set, uint32_t file, uint32_t off,
                     unsigned line, unsigned col)
{
    unsigned l, c;
    source_line_col(set, file, off, &l, &c);
    if (l != line || c != col)
        fail_msg("offset %u: got %u:%u, expected %u:%u", (unsigned)off, l, c,
                 line, col);
}

static void test_add_copies_text(void **state)
{
    (void)state;
    source_set_t *set = source_set_new();
    char text[] = "a\0b";
    uint32_t f0 = source_add(set, "one.nh", text, 3);
    uint32_t f1 = source_add(set, "<repl>", "x", 1);
    assert_int_equal(f0, 0);
    assert_int_equal(f1, 1);
    text[0] = 'z'; /* the set holds its own copy */
    size_t len;
    const char *t = source_text(set, f0, &len);
    assert_int_equal(len, 3);
    assert_memory_equal(t, "a\0b", 3);
    assert_int_equal(t[3], '\0');
    assert_string_equal(source_name(set, f0), "one.nh");
    assert_string_equal(source_name(set, f1), "<repl>");
    assert_string_equal(source_text(set, f1, NULL), "x");
    /* many files: indices stay valid while the set grows */
    for (int i = 0; i < 100; i++) {
        char name[16];
        snprintf(name, sizeof name, "f%d", i);
        assert_int_equal(source_add(set, name, name, strlen(name)), 2 + i);
    }
    assert_string_equal(source_name(set, 2 + 57), "f57");
    assert_string_equal(source_text(set, 2 + 99, NULL), "f99");
    source_set_free(set);
    source_set_free(NULL);
}

static void test_line_col_ascii(void **state)
{
    (void)state;
    source_set_t *set = source_set_new();
    /* lines: "ab" "cd" "" "ef" */
    uint32_t f = source_add(set, "t", "ab\ncd\n\nef", 9);
    check_lc(set, f, 0, 1, 1);
    check_lc(set, f, 1, 1, 2);
    check_lc(set, f, 2, 1, 3); /* the newline itself */
    check_lc(set, f, 3, 2, 1);
    check_lc(set, f, 5, 2, 3);
    check_lc(set, f, 6, 3, 1);
    check_lc(set, f, 7, 4, 1);
    check_lc(set, f, 8, 4, 2);
    check_lc(set, f, 9, 4, 3);   /* end of text */
    check_lc(set, f, 500, 4, 3); /* past the end: clamped */

    uint32_t g = source_add(set, "u", "x\n", 2);
    check_lc(set, g, 2, 2, 1); /* after a final newline: an empty line */
    uint32_t e = source_add(set, "empty", "", 0);
    check_lc(set, e, 0, 1, 1);
    source_set_free(set);
}

static void test_line_col_utf8_and_tabs(void **state)
{
    (void)state;
    source_set_t *set = source_set_new();
    /* "λ" is 2 bytes, "→" 3, "𝑥" (U+1D465) 4; each is one column */
    const char *t = "λ=1\n→𝑥 y\n\tz\n\xff\xfe w";
    uint32_t f = source_add(set, "t", t, strlen(t));
    check_lc(set, f, 0, 1, 1);
    check_lc(set, f, 2, 1, 2); /* '=' */
    check_lc(set, f, 3, 1, 3); /* '1' */
    check_lc(set, f, 5, 2, 1);  /* '→' */
    check_lc(set, f, 8, 2, 2);  /* '𝑥' */
    check_lc(set, f, 12, 2, 3); /* ' ' */
    check_lc(set, f, 13, 2, 4); /* 'y' */
    check_lc(set, f, 15, 3, 1); /* tab */
    check_lc(set, f, 16, 3, 2); /* a tab is one column */
    /* bytes that are not UTF-8 count one each */
    check_lc(set, f, 18, 4, 1);
    check_lc(set, f, 19, 4, 2);
    check_lc(set, f, 21, 4, 4);
    source_set_free(set);
}

static void test_span_join(void **state)
{
    (void)state;
    src_span_t a = {0, 4, 7}, b = {0, 10, 12};
    src_span_t j = src_span_join(a, b);
    assert_int_equal(j.file, 0);
    assert_int_equal(j.begin, 4);
    assert_int_equal(j.end, 12);
    j = src_span_join(b, a);
    assert_int_equal(j.begin, 4);
    assert_int_equal(j.end, 12);
    src_span_t inner = {0, 5, 6};
    j = src_span_join(a, inner);
    assert_int_equal(j.begin, 4);
    assert_int_equal(j.end, 7);
    j = src_span_join(SRC_SPAN_NONE, b);
    assert_int_equal(j.begin, 10);
    j = src_span_join(a, SRC_SPAN_NONE);
    assert_int_equal(j.end, 7);
}

static int call_verror(diag_t *d, src_span_t sp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = diag_verror(d, sp, fmt, ap);
    va_end(ap);
    return r;
}

static void test_diag_first_error_wins(void **state)
{
    (void)state;
    diag_t d;
    diag_clear(&d);
    assert_false(d.set);
    src_span_t s1 = {0, 1, 2}, s2 = {0, 5, 9};
    assert_int_equal(diag_error(&d, s1, "first %d", 1), -1);
    assert_int_equal(diag_error(&d, s2, "second %s", "x"), -1);
    assert_true(d.set);
    assert_string_equal(d.msg, "first 1");
    assert_int_equal(d.span.begin, 1);
    assert_int_equal(d.span.end, 2);
    diag_clear(&d);
    assert_false(d.set);
    assert_int_equal(call_verror(&d, s2, "v%s%d", "err", 7), -1);
    assert_string_equal(d.msg, "verr7");
    assert_int_equal(d.span.begin, 5);

    /* an overlong message is cut, not overflowed */
    diag_clear(&d);
    char big[3000];
    memset(big, 'm', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    diag_error(&d, s1, "%s", big);
    assert_int_equal(strlen(d.msg), DIAG_MSG_MAX - 1);
}

static void expect_print(const source_set_t *set, src_span_t sp,
                         const char *msg, const char *expected)
{
    diag_t d;
    diag_clear(&d);
    diag_error(&d, sp, "%s", msg);
    char *out = print_to_string(set, &d);
    assert_string_equal(out, expected);
    free(out);
}

static void test_print_caret(void **state)
{
    (void)state;
    source_set_t *set = source_set_new();
    const char *t = "param a = 1\nprint b + c\n";
    uint32_t f = source_add(set, "f.nh", t, strlen(t));
    /* "b + c" is bytes 18..23 */
    src_span_t sp = {f, 18, 23};
    expect_print(set, sp, "unknown name 'b'",
                 "f.nh:2:7: error: unknown name 'b'\n"
                 "print b + c\n"
                 "      ^~~~~\n");
    /* a one-character span: the caret alone */
    src_span_t one = {f, 6, 7};
    expect_print(set, one, "x",
                 "f.nh:1:7: error: x\n"
                 "param a = 1\n"
                 "      ^\n");
    /* an empty span at the end of a line: the caret after it */
    src_span_t eol = {f, 11, 11};
    expect_print(set, eol, "unexpected end of line",
                 "f.nh:1:12: error: unexpected end of line\n"
                 "param a = 1\n"
                 "           ^\n");
    /* a span that runs onto the next line: no tildes */
    src_span_t multi = {f, 10, 17};
    expect_print(set, multi, "m",
                 "f.nh:1:11: error: m\n"
                 "param a = 1\n"
                 "          ^\n");
    source_set_free(set);
}

static void test_print_tabs_utf8(void **state)
{
    (void)state;
    source_set_t *set = source_set_new();
    const char *t = "\tprint\tzz\n";
    uint32_t f = source_add(set, "<repl>", t, strlen(t));
    src_span_t sp = {f, 7, 9};
    expect_print(set, sp, "e",
                 "<repl>:1:8: error: e\n"
                 "\tprint\tzz\n"
                 "\t     \t^~\n");

    /* "λ→" before the span: two columns, four bytes */
    const char *u = "λ→ = ab + é\n";
    uint32_t g = source_add(set, "u.nh", u, strlen(u));
    /* "ab + é": bytes 8..15 (é is 2 bytes), 6 characters */
    src_span_t su = {g, 8, 15};
    expect_print(set, su, "e",
                 "u.nh:1:6: error: e\n"
                 "λ→ = ab + é\n"
                 "     ^~~~~~\n");
    source_set_free(set);
}

static void test_print_odd_lines(void **state)
{
    (void)state;
    source_set_t *set = source_set_new();
    /* control bytes and stray bytes show as '?', one column each */
    const char t[] = "a\0b\x01\xff c";
    uint32_t f = source_add(set, "bin", t, sizeof t - 1);
    src_span_t sp = {f, 6, 7};
    expect_print(set, sp, "e",
                 "bin:1:7: error: e\n"
                 "a?b?? c\n"
                 "      ^\n");
    /* a CRLF line shows without its CR; the last line has no newline */
    const char *w = "print 1\r\nprint x";
    uint32_t g = source_add(set, "w.nh", w, strlen(w));
    src_span_t sx = {g, 15, 16};
    expect_print(set, sx, "e",
                 "w.nh:2:7: error: e\n"
                 "print x\n"
                 "      ^\n");
    src_span_t s1 = {g, 6, 7};
    expect_print(set, s1, "e",
                 "w.nh:1:7: error: e\n"
                 "print 1\n"
                 "      ^\n");
    source_set_free(set);
}

/* What a terminal would obey rather than show is '?' in the message, the
 * file's name and the echoed line alike (issue 31: `load` of a name with
 * ESC [ 31 m and ESC ] 0 ; TITLE BEL coloured the terminal and set its
 * title through the message, which the echoed line was not): control
 * bytes but the tab, C1 controls (U+009B is CSI), stray bytes; UTF-8
 * letters stay. */
static void test_print_escapes(void **state)
{
    (void)state;
    diag_t d = {0};
    diag_error(&d, SRC_SPAN_NONE, "cannot read '%s'",
               "a\x1b[31mRED\x1b]0;TITLE\x07\xc2\x9b\xffx\tθ");
    assert_string_equal(d.msg, "cannot read 'a?[31mRED?]0;TITLE???x\tθ'");
    source_set_t *set = source_set_new();
    const char t[] = "load \"\x1b]0;T\x07\xc2\x9b\"";
    uint32_t f = source_add(set, "ev\x1b[2Jil.nh", t, sizeof t - 1);
    src_span_t sp = {f, 5, sizeof t - 1};
    expect_print(set, sp, "x\x1b[0m",
                 "ev?[2Jil.nh:1:6: error: x?[0m\n"
                 "load \"?]0;T??\"\n"
                 "     ^~~~~~~~~\n");
    source_set_free(set);
}

static void test_print_no_file(void **state)
{
    (void)state;
    source_set_t *set = source_set_new();
    expect_print(set, SRC_SPAN_NONE, "unknown option '-z'",
                 "nh: error: unknown option '-z'\n");
    expect_print(NULL, SRC_SPAN_NONE, "m", "nh: error: m\n");
    source_set_free(set);
}

/* A long line shows as a window of 160 bytes around the column, marked
 * with "...", and the caret still points at the column. */
static void test_print_long_line_window(void **state)
{
    (void)state;
    char line[1001];
    for (int i = 0; i < 1000; i++)
        line[i] = (char)('a' + i % 26);
    line[1000] = '\0';
    source_set_t *set = source_set_new();
    uint32_t f = source_add(set, "long.nh", line, 1000);
    diag_t d = {0};
    diag_error(&d, (src_span_t){f, 600, 603}, "here");
    char *got = print_to_string(set, &d);
    /* window [520, 680): "..." + 160 bytes + "...", caret 3 + 80 in. */
    char want[512];
    int n = snprintf(want, sizeof want, "long.nh:1:601: error: here\n...%.160s...\n",
                     line + 520);
    memset(want + n, ' ', 83);
    snprintf(want + n + 83, sizeof want - (size_t)n - 83, "^~~\n");
    assert_string_equal(got, want);
    free(got);
    source_set_free(set);
}

/* A text numbered from a first line (a REPL's or a notebook's stream):
 * LINE counts from it, in places and in the report, whose source line and
 * caret are still the text's own. */
static void test_first_line(void **state)
{
    (void)state;
    source_set_t *set = source_set_new();
    uint32_t f = source_add_at(set, "<repl>", 12, "coord x\nprint y\n", 16);
    check_lc(set, f, 0, 12, 1);
    check_lc(set, f, 14, 13, 7);
    assert_int_equal(source_line_count(set, f), 2);
    diag_t d = {0};
    diag_error(&d, (src_span_t){f, 14, 15}, "unknown name 'y'");
    char *out = print_to_string(set, &d);
    assert_string_equal(out, "<repl>:13:7: error: unknown name 'y'\n"
                             "print y\n"
                             "      ^\n");
    free(out);
    /* how many lines a text spans */
    uint32_t a = source_add(set, "a", "x", 1);
    uint32_t b = source_add(set, "b", "", 0);
    uint32_t c = source_add(set, "c", "x\n\ny", 4);
    assert_int_equal(source_line_count(set, a), 1);
    assert_int_equal(source_line_count(set, b), 0);
    assert_int_equal(source_line_count(set, c), 3);
    source_set_free(set);
}

/* A released text's index goes to the next text: a long session keeps a
 * set of bounded size. */
static void test_release_reuses(void **state)
{
    (void)state;
    source_set_t *set = source_set_new();
    uint32_t keep = source_add(set, "keep", "param a = 1\n", 12);
    for (int i = 0; i < 10000; i++) {
        uint32_t f = source_add(set, "<repl>", "print 1\n", 8);
        assert_int_equal(source_live(set), 2);
        source_release(set, f);
        source_release(set, f); /* twice: nothing */
    }
    assert_true(source_slots(set) <= 2);
    assert_int_equal(source_live(set), 1);
    assert_string_equal(source_name(set, keep), "keep");
    assert_string_equal(source_text(set, keep, NULL), "param a = 1\n");
    source_release(set, SRC_NO_FILE);
    source_set_free(set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_copies_text),
        cmocka_unit_test(test_line_col_ascii),
        cmocka_unit_test(test_line_col_utf8_and_tabs),
        cmocka_unit_test(test_span_join),
        cmocka_unit_test(test_diag_first_error_wins),
        cmocka_unit_test(test_print_caret),
        cmocka_unit_test(test_print_tabs_utf8),
        cmocka_unit_test(test_print_odd_lines),
        cmocka_unit_test(test_print_no_file),
        cmocka_unit_test(test_print_escapes),
        cmocka_unit_test(test_print_long_line_window),
        cmocka_unit_test(test_first_line),
        cmocka_unit_test(test_release_reuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
