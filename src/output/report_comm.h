/* The report's section on the price of the split: for the plan's split
 * size, the capacity it gains against the time it adds per decode step and
 * per prompt under each mechanism, drawn to scale. */
#ifndef KVSHARD_OUTPUT_REPORT_COMM_H
#define KVSHARD_OUTPUT_REPORT_COMM_H

#include "output/writer.h"

struct kvshard_plan;

/* Bars of the section's chart are this many px at their axis's end. */
#define KVSHARD_REPORT_COMM__BAR_W 600u

/* The section, when the plan was given a comm input; nothing otherwise, so
 * a report without one is what it was. */
void kvshard_report_comm__write(kvshard__out *o, const struct kvshard_plan *plan);

#endif /* KVSHARD_OUTPUT_REPORT_COMM_H */
