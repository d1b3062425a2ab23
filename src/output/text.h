/* A plan, a comparison and a fit as text for a person, as `kvshard plan`,
 * `kvshard compare` and `kvshard fit` print them: kvshard_plan_write_text,
 * kvshard_comparison_write_text and kvshard_fit_write_text, which
 * kvshard/output.h declares. */
#ifndef KVSHARD_OUTPUT_TEXT_H
#define KVSHARD_OUTPUT_TEXT_H

#include "kvshard/output.h"

#endif /* KVSHARD_OUTPUT_TEXT_H */
