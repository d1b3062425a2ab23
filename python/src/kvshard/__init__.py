"""kvshard: plan how the KV cache of a hybrid-attention model is sharded
across tensor-parallel ranks and pipeline stages.

A thin binding over the C library libkvshard (its 0.4 API), with ctypes:
every figure comes from the library; this package converts arguments,
raises exceptions for error codes and frees handles.

    >>> import kvshard
    >>> with kvshard.load("examples/qwen3_5_35b_a3b_tp4.yaml") as dep:
    ...     with dep.plan() as plan:
    ...         plan.rank_layers(0)
    [3, 11, 19, 27, 35]

Units: byte figures are in bytes, lengths (block_size, context_length) in
tokens. Objects that hold a C handle (Model, Deployment, Plan, Comparison)
free it on ``close()``, at the end of a ``with`` block, or when garbage
collected. The engine profiles' own inputs are settings by key
(``kvshard.settings()`` lists them); ``Options``, overrides and
``Deployment.set`` take them beside the options. docs/python.md covers
installing, finding the library and errors.
"""

from ._enums import (
    ALL_RANKS,
    MAX_PP_PARTITION,
    OWNER_ALL,
    OWNER_NONE,
    RESERVE_AUTO,
    Attention,
    Dtype,
    Engine,
    FigureType,
    LayerHolding,
    LayerKind,
    Ownership,
    PpRule,
    RankLayout,
    SettingType,
    StateKind,
    Status,
    WarningCode,
)
from ._errors import (
    ConfigError,
    DoesNotFitError,
    FileError,
    FitLimitsError,
    InvalidArgumentError,
    KvshardError,
    LimitError,
    OutOfMemoryError,
    PlanError,
    QueryError,
    ReadError,
    UnmodeledError,
    WeightsError,
    WriteError,
)
from ._fit import Fit, FitComm, FitRow, NotAdmitted, fit
from ._lib import (
    LibraryNotFoundError,
    LibraryVersionError,
    library_path,
    library_version,
)
from ._objects import (
    Blocks,
    Capacity,
    Comparison,
    ComparisonRow,
    Deployment,
    KvGeometry,
    LayerStorage,
    Model,
    Plan,
    RankMemory,
    RankPosition,
    StageInfo,
    StateTensor,
    Uniform,
    compare,
    create_model,
    load,
    load_model,
    loads,
    plan,
)
from ._options import Options
from ._settings import SettingInfo, setting_info, settings
from ._transfer import Transfer, TransferEdge, TransferRank, transfer
from ._version import __version__
from . import _enums, _errors, _fit, _objects, _settings, _transfer

#: The C enum kvshard_warning_code, under the name the C API uses. It is
#: left out of ``__all__`` so that ``from kvshard import *`` does not hide
#: Python's built-in ``Warning``.
Warning = WarningCode  # noqa: A001

# Each module lists what it exports; the package exports all of it.
__all__ = [
    "__version__",
    "library_path",
    "library_version",
    "LibraryNotFoundError",
    "LibraryVersionError",
    "Options",
    *_settings.__all__,
    *_objects.__all__,
    *_fit.__all__,
    *_transfer.__all__,
    *_enums.__all__,
    *_errors.__all__,
]
