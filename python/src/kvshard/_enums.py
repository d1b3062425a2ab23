"""The C enums of kvshard.h as :class:`enum.IntEnum` classes.

Member values equal the C values, so a member can be passed wherever the C
API takes the enum. Member names drop the C prefix (``KVSHARD_LAYER_HYBRID``
is ``LayerKind.HYBRID``). The ``label`` property of each member returns the
name the library itself uses in its text and JSON output ("full_attention",
"bfloat16", "max_seqs_unreachable", ...).

The enums whose members are engines or engines' rules (``Engine``,
``PpRule``, ``RankLayout``) and ``Ownership`` are made, when the package is
imported, from the names the loaded library gives their values: member
name = the library's name upper-cased, with '_' for any other character
than a letter or a digit (``Engine.VLLM``, ``PpRule.DEFAULT``). An engine
the library adds is a member with no change here.
"""

from __future__ import annotations

import enum
import re
from typing import TYPE_CHECKING, Any, Dict, Type

from . import _lib

__all__ = [
    "Status",
    "LayerKind",
    "Attention",
    "StateKind",
    "Dtype",
    "Ownership",
    "PpRule",
    "RankLayout",
    "LayerHolding",
    "Engine",
    "WarningCode",
    "SettingType",
    "FigureType",
    "OWNER_ALL",
    "OWNER_NONE",
    "ALL_RANKS",
    "MAX_PP_PARTITION",
    "RESERVE_AUTO",
]

#: ``Plan.layer_owner()`` of a layer whose cache every rank stores.
OWNER_ALL = -1
#: ``Plan.layer_owner()`` of a layer that stores nothing (a no-cache layer).
OWNER_NONE = -2
#: The C value of "every plan rank" for ``kvshard_plan_blocks_for``.
ALL_RANKS = 0xFFFFFFFF
#: Most entries of an explicit ``pp_partition`` (KVSHARD_MAX_PP_PARTITION),
#: and of ``weights_per_rank``.
MAX_PP_PARTITION = 256
#: ``activation_reserve`` left to the profile (KVSHARD_RESERVE_AUTO): under
#: kvshard max(1 GiB, device_memory / 20). The option's word for it is "auto".
RESERVE_AUTO = (1 << 64) - 1


def _name_of(function: str, value: int) -> str:
    raw = getattr(_lib.library(), function)(value)
    return raw.decode("utf-8", "replace")


class Status(enum.IntEnum):
    """Result of a C call: ``OK`` (0) or a negative error code."""

    OK = 0
    ENOMEM = -1
    EINVAL = -2
    EIO = -3
    ESYNTAX = -4
    EUTF8 = -5
    ELIMIT = -6
    EDUPKEY = -7
    EUNKNOWNKEY = -8
    ETYPE = -9
    ERANGE = -10
    EMISSING = -11
    ELAYERTYPE = -12
    ELAYERCOUNT = -13
    ELAYERLIST = -14
    EPARALLEL = -15
    EWORLD = -16
    ESPLIT = -17
    ESPLITCP = -18
    EKVHEADS = -19
    ELINEARHEADS = -20
    ERANK = -21
    ELAYER = -22
    ENOBLOCK = -23
    EOVERFLOW = -24
    EWRITE = -25
    EPROFILE = -26
    EUNSUPPORTED = -27
    EUNMODELED = -28
    #: More pipeline stages than decoder layers.
    EPPLAYERS = -29
    #: The layers cannot be cut into the stages asked for.
    EPARTITION = -30
    #: A layer and the layer whose cache it reads are on different stages.
    EPPSOURCE = -31
    #: A stage outside 0..pp_size-1.
    ESTAGE = -32
    #: A global rank outside 0..world_size-1, or coordinates outside their sizes.
    EGLOBALRANK = -33
    #: Device memory without the weights of a rank (no weights_per_rank,
    #: weights_total or safetensors files), weights_experts above
    #: weights_total, or weights_per_rank of neither 1 nor pp_size entries.
    EWEIGHTS = -34
    #: A stage's weights and the activation reserve leave no budget of the
    #: usable device memory (a fit: no layout leaves one).
    EDOESNOTFIT = -35
    #: A fit: the node limits and the pinned sizes leave no layout.
    EFITLIMITS = -36
    #: The query heads are not divisible by the attention TP size.
    EQHEADS = -37
    #: The split's communication cannot be priced as asked: selected_kv for
    #: a model without a DSA indexer, or a prefix hit of the whole prompt.
    ECOMM = -38

    @property
    def label(self) -> str:
        """The library's English name of the code (``kvshard_strerror``)."""
        return _name_of("kvshard_strerror", int(self))

    @property
    def short_name(self) -> str:
        """The short name fit's reasons and the JSON documents give the code:
        "ok", "weights", "does_not_fit", "kv_heads", ...
        (``kvshard_status_name``)."""
        return _name_of("kvshard_status_name", int(self))


