/*
 * explore.hpp: C++17 wrappers over kvshard/explore.h and kvshard/output.h,
 * on top of kvshard.hpp and with its conventions: kvshard::Comparison,
 * kvshard::Fit and kvshard::Transfer own their C handles, and
 * kvshard::to_json(), to_text(), to_svg() and to_html() write a plan.
 *
 * Experimental until kvshard 1.0, as the C headers it wraps. Installed
 * only with the explore part of kvshard (KVSHARD_BUILD_EXPLORE).
 */
#ifndef KVSHARD_EXPLORE_HPP
#define KVSHARD_EXPLORE_HPP

#include "kvshard/explore.h"
#include "kvshard/kvshard.hpp"
#include "kvshard/output.h"

namespace kvshard
{

/** The short name of a status ("ok", "weights", "does_not_fit", ...), as
 *  fit's reasons and the JSON documents name errors (kvshard_status_name;
 *  strerror() gives the English sentence). */
inline const char *name(kvshard_status code) noexcept
{
    return kvshard_status_name(code);
}

namespace detail
{

/* Output collected from a kvshard_write_fn into a string. An exception from
 * the string stops the C writer and is rethrown once it has returned. */
struct TextSink {
    std::string text;
    std::exception_ptr error;

    static int write(void *user, const char *data, std::size_t len) noexcept
    {
        TextSink *sink = static_cast<TextSink *>(user);
        try {
            sink->text.append(data, len);
            return 0;
        } catch (...) {
            sink->error = std::current_exception();
            return 1;
        }
    }

    template <class Fn> static std::string collect(Fn &&call, const char *what)
    {
        TextSink sink;
        int rc = call(&TextSink::write, static_cast<void *>(&sink));
        if (sink.error)
            std::rethrow_exception(sink.error);
        check(rc, what);
        return std::move(sink.text);
    }
};

struct ComparisonFree {
    void operator()(kvshard_comparison *p) const noexcept
    {
        kvshard_comparison_free(p);
    }
};
struct FitFree {
    void operator()(kvshard_fit *p) const noexcept
    {
        kvshard_fit_free(p);
    }
};

} // namespace detail

/** kvshard_compare_options (KVSHARD_COMPARE_OPTIONS_INIT otherwise). */
inline kvshard_compare_options
make_compare_options(bool sweep_pp = false, kvshard_rank_by rank_by = KVSHARD_RANK_AUTO) noexcept
{
    kvshard_compare_options co = KVSHARD_COMPARE_OPTIONS_INIT;
    co.sweep_pp = sweep_pp;
    co.rank_by = rank_by;
    return co;
}

/* ------------------------------------------------------------------------ */
/* Comparison                                                                */
/* ------------------------------------------------------------------------ */

/** An owned comparison of every split size and ownership rule. */
class Comparison
{
  public:
    /** An empty comparison. */
    Comparison() noexcept = default;
    /** Adopt a handle from the C API (freed with kvshard_comparison_free()). */
    explicit Comparison(kvshard_comparison *comparison) noexcept : p_(comparison)
    {
    }

    /** Compare split sizes for `model` (the split fields of `options` are
     *  ignored). */
    [[nodiscard]] static Comparison
    create(ModelView model, const Options &options = Options(),
           const kvshard_compare_options &compare_options = make_compare_options(),
           const kvshard_allocator *allocator = nullptr)
    {
        if (!model)
            detail::throw_empty("Model");
        kvshard_comparison *out = nullptr;
        kvshard_error err{};
        detail::check(kvshard_comparison_create(&out, model.get(), options.get(), &compare_options,
                                                allocator, &err),
                      err);
        return Comparison(out);
    }
    /** Compare split sizes for a deployment (kvshard_deployment_compare):
     *  its sweep_pp key sweeps pp_size. */
    [[nodiscard]] static Comparison create(const Deployment &deployment)
    {
        if (!deployment)
            detail::throw_empty("Deployment");
        kvshard_comparison *out = nullptr;
        kvshard_error err{};
        detail::check(kvshard_deployment_compare(&out, deployment.get(), &err), err);
        return Comparison(out);
    }
    /** The same with compare options (kvshard_deployment_compare_with):
     *  `compare_options.rank_by` ranks the rows, by the throughput estimate
     *  when the deployment's comm inputs give one. */
    [[nodiscard]] static Comparison create(const Deployment &deployment,
                                           const kvshard_compare_options &compare_options)
    {
        if (!deployment)
            detail::throw_empty("Deployment");
        kvshard_comparison *out = nullptr;
        kvshard_error err{};
        detail::check(
            kvshard_deployment_compare_with(&out, deployment.get(), &compare_options, &err), err);
        return Comparison(out);
    }

