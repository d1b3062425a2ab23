"""Finding and loading libkvshard, and the ctypes view of its C API.

The library is looked for, in this order:

1. the environment variable ``KVSHARD_LIBRARY``, a path to the shared
   library. When it is set, it is the only place tried: a library named on
   purpose is never swapped for another one silently;
2. the path recorded when the package was installed (``KVSHARD_LIBRARY`` or
   ``--config-settings=kvshard-library=PATH`` given to ``pip install``),
   kept in the generated module ``kvshard._build_config``;
3. the system's search path: the soname of the package's version
   (``libkvshard.so.0.4``: while the major version is 0 the soname carries
   MAJOR.MINOR, from 1.0 on MAJOR only), then
   ``ctypes.util.find_library("kvshard")``, then ``libkvshard.so`` (the
   dynamic loader reads ``LD_LIBRARY_PATH`` and the ldconfig cache).

When no place holds a library that loads, :class:`LibraryNotFoundError`
names all three. The library found must report a ``kvshard_version()`` with
the package's major and minor version (patch releases keep the API and its
structs); otherwise :class:`LibraryVersionError`.

The library is loaded once, when ``import kvshard`` runs, and kept for the
life of the process: the package's enums and option checks are made from
its tables, so without a library the import raises the errors above.
Loading it reads its table of settings (the engine profiles' own inputs,
``kvshard_setting_info_at``); the option table, each engine's flags and the
names of its enums are read here too. The binding checks values against
those rows and keeps no copy of them, so an option, a setting or an engine
the library adds needs no change here.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from ctypes import (
    POINTER,
    Structure,
    c_bool,
    c_char,
    c_char_p,
    c_double,
    c_int,
    c_int32,
    c_size_t,
    c_uint,
    c_uint32,
    c_uint64,
    c_void_p,
)
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from ._version import __version__

__all__ = [
    "library",
    "library_path",
    "library_version",
    "LibraryNotFoundError",
    "LibraryVersionError",
    "OptionRow",
    "EngineRow",
    "FlagRow",
    "options",
    "engines",
    "flags",
    "named_values",
]

ENV_VAR = "KVSHARD_LIBRARY"


def _soname() -> str:
    major, minor = __version__.split(".")[:2]
    return f"libkvshard.so.{major}.{minor}" if major == "0" else f"libkvshard.so.{major}"


_SYSTEM_NAMES = (_soname(), "libkvshard.so")

# ---------------------------------------------------------------------------
# C structs. Field order and types follow kvshard.h exactly; the library
# checks `size` against its own sizeof for every struct that has one, so a
# layout that drifted from the header fails with EINVAL instead of reading
# garbage.
# ---------------------------------------------------------------------------

ERROR_SOURCE_MAX = 160
ERROR_MESSAGE_MAX = 320


class CError(Structure):
    _fields_ = [
        ("code", c_int),
        ("line", c_int),
        ("column", c_int),
        ("offset", c_size_t),
        ("source", c_char * ERROR_SOURCE_MAX),
        ("message", c_char * ERROR_MESSAGE_MAX),
    ]


class COptions(Structure):
    """kvshard_options. Its fields are laid out from the library's option
    table by ``_optiontable`` when it is imported (ctypes lets a struct be
    declared here, for the prototypes, and completed there)."""


SETTING_DEFAULT_MAX = 32  # default_value[32] of kvshard_setting_info


class CSettingInfo(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("key", c_char_p),
        ("type", c_int),
        ("min", c_uint64),
        ("max", c_uint64),
        ("default_value", c_char * SETTING_DEFAULT_MAX),
        ("engine", c_int),
    ]


class CWord(Structure):
    _fields_ = [("text", c_char_p), ("value", c_int)]


OPTION_DOC_MAX = 128  # doc[128] of kvshard_option_info


class COptionInfo(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("name", c_char_p),
        ("kind", c_int),
        ("min", c_uint64),
        ("max", c_uint64),
        ("default_value", c_char * SETTING_DEFAULT_MAX),
        ("words", POINTER(CWord)),
        ("unit", c_char_p),
        ("doc", c_char * OPTION_DOC_MAX),
        ("section", c_char_p),
        ("unset_ok", c_bool),
        ("offset", c_size_t),
    ]


#: kvshard_option_info.offset of an option kvshard_options does not hold
#: (KVSHARD_OPTION_NO_FIELD, SIZE_MAX).
OPTION_NO_FIELD = (1 << (8 * ctypes.sizeof(c_size_t))) - 1


FLAG_NAME_MAX = 64  # KVSHARD_FLAG_NAME_MAX
FLAG_ALSO_MAX = 4  # KVSHARD_FLAG_ALSO_MAX


class CFlagInfo(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("name", c_char * FLAG_NAME_MAX),
        ("also", (c_char * FLAG_NAME_MAX) * FLAG_ALSO_MAX),
        ("also_count", c_size_t),
        ("key", c_char_p),
        ("is_setting", c_bool),
        ("words", POINTER(CWord)),
        ("read", c_bool),
        ("reader", c_int),
        ("doc", c_char * 320),
        ("default_value", c_char * 80),
        ("argparse", c_bool),
        ("recommends_flags", c_bool),
        ("fit_reads", c_bool),
    ]


class CModelDesc(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("model_type", c_char_p),
        ("num_layers", c_uint32),
        ("layer_kinds", POINTER(c_int)),
        ("dtype", c_int),
        ("attention", c_int),
        ("num_attention_heads", c_uint32),
        ("num_kv_heads", c_uint32),
        ("head_dim", c_uint32),
        ("sliding_window", c_uint32),
        ("kv_lora_rank", c_uint32),
        ("qk_rope_head_dim", c_uint32),
        ("index_head_dim", c_uint32),
        ("num_draft_layers", c_uint32),
        ("state_kind", c_int),
        ("state_dtype", c_int),
        ("state_heads", c_uint32),
        ("state_key_heads", c_uint32),
        ("state_head_dim", c_uint32),
        ("state_value_dim", c_uint32),
        ("state_size", c_uint32),
        ("state_groups", c_uint32),
        ("conv_kernel", c_uint32),
        ("conv_channels", c_uint32),
        ("v_head_dim", c_uint32),
        ("sliding_kv_heads", c_uint32),
        ("sliding_head_dim", c_uint32),
        ("sliding_v_head_dim", c_uint32),
        ("attention_chunk_size", c_uint32),
    ]


class CPlanModelInfo(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("num_draft_layers", c_uint32),
        ("state_kind", c_int),
        ("state_dtype", c_int),
    ]


class CLayerStorage(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("kind", c_int),
        ("stores_kv", c_bool),
        ("kv_slot", c_int32),
        ("state_slot", c_int32),
        ("kv_head_first", c_uint32),
        ("kv_head_count", c_uint32),
        ("kv_bytes_per_token", c_uint64),
        ("owner_plan_rank", c_int32),
        ("state_bytes_per_seq", c_uint64),
        ("kv_source", c_int32),
        ("compress_ratio", c_uint32),
        ("index_key", c_bool),
        ("holding", c_int),
        ("stage", c_uint32),
    ]


class CRankMemory(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("kv_bytes_per_token", c_uint64),
        ("scratch_bytes_per_token", c_uint64),
        ("draft_bytes_per_token", c_uint64),
        ("bytes_per_block", c_uint64),
        ("state_bytes_per_seq", c_uint64),
        ("num_blocks", c_uint64),
        ("has_num_blocks", c_bool),
        ("scratch_bytes_per_seq", c_uint64),
        ("draft_bytes_per_seq", c_uint64),
        ("has_budget", c_bool),
        ("budget", c_uint64),
        ("has_device", c_bool),
        ("weights_bytes", c_uint64),
        ("activation_reserve", c_uint64),
    ]


class CCapacity(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("engine", c_int),
        ("block_size", c_uint32),
        ("memory_per_rank", c_uint64),
        ("max_seqs", c_uint32),
        ("has_num_blocks", c_bool),
        ("num_blocks", c_uint64),
        ("max_tokens", c_uint64),
        ("context_length", c_uint32),
        ("has_concurrency", c_bool),
        ("concurrency", c_uint64),
        ("has_balanced_max_seqs", c_bool),
        ("balanced_max_seqs", c_uint64),
    ]


class CUniform(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("kv_bytes_per_token", c_uint64),
        ("bytes_per_block", c_uint64),
        ("has_num_blocks", c_bool),
        ("num_blocks", c_uint64),
    ]


class CBudget(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("memory_per_rank", c_uint64),
        ("reserved_bytes", c_uint64),
        ("extra_bytes_per_block", c_uint64),
        ("context_length", c_uint32),
    ]


class CBlocks(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("num_blocks", c_uint64),
        ("max_tokens", c_uint64),
        ("has_concurrency", c_bool),
        ("concurrency", c_uint64),
        ("has_balanced_max_seqs", c_bool),
        ("balanced_max_seqs", c_uint64),
        ("has_max_seqs", c_bool),
        ("max_seqs", c_uint32),
        ("has_state_slots", c_bool),
        ("state_slots", c_uint64),
    ]


class CLayerKvGeometry(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("kind", c_int),
        ("attention", c_int),
        ("has_kv", c_bool),
        ("dtype", c_int),
        ("element_bytes", c_uint32),
        ("kv_head_first", c_uint32),
        ("kv_heads", c_uint32),
        ("total_kv_heads", c_uint32),
        ("k_head_dim", c_uint32),
        ("v_head_dim", c_uint32),
        ("kv_lora_rank", c_uint32),
        ("qk_rope_head_dim", c_uint32),
        ("latent_dim", c_uint32),
        ("index_head_dim", c_uint32),
        ("scale_dtype", c_int),
        ("scale_bytes_per_token", c_uint32),
        ("rope_element_bytes", c_uint32),
        ("index_element_bytes", c_uint32),
    ]


class CStateTensor(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("name", c_char_p),
        ("dtype", c_int),
        ("ndim", c_uint32),
        ("dims", c_uint64 * 4),
        ("bytes", c_uint64),
    ]


#: Most tensors one layer's state has (KVSHARD_MAX_STATE_TENSORS).
MAX_STATE_TENSORS = 4


class CFigure(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("name", c_char_p),
        ("type", c_int),
        ("uint_value", c_uint64),
        ("double_value", c_double),
        ("bool_value", c_bool),
        ("text_value", c_char_p),
    ]


class CStageInfo(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("stage", c_uint32),
        ("layer_first", c_uint32),
        ("layer_count", c_uint32),
        ("num_kv_layers", c_uint32),
        ("num_state_layers", c_uint32),
        ("num_draft_layers", c_uint32),
        ("global_rank_first", c_uint32),
        ("global_rank_stride", c_uint32),
        ("bytes_per_token", c_uint64),
        ("state_bytes_per_seq", c_uint64),
        ("has_num_blocks", c_bool),
        ("num_blocks", c_uint64),
        ("binds", c_bool),
    ]


class CRankPosition(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("global_rank", c_uint32),
        ("dp_rank", c_uint32),
        ("stage", c_uint32),
        ("cp_rank", c_uint32),
        ("tp_rank", c_uint32),
        ("plan_rank", c_uint32),
        ("split_group", c_uint32),
        ("split_rank", c_uint32),
    ]


class CComparisonRow(Structure):
    # No `size` field: rows are borrowed, and later versions add fields at
    # the end only, so this prefix stays valid.
    _fields_ = [
        ("layerwise_split_size", c_uint32),
        ("ownership", c_int),
        ("error", c_int),
        ("error_message", c_char_p),
        ("min_owned_layers", c_uint32),
        ("max_owned_layers", c_uint32),
        ("max_kv_bytes_per_token", c_uint64),
        ("max_bytes_per_block", c_uint64),
        ("has_num_blocks", c_bool),
        ("num_blocks", c_uint64),
        ("max_tokens", c_uint64),
        ("gain", c_double),
        ("warnings", c_uint32),
        ("has_concurrency", c_bool),
        ("concurrency", c_uint64),
        ("has_balanced_max_seqs", c_bool),
        ("balanced_max_seqs", c_uint64),
        ("pp_size", c_uint32),
        ("attn_tp_size", c_uint32),
        # A kvshard_comm_estimate *, never NULL (CCommEstimate is defined
        # below: read through ctypes.cast).
        ("comm", c_void_p),
    ]


class CFitOptions(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("gpus", c_uint32),
        ("max_tp_size", c_uint32),
        ("max_pp_size", c_uint32),
        ("pp_size", c_uint32),
        ("dp_size", c_uint32),
        ("unsplit", c_bool),
        ("gpus_per_node", c_uint32),
        ("rank_by", c_int),  # kvshard_rank_by: 0 auto, 1 capacity, 2 throughput
    ]


class CCompareOptions(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("sweep_pp", c_bool),
        ("rank_by", c_int),
    ]


class CCommEstimate(Structure):
    # kvshard_comm_estimate, as a fit row carries it.
    _fields_ = [
        ("size", c_size_t),
        ("given", c_bool),
        ("split_size", c_uint32),
        ("decode_mechanism", c_char_p),
        ("prefill_mechanism", c_char_p),
        ("has_link", c_bool),
        ("link_name", c_char_p),
        ("link_bandwidth", c_uint64),
        ("link_latency_us", c_double),
        ("has_accelerator", c_bool),
        ("accelerator_name", c_char_p),
        ("hbm_bandwidth", c_uint64),
        ("has_batch", c_bool),
        ("batch", c_uint64),
        ("decode_collectives", c_uint64),
        ("has_decode_bytes", c_bool),
        ("decode_link_bytes", c_uint64),
        ("has_decode_time", c_bool),
        ("decode_comm_us", c_double),
        ("has_step", c_bool),
        ("base_us", c_double),
        ("step_us", c_double),
        ("tpot_us", c_double),
        ("throughput", c_double),
        ("throughput_total", c_double),
        ("has_unsplit", c_bool),
        ("unsplit_throughput", c_double),
        ("has_gain", c_bool),
        ("throughput_gain", c_double),
        ("prefill_collectives", c_uint64),
        ("has_prefill_bytes", c_bool),
        ("prefill_link_bytes", c_uint64),
        ("has_prefill_time", c_bool),
        ("prefill_comm_us", c_double),
        ("warnings", c_uint32),
    ]


class CFitRow(Structure):
    # Borrowed from the fit, whose `size` says how long the library's row
    # is; later versions add fields at the end only.
    _fields_ = [
        ("size", c_size_t),
        ("rank", c_uint32),
        ("tp_size", c_uint32),
        ("pp_size", c_uint32),
        ("dp_size", c_uint32),
        ("layerwise_split_size", c_uint32),
        ("ownership", c_int),
        ("fits", c_bool),
        ("reason", c_int),
        ("no_sequence", c_bool),
        ("weights_per_rank", c_uint64),
        ("budget", c_uint64),
        ("binding_stage", c_uint32),
        ("num_blocks", c_uint64),
        ("max_seqs", c_uint32),
        ("has_seqs", c_bool),
        ("seqs_per_replica", c_uint64),
        ("seqs_total", c_uint64),
        ("tokens_per_replica", c_uint64),
        ("tokens_total", c_uint64),
        ("pp_partition", POINTER(c_uint32)),
        ("warnings", c_uint32),
        ("comm", CCommEstimate),
    ]


class CTransferOptions(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("p_replica", c_uint32),
        ("d_replica", c_uint32),
        ("tokens", c_uint64),
        ("nic", c_char_p),
    ]


class CTransferVerdict(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("engine", c_int),
        ("version", c_char_p),
        ("verdict", c_char_p),
        ("reason_count", c_size_t),
        ("reason_codes", POINTER(c_char_p)),
        ("reason_messages", POINTER(c_char_p)),
        ("require_count", c_size_t),
        ("requires", POINTER(c_char_p)),
    ]


class CTransferEdge(Structure):
    # Borrowed from the transfer; no size field.
    _fields_ = [
        ("src", c_uint32),
        ("dst", c_uint32),
        ("src_stage", c_uint32),
        ("src_tp", c_uint32),
        ("dst_stage", c_uint32),
        ("dst_tp", c_uint32),
        ("component", c_char_p),
        ("component_code", c_uint32),
        ("layers", POINTER(c_uint32)),
        ("layer_count", c_size_t),
        ("unit_lo", c_uint32),
        ("unit_hi", c_uint32),
        ("entry", c_char_p),
        ("entry_code", c_uint32),
        ("entry_span", c_uint32),
        ("entry_bytes", c_uint64),
        ("bytes_per_token", c_uint64),
        ("bytes_fixed", c_uint64),
        ("has_bytes", c_bool),
        ("bytes", c_uint64),
    ]


class CTransferRank(Structure):
    _fields_ = [
        ("present", c_bool),
        ("global_rank", c_uint32),
        ("stage", c_uint32),
        ("tp", c_uint32),
        ("bytes_per_token", c_uint64),
        ("bytes_fixed", c_uint64),
        ("has_bytes", c_bool),
        ("bytes", c_uint64),
    ]


class CTransferTotals(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("unique_per_token", c_uint64),
        ("unique_fixed", c_uint64),
        ("wire_per_token", c_uint64),
        ("wire_fixed", c_uint64),
        ("has_bytes", c_bool),
        ("tokens", c_uint64),
        ("unique", c_uint64),
        ("wire", c_uint64),
        ("has_replication", c_bool),
        ("replication", c_double),
        ("busiest_source", CTransferRank),
        ("busiest_destination", CTransferRank),
        ("has_time", c_bool),
        ("time_us", c_uint64),
        ("nic_bytes_per_second", c_uint64),
        ("nic", c_char_p),
    ]


def sized(struct_type):  # type: ignore[no-untyped-def]
    """A new struct of `struct_type` with its `size` field set."""
    s = struct_type()
    s.size = ctypes.sizeof(struct_type)
    return s


#: kvshard_write_fn: int (*)(void *user, const char *data, size_t len).
WRITE_FN = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, c_size_t)

_P = c_void_p  # every opaque handle
_PP = POINTER(c_void_p)  # `**out` of a constructor
_E = POINTER(CError)

# name: (restype, argtypes)
_PROTOTYPES = {
    "kvshard_strerror": (c_char_p, [c_int]),
    "kvshard_version": (c_char_p, []),
    "kvshard_layer_kind_name": (c_char_p, [c_int]),
    "kvshard_attention_name": (c_char_p, [c_int]),
    "kvshard_state_kind_name": (c_char_p, [c_int]),
    "kvshard_dtype_name": (c_char_p, [c_int]),
    "kvshard_ownership_name": (c_char_p, [c_int]),
    "kvshard_pp_rule_name": (c_char_p, [c_int]),
    "kvshard_rank_layout_name": (c_char_p, [c_int]),
    "kvshard_engine_name": (c_char_p, [c_int]),
    "kvshard_warning_name": (c_char_p, [c_int]),
    # model
    "kvshard_model_load_file": (c_int, [_PP, c_char_p, c_void_p, _E]),
    "kvshard_model_load_string": (c_int, [_PP, c_char_p, c_size_t, c_char_p, c_void_p, _E]),
    "kvshard_model_create": (c_int, [_PP, POINTER(CModelDesc), c_void_p, _E]),
    "kvshard_model_free": (None, [_P]),
    "kvshard_model_type": (c_char_p, [_P]),
    "kvshard_model_num_layers": (c_uint32, [_P]),
    "kvshard_model_num_draft_layers": (c_uint32, [_P]),
    "kvshard_model_attention": (c_int, [_P]),
    "kvshard_model_count": (c_uint32, [_P, c_int]),
    "kvshard_model_layer_kind": (c_int, [POINTER(c_int), _P, c_uint32]),
    "kvshard_model_state_kind": (c_int, [_P]),
    "kvshard_model_state_dtype": (c_int, [_P]),
    # options and settings
    "kvshard_options_set": (c_int, [POINTER(COptions), c_char_p, c_char_p, c_char_p, _E]),
    "kvshard_settings_create": (c_int, [_PP, c_void_p, _E]),
    "kvshard_settings_copy": (c_int, [_PP, _P, c_void_p, _E]),
    "kvshard_settings_free": (None, [_P]),
    "kvshard_settings_set": (c_int, [_P, c_char_p, c_char_p, c_char_p, _E]),
    "kvshard_settings_get": (c_int, [POINTER(c_char), c_size_t, POINTER(c_bool), _P, c_char_p]),
    "kvshard_setting_count": (c_size_t, []),
    "kvshard_setting_info_at": (c_int, [POINTER(CSettingInfo), c_size_t]),
    "kvshard_option_count": (c_size_t, []),
    "kvshard_option_info_at": (c_int, [POINTER(COptionInfo), c_size_t]),
    "kvshard_flag_info_at": (c_int, [POINTER(CFlagInfo), c_int, c_size_t]),
    "kvshard_setting_find": (c_int, [POINTER(CSettingInfo), c_char_p]),
    # deployment
    "kvshard_deployment_load_file": (c_int, [_PP, c_char_p, c_void_p, _E]),
    "kvshard_deployment_load_string": (
        c_int,
        [_PP, c_char_p, c_size_t, c_char_p, c_char_p, c_void_p, _E],
    ),
    "kvshard_deployment_create": (c_int, [_PP, _P, POINTER(COptions), _E]),
    "kvshard_deployment_free": (None, [_P]),
    "kvshard_deployment_model": (c_void_p, [_P]),
    "kvshard_deployment_options": (c_int, [POINTER(COptions), _P]),
    "kvshard_deployment_set": (c_int, [_P, c_char_p, c_char_p, c_char_p, _E]),
    "kvshard_deployment_apply_args": (c_int, [_P, c_size_t, POINTER(c_char_p), c_uint, _E]),
    "kvshard_deployment_ignored_flags": (c_size_t, [POINTER(c_char_p), c_size_t, _P]),
    # plan
    "kvshard_plan_create": (c_int, [_PP, _P, POINTER(COptions), c_void_p, _E]),
    "kvshard_deployment_plan": (c_int, [_PP, _P, _E]),
    "kvshard_plan_free": (None, [_P]),
    "kvshard_plan_options": (c_int, [POINTER(COptions), _P]),
    "kvshard_plan_attn_tp_size": (c_uint32, [_P]),
    "kvshard_plan_effective_split_size": (c_uint32, [_P]),
    "kvshard_plan_replication_factor": (c_uint32, [_P]),
    "kvshard_plan_num_layers": (c_uint32, [_P]),
    "kvshard_plan_model": (c_int, [POINTER(CPlanModelInfo), _P]),
    "kvshard_plan_layer_owner": (c_int, [POINTER(c_int32), _P, c_uint32]),
    "kvshard_plan_owns": (c_bool, [_P, c_uint32, c_uint32]),
    "kvshard_plan_stores_kv": (c_bool, [_P, c_uint32, c_uint32]),
    "kvshard_plan_split_position": (c_int, [POINTER(c_uint32), POINTER(c_uint32), _P, c_uint32]),
    "kvshard_plan_rank_layers": (
        c_int,
        [POINTER(POINTER(c_uint32)), POINTER(c_size_t), _P, c_uint32],
    ),
    "kvshard_plan_layer_storage": (c_int, [POINTER(CLayerStorage), _P, c_uint32, c_uint32]),
    "kvshard_plan_rank_memory": (c_int, [POINTER(CRankMemory), _P, c_uint32]),
    "kvshard_plan_capacity": (c_int, [POINTER(CCapacity), _P]),
    "kvshard_plan_uniform": (c_int, [POINTER(CUniform), _P]),
    "kvshard_plan_blocks_for": (c_int, [POINTER(CBlocks), _P, c_uint32, POINTER(CBudget), _E]),
    "kvshard_plan_capacity_figure": (c_int, [POINTER(CFigure), _P, c_char_p]),
    "kvshard_plan_blocks_figure": (
        c_int,
        [POINTER(CFigure), _P, c_uint32, POINTER(CBudget), c_char_p, _E],
    ),
    "kvshard_plan_engine_figure_count": (c_size_t, [_P]),
    "kvshard_plan_engine_figure_at": (c_int, [POINTER(CFigure), _P, c_size_t]),
    "kvshard_plan_engine_figure": (c_int, [POINTER(CFigure), _P, c_char_p]),
    "kvshard_plan_warning_count": (c_size_t, [_P]),
    "kvshard_plan_warning": (c_int, [POINTER(c_int), POINTER(c_char_p), _P, c_size_t]),
    "kvshard_plan_has_warning": (c_bool, [_P, c_int]),
    "kvshard_plan_digest": (c_uint64, [_P]),
    "kvshard_plan_layout_digest": (c_uint64, [_P]),
    "kvshard_plan_describe_rank": (c_int, [POINTER(c_char), c_size_t, _P, c_uint32]),
    "kvshard_plan_describe_rank_blocks": (
        c_int,
        [POINTER(c_char), c_size_t, _P, c_uint32, c_uint64],
    ),
    "kvshard_dtype_size": (c_uint32, [c_int]),
    "kvshard_plan_kv_cache_dtype": (c_int, [_P]),
    "kvshard_plan_layer_kv_geometry": (
        c_int,
        [POINTER(CLayerKvGeometry), _P, c_uint32, c_uint32, _E],
    ),
    "kvshard_plan_layer_state_shapes": (
        c_int,
        [POINTER(CStateTensor), c_size_t, POINTER(c_size_t), _P, c_uint32, c_uint32, _E],
    ),
    # stages and global ranks
    "kvshard_plan_pp_size": (c_uint32, [_P]),
    "kvshard_plan_num_ranks": (c_uint32, [_P]),
    "kvshard_plan_stage": (c_int, [POINTER(CStageInfo), _P, c_uint32]),
    "kvshard_plan_layer_stage": (c_int, [POINTER(c_uint32), _P, c_uint32]),
    "kvshard_plan_pp_partition": (c_int, [POINTER(c_char), c_size_t, _P]),
    "kvshard_plan_locate": (c_int, [POINTER(CRankPosition), _P, c_uint32]),
    "kvshard_plan_global_rank": (
        c_int,
        [POINTER(c_uint32), _P, c_uint32, c_uint32, c_uint32, c_uint32],
    ),
    "kvshard_plan_write_json": (c_int, [_P, WRITE_FN, c_void_p]),
    "kvshard_plan_write_text": (c_int, [_P, WRITE_FN, c_void_p]),
    "kvshard_plan_write_svg": (c_int, [_P, WRITE_FN, c_void_p]),
    # comparison and report
    "kvshard_comparison_create": (
        c_int,
        [_PP, _P, POINTER(COptions), POINTER(CCompareOptions), c_void_p, _E],
    ),
    "kvshard_deployment_compare": (c_int, [_PP, _P, _E]),
    "kvshard_deployment_compare_with": (c_int, [_PP, _P, POINTER(CCompareOptions), _E]),
    "kvshard_comparison_rank_by": (c_int, [_P]),
    "kvshard_comparison_free": (None, [_P]),
    "kvshard_comparison_row_count": (c_size_t, [_P]),
    "kvshard_comparison_row_at": (POINTER(CComparisonRow), [_P, c_size_t]),
    "kvshard_comparison_recommended": (c_size_t, [_P]),
    "kvshard_comparison_write_json": (c_int, [_P, WRITE_FN, c_void_p]),
    "kvshard_comparison_write_text": (c_int, [_P, WRITE_FN, c_void_p]),
    "kvshard_report_write_html": (c_int, [_P, _P, c_void_p, WRITE_FN, c_void_p]),
    # fit
    "kvshard_status_name": (c_char_p, [c_int]),
    "kvshard_fit_create": (
        c_int,
        [_PP, _P, POINTER(COptions), POINTER(CFitOptions), c_void_p, _E],
    ),
    "kvshard_deployment_fit": (c_int, [_PP, _P, POINTER(CFitOptions), _E]),
    "kvshard_fit_free": (None, [_P]),
    "kvshard_fit_row_count": (c_size_t, [_P]),
    "kvshard_fit_row_at": (POINTER(CFitRow), [_P, c_size_t]),
    "kvshard_fit_not_admitted_count": (c_size_t, [_P]),
    "kvshard_fit_not_admitted": (
        c_int,
        [POINTER(c_uint32), POINTER(c_uint32), POINTER(c_uint32), POINTER(c_int), _P, c_size_t],
    ),
    "kvshard_fit_limited_layouts": (c_uint32, [_P]),
    "kvshard_fit_rank_by": (c_int, [_P]),
    "kvshard_fit_flags": (c_int, [POINTER(c_char), c_size_t, _P, c_char_p, c_bool]),
    "kvshard_fit_write_json": (c_int, [_P, WRITE_FN, c_void_p]),
    "kvshard_fit_write_text": (c_int, [_P, c_size_t, WRITE_FN, c_void_p]),
    # transfer
    "kvshard_transfer_create": (
        c_int,
        [_PP, _P, _P, POINTER(CTransferOptions), c_void_p, _E],
    ),
    "kvshard_transfer_free": (None, [_P]),
    "kvshard_transfer_edge_count": (c_size_t, [_P]),
    "kvshard_transfer_edge_at": (POINTER(CTransferEdge), [_P, c_size_t]),
    "kvshard_transfer_rank_edges": (
        c_size_t,
        [POINTER(c_size_t), c_size_t, _P, c_bool, c_uint32],
    ),
    "kvshard_transfer_totals_get": (c_int, [POINTER(CTransferTotals), _P]),
    "kvshard_transfer_digest": (c_uint64, [_P]),
    "kvshard_transfer_warning_count": (c_size_t, [_P]),
    "kvshard_transfer_warning": (c_int, [POINTER(c_char_p), POINTER(c_char_p), _P, c_size_t]),
    "kvshard_transfer_judge": (c_int, [_P, _P, _P, _E]),
    "kvshard_transfer_judge_unsupported": (c_int, [_P, c_int, c_char_p, c_char_p, _E]),
    "kvshard_transfer_verdict_count": (c_size_t, [_P]),
    "kvshard_transfer_verdict_at": (c_int, [POINTER(CTransferVerdict), _P, c_size_t]),
    "kvshard_transfer_write_json": (c_int, [_P, WRITE_FN, c_void_p]),
    "kvshard_transfer_write_text": (c_int, [_P, WRITE_FN, c_void_p]),
    "kvshard_transfer_write_svg": (c_int, [_P, WRITE_FN, c_void_p]),
}


class LibraryNotFoundError(ImportError):
    """No place held a libkvshard that loads. The message names every place
    tried and why each failed."""


class LibraryVersionError(ImportError):
    """The libkvshard found reports another major.minor version than the
    package's."""


