/*
 * kvshard.hpp: C++17 wrappers over the C API of kvshard.h. Header-only: it
 * adds no symbol to libkvshard and links against either library. The
 * wrappers of compare, fit and the writers are in kvshard/explore.hpp.
 *
 * - kvshard::Model, kvshard::Deployment and kvshard::Plan own one C handle
 *   each. They are move-only; the destructor calls the matching *_free(). A
 *   moved-from object is empty: it may be destroyed or assigned to, and any
 *   query on it throws kvshard::Error with KVSHARD_EINVAL.
 * - Every failure is thrown as kvshard::Error, which carries the whole
 *   kvshard_error of the failed call (code, source, line, column, offset,
 *   message). std::bad_alloc is thrown only by the wrappers' own strings and
 *   vectors.
 * - Plan and Model are immutable: any number of threads may call their
 *   const members on one object at the same time, as with the C handles. A
 *   Deployment changes only through set() and apply_args().
 * - Views (kvshard::ModelView, kvshard::LayerSpan) borrow from the object
 *   they came from and live as long as its C handle, which a move hands on
 *   to the new owner.
 * - get() gives the C handle for calls the wrappers do not cover; release()
 *   gives up ownership of it; the explicit constructors adopt one.
 */
#ifndef KVSHARD_KVSHARD_HPP
#define KVSHARD_KVSHARD_HPP

#if !defined(__cplusplus) ||                                                                       \
    (__cplusplus < 201703L && (!defined(_MSVC_LANG) || _MSVC_LANG < 201703L))
#error "kvshard.hpp needs C++17; C code includes kvshard.h"
#endif

#include "kvshard/kvshard.h"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace kvshard
{

/** Version of the loaded library ("MAJOR.MINOR.PATCH"). */
inline const char *version() noexcept
{
    return kvshard_version();
}

/** Static English name of a status code. */
inline const char *strerror(int code) noexcept
{
    return kvshard_strerror(code);
}

/** Names of the C enums, as kvshard_*_name(). Static storage. */
inline const char *name(kvshard_layer_kind kind) noexcept
{
    return kvshard_layer_kind_name(kind);
}
inline const char *name(kvshard_state_kind kind) noexcept
{
    return kvshard_state_kind_name(kind);
}
inline const char *name(kvshard_attention attention) noexcept
{
    return kvshard_attention_name(attention);
}
inline const char *name(kvshard_dtype dtype) noexcept
{
    return kvshard_dtype_name(dtype);
}
inline const char *name(kvshard_ownership ownership) noexcept
{
    return kvshard_ownership_name(ownership);
}
inline const char *name(kvshard_engine engine) noexcept
{
    return kvshard_engine_name(engine);
}
inline const char *name(kvshard_pp_rule rule) noexcept
{
    return kvshard_pp_rule_name(rule);
}
inline const char *name(kvshard_rank_layout layout) noexcept
{
    return kvshard_rank_layout_name(layout);
}
inline const char *name(kvshard_warning_code code) noexcept
{
    return kvshard_warning_name(code);
}

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */
/* ------------------------------------------------------------------------ */

namespace detail
{

/* Copies `text` into a fixed field, cut between UTF-8 characters. */
template <std::size_t N> inline void copy_field(char (&field)[N], std::string_view text) noexcept
{
    std::size_t n = text.size() < N - 1 ? text.size() : N - 1;
    if (n < text.size()) {
        /* Step back over continuation bytes to the start of a character. */
        while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0u) == 0x80u)
            n--;
    }
    for (std::size_t i = 0; i < n; i++)
        field[i] = text[i];
    field[n] = '\0';
}

/* "source:line:column: message", as the kvshard CLI prints an error. */
inline std::string format_error(const kvshard_error &err)
{
    std::string text;
    if (err.source[0] != '\0') {
        text += err.source;
        if (err.line > 0) {
            text += ':';
            text += std::to_string(err.line);
            text += ':';
            text += std::to_string(err.column);
        }
        text += ": ";
    }
    text += err.message[0] != '\0' ? err.message : kvshard_strerror(err.code);
    return text;
}

} // namespace detail

/**
 * A failed kvshard call. what() is "source:line:column: message" (the parts
 * that are known); the accessors give each field of the C error record.
 */
class Error : public std::runtime_error
{
  public:
    /** From the record a C call filled. */
    explicit Error(const kvshard_error &err)
        : std::runtime_error(detail::format_error(err)), err_(err)
    {
    }

    /** A failure without a location: `code` and a message. */
    Error(int code, std::string_view message)
        : std::runtime_error(std::string(message)), err_(make(code, message))
    {
    }

    /** The kvshard_status, a negative number. */
    int code() const noexcept
    {
        return err_.code;
    }
    kvshard_status status() const noexcept
    {
        return static_cast<kvshard_status>(err_.code);
    }
    /** kvshard_strerror() of the code. */
    const char *code_name() const noexcept
    {
        return kvshard_strerror(err_.code);
    }
    /** File or origin of the offending text; "" when none. */
    const char *source() const noexcept
    {
        return err_.source;
    }
    /** 1-based line and column, 0 when unknown. */
    int line() const noexcept
    {
        return err_.line;
    }
    int column() const noexcept
    {
        return err_.column;
    }
    /** 0-based byte offset into the source. */
    std::size_t offset() const noexcept
    {
        return err_.offset;
    }
    /** The message alone, without the location. */
    const char *message() const noexcept
    {
        return err_.message;
    }
    /** The whole C record. */
    const kvshard_error &record() const noexcept
    {
        return err_;
    }

