/* The layer-kind table. Each row says what a kind caches, the words that
 * name it in a config's layer_types, and how the plan counts and draws it. */
#include "model/kinds.h"

#include "model/model.h"

#include <stdio.h>
#include <string.h>

static uint32_t sliding_window_of(const kvshard__model_info *m)
{
    return m->sliding_window;
}

static uint32_t chunk_size_of(const kvshard__model_info *m)
{
    return m->chunk_size;
}

#define WORD(w) {w, sizeof w - 1}
#define END {NULL, 0}
static const kvshard_kinds__word full_words[] = {WORD("full_attention"), WORD("attention"),
                                                 WORD("deepseek_sparse_attention"),
                                                 WORD("indexed_attention"), END};
static const kvshard_kinds__word linear_words[] = {WORD("linear_attention"), WORD("mamba"),
                                                   WORD("conv"), WORD("short_conv"), END};
static const kvshard_kinds__word sliding_words[] = {WORD("sliding_attention"), END};
static const kvshard_kinds__word hybrid_words[] = {WORD("hybrid"), END};
static const kvshard_kinds__word no_cache_words[] = {WORD("mlp"), WORD("moe"), END};
static const kvshard_kinds__word compressed_words[] = {WORD("compressed_sparse_attention"),
                                                       WORD("heavily_compressed_attention"), END};
static const kvshard_kinds__word shared_words[] = {END};
static const kvshard_kinds__word chunked_words[] = {WORD("chunked_attention"), END};
#undef WORD
#undef END

const kvshard_kinds__row kvshard_kinds__rows[KVSHARD__KIND_COUNT] = {
    [KVSHARD_LAYER_FULL_ATTENTION] =
        {
            .name = "full_attention",
            .words = full_words,
            .shape = KVSHARD__SHAPE_KV,
            .paged_kv = true,
            .comm_priced = true,
            .json_count = "num_full_attention_layers",
            .count_label = "full attention",
            .adjective = "full-attention",
            .count_always = true,
            .letter = 'F',
            .map_legend = "full-attention",
            .css = "kF",
            .mark = "",
            .title = "full attention",
            .legend_split = "full attention, KV on the split rank named (here 0)",
            .legend_unsplit = "full attention, KV on every rank",
        },
    [KVSHARD_LAYER_LINEAR_ATTENTION] =
        {
            .name = "linear_attention",
            .words = linear_words,
            .shape = KVSHARD__SHAPE_NONE,
            .seq_cache = KVSHARD__SEQ_STATE,
            .state = true,
            .comm_priced = true,
            .json_count = "num_linear_attention_layers",
            .count_label = "linear attention",
            .adjective = "linear",
            .count_always = true,
            .letter = 'L',
            .map_legend = "linear attention",
            .css = "kL",
            .mark = "L",
            .title = "linear attention, state on every rank",
            .legend_split = "linear attention: state on every rank",
            .legend_unsplit = "linear attention: state on every rank",
        },
    [KVSHARD_LAYER_SLIDING_ATTENTION] =
        {
            .name = "sliding_attention",
            .words = sliding_words,
            .shape = KVSHARD__SHAPE_WINDOW,
            .seq_cache = KVSHARD__SEQ_WINDOW,
            .window = true,
            .window_tokens = sliding_window_of,
            .json_count = "num_sliding_attention_layers",
            .count_label = "sliding window",
            .adjective = "sliding-window",
            .count_always = true,
            .letter = 'W',
            .map_legend = "sliding window",
            .css = "kW",
            .mark = "W",
            .title = "sliding window, on every rank",
            .legend_split = "sliding window of %u tokens, on every rank",
            .legend_unsplit = "sliding window of %u tokens, on every rank",
        },
    [KVSHARD_LAYER_HYBRID] =
        {
            .name = "hybrid",
            .words = hybrid_words,
            .shape = KVSHARD__SHAPE_KV,
            .seq_cache = KVSHARD__SEQ_STATE,
            .paged_kv = true,
            .state = true,
            .json_count = "num_hybrid_layers",
            .count_label = "hybrid",
            .adjective = "hybrid",
            .letter = 'H',
            .map_legend = "hybrid",
            .css = "kH",
            .mark = "",
            .title = "hybrid",
            .legend_split = "hybrid: KV on the split rank named, state everywhere",
            .legend_unsplit = "hybrid: KV and state on every rank",
        },
    [KVSHARD_LAYER_NO_CACHE] =
        {
            .name = "no_cache",
            .words = no_cache_words,
            .shape = KVSHARD__SHAPE_NONE,
            .comm_priced = true,
            .json_count = "num_no_cache_layers",
            .count_label = "without cache",
            .adjective = "no-cache",
            .letter = '.',
            .map_legend = "no cache",
            .css = "kN",
            .mark = "",
            .title = "no cache",
            .legend_split = "no cache (an MLP or MoE block)",
            .legend_unsplit = "no cache (an MLP or MoE block)",
        },
    [KVSHARD_LAYER_COMPRESSED] =
        {
            .name = "compressed",
            .words = compressed_words,
            .shape = KVSHARD__SHAPE_COMPRESSED,
            .seq_cache = KVSHARD__SEQ_WINDOW,
            .paged_kv = true,
            .count_label = "compressed",
            .adjective = "compressed",
            .letter = 'C',
            .map_legend = "compressed",
            .css = "kC",
            .mark = "",
            .title = "compressed attention",
            .legend_split = "compressed: window, stream and compressor state on the split rank "
                            "named (here 0)",
            .legend_unsplit = "compressed: window, stream and compressor state on every rank",
        },
    [KVSHARD_LAYER_SHARED_KV] =
        {
            .name = "shared_kv",
            .words = shared_words,
            .shape = KVSHARD__SHAPE_NONE,
            .reads_source = true,
            .count_label = "sharing KV",
            .adjective = "shared-KV",
            .letter = 'S',
            .map_legend = "shared KV",
            .css = "kS",
            .mark = "S",
            .title = "reads an earlier layer's KV, keeps none",
            .legend_split = "shared KV: reads an earlier layer's cache and keeps none",
            .legend_unsplit = "shared KV: reads an earlier layer's cache and keeps none",
        },
    [KVSHARD_LAYER_CHUNKED_ATTENTION] =
        {
            .name = "chunked_attention",
            .words = chunked_words,
            .shape = KVSHARD__SHAPE_CHUNK,
            .seq_cache = KVSHARD__SEQ_WINDOW,
            .window = true,
            .window_tokens = chunk_size_of,
            .count_label = "chunked attention",
            .adjective = "chunked",
            .letter = 'K',
            .map_legend = "chunked attention",
            .css = "kK",
            .mark = "K",
            .title = "chunked attention, on every rank",
            .legend_split = "chunked attention of %u tokens, on every rank",
            .legend_unsplit = "chunked attention of %u tokens, on every rank",
        },
};

