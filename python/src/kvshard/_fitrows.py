"""The result of a fit: the layouts of N GPUs, ranked, and their rows.

A fit plans every layout of its GPUs the node limits allow (a TP group
inside a node, stages across nodes; T x P x D = N, and each layerwise split
of T under each ownership rule) from the device inputs: device_memory, the
weights (weights_total with weights_experts, or the safetensors files beside
the model's config) and the activation reserve. It ranks the layouts by the
sequences of context_length tokens they serve at once (without a context
length, by tokens). The library does the search; this module copies its rows
into frozen dataclasses and asks it for each engine's flags. ``Deployment.fit``
and ``kvshard.fit`` (``_fit``) both make a ``Fit`` here.
"""

from __future__ import annotations

import json
from ctypes import byref, c_int, c_uint32, create_string_buffer
from dataclasses import dataclass, replace
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

from . import _lib
from ._enums import Engine, Ownership, Status, WarningCode
from ._errors import make_error
from ._handles import _Handle, _new_handle, _write, copy_rows, encode, raise_error
from ._options import Options, check_uint

__all__ = ["Fit", "FitRow", "NotAdmitted", "fit_options", "deployment_fit"]


def _opt(present: bool, value: int) -> Optional[int]:
    return int(value) if present else None


def _status(code: int) -> Union[Status, int]:
    try:
        return Status(code)
    except ValueError:  # a code of a later library
        return int(code)


def _short_name(code: Union[Status, int]) -> str:
    raw = _lib.library().kvshard_status_name(int(code))
    return (raw or b"unknown").decode("utf-8", "replace")


@dataclass(frozen=True)
class FitComm:
    """A fit or comparison row's communication estimate
    (kvshard_comm_estimate, the fields their JSON gives a row): a decode
    step's collectives, the
    bytes on the busiest link and their time, the memory-bandwidth base
    step, the step, TPOT and throughput (per replica and over the D
    replicas), the gain against the S = 1 row of the same layout, and one
    prompt's bytes and time. Times in microseconds, throughputs in tokens
    per second; None where an input they need is missing. An estimate,
    not a measurement (docs/comm.md)."""

    batch: Optional[int]
    collectives: int
    link_bytes: Optional[int]
    comm_us: Optional[float]
    base_us: Optional[float]
    step_us: Optional[float]
    tpot_us: Optional[float]
    throughput: Optional[float]
    throughput_total: Optional[float]
    throughput_gain: Optional[float]
    prefill_link_bytes: Optional[int]
    prefill_comm_us: Optional[float]

    def to_dict(self) -> Dict[str, Any]:
        """As the fit's JSON writes a row's ``comm``."""
        return dict(self.__dict__)


def comm_of(c: _lib.CCommEstimate) -> Optional[FitComm]:
    """A row's estimate, None when it was not priced."""
    if not c.given:
        return None
    step = bool(c.has_step)
    return FitComm(
        batch=_opt(bool(c.has_batch), c.batch),
        collectives=int(c.decode_collectives),
        link_bytes=_opt(bool(c.has_decode_bytes), c.decode_link_bytes),
        comm_us=float(c.decode_comm_us) if c.has_decode_time else None,
        base_us=float(c.base_us) if step else None,
        step_us=float(c.step_us) if step else None,
        tpot_us=float(c.tpot_us) if step else None,
        throughput=float(c.throughput) if step else None,
        throughput_total=float(c.throughput_total) if step else None,
        throughput_gain=float(c.throughput_gain) if c.has_gain else None,
        prefill_link_bytes=_opt(bool(c.has_prefill_bytes), c.prefill_link_bytes),
        prefill_comm_us=float(c.prefill_comm_us) if c.has_prefill_time else None,
    )


