/* Line and column of byte offsets of a doc's text, worked out only when a
 * message needs them: the tape keeps byte offsets alone. */
#ifndef KVSHARD_TEXT_YAML_MARKS_H
#define KVSHARD_TEXT_YAML_MARKS_H

#include "base/error.h"
#include "text/yaml_tape.h"

/* A byte inside a UTF-8 sequence, after its first: not a character of its
 * own. */
static inline bool kvshard_yaml_marks__continuation(unsigned char c)
{
    return (c & 0xC0) == 0x80;
}

/* Line and column of a byte offset (CR, LF, CRLF, NEL, LS and PS end lines;
 * columns count characters), for messages. O(offset). */
kvshard__mark kvshard_marks__mark(const kvshard__doc *doc, size_t offset);
/* The marks of several offsets in one pass over the text for each
 * KVSHARD__DOC_MARKS_MAX of them. */
#define KVSHARD__DOC_MARKS_MAX 32
void kvshard_marks__of(const kvshard__doc *doc, const size_t *offsets, kvshard__mark *marks,
                        size_t count);
/* kvshard_error__fail at a node: its source, line and column. */
int kvshard_marks__fail(const kvshard__doc *doc, kvshard_error *err, int code,
                      const kvshard__node *at, const char *fmt, ...) KVSHARD__PRINTF(5, 6);

#endif /* KVSHARD_TEXT_YAML_MARKS_H */
