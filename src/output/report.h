/* The HTML report (kvshard_report_write_html, which kvshard/output.h
 * declares) and the part of it the memory chart and the tests share: the
 * model's name for the title. */
#ifndef KVSHARD_OUTPUT_REPORT_H
#define KVSHARD_OUTPUT_REPORT_H

#include "output/writer.h"
#include "plan/view.h"

/* The model's name for the title: the model file's base name without its
 * extension, or its directory's when the file is a generic config.json;
 * the model type when the model was read from no file. At most `cap`
 * bytes with the NUL. */
void kvshard_report__model_name(char *out, size_t cap, const kvshard__plan_view *p);

#endif /* KVSHARD_OUTPUT_REPORT_H */
