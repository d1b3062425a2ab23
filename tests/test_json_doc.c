/* The strict JSON front-end (text/json_doc.c): the tree it builds is the one
 * libyaml's path builds for the same text, node for node; what JSON refuses
 * fails at its line and column; the limits hold exactly. */
#define _POSIX_C_SOURCE 200809L /* opendir */
#include "test_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "text/file.h"
#include "text/json_doc.h"
#include "text/safetensors.h"

#include "same_tree.h"

/* The text in a buffer of exactly `len` bytes, no NUL after it: a read past
 * the end is a sanitizer report. */
static char *exact_copy(const char *text, size_t len)
{
    char *buf = malloc(len ? len : 1);
    assert_non_null(buf);
    memcpy(buf, text, len);
    return buf;
}

static int parse_json(kvshard__doc *doc, const char *text, size_t len, kvshard_error *err)
{
    kvshard_allocator a = kvshard_alloc__allocator_or_default(NULL);
    kvshard_error__reset(err);
    return kvshard_json_doc__parse(doc, text, len, "t.json", &a, err);
}

static int parse_yaml(kvshard__doc *doc, const char *text, size_t len, kvshard_error *err)
{
    kvshard_allocator a = kvshard_alloc__allocator_or_default(NULL);
    kvshard_error__reset(err);
    return kvshard_doc__parse(doc, text, len, "t.json", &a, err);
}

/* ---- the same tree ---------------------------------------------------------------- */

/* Both front-ends accept `text` and give the same tree. */
static void assert_same_tree(const char *text, size_t len)
{
    char *buf = exact_copy(text, len);
    kvshard__doc j, y;
    kvshard_error err;
    if (parse_yaml(&y, buf, len, &err) != KVSHARD_OK)
        fail_msg("libyaml refused %.60s: %s", text, err.message);
    if (parse_json(&j, buf, len, &err) != KVSHARD_OK)
        fail_msg("the JSON front-end refused %.60s: %s", text, err.message);
    char why[256];
    if (!same_tree(&j, &y, why, sizeof why))
        fail_msg("%.60s: %s", text, why);
    kvshard_tape__doc_free(&j);
    kvshard_tape__doc_free(&y);
    free(buf);
}

static void test_same_tree_corpus(void **state)
{
    (void)state;
    static const char *const corpus[] = {
        "{}",
        "[]",
        "{\"a\":{}}",
        "[[]]",
        "[[], [[]], {}, [{}]]",
        "{\"a\": 1, \"b\": [true, false, null], \"c\": {\"d\": \"e\", \"f\": [[1], [2, [3]]]}}",
        /* every escape */
        "[\"\\\"\", \"\\\\\", \"\\/\", \"\\b\", \"\\f\", \"\\n\", \"\\r\", \"\\t\", \"\\u0041\", "
        "\"\\u00e9\", \"\\u00C9\", \"\\u4e2d\", \"\\uFFFD\", \"\\u001f\", \"a\\nb\\tc\", "
        "\"x\\\\\\\"y\", \"\\u0041\\u0042 and more\"]",
        "{\"k\\ney\": \"v\", \"key\": \"w\"}",
        /* unicode as written */
        "[\"\xc3\xa9\", \"\xe4\xb8\xad\xe6\x96\x87\", \"\xf0\x9f\x98\x80\", \"a\xc2\xa0z\"]",
        "{\"\xc3\xa9t\xc3\xa9\": \"\xe2\x82\xac\"}",
        /* numbers of every JSON form */
        "[0, -0, 1, -1, 10, 12345678901234567890, 0.5, -0.5, 10.25, 1e5, 1E5, 1e+5, 1e-5, "
        "1.5e10, -1.25E-3, 0e0, -0.0E+0]",
        /* strings */
        "[\"\", \" \", \" a \", \"a b\", \"true\", \"1\", \"null\", \"~\", \"#x\", \"a: b\", "
        "\"- x\", \"[x]\", \"{x}\", \"&a\", \"*a\", \"!x\", \"%x\", \"@x\", \"`x\", \"'x'\"]",
        "\"a top-level string\"",
        "42",
        "-1.5e3",
        "true",
        "null",
        /* whitespace of every kind JSON has */
        "\n{\r\n  \"a\" : [ 1 , 2 ] ,\n  \"b\":{ }\n}\n",
        "\xef\xbb\xbf{\"bom\": 1}",
        /* the tests' safetensors headers and index */
        "{\"t\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}",
        "{\"__metadata__\":{\"format\":\"pt\"},\"model.embed.weight\":{\"dtype\":\"BF16\","
        "\"shape\":[2,3],\"data_offsets\":[0,12]},\"model.norm.weight\":{\"dtype\":\"F32\","
        "\"shape\":[],\"data_offsets\":[12,16]}}        ",
        "{\n  \"metadata\": {\n    \"total_size\": 16\n  },\n  \"weight_map\": {\n    "
        "\"model.embed.weight\": \"model-00001-of-00002.safetensors\",\n    "
        "\"model.norm.weight\": \"model-00002-of-00002.safetensors\"\n  }\n}\n",
    };
    for (size_t i = 0; i < sizeof corpus / sizeof corpus[0]; i++)
        assert_same_tree(corpus[i], strlen(corpus[i]));
}

