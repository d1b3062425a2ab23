"""The package's modules import one another without a cycle, and the tables
it reads from the library hold what the library defines."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set

import kvshard
from kvshard import _lib

PACKAGE = Path(kvshard.__file__).resolve().parent


def imports_of(path: Path) -> Set[str]:
    """The kvshard modules a module imports, wherever the import stands
    (in a function too: a late import is an edge all the same)."""
    found: Set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kvshard."):
            found.add(node.module.split(".")[1])
    return found


def test_no_import_cycle() -> None:
    modules = {p.stem: p for p in PACKAGE.glob("_*.py")}
    graph: Dict[str, Set[str]] = {m: imports_of(p) & set(modules) for m, p in modules.items()}
    assert "_lib" in graph and "_fit" in graph
    done: Set[str] = set()

    def visit(module: str, path: List[str]) -> None:
        if module in path:
            cycle = path[path.index(module):] + [module]
            raise AssertionError("import cycle: " + " -> ".join(cycle))
        if module in done:
            return
        for imported in sorted(graph[module]):
            visit(imported, path + [module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])


def test_fit_is_not_imported_by_the_objects_it_uses() -> None:
    assert "_objects" in imports_of(PACKAGE / "_fit.py")
    assert "_fit" not in imports_of(PACKAGE / "_objects.py")


def test_engines_and_their_flags_come_from_the_library() -> None:
    engines = _lib.engines()
    assert [(e.name, e.value) for e in engines] == [
        ("kvshard", 0), ("xllm", 1), ("vllm", 2), ("sglang", 3), ("trtllm", 4)
    ]
    assert [e.name for e in engines if e.recommends_flags] == [
        "kvshard", "xllm", "vllm", "sglang", "trtllm"]
    assert [e.name for e in engines if e.argparse] == ["vllm", "sglang", "trtllm"]
    vllm = {f.name: f for f in _lib.flags(2)}
    assert vllm["pp_size"].also == ("pp", "pipeline-parallel-size")
    assert vllm["max_seqs"].also == ("max-num-seqs",)
    assert vllm["tensor-parallel-size"].key == "tensor_parallel_size"
    assert vllm["tensor-parallel-size"].is_setting
    xllm = {f.name: f for f in _lib.flags(1)}
    assert xllm["max_seqs"].also == ("max_seqs_per_batch",)
    assert not xllm["max_seqs"].is_setting


def test_options_come_from_the_library() -> None:
    options = {o.name: o for o in _lib.options()}
    assert len(options) == 43  # 29, and the 14 keys of comm:
    world = options["world_size"]
    assert (world.kind, world.min, world.max, world.default, world.unit) == (
        kvshard.SettingType.INTEGER, 1, 65536, "1", "ranks"
    )
    assert world.section == "parallel"
    assert options["engine"].words == (
        ("kvshard", 0), ("xllm", 1), ("vllm", 2), ("sglang", 3), ("trtllm", 4)
    )
    assert options["activation_reserve"].words == (("auto", -1),)
    assert options["pp_partition"].kind == kvshard.SettingType.COUNTS
    assert options["block_size"].unset_ok
    # Compare's and fit's own inputs and the comm: keys are options no field
    # of kvshard_options holds; every other option's field is where the
    # struct mirror has it.
    assert [o.name for o in options.values() if o.offset is None and o.section != "comm"] == [
        "sweep_pp", "gpus_per_node"
    ]
    assert all(o.offset is None for o in options.values() if o.section == "comm")
    for row in options.values():
        if row.offset is not None:
            assert getattr(_lib.COptions, row.name).offset == row.offset, row.name


# The members users name, with the C values: made from the library's names
# of the values at import time, they must keep these names.
EXPECTED_MEMBERS = {
    kvshard.Engine: [("KVSHARD", 0), ("XLLM", 1), ("VLLM", 2), ("SGLANG", 3), ("TRTLLM", 4)],
    kvshard.PpRule: [("DEFAULT", -1), ("VLLM", 0), ("SGLANG", 1), ("TRTLLM", 2), ("EVEN", 3),
                     ("EXPLICIT", 4)],
    kvshard.RankLayout: [("DEFAULT", -1), ("VLLM", 0), ("SGLANG", 1), ("TRTLLM", 2),
                         ("XLLM", 3)],
    kvshard.Ownership: [("DEFAULT", -1), ("ORDINAL", 0), ("GLOBAL", 1), ("CONTIGUOUS", 2)],
}


def test_enums_made_from_the_library_keep_their_members() -> None:
    import enum
    import pickle

    for enum_type, members in EXPECTED_MEMBERS.items():
        assert issubclass(enum_type, enum.IntEnum)
        assert [(m.name, int(m)) for m in enum_type] == members, enum_type.__name__
        assert enum_type.__module__ == "kvshard._enums"
        for member in enum_type:
            assert member.label == member.name.lower()
            assert pickle.loads(pickle.dumps(member)) is member
    assert kvshard.Engine.VLLM == 2 and kvshard.Engine(3) is kvshard.Engine.SGLANG
    assert kvshard.PpRule["EXPLICIT"] is kvshard.PpRule.EXPLICIT


def test_member_names_are_the_library_s_words() -> None:
    from kvshard._enums import member_name

    assert member_name("vllm") == "VLLM"
    assert member_name("tensorrt-llm") == "TENSORRT_LLM"
    assert member_name("a.b c") == "A_B_C"


def test_the_type_checkers_members_are_the_library_s() -> None:
    # _enums declares the members users name for type checkers; each is a
    # member the library names (the library may name more).
    import ast
    import inspect

    from kvshard import _enums

    tree = ast.parse(inspect.getsource(_enums))
    block = next(n for n in tree.body if isinstance(n, ast.If))
    for declared in block.body:
        assert isinstance(declared, ast.ClassDef)
        names = [a.targets[0].id for a in declared.body if isinstance(a, ast.Assign)]
        made = getattr(kvshard, declared.name)
        assert names == [m.name for m in made][: len(names)], declared.name
