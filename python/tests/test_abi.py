"""The ctypes mirrors against the C header: every struct's size and every
field's offset, the size each *_INIT macro writes into `size`, the values
KVSHARD_OPTIONS_INIT, KVSHARD_FIGURE_INIT and KVSHARD_SETTING_INFO_INIT
hold, and every enum's values. The header's text is read too, so that a
field or an enum member the header gains and the binding lacks fails here,
even where it would fit in a struct's padding.

A small C program, compiled against kvshard.h, kvshard/explore.h and
kvshard/output.h with the C compiler (CC, else
cc), prints what the compiler lays out; the test compares it with the
binding's structs field by field. The library's own size checks are tested
too: a struct one byte longer than the header's is refused (EINVAL), so the
calls that pass with the binding's structs pass because the sizes agree.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
from conftest import REPO

import kvshard
from kvshard import _enums, _lib, _optiontable

# C struct name -> the binding's mirror, and its INIT macro (None: no size field).
STRUCTS: Dict[str, Tuple[type, str]] = {
    "kvshard_error": (_lib.CError, ""),
    "kvshard_options": (_lib.COptions, "KVSHARD_OPTIONS_INIT"),
    "kvshard_setting_info": (_lib.CSettingInfo, "KVSHARD_SETTING_INFO_INIT"),
    "kvshard_word": (_lib.CWord, ""),
    "kvshard_option_info": (_lib.COptionInfo, "KVSHARD_OPTION_INFO_INIT"),
    "kvshard_flag_info": (_lib.CFlagInfo, "KVSHARD_FLAG_INFO_INIT"),
    "kvshard_model_desc": (_lib.CModelDesc, "KVSHARD_MODEL_DESC_INIT"),
    "kvshard_layer_storage": (_lib.CLayerStorage, "KVSHARD_LAYER_STORAGE_INIT"),
    "kvshard_rank_memory": (_lib.CRankMemory, "KVSHARD_RANK_MEMORY_INIT"),
    "kvshard_capacity": (_lib.CCapacity, "KVSHARD_CAPACITY_INIT"),
    "kvshard_uniform": (_lib.CUniform, "KVSHARD_UNIFORM_INIT"),
    "kvshard_budget": (_lib.CBudget, "KVSHARD_BUDGET_INIT"),
    "kvshard_blocks": (_lib.CBlocks, "KVSHARD_BLOCKS_INIT"),
    "kvshard_layer_kv_geometry": (_lib.CLayerKvGeometry, "KVSHARD_LAYER_KV_GEOMETRY_INIT"),
    "kvshard_state_tensor": (_lib.CStateTensor, "KVSHARD_STATE_TENSOR_INIT"),
    "kvshard_figure": (_lib.CFigure, "KVSHARD_FIGURE_INIT"),
    "kvshard_stage_info": (_lib.CStageInfo, "KVSHARD_STAGE_INFO_INIT"),
    "kvshard_rank_position": (_lib.CRankPosition, "KVSHARD_RANK_POSITION_INIT"),
    "kvshard_comparison_row": (_lib.CComparisonRow, ""),
    "kvshard_fit_options": (_lib.CFitOptions, "KVSHARD_FIT_OPTIONS_INIT"),
    "kvshard_compare_options": (_lib.CCompareOptions, "KVSHARD_COMPARE_OPTIONS_INIT"),
    "kvshard_fit_row": (_lib.CFitRow, ""),
    "kvshard_transfer_options": (_lib.CTransferOptions, "KVSHARD_TRANSFER_OPTIONS_INIT"),
    "kvshard_transfer_edge": (_lib.CTransferEdge, ""),
    "kvshard_transfer_rank": (_lib.CTransferRank, ""),
    "kvshard_transfer_totals": (_lib.CTransferTotals, "KVSHARD_TRANSFER_TOTALS_INIT"),
}

# Python enum -> the prefix of its C constants, and the C enum's name.
ENUMS: List[Tuple[type, str, str]] = [
    (kvshard.Status, "KVSHARD_", "kvshard_status"),
    (kvshard.LayerKind, "KVSHARD_LAYER_", "kvshard_layer_kind"),
    (kvshard.Attention, "KVSHARD_ATTENTION_", "kvshard_attention"),
    (kvshard.StateKind, "KVSHARD_STATE_", "kvshard_state_kind"),
    (kvshard.Dtype, "KVSHARD_DTYPE_", "kvshard_dtype"),
    (kvshard.Ownership, "KVSHARD_OWNERSHIP_", "kvshard_ownership"),
    (kvshard.PpRule, "KVSHARD_PP_RULE_", "kvshard_pp_rule"),
    (kvshard.RankLayout, "KVSHARD_RANK_LAYOUT_", "kvshard_rank_layout"),
    (kvshard.LayerHolding, "KVSHARD_HOLDS_", "kvshard_layer_holding"),
    (kvshard.Engine, "KVSHARD_ENGINE_", "kvshard_engine"),
    (kvshard.WarningCode, "KVSHARD_WARN_", "kvshard_warning_code"),
    (kvshard.SettingType, "KVSHARD_SETTING_", "kvshard_setting_type"),
    (kvshard.FigureType, "KVSHARD_FIGURE_", "kvshard_figure_type"),
]

# Mirrors that may stop short of the header's struct: rows the library lends
# and only ever grows at the end.
PREFIX_ONLY = {"kvshard_comparison_row"}

CONSTANTS = {
    "KVSHARD_ALL_RANKS": _enums.ALL_RANKS,
    "KVSHARD_OWNER_ALL": _enums.OWNER_ALL,
    "KVSHARD_OWNER_NONE": _enums.OWNER_NONE,
    "KVSHARD_ERROR_SOURCE_MAX": _lib.ERROR_SOURCE_MAX,
    "KVSHARD_ERROR_MESSAGE_MAX": _lib.ERROR_MESSAGE_MAX,
    "KVSHARD_MAX_PP_PARTITION": _enums.MAX_PP_PARTITION,
    "KVSHARD_RESERVE_AUTO": _enums.RESERVE_AUTO,
    "KVSHARD_OPTION_NO_FIELD": _lib.OPTION_NO_FIELD,
}

# Fields of kvshard_options that hold a pointer: printed as whether
# KVSHARD_OPTIONS_INIT leaves them NULL.
POINTERS = ("settings", "pp_partition", "weights_per_rank")


def include_dirs() -> List[Path]:
    """The folders that hold kvshard/kvshard.h and the generated
    kvshard_export.h and kvshard_version.h: beside the loaded library (a
    build folder, or an install prefix), and the repository's."""
    where = kvshard.library_path()
    dirs = []
    if os.sep in where:
        lib_dir = Path(where).resolve().parent
        dirs += [lib_dir / "include", lib_dir.parent / "include"]
    dirs.append(REPO / "include")
    return [d for d in dirs if (d / "kvshard").is_dir()]