    Comparison(Comparison &&) noexcept = default;
    Comparison &operator=(Comparison &&) noexcept = default;
    Comparison(const Comparison &) = delete;
    Comparison &operator=(const Comparison &) = delete;
    ~Comparison() = default;

    /** Number of rows. */
    std::size_t size() const
    {
        return kvshard_comparison_row_count(h());
    }
    /** Row `index`, borrowed; KVSHARD_EINVAL when out of range. */
    const kvshard_comparison_row &row(std::size_t index) const
    {
        const kvshard_comparison_row *r = kvshard_comparison_row_at(h(), index);
        if (r == nullptr)
            throw Error(KVSHARD_EINVAL, "kvshard::Comparison::row: index out of range");
        return *r;
    }
    const kvshard_comparison_row &operator[](std::size_t index) const
    {
        return row(index);
    }
    /** Copies of every row (their error_message still borrowed). */
    std::vector<kvshard_comparison_row> rows() const
    {
        const std::size_t n = size();
        std::vector<kvshard_comparison_row> out;
        out.reserve(n);
        for (std::size_t i = 0; i < n; i++)
            out.push_back(row(i));
        return out;
    }
    /** Index of the recommended row. */
    std::size_t recommended() const
    {
        return kvshard_comparison_recommended(h());
    }
    const kvshard_comparison_row &recommended_row() const
    {
        return row(recommended());
    }
    /** How the recommended row was chosen: KVSHARD_RANK_CAPACITY or
     *  KVSHARD_RANK_THROUGHPUT (kvshard_comparison_rank_by). */
    kvshard_rank_by rank_by() const
    {
        return kvshard_comparison_rank_by(h());
    }

    std::string to_json() const
    {
        const kvshard_comparison *p = h();
        return detail::TextSink::collect(
            [p](kvshard_write_fn fn, void *user) {
                return kvshard_comparison_write_json(p, fn, user);
            },
            "kvshard::Comparison::to_json");
    }
    /** The table `kvshard compare` prints. */
    std::string to_text() const
    {
        const kvshard_comparison *p = h();
        return detail::TextSink::collect(
            [p](kvshard_write_fn fn, void *user) {
                return kvshard_comparison_write_text(p, fn, user);
            },
            "kvshard::Comparison::to_text");
    }

    const kvshard_comparison *get() const noexcept
    {
        return p_.get();
    }
    /** Give up ownership: the caller frees the handle. */
    kvshard_comparison *release() noexcept
    {
        return p_.release();
    }
    explicit operator bool() const noexcept
    {
        return static_cast<bool>(p_);
    }

  private:
    const kvshard_comparison *h() const
    {
        if (!p_)
            detail::throw_empty("Comparison");
        return p_.get();
    }