def _recorded_path() -> Optional[str]:
    try:
        from . import _build_config  # generated at install time
    except ImportError:
        return None
    path = getattr(_build_config, "LIBRARY_PATH", None)
    return path if isinstance(path, str) and path else None


def _declare(lib: ctypes.CDLL) -> None:
    for name, (restype, argtypes) in _PROTOTYPES.items():
        fn = getattr(lib, name)  # AttributeError: not a library of this API
        fn.restype = restype
        fn.argtypes = argtypes


def _try_load(path: str) -> Tuple[Optional[ctypes.CDLL], str]:
    try:
        return ctypes.CDLL(path), ""
    except OSError as exc:
        return None, str(exc)


def _compatible(found: str) -> bool:
    want = __version__.split(".")[:2]
    have = found.split(".")
    return len(have) == 3 and have[:2] == want


def _find() -> Tuple[ctypes.CDLL, str]:
    """Load the library from the first place that holds one (see the module
    docstring). Returns the library and where it came from."""
    tried: List[str] = []

    env = os.environ.get(ENV_VAR)
    if env:
        lib, why = _try_load(env)
        if lib is not None:
            return lib, env
        raise LibraryNotFoundError(
            f"kvshard: {ENV_VAR} is set to {env!r}, which cannot be loaded: {why}. "
            f"Point it at libkvshard.so (from `cmake --build build --target kvshard`: "
            f"build/libkvshard.so), or unset it to use the path recorded at install "
            f"time or the system's library search path."
        )
    tried.append(f"1. the environment variable {ENV_VAR}: not set")

    recorded = _recorded_path()
    if recorded:
        lib, why = _try_load(recorded)
        if lib is not None:
            return lib, recorded
        tried.append(f"2. the path recorded at install time, {recorded!r}: {why}")
    else:
        tried.append(
            "2. the path recorded at install time: none (the package was installed "
            f"without {ENV_VAR} or --config-settings=kvshard-library=PATH)"
        )

    found = ctypes.util.find_library("kvshard")
    names = list(_SYSTEM_NAMES[:1])
    names += [n for n in ([found] if found else []) + list(_SYSTEM_NAMES[1:]) if n not in names]
    reasons = []
    for name in names:
        lib, why = _try_load(name)
        if lib is not None:
            return lib, name
        reasons.append(f"{name}: {why}")
    tried.append(
        "3. the system's library search path (LD_LIBRARY_PATH, ldconfig; "
        f"ctypes.util.find_library('kvshard') found {found!r}): " + "; ".join(reasons)
    )
    raise LibraryNotFoundError(
        "kvshard: cannot find libkvshard. Tried, in order:\n  "
        + "\n  ".join(tried)
        + f"\nSet {ENV_VAR}=/path/to/libkvshard.so, or reinstall the package with "
        f"{ENV_VAR} set (see docs/python.md)."
    )


