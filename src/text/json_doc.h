/* A strict JSON (RFC 8259) front-end to the read-only tree of yaml_tape.h.
 *
 * Safetensors headers and their index are JSON by their format's
 * definition; read as JSON they skip a general YAML scanner. The tree is the
 * one libyaml's path builds for the same text: strings are quoted scalars
 * (their text a span of the source, or a copy when they hold escapes),
 * numbers, true, false and null plain scalars of their text as written,
 * at the same byte offsets, under the same limits and key checks.
 *
 * What JSON does not allow fails, at the byte where it stands: comments,
 * trailing commas, single quotes, leading zeros, NaN and Infinity, bare
 * control characters in strings, bad escapes and lone surrogates, invalid
 * UTF-8, text after the value, and an empty text. A UTF-8 byte order mark
 * at the start is skipped, as RFC 8259 allows and the YAML path does. Lines
 * end at LF, CR and CRLF in every message of the doc. The text need not end
 * in a NUL: nothing past `len` is read. One pass, no recursion. */
#ifndef KVSHARD_TEXT_JSON_DOC_H
#define KVSHARD_TEXT_JSON_DOC_H

#include "text/yaml_tape.h"

/* kvshard_doc__parse for JSON text: the same doc, read and freed the same
 * way (kvshard_tape__doc_free). */
int kvshard_json_doc__parse(kvshard__doc *out, const char *text, size_t len, const char *source,
                            const kvshard_allocator *alloc, kvshard_error *err);
/* With the hash key drawn from `seed`, as kvshard_doc__parse_seeded. */
int kvshard_json_doc__parse_seeded(kvshard__doc *out, const char *text, size_t len,
                                   const char *source, const kvshard_allocator *alloc,
                                   uint64_t seed, kvshard_error *err);

#endif /* KVSHARD_TEXT_JSON_DOC_H */
