#!/usr/bin/env python3
"""Print the engine flags for a deployment, sized from measured memory.

    python3 examples/python/launch_flags.py DEPLOYMENT MEMORY CONTEXT_LENGTH
    python3 examples/python/launch_flags.py examples/qwen3_5_35b_a3b_tp4.yaml 20GiB 32768

MEMORY is what one rank can give to the KV cache and the recurrent state
after the weights are loaded, as the engine measured it (bytes, or with a
KiB/MiB/GiB/TiB suffix); CONTEXT_LENGTH the tokens of one sequence. The
script plans the deployment with that memory, takes the balanced max_seqs
(the number of sequences at which the state reservation and the KV blocks
run out together), plans again with it to confirm, and prints the flags:
layerwise split on or off, the split size, the ownership rule and
max_seqs. --recommend takes the split size and rule the comparison of
every split size recommends instead of the deployment's own.
"""

from __future__ import annotations

import argparse
import sys

import kvshard


def main(argv: list) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("deployment", help="deployment YAML, config.json or model directory")
    parser.add_argument("memory", help="measured bytes per rank for cache and state, e.g. 20GiB")
    parser.add_argument("context_length", type=int, help="tokens per sequence")
    parser.add_argument("--recommend", action="store_true",
                        help="use the split size and rule the comparison recommends")
    args = parser.parse_args(argv)

    try:
        with kvshard.load(args.deployment, memory_per_rank=args.memory,
                          context_length=args.context_length) as dep:
            if args.recommend:
                with dep.compare() as cmp:
                    best = cmp.recommended
                dep.set("enable_layerwise_split", best.layerwise_split_size > 1)
                dep.set("layerwise_split_size", best.layerwise_split_size)
                dep.set("ownership", best.ownership)
            xllm = dep.options.engine is kvshard.Engine.XLLM
            if not xllm:
                # The balanced figure does not depend on max_seqs: plan with
                # one sequence so that a large max_seqs in the file cannot
                # fail the plan before the figure is known.
                dep.set("max_seqs", 1)
            with dep.plan() as plan:
                cap = plan.capacity
                # The balanced figure, or under the xllm profile (whose state
                # pool does not follow max_seqs) the sequences that run at once.
                max_seqs = cap.concurrency if xllm else cap.balanced_max_seqs
            if not max_seqs:
                print("kvshard: not one sequence of that length fits", file=sys.stderr)
                return 1
            dep.set("max_seqs", max_seqs)
            with dep.plan() as plan:
                opts, cap = plan.options, plan.capacity
                split = plan.effective_split_size
                model = dep.model.model_type or "model"
                flags = [f"--enable_layerwise_split={'true' if split > 1 else 'false'}"]
                if split > 1:
                    flags += [f"--layerwise_split_size={split}", f"--ownership={opts.ownership.label}"]
                flags.append(f"--{'max_seqs_per_batch' if xllm else 'max_seqs'}={max_seqs}")
                print(f"# {model} on attention TP {plan.attn_tp_size}, {opts.memory_per_rank} bytes "
                      f"per rank, {args.context_length}-token sequences")
                print(" ".join(flags))
                print(f"# {cap.num_blocks} blocks of {cap.block_size} tokens per rank; "
                      f"{cap.concurrency} sequences run at once")
                for code, message in plan.warnings:
                    print(f"# warning {code.label}: {message}")
    except kvshard.KvshardError as exc:
        print(f"kvshard: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
