"""kvshard.transfer: the worked example of docs/transfer.md (Qwen3.5-35B-A3B
prefilled on TP 2, decoded on TP 4 with a split of 2) through the binding,
the same figures as the C library's, and its refusals."""

from __future__ import annotations

import pytest
from conftest import REPO

import kvshard

QWEN = str(REPO / "examples" / "models" / "qwen3_5_35b_a3b.json")


def _plans():
    model = kvshard.load_model(QWEN)
    p = kvshard.plan(model, world_size=2)
    d = kvshard.plan(model, world_size=4, enable_layerwise_split=True, layerwise_split_size=2)
    return p, d


def test_worked_example():
    p, d = _plans()
    t = kvshard.transfer(p, d, tokens=32768)
    assert len(t) == 20
    first = t.edges[0]
    assert (first.src, first.dst, first.component) == (0, 0, "kv")
    assert first.layers == (3, 11, 19, 27, 35)
    assert first.units == (0, 1)
    assert first.bytes == 5120 * 32768
    # 20,480 B/token x 32,768 + 64,389,120 B of state, sent once.
    assert t.bytes["unique"] == t.bytes["wire"] == 735477760
    assert t.bytes["replication"] == 1.0
    assert t.bytes["time_us"] == 7355
    assert t.busiest_source.bytes == 367738880
    assert t.digest == "ee1b03cab8841722"
    assert t.nic == ("ndr400", 50000000000)
    assert t.warnings == ()
    sent = t.rank_edges("prefill", 1)
    assert len(sent) == 10 and {e.dst for e in sent} == {2, 3}
    assert len(t.rank_edges("decode", 3)) == 5
    assert t.rank_edges("decode", 7) == ()
    doc = t.to_dict()
    assert doc["digest"] == "ee1b03cab8841722"
    assert doc["bytes"]["wire"] == 735477760
    assert t.to_text().endswith("digest     ee1b03cab8841722\n")


def test_refusals():
    p, d = _plans()
    with pytest.raises(kvshard.ConfigError, match="transfer_replica"):
        kvshard.transfer(p, d, d_replica=1)
    with pytest.raises(kvshard.KvshardError, match="transfer_nic"):
        kvshard.transfer(p, d, nic="fast")
    with pytest.raises(TypeError):
        kvshard.transfer(p, "d")


def test_vllm_verdict():
    # vLLM's blocks: 1,056 at TP 2, 528 at TP 4 (the split is the
    # transfer's; the engine plans each side without it).
    p, d = _plans()
    t = kvshard.transfer(p, d, tokens=32768)
    model = kvshard.load_model(QWEN)
    vp = kvshard.plan(model, engine="vllm", world_size=2)
    vd = kvshard.plan(model, engine="vllm", world_size=4)
    t.judge(vp, vd)
    (v,) = t.verdicts
    assert (v["engine"], v["version"], v["verdict"]) == ("vllm", "0.28.0", "refused")
    assert [code for code, _ in v["reasons"]] == ["vllm_split", "vllm_block_ratio"]
    assert v["reasons"][1][1] == "D's block 528 is not a multiple of P's 1,056"
    assert v["requires"] == ("VLLM_SSM_CONV_STATE_LAYOUT=DS",)
    assert t.to_dict()["verdicts"][0]["verdict"] == "refused"
    with pytest.raises(kvshard.KvshardError):
        t.judge(vp, vd)
