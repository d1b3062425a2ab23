"""docs/python.md names what the binding exposes: every field of the
dataclasses an engine allocates from and of a fit's rows, every figure ``create_model`` takes,
every member of the layer-kind, attention, engine, warning, setting-type,
figure-type, partition-rule, rank-layout and holding enums, the figure and
stage queries, every exception and the status codes each one covers. A field added to the binding without a
word in the docs fails here."""

from __future__ import annotations

import dataclasses
import re
from typing import Set

import pytest
from conftest import REPO

import kvshard
from kvshard import _errors, _objects

DOCS = REPO / "docs" / "python.md"


@pytest.fixture(scope="module")
def named() -> Set[str]:
    """Every identifier inside inline code in the docs (`...`), fenced
    blocks left out."""
    text = re.sub(r"```.*?```", " ", DOCS.read_text(), flags=re.S)
    words: Set[str] = set()
    for code in re.findall(r"`([^`\n]+)`", text):
        words.update(re.findall(r"\w+", code))
    return words


@pytest.mark.parametrize(
    "cls",
    [kvshard.LayerStorage, kvshard.RankMemory, kvshard.StageInfo, kvshard.RankPosition,
     kvshard.FitRow, kvshard.NotAdmitted, kvshard.KvGeometry, kvshard.StateTensor,
     kvshard.TransferEdge, kvshard.TransferRank],
    ids=lambda c: c.__name__,
)
def test_every_field_is_named(cls: type, named: Set[str]) -> None:
    missing = [f.name for f in dataclasses.fields(cls) if f.name not in named]
    assert missing == [], f"docs/python.md does not name {cls.__name__}.{missing}"


def test_every_description_figure_is_named(named: Set[str]) -> None:
    assert [f for f in _objects._DESC_UINTS if f not in named] == []


def test_every_layer_kind_and_attention_is_named(named: Set[str]) -> None:
    for enum_type in (kvshard.LayerKind, kvshard.Attention):
        assert [m.name for m in enum_type if m.name not in named] == [], enum_type.__name__


def test_every_engine_warning_setting_and_figure_type_is_named(named: Set[str]) -> None:
    for enum_type in (kvshard.Engine, kvshard.WarningCode, kvshard.SettingType,
                      kvshard.FigureType):
        assert [m.name for m in enum_type if m.name not in named] == [], enum_type.__name__
    for method in ("engine_figure", "engine_figures", "capacity_figure", "capacity_figures"):
        assert method in named


def test_every_stage_enum_member_and_query_is_named(named: Set[str]) -> None:
    for enum_type in (kvshard.PpRule, kvshard.RankLayout, kvshard.LayerHolding):
        assert [m.name for m in enum_type if m.name not in named] == [], enum_type.__name__
    queries = ("pp_size", "num_ranks", "stage", "stages", "layer_stage", "pp_partition",
               "locate", "global_rank", "binding_stage", "binding_tp_rank", "sweep_pp",
               "pp_partition_rule", "rank_layout")
    assert [q for q in queries if q not in named] == []


def test_the_fit_and_the_device_inputs_are_named(named: Set[str]) -> None:
    names = ("fit", "Fit", "rows", "fitting", "recommendation", "not_admitted",
             "limited_layouts", "flags", "to_text", "short_name", "RESERVE_AUTO",
             "device_memory", "memory_utilization", "activation_reserve", "weights_per_rank",
             "weights_total", "weights_experts", "expert_parallel", "gpus_per_node",
             "max_tp_size", "max_pp_size", "unsplit")
    assert [n for n in names if n not in named] == []


def test_every_exception_and_status_is_named(named: Set[str]) -> None:
    assert [e for e in _errors.__all__ if e not in named] == []
    codes = [s for s in kvshard.Status if s is not kvshard.Status.OK]
    assert [s.name for s in codes if s.name not in named] == []