/* Larger texts: a long string, a mapping with a key index, a long list, and
 * deep nesting of both kinds. */
static void test_same_tree_large(void **state)
{
    (void)state;
    size_t cap = 400000, n = 0;
    char *t = malloc(cap);
    assert_non_null(t);
    n += (size_t)snprintf(t + n, cap - n, "{\"long\": \"");
    for (size_t i = 0; i < 100000; i++)
        t[n++] = (char)('a' + i % 26);
    n += (size_t)snprintf(t + n, cap - n, "\", \"escaped long\": \"");
    for (size_t i = 0; i < 5000; i++)
        n += (size_t)snprintf(t + n, cap - n, "x\\n\\u00e9");
    n += (size_t)snprintf(t + n, cap - n, "\", \"keys\": {");
    for (size_t i = 0; i < 500; i++)
        n += (size_t)snprintf(t + n, cap - n, "%s\"key %zu\": %zu", i ? ", " : "", i, i);
    n += (size_t)snprintf(t + n, cap - n, "}, \"list\": [");
    for (size_t i = 0; i < 5000; i++)
        n += (size_t)snprintf(t + n, cap - n, "%s%zu.5", i ? "," : "", i);
    n += (size_t)snprintf(t + n, cap - n, "], \"deep\": ");
    for (size_t i = 0; i < 30; i++)
        n += (size_t)snprintf(t + n, cap - n, "[{\"d\": ");
    n += (size_t)snprintf(t + n, cap - n, "0");
    for (size_t i = 0; i < 30; i++)
        n += (size_t)snprintf(t + n, cap - n, "}]");
    n += (size_t)snprintf(t + n, cap - n, "}");
    assert_true(n < cap);
    assert_same_tree(t, n);

    /* The key index answers on the JSON tree. */
    kvshard__doc doc;
    kvshard_error err;
    tu_assert_ok(parse_json(&doc, t, n, &err), &err);
    kvshard__node root = kvshard_tape__doc_root(&doc), keys, v;
    assert_true(kvshard_tape__map_get(&doc, &root, "keys", &keys));
    assert_int_equal(keys.count, 500);
    assert_true(kvshard_tape__map_get(&doc, &keys, "key 437", &v));
    assert_true(kvshard_tape__scalar_is(&v, "437"));
    assert_false(kvshard_tape__map_get(&doc, &keys, "key 500", &v));
    assert_true(kvshard_tape__map_get(&doc, &root, "escaped long", &v));
    assert_int_equal(v.count, 5000 * 4); /* x, a newline, and é's two bytes */
    assert_memory_equal(v.text, "x\n\xc3\xa9x\n", 6);
    kvshard_tape__doc_free(&doc);
    free(t);
}