const uint8_t kvshard_kinds__legend_order[KVSHARD__KIND_COUNT] = {
    KVSHARD_LAYER_FULL_ATTENTION,    KVSHARD_LAYER_HYBRID,
    KVSHARD_LAYER_COMPRESSED,        KVSHARD_LAYER_LINEAR_ATTENTION,
    KVSHARD_LAYER_SLIDING_ATTENTION, KVSHARD_LAYER_CHUNKED_ATTENTION,
    KVSHARD_LAYER_SHARED_KV,         KVSHARD_LAYER_NO_CACHE};

uint32_t kvshard_kinds__paged_mask(void)
{
    uint32_t mask = 0;
    for (uint32_t k = 0; k < KVSHARD__KIND_COUNT; k++)
        mask |= (uint32_t)kvshard_kinds__rows[k].paged_kv << k;
    return mask;
}

uint32_t kvshard_kinds__state_mask(void)
{
    uint32_t mask = 0;
    for (uint32_t k = 0; k < KVSHARD__KIND_COUNT; k++)
        mask |= (uint32_t)kvshard_kinds__rows[k].state << k;
    return mask;
}

uint32_t kvshard_kinds__shape_mask(kvshard_kinds__shape shape)
{
    uint32_t mask = 0;
    for (uint32_t k = 0; k < KVSHARD__KIND_COUNT; k++)
        mask |= (uint32_t)(kvshard_kinds__rows[k].shape == shape) << k;
    return mask;
}

uint32_t kvshard_kinds__seq_caches(const uint8_t *kinds, size_t n)
{
    uint32_t caches = 0;
    for (size_t i = 0; i < n; i++)
        caches |= kvshard_kinds__rows[kinds[i]].seq_cache;
    return caches;
}

const char *kvshard_kinds__seq_noun(uint32_t caches)
{
    if (caches == (KVSHARD__SEQ_STATE | KVSHARD__SEQ_WINDOW))
        return "state and windows";
    return caches == KVSHARD__SEQ_WINDOW ? "windows" : "state";
}

uint8_t kvshard_kinds__from_word(const char *s, size_t len)
{
    /* A long layer_types list asks this once per entry: the length is
     * compared before the text, so most words cost one compare. */
    for (uint8_t k = 0; k < KVSHARD__KIND_COUNT; k++) {
        for (const kvshard_kinds__word *w = kvshard_kinds__rows[k].words; w->text; w++) {
            if (w->len == len && memcmp(w->text, s, len) == 0)
                return k;
        }
    }
    return UINT8_MAX;
}

void kvshard_kinds__word_list(char *buf, size_t cap)
{
    size_t total = 0, used = 0, i = 0;
    for (uint8_t k = 0; k < KVSHARD__KIND_COUNT; k++)
        for (const kvshard_kinds__word *w = kvshard_kinds__rows[k].words; w->text; w++)
            total++;
    if (cap)
        buf[0] = '\0';
    for (uint8_t k = 0; k < KVSHARD__KIND_COUNT; k++) {
        for (const kvshard_kinds__word *w = kvshard_kinds__rows[k].words; w->text && used < cap;
             w++, i++) {
            const char *sep = i == 0 ? "" : i + 1 == total ? " or " : ", ";
            int n = snprintf(buf + used, cap - used, "%s%s", sep, w->text);
            if (n < 0)
                return;
            used += (size_t)n;
        }
    }
}

const char *kvshard_layer_kind_name(kvshard_layer_kind kind)
{
    return (unsigned)kind < KVSHARD__KIND_COUNT ? kvshard_kinds__rows[kind].name : "unknown";
}
