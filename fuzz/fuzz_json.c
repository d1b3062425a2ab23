/* libFuzzer target: read the input with the strict JSON front-end and with
 * libyaml's path. When both accept it they must give the same tree. Each may
 * refuse what the other accepts: YAML's words, quotes and block style are
 * not JSON, and libyaml refuses some JSON (a key over 1024 characters or
 * with its ':' on the next line, a tab that starts a line, characters YAML
 * counts unprintable, surrogate-pair escapes), and the JSON front-end
 * refuses a raw NEL, U+2028 or U+2029 in a string, which libyaml folds as a
 * line break. A refusal must carry its
 * code, a message and a place inside the text. Any crash, leak or sanitizer
 * report is a finding too. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "text/json_doc.h"

#include "same_tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly `size` bytes: a read past the end is a report. */
    char *text = malloc(size ? size : 1);
    if (!text)
        return 0;
    if (size)
        memcpy(text, data, size);
    kvshard_allocator a = kvshard_alloc__allocator_or_default(NULL);
    kvshard__doc j, y;
    kvshard_error je, ye;
    kvshard_error__reset(&je);
    kvshard_error__reset(&ye);
    int jrc = kvshard_json_doc__parse(&j, text, size, "fuzz", &a, &je);
    if (jrc != je.code || (jrc != KVSHARD_OK && je.message[0] == '\0') ||
        (jrc != KVSHARD_OK && jrc != KVSHARD_ENOMEM && (je.line < 1 || je.offset > size)))
        abort();
    int yrc = kvshard_doc__parse(&y, text, size, "fuzz", &a, &ye);
    if (jrc == KVSHARD_OK && yrc == KVSHARD_OK) {
        char why[256];
        if (!same_tree(&j, &y, why, sizeof why)) {
            fprintf(stderr, "the trees differ: %s\n", why);
            abort();
        }
    }
    if (jrc == KVSHARD_OK)
        kvshard_tape__doc_free(&j);
    if (yrc == KVSHARD_OK)
        kvshard_tape__doc_free(&y);
    free(text);
    return 0;
}