  private:
    static kvshard_error make(int code, std::string_view message) noexcept
    {
        kvshard_error e{};
        e.code = code;
        detail::copy_field(e.message, message);
        return e;
    }

    kvshard_error err_;
};

namespace detail
{

/* Throws for a failed call that filled `err`. */
inline void check(int rc, kvshard_error &err)
{
    if (rc == KVSHARD_OK)
        return;
    if (err.code == KVSHARD_OK)
        err.code = rc;
    if (err.message[0] == '\0')
        copy_field(err.message, kvshard_strerror(rc));
    throw Error(err);
}

/* Throws for a failed call that reports only a status. */
inline void check(int rc, const char *what)
{
    if (rc == KVSHARD_OK)
        return;
    std::string message(what);
    message += ": ";
    message += kvshard_strerror(rc);
    throw Error(rc, message);
}

[[noreturn]] inline void throw_empty(const char *type)
{
    std::string message("kvshard::");
    message += type;
    message += " is empty (moved from or released)";
    throw Error(KVSHARD_EINVAL, message);
}

/* NULL for an empty text, so that the C call picks its default. */
inline const char *or_null(const std::string &text) noexcept
{
    return text.empty() ? nullptr : text.c_str();
}

template <class T> struct is_setting_value {
    using U = std::remove_cv_t<T>;
    static constexpr bool value = std::is_integral_v<U> && !std::is_same_v<U, char> &&
                                  !std::is_same_v<U, signed char> &&
                                  !std::is_same_v<U, unsigned char>;
};

/* Text of a boolean or integer setting, as kvshard_options_set() reads it. */
template <class T> inline std::string setting_text(T value)
{
    if constexpr (std::is_same_v<std::remove_cv_t<T>, bool>)
        return value ? "true" : "false";
    else
        return std::to_string(value);
}

struct ModelFree {
    void operator()(kvshard_model *p) const noexcept
    {
        kvshard_model_free(p);
    }
};
struct DeploymentFree {
    void operator()(kvshard_deployment *p) const noexcept
    {
        kvshard_deployment_free(p);
    }
};
struct PlanFree {
    void operator()(kvshard_plan *p) const noexcept
    {
        kvshard_plan_free(p);
    }
};

} // namespace detail

/* ------------------------------------------------------------------------ */
/* Options                                                                   */
/* ------------------------------------------------------------------------ */

/**
 * kvshard_options with its defaults (KVSHARD_OPTIONS_INIT), the settings an
 * engine profile reads beside them, and a checked setter by key name for
 * both. The fields stay reachable: `options->world_size = 8`. A copy holds
 * a copy of the settings.
 */
class Options
{
  public:
    Options() noexcept : o_(KVSHARD_OPTIONS_INIT)
    {
    }
    /** A copy of a C options struct (its `size` as the caller set it) and
     *  of the settings it points to. */
    explicit Options(const kvshard_options &options) : o_(options)
    {
        o_.settings = nullptr;
        if (options.settings != nullptr)
            copy_settings(options.settings);
    }
    Options(const Options &other) : o_(other.o_)
    {
        o_.settings = nullptr;
        if (other.s_)
            copy_settings(other.s_.get());
    }
    Options &operator=(const Options &other)
    {
        if (this != &other) {
            Options copy(other);
            std::swap(o_, copy.o_);
            std::swap(s_, copy.s_);
        }
        return *this;
    }
    Options(Options &&) noexcept = default;
    Options &operator=(Options &&) noexcept = default;

    /**
     * Set one option or setting by its deployment key from text, as
     * kvshard_options_set() and kvshard_settings_set(): "world_size", "4";
     * "memory_per_rank", "20GiB"; "enable_prefix_cache", "false". `origin`
     * names the text in errors (empty: "option"). On failure the options
     * are unchanged and kvshard::Error is thrown.
     */
    Options &set(std::string_view key, std::string_view value, std::string_view origin = {})
    {
        const std::string k(key), v(value), o(origin);
        kvshard_setting_info info = KVSHARD_SETTING_INFO_INIT;
        kvshard_error err{};
        if (kvshard_setting_find(&info, k.c_str()) == KVSHARD_OK) {
            if (!s_)
                copy_settings(nullptr);
            detail::check(
                kvshard_settings_set(s_.get(), k.c_str(), v.c_str(), detail::or_null(o), &err),
                err);
            return *this;
        }
        detail::check(kvshard_options_set(&o_, k.c_str(), v.c_str(), detail::or_null(o), &err),
                      err);
        return *this;
    }
    /** Set a boolean or integer option: set("world_size", 8),
     *  set("enable_layerwise_split", true). */
    template <class T, std::enable_if_t<detail::is_setting_value<T>::value, int> = 0>
    Options &set(std::string_view key, T value, std::string_view origin = {})
    {
        return set(key, std::string_view(detail::setting_text(value)), origin);
    }