def program() -> str:
    lines = [
        "#include <kvshard/kvshard.h>",
        "#include <kvshard/explore.h>",
        "#include <kvshard/output.h>",
        "#include <stddef.h>",
        "#include <stdio.h>",
        "int main(void) {",
    ]
    for c_name, (mirror, init) in STRUCTS.items():
        lines.append(f'    printf("sizeof {c_name} %zu\\n", sizeof({c_name}));')
        for field, _ in mirror._fields_:
            lines.append(
                f'    printf("offset {c_name}.{field} %zu\\n", offsetof({c_name}, {field}));'
            )
        if init:
            lines.append(f"    {{ {c_name} s = {init}; printf(\"init {c_name} %zu\\n\", s.size); }}")
    # The values the INIT macros hold, where the binding mirrors them.
    lines.append("    { kvshard_options o = KVSHARD_OPTIONS_INIT;")
    for field, kind in _lib.COptions._fields_[1:]:
        if field in POINTERS:
            lines.append(f'      printf("value kvshard_options.{field} %d\\n", o.{field} == NULL);')
        elif kind is ctypes.c_uint64:  # activation_reserve's default is UINT64_MAX
            lines.append(
                f'      printf("value kvshard_options.{field} %llu\\n", '
                f"(unsigned long long)o.{field});"
            )
        else:
            lines.append(
                f'      printf("value kvshard_options.{field} %lld\\n", (long long)o.{field});'
            )
    lines.append("    }")
    lines.append("    { kvshard_figure f = KVSHARD_FIGURE_INIT;")
    lines.append(
        '      printf("value kvshard_figure %d %d %llu %g %d %d\\n", f.name == NULL, (int)f.type, '
        "(unsigned long long)f.uint_value, f.double_value, (int)f.bool_value, f.text_value == NULL); }"
    )
    lines.append("    { kvshard_setting_info i = KVSHARD_SETTING_INFO_INIT;")
    lines.append(
        '      printf("value kvshard_setting_info %d %d %llu %llu %d %d\\n", i.key == NULL, '
        "(int)i.type, (unsigned long long)i.min, (unsigned long long)i.max, "
        "i.default_value[0], (int)i.engine); }"
    )
    for enum_type, prefix, _ in ENUMS:
        for member in enum_type:
            c_const = prefix + member.name
            lines.append(f'    printf("enum {c_const} %lld\\n", (long long){c_const});')
    for c_const in CONSTANTS:
        lines.append(f'    printf("const {c_const} %lld\\n", (long long){c_const});')
    lines += ["    return 0;", "}"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, int]:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.fail("the layout test needs a C compiler: set CC, or install gcc")
    dirs = include_dirs()
    if not dirs:
        pytest.fail(f"no kvshard/kvshard.h found beside {kvshard.library_path()} or in {REPO}")
    folder = tmp_path_factory.mktemp("abi")
    source, exe = folder / "layout.c", folder / "layout"
    source.write_text(program())
    flags = [f"-I{d}" for d in dirs]
    built = subprocess.run(
        [*cc.split(), "-std=c11", *flags, str(source), "-o", str(exe)],
        capture_output=True, text=True,
    )
    assert built.returncode == 0, built.stderr
    done = subprocess.run([str(exe)], capture_output=True, text=True, check=True)
    result = {}
    for line in done.stdout.splitlines():
        what, name, *values = line.split()
        result[f"{what} {name}"] = int(values[0]) if len(values) == 1 else tuple(
            float(v) if "." in v or "e" in v else int(v) for v in values
        )
    return result


