/* Folding a layer map into runs: at each point, the repeated pattern that
 * covers the most layers. Each start scans at most MAX_PERIOD patterns as far
 * as they repeat, so a map costs about MAX_PERIOD x its layers. */
#include "output/runs.h"

bool kvshard_runs__same_cell(const kvshard__plan_view *p, uint32_t a, uint32_t b)
{
    if (p->kinds[a] != p->kinds[b])
        return false;
    return !kvshard_kinds__of(p->kinds[a])->paged_kv || p->owner[a] == p->owner[b];
}

/* One past the last layer of the stage that holds `layer`. */
static uint32_t stage_end(const kvshard__plan_view *p, uint32_t layer)
{
    for (uint32_t s = 0; s < p->pp; s++)
        if (layer < p->stages[s].first + p->stages[s].count)
            return p->stages[s].first + p->stages[s].count;
    return p->model->num_layers;
}

/* Whether the `period` layers from `at` draw as those from `first`. */
static bool same_span(const kvshard__plan_view *p, uint32_t first, uint32_t at, uint32_t period)
{
    for (uint32_t k = 0; k < period; k++)
        if (!kvshard_runs__same_cell(p, first + k, at + k))
            return false;
    return true;
}

/* The best repeat from `first` before `end`; repeats 1 when none. */
static kvshard_runs__run best_repeat(const kvshard__plan_view *p, uint32_t first, uint32_t end)
{
    kvshard_runs__run best = {first, 1, 1};
    uint64_t cover = 1;
    for (uint32_t period = 1; period <= KVSHARD_RUNS__MAX_PERIOD; period++) {
        if ((uint64_t)first + 2u * period > end)
            break;
        uint32_t n = 1;
        for (uint32_t at = first + period; at + period <= end && same_span(p, first, at, period);
             at += period)
            n++;
        if (n >= 2 && (uint64_t)n * period > cover) {
            best = (kvshard_runs__run){first, period, n};
            cover = (uint64_t)n * period;
        }
    }
    return best;
}

/* Whether some pattern repeats at least twice from `first`. */
static bool repeats_from(const kvshard__plan_view *p, uint32_t first, uint32_t end)
{
    for (uint32_t period = 1; period <= KVSHARD_RUNS__MAX_PERIOD; period++) {
        if ((uint64_t)first + 2u * period > end)
            return false;
        if (same_span(p, first, first + period, period))
            return true;
    }
    return false;
}

kvshard_runs__run kvshard_runs__at(const kvshard__plan_view *p, uint32_t first, uint32_t literal)
{
    uint32_t end = stage_end(p, first);
    kvshard_runs__run r = best_repeat(p, first, end);
    if (r.repeats >= 2)
        return r;
    uint32_t next = first + 1;
    while (next < end && next - first < literal && !repeats_from(p, next, end))
        next++;
    return (kvshard_runs__run){first, next - first, 1};
}

uint32_t kvshard_runs__count(const kvshard__plan_view *p, uint32_t literal)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->model->num_layers; n++) {
        kvshard_runs__run r = kvshard_runs__at(p, i, literal);
        i += r.period * r.repeats;
    }
    return n;
}