class LayerKind(enum.IntEnum):
    """What a decoder layer caches."""

    FULL_ATTENTION = 0
    LINEAR_ATTENTION = 1
    SLIDING_ATTENTION = 2
    HYBRID = 3
    NO_CACHE = 4
    #: A window of shared K=V latents and, with a compression ratio, a
    #: compressed stream (DeepSeek-V4); a KV layer, split like full attention.
    COMPRESSED = 5
    #: Reads an earlier layer's cache (its ``kv_source``) and keeps none.
    SHARED_KV = 6
    #: At most one attention chunk of KV per sequence, on every rank (Llama 4).
    CHUNKED_ATTENTION = 7

    @property
    def label(self) -> str:
        """"full_attention", "linear_attention", ... (``kvshard_layer_kind_name``)."""
        return _name_of("kvshard_layer_kind_name", int(self))


class Attention(enum.IntEnum):
    """Attention type of a model's KV layers."""

    GQA = 0
    MLA = 1
    #: One K=V latent per entry, compressed by layer (DeepSeek-V4).
    COMPRESSED = 2

    @property
    def label(self) -> str:
        """"gqa", "mla" or "compressed", as in the plan's JSON
        (``kvshard_attention_name``)."""
        return _name_of("kvshard_attention_name", int(self))


class StateKind(enum.IntEnum):
    """The recurrent state of a model's linear and hybrid layers."""

    NONE = 0
    GDN = 1
    KDA = 2
    LIGHTNING = 3
    MAMBA1 = 4
    MAMBA2 = 5
    SHORT_CONV = 6

    @property
    def label(self) -> str:
        """"gdn", "kda", ..., "none" (``kvshard_state_kind_name``)."""
        return _name_of("kvshard_state_kind_name", int(self))


class Dtype(enum.IntEnum):
    """Element type of weights, KV cache and state. ``AUTO`` as an option
    means "follow the model"."""

    AUTO = 0
    BF16 = 1
    FP16 = 2
    FP8 = 3
    FP32 = 4
    INT8 = 5
    #: fp8 with five exponent bits: sized as fp8, named apart for the engines.
    FP8_E5M2 = 6

    @property
    def label(self) -> str:
        """"auto", "bfloat16", "float16", "fp8", "float32", "int8", "fp8_e5m2"."""
        return _name_of("kvshard_dtype_name", int(self))


class LayerHolding(enum.IntEnum):
    """What one rank holds of one layer (``LayerStorage.holding``)."""

    #: The layer is on another pipeline stage.
    NOT_ON_STAGE = 0
    #: Nothing: a no-cache layer, or a draft layer speculation does not count.
    NOTHING = 1
    #: A linear layer's recurrent state.
    STATE = 2
    #: A sliding-window or chunked layer's window.
    WINDOW = 3
    #: The paged KV the rank owns (with a hybrid layer's state, a
    #: compressed layer's window and state).
    KV = 4
    #: A KV layer another rank of the split group owns: computed from the
    #: rank's scratch buffer.
    SCRATCH = 5
    #: A shared-KV layer, reading its source's cache on the same stage.
    SHARED = 6
    #: A draft layer counted with speculation, on the last stage.
    DRAFT = 7

    @property
    def label(self) -> str:
        """"not_on_stage", "nothing", "state", "window", "kv", "scratch",
        "shared" or "draft"."""
        return self.name.lower()