@dataclass(frozen=True)
class FitRow:
    """One layout of a fit (kvshard_fit_row). Byte figures in bytes; the
    figures of a layout that does not fit are None, as the fit's JSON has
    them null."""

    #: 1 for the recommendation, then by the ranking; the layouts that do
    #: not fit come after the others, in the order they were tried.
    rank: int
    tp_size: int
    pp_size: int
    dp_size: int
    layerwise_split_size: int
    #: The split's rule; ``Ownership.DEFAULT`` for a layout without a split.
    ownership: Ownership
    fits: bool
    #: Why it does not fit: ``Status.EDOESNOTFIT`` (the weights and the
    #: reserve leave no budget), ``Status.ENOBLOCK`` (no block; with
    #: ``no_sequence``, no sequence of the context length); ``Status.OK``
    #: when it fits.
    reason: Status
    no_sequence: bool
    #: The largest weights of a rank over its stages, and the smallest
    #: budget of its ranks.
    weights_per_rank: Optional[int]
    budget: Optional[int]
    #: The stage whose ranks bind the block count.
    binding_stage: Optional[int]
    num_blocks: Optional[int]
    #: The max_seqs its plan reserves state for (with a context length,
    #: the balanced count).
    max_seqs: Optional[int]
    #: Sequences of context_length tokens one replica, and all D replicas,
    #: serve at once; None without a context length.
    seqs_per_replica: Optional[int]
    seqs_total: Optional[int]
    tokens_per_replica: Optional[int]
    tokens_total: Optional[int]
    #: The decoder layers of each stage.
    pp_partition: Optional[Tuple[int, ...]]
    #: The warnings its plan carries.
    warnings: Tuple[WarningCode, ...]
    #: Its communication estimate when the deployment has comm inputs and
    #: the row fits; else None.
    comm: Optional[FitComm] = None
    #: Whether the fit was given comm inputs (then its JSON rows carry
    #: ``comm``, null for a row that does not fit).
    priced: bool = False

    def to_dict(self) -> Dict[str, Any]:
        """The row as the fit's JSON writes it: the rule and the reason by
        their library names (None without a split, and when it fits), the
        warnings by theirs."""
        reason: Optional[str] = None
        if not self.fits:
            reason = "no_sequence" if self.no_sequence else _short_name(self.reason)
        return {
            "rank": self.rank,
            "tp_size": self.tp_size,
            "pp_size": self.pp_size,
            "dp_size": self.dp_size,
            "layerwise_split_size": self.layerwise_split_size,
            "ownership": self.ownership.label if self.layerwise_split_size > 1 else None,
            "fits": self.fits,
            "reason": reason,
            "weights_per_rank": self.weights_per_rank,
            "budget": self.budget,
            "binding_stage": self.binding_stage,
            "num_blocks": self.num_blocks,
            "max_seqs": self.max_seqs,
            "seqs_per_replica": self.seqs_per_replica,
            "seqs_total": self.seqs_total,
            "tokens_per_replica": self.tokens_per_replica,
            "tokens_total": self.tokens_total,
            "pp_partition": None if self.pp_partition is None else list(self.pp_partition),
            "warnings": [w.label for w in self.warnings],
            **({"comm": self.comm and self.comm.to_dict()} if self.priced else {}),
        }


@dataclass(frozen=True)
class NotAdmitted:
    """A layout the fit refused for another reason than memory: its sizes
    and the status its plan failed with (EKVHEADS, EPPLAYERS, ...)."""

    tp_size: int
    pp_size: int
    dp_size: int
    reason: Status

    def to_dict(self) -> Dict[str, Any]:
        """As the fit's JSON writes it: the reason by its short name."""
        return {
            "tp_size": self.tp_size,
            "pp_size": self.pp_size,
            "dp_size": self.dp_size,
            "reason": _short_name(self.reason),
        }