@pytest.mark.parametrize("c_name", list(STRUCTS))
def test_struct_layout_matches_the_header(c_name: str, layout: Dict[str, int]) -> None:
    mirror, init = STRUCTS[c_name]
    assert ctypes.sizeof(mirror) == layout[f"sizeof {c_name}"]
    for field, _ in mirror._fields_:
        assert getattr(mirror, field).offset == layout[f"offset {c_name}.{field}"], field
    if init:
        # What the INIT macro writes into `size` is what the binding sends.
        assert _lib.sized(mirror).size == layout[f"init {c_name}"]


def test_the_init_values_are_the_binding_s(layout: Dict[str, int]) -> None:
    o = _optiontable.options_init()
    for field, _ in _lib.COptions._fields_[1:]:
        if field in POINTERS:
            assert not getattr(o, field) and layout[f"value kvshard_options.{field}"] == 1, field
        else:
            assert int(getattr(o, field)) == layout[f"value kvshard_options.{field}"], field
    f = _lib.sized(_lib.CFigure)
    assert (f.name is None, f.type, f.uint_value, f.double_value, f.bool_value,
            f.text_value is None) == (True, 0, 0, 0, False, True)
    assert layout["value kvshard_figure"] == (1, 0, 0, 0, 0, 1)
    i = _lib.sized(_lib.CSettingInfo)
    assert (i.key is None, i.type, i.min, i.max, i.default_value, i.engine) == (
        True, 0, 0, 0, b"", 0
    )
    assert layout["value kvshard_setting_info"] == (1, 0, 0, 0, 0, 0)


def test_enum_values_match_the_header(layout: Dict[str, int]) -> None:
    for enum_type, prefix, _ in ENUMS:
        for member in enum_type:
            assert int(member) == layout[f"enum {prefix}{member.name}"], member
    for c_const, value in CONSTANTS.items():
        # Printed as a long long: UINT64_MAX reads as -1, the same 64 bits.
        assert value % 2**64 == layout[f"const {c_const}"] % 2**64, c_const


# --- nothing the header declares is left out ----------------------------------------


def header_text() -> str:
    """The public headers as the layout program saw them (kvshard.h,
    explore.h, output.h), their comments removed."""
    text = ""
    for name in ("kvshard.h", "explore.h", "output.h"):
        # The first folder that has it, as the compiler searches the -I list.
        headers = [d / "kvshard" / name for d in include_dirs()]
        found = [h for h in headers if h.is_file()]
        assert found, f"no kvshard/{name} in {', '.join(map(str, headers))}"
        text += found[0].read_text()
    return re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)


def header_body(text: str, what: str, name: str) -> str:
    found = re.search(rf"typedef\s+{what}\s+{name}\s*\{{(.*?)\}}\s*{name}\s*;", text, re.S)
    assert found, f"no typedef {what} {name} in kvshard.h"
    return found.group(1)


def test_every_field_of_the_header_is_mirrored() -> None:
    text = header_text()
    for c_name, (mirror, _) in STRUCTS.items():
        # Each member's name: the last word of its declaration, before any [N][M].
        members = [m.strip() for m in header_body(text, "struct", c_name).split(";")]
        declared = [re.sub(r"(\s*\[[^\]]*\])+$", "", m).split()[-1].lstrip("*")
                    for m in members if m]
        mirrored = [field for field, _ in mirror._fields_]
        if c_name in PREFIX_ONLY:
            assert declared[: len(mirrored)] == mirrored, c_name
        else:
            assert declared == mirrored, c_name


