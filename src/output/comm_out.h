/* The plan's communication estimate in its JSON and text documents. */
#ifndef KVSHARD_OUTPUT_COMM_OUT_H
#define KVSHARD_OUTPUT_COMM_OUT_H

#include "explore/comm.h"
#include "output/writer.h"

/* The `comm` object, a line of the plan's JSON after `device`, when the
 * plan was given a comm input; nothing otherwise. */
int kvshard_comm_out__json(kvshard__out *o, const kvshard_plan *plan);

/* The `comm`, `decode` and `prefill` lines after the capacity's, likewise. */
int kvshard_comm_out__text(kvshard__out *o, const kvshard_plan *plan);

/* The estimate's own warnings of `plan` into `out` (room for
 * KVSHARD__COMM_WARNINGS), listed after the plan's; how many. None without
 * a comm input or when the estimate is refused. */
size_t kvshard_comm_out__warnings(kvshard__warning *out, const kvshard_plan *plan);

#endif /* KVSHARD_OUTPUT_COMM_OUT_H */
