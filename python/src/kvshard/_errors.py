"""Exceptions raised for the library's error codes.

Every failed C call raises a :class:`KvshardError` (or one of its family
subclasses) carrying what the library's ``kvshard_error`` held: the code as a
:class:`~kvshard.Status`, the source (a file name, "<string>", or the origin
of an override), the 1-based line and column (0 when unknown), the 0-based
byte offset and the message. Wrong Python argument types and values are
caught before any C call and raise plain ``TypeError`` / ``ValueError``.
"""

from __future__ import annotations

from typing import Dict, Optional, Type

from ._enums import Status

__all__ = [
    "KvshardError",
    "ReadError",
    "ConfigError",
    "UnmodeledError",
    "PlanError",
    "WeightsError",
    "DoesNotFitError",
    "FitLimitsError",
    "LimitError",
    "QueryError",
    "FileError",
    "OutOfMemoryError",
    "InvalidArgumentError",
    "WriteError",
]


class KvshardError(Exception):
    """A call into libkvshard failed.

    Attributes:
        code: the :class:`Status` (a negative value).
        source: the file that holds the offending text, "<string>" for text,
            an origin such as "python" for an override, "" when no text is
            involved.
        line, column: 1-based position in ``source``; 0 when unknown. The
            column counts characters.
        offset: 0-based byte offset into ``source``.
        message: the library's message (control bytes escaped as \\xNN).
    """

    code: Status
    source: str
    line: int
    column: int
    offset: int
    message: str

    def __init__(
        self,
        code: int,
        message: str,
        source: str = "",
        line: int = 0,
        column: int = 0,
        offset: int = 0,
    ) -> None:
        try:
            self.code = Status(code)
        except ValueError:  # a code this package does not know
            self.code = code  # type: ignore[assignment]
        self.message = message
        self.source = source
        self.line = line
        self.column = column
        self.offset = offset
        super().__init__(self._format())

    def _format(self) -> str:
        if self.line > 0:
            return f"{self.source}:{self.line}:{self.column}: {self.message}"
        if self.source:
            return f"{self.source}: {self.message}"
        return self.message

    def __str__(self) -> str:
        return self._format()

    def __repr__(self) -> str:
        name = getattr(self.code, "name", self.code)
        return (
            f"{type(self).__name__}(code={name}, source={self.source!r}, "
            f"line={self.line}, column={self.column}, message={self.message!r})"
        )

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (
            type(self),
            (int(self.code), self.message, self.source, self.line, self.column, self.offset),
        )


class ReadError(KvshardError):
    """The text is not something kvshard can read: not well-formed YAML or
    JSON (ESYNTAX), not UTF-8 (EUTF8), a key given twice (EDUPKEY), or a YAML
    feature kvshard does not read (EUNSUPPORTED). Like ``SyntaxError``, it
    points at a line and column of ``source``."""

    @property
    def filename(self) -> str:
        """``source``, under the name ``SyntaxError`` uses."""
        return self.source

    @property
    def lineno(self) -> int:
        """``line``, under the name ``SyntaxError`` uses."""
        return self.line


class ConfigError(KvshardError):
    """A key or value of a model config, deployment file or option is wrong:
    an unknown key (EUNKNOWNKEY), a wrong type (ETYPE), a number out of range
    (ERANGE), a missing key (EMISSING), or a bad per-layer list (ELAYERTYPE,
    ELAYERCOUNT, ELAYERLIST)."""


class UnmodeledError(ConfigError):
    """The model config describes a cache kvshard does not model
    (EUNMODELED): a key such as ``block_configs`` or
    ``cross_attention_layers``, or a value kvshard's rule for the model does
    not cover (grouped KV heads on a compressed model,
    ``attention_chunk_size`` without the list of chunked layers). kvshard
    refuses it by name rather than plan it by another rule, which would size
    the cache wrongly. A ConfigError: ``source``, ``line`` and ``column``
    point at the key's value, and ``message`` names the key."""


class PlanError(KvshardError):
    """No valid plan exists for this model and these options: parallel sizes
    (EPARALLEL, EWORLD, ESPLIT, ESPLITCP), heads that do not divide
    (EKVHEADS, EQHEADS, ELINEARHEADS), memory for not one block (ENOBLOCK), a byte
    figure past 64 bits (EOVERFLOW), what the engine profile cannot plan
    (EPROFILE), or pipeline stages the layers cannot be cut into: more
    stages than layers (EPPLAYERS), a rule or a pp_partition that does not
    fit the layers (EPARTITION), a layer on another stage than the layer
    whose cache it reads (EPPSOURCE), or a split whose communication cannot
    be priced as asked (ECOMM). The device inputs' own failures are
    its subclasses: WeightsError, DoesNotFitError and FitLimitsError."""