def test_every_enum_member_of_the_header_is_mirrored() -> None:
    text = header_text()
    for enum_type, prefix, c_name in ENUMS:
        declared = re.findall(r"\b(KVSHARD_\w+)\s*=", header_body(text, "enum", c_name))
        assert declared == [prefix + member.name for member in enum_type], c_name


# --- the library checks every size ---------------------------------------------------


def longer(mirror: type) -> ctypes.Structure:
    """A struct of `mirror` whose `size` says one byte more than it is."""
    s = _lib.sized(mirror)
    s.size += 1
    return s


def test_the_library_refuses_a_struct_of_another_size(seed_plan: kvshard.Plan) -> None:
    lib = _lib.library()
    EINVAL = kvshard.Status.EINVAL
    byref = ctypes.byref
    with seed_plan._use() as h:
        assert lib.kvshard_plan_capacity(byref(longer(_lib.CCapacity)), h) == EINVAL
        assert lib.kvshard_plan_capacity(byref(_lib.sized(_lib.CCapacity)), h) == 0
        assert lib.kvshard_plan_options(byref(longer(_lib.COptions)), h) == EINVAL
        # The stage and rank records, and the layer storage with its stage.
        assert lib.kvshard_plan_stage(byref(longer(_lib.CStageInfo)), h, 0) == EINVAL
        stage = _lib.sized(_lib.CStageInfo)
        assert lib.kvshard_plan_stage(byref(stage), h, 0) == 0
        assert (stage.layer_first, stage.layer_count, stage.binds) == (0, 40, True)
        assert lib.kvshard_plan_locate(byref(longer(_lib.CRankPosition)), h, 3) == EINVAL
        at = _lib.sized(_lib.CRankPosition)
        assert lib.kvshard_plan_locate(byref(at), h, 3) == 0
        assert (at.tp_rank, at.plan_rank, at.split_group, at.split_rank) == (3, 3, 1, 1)
        assert lib.kvshard_plan_layer_storage(byref(longer(_lib.CLayerStorage)), h, 0, 3) == EINVAL
        storage = _lib.sized(_lib.CLayerStorage)
        assert lib.kvshard_plan_layer_storage(byref(storage), h, 0, 3) == 0
        assert (storage.holding, storage.stage) == (kvshard.LayerHolding.KV, 0)
        fig = longer(_lib.CFigure)
        assert lib.kvshard_plan_capacity_figure(byref(fig), h, b"num_blocks") == EINVAL
        fig = _lib.sized(_lib.CFigure)
        assert lib.kvshard_plan_capacity_figure(byref(fig), h, b"num_blocks") == 0
        assert (fig.name, fig.type, fig.uint_value) == (b"num_blocks", 1, 197493)
        budget = _lib.sized(_lib.CBudget)
        budget.memory_per_rank = 20 * 2**30
        blocks = longer(_lib.CBlocks)
        err = _lib.CError()
        assert lib.kvshard_plan_blocks_for(byref(blocks), h, 0, byref(budget), byref(err)) == EINVAL
        fig = longer(_lib.CFigure)
        assert (
            lib.kvshard_plan_blocks_figure(byref(fig), h, 0, byref(budget), b"num_blocks", None)
            == EINVAL
        )
    assert lib.kvshard_setting_info_at(byref(longer(_lib.CSettingInfo)), 0) == EINVAL
    assert lib.kvshard_setting_info_at(byref(_lib.sized(_lib.CSettingInfo)), 0) == 0
    assert lib.kvshard_setting_find(byref(longer(_lib.CSettingInfo)), b"max_cache_size") == EINVAL
    # One past the last setting is out of range.
    count = lib.kvshard_setting_count()
    assert count == len(kvshard.settings())
    assert lib.kvshard_setting_info_at(byref(_lib.sized(_lib.CSettingInfo)), count) == EINVAL
    opts = longer(_lib.COptions)
    err = _lib.CError()
    assert lib.kvshard_options_set(byref(opts), b"world_size", b"2", None, byref(err)) == EINVAL


def test_the_library_refuses_fit_options_of_another_size(seed: kvshard.Deployment) -> None:
    # The fit's own struct is checked as every other: one byte more is EINVAL
    # before anything is planned, and the row the library lends says its size.
    lib = _lib.library()
    fo = longer(_lib.CFitOptions)
    fo.gpus = 4
    out = ctypes.c_void_p()
    err = _lib.CError()
    with seed._use() as h:
        assert lib.kvshard_deployment_fit(ctypes.byref(out), h, ctypes.byref(fo),
                                          ctypes.byref(err)) == kvshard.Status.EINVAL
    assert not out.value
    assert b"kvshard_fit_options.size" in err.message