    std::unique_ptr<kvshard_comparison, detail::ComparisonFree> p_;
};

/* ------------------------------------------------------------------------ */
/* Writers (kvshard/output.h)                                                */
/* ------------------------------------------------------------------------ */

namespace detail
{
inline const kvshard_plan *plan_of(const Plan &plan)
{
    if (!plan)
        throw_empty("Plan");
    return plan.get();
}
} // namespace detail

/** The plan's JSON document (with its final newline). */
inline std::string to_json(const Plan &plan)
{
    const kvshard_plan *p = detail::plan_of(plan);
    return detail::TextSink::collect(
        [p](kvshard_write_fn fn, void *user) { return kvshard_plan_write_json(p, fn, user); },
        "kvshard::to_json");
}
/** The text `kvshard plan` prints. */
inline std::string to_text(const Plan &plan)
{
    const kvshard_plan *p = detail::plan_of(plan);
    return detail::TextSink::collect(
        [p](kvshard_write_fn fn, void *user) { return kvshard_plan_write_text(p, fn, user); },
        "kvshard::to_text");
}
/** The layer map as a standalone SVG image. */
inline std::string to_svg(const Plan &plan)
{
    const kvshard_plan *p = detail::plan_of(plan);
    return detail::TextSink::collect(
        [p](kvshard_write_fn fn, void *user) { return kvshard_plan_write_svg(p, fn, user); },
        "kvshard::to_svg");
}
/** The self-contained HTML report, without a comparison. */
inline std::string to_html(const Plan &plan)
{
    const kvshard_plan *p = detail::plan_of(plan);
    return detail::TextSink::collect(
        [p](kvshard_write_fn fn, void *user) {
            return kvshard_report_write_html(p, nullptr, nullptr, fn, user);
        },
        "kvshard::to_html");
}
/** The HTML report with the comparison of split sizes. */
inline std::string to_html(const Plan &plan, const Comparison &comparison)
{
    const kvshard_plan *p = detail::plan_of(plan);
    const kvshard_comparison *c = comparison.get();
    if (c == nullptr)
        detail::throw_empty("Comparison");
    return detail::TextSink::collect(
        [p, c](kvshard_write_fn fn, void *user) {
            return kvshard_report_write_html(p, c, nullptr, fn, user);
        },
        "kvshard::to_html");
}

/* ------------------------------------------------------------------------ */
/* Fit                                                                       */
/* ------------------------------------------------------------------------ */

/** kvshard_fit_options for `gpus` GPUs (KVSHARD_FIT_OPTIONS_INIT otherwise):
 *  max_tp_size 0 keeps a TP group within gpus_per_node, max_pp_size
 *  0 allows one stage a node. Pins (pp_size, dp_size, unsplit) are fields
 *  to set on the result. */
inline kvshard_fit_options make_fit_options(std::uint32_t gpus, std::uint32_t max_tp_size = 0,
                                            std::uint32_t max_pp_size = 0) noexcept
{
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = gpus;
    fo.max_tp_size = max_tp_size;
    fo.max_pp_size = max_pp_size;
    return fo;
}

/** A layout a fit refused for another reason than memory: its sizes and
 *  the status its plan failed with. */
struct NotAdmitted {
    std::uint32_t tp_size;
    std::uint32_t pp_size;
    std::uint32_t dp_size;
    kvshard_status code;

    /** The status's short name ("kv_heads", "pp_layers", ...). */
    const char *name() const noexcept
    {
        return kvshard_status_name(code);
    }
};

/**
 * An owned, immutable search over the layouts of N GPUs (kvshard_fit): every
 * (T, P, D) within the node limits and each split of it, planned from the
 * device inputs and ranked by the sequences served at the context length.
 * Rows are borrowed from the C handle: the ones that fit first, best first
 * (row 0 is the recommendation), then the others in enumeration order.
 */
class Fit
{
  public:
    /** An empty fit. */
    Fit() noexcept = default;
    /** Adopt a handle from the C API (freed with kvshard_fit_free()). */
    explicit Fit(kvshard_fit *fit) noexcept : p_(fit)
    {
    }

    /** Search the layouts for `model` under `options`, which give the
     *  device (device_memory) and the weights (weights_total with
     *  weights_experts, or the model directory's safetensors); their
     *  parallel sizes and memory_per_rank are the search's to choose. */
    [[nodiscard]] static Fit create(ModelView model, const Options &options,
                                    const kvshard_fit_options &fit_options,
                                    const kvshard_allocator *allocator = nullptr)
    {
        if (!model)
            detail::throw_empty("Model");
        kvshard_fit *out = nullptr;
        kvshard_error err{};
        detail::check(
            kvshard_fit_create(&out, model.get(), options.get(), &fit_options, allocator, &err),
            err);
        return Fit(out);
    }
    /** Search the layouts of `fit_options.gpus` GPUs for a deployment
     *  (kvshard_deployment_fit): its pp_size and dp_size, when an override
     *  set them, pin those sizes, and enable_layerwise_split overridden to
     *  false pins the split to 1; fit_options.gpus_per_node 0 takes its
     *  gpus_per_node key. Errors point at the option responsible. */
    [[nodiscard]] static Fit create(const Deployment &deployment,
                                    const kvshard_fit_options &fit_options);

    Fit(Fit &&) noexcept = default;
    Fit &operator=(Fit &&) noexcept = default;
    Fit(const Fit &) = delete;
    Fit &operator=(const Fit &) = delete;
    ~Fit() = default;