def _row(c: _lib.CFitRow) -> FitRow:
    ok = bool(c.fits)
    seqs = ok and bool(c.has_seqs)
    partition = None
    if ok and c.pp_partition:
        partition = tuple(int(c.pp_partition[s]) for s in range(c.pp_size))
    try:
        ownership = Ownership(c.ownership)
    except ValueError:
        ownership = int(c.ownership)  # type: ignore[assignment]
    return FitRow(
        rank=int(c.rank),
        tp_size=int(c.tp_size),
        pp_size=int(c.pp_size),
        dp_size=int(c.dp_size),
        layerwise_split_size=int(c.layerwise_split_size),
        ownership=ownership,
        fits=ok,
        reason=_status(c.reason),  # type: ignore[arg-type]
        no_sequence=bool(c.no_sequence),
        weights_per_rank=_opt(ok, c.weights_per_rank),
        budget=_opt(ok, c.budget),
        binding_stage=_opt(ok, c.binding_stage),
        num_blocks=_opt(ok, c.num_blocks),
        max_seqs=_opt(ok, c.max_seqs),
        seqs_per_replica=_opt(seqs, c.seqs_per_replica),
        seqs_total=_opt(seqs, c.seqs_total),
        tokens_per_replica=_opt(ok, c.tokens_per_replica),
        tokens_total=_opt(ok, c.tokens_total),
        pp_partition=partition,
        warnings=tuple(w for w in WarningCode if c.warnings & (1 << int(w))),
        comm=comm_of(c.comm),
    )


#: The engines whose flags a fit gives.


class Fit(_Handle):
    """The layouts of a search over N GPUs, ranked (kvshard_fit).

    Owns a ``kvshard_fit`` (freed with kvshard_fit_free). The rows, the
    layouts not admitted and the count of layouts the limits left out are
    copied into Python when the fit is made and stay valid after
    ``close()``; ``flags`` and the writers need it open.
    """

    _free_name = "kvshard_fit_free"
    _kind = "fit"

    def __init__(self, ptr: int) -> None:
        super().__init__(ptr)
        try:
            lib = _lib.library()
            rows = copy_rows(ptr, lib.kvshard_fit_row_count, lib.kvshard_fit_row_at, _row, "fit")
            refused = []
            for index in range(lib.kvshard_fit_not_admitted_count(ptr)):
                t, p, d, code = c_uint32(), c_uint32(), c_uint32(), c_int()
                rc = lib.kvshard_fit_not_admitted(byref(t), byref(p), byref(d), byref(code),
                                                  ptr, index)
                if rc != 0:
                    raise make_error(rc)
                refused.append(NotAdmitted(int(t.value), int(p.value), int(d.value),
                                           _status(code.value)))  # type: ignore[arg-type]
            if any(r.comm is not None for r in rows):
                rows = [replace(r, priced=True) for r in rows]
            self._rows: Tuple[FitRow, ...] = tuple(rows)
            self._rank_by = "throughput" if lib.kvshard_fit_rank_by(ptr) == 2 else "capacity"
            self._refused: Tuple[NotAdmitted, ...] = tuple(refused)
            self._limited = int(lib.kvshard_fit_limited_layouts(ptr))
        except BaseException:
            self.close()
            raise

    @property
    def rows(self) -> Tuple[FitRow, ...]:
        """Every layout tried: those that fit, best first, then those that
        do not, in the order they were tried."""
        return self._rows

    @property
    def fitting(self) -> Tuple[FitRow, ...]:
        """The layouts that fit, best first."""
        return tuple(r for r in self._rows if r.fits)

    @property
    def recommendation(self) -> FitRow:
        """The layout that serves the most: the first row (a fit that made
        it has at least one row that fits)."""
        return self._rows[0]

    @property
    def not_admitted(self) -> Tuple[NotAdmitted, ...]:
        """Layouts refused for another reason than memory."""
        return self._refused

    @property
    def rank_by(self) -> str:
        """How the rows are ranked: "capacity", or "throughput" (by the
        communication estimate's throughput over all replicas)."""
        return self._rank_by

    @property
    def limited_layouts(self) -> int:
        """The pairs (T, P) the node limits left out (gpus_per_node,
        max_tp_size, max_pp_size)."""
        return self._limited

    def flags(
        self, engine: Union[str, Engine] = "kvshard", env: bool = False
    ) -> Optional[List[str]]:
        """The recommendation's flags for `engine` ("kvshard", "xllm",
        "vllm", "sglang" or "trtllm", or its Engine member), one argument an
        entry, or with `env` the environment it needs (NAME=value entries;
        [] for none). None when that engine cannot run the layout (only
        xLLM runs a layerwise split, by its own rule). ConfigError
        (EUNKNOWNKEY) for another engine."""
        if isinstance(engine, Engine):
            name = engine.label
        elif isinstance(engine, str):
            name = engine
        else:
            raise TypeError(f"engine must be a str or an Engine, not {type(engine).__name__}")
        if not isinstance(env, bool):
            raise TypeError(f"env must be a bool, not {type(env).__name__}")
        name_b = encode(name, "engine")
        lib = _lib.library()
        with self._use() as h:
            need = lib.kvshard_fit_flags(None, 0, h, name_b, env)
            if need == Status.EUNSUPPORTED:
                return None
            if need == Status.EUNKNOWNKEY:
                given = ", ".join(e.name for e in _lib.engines() if e.recommends_flags)
                raise make_error(need, f'no flags for engine "{name}": a fit gives {given}')
            if need < 0:
                raise make_error(need)
            buf = create_string_buffer(need + 1)
            got = lib.kvshard_fit_flags(buf, len(buf), h, name_b, env)
            if got < 0:
                raise make_error(got)
        text = buf.value.decode("utf-8", "replace")
        return text.split(" ") if text else []

    def to_json(self) -> str:
        """The fit's JSON document, as ``kvshard fit --format=json`` writes it."""
        with self._use() as h:
            return _write("kvshard_fit_write_json", h)

    def to_dict(self) -> Dict[str, Any]:
        """The fit's JSON document, parsed."""
        return json.loads(self.to_json())  # type: ignore[no-any-return]

    def to_text(self, top: int = 0) -> str:
        """The text ``kvshard fit`` prints: its top `top` rows (0: 10)."""
        n = check_uint("top", top, 64)
        with self._use() as h:
            return _write("kvshard_fit_write_text", h, n)

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[FitRow]:
        return iter(self._rows)

    def __getitem__(self, index: int) -> FitRow:
        return self._rows[index]

    def __repr__(self) -> str:
        fits = sum(r.fits for r in self._rows)
        if not self._rows:
            return "<kvshard.Fit no rows>"
        r = self._rows[0]
        split = ""
        if r.layerwise_split_size > 1:
            split = f" S={r.layerwise_split_size} {r.ownership.label}"
        return (
            f"<kvshard.Fit {fits} of {len(self._rows)} layouts fit; recommended "
            f"T={r.tp_size} P={r.pp_size} D={r.dp_size}{split}>"
        )