/* Every model config the repository ships is JSON: the same tree both ways. */
static void test_same_tree_shipped_configs(void **state)
{
    (void)state;
    const char *dirs[] = {KVSHARD_EXAMPLES "/models", KVSHARD_TEST_DATA};
    size_t files = 0;
    for (size_t d = 0; d < sizeof dirs / sizeof dirs[0]; d++) {
        DIR *dir = opendir(dirs[d]);
        assert_non_null(dir);
        struct dirent *e;
        while ((e = readdir(dir)) != NULL) {
            size_t l = strlen(e->d_name);
            if (l < 5 || strcmp(e->d_name + l - 5, ".json") != 0)
                continue;
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", dirs[d], e->d_name);
            kvshard_allocator a = kvshard_alloc__allocator_or_default(NULL);
            char *text = NULL;
            size_t len = 0;
            kvshard_error err;
            kvshard_error__reset(&err);
            tu_assert_ok(kvshard_file__read_file(&text, &len, &a, path, &err), &err);
            kvshard__doc y;
            /* Files that libyaml refuses are the loader's tests, not JSON's. */
            if (parse_yaml(&y, text, len, &err) == KVSHARD_OK) {
                kvshard_tape__doc_free(&y);
                assert_same_tree(text, len);
                files++;
            }
            kvshard_alloc__free(&a, text);
        }
        closedir(dir);
    }
    assert_true(files >= 30);
}

/* Where the two differ by design: libyaml refuses surrogate escapes even in
 * pairs; JSON writes a character above U+FFFF as one. */
static void test_surrogate_pairs(void **state)
{
    (void)state;
    const char *text = "[\"\\ud83d\\ude00\", \"a\\uD834\\uDD1Eb\"]";
    kvshard__doc doc;
    kvshard_error err;
    tu_assert_ok(parse_json(&doc, text, strlen(text), &err), &err);
    kvshard__node root = kvshard_tape__doc_root(&doc);
    kvshard__node s0 = kvshard_tape__seq_item(&doc, &root, 0),
                  s1 = kvshard_tape__seq_item(&doc, &root, 1);
    assert_int_equal(s0.count, 4);
    assert_memory_equal(s0.text, "\xf0\x9f\x98\x80", 4); /* U+1F600 */
    assert_int_equal(s1.count, 6);
    assert_memory_equal(s1.text,
                        "a\xf0\x9d\x84\x9e"
                        "b",
                        6); /* U+1D11E */
    assert_int_equal(s1.style, KVSHARD__VALUE_QUOTED);
    assert_int_equal(s1.offset, 17);
    kvshard_tape__doc_free(&doc);
}

/* ---- refusals ---------------------------------------------------------------------- */

typedef struct refusal {
    const char *text;
    size_t len; /* 0: strlen */
    int code;
    int line, column;
    size_t offset;
    const char *message;
} refusal;

#define VALUE "expected a JSON value (an object, an array, a string, a number, true, false or null)"