    kvshard_options *operator->() noexcept
    {
        return &o_;
    }
    const kvshard_options *operator->() const noexcept
    {
        return &o_;
    }
    kvshard_options &raw() noexcept
    {
        return o_;
    }
    const kvshard_options &raw() const noexcept
    {
        return o_;
    }
    const kvshard_options *get() const noexcept
    {
        return &o_;
    }

  private:
    struct SettingsFree {
        void operator()(kvshard_settings *s) const noexcept
        {
            kvshard_settings_free(s);
        }
    };
    void copy_settings(const kvshard_settings *from)
    {
        kvshard_settings *s = nullptr;
        kvshard_error err{};
        detail::check(kvshard_settings_copy(&s, from, nullptr, &err), err);
        s_.reset(s);
        o_.settings = s;
    }

    kvshard_options o_;
    std::unique_ptr<kvshard_settings, SettingsFree> s_;
};

/* ------------------------------------------------------------------------ */
/* Model                                                                     */
/* ------------------------------------------------------------------------ */

namespace detail
{

/* The model queries, shared by the owning Model and the borrowed ModelView. */
template <class Derived> class ModelQueries
{
  public:
    /** model_type of the config ("" when absent). */
    std::string type() const
    {
        return kvshard_model_type(h());
    }
    /** L: decoder layers, without draft layers. */
    std::uint32_t num_layers() const
    {
        return kvshard_model_num_layers(h());
    }
    std::uint32_t num_draft_layers() const
    {
        return kvshard_model_num_draft_layers(h());
    }
    kvshard_attention attention() const
    {
        return kvshard_model_attention(h());
    }
    /** Decoder layers of one kind. */
    std::uint32_t count(kvshard_layer_kind kind) const
    {
        return kvshard_model_count(h(), kind);
    }
    /** Kind of decoder layer `layer`; KVSHARD_ELAYER when out of range. */
    kvshard_layer_kind layer_kind(std::uint32_t layer) const
    {
        kvshard_layer_kind kind = KVSHARD_LAYER_FULL_ATTENTION;
        check(kvshard_model_layer_kind(&kind, h(), layer), "kvshard::Model::layer_kind");
        return kind;
    }
    kvshard_state_kind state_kind() const
    {
        return kvshard_model_state_kind(h());
    }
    kvshard_dtype state_dtype() const
    {
        return kvshard_model_state_dtype(h());
    }

  private:
    const kvshard_model *h() const
    {
        const kvshard_model *p = static_cast<const Derived *>(this)->get();
        if (p == nullptr)
            throw_empty(Derived::type_name);
        return p;
    }
};

} // namespace detail

/** A model borrowed from a Model or a Deployment; valid while its owner's
 *  C handle lives. Cheap to copy. */
class ModelView : public detail::ModelQueries<ModelView>
{
  public:
    static constexpr const char *type_name = "ModelView";

    ModelView() noexcept = default;
    explicit ModelView(const kvshard_model *model) noexcept : m_(model)
    {
    }
    const kvshard_model *get() const noexcept
    {
        return m_;
    }
    explicit operator bool() const noexcept
    {
        return m_ != nullptr;
    }

  private:
    const kvshard_model *m_ = nullptr;
};

/** An owned, immutable model (kvshard_model). */
class Model : public detail::ModelQueries<Model>
{
  public:
    static constexpr const char *type_name = "Model";

    /** An empty model. */
    Model() noexcept = default;
    /** Adopt a handle from the C API (freed with kvshard_model_free()). */
    explicit Model(kvshard_model *model) noexcept : p_(model)
    {
    }

    /** Read a model config file, or a directory holding config.json.
     *  `allocator` NULL: the C library's. */
    [[nodiscard]] static Model load_file(const std::string &path,
                                         const kvshard_allocator *allocator = nullptr)
    {
        kvshard_load_options options = KVSHARD_LOAD_OPTIONS_INIT;
        options.allocator = allocator;
        kvshard_model *out = nullptr;
        kvshard_error err{};
        detail::check(kvshard_model_load_file(&out, path.c_str(), &options, &err), err);
        return Model(out);
    }

    /** Read a model config from text; `name` is the error source (empty:
     *  "<string>"). */
    [[nodiscard]] static Model load_string(std::string_view text, const std::string &name = {},
                                           const kvshard_allocator *allocator = nullptr)
    {
        kvshard_load_options options = KVSHARD_LOAD_OPTIONS_INIT;
        options.allocator = allocator;
        kvshard_model *out = nullptr;
        kvshard_error err{};
        detail::check(kvshard_model_load_string(&out, text.data(), text.size(),
                                                detail::or_null(name), &options, &err),
                      err);
        return Model(out);
    }

    /** Build a model from a description (start from KVSHARD_MODEL_DESC_INIT). */
    [[nodiscard]] static Model create(const kvshard_model_desc &desc,
                                      const kvshard_allocator *allocator = nullptr)
    {
        kvshard_model *out = nullptr;
        kvshard_error err{};
        detail::check(kvshard_model_create(&out, &desc, allocator, &err), err);
        return Model(out);
    }