def _setting_rows(lib: ctypes.CDLL) -> Tuple[CSettingInfo, ...]:
    """Every row of the library's settings table, copied (the keys are
    static storage in the library)."""
    rows = []
    for index in range(lib.kvshard_setting_count()):
        info = sized(CSettingInfo)
        rc = lib.kvshard_setting_info_at(ctypes.byref(info), index)
        if rc != 0 or not info.key:
            raise LibraryVersionError(
                f"kvshard: kvshard_setting_info_at({index}) failed with {rc}, below "
                f"kvshard_setting_count() = {lib.kvshard_setting_count()}: the library's "
                f"kvshard_setting_info is not the binding's ({ctypes.sizeof(CSettingInfo)} bytes)"
            )
        rows.append(info)
    return tuple(rows)


_lock = threading.Lock()
_Loaded = Tuple[ctypes.CDLL, str, str, Tuple[CSettingInfo, ...]]
_loaded: Optional[_Loaded] = None


def _load() -> _Loaded:
    global _loaded
    with _lock:
        if _loaded is not None:
            return _loaded
        lib, where = _find()
        try:
            version_fn = lib.kvshard_version
        except AttributeError:
            raise LibraryVersionError(
                f"kvshard: {where} has no kvshard_version(): not a kvshard library"
            ) from None
        version_fn.restype = c_char_p
        version_fn.argtypes = []
        found = (version_fn() or b"").decode("ascii", "replace")
        if not _compatible(found):
            raise LibraryVersionError(
                f"kvshard: {where} is libkvshard {found}, but this package "
                f"({__version__}) needs {'.'.join(__version__.split('.')[:2])}.x. "
                f"Build the matching library, or point {ENV_VAR} at it."
            )
        try:
            _declare(lib)
        except AttributeError as exc:
            raise LibraryVersionError(
                f"kvshard: {where} (version {found}) lacks a function of the "
                f"{__version__} API: {exc}"
            ) from None
        _loaded = (lib, where, found, _setting_rows(lib))
        return _loaded


