/* From a GPU to a budget: a planning call's device inputs (the GPU's
 * memory, the share the engine may use, the reserve), where the weights of
 * a rank come from, and each stage's weights and budget for a layout. */
#ifndef KVSHARD_PLAN_DEVICE_H
#define KVSHARD_PLAN_DEVICE_H

#include "model/weights.h"
#include "plan/plan.h"

typedef struct kvshard__device {
    kvshard_allocator alloc;
    bool used;    /* the budgets come from the device */
    bool fills;   /* an engine profile's budget: the weights fill one of its inputs */
    bool ignored; /* device_memory was given beside memory_per_rank */
    /* Under an engine profile, the input the weights fill was given: that
     * input's name (static), and the reserve and weights are not read. */
    const char *fill_given;
    uint64_t device_memory;
    uint32_t utilization_ppb; /* the utilization in billionths */
    double utilization;
    uint64_t usable; /* floor(device_memory x utilization), exactly */
    uint64_t reserve;
    kvshard__weights_source source;
    bool experts_estimated; /* index: no weights_experts given */
    kvshard__weights *weights; /* safetensors: the classified checkpoint (owned) */
    kvshard__wsummary summary; /* safetensors: its figures; first_unknown is the weights' */
    /* safetensors: the last layout's stage weights. A fit plans each
     * (T, P, D) once a split size and rule, so the walk over every
     * classified tensor is made once a layout (owned; NULL when none). */
    struct kvshard__stage_memo *memo;
} kvshard__device;

/* The device inputs of a planning call into *d: unused without
 * device_memory or with memory_per_rank; else the utilization, the usable
 * bytes, the reserve and the weights source, reading and classifying the
 * model directory's safetensors headers when nothing else gives the
 * weights. EWEIGHTS when nothing does, ERANGE for a utilization of more
 * than 9 decimal places, EPROFILE under a profile whose budget does not
 * come from the device, and the reader's errors, each about its key. */
int kvshard_device__open(kvshard__device *d, const kvshard__planning *pl,
                         const kvshard_model *model, const kvshard_allocator *alloc,
                         kvshard_diag__ctx *diag);
void kvshard_device__close(kvshard__device *d);

/* A layout's stages as the device sizes them. */
typedef struct kvshard__device_layout {
    uint32_t tp, dp, cp, pp;
    const uint32_t *stage_layers; /* pp counts */
    uint32_t num_layers;
} kvshard__device_layout;

/* Each stage's weights per rank and budget (usable - weights - reserve)
 * into weights[0..pp-1] and budgets[0..pp-1]. EWEIGHTS for weights_per_rank
 * of neither 1 nor pp entries; EDOESNOTFIT for a stage left with nothing
 * (naming it, its weights, the reserve and the shortfall), with
 * `*short_stage` that stage and *left its (negative) budget when not NULL. */
int kvshard_device__stages(uint64_t *weights, uint64_t *budgets, const kvshard__device *d,
                           const kvshard__planning *pl, const kvshard__device_layout *layout,
                           int64_t *left, kvshard_diag__ctx *diag);

/* The budgets of a planning call for a layout: with the device, each
 * stage's (into weights[] and stage[], P each) and the smallest, else the
 * profile's one figure. Errors as kvshard_device__stages() and the
 * profile's budget. */
int kvshard_device__budgets_for(kvshard__budgets *out, uint64_t *weights, uint64_t *stage,
                         const kvshard__device *d, const kvshard__planning *pl,
                         const kvshard_model *model, const kvshard__device_layout *layout,
                         uint32_t split, int64_t *left, kvshard_diag__ctx *diag);

/* The device's figures as a plan keeps them (the first unknown tensor's
 * name copied). */
void kvshard_device__figures_of(kvshard__device_figures *out, const kvshard__device *d);

/* Under an engine profile, device_memory and memory_utilization into the
 * inputs they are the same as (EDUPKEY when both are given and differ),
 * before the profile settles its inputs. */
int kvshard_device__map(kvshard__planning *pl, kvshard_diag__ctx *diag);

/* Under an engine profile, the weights of a rank (one stage of the
 * layout's T) into the input the profile fills when nothing set it:
 * non_kv_memory = weights + reserve, or device_memory_free = device_memory
 * - weights - reserve. An input of one size a stage gets each stage's own
 * weights with the layout's stages (the largest as its value, each in
 * pl->fill_stages); any other the whole model's, as on one stage. */
int kvshard_device__fill(kvshard__planning *pl, const kvshard__device *d,
                         const kvshard__device_layout *layout, kvshard_diag__ctx *diag);

/* An error about the input the weights filled is about device_memory,
 * which the user gave: `diag` is moved onto it. */
void kvshard_device__about_fill(const kvshard__device *d, const kvshard__profile *profile,
                                kvshard_diag__ctx *diag);

/* What a failure about a rank's weights may be about, and one about
 * weights and the reserve taking all of the device, most specific first. */
extern const char *const kvshard_device__about_weights[];
extern const char *const kvshard_device__about_fit[];

/* A utilization in billionths as its exact decimal: "0.9", "1.0" (a JSON
 * number keeps its point). */
void kvshard_device__ppb_text(char *buf, size_t cap, uint32_t ppb);

/* The same as the shortest decimal, "0.9", "1": how an engine's flag line
 * writes it, since the engines print their fractions that way. */
void kvshard_device__ppb_flag_text(char *buf, size_t cap, uint32_t ppb);

#endif /* KVSHARD_PLAN_DEVICE_H */
