/* The capacity's figures by name: the fields of the JSON plan's capacity
 * object, in its order. The JSON writer and kvshard_plan_capacity_figure()
 * both read them here, so a figure has one name and one meaning. */
#include "plan/figures.h"

#include <string.h>

typedef struct field {
    const char *name;
    /* Whether it has a value, and the value, from a source. */
    bool (*get)(uint64_t *v, const kvshard__capacity_source *s);
} field;

#define GETTER(fn, has, value)                                                                     \
    static bool fn(uint64_t *v, const kvshard__capacity_source *s)                                 \
    {                                                                                              \
        *v = (value);                                                                              \
        return (has);                                                                              \
    }

GETTER(block_size, true, s->options->block_size)
GETTER(memory_per_rank, s->has_memory && !s->from_device, s->memory)
/* An engine's request limit is known only with a budget. */
GETTER(max_seqs, !(s->capacity->has_max_seqs && s->capacity->max_seqs == 0),
       kvshard__max_seqs_of(s->capacity, s->options))
GETTER(num_blocks, s->capacity->has_num_blocks, s->capacity->num_blocks)
GETTER(max_tokens, s->capacity->has_num_blocks, s->capacity->max_tokens)
GETTER(context_length, s->options->context_length != 0, s->options->context_length)
GETTER(concurrency, s->capacity->has_concurrency, s->capacity->concurrency)
GETTER(balanced_max_seqs, s->capacity->has_balanced_max_seqs, s->capacity->balanced_max_seqs)
/* An engine's own budget, or the smallest the device leaves a rank. */
GETTER(budget, s->capacity->has_budget || s->from_device,
       s->capacity->has_budget ? s->capacity->budget : s->memory)
GETTER(state_slots, s->capacity->has_state_slots, s->capacity->state_slots)
GETTER(usable_blocks, s->capacity->has_usable_blocks, s->capacity->usable_blocks)
GETTER(usable_state_slots, s->capacity->has_state_slots, s->capacity->usable_state_slots)
/* The rank that sets the common block count: its stage and its TP rank. */
GETTER(binding_stage, s->capacity->has_binding, s->capacity->binding_rank / s->tp)
GETTER(binding_tp_rank, s->capacity->has_binding, s->capacity->binding_rank % s->tp)

#undef GETTER

/* NULL get: the profile's name, a text figure. */
static const field fields[] = {
    {"block_size", block_size},
    {"memory_per_rank", memory_per_rank},
    {"max_seqs", max_seqs},
    {"num_blocks", num_blocks},
    {"max_tokens", max_tokens},
    {"context_length", context_length},
    {"concurrency", concurrency},
    {"balanced_max_seqs", balanced_max_seqs},
    {"engine", NULL},
    {"budget", budget},
    {"state_slots", state_slots},
    {"usable_blocks", usable_blocks},
    {"usable_state_slots", usable_state_slots},
    {"binding_stage", binding_stage},
    {"binding_tp_rank", binding_tp_rank},
};

size_t kvshard_figures__capacity_figure_count(void)
{
    return sizeof fields / sizeof fields[0];
}

void kvshard_figures__capacity_figure_at(kvshard_figure *out, const kvshard__capacity_source *src,
                                 size_t index)
{
    const field *f = &fields[index];
    out->name = f->name;
    out->uint_value = 0;
    out->double_value = 0.0;
    out->bool_value = false;
    out->text_value = NULL;
    if (!f->get) {
        out->type = KVSHARD_FIGURE_TEXT;
        out->text_value = src->profile->name;
        return;
    }
    out->type = f->get(&out->uint_value, src) ? KVSHARD_FIGURE_UINT : KVSHARD_FIGURE_NULL;
    if (out->type == KVSHARD_FIGURE_NULL)
        out->uint_value = 0;
}

size_t kvshard_figures__capacity_figure_index(const char *name)
{
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (strcmp(fields[i].name, name) == 0)
            return i;
    }
    return SIZE_MAX;
}

size_t kvshard_figures__engine_figures(kvshard_profile__figures *f,
                                       const kvshard__profile *profile,
                                       const kvshard_profile__view *view)
{
    if (!profile->hooks.figures)
        return 0;
    kvshard_profile__fig_text(f, "name", profile->name);
    kvshard_profile__fig_text(f, "version", view->version);
    profile->hooks.figures(f, view);
    return f->count;
}
