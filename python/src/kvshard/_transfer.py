"""``transfer``: the map that moves one request's cache from a prefill plan
(P) to a decode plan (D) of the same model (kvshard_transfer_create): which
P rank sends which units of which layers to which D rank, the bytes one
request moves, the time at a NIC speed and a digest of the map
(docs/transfer.md). The edges, totals and warnings are copied into Python
when the transfer is made.
"""

from __future__ import annotations

import json
from ctypes import byref, c_char_p, c_size_t
from dataclasses import dataclass
from typing import Any, Dict, Iterator, Optional, Tuple

from . import _lib
from ._errors import make_error
from ._handles import _Handle, _new_handle, _write, copy_rows, encode, raise_error
from ._objects import Plan
from ._options import check_uint

__all__ = ["Transfer", "TransferEdge", "TransferRank", "transfer"]


def _opt(present: bool, value: int) -> Optional[int]:
    return int(value) if present else None


@dataclass(frozen=True)
class TransferEdge:
    """One edge (kvshard_transfer_edge): P global rank ``src`` sends units
    [``units[0]``, ``units[1]``) of one component of each of its layers to
    D global rank ``dst``. Bytes in bytes; ``bytes`` is None without a
    request length."""

    src: int
    dst: int
    src_stage: int
    src_tp: int
    dst_stage: int
    dst_tp: int
    #: "kv", "latent", "index", "conv_q", "conv_k", "conv_v", "conv_x",
    #: "conv_b", "conv_c" or "ssm".
    component: str
    #: Increasing; draft layers as L + d.
    layers: Tuple[int, ...]
    units: Tuple[int, int]
    #: "token", "window", "chunk" or "state".
    entry: str
    #: The window or chunk; None for token and state entries.
    entry_span: Optional[int]
    entry_bytes: int
    bytes_per_token: int
    bytes_fixed: int
    bytes: Optional[int]


@dataclass(frozen=True)
class TransferRank:
    """What one rank sends or receives (kvshard_transfer_rank)."""

    global_rank: int
    stage: int
    tp: int
    bytes_per_token: int
    bytes_fixed: int
    bytes: Optional[int]


def _edge(c: _lib.CTransferEdge) -> TransferEdge:
    return TransferEdge(
        src=int(c.src),
        dst=int(c.dst),
        src_stage=int(c.src_stage),
        src_tp=int(c.src_tp),
        dst_stage=int(c.dst_stage),
        dst_tp=int(c.dst_tp),
        component=(c.component or b"").decode("ascii"),
        layers=tuple(int(c.layers[i]) for i in range(c.layer_count)),
        units=(int(c.unit_lo), int(c.unit_hi)),
        entry=(c.entry or b"").decode("ascii"),
        entry_span=int(c.entry_span) if c.entry_span else None,
        entry_bytes=int(c.entry_bytes),
        bytes_per_token=int(c.bytes_per_token),
        bytes_fixed=int(c.bytes_fixed),
        bytes=_opt(c.has_bytes, c.bytes),
    )


def _rank(c: _lib.CTransferRank) -> Optional[TransferRank]:
    if not c.present:
        return None
    return TransferRank(int(c.global_rank), int(c.stage), int(c.tp), int(c.bytes_per_token),
                        int(c.bytes_fixed), _opt(c.has_bytes, c.bytes))


