/* Placeholder while the report is written; replaced before this lands. */
#include "output/writer.h"
#include "plan/plan.h"

int kvshard_plan_write_svg(const kvshard_plan *plan, kvshard_write_fn write, void *user)
{
    (void)plan;
    (void)write;
    (void)user;
    return KVSHARD_EINVAL;
}

int kvshard_report_write_html(const kvshard_plan *plan, const kvshard_comparison *comparison,
                              kvshard_write_fn write, void *user)
{
    (void)plan;
    (void)comparison;
    (void)write;
    (void)user;
    return KVSHARD_EINVAL;
}