    /** As create(desc) with the layer kinds given as a vector: num_layers and
     *  layer_kinds of `desc` are taken from `kinds`. */
    [[nodiscard]] static Model create(kvshard_model_desc desc,
                                      const std::vector<kvshard_layer_kind> &kinds,
                                      const kvshard_allocator *allocator = nullptr)
    {
        if (kinds.size() > KVSHARD_MAX_LAYERS)
            throw Error(KVSHARD_ELIMIT, "kvshard::Model::create: more layer kinds than "
                                        "KVSHARD_MAX_LAYERS");
        desc.num_layers = static_cast<std::uint32_t>(kinds.size());
        desc.layer_kinds = kinds.data();
        return create(desc, allocator);
    }

    Model(Model &&) noexcept = default;
    Model &operator=(Model &&) noexcept = default;
    Model(const Model &) = delete;
    Model &operator=(const Model &) = delete;
    ~Model() = default;

    /** A borrowed view, valid while this model's handle lives. */
    ModelView view() const noexcept
    {
        return ModelView(p_.get());
    }
    operator ModelView() const noexcept
    {
        return view();
    }

    const kvshard_model *get() const noexcept
    {
        return p_.get();
    }
    kvshard_model *get() noexcept
    {
        return p_.get();
    }
    /** Give up ownership: the caller frees the handle. */
    kvshard_model *release() noexcept
    {
        return p_.release();
    }
    explicit operator bool() const noexcept
    {
        return static_cast<bool>(p_);
    }

  private:
    std::unique_ptr<kvshard_model, detail::ModelFree> p_;
};

/* ------------------------------------------------------------------------ */
/* Plan                                                                      */
/* ------------------------------------------------------------------------ */

/** A read-only run of layer indices borrowed from a plan (like
 *  std::span<const std::uint32_t>). */
class LayerSpan
{
  public:
    using value_type = std::uint32_t;
    using size_type = std::size_t;
    using const_iterator = const std::uint32_t *;
    using iterator = const_iterator;

    constexpr LayerSpan() noexcept = default;
    constexpr LayerSpan(const std::uint32_t *data, std::size_t size) noexcept
        : data_(data), size_(size)
    {
    }

    constexpr const std::uint32_t *data() const noexcept
    {
        return data_;
    }
    constexpr std::size_t size() const noexcept
    {
        return size_;
    }
    constexpr bool empty() const noexcept
    {
        return size_ == 0;
    }
    constexpr const_iterator begin() const noexcept
    {
        return data_;
    }
    constexpr const_iterator end() const noexcept
    {
        return data_ + size_;
    }
    /** Unchecked, as std::span. */
    constexpr std::uint32_t operator[](std::size_t i) const noexcept
    {
        return data_[i];
    }
    /** Checked: std::out_of_range past the end. */
    std::uint32_t at(std::size_t i) const
    {
        if (i >= size_)
            throw std::out_of_range("kvshard::LayerSpan::at");
        return data_[i];
    }
    std::vector<std::uint32_t> to_vector() const
    {
        return std::vector<std::uint32_t>(begin(), end());
    }

  private:
    const std::uint32_t *data_ = nullptr;
    std::size_t size_ = 0;
};

/** Split rank and split group of a plan rank. */
struct SplitPosition {
    std::uint32_t split_rank;
    std::uint32_t split_group;
};

/** One plan warning; the message is copied. */
struct Warning {
    kvshard_warning_code code;
    std::string message;

    /** Machine-readable name ("split_disabled", ...). */
    const char *name() const noexcept
    {
        return kvshard_warning_name(code);
    }
};

/** A kvshard_budget from its figures (see kvshard_plan_blocks_for()). */
inline kvshard_budget make_budget(std::uint64_t memory_per_rank, std::uint64_t reserved_bytes = 0,
                                  std::uint64_t extra_bytes_per_block = 0,
                                  std::uint32_t context_length = 0) noexcept
{
    kvshard_budget budget = KVSHARD_BUDGET_INIT;
    budget.memory_per_rank = memory_per_rank;
    budget.reserved_bytes = reserved_bytes;
    budget.extra_bytes_per_block = extra_bytes_per_block;
    budget.context_length = context_length;
    return budget;
}


/** An owned, immutable plan (kvshard_plan). Its const members may be called
 *  from any number of threads at once. */
class Plan
{
  public:
    /** Every plan rank, for blocks_for(). */
    static constexpr std::uint32_t all_ranks = KVSHARD_ALL_RANKS;

    /** An empty plan. */
    Plan() noexcept = default;
    /** Adopt a handle from the C API (freed with kvshard_plan_free()). */
    explicit Plan(kvshard_plan *plan) noexcept : p_(plan)
    {
    }

    /** Plan `model` under `options`; the plan keeps what it needs, so the
     *  model may go away afterwards. */
    [[nodiscard]] static Plan create(ModelView model, const Options &options = Options(),
                                     const kvshard_allocator *allocator = nullptr)
    {
        if (!model)
            detail::throw_empty("Model");
        kvshard_plan *out = nullptr;
        kvshard_error err{};
        detail::check(kvshard_plan_create(&out, model.get(), options.get(), allocator, &err), err);
        return Plan(out);
    }

