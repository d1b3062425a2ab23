#!/usr/bin/env python3
"""Sweep the layerwise split size of a deployment and tabulate the plans.

    python3 examples/python/sweep_split.py [DEPLOYMENT] [CONTEXT_LENGTH]

Written in cells (`# %%`) to run one by one in an editor or notebook, or as
a whole from the shell. Defaults: the shipped Qwen3.5 seed deployment and
32768-token sequences.
"""

# %% Load the deployment
import sys
from pathlib import Path

import kvshard

here = Path(__file__).resolve().parent
path = Path(sys.argv[1]) if len(sys.argv) > 1 else here.parent / "qwen3_5_35b_a3b_tp4.yaml"
context_length = int(sys.argv[2]) if len(sys.argv) > 2 else 32768

dep = kvshard.load(path, context_length=context_length)
with dep.plan() as base:
    tp = base.attn_tp_size
print(f"{dep.model.model_type}: {dep.model.num_layers} layers, attention TP {tp}, "
      f"{context_length}-token sequences")

# %% Plan every split size that divides T, under each ownership rule
rows = []
for split in (s for s in range(1, tp + 1) if tp % s == 0):
    for rule in ("ordinal", "global", "contiguous"):
        dep.set("enable_layerwise_split", split > 1)
        dep.set("layerwise_split_size", split)
        dep.set("ownership", rule)
        try:
            plan = dep.plan()
        except kvshard.PlanError as exc:
            rows.append((split, rule, None, exc.message))
            continue
        with plan:
            owned = [len(plan.rank_layers(r)) for r in range(plan.effective_split_size)]
            # The rank that stores the most bounds the blocks of all ranks.
            mem = max((plan.rank_memory(r) for r in range(tp)), key=lambda m: m.bytes_per_block)
            warnings = [c.label for c, _ in plan.warnings]
            rows.append((split, rule, (owned, mem, plan.capacity, warnings), ""))
        if split == 1:
            break  # without a split the rule changes nothing

# %% Print the table
print(f"{'S':>3}  {'rule':<10}  {'owned':<9}  {'KV B/token':>10}  {'B/block':>8}  "
      f"{'blocks':>8}  {'running':>7}  {'balanced':>8}  warnings")
for split, rule, result, error in rows:
    if result is None:
        print(f"{split:>3}  {rule:<10}  error: {error}")
        continue
    owned, mem, cap, warnings = result
    print(f"{split:>3}  {rule:<10}  {min(owned)}-{max(owned):<7}  {mem.kv_bytes_per_token:>10}  "
          f"{mem.bytes_per_block:>8}  {cap.num_blocks or 0:>8}  {cap.concurrency or 0:>7}  "
          f"{cap.balanced_max_seqs or 0:>8}  {' '.join(warnings)}")

# %% The library's own comparison agrees on the best row
with dep.compare() as cmp:
    best = cmp.recommended
print(f"recommended: split {best.layerwise_split_size}, {best.ownership.label} rule, "
      f"max_seqs {best.balanced_max_seqs}")
dep.close()