def library() -> ctypes.CDLL:
    """The loaded libkvshard with every prototype declared (loads it on first
    use). Raises LibraryNotFoundError or LibraryVersionError."""
    loaded = _loaded
    return loaded[0] if loaded is not None else _load()[0]


def library_path() -> str:
    """Where the loaded library came from: the path or soname given to the
    dynamic loader (loads it on first use)."""
    return _load()[1]


def library_version() -> str:
    """``kvshard_version()`` of the loaded library, "MAJOR.MINOR.PATCH"."""
    return _load()[2]


def setting_rows() -> Tuple[CSettingInfo, ...]:
    """The library's settings table, read once when it was loaded (loads it
    on first use). No C call after that."""
    loaded = _loaded
    return loaded[3] if loaded is not None else _load()[3]



# ---------------------------------------------------------------------------
# The library's option table, each engine's flags and the names of its enum
# values, read once: ``import kvshard`` builds its enums and option checks
# on them. The binding keeps no copy of the names, ranges, words or spellings.
# ---------------------------------------------------------------------------


def _text(raw: Optional[bytes]) -> str:
    return (raw or b"").decode("utf-8")


def _words(ptr: "ctypes._Pointer[CWord]") -> Tuple[Tuple[str, int], ...]:
    words: List[Tuple[str, int]] = []
    i = 0
    while ptr and ptr[i].text is not None:
        words.append((_text(ptr[i].text), int(ptr[i].value)))
        i += 1
    return tuple(words)