_RANKS = ("auto", "capacity", "throughput")


def fit_options(
    gpus: Any,
    max_tp_size: Any,
    max_pp_size: Any,
    pp_size: Any,
    dp_size: Any,
    unsplit: Any,
    rank: Any = "auto",
) -> _lib.CFitOptions:
    """A kvshard_fit_options, every argument checked in Python first
    (TypeError, ValueError); the library refuses 0 GPUs (PlanError,
    EPARALLEL)."""
    fo = _lib.sized(_lib.CFitOptions)
    fo.gpus = check_uint("gpus", gpus, 32)
    fo.max_tp_size = check_uint("max_tp_size", max_tp_size, 32)
    fo.max_pp_size = check_uint("max_pp_size", max_pp_size, 32)
    fo.pp_size = check_uint("pp_size", pp_size, 32)
    fo.dp_size = check_uint("dp_size", dp_size, 32)
    if not isinstance(unsplit, bool):
        raise TypeError(f"unsplit must be a bool, not {type(unsplit).__name__}")
    fo.unsplit = unsplit
    fo.rank_by = rank_code(rank)
    return fo


def rank_code(rank: Any) -> int:
    """The kvshard_rank_by of a ``rank`` argument of fit or compare: "auto",
    "capacity" or "throughput" (TypeError, ValueError otherwise)."""
    if not isinstance(rank, str):
        raise TypeError(f"rank must be a str, not {type(rank).__name__}")
    if rank not in _RANKS:
        raise ValueError(f"comm_value: rank takes auto, capacity or throughput, not {rank!r}")
    return _RANKS.index(rank)


def deployment_fit(h: int, fo: _lib.CFitOptions) -> Fit:
    """kvshard_deployment_fit inside the deployment's gate."""
    rc, out, err = _new_handle(_lib.library().kvshard_deployment_fit, h, byref(fo))
    if rc != 0:
        raise_error(rc, err)
    return Fit(out)
