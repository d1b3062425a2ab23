"""kvshard.Transfer.to_svg, the picture of docs/transfer.md drawn through
the binding byte for byte, and Transfer.judge_unsupported."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from conftest import REPO

import kvshard

QWEN = str(REPO / "examples" / "models" / "qwen3_5_35b_a3b.json")
PICTURE = REPO / "docs" / "images" / "transfer-qwen3_5.svg"


def _transfer(tokens=32768):
    model = kvshard.load_model(QWEN)
    p = kvshard.plan(model, world_size=2)
    d = kvshard.plan(model, world_size=4, enable_layerwise_split=True, layerwise_split_size=2)
    return kvshard.transfer(p, d, tokens=tokens)


def test_to_svg_is_the_docs_picture():
    t = _transfer()
    svg = t.to_svg()
    assert svg == PICTURE.read_text(encoding="utf-8")
    root = ET.fromstring(svg.encode("utf-8"))
    ns = "{http://www.w3.org/2000/svg}"
    bands = [e for e in root.iter(ns + "path") if e.get("class", "").startswith("band ")]
    assert len(bands) == len(t) == 20
    # The widest edge, 167,772,160 B of kv, is 96 px; the rest to scale.
    for edge, band in zip(t.edges, bands):
        assert float(band.get("stroke-width")) == pytest.approx(
            edge.bytes * 96 / 167772160, abs=0.0005)


def test_to_svg_needs_a_length():
    with pytest.raises(kvshard.KvshardError):
        _transfer(tokens=0).to_svg()


def test_judge_unsupported():
    t = _transfer()
    t.judge_unsupported("sglang", "the model's kind")
    t.judge_unsupported("vllm", "the model's layers", version="0.27.0")
    sglang, vllm = t.verdicts
    assert (sglang["engine"], sglang["version"], sglang["verdict"]) == (
        "sglang", "0.5.21", "unsupported")
    assert sglang["reasons"] == (("engine_unsupported", "the model's kind"),)
    assert (vllm["engine"], vllm["version"], vllm["verdict"]) == ("vllm", "0.27.0", "unsupported")
    assert t.to_dict()["verdicts"][1]["reasons"][0]["message"] == "the model's layers"
    # One verdict an engine; kvshard's own profile judges none.
    with pytest.raises(kvshard.KvshardError):
        t.judge_unsupported("sglang", "again")
    with pytest.raises(kvshard.KvshardError):
        t.judge_unsupported("kvshard", "no verdicts")
    with pytest.raises(ValueError):
        t.judge_unsupported("tgi", "no such engine")
    with pytest.raises(TypeError):
        t.judge_unsupported("xllm", None)