@dataclass(frozen=True)
class OptionRow:
    """A row of the option table (kvshard_option_info_at)."""

    name: str
    kind: int  # a kvshard_setting_type
    min: int
    max: int
    default: str
    words: Tuple[Tuple[str, int], ...]
    unit: Optional[str]
    doc: str
    section: str
    unset_ok: bool
    #: Where its field lies in kvshard_options (a list's array, its count
    #: the next field); None for an input of compare or fit, which no field
    #: of kvshard_options holds.
    offset: Optional[int]


@dataclass(frozen=True)
class FlagRow:
    """A flag of one engine's command line (kvshard_flag_info_at)."""

    name: str
    also: Tuple[str, ...]
    key: str
    is_setting: bool
    words: Tuple[Tuple[str, int], ...]
    read: bool
    reader: int
    doc: str
    default: str
    #: kvshard fit reads it (else fit searches or works it out).
    fit_reads: bool = True


@dataclass(frozen=True)
class EngineRow:
    """An engine: a word of the option "engine", and its way with flags."""

    name: str
    value: int
    argparse: bool
    recommends_flags: bool


_tables_lock = threading.Lock()
_option_rows: Optional[Tuple[OptionRow, ...]] = None
_flag_rows: Dict[int, Tuple[FlagRow, ...]] = {}


