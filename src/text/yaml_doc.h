/* A YAML document read with libyaml onto the tape of yaml_tape.h: exactly
 * one document, through the builder of yaml_build.h, which enforces the
 * limits and the key and tag checks. A reader of the doc reads it through
 * yaml_tape.h and locates its errors through yaml_marks.h, which come with
 * this header. */
#ifndef KVSHARD_TEXT_YAML_DOC_H
#define KVSHARD_TEXT_YAML_DOC_H

#include "text/yaml_marks.h"
#include "text/yaml_tape.h"

/* Parse exactly one document from text into *out, which then points into
 * itself: the doc stays where it was parsed until kvshard_tape__doc_free().
 * `text` and `source` must outlive the doc. On failure nothing is
 * allocated. */
int kvshard_doc__parse(kvshard__doc *out, const char *text, size_t len, const char *source,
                       const kvshard_allocator *alloc, kvshard_error *err);
/* kvshard_doc__parse with the hash key drawn from `seed` rather than from
 * the doc's address, the text's and the time: for tests, which write keys
 * that collide under a known key. */
int kvshard_doc__parse_seeded(kvshard__doc *out, const char *text, size_t len, const char *source,
                              const kvshard_allocator *alloc, uint64_t seed, kvshard_error *err);

#endif /* KVSHARD_TEXT_YAML_DOC_H */
