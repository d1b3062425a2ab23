/* The JSON documents of a plan, a comparison and a fit (docs/planning.md,
 * docs/fit.md): kvshard_plan_write_json, kvshard_comparison_write_json and
 * kvshard_fit_write_json, which kvshard/output.h declares. Field names are
 * stable: new fields are only added. */
#ifndef KVSHARD_OUTPUT_EMIT_H
#define KVSHARD_OUTPUT_EMIT_H

#include "kvshard/output.h"

#endif /* KVSHARD_OUTPUT_EMIT_H */