    /** Every row, those that do not fit included. */
    std::size_t size() const
    {
        return kvshard_fit_row_count(h());
    }
    /** The rows that fit: the first fitting() rows. */
    std::size_t fitting() const
    {
        const kvshard_fit *p = h();
        const std::size_t n = kvshard_fit_row_count(p);
        std::size_t fits = 0;
        while (fits < n && kvshard_fit_row_at(p, fits)->fits)
            fits++;
        return fits;
    }
    /** Row `index`, borrowed; KVSHARD_EINVAL when out of range. */
    const kvshard_fit_row &row(std::size_t index) const
    {
        const kvshard_fit_row *r = kvshard_fit_row_at(h(), index);
        if (r == nullptr)
            throw Error(KVSHARD_EINVAL, "kvshard::Fit::row: index out of range");
        return *r;
    }
    const kvshard_fit_row &operator[](std::size_t index) const
    {
        return row(index);
    }
    /** Every row, borrowed, in the fit's order. */
    std::vector<const kvshard_fit_row *> rows() const
    {
        const kvshard_fit *p = h();
        const std::size_t n = kvshard_fit_row_count(p);
        std::vector<const kvshard_fit_row *> out;
        out.reserve(n);
        for (std::size_t i = 0; i < n; i++)
            out.push_back(kvshard_fit_row_at(p, i));
        return out;
    }
    /** The recommendation: row 0, the layout that serves the most. */
    const kvshard_fit_row &recommended() const
    {
        return row(0);
    }
    /** How the rows were ranked: KVSHARD_RANK_CAPACITY or
     *  KVSHARD_RANK_THROUGHPUT (kvshard_fit_rank_by). */
    kvshard_rank_by rank_by() const
    {
        return kvshard_fit_rank_by(h());
    }
    /** A fitting row's layer counts, one a stage (empty for a row that does
     *  not fit, which was never cut into stages). */
    static LayerSpan pp_partition(const kvshard_fit_row &row) noexcept
    {
        return row.fits ? LayerSpan(row.pp_partition, row.pp_size) : LayerSpan();
    }

    /** Layouts refused for another reason than memory. */
    std::vector<NotAdmitted> not_admitted() const
    {
        const kvshard_fit *p = h();
        const std::size_t n = kvshard_fit_not_admitted_count(p);
        std::vector<NotAdmitted> out;
        out.reserve(n);
        for (std::size_t i = 0; i < n; i++) {
            NotAdmitted r{0, 0, 0, KVSHARD_OK};
            int code = KVSHARD_OK;
            detail::check(kvshard_fit_not_admitted(&r.tp_size, &r.pp_size, &r.dp_size, &code, p, i),
                          "kvshard::Fit::not_admitted");
            r.code = static_cast<kvshard_status>(code);
            out.push_back(r);
        }
        return out;
    }
    /** Pairs (T, P) the node limits left out. */
    std::uint32_t limited_layouts() const
    {
        return kvshard_fit_limited_layouts(h());
    }

    /** The recommendation's flags for `engine` ("kvshard", "xllm", "vllm",
     *  "sglang" or "trtllm"), space-separated, or with `env` its environment
     *  (NAME=value entries; "" when it needs none). std::nullopt when that
     *  engine has no line for the layout (a split it does not run, a
     *  refusal, no sequence); KVSHARD_EUNKNOWNKEY is thrown for another
     *  engine. */
    std::optional<std::string> flags(std::string_view engine, bool env = false) const
    {
        const kvshard_fit *p = h();
        const std::string e(engine);
        int n = kvshard_fit_flags(nullptr, 0, p, e.c_str(), env);
        if (n == KVSHARD_EUNSUPPORTED)
            return std::nullopt;
        detail::check(n < 0 ? n : KVSHARD_OK, "kvshard::Fit::flags");
        std::string text(static_cast<std::size_t>(n) + 1, '\0');
        n = kvshard_fit_flags(text.data(), text.size(), p, e.c_str(), env);
        detail::check(n < 0 ? n : KVSHARD_OK, "kvshard::Fit::flags");
        text.resize(static_cast<std::size_t>(n));
        return text;
    }