    Plan(Plan &&) noexcept = default;
    Plan &operator=(Plan &&) noexcept = default;
    Plan(const Plan &) = delete;
    Plan &operator=(const Plan &) = delete;
    ~Plan() = default;

    /** The options with the engine profile's defaults settled. */
    Options options() const
    {
        Options o;
        detail::check(kvshard_plan_options(&o.raw(), h()), "kvshard::Plan::options");
        return o;
    }
    /** What the plan keeps of its model besides L. */
    kvshard_plan_model_info model_info() const
    {
        kvshard_plan_model_info m = KVSHARD_PLAN_MODEL_INFO_INIT;
        detail::check(kvshard_plan_model(&m, h()), "kvshard::Plan::model_info");
        return m;
    }
    /** The model's draft layers, numbered after the decoder layers. */
    std::uint32_t num_draft_layers() const
    {
        return model_info().num_draft_layers;
    }
    /** T: the attention TP size. */
    std::uint32_t attn_tp_size() const
    {
        return kvshard_plan_attn_tp_size(h());
    }
    /** S_eff: the split size in force. */
    std::uint32_t effective_split_size() const
    {
        return kvshard_plan_effective_split_size(h());
    }
    std::uint32_t replication_factor() const
    {
        return kvshard_plan_replication_factor(h());
    }
    std::uint32_t num_layers() const
    {
        return kvshard_plan_num_layers(h());
    }
    kvshard_state_kind state_kind() const
    {
        return model_info().state_kind;
    }
    kvshard_dtype state_dtype() const
    {
        return model_info().state_dtype;
    }
    /** Kind of a decoder layer; KVSHARD_ELAYER when out of range. */
    kvshard_layer_kind layer_kind(std::uint32_t layer) const
    {
        kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
        int rc = layer < num_layers() ? kvshard_plan_layer_storage(&st, h(), 0, layer)
                                      : KVSHARD_ELAYER;
        detail::check(rc, "kvshard::Plan::layer_kind");
        return st.kind;
    }
    /** Split rank that stores a KV layer, KVSHARD_OWNER_ALL or
     *  KVSHARD_OWNER_NONE; KVSHARD_ELAYER when out of range. */
    std::int32_t layer_owner(std::uint32_t layer) const
    {
        std::int32_t owner = KVSHARD_OWNER_NONE;
        detail::check(kvshard_plan_layer_owner(&owner, h(), layer), "kvshard::Plan::layer_owner");
        return owner;
    }
    /** Whether the rank stores any cache of the layer (false out of range). */
    bool owns(std::uint32_t plan_rank, std::uint32_t layer) const
    {
        return kvshard_plan_owns(h(), plan_rank, layer);
    }
    /** Whether the rank stores the layer's paged KV (false out of range). */
    bool stores_kv(std::uint32_t plan_rank, std::uint32_t layer) const
    {
        return kvshard_plan_stores_kv(h(), plan_rank, layer);
    }
    /** KVSHARD_ERANK when out of range. */
    SplitPosition split_position(std::uint32_t plan_rank) const
    {
        SplitPosition pos{0, 0};
        detail::check(
            kvshard_plan_split_position(&pos.split_rank, &pos.split_group, h(), plan_rank),
            "kvshard::Plan::split_position");
        return pos;
    }
    /** The KV layers the rank stores, ascending, borrowed from the plan.
     *  KVSHARD_ERANK when out of range. */
    LayerSpan rank_layers(std::uint32_t plan_rank) const
    {
        const std::uint32_t *layers = nullptr;
        std::size_t count = 0;
        detail::check(kvshard_plan_rank_layers(&layers, &count, h(), plan_rank),
                      "kvshard::Plan::rank_layers");
        return LayerSpan(layers, count);
    }
    /** How the rank stores the layer. KVSHARD_ERANK, KVSHARD_ELAYER. */
    kvshard_layer_storage layer_storage(std::uint32_t plan_rank, std::uint32_t layer) const
    {
        kvshard_layer_storage out = KVSHARD_LAYER_STORAGE_INIT;
        detail::check(kvshard_plan_layer_storage(&out, h(), plan_rank, layer),
                      "kvshard::Plan::layer_storage");
        return out;
    }
    /** Memory figures of the rank. KVSHARD_ERANK when out of range. */
    kvshard_rank_memory rank_memory(std::uint32_t plan_rank) const
    {
        kvshard_rank_memory out = KVSHARD_RANK_MEMORY_INIT;
        detail::check(kvshard_plan_rank_memory(&out, h(), plan_rank), "kvshard::Plan::rank_memory");
        return out;
    }
    /** Capacity common to all ranks. */
    kvshard_capacity capacity() const
    {
        kvshard_capacity out = KVSHARD_CAPACITY_INIT;
        detail::check(kvshard_plan_capacity(&out, h()), "kvshard::Plan::capacity");
        return out;
    }
    /** The figures at S_eff = 1, for comparison. */
    kvshard_uniform uniform() const
    {
        kvshard_uniform out = KVSHARD_UNIFORM_INIT;
        detail::check(kvshard_plan_uniform(&out, h()), "kvshard::Plan::uniform");
        return out;
    }
    /** Blocks that fit `budget` on one rank, or on every rank (all_ranks). */
    kvshard_blocks blocks_for(std::uint32_t plan_rank, const kvshard_budget &budget) const
    {
        kvshard_blocks out = KVSHARD_BLOCKS_INIT;
        kvshard_error err{};
        detail::check(kvshard_plan_blocks_for(&out, h(), plan_rank, &budget, &err), err);
        return out;
    }
    /** A capacity figure by its JSON name ("num_blocks", "state_slots"). */
    kvshard_figure capacity_figure(std::string_view name) const
    {
        const std::string n(name);
        kvshard_figure out = KVSHARD_FIGURE_INIT;
        detail::check(kvshard_plan_capacity_figure(&out, h(), n.c_str()),
                      "kvshard::Plan::capacity_figure");
        return out;
    }
    /** The same figure at a measured budget, as blocks_for() computes it. */
    kvshard_figure blocks_figure(std::uint32_t plan_rank, const kvshard_budget &budget,
                                 std::string_view name) const
    {
        const std::string n(name);
        kvshard_figure out = KVSHARD_FIGURE_INIT;
        kvshard_error err{};
        detail::check(kvshard_plan_blocks_figure(&out, h(), plan_rank, &budget, n.c_str(), &err),
                      err);
        return out;
    }