def _fail(function: str, index: int, rc: int) -> LibraryVersionError:
    return LibraryVersionError(f"kvshard: {function}({index}) failed with {rc}")


def options() -> Tuple[OptionRow, ...]:
    """The option table, in the order of kvshard_options' fields."""
    global _option_rows
    with _tables_lock:
        if _option_rows is None:
            lib = library()
            rows: List[OptionRow] = []
            for index in range(lib.kvshard_option_count()):
                info = sized(COptionInfo)
                rc = lib.kvshard_option_info_at(ctypes.byref(info), index)
                if rc != 0:
                    raise _fail("kvshard_option_info_at", index, rc)
                rows.append(
                    OptionRow(_text(info.name), int(info.kind), int(info.min), int(info.max),
                              _text(info.default_value), _words(info.words),
                              _text(info.unit) if info.unit else None, _text(info.doc),
                              _text(info.section), bool(info.unset_ok),
                              None if info.offset == OPTION_NO_FIELD else int(info.offset))
                )
            _option_rows = tuple(rows)
        return _option_rows


def flags(engine: int) -> Tuple[FlagRow, ...]:
    """Every flag of `engine`'s command line; () for no such engine."""
    with _tables_lock:
        if engine not in _flag_rows:
            lib = library()
            rows: List[FlagRow] = []
            info = sized(CFlagInfo)
            while lib.kvshard_flag_info_at(ctypes.byref(info), int(engine), len(rows)) == 0:
                rows.append(
                    FlagRow(_text(info.name),
                            tuple(_text(info.also[i].value) for i in range(info.also_count)),
                            _text(info.key), bool(info.is_setting), _words(info.words),
                            bool(info.read), int(info.reader), _text(info.doc),
                            _text(info.default_value), bool(info.fit_reads))
                )
            _flag_rows[engine] = tuple(rows)
        return _flag_rows[engine]


def named_values(function: str) -> Tuple[Tuple[str, int], ...]:
    """Every value of a C enum with its name, from the library's function
    that names them (``kvshard_engine_name``, ...): -1 when it has a name
    (a DEFAULT), then 0, 1, ... up to the first value the function calls
    what it calls a value of no enum."""
    name_of = getattr(library(), function)
    no_value = name_of(-(1 << 31))
    values: List[Tuple[str, int]] = []
    value = -1 if name_of(-1) != no_value else 0
    while name_of(value) != no_value:
        values.append((_text(name_of(value)), value))
        value += 1
    return tuple(values)


def engines() -> Tuple[EngineRow, ...]:
    """The engines, in the order of their values (kvshard_engine_name)."""
    rows: List[EngineRow] = []
    lib = library()
    for name, value in named_values("kvshard_engine_name"):
        info = sized(CFlagInfo)
        rc = lib.kvshard_flag_info_at(ctypes.byref(info), value, 0)
        if rc != 0:
            raise _fail("kvshard_flag_info_at", value, rc)
        rows.append(EngineRow(name, value, bool(info.argparse), bool(info.recommends_flags)))
    return tuple(rows)
