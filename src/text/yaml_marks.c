/* Line and column of byte offsets, as libyaml counts them: one pass over the
 * text for a handful of offsets, a block of ASCII at a time. */
#include "text/yaml_marks.h"

#include <stdint.h>
#include <stdio.h>

/* Bytes of the line break at `i`, as libyaml counts them: LF, CR, CRLF, and
 * NEL, LS and PS; 0 when there is none. JSON ends lines at LF, CR and CRLF
 * alone: the other three are characters of a string there. */
static size_t line_break(const char *t, size_t i, size_t len, bool json)
{
    unsigned char c = (unsigned char)t[i];
    if (c == '\n')
        return 1;
    if (c == '\r')
        return i + 1 < len && t[i + 1] == '\n' ? 2 : 1;
    if (json)
        return 0;
    if (c == 0xC2 && i + 1 < len && (unsigned char)t[i + 1] == 0x85)
        return 2;
    if (c == 0xE2 && i + 2 < len && (unsigned char)t[i + 1] == 0x80 &&
        ((unsigned char)t[i + 2] == 0xA8 || (unsigned char)t[i + 2] == 0xA9))
        return 3;
    return 0;
}

/* Walk from `i` towards `stop` a block at a time while a block holds only
 * ASCII characters other than CR: there each LF starts a line and every other
 * byte is one character, so a block is a count of LFs, which compilers do
 * with vector compares. Columns are worked out once at the end, back from
 * the last LF. Stops at the first block with a CR or a byte above 0x7F, or
 * within a block of `stop`, for the byte-wise walk to finish. */
#define PLAIN_BLOCK 32u

static size_t skip_plain_blocks(const char *t, size_t i, size_t stop, int *line, int *column)
{
    size_t from = i;
    size_t lines = 0;
    while (i < stop && stop - i >= PLAIN_BLOCK) {
        const unsigned char *p = (const unsigned char *)t + i;
        unsigned char lf = 0, other = 0;
        for (unsigned k = 0; k < PLAIN_BLOCK; k++) {
            lf = (unsigned char)(lf + (p[k] == '\n'));
            other |= (unsigned char)((p[k] == '\r') | (p[k] >> 7));
        }
        if (other)
            break;
        lines += lf;
        i += PLAIN_BLOCK;
    }
    if (lines == 0) {
        *column += (int)(i - from);
        return i;
    }
    size_t after_lf = i; /* one past the last LF, which lies in [from, i) */
    while (t[after_lf - 1] != '\n')
        after_lf--;
    *line += (int)lines; /* marks are at most 2^26 bytes in */
    *column = 1 + (int)(i - after_lf);
    return i;
}

void kvshard_marks__of(const kvshard__doc *doc, const size_t *offsets, kvshard__mark *marks,
                        size_t count)
{
    /* A longer list is marked a bounded slice at a time, one pass each:
     * the callers' lists fit one slice, so nothing is allocated. */
    while (count > KVSHARD__DOC_MARKS_MAX) {
        kvshard_marks__of(doc, offsets, marks, KVSHARD__DOC_MARKS_MAX);
        offsets += KVSHARD__DOC_MARKS_MAX;
        marks += KVSHARD__DOC_MARKS_MAX;
        count -= KVSHARD__DOC_MARKS_MAX;
    }
    /* One pass for all: at most a handful of offsets, so a selection per
     * step is cheaper than sorting. */
    int line = 1, column = 1;
    size_t i = doc->start;
    size_t done = 0;
    bool ready[KVSHARD__DOC_MARKS_MAX] = {false};
    while (done < count) {
        size_t target = SIZE_MAX, which = 0;
        for (size_t k = 0; k < count; k++) {
            if (!ready[k] && offsets[k] < target) {
                target = offsets[k];
                which = k;
            }
        }
        size_t stop = target < doc->len ? target : doc->len;
        i = skip_plain_blocks(doc->text, i, stop, &line, &column);
        while (i < target && i < doc->len) {
            unsigned char c = (unsigned char)doc->text[i];
            if (c >= 0x20 && c < 0x80) { /* a printable ASCII character */
                column++;
                i++;
                continue;
            }
            size_t br = line_break(doc->text, i, doc->len, doc->json);
            if (br) {
                if (i + br > target) /* the offset is inside the break */
                    break;
                line++;
                column = 1;
                i += br;
                continue;
            }
            if (!kvshard_yaml_marks__continuation((unsigned char)doc->text[i]))
                column++;
            i++;
        }
        kvshard__mark m = {line, column, offsets[which]};
        marks[which] = m;
        ready[which] = true;
        done++;
    }
}

kvshard__mark kvshard_marks__mark(const kvshard__doc *doc, size_t offset)
{
    kvshard__mark m;
    kvshard_marks__of(doc, &offset, &m, 1);
    return m;
}

int kvshard_marks__fail(const kvshard__doc *doc, kvshard_error *err, int code,
                      const kvshard__node *at_node, const char *fmt, ...)
{
    if (!err || err->code != KVSHARD_OK)
        return code;
    kvshard__mark m = at_node ? kvshard_marks__mark(doc, at_node->offset) : kvshard_error__no_mark;
    va_list ap;
    va_start(ap, fmt);
    int rc = kvshard_error__vfail(err, code, doc->source, m, fmt, ap);
    va_end(ap);
    return rc;
}