    /** How many figures the plan's engine profile predicts the engine logs
     *  (0 under the kvshard profile). */
    std::size_t engine_figure_count() const
    {
        return kvshard_plan_engine_figure_count(h());
    }
    /** Engine figure `index`, in the JSON "engine" object's order; text is
     *  borrowed from the plan. */
    kvshard_figure engine_figure_at(std::size_t index) const
    {
        kvshard_figure out = KVSHARD_FIGURE_INIT;
        detail::check(kvshard_plan_engine_figure_at(&out, h(), index),
                      "kvshard::Plan::engine_figure_at");
        return out;
    }
    /** An engine figure by name ("num_gpu_blocks", "max_total_num_tokens");
     *  KVSHARD_EUNKNOWNKEY when the profile has none of that name. */
    kvshard_figure engine_figure(std::string_view name) const
    {
        const std::string n(name);
        kvshard_figure out = KVSHARD_FIGURE_INIT;
        detail::check(kvshard_plan_engine_figure(&out, h(), n.c_str()),
                      "kvshard::Plan::engine_figure");
        return out;
    }
    /** Every engine figure, in order. */
    std::vector<kvshard_figure> engine_figures() const
    {
        std::vector<kvshard_figure> out;
        const std::size_t n = engine_figure_count();
        out.reserve(n);
        for (std::size_t i = 0; i < n; i++)
            out.push_back(engine_figure_at(i));
        return out;
    }

    std::size_t warning_count() const
    {
        return kvshard_plan_warning_count(h());
    }
    /** All warnings, in the plan's fixed order. */
    std::vector<Warning> warnings() const
    {
        const kvshard_plan *p = h();
        std::vector<Warning> out;
        const std::size_t n = kvshard_plan_warning_count(p);
        out.reserve(n);
        for (std::size_t i = 0; i < n; i++) {
            kvshard_warning_code code = KVSHARD_WARN_SPLIT_DISABLED;
            const char *message = nullptr;
            detail::check(kvshard_plan_warning(&code, &message, p, i), "kvshard::Plan::warnings");
            out.push_back(Warning{code, message != nullptr ? message : ""});
        }
        return out;
    }
    bool has_warning(kvshard_warning_code code) const
    {
        return kvshard_plan_has_warning(h(), code);
    }

    /** Digest of the whole plan. */
    std::uint64_t digest() const
    {
        return kvshard_plan_digest(h());
    }
    /** Digest of the layout only (no memory or capacity). */
    std::uint64_t layout_digest() const
    {
        return kvshard_plan_layout_digest(h());
    }

    /** The one-line log summary of a rank. KVSHARD_ERANK when out of range. */
    std::string describe_rank(std::uint32_t plan_rank) const
    {
        const kvshard_plan *p = h();
        int n = kvshard_plan_describe_rank(nullptr, 0, p, plan_rank);
        detail::check(n < 0 ? n : KVSHARD_OK, "kvshard::Plan::describe_rank");
        std::string line(static_cast<std::size_t>(n) + 1, '\0');
        n = kvshard_plan_describe_rank(line.data(), line.size(), p, plan_rank);
        detail::check(n < 0 ? n : KVSHARD_OK, "kvshard::Plan::describe_rank");
        line.resize(static_cast<std::size_t>(n));
        return line;
    }
    /** The log line with the blocks the rank allocates (the count agreed
     *  over ranks from measured memory) in place of the plan's. */
    std::string describe_rank(std::uint32_t plan_rank, std::uint64_t num_blocks) const
    {
        const kvshard_plan *p = h();
        int n = kvshard_plan_describe_rank_blocks(nullptr, 0, p, plan_rank, num_blocks);
        detail::check(n < 0 ? n : KVSHARD_OK, "kvshard::Plan::describe_rank");
        std::string line(static_cast<std::size_t>(n) + 1, '\0');
        n = kvshard_plan_describe_rank_blocks(line.data(), line.size(), p, plan_rank, num_blocks);
        detail::check(n < 0 ? n : KVSHARD_OK, "kvshard::Plan::describe_rank");
        line.resize(static_cast<std::size_t>(n));
        return line;
    }

