"""non_kv_memory: one size, or one a stage (a list), by the library's rules."""
from __future__ import annotations

import pytest

import kvshard

GIB = 1 << 30


def test_non_kv_memory_is_of_type_sizes() -> None:
    assert kvshard.setting_info("non_kv_memory").type is kvshard.SettingType.SIZES


def test_one_size_a_stage_as_a_list() -> None:
    o = kvshard.Options(non_kv_memory=[20 * GIB, 30 * GIB])
    assert o.setting("non_kv_memory") == "21474836480,32212254720"
    o.set("non_kv_memory", "20GiB,30GiB")
    assert o.setting("non_kv_memory") == "20GiB,30GiB"
    o.set("non_kv_memory", 30 * GIB)
    assert o.setting("non_kv_memory") == 30 * GIB


def test_a_list_is_checked_entry_by_entry() -> None:
    with pytest.raises(ValueError, match=r"non_kv_memory\[1\]"):
        kvshard.Options(non_kv_memory=[GIB, -1])
    with pytest.raises(ValueError, match="no sizes"):
        kvshard.Options(non_kv_memory=[])