class WarningCode(enum.IntEnum):
    """A plan's warning (never fatal). Also exported as ``kvshard.Warning``."""

    SPLIT_DISABLED = 0
    SPLIT_SIZE_ONE = 1
    RANK_OWNS_NOTHING = 2
    IMBALANCED = 3
    EXCEEDS_REPLICATION = 4
    NO_KV_LAYERS = 5
    DRAFT_UNSPLIT = 6
    MAX_SEQS_UNREACHABLE = 7
    PROFILE_INPUTS_IGNORED = 8
    #: vllm: the release runs this state model with prefix caching off.
    ENGINE_PREFIX_CACHING_DISABLED = 9
    #: vllm: Mamba cache mode ``all`` asked for runs as ``align``.
    ENGINE_MAMBA_CACHE_MODE_ALIGN = 10
    #: vllm: a cache group type is padded with layers that cost memory as
    #: real ones (one warning a type).
    ENGINE_PADDING_LAYERS = 11
    #: vllm 0.18: max_num_seqs above the blocks caps the CUDA-graph sizes.
    ENGINE_CUDAGRAPH_SIZES_CAPPED = 12
    #: sglang: max_total_tokens above the token pool the budget gives.
    ENGINE_MAX_TOTAL_TOKENS_ABOVE_PROFILE = 13
    #: sglang: the state pool lowers max_running_requests.
    ENGINE_MAX_RUNNING_REQUESTS_CAPPED = 14
    #: apply_args skipped flags or arguments the profile does not read
    #: (ignore_unknown); Deployment.ignored_flags() lists them all.
    FLAGS_IGNORED = 15
    #: SGLang refuses pipeline stages with speculative decoding; the plan
    #: is made all the same.
    PP_DRAFT_REFUSED = 16
    #: Some stage's ranks store no KV though the model has KV layers.
    STAGE_WITHOUT_KV = 17
    #: memory_per_rank is the budget: device_memory is not read.
    DEVICE_MEMORY_IGNORED = 18
    #: The safetensors index's metadata.total_size differs from the sum of
    #: its shards' tensors; the headers are used.
    WEIGHTS_TOTAL_SIZE_MISMATCH = 19
    #: Some tensors have names no rule classes: counted as split over T.
    WEIGHTS_UNKNOWN_TENSORS = 20
    #: context_length is longer than the model's max_position_embeddings.
    CONTEXT_BEYOND_MODEL = 21
    #: sglang: a DSA model runs with pages of 64 tokens whatever page_size
    #: asks.
    ENGINE_PAGE_SIZE_OVERRIDDEN = 22
    #: trtllm: max_seq_len above the pool: the engine reduces the attention
    #: window and max_seq_len to the pool's tokens.
    ENGINE_WINDOW_REDUCED = 23
    #: trtllm: a hybrid's state pool is max_batch_size slots, fixed before
    #: the engine profiles its memory.
    ENGINE_STATE_SLOTS_FIXED = 24
    #: The split's mechanisms are the profile's, published for DSA models
    #: only: for this model they are assumed.
    COMM_MECHANISM_ASSUMED = 25
    #: A decode step broadcasts the whole pool of every split layer.
    FULL_LAYER_DECODE = 26
    #: An accelerator is given without a weights source: no base step.
    COMM_NO_WEIGHTS = 27
    #: The weights come from the safetensors index alone (no shard at
    #: hand): its total_size and estimated or given expert bytes.
    WEIGHTS_ESTIMATED = 28
    #: A stage's decode communication takes at least half its base step.
    SPLIT_COMM_DOMINATES = 29
    #: The split's estimated throughput is below the plan's without it.
    SPLIT_LOSES_THROUGHPUT = 30

    @property
    def label(self) -> str:
        """"split_disabled", ..., as in the plan's JSON (``kvshard_warning_name``)."""
        return _name_of("kvshard_warning_name", int(self))


