/* Model figures the engines read that kvshard's model does not keep yet
 * (max_position_embeddings, the Mamba2 chunk size, a vision_config, which
 * state-dtype key the config wrote), worked out as far as the model's own
 * figures tell them exactly. A fact that is not known is asked for: each
 * profile names the engine flag that settles it, and never guesses. */
#include "profile/profile.h"

#include "model/states.h"

kvshard_profile__facts kvshard_profile__facts_of(const kvshard__model_info *model)
{
    kvshard_profile__facts f = {0, 0, -1, KVSHARD_PROFILE__DTYPE_UNKNOWN};
    /* The model's state dtype is the one its keys name, else its kind's
     * default: a dtype other than the default was named by the config. */
    const kvshard__state_dims *s = &model->state;
    kvshard_dtype fallback = kvshard_states__default_dtype(s->kind, model->dtype);
    if (s->kind != KVSHARD_STATE_NONE && s->dtype != KVSHARD_DTYPE_AUTO && s->dtype != fallback)
        f.config_state_dtype = (int)s->dtype;
    return f;
}
