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

/* A time or throughput as the JSON writes it: shortest text, or null. */
void kvshard_comm_out__number(kvshard__out *o, bool has, double v);

/* Bytes on a link as the text writes them, in decimal units: "5.90 MB". */
void kvshard_comm_out__link_bytes(kvshard__out *o, uint64_t bytes);

/* A time in ms with two decimals, grouped by thousands: "1,348.37 ms". */
void kvshard_comm_out__ms_text(char *buf, size_t cap, double us);

/* A link's latency as it was given: the fewest decimals (at most the 9 a
 * latency may have) that read back as the same double, never an exponent. */
void kvshard_comm_out__latency_text(char *buf, size_t cap, double us);

/* A fit's or comparison's `comm_inputs`: the settled inputs of estimate
 * `c` (mechanisms, link, accelerator, activation bytes). */
void kvshard_comm_out__inputs_json(kvshard__out *o, const kvshard__comm *c);

/* A row's `comm` object: its estimate's decode and prefill figures, null
 * when it was not priced. */
void kvshard_comm_out__row_json(kvshard__out *o, const kvshard_comm_estimate *e);

/* The line under a priced table with times: an estimate, on which link
 * and memory (`e` has both). */
void kvshard_comm_out__sources(kvshard__out *o, const kvshard_comm_estimate *e);

/* A fit row's text cells when ranked by throughput: its tokens/s in all and
 * its decode communication a step ("-" where unknown), padded when `notes`
 * follow. */
void kvshard_comm_out__row_cells(kvshard__out *o, const kvshard_comm_estimate *e, bool notes);

#endif /* KVSHARD_OUTPUT_COMM_OUT_H */