class Transfer(_Handle):
    """The map that moves one request's cache from P to D
    (kvshard_transfer). Owns a ``kvshard_transfer`` (freed with
    kvshard_transfer_free); the writers need it open."""

    _free_name = "kvshard_transfer_free"
    _kind = "transfer"

    def __init__(self, ptr: int) -> None:
        super().__init__(ptr)
        try:
            lib = _lib.library()
            self._edges: Tuple[TransferEdge, ...] = copy_rows(
                ptr, lib.kvshard_transfer_edge_count, lib.kvshard_transfer_edge_at, _edge,
                "transfer")
            t = _lib.sized(_lib.CTransferTotals)
            rc = lib.kvshard_transfer_totals_get(byref(t), ptr)
            if rc != 0:
                raise make_error(rc)
            has = bool(t.has_bytes)
            self._bytes: Dict[str, Any] = {
                "unique_per_token": int(t.unique_per_token),
                "unique_fixed": int(t.unique_fixed),
                "unique": _opt(has, t.unique),
                "wire_per_token": int(t.wire_per_token),
                "wire_fixed": int(t.wire_fixed),
                "wire": _opt(has, t.wire),
                "replication": float(t.replication) if t.has_replication else None,
                "time_us": _opt(t.has_time, t.time_us),
            }
            self._tokens = _opt(has, t.tokens)
            self._nic = (t.nic or b"").decode("ascii")
            self._nic_rate = int(t.nic_bytes_per_second)
            self._busiest = (_rank(t.busiest_source), _rank(t.busiest_destination))
            self._digest = int(lib.kvshard_transfer_digest(ptr))
            warnings = []
            for index in range(lib.kvshard_transfer_warning_count(ptr)):
                code, message = c_char_p(), c_char_p()
                rc = lib.kvshard_transfer_warning(byref(code), byref(message), ptr, index)
                if rc != 0:
                    raise make_error(rc)
                warnings.append(((code.value or b"").decode("ascii"),
                                 (message.value or b"").decode("utf-8", "replace")))
            self._warnings: Tuple[Tuple[str, str], ...] = tuple(warnings)
        except BaseException:
            self.close()
            raise

    @property
    def edges(self) -> Tuple[TransferEdge, ...]:
        """The edges, by source global rank, destination global rank,
        component, first layer and first unit."""
        return self._edges

    @property
    def bytes(self) -> Dict[str, Any]:
        """unique_per_token, unique_fixed, unique, wire_per_token,
        wire_fixed, wire, replication and time_us, as the JSON's ``bytes``
        object has them (None without a request length)."""
        return dict(self._bytes)

    @property
    def tokens(self) -> Optional[int]:
        """The request's length, or None."""
        return self._tokens

    @property
    def nic(self) -> Tuple[str, int]:
        """The NIC's preset name (or "custom") and its bytes per second."""
        return (self._nic, self._nic_rate)

    @property
    def busiest_source(self) -> Optional[TransferRank]:
        """The P rank that sends the most; None without edges."""
        return self._busiest[0]

    @property
    def busiest_destination(self) -> Optional[TransferRank]:
        """The D rank that receives the most; None without edges."""
        return self._busiest[1]

    @property
    def digest(self) -> str:
        """The digest of the map: 16 lowercase hex digits."""
        return f"{self._digest:016x}"

    @property
    def warnings(self) -> Tuple[Tuple[str, str], ...]:
        """(code, message) pairs: draft_not_sent, draft_not_on_source,
        wire_exceeds_unique."""
        return self._warnings

    def judge(self, prefill: Plan, decode: Plan) -> None:
        """Keep the verdict of the engine `prefill` and `decode` are planned
        under: the transfer's two sides, each as one stage of its TP size
        with the split off (kvshard_transfer_judge)."""
        if not isinstance(prefill, Plan) or not isinstance(decode, Plan):
            raise TypeError("judge takes two kvshard.Plan objects")
        err = _lib.CError()
        with self._use(exclusive=True) as h, prefill._use() as p, decode._use() as d:
            rc = _lib.library().kvshard_transfer_judge(h, p, d, byref(err))
        if rc != 0:
            raise_error(rc, err)

    def judge_unsupported(self, engine: str, reason: str,
                          version: Optional[str] = None) -> None:
        """Keep the verdict "unsupported" for `engine` ("vllm", "sglang",
        "xllm") at `version` (None: its default), whose profile refused to
        plan a side of this model: `reason` is that refusal's message
        (kvshard_transfer_judge_unsupported)."""
        values = {row.name: row.value for row in _lib.engines()}
        if not isinstance(engine, str) or engine not in values:
            raise ValueError(f"engine must be one of {', '.join(values)}, not {engine!r}")
        reason_c = encode(reason, "reason")
        version_c = None if version is None else encode(version, "version")
        err = _lib.CError()
        with self._use(exclusive=True) as h:
            rc = _lib.library().kvshard_transfer_judge_unsupported(
                h, values[engine], version_c, reason_c, byref(err))
        if rc != 0:
            raise_error(rc, err)

    @property
    def verdicts(self) -> Tuple[Dict[str, Any], ...]:
        """The verdicts kept, as the JSON document's: engine, version,
        verdict, reasons ((code, message) pairs) and requires."""
        lib = _lib.library()
        out: list = []
        with self._use() as h:
            for index in range(lib.kvshard_transfer_verdict_count(h)):
                v = _lib.sized(_lib.CTransferVerdict)
                rc = lib.kvshard_transfer_verdict_at(byref(v), h, index)
                if rc != 0:
                    raise make_error(rc)
                out.append({
                    "engine": lib.kvshard_engine_name(v.engine).decode("ascii"),
                    "version": v.version.decode("ascii"),
                    "verdict": v.verdict.decode("ascii"),
                    "reasons": tuple((v.reason_codes[i].decode("ascii"),
                                      v.reason_messages[i].decode("utf-8"))
                                     for i in range(v.reason_count)),
                    "requires": tuple(v.requires[i].decode("ascii")
                                      for i in range(v.require_count)),
                })
        return tuple(out)

    def rank_edges(self, side: str, global_rank: int) -> Tuple[TransferEdge, ...]:
        """The edges global rank `global_rank` of `side` ("prefill" or
        "decode") sends or receives (kvshard_transfer_rank_edges)."""
        if side not in ("prefill", "decode"):
            raise ValueError(f'side must be "prefill" or "decode", not {side!r}')
        rank = check_uint("global_rank", global_rank, 32)
        lib = _lib.library()
        with self._use() as h:
            n = lib.kvshard_transfer_rank_edges(None, 0, h, side == "decode", rank)
            found = (c_size_t * max(n, 1))()
            lib.kvshard_transfer_rank_edges(found, n, h, side == "decode", rank)
        return tuple(self._edges[found[i]] for i in range(n))

    def to_json(self) -> str:
        """The JSON document, as ``kvshard transfer --format=json`` writes it."""
        with self._use() as h:
            return _write("kvshard_transfer_write_json", h)

    def to_dict(self) -> Dict[str, Any]:
        """The JSON document, parsed."""
        return json.loads(self.to_json())  # type: ignore[no-any-return]

    def to_text(self) -> str:
        """The text ``kvshard transfer`` prints."""
        with self._use() as h:
            return _write("kvshard_transfer_write_text", h)

    def to_svg(self) -> str:
        """The edge table as an SVG image, as ``kvshard transfer
        --format=svg`` draws it: P ranks left, D ranks right, band widths to
        scale with the edges' bytes. Needs a request length (``tokens``)."""
        with self._use() as h:
            return _write("kvshard_transfer_write_svg", h)

    def __len__(self) -> int:
        return len(self._edges)

    def __iter__(self) -> Iterator[TransferEdge]:
        return iter(self._edges)

    def __repr__(self) -> str:
        return f"<kvshard.Transfer {len(self._edges)} edges, digest {self.digest}>"