class SettingType(enum.IntEnum):
    """What a setting's value is (kvshard_setting_type)."""

    INTEGER = 0  # a whole number from the setting's min to its max
    BYTES = 1  # a byte count: an integer or a size with a unit
    BOOL = 2  # true or false
    WORD = 3  # one of a few words
    FRACTION = 4  # a decimal above 0 and at most 1
    TEXT = 5  # text the library checks (an engine version)
    JSON = 6  # a JSON object (vLLM's --speculative-config)
    DECIMAL = 7  # a decimal above 0 and at most the setting's max
    COUNTS = 8  # options only: whole numbers, one a stage
    SIZES = 9  # byte sizes, one or one a stage

    @property
    def label(self) -> str:
        """"integer", "bytes", "bool", "word", "fraction", "text", "json",
        "decimal", "counts" or "sizes"."""
        return self.name.lower()


class FigureType(enum.IntEnum):
    """What a named figure of a plan holds (kvshard_figure_type)."""

    NULL = 0  # no value: None in Python, null in the JSON plan
    UINT = 1
    DOUBLE = 2
    BOOL = 3
    TEXT = 4
    TEXT_LIST = 5  # a list of texts: a list of str in Python, an array in JSON
    JSON = 6  # JSON text: a list of ints, or of dicts (one a pipeline stage, ...)

    @property
    def label(self) -> str:
        """"null", "uint", "double", "bool", "text", "text_list" or "json"."""
        return self.name.lower()


class _LibraryEnum(enum.IntEnum):
    """An enum whose members are the values the library names, made by
    ``_from_library``."""

    @property
    def label(self) -> str:
        """The library's name of the member: "vllm", "default", ..."""
        return _name_of(_NAME_FUNCTIONS[type(self)], int(self))


_NAME_FUNCTIONS: Dict[type, str] = {}


def member_name(word: str) -> str:
    """The member name of a value the library names `word`."""
    return re.sub(r"[^0-9A-Za-z]", "_", word).upper()


def _from_library(name: str, function: str, doc: str) -> Type[_LibraryEnum]:
    members = [(member_name(word), value) for word, value in _lib.named_values(function)]
    make: Any = _LibraryEnum  # the functional API, which type checkers do not follow
    made: Type[_LibraryEnum] = make(name, members, module=__name__, qualname=name)
    made.__doc__ = doc
    _NAME_FUNCTIONS[made] = function
    return made


if TYPE_CHECKING:
    # For type checkers only: the members users name today. At run time the
    # classes are made from the library below, with every member it names.

    class Ownership(_LibraryEnum):
        DEFAULT = enum.auto()
        ORDINAL = enum.auto()
        GLOBAL = enum.auto()
        CONTIGUOUS = enum.auto()

    class PpRule(_LibraryEnum):
        DEFAULT = enum.auto()
        VLLM = enum.auto()
        SGLANG = enum.auto()
        TRTLLM = enum.auto()
        EVEN = enum.auto()
        EXPLICIT = enum.auto()

    class RankLayout(_LibraryEnum):
        DEFAULT = enum.auto()
        VLLM = enum.auto()
        SGLANG = enum.auto()
        TRTLLM = enum.auto()
        XLLM = enum.auto()

    class Engine(_LibraryEnum):
        KVSHARD = enum.auto()
        XLLM = enum.auto()
        VLLM = enum.auto()
        SGLANG = enum.auto()

else:
    Ownership = _from_library(
        "Ownership",
        "kvshard_ownership_name",
        """How the ranks of a split group share the KV layers. ``DEFAULT`` leaves
    the choice to the engine profile.""",
    )
    PpRule = _from_library(
        "PpRule",
        "kvshard_pp_rule_name",
        """How the decoder layers are cut into pipeline stages: whose rule
    spreads the remainder of L / P (an engine's, or ``EVEN``: no remainder).
    ``DEFAULT`` is vLLM's; ``EXPLICIT`` is what a plan reports when a
    ``pp_partition`` gave the counts (it is no input).""",
    )
    RankLayout = _from_library(
        "RankLayout",
        "kvshard_rank_layout_name",
        """The order in which an engine numbers its global ranks, outermost
    first. ``DEFAULT`` leaves it to the engine profile.""",
    )
    Engine = _from_library(
        "Engine",
        "kvshard_engine_name",
        """Whose capacity model sizes blocks and state: ``KVSHARD`` (kvshard's
    own), or what an engine allocates from the same flags.""",
    )