    /** The fit's JSON document, as `kvshard fit --format=json` writes it. */
    std::string to_json() const
    {
        const kvshard_fit *p = h();
        return detail::TextSink::collect(
            [p](kvshard_write_fn fn, void *user) { return kvshard_fit_write_json(p, fn, user); },
            "kvshard::Fit::to_json");
    }
    /** The text `kvshard fit` prints, with the top `top` rows (0: 10). */
    std::string to_text(std::size_t top = 0) const
    {
        const kvshard_fit *p = h();
        return detail::TextSink::collect(
            [p, top](kvshard_write_fn fn, void *user) {
                return kvshard_fit_write_text(p, top, fn, user);
            },
            "kvshard::Fit::to_text");
    }

    const kvshard_fit *get() const noexcept
    {
        return p_.get();
    }
    /** Give up ownership: the caller frees the handle. */
    kvshard_fit *release() noexcept
    {
        return p_.release();
    }
    explicit operator bool() const noexcept
    {
        return static_cast<bool>(p_);
    }

  private:
    const kvshard_fit *h() const
    {
        if (!p_)
            detail::throw_empty("Fit");
        return p_.get();
    }

    std::unique_ptr<kvshard_fit, detail::FitFree> p_;
};

/* ------------------------------------------------------------------------ */
/* Comm: the price of the split, an estimate                                */
/* ------------------------------------------------------------------------ */

/** The plan's communication estimate (kvshard_plan_comm); `given` is false
 *  for a plan made without comm inputs. Throws kvshard::Error for a split
 *  the estimate does not price yet. */
inline kvshard_comm_estimate comm(const Plan &plan)
{
    const kvshard_plan *p = detail::plan_of(plan);
    kvshard_comm_estimate out = KVSHARD_COMM_ESTIMATE_INIT;
    kvshard_error err{};
    detail::check(kvshard_plan_comm(&out, p, &err), err);
    return out;
}

inline Fit Fit::create(const Deployment &deployment, const kvshard_fit_options &fit_options)
{
    if (!deployment)
        detail::throw_empty("Deployment");
    kvshard_fit *out = nullptr;
    kvshard_error err{};
    detail::check(kvshard_deployment_fit(&out, deployment.get(), &fit_options, &err), err);
    return Fit(out);
}

/* ------------------------------------------------------------------------ */
/* Transfer                                                                  */
/* ------------------------------------------------------------------------ */

namespace detail
{
struct TransferFree {
    void operator()(kvshard_transfer *p) const noexcept
    {
        kvshard_transfer_free(p);
    }
};
} // namespace detail

/** kvshard_transfer_options for a request of `tokens` tokens (0: none) on
 *  `nic` (nullptr: ndr400), from P replica `p_replica` to D replica
 *  `d_replica` (KVSHARD_TRANSFER_OPTIONS_INIT otherwise). */
inline kvshard_transfer_options make_transfer_options(std::uint64_t tokens = 0,
                                                      const char *nic = nullptr,
                                                      std::uint32_t p_replica = 0,
                                                      std::uint32_t d_replica = 0) noexcept
{
    kvshard_transfer_options o = KVSHARD_TRANSFER_OPTIONS_INIT;
    o.tokens = tokens;
    o.nic = nic;
    o.p_replica = p_replica;
    o.d_replica = d_replica;
    return o;
}

/** An owned map that moves one request's cache from a prefill plan to a
 *  decode plan (kvshard_transfer). Edges are borrowed from it. */
class Transfer
{
  public:
    /** An empty transfer. */
    Transfer() noexcept = default;
    /** Adopt a handle from the C API (freed with kvshard_transfer_free()). */
    explicit Transfer(kvshard_transfer *transfer) noexcept : p_(transfer)
    {
    }

    /** The transfer from `prefill` to `decode` (kvshard_transfer_create). */
    [[nodiscard]] static Transfer
    create(const Plan &prefill, const Plan &decode,
           const kvshard_transfer_options &options = make_transfer_options(),
           const kvshard_allocator *allocator = nullptr)
    {
        const kvshard_plan *p = detail::plan_of(prefill);
        const kvshard_plan *d = detail::plan_of(decode);
        kvshard_transfer *out = nullptr;
        kvshard_error err{};
        detail::check(kvshard_transfer_create(&out, p, d, &options, allocator, &err), err);
        return Transfer(out);
    }

    Transfer(Transfer &&) noexcept = default;
    Transfer &operator=(Transfer &&) noexcept = default;
    Transfer(const Transfer &) = delete;
    Transfer &operator=(const Transfer &) = delete;
    ~Transfer() = default;

