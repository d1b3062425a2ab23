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
        ("kvshard", 0), ("xllm", 1), ("vllm", 2), ("sglang", 3)
    ]
    assert [e.name for e in engines if e.recommends_flags] == ["kvshard", "vllm", "sglang"]
    assert [e.name for e in engines if e.argparse] == ["vllm", "sglang"]
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
    assert len(options) == 29
    world = options["world_size"]
    assert (world.kind, world.min, world.max, world.default, world.unit) == (
        kvshard.SettingType.INTEGER, 1, 65536, "1", "ranks"
    )
    assert world.section == "parallel"
    assert options["engine"].words == (("kvshard", 0), ("xllm", 1), ("vllm", 2), ("sglang", 3))
    assert options["activation_reserve"].words == (("auto", -1),)
    assert options["pp_partition"].kind == kvshard.SettingType.COUNTS
    assert options["block_size"].unset_ok