static void test_refusals(void **state)
{
    (void)state;
    static const refusal cases[] = {
        {"", 0, KVSHARD_ESYNTAX, 1, 1, 0, VALUE ", found the end of the text (the text is empty)"},
        {"  \n ", 0, KVSHARD_ESYNTAX, 2, 2, 4,
         "found the end of the text (the text is only whitespace)"},
        /* trailing commas, at the comma */
        {"[1,]", 0, KVSHARD_ESYNTAX, 1, 3, 2,
         "expected a value after ',', found ']': JSON allows no trailing comma"},
        {"{\n  \"a\": 1,\n}", 0, KVSHARD_ESYNTAX, 2, 9, 10,
         "expected a key after ',', found '}': JSON allows no trailing comma"},
        {"[1,\r\n2,\r\n]", 0, KVSHARD_ESYNTAX, 2, 2, 6, "JSON allows no trailing comma"},
        {"\r[1,]", 0, KVSHARD_ESYNTAX, 2, 3, 3, "JSON allows no trailing comma"},
        /* comments */
        {"[1] // note", 0, KVSHARD_ESYNTAX, 1, 5, 4,
         "expected the end of the text after the JSON value, found '/' (JSON has no comments)"},
        {"/* c */ [1]", 0, KVSHARD_ESYNTAX, 1, 1, 0, VALUE ", found '/' (JSON has no comments)"},
        {"{\"a\": 1, # c\n}", 0, KVSHARD_ESYNTAX, 1, 10, 9,
         "expected a key in double quotes after ',', found '#'"},
        /* single quotes */
        {"{'a': 1}", 0, KVSHARD_ESYNTAX, 1, 2, 1,
         "expected a key in double quotes or '}', found a single quote (JSON strings take double "
         "quotes)"},
        {"['a']", 0, KVSHARD_ESYNTAX, 1, 2, 1, VALUE ", found a single quote"},
        /* YAML's plain words */
        {"{a: 1}", 0, KVSHARD_ESYNTAX, 1, 2, 1,
         "expected a key in double quotes or '}', found 'a'"},
        {"[True]", 0, KVSHARD_ESYNTAX, 1, 2, 1, VALUE ", found 'True'"},
        {"[tru", 0, KVSHARD_ESYNTAX, 1, 2, 1, VALUE ", found 'tru'"},
        {"a: 1", 0, KVSHARD_ESYNTAX, 1, 1, 0, VALUE ", found 'a'"},
        /* numbers */
        {"[01]", 0, KVSHARD_ESYNTAX, 1, 2, 1, "a number with a leading zero"},
        {"[-01]", 0, KVSHARD_ESYNTAX, 1, 2, 1, "a number with a leading zero"},
        {"[1.]", 0, KVSHARD_ESYNTAX, 1, 4, 3,
         "expected a digit after the decimal point, found ']'"},
        {"[1e+]", 0, KVSHARD_ESYNTAX, 1, 5, 4, "expected a digit of the exponent, found ']'"},
        {"[-]", 0, KVSHARD_ESYNTAX, 1, 3, 2, "expected a digit after '-', found ']'"},
        {"[- 1]", 0, KVSHARD_ESYNTAX, 1, 3, 2, "expected a digit after '-', found a space"},
        {"[.5]", 0, KVSHARD_ESYNTAX, 1, 2, 1, VALUE ", found '.'"},
        {"[+1]", 0, KVSHARD_ESYNTAX, 1, 2, 1, VALUE ", found '+'"},
        {"[0x10]", 0, KVSHARD_ESYNTAX, 1, 3, 2,
         "expected ',' or ']' after a value in an array, found 'x10'"},
        {"[NaN]", 0, KVSHARD_ESYNTAX, 1, 2, 1, "found NaN: JSON has no NaN or Infinity"},
        {"[Infinity]", 0, KVSHARD_ESYNTAX, 1, 2, 1, "found Infinity: JSON has no NaN or Infinity"},
        {"[-Infinity]", 0, KVSHARD_ESYNTAX, 1, 2, 1, "found Infinity: JSON has no NaN or Infinity"},
        /* strings */
        {"[\"a\tb\"]", 0, KVSHARD_ESYNTAX, 1, 4, 3,
         "the control character U+0009 inside a string: JSON writes it as an escape (\\u0009 or "
         "\\t)"},
        {"[\"a\nb\"]", 0, KVSHARD_ESYNTAX, 1, 4, 3,
         "expected '\"' before the end of the line: a JSON string holds no line break"},
        {"[\"\\x\"]", 0, KVSHARD_ESYNTAX, 1, 3, 2,
         "expected an escape (\\\", \\\\, \\/, \\b, \\f, \\n, \\r, \\t or \\u and four hex digits) "
         "after the backslash, found 'x'"},
        {"[\"\\'\"]", 0, KVSHARD_ESYNTAX, 1, 3, 2, "after the backslash, found a single quote"},
        {"[\"\\u12G4\"]", 0, KVSHARD_ESYNTAX, 1, 3, 2, "expected four hex digits after \\u"},
        {"[\"\\u12", 0, KVSHARD_ESYNTAX, 1, 3, 2, "expected four hex digits after \\u"},
        {"[\"\\", 0, KVSHARD_ESYNTAX, 1, 4, 3,
         "expected '\"' to close the string that begins at line 1, column 2, found the end of "
         "the text"},
        {"[\"\\ud800\"]", 0, KVSHARD_ESYNTAX, 1, 3, 2,
         "\\uD800 is a high surrogate not followed by a low one"},
        {"[\"\\ud800\\u0041\"]", 0, KVSHARD_ESYNTAX, 1, 3, 2, "not followed by a low one"},
        {"[\"ab\\udc00\"]", 0, KVSHARD_ESYNTAX, 1, 5, 4,
         "\\uDC00 is a low surrogate with no high surrogate before it"},
        {"[\"\\u0000\"]", 0, KVSHARD_ETYPE, 1, 2, 1, "a string holds a NUL character"},
        {"[\"abc", 0, KVSHARD_ESYNTAX, 1, 6, 5,
         "expected '\"' to close the string that begins at line 1, column 2"},
        /* UTF-8, at the sequence's first byte */
        {"[\"\xff\"]", 0, KVSHARD_EUTF8, 1, 3, 2,
         "invalid UTF-8 (a sequence that starts with the byte 0xFF, at byte offset 2)"},
        {"[\"a\xc0\xaf\"]", 0, KVSHARD_EUTF8, 1, 4, 3, "the byte 0xC0"},        /* overlong '/' */
        {"[\"\xe0\x80\xaf\"]", 0, KVSHARD_EUTF8, 1, 3, 2, "the byte 0xE0"},     /* overlong */
        {"[\"\xed\xa0\x80\"]", 0, KVSHARD_EUTF8, 1, 3, 2, "the byte 0xED"},     /* a surrogate */
        {"[\"\xf4\x90\x80\x80\"]", 0, KVSHARD_EUTF8, 1, 3, 2, "the byte 0xF4"}, /* > U+10FFFF */
        {"[\"\xe4\xb8\"]", 0, KVSHARD_EUTF8, 1, 3, 2, "the byte 0xE4"},         /* cut short */
        {"[\"\xe4\xb8", 0, KVSHARD_EUTF8, 1, 3, 2, "the byte 0xE4"},            /* at the end */
        {"[\xff]", 0, KVSHARD_EUTF8, 1, 2, 1, "the byte 0xFF"},
        {"[\xc3\xa9]", 0, KVSHARD_ESYNTAX, 1, 2, 1, VALUE ", found the character U+00E9"},
        /* structure */
        {"[1] [2]", 0, KVSHARD_ESYNTAX, 1, 5, 4,
         "expected the end of the text after the JSON value, found '['"},
        {"{} x", 0, KVSHARD_ESYNTAX, 1, 4, 3, "expected the end of the text after the JSON value"},
        {"{\"a\" 1}", 0, KVSHARD_ESYNTAX, 1, 6, 5, "expected ':' after the key, found '1'"},
        {"{\"a\"}", 0, KVSHARD_ESYNTAX, 1, 5, 4, "expected ':' after the key, found '}'"},
        {"[1 2]", 0, KVSHARD_ESYNTAX, 1, 4, 3,
         "expected ',' or ']' after a value in an array, found '2'"},
        {"{\"a\": 1 \"b\": 2}", 0, KVSHARD_ESYNTAX, 1, 9, 8,
         "expected ',' or '}' after a value in an object, found '\"'"},
        {"{\"a\": 1]", 0, KVSHARD_ESYNTAX, 1, 8, 7,
         "expected ',' or '}' after a value in an object, found ']'"},
        {"[1}", 0, KVSHARD_ESYNTAX, 1, 3, 2,
         "expected ',' or ']' after a value in an array, found '}'"},
        {"{", 0, KVSHARD_ESYNTAX, 1, 2, 1,
         "expected a key in double quotes or '}', found the end of the text"},
        {"[", 0, KVSHARD_ESYNTAX, 1, 2, 1, VALUE ", found the end of the text"},
        {"{\"a\":", 0, KVSHARD_ESYNTAX, 1, 6, 5, VALUE ", found the end of the text"},
        {"{\"a\":1", 0, KVSHARD_ESYNTAX, 1, 7, 6,
         "expected ',' or '}' after a value in an object, found the end of the text"},
        {"{1: 2}", 0, KVSHARD_ESYNTAX, 1, 2, 1,
         "expected a key in double quotes or '}', found '1'"},
        {"[1,\0]", 5, KVSHARD_ESYNTAX, 1, 4, 3, VALUE ", found the control character U+0000"},
        {"[\x0b]", 0, KVSHARD_ESYNTAX, 1, 2, 1, VALUE ", found the control character U+000B"},
        {"{\"a\": 1, \"a\": 2}", 0, KVSHARD_EDUPKEY, 1, 10, 9,
         "duplicate key \"a\" (first at line 1, column 2)"},
        /* YAML's line breaks NEL, LS and PS: escaped only, in a string */
        {"[\"a\xe2\x80\xa8\", x]", 0, KVSHARD_ESYNTAX, 1, 4, 3,
         "the line break U+2028 inside a string: YAML reads it as a line break, so a JSON "
         "string here writes it as an escape (\\u2028)"},
        /* after a byte order mark, columns count from the first character */
        {"\xef\xbb\xbf[1,]", 0, KVSHARD_ESYNTAX, 1, 3, 5, "JSON allows no trailing comma"},
        {"\xfe\xff[]", 0, KVSHARD_EUTF8, 1, 1, 0, "the text is UTF-16"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const refusal *c = &cases[i];
        size_t len = c->len ? c->len : strlen(c->text);
        char *buf = exact_copy(c->text, len);
        kvshard__doc doc;
        kvshard_error err;
        int rc = parse_json(&doc, buf, len, &err);
        if (rc != c->code || err.line != c->line || err.column != c->column ||
            err.offset != c->offset || !strstr(err.message, c->message))
            print_error("case %zu (%s): got %d at %d:%d (offset %zu): %s\n", i, c->text, rc,
                        err.line, err.column, (size_t)err.offset, err.message);
        assert_int_equal(rc, c->code);
        assert_int_equal(err.code, c->code);
        assert_int_equal(err.line, c->line);
        assert_int_equal(err.column, c->column);
        assert_int_equal(err.offset, c->offset);
        assert_non_null(strstr(err.message, c->message));
        assert_string_equal(err.source, "t.json");
        free(buf);
    }
}

/* NEL (U+0085), LS (U+2028) and PS (U+2029) are line breaks to libyaml,
 * which folds them inside a quoted string; the JSON reader refuses them
 * raw in a string, in a key or between tokens, so no text gets two
 * readings. Escaped, both readers keep them as characters. */
static void test_yaml_line_breaks(void **state)
{
    (void)state;
    static const char *const breaks[] = {"\xc2\x85", "\xe2\x80\xa8", "\xe2\x80\xa9"};
    static const char *const escapes[] = {"\\u0085", "\\u2028", "\\u2029"};
    static const char *const codes[] = {"U+0085", "U+2028", "U+2029"};
    /* Where the break goes: %s is the break; the offset of its first byte. */
    static const struct {
        const char *form;
        size_t at;
        const char *message;
    } places[] = {
        {"[\"a%sb\"]", 3, "inside a string: YAML reads it as a line break"},
        {"[\"a %s b\"]", 4, "inside a string"},
        {"{\"k%s\": 1}", 3, "inside a string"},
        {"[\"%s\"]", 2, "inside a string"},
        {"[1,%s2]", 3, "found the character"},
        {"{\"a\": 1}%s", 8, "after the JSON value, found the character"},
    };
    for (size_t b = 0; b < 3; b++) {
        for (size_t p = 0; p < sizeof places / sizeof places[0]; p++) {
            char text[64];
            snprintf(text, sizeof text, places[p].form, breaks[b]);
            size_t len = strlen(text);
            char *buf = exact_copy(text, len);
            kvshard__doc j, y;
            kvshard_error je, ye;
            int jrc = parse_json(&j, buf, len, &je);
            if (jrc == KVSHARD_OK || !strstr(je.message, places[p].message) ||
                !strstr(je.message, codes[b]) || je.offset != places[p].at)
                fail_msg("%s (%s): JSON gave %d at offset %zu: %s", places[p].form, codes[b],
                         jrc, (size_t)je.offset, je.message);
            assert_int_equal(jrc, KVSHARD_ESYNTAX);
            if (parse_yaml(&y, buf, len, &ye) == KVSHARD_OK)
                kvshard_tape__doc_free(&y); /* libyaml's own reading; JSON has none */
            free(buf);
            /* Escaped, the same character in both trees. */
            if (p < 4) {
                snprintf(text, sizeof text, places[p].form, escapes[b]);
                assert_same_tree(text, strlen(text));
            }
        }
    }
}

/* A header's syntax error is placed in the file: its line and column in the
 * JSON, its offset past the 8-byte length. */
static void test_header_error_place(void **state)
{
    (void)state;
    const char *json = "{\"t\":\n {\"dtype\": F16}}";
    size_t len = strlen(json);
    unsigned char *image = malloc(8 + len);
    assert_non_null(image);
    for (int k = 0; k < 8; k++)
        image[k] = (unsigned char)((uint64_t)len >> (8 * k));
    memcpy(image + 8, json, len);
    kvshard__safetensors *s = NULL;
    kvshard_error err;
    kvshard_error__reset(&err);
    int rc =
        kvshard_safetensors__read_bytes(&s, image, 8 + len, "model.safetensors", NULL, 10, &err);
    assert_int_equal(rc, KVSHARD_ESYNTAX);
    assert_null(s);
    assert_int_equal(err.line, 2);
    assert_int_equal(err.column, 12);
    assert_int_equal(err.offset, 8 + 17);
    assert_string_equal(err.message,
                        "safetensors: model.safetensors: the header is not JSON: " VALUE
                        ", found 'F16'");
    free(image);
}

/* ---- limits ------------------------------------------------------------------------ */

/* `levels` collections nested, arrays or objects ({"a": ...}). */
static size_t nested(char *t, unsigned levels, bool objects)
{
    size_t n = 0;
    for (unsigned i = 0; i < levels; i++) {
        memcpy(t + n, objects ? "{\"a\":" : "[", objects ? 5 : 1);
        n += objects ? 5 : 1;
    }
    t[n++] = '0';
    for (unsigned i = 0; i < levels; i++)
        t[n++] = objects ? '}' : ']';
    return n;
}

static void test_depth_limit(void **state)
{
    (void)state;
    char t[6 * KVSHARD_MAX_DEPTH + 16];
    for (int objects = 0; objects <= 1; objects++) {
        for (unsigned levels = KVSHARD_MAX_DEPTH - 1; levels <= KVSHARD_MAX_DEPTH + 1; levels++) {
            size_t n = nested(t, levels, objects);
            kvshard__doc doc;
            kvshard_error err;
            int rc = parse_json(&doc, t, n, &err);
            if (levels <= KVSHARD_MAX_DEPTH) {
                tu_assert_ok(rc, &err);
                kvshard_tape__doc_free(&doc);
                continue;
            }
            /* The 65th opening bracket. */
            size_t at = objects ? 5u * KVSHARD_MAX_DEPTH : KVSHARD_MAX_DEPTH;
            assert_int_equal(rc, KVSHARD_ELIMIT);
            assert_int_equal(err.line, 1);
            assert_int_equal(err.column, (int)at + 1);
            assert_int_equal(err.offset, at);
            assert_string_equal(err.message, "nesting deeper than 64 levels (KVSHARD_MAX_DEPTH)");
        }
    }
}

/* [0,0,...,0] of `items` items: 1 + items nodes; item k at offset 1 + 2k. */
static void check_nodes(size_t items)
{
    size_t len = 2 * items + 1;
    char *t = malloc(len);
    assert_non_null(t);
    t[0] = '[';
    for (size_t k = 0; k < items; k++) {
        t[1 + 2 * k] = '0';
        t[2 + 2 * k] = k + 1 < items ? ',' : ']';
    }
    kvshard__doc doc;
    kvshard_error err;
    int rc = parse_json(&doc, t, len, &err);
    if (items + 1 > KVSHARD_MAX_NODES) {
        size_t last = 1 + 2 * (items - 1);
        assert_int_equal(rc, KVSHARD_ELIMIT);
        assert_int_equal(err.line, 1);
        assert_int_equal(err.column, (int)last + 1);
        assert_int_equal(err.offset, last);
        assert_non_null(strstr(err.message, "document has more than 8388608 nodes"));
    } else {
        tu_assert_ok(rc, &err);
        kvshard__node root = kvshard_tape__doc_root(&doc);
        assert_int_equal(root.count, items);
        kvshard__node item = kvshard_tape__seq_item(&doc, &root, (uint32_t)(items - 1));
        assert_int_equal(item.offset, 1 + 2 * (items - 1));
        assert_true(kvshard_tape__scalar_is(&item, "0"));
        kvshard_tape__doc_free(&doc);
    }
    free(t);
}

static void test_nodes_at_limit(void **state)
{
    (void)state;
    check_nodes(KVSHARD_MAX_NODES - 1);
}

static void test_nodes_past_limit(void **state)
{
    (void)state;
    check_nodes(KVSHARD_MAX_NODES);
}

/* The size limit is the YAML path's: one byte past it is refused. */
static void test_size_limit(void **state)
{
    (void)state;
    size_t len = (size_t)KVSHARD_MAX_DOCUMENT_BYTES + 1;
    char *t = malloc(len);
    assert_non_null(t);
    memset(t, ' ', len);
    t[0] = '0';
    kvshard__doc doc;
    kvshard_error err;
    assert_int_equal(parse_json(&doc, t, len, &err), KVSHARD_ELIMIT);
    assert_non_null(strstr(err.message, "the limit is 67108864 bytes"));
    /* At the limit: a number and spaces. */
    tu_assert_ok(parse_json(&doc, t, len - 1, &err), &err);
    kvshard__node root = kvshard_tape__doc_root(&doc);
    assert_true(kvshard_tape__scalar_is(&root, "0"));
    kvshard_tape__doc_free(&doc);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_tree_corpus),
        cmocka_unit_test(test_same_tree_large),
        cmocka_unit_test(test_same_tree_shipped_configs),
        cmocka_unit_test(test_surrogate_pairs),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_yaml_line_breaks),
        cmocka_unit_test(test_header_error_place),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_nodes_at_limit),
        cmocka_unit_test(test_nodes_past_limit),
        cmocka_unit_test(test_size_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
