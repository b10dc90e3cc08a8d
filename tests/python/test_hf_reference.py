"""`flopscope account --hf-config` against Hugging Face transformers itself: tiny models built from
configs that transformers' own config classes write (nothing downloaded, random weights), their
parameters by sum(p.numel()) and their FLOPs by torch.utils.flop_counter.FlopCounterMode, forward
and backward, equal to flopscope's pytorch convention. Eager attention (what the convention
counts: two bmm forward, four backward) and eager experts (scripts/checks/hf_reference.py). torch and transformers: analysis/requirements-torch.txt
(scripts/setup.sh installs them).
"""
import json
import sys

import pytest

from flopscope_tool import ROOT, run as run_tool

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

sys.path.insert(0, str(ROOT / "scripts" / "checks"))
import hf_reference  # noqa: E402  (the configs and the reference, shared with the table's script)

B, S = hf_reference.B, hf_reference.S
CONFIGS = hf_reference.configs(transformers)


def reference(config):
    return hf_reference.reference(torch, transformers, config)


@pytest.mark.parametrize("kind", sorted(CONFIGS))
def test_hf_models_match_flopscope(tmp_path, kind):
    config = CONFIGS[kind][0]
    path = tmp_path / "config.json"
    config.to_json_file(path)
    params, forward, backward = reference(config)
    result = run_tool("account", "--hf-config", str(tmp_path), "--batch", str(B), "--seq", str(S), "--json")
    assert result.returncode == 0, result.stderr
    totals = json.loads(result.stdout)["totals"]
    assert totals["parameters"] == params
    # Mixtral too, exactly: its experts run eagerly (hf_reference builds every model with
    # experts_implementation="eager", one F.linear per expert over its tokens, which the counter
    # counts). transformers' default for MoE, "grouped_mm", runs an op that FlopCounterMode has no
    # formula for and counts 0 for the experts (forward 1,998,848 instead of 5,931,008 here).
    assert totals["forward"]["pytorch_flops"] == forward
    assert totals["backward"]["pytorch_flops"] == backward
    if kind == "mixtral":
        d, f, k, L = 64, 80, 2, 2
        assert totals["active_parameters"] == params - L * (4 - k) * 3 * d * f