    /** The dtype the KV cache is sized in (auto resolved to the model's). */
    kvshard_dtype kv_cache_dtype() const
    {
        return kvshard_plan_kv_cache_dtype(h());
    }
    /** The KV geometry of a layer on a rank: heads, head dims, latent and
     *  index dims. KVSHARD_ERANK, KVSHARD_ELAYER when out of range. */
    kvshard_layer_kv_geometry layer_kv_geometry(std::uint32_t plan_rank, std::uint32_t layer) const
    {
        kvshard_layer_kv_geometry out = KVSHARD_LAYER_KV_GEOMETRY_INIT;
        kvshard_error err{};
        detail::check(kvshard_plan_layer_kv_geometry(&out, h(), plan_rank, layer, &err), err);
        return out;
    }
    /** The tensors of a layer's state on a rank, for one sequence (empty
     *  for a layer without state or of another stage). */
    std::vector<kvshard_state_tensor> layer_state_shapes(std::uint32_t plan_rank,
                                                         std::uint32_t layer) const
    {
        std::vector<kvshard_state_tensor> out(KVSHARD_MAX_STATE_TENSORS,
                                              kvshard_state_tensor KVSHARD_STATE_TENSOR_INIT);
        std::size_t count = 0;
        kvshard_error err{};
        detail::check(kvshard_plan_layer_state_shapes(out.data(), out.size(), &count, h(),
                                                      plan_rank, layer, &err),
                      err);
        out.resize(count);
        return out;
    }

    /** P: pipeline stages. */
    std::uint32_t pp_size() const
    {
        return kvshard_plan_pp_size(h());
    }

    /** P x T: the plan ranks the rank queries take. */
    std::uint32_t num_ranks() const
    {
        return kvshard_plan_num_ranks(h());
    }

    /** A pipeline stage. KVSHARD_ESTAGE when out of range. */
    kvshard_stage_info stage(std::uint32_t stage) const
    {
        kvshard_stage_info out = KVSHARD_STAGE_INFO_INIT;
        detail::check(kvshard_plan_stage(&out, h(), stage), "kvshard::Plan::stage");
        return out;
    }

    /** The stage a layer is on (draft layers: the last). KVSHARD_ELAYER
     *  when out of range. */
    std::uint32_t layer_stage(std::uint32_t layer) const
    {
        std::uint32_t out = 0;
        detail::check(kvshard_plan_layer_stage(&out, h(), layer), "kvshard::Plan::layer_stage");
        return out;
    }

    /** The stages' layer counts as the engines take them: "31,30". */
    std::string pp_partition() const
    {
        const kvshard_plan *p = h();
        int n = kvshard_plan_pp_partition(nullptr, 0, p);
        detail::check(n < 0 ? n : KVSHARD_OK, "kvshard::Plan::pp_partition");
        std::string text(static_cast<std::size_t>(n) + 1, '\0');
        n = kvshard_plan_pp_partition(text.data(), text.size(), p);
        detail::check(n < 0 ? n : KVSHARD_OK, "kvshard::Plan::pp_partition");
        text.resize(static_cast<std::size_t>(n));
        return text;
    }

    /** Where a global rank sits: its stage, TP rank and plan rank.
     *  KVSHARD_EGLOBALRANK outside the world. */
    kvshard_rank_position locate(std::uint32_t global_rank) const
    {
        kvshard_rank_position out = KVSHARD_RANK_POSITION_INIT;
        detail::check(kvshard_plan_locate(&out, h(), global_rank), "kvshard::Plan::locate");
        return out;
    }

    /** The global rank of a rank's coordinates. KVSHARD_ESTAGE, KVSHARD_ERANK
     *  when out of range. */
    std::uint32_t global_rank(std::uint32_t dp_rank, std::uint32_t stage, std::uint32_t cp_rank,
                              std::uint32_t tp_rank) const
    {
        std::uint32_t out = 0;
        detail::check(kvshard_plan_global_rank(&out, h(), dp_rank, stage, cp_rank, tp_rank),
                      "kvshard::Plan::global_rank");
        return out;
    }


    const kvshard_plan *get() const noexcept
    {
        return p_.get();
    }
    /** Give up ownership: the caller frees the handle. */
    kvshard_plan *release() noexcept
    {
        return p_.release();
    }
    explicit operator bool() const noexcept
    {
        return static_cast<bool>(p_);
    }

  private:
    const kvshard_plan *h() const
    {
        if (!p_)
            detail::throw_empty("Plan");
        return p_.get();
    }

    std::unique_ptr<kvshard_plan, detail::PlanFree> p_;
};

/* ------------------------------------------------------------------------ */
/* Deployment                                                                */
/* ------------------------------------------------------------------------ */

/** An owned deployment: a model plus its options (kvshard_deployment). */
class Deployment
{
  public:
    /** An empty deployment. */
    Deployment() noexcept = default;
    /** Adopt a handle from the C API (freed with kvshard_deployment_free()). */
    explicit Deployment(kvshard_deployment *deployment) noexcept : p_(deployment)
    {
    }

