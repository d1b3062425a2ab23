"""Errors: the library's code, source, line and column reach Python; each
code raises its family's exception; wrong Python arguments fail before any
C call."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any, Callable

import pytest
from conftest import SEED

import kvshard
from kvshard import Status

MODEL = """{"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 256,
 "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64}
"""


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    (tmp_path / "model.json").write_text(MODEL)
    return tmp_path


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def test_unknown_key_in_a_deployment_file(model_dir: Path) -> None:
    path = write(model_dir, "dep.yaml", "model: model.json\nparallel:\n  world_size: 4\n  bogus: 1\n")
    with pytest.raises(kvshard.ConfigError) as info:
        kvshard.load(path)
    e = info.value
    assert e.code is Status.EUNKNOWNKEY
    assert (e.source, e.line, e.column) == (str(path), 4, 3)
    assert "bogus" in e.message
    assert e.offset == len("model: model.json\nparallel:\n  world_size: 4\n  ")
    assert str(e) == f"{path}:4:3: {e.message}"
    assert isinstance(e, kvshard.KvshardError)


def test_quoted_number_is_a_type_error(model_dir: Path) -> None:
    path = write(model_dir, "dep.yaml", 'model: model.json\nparallel:\n  world_size: "4"\n')
    with pytest.raises(kvshard.ConfigError) as info:
        kvshard.load(path)
    assert info.value.code is Status.ETYPE
    assert (info.value.line, info.value.column) == (3, 15)


def test_duplicate_key_and_syntax_errors_are_read_errors(model_dir: Path) -> None:
    dup = write(model_dir, "dup.yaml", "model: model.json\nparallel:\n  world_size: 4\n  world_size: 2\n")
    with pytest.raises(kvshard.ReadError) as info:
        kvshard.load(dup)
    assert info.value.code is Status.EDUPKEY
    assert (info.value.filename, info.value.lineno, info.value.column) == (str(dup), 4, 3)

    with pytest.raises(kvshard.ReadError) as info:
        kvshard.load_model("num_hidden_layers: [4\n")
    assert info.value.code is Status.ESYNTAX
    assert info.value.source == "<string>"
    assert info.value.line == 2


def test_error_in_the_model_file_points_into_it(model_dir: Path) -> None:
    bad = write(model_dir, "bad.json", MODEL.replace('"num_key_value_heads": 2', '"num_key_value_heads": -2'))
    path = write(model_dir, "dep.yaml", "model: bad.json\n")
    with pytest.raises(kvshard.ConfigError) as info:
        kvshard.load(path)
    e = info.value
    assert e.code is Status.ERANGE
    assert e.source == str(bad)
    assert e.line == 2
    assert MODEL.splitlines()[1][e.column - 1 :].startswith("2")  # the value's column


def test_plan_error_names_the_override() -> None:
    with kvshard.load(SEED, layerwise_split_size=3) as dep:
        with pytest.raises(kvshard.PlanError) as info:
            dep.plan()
    assert info.value.code is Status.ESPLIT
    assert info.value.source == "python"
    assert "3" in info.value.message


def test_no_memory_for_one_block() -> None:
    with kvshard.load(SEED, memory_per_rank="1GiB") as dep:
        with pytest.raises(kvshard.PlanError) as info:
            dep.plan()
    assert info.value.code is Status.ENOBLOCK


def test_flag_file_error_has_its_position(tmp_path: Path, seed: kvshard.Deployment) -> None:
    flags = write(tmp_path, "flags.txt", "# engine flags\n--world_size=4\n--block_size=abc\n")
    before = seed.options
    with pytest.raises(kvshard.ConfigError) as info:
        seed.apply_args([f"--flagfile={flags}"])
    assert info.value.code is Status.ETYPE
    # The value "abc" follows the 13 characters of "--block_size=".
    assert (info.value.source, info.value.line, info.value.column) == (str(flags), 3, 14)
    assert seed.options == before  # unchanged on failure


def test_unknown_flag_and_ignore_unknown(seed: kvshard.Deployment) -> None:
    with pytest.raises(kvshard.ConfigError) as info:
        seed.apply_args(["--block_size=32", "--not_a_flag=1"])
    assert info.value.code is Status.EUNKNOWNKEY
    assert seed.options.block_size == 16
    seed.apply_args(["--block_size=32", "--not_a_flag=1"], ignore_unknown=True)
    assert seed.options.block_size == 32


def test_missing_file_is_a_file_error(tmp_path: Path) -> None:
    with pytest.raises(kvshard.FileError) as info:
        kvshard.load(tmp_path / "absent.yaml")
    assert info.value.code is Status.EIO
    assert isinstance(info.value, OSError)
    with pytest.raises(kvshard.FileError):
        kvshard.load_model(tmp_path / "absent.json")  # a Path is always a path


def test_text_that_looks_like_a_path_gets_a_note() -> None:
    with pytest.raises(kvshard.KvshardError) as info:
        kvshard.load_model("no/such/config.json")
    notes = getattr(info.value, "__notes__", [])
    if hasattr(info.value, "add_note"):
        assert any("no file" in n for n in notes)


def test_not_utf8() -> None:
    with pytest.raises(kvshard.ReadError) as info:
        kvshard.load_model(b"num_hidden_layers: 4\nmodel_type: \xff\n")
    assert info.value.code is Status.EUTF8
    assert info.value.offset == len(b"num_hidden_layers: 4\nmodel_type: ")


def test_out_of_range_queries(seed_plan: kvshard.Plan) -> None:
    for call in (
        lambda: seed_plan.rank_layers(4),
        lambda: seed_plan.owns(4, 0),
        lambda: seed_plan.rank_memory(100),
        lambda: seed_plan.describe_rank(4),
    ):
        with pytest.raises(kvshard.QueryError) as info:
            call()
        assert info.value.code is Status.ERANK
        assert isinstance(info.value, IndexError)
        assert "plan rank" in info.value.message
    with pytest.raises(kvshard.QueryError) as info:
        seed_plan.layer_kind(40)
    assert info.value.code is Status.ELAYER
    with pytest.raises(kvshard.QueryError):
        seed_plan.stores_kv(0, 40)


def test_option_text_errors() -> None:
    with pytest.raises(kvshard.ConfigError) as info:
        kvshard.Options(memory_per_rank="20 gigabytes")
    assert info.value.source == "python"
    with pytest.raises(kvshard.ConfigError) as info:
        kvshard.Options().set("no_such_option", "1")
    assert info.value.code is Status.EUNKNOWNKEY
    with pytest.raises(kvshard.ConfigError):
        kvshard.load(SEED, no_such_option=1)


def test_status_labels_come_from_the_library() -> None:
    assert Status.ENOBLOCK.label == "no memory for one block"
    assert kvshard.LayerKind.HYBRID.label == "hybrid"
    assert kvshard.Dtype.BF16.label == "bfloat16"
    assert kvshard.Warning.MAX_SEQS_UNREACHABLE.label == "max_seqs_unreachable"
    # Every warning the library names has a member, and no member is unnamed.
    assert [w.label for w in kvshard.Warning][-1] == "split_loses_throughput"
    assert all(w.label != "unknown" for w in kvshard.Warning)


def test_every_status_has_a_family() -> None:
    # A status the package maps to no family would raise the bare base class.
    from kvshard._errors import error_class, make_error

    for code in Status:
        if code is not Status.OK:
            assert error_class(code) is not kvshard.KvshardError, code
    e = make_error(Status.EUNMODELED)
    assert type(e) is kvshard.UnmodeledError and isinstance(e, kvshard.ConfigError)
    assert e.message == "a cache kvshard does not model"


# --- wrong Python arguments fail before any C call ---------------------------------


@pytest.fixture
def no_c_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse() -> ctypes.CDLL:
        raise AssertionError("a C call was made")

    monkeypatch.setattr(kvshard._lib, "library", refuse)


BAD_CALLS: list = [
    ("load int path", TypeError, lambda p, d: kvshard.load(42)),
    ("load bytes path", TypeError, lambda p, d: kvshard.load(b"x.yaml")),
    ("load NUL", ValueError, lambda p, d: kvshard.load("a\0b")),
    ("load override list", TypeError, lambda p, d: kvshard.load(SEED, world_size=[4])),
    ("load override None", TypeError, lambda p, d: kvshard.load(SEED, world_size=None)),
    ("load_model int", TypeError, lambda p, d: kvshard.load_model(3)),
    ("Options unknown", TypeError, lambda p, d: kvshard.Options(wrold_size=4)),
    ("Options float", TypeError, lambda p, d: kvshard.Options(world_size=4.0)),
    ("Options bool as int", TypeError, lambda p, d: kvshard.Options(world_size=True)),
    ("Options negative", ValueError, lambda p, d: kvshard.Options(world_size=-1)),
    ("Options too big", ValueError, lambda p, d: kvshard.Options(block_size=2**32)),
    ("Options int as bool", TypeError, lambda p, d: kvshard.Options(is_draft=1)),
    ("Options bad enum", ValueError, lambda p, d: kvshard.Options(ownership=7)),
    ("Options nan", ValueError, lambda p, d: kvshard.Options(max_memory_utilization=float("nan"))),
    ("plan not a model", TypeError, lambda p, d: kvshard.plan("model.json")),
    ("owns str", TypeError, lambda p, d: p.owns("0", 3)),
    ("owns negative", ValueError, lambda p, d: p.owns(0, -3)),
    ("owns float", TypeError, lambda p, d: p.owns(0.0, 3)),
    ("rank_layers None", TypeError, lambda p, d: p.rank_layers(None)),
    ("layer_storage big", ValueError, lambda p, d: p.layer_storage(0, 2**40)),
    ("blocks_for negative float", ValueError, lambda p, d: p.blocks_for(-1.5e9)),
    ("blocks_for nan", ValueError, lambda p, d: p.blocks_for(float("nan"))),
    ("blocks_for bool", TypeError, lambda p, d: p.blocks_for(True)),
    ("blocks_for negative", ValueError, lambda p, d: p.blocks_for(-1)),
    ("blocks_for rank", TypeError, lambda p, d: p.blocks_for(10**9, plan_rank="1")),
    ("apply_args str", TypeError, lambda p, d: d.apply_args("--world_size=4")),
    ("apply_args item", TypeError, lambda p, d: d.apply_args([b"--world_size=4"])),
    ("apply_args flag", TypeError, lambda p, d: d.apply_args([], ignore_unknown=1)),
    ("set key", TypeError, lambda p, d: d.set(4, "x")),
    ("set value", TypeError, lambda p, d: d.set("world_size", object())),
    ("report type", TypeError, lambda p, d: p.report_html(comparison=p)),
    ("has_warning str", ValueError, lambda p, d: p.has_warning("nope")),
]


@pytest.mark.parametrize("label, exc, call", BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_wrong_arguments_fail_in_python(
    label: str,
    exc: type,
    call: Callable[[Any, Any], Any],
    seed: kvshard.Deployment,
    seed_plan: kvshard.Plan,
    no_c_calls: None,
) -> None:
    with pytest.raises(exc):
        call(seed_plan, seed)


def test_options_type_is_checked_before_c(seed: kvshard.Deployment, monkeypatch: pytest.MonkeyPatch) -> None:
    model = seed.model
    monkeypatch.setattr(kvshard._lib, "library", lambda: pytest.fail("a C call was made"))
    with pytest.raises(TypeError):
        kvshard.plan(model, {"world_size": 4})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        kvshard.compare(model, world_size="4", block_size=1.5)


def test_closed_objects_raise_value_error(seed: kvshard.Deployment) -> None:
    plan = seed.plan()
    plan.close()
    plan.close()  # idempotent
    assert plan.closed
    with pytest.raises(ValueError, match="closed"):
        plan.rank_layers(0)
    with pytest.raises(ValueError, match="closed"):
        plan.to_json()
