/* A plan, a comparison and a fit as text for a person, as `kvshard plan`,
 * `kvshard compare` and `kvshard fit` print them: kvshard_plan_write_text,
 * kvshard_comparison_write_text and kvshard_fit_write_text, which
 * kvshard/output.h declares. */
#ifndef KVSHARD_OUTPUT_TEXT_H
#define KVSHARD_OUTPUT_TEXT_H

#include "kvshard/output.h"
#include "output/writer.h"
#include "plan/view.h"

/* Where a plan's budgets come from, with device inputs, as the text plan's
 * `device` line says it (without its label and newline): the usable share
 * of the device, the activation reserve, the weights' source and, with one
 * stage, what a rank's weights leave. */
void kvshard_text__device_line(kvshard__out *o, const kvshard__plan_view *p);

#endif /* KVSHARD_OUTPUT_TEXT_H */