class WeightsError(PlanError):
    """The weights of a rank are missing or given wrongly (EWEIGHTS):
    device_memory with no weights_per_rank, no weights_total and no
    safetensors files beside the model's config; weights_experts above
    weights_total; weights_per_rank with neither one entry nor one a stage,
    or given to a fit (which works out each layout's weights)."""


class DoesNotFitError(PlanError):
    """The weights and the activation reserve take all the usable device
    memory (EDOESNOTFIT): for a plan, on some stage (the message names it
    and the bytes short); for a fit, on every layout (the message names the
    closest one and how many bytes its poorest stage is short, as a
    negative number)."""


class FitLimitsError(PlanError):
    """A fit found no layout of its GPUs within the node limits and the
    pinned sizes (EFITLIMITS): gpus_per_node, max_tp_size, max_pp_size,
    pp_size and dp_size together leave nothing to plan."""


class LimitError(KvshardError):
    """A size limit was hit (ELIMIT): document size, nesting depth, node
    count, alias expansion, flag files nested too deeply, or a plan's layer
    lists."""


class QueryError(KvshardError, IndexError):
    """A plan rank (ERANK), a layer (ELAYER), a pipeline stage (ESTAGE) or
    a global rank (EGLOBALRANK) outside the plan's range."""


class FileError(KvshardError, OSError):
    """A file could not be opened or read (EIO); the message has the
    system's reason."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        KvshardError.__init__(self, *args, **kwargs)


class OutOfMemoryError(KvshardError, MemoryError):
    """The library could not allocate (ENOMEM); nothing was leaked."""


class InvalidArgumentError(KvshardError, ValueError):
    """The library refused an argument (EINVAL). The binding checks its
    arguments first, so this points at a mismatch between the binding and
    the library."""


class WriteError(KvshardError):
    """Writing output failed (EWRITE)."""


_FAMILY: Dict[int, Type[KvshardError]] = {}
for _cls, _codes in (
    (ReadError, ("ESYNTAX", "EUTF8", "EDUPKEY", "EUNSUPPORTED")),
    (
        ConfigError,
        ("EUNKNOWNKEY", "ETYPE", "ERANGE", "EMISSING", "ELAYERTYPE", "ELAYERCOUNT", "ELAYERLIST"),
    ),
    (
        PlanError,
        (
            "EPARALLEL",
            "EWORLD",
            "ESPLIT",
            "ESPLITCP",
            "EKVHEADS",
            "EQHEADS",
            "ELINEARHEADS",
            "ENOBLOCK",
            "EOVERFLOW",
            "EPROFILE",
            "EPPLAYERS",
            "EPARTITION",
            "EPPSOURCE",
            "ECOMM",
        ),
    ),
    (UnmodeledError, ("EUNMODELED",)),
    (WeightsError, ("EWEIGHTS",)),
    (DoesNotFitError, ("EDOESNOTFIT",)),
    (FitLimitsError, ("EFITLIMITS",)),
    (LimitError, ("ELIMIT",)),
    (QueryError, ("ERANK", "ELAYER", "ESTAGE", "EGLOBALRANK")),
    (FileError, ("EIO",)),
    (OutOfMemoryError, ("ENOMEM",)),
    (InvalidArgumentError, ("EINVAL",)),
    (WriteError, ("EWRITE",)),
):
    for _name in _codes:
        _FAMILY[int(Status[_name])] = _cls


def error_class(code: int) -> Type[KvshardError]:
    """The exception class for a status code."""
    return _FAMILY.get(int(code), KvshardError)


def make_error(
    code: int,
    message: Optional[str] = None,
    source: str = "",
    line: int = 0,
    column: int = 0,
    offset: int = 0,
) -> KvshardError:
    """An exception of the code's family. Without a message, the library's
    name of the code (kvshard_strerror)."""
    if message is None:
        from ._lib import library

        message = library().kvshard_strerror(int(code)).decode("utf-8", "replace")
    return error_class(code)(code, message, source, line, column, offset)