def transfer(
    prefill: Plan,
    decode: Plan,
    /,
    *,
    tokens: int = 0,
    nic: Optional[str] = None,
    p_replica: int = 0,
    d_replica: int = 0,
) -> Transfer:
    """The map that moves one request of `tokens` tokens (0: none) from
    replica `p_replica` of the `prefill` plan to replica `d_replica` of the
    `decode` plan (kvshard_transfer_create). `nic`: a preset ("ndr400", the
    default, "xdr800", "hdr200", "eth100") or a rate in bytes per second
    written as a size ("48GB"). Errors: PlanError (EUNSUPPORTED) for
    transfer_model_mismatch, transfer_kv_dtype, transfer_state_dtype,
    transfer_cp and transfer_replica; PlanError (EUNMODELED) for a cache
    not moved yet; ConfigError for transfer_nic."""
    if not isinstance(prefill, Plan) or not isinstance(decode, Plan):
        raise TypeError("transfer takes two kvshard.Plan objects")
    o = _lib.sized(_lib.CTransferOptions)
    o.tokens = check_uint("tokens", tokens, 64)
    o.p_replica = check_uint("p_replica", p_replica, 32)
    o.d_replica = check_uint("d_replica", d_replica, 32)
    nic_b = encode(nic, "nic") if nic is not None else None
    o.nic = nic_b
    with prefill._use() as p, decode._use() as d:
        rc, out, err = _new_handle(_lib.library().kvshard_transfer_create, p, d, byref(o), None)
    if rc != 0:
        raise_error(rc, err)
    return Transfer(out)
