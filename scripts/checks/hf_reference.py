#!/usr/bin/env python3
"""flopscope's parameters and FLOPs beside Hugging Face transformers' for one tiny model of each
supported model type (llama, mistral, qwen2, gemma, gpt2, mixtral): configs written by transformers'
own config classes (nothing downloaded), models built from them with random weights, parameters
by sum(p.numel()) and FLOPs by torch.utils.flop_counter.FlopCounterMode, forward and backward
(eager attention and experts). tests/python/test_hf_reference.py asserts the same figures equal.
Usage: .venv/bin/python scripts/checks/hf_reference.py [--build-dir build] [--out FILE.md]
"""
import argparse
import datetime
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
B, S = 2, 16
COMMON = dict(vocab_size=96, hidden_size=64, intermediate_size=80, num_hidden_layers=2, num_attention_heads=8,
              num_key_value_heads=2, max_position_embeddings=64)


def configs(transformers):
    """One config per model type, and what in it the test exercises."""
    return {
        "llama": (transformers.LlamaConfig(**COMMON, attention_bias=True), "GQA 8/2, biases on q, k, v, o"),
        "mistral": (transformers.MistralConfig(**COMMON), "GQA 8/2"),
        "qwen2": (transformers.Qwen2Config(**COMMON, tie_word_embeddings=True), "q, k, v biases, tied"),
        "gemma": (transformers.GemmaConfig(**{**COMMON, "num_key_value_heads": 1, "head_dim": 16}),
                  "MQA, head_dim given, GeGLU"),
        "mixtral": (transformers.MixtralConfig(**COMMON, num_local_experts=4, num_experts_per_tok=2),
                    "MoE 4 experts, 2 per token"),
        "gpt2": (transformers.GPT2Config(vocab_size=96, n_embd=64, n_layer=2, n_head=4, n_positions=64,
                                         bos_token_id=0, eos_token_id=0), "Conv1D, learned positions, tied"),
    }


def reference(torch, transformers, config):
    """(parameters, forward FLOPs, backward FLOPs) of transformers' own model at batch B x seq S."""
    from torch.utils.flop_counter import FlopCounterMode
    torch.manual_seed(0)
    # Eager attention and eager experts: what the convention counts (transformers' default MoE
    # kernel, grouped_mm, is an op FlopCounterMode counts as 0).
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager",
                                                          experts_implementation="eager")
    ids = torch.randint(0, config.vocab_size, (B, S))
    with FlopCounterMode(display=False) as forward:
        logits = model(ids).logits
    with FlopCounterMode(display=False) as backward:
        logits.float().sum().backward()
    return sum(p.numel() for p in model.parameters()), forward.get_total_flops(), backward.get_total_flops()


def flopscope(tool, config_dir):
    """flopscope account --hf-config's totals at batch B x seq S."""
    result = subprocess.run([str(tool), "account", "--hf-config", str(config_dir), "--batch", str(B), "--seq", str(S),
                             "--json"], capture_output=True, text=True, check=True)
    return json.loads(result.stdout)["totals"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--out", help="also write the table to this Markdown file")
    args = parser.parse_args()
    import torch
    import transformers
    tool = ROOT / args.build_dir / "tools" / "flopscope"
    rows = []
    for kind, (config, what) in configs(transformers).items():
        with tempfile.TemporaryDirectory() as folder:
            config.to_json_file(Path(folder) / "config.json")
            totals = flopscope(tool, folder)
        params, forward, backward = reference(torch, transformers, config)
        ours = (totals["parameters"], totals["forward"]["pytorch_flops"], totals["backward"]["pytorch_flops"])
        rows.append((kind, what, ours, (params, forward, backward), totals["active_parameters"]))
    lines = [f"# flopscope --hf-config beside transformers {transformers.__version__} (torch {torch.__version__})",
             "",
             f"Batch {B} x seq {S}, eager attention; FLOPs in PyTorch's convention (FlopCounterMode), forward and "
             "backward. Made by:",
             "",
             f"    .venv/bin/python scripts/checks/hf_reference.py --build-dir {args.build_dir}"
             + (f" --out {args.out}" if args.out else ""),
             "",
             f"({datetime.date.today().isoformat()}.) Each config is written by transformers' own config class "
             "(scripts/checks/hf_reference.py, `configs`); nothing downloaded.",
             "",
             "| model type | config | params flopscope | params transformers | fwd flopscope | fwd transformers | "
             "bwd flopscope | bwd transformers | equal |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for kind, what, ours, theirs, active in rows:
        equal = "yes" if ours == theirs else "no"
        note = f" (active {active:,})" if active != ours[0] else ""
        lines.append(f"| {kind} | {what} | {ours[0]:,}{note} | {theirs[0]:,} | {ours[1]:,} | {theirs[1]:,} | "
                     f"{ours[2]:,} | {theirs[2]:,} | {equal} |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        Path(args.out).write_text(text)
    return 0 if all(ours == theirs for _, _, ours, theirs, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
