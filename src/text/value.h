/* Typed values as deployment files, flags and callers give them: one
 * definition per key (its type, range and words) and the one parser and
 * range check behind every option, setting and engine input. */
#ifndef KVSHARD_TEXT_VALUE_H
#define KVSHARD_TEXT_VALUE_H

#include "text/scalar.h"

typedef enum kvshard_value__type {
    KVSHARD__VT_U32,      /* a whole number; with `words`, also one of them */
    KVSHARD__VT_BYTES,    /* a byte count: an integer or a size with a unit */
    KVSHARD__VT_BOOL,     /* true or false (flags: 1/0, yes/no, t/f, y/n too) */
    KVSHARD__VT_WORD,     /* one of `words` */
    KVSHARD__VT_FRACTION, /* a decimal above 0 and at most 1 */
    KVSHARD__VT_DECIMAL,  /* a decimal above 0 and at most `max` (a latency: from 0, 9 decimals) */
    KVSHARD__VT_TEXT,     /* printable text of at most KVSHARD__VALUE_TEXT_MAX - 1 bytes */
    KVSHARD__VT_OBJECT,   /* a JSON object of which `fields` are read */
    /* A byte count, or one a pipeline stage: "40GiB,38GiB" (a file may
     * also write a YAML list, with `more->file_list`). `u` is the largest;
     * `text` the list as written when it has more than one size (at most
     * KVSHARD_MAX_PP_PARTITION sizes in KVSHARD__SIZES_TEXT_MAX - 1 bytes). */
    KVSHARD__VT_SIZES
} kvshard_value__type;

/* Longest text value, its NUL included. */
#define KVSHARD__VALUE_TEXT_MAX 64
/* Longest list of sizes, its NUL included: one a stage for as many stages
 * as a plan may have, at 32 characters a size with its comma. */
#define KVSHARD__SIZES_TEXT_MAX (KVSHARD_MAX_PP_PARTITION * 32)

/* The public kvshard_word: the option table hands its words out as they are. */
typedef kvshard_word kvshard_value__word;

struct kvshard_value__def;

/* What a text value must be beyond printable: called with the text as
 * written; an error names def->name, `source` and `mark`. */
typedef int (*kvshard_value__text_check)(const struct kvshard_value__def *def, const char *text,
                                         size_t len, const char *source, kvshard__mark mark,
                                         kvshard_error *err);

/* The two fields of a JSON object value kvshard reads: a text (optional)
 * and a whole number (required); other keys are not read. */
typedef struct kvshard_value__fields {
    const char *text;    /* NULL: none */
    const char *integer; /* NULL: none */
    uint64_t integer_max;
} kvshard_value__fields;

/* What some types need besides the common fields. */
typedef struct kvshard_value__more {
    kvshard_value__text_check check;     /* VT_TEXT: NULL for any printable text */
    const kvshard_value__fields *fields; /* VT_OBJECT */
    /* VT_TEXT: a deployment file may also write it as a YAML list of
     * scalars, read as the flag's text, the items joined by commas. */
    bool file_list;
} kvshard_value__more;

typedef struct kvshard_value__def {
    const char *name;
    kvshard_value__type type;
    uint64_t min; /* as text; a caller's struct may also hold 0 when `unset_ok` */
    uint64_t max;
    /* A value below `min` is EPARALLEL for the parallel sizes, whose floor
     * of 1 is a rule of its own, and ERANGE for everything else. */
    int below_min;
    /* A caller's struct may leave it unset: 0 for numbers, -1 for words (a
     * value no word names, settled later). */
    bool unset_ok;
    /* KVSHARD__VT_WORD: the accepted words, NULL-ended; KVSHARD__VT_U32 and
     * KVSHARD__VT_BYTES: words that stand for values no number gives
     * (negative ones: "auto" for the profile's figure). A text is a word
     * only when it is one; every other text is a number, checked against
     * [min, max], which holds no word's value (nor a fallback that stands
     * for "not given"), so a stored value never leaves it in doubt. */
    const kvshard_value__word *words;
    const kvshard_value__more *more; /* NULL for the types that need nothing */
} kvshard_value__def;

/* A parsed value: `u` for integers, byte counts, booleans (0/1) and words
 * (the word's value, sign-extended), `d` for decimals and fractions,
 * `text` for text (`u` its length) and for an object's text field, whose
 * integer field is `u`. Text is borrowed: from the parsed input, then from
 * whoever keeps the value (a settings entry, a plan). */
typedef struct kvshard_value {
    uint64_t u;
    double d;
    const char *text; /* NULL: none */
    size_t text_len;
} kvshard_value;

/* Parse `text` as `def` says: YAML text (plain or quoted) by YAML's rules,
 * flag text by gflags' (booleans 1/0/yes/no...). On failure *out is
 * unchanged and the error names def->name, `source` and `mark`. */
int kvshard_value__parse(kvshard_value *out, const kvshard_value__def *def, const char *text,
                         size_t len, kvshard__value_style style, const char *source,
                         kvshard__mark mark, kvshard_error *err);

/* Whether a value from a caller's struct is allowed; the error names the
 * key. */
int kvshard_value__check(const kvshard_value__def *def, kvshard_value v, kvshard_error *err);

/* A boolean as text: YAML (plain) takes true or false; flags also take 1/0,
 * yes/no, t/f and y/n in any case. 1 true, 0 false, -1 neither. */
int kvshard_value__bool_text(const char *text, size_t len, kvshard__value_style style);

/* The word whose value is `value`, or NULL. */
const kvshard_value__word *kvshard_value__word_of(const kvshard_value__word *words, int value);

/* The words for a message: "auto, bf16 or fp8". */
void kvshard_value__list_words(char *buf, size_t cap, const kvshard_value__word *words);

/* Whether a U32 or byte value is one of the def's words rather than a number:
 * by its value, which no number in [min, max] takes. */
bool kvshard_value__is_word(const kvshard_value__def *def, kvshard_value v);

/* The sizes of a KVSHARD__VT_SIZES value, already parsed, into out[0..cap-1]
 * (a count above `cap` leaves the rest unwritten); returns how many it has. */
uint32_t kvshard_value__sizes(uint64_t *out, uint32_t cap, kvshard_value v);

/* Two values are the same (fractions by their bits' value, text by its
 * bytes). */
bool kvshard_value__equal(const kvshard_value__def *def, kvshard_value a, kvshard_value b);

#endif /* KVSHARD_TEXT_VALUE_H */