    /** Number of edges. */
    std::size_t size() const
    {
        return kvshard_transfer_edge_count(h());
    }
    /** Edge `index`, borrowed; KVSHARD_EINVAL when out of range. */
    const kvshard_transfer_edge &edge(std::size_t index) const
    {
        const kvshard_transfer_edge *e = kvshard_transfer_edge_at(h(), index);
        if (e == nullptr)
            throw Error(KVSHARD_EINVAL, "kvshard::Transfer::edge: index out of range");
        return *e;
    }
    const kvshard_transfer_edge &operator[](std::size_t index) const
    {
        return edge(index);
    }
    /** The indices of the edges global rank `global_rank` of P sends
     *  (`decode` false) or of D receives (`decode` true). */
    std::vector<std::size_t> rank_edges(bool decode, std::uint32_t global_rank) const
    {
        const kvshard_transfer *p = h();
        std::vector<std::size_t> out(
            kvshard_transfer_rank_edges(nullptr, 0, p, decode, global_rank));
        kvshard_transfer_rank_edges(out.data(), out.size(), p, decode, global_rank);
        return out;
    }
    /** The bytes, the busiest ranks and the time. */
    kvshard_transfer_totals totals() const
    {
        kvshard_transfer_totals t = KVSHARD_TRANSFER_TOTALS_INIT;
        detail::check(kvshard_transfer_totals_get(&t, h()), "kvshard::Transfer::totals");
        return t;
    }
    /** The digest of the map. */
    std::uint64_t digest() const
    {
        return kvshard_transfer_digest(h());
    }
    /** Keep an engine's verdict, from the two sides planned under that
     *  engine (kvshard_transfer_judge). */
    void judge(const Plan &prefill, const Plan &decode)
    {
        kvshard_error err{};
        if (!p_)
            throw Error(KVSHARD_EINVAL, "kvshard::Transfer::judge: an empty transfer");
        detail::check(kvshard_transfer_judge(p_.get(), detail::plan_of(prefill),
                                             detail::plan_of(decode), &err),
                      err);
    }
    /** Number of verdicts kept. */
    std::size_t verdict_count() const
    {
        return kvshard_transfer_verdict_count(h());
    }
    /** Verdict `index`, its strings borrowed from the transfer. */
    kvshard_transfer_verdict verdict(std::size_t index) const
    {
        kvshard_transfer_verdict v = KVSHARD_TRANSFER_VERDICT_INIT;
        detail::check(kvshard_transfer_verdict_at(&v, h(), index), "kvshard::Transfer::verdict");
        return v;
    }

    /** The JSON document, as `kvshard transfer --format=json` writes it. */
    std::string to_json() const
    {
        const kvshard_transfer *p = h();
        return detail::TextSink::collect(
            [p](kvshard_write_fn fn, void *user) {
                return kvshard_transfer_write_json(p, fn, user);
            },
            "kvshard::Transfer::to_json");
    }
    /** The text `kvshard transfer` prints. */
    std::string to_text() const
    {
        const kvshard_transfer *p = h();
        return detail::TextSink::collect(
            [p](kvshard_write_fn fn, void *user) {
                return kvshard_transfer_write_text(p, fn, user);
            },
            "kvshard::Transfer::to_text");
    }
    /** The edge table as an SVG image, as `kvshard transfer --format=svg`
     *  draws it; throws for a transfer made without a request length. */
    std::string to_svg() const
    {
        const kvshard_transfer *p = h();
        return detail::TextSink::collect(
            [p](kvshard_write_fn fn, void *user) {
                return kvshard_transfer_write_svg(p, fn, user);
            },
            "kvshard::Transfer::to_svg");
    }

    const kvshard_transfer *get() const noexcept
    {
        return p_.get();
    }
    /** Give up ownership: the caller frees the handle. */
    kvshard_transfer *release() noexcept
    {
        return p_.release();
    }
    explicit operator bool() const noexcept
    {
        return static_cast<bool>(p_);
    }

  private:
    const kvshard_transfer *h() const
    {
        if (!p_)
            detail::throw_empty("Transfer");
        return p_.get();
    }

    std::unique_ptr<kvshard_transfer, detail::TransferFree> p_;
};

} // namespace kvshard

#endif /* KVSHARD_EXPLORE_HPP */