    /** Read a deployment file or a bare model config. */
    [[nodiscard]] static Deployment load_file(const std::string &path,
                                              const kvshard_allocator *allocator = nullptr)
    {
        kvshard_load_options options = KVSHARD_LOAD_OPTIONS_INIT;
        options.allocator = allocator;
        kvshard_deployment *out = nullptr;
        kvshard_error err{};
        detail::check(kvshard_deployment_load_file(&out, path.c_str(), &options, &err), err);
        return Deployment(out);
    }

    /** Read a deployment from text. `name` is the error source (empty:
     *  "<string>"); relative model paths are taken from `base_dir` (empty:
     *  the current directory). */
    [[nodiscard]] static Deployment load_string(std::string_view text, const std::string &name = {},
                                                const std::string &base_dir = {},
                                                const kvshard_allocator *allocator = nullptr)
    {
        kvshard_load_options options = KVSHARD_LOAD_OPTIONS_INIT;
        options.allocator = allocator;
        kvshard_deployment *out = nullptr;
        kvshard_error err{};
        detail::check(kvshard_deployment_load_string(&out, text.data(), text.size(),
                                                     detail::or_null(name),
                                                     detail::or_null(base_dir), &options, &err),
                      err);
        return Deployment(out);
    }

    /** A deployment of `model`, which it takes over on success; on failure
     *  `model` still owns its handle. */
    [[nodiscard]] static Deployment create(Model &&model, const Options &options = Options())
    {
        if (!model)
            detail::throw_empty("Model");
        kvshard_deployment *out = nullptr;
        kvshard_error err{};
        /* Ownership passes only when the call succeeds; then the Model lets
         * go of the handle. */
        detail::check(kvshard_deployment_create(&out, model.get(), options.get(), &err), err);
        static_cast<void>(model.release());
        return Deployment(out);
    }

    Deployment(Deployment &&) noexcept = default;
    Deployment &operator=(Deployment &&) noexcept = default;
    Deployment(const Deployment &) = delete;
    Deployment &operator=(const Deployment &) = delete;
    ~Deployment() = default;

    /** The deployment's model, borrowed. */
    ModelView model() const
    {
        return ModelView(kvshard_deployment_model(h()));
    }
    /** The options: file values over defaults, then overrides. */
    Options options() const
    {
        Options o;
        detail::check(kvshard_deployment_options(&o.raw(), h()), "kvshard::Deployment::options");
        return o;
    }

    /** Override one option from text; `origin` names it in later errors
     *  (empty: "override"). On failure the deployment is unchanged. */
    Deployment &set(std::string_view key, std::string_view value, std::string_view origin = {})
    {
        kvshard_deployment *p = hm();
        const std::string k(key), v(value), o(origin);
        kvshard_error err{};
        detail::check(kvshard_deployment_set(p, k.c_str(), v.c_str(), detail::or_null(o), &err),
                      err);
        return *this;
    }
    /** Override a boolean or integer option. */
    template <class T, std::enable_if_t<detail::is_setting_value<T>::value, int> = 0>
    Deployment &set(std::string_view key, T value, std::string_view origin = {})
    {
        return set(key, std::string_view(detail::setting_text(value)), origin);
    }

    /** Apply gflags-style arguments ("--world_size=8", "--flagfile=FILE").
     *  `flags`: KVSHARD_ARGS_IGNORE_UNKNOWN or 0. All or nothing. */
    Deployment &apply_args(const std::vector<std::string> &args, unsigned flags = 0)
    {
        std::vector<const char *> argv;
        argv.reserve(args.size());
        for (const std::string &a : args)
            argv.push_back(a.c_str());
        return apply_args(argv.size(), argv.data(), flags);
    }
    /** The same for a C argument vector (argv + 1, argc - 1, say). */
    Deployment &apply_args(std::size_t count, const char *const *args, unsigned flags = 0)
    {
        kvshard_deployment *p = hm();
        kvshard_error err{};
        detail::check(kvshard_deployment_apply_args(p, count, args, flags, &err), err);
        return *this;
    }

    /** Plan the deployment. */
    [[nodiscard]] Plan plan() const
    {
        kvshard_plan *out = nullptr;
        kvshard_error err{};
        detail::check(kvshard_deployment_plan(&out, h(), &err), err);
        return Plan(out);
    }

    const kvshard_deployment *get() const noexcept
    {
        return p_.get();
    }
    kvshard_deployment *get() noexcept
    {
        return p_.get();
    }
    /** Give up ownership: the caller frees the handle. */
    kvshard_deployment *release() noexcept
    {
        return p_.release();
    }
    explicit operator bool() const noexcept
    {
        return static_cast<bool>(p_);
    }

  private:
    const kvshard_deployment *h() const
    {
        if (!p_)
            detail::throw_empty("Deployment");
        return p_.get();
    }
    kvshard_deployment *hm()
    {
        if (!p_)
            detail::throw_empty("Deployment");
        return p_.get();
    }

    std::unique_ptr<kvshard_deployment, detail::DeploymentFree> p_;
};

} // namespace kvshard

#endif /* KVSHARD_KVSHARD_HPP */
