"""The model against transformers' ``LlamaForCausalLM`` in float64 (docs/runner.md §3.7), loading and
saving checkpoints (§3.3), and padding that never changes real rows (docs/parallel.md §4.4)."""

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from arctic_ref.model.config import ModelConfig, tiny_config
from arctic_ref.model.weights import load_weights, random_weights, save_pretrained
from arctic_ref.parallel import ParallelLayout, RankGroups, SoloComm
from arctic_ref.parallel.launch import RankInfo
from arctic_ref.runner import EngineConfig, SampleRecord, SamplingParams, SchedulerConfig, build_runner, run_requests
from arctic_ref.runner.generate import GenerateJob, generate_on_rank
from arctic_ref.runner.prompts import builtin_prompts
from arctic_ref.testing.model.oracle import load_transformers_model

transformers = pytest.importorskip("transformers")
SOLO = SoloComm(0)
GROUPS = RankGroups(rank=0, tp=SOLO, sp=SOLO, shift=SOLO)


_hf = load_transformers_model


def _generate(
    config: ModelConfig, weights: dict[str, torch.Tensor], budget: int, *, graphs: bool = False, max_tokens: int = 12
) -> tuple[list[tuple[int, ...]], list[SampleRecord]]:
    engine = EngineConfig(
        model=config,
        layout=ParallelLayout(1, 1, 1),
        scheduler=SchedulerConfig(max_num_batched_tokens=budget),
        cuda_graphs=graphs,
    )
    records: list[SampleRecord] = []
    prompts = builtin_prompts(config.vocab_size)
    results = run_requests(
        build_runner(engine, weights, GROUPS),
        engine.scheduler,
        prompts,
        [SamplingParams(max_tokens=max_tokens)] * len(prompts),
        records=records,
    )
    return [r.output_token_ids for r in results], records


def _check_against_hf(config: ModelConfig, weights: dict[str, torch.Tensor], path: Path, budget: int) -> float:
    """Greedy tokens equal HF's argmax over the full sequence; every sampled row within 1e-9."""
    hf = _hf(path)
    outputs, records = _generate(config, weights, budget)
    prompts = builtin_prompts(config.vocab_size)
    worst = 0.0
    for index, (prompt, output) in enumerate(zip(prompts, outputs, strict=True)):
        with torch.no_grad():
            logits = hf(torch.tensor([prompt + list(output)])).logits[0]
        assert logits.dtype == torch.float64  # older 4.x upcast logits to float32: fail loudly
        assert logits[len(prompt) - 1 : -1].argmax(-1).tolist() == list(output)
        for record in (r for r in records if r.prompt_index == index):
            worst = max(worst, float((record.logits - logits[record.num_tokens - 1]).abs().max()))
    assert worst <= 1e-9
    return worst


@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
@pytest.mark.parametrize("vocab", [512, 509])
@pytest.mark.parametrize("budget", [256, 7], ids=["full-prefill", "chunks-of-7"])
def test_matches_transformers(tmp_path: Path, tied: bool, vocab: int, budget: int) -> None:
    config = tiny_config(tied=tied, vocab_size=vocab)
    weights = random_weights(config, 3)
    save_pretrained(tmp_path, config, weights)
    worst = _check_against_hf(config, weights, tmp_path, budget)
    print(f"\ntied={tied} vocab={vocab} budget={budget}: max |Δlogits| vs transformers {worst:.2e}")


def test_loads_a_checkpoint_saved_by_transformers(tmp_path: Path) -> None:
    """transformers' own random init, saved by ``save_pretrained``; sharded into an index too."""
    hf_config = transformers.LlamaConfig(
        vocab_size=320,
        hidden_size=64,
        intermediate_size=160,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        rope_theta=5000.0,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(hf_config).to(torch.float64)
    model.save_pretrained(tmp_path / "single")
    config = ModelConfig.load(tmp_path / "single")
    assert config.rope_theta == 5000.0 and config.head_dim == 16
    weights = load_weights(tmp_path / "single", config, torch.float64)
    _check_against_hf(config, weights, tmp_path / "single", 16)
    # the same weights as a two-file sharded checkpoint with an index
    sharded = tmp_path / "sharded"
    sharded.mkdir()
    (sharded / "config.json").write_text((tmp_path / "single" / "config.json").read_text())
    names = sorted(weights)
    halves = {"a.safetensors": names[: len(names) // 2], "b.safetensors": names[len(names) // 2 :]}
    for file, keys in halves.items():
        save_file({k: weights[k].to(torch.bfloat16) for k in keys}, str(sharded / file))
    (sharded / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {k: f for f, ks in halves.items() for k in ks}})
    )
    loaded = load_weights(sharded, config, torch.float32)
    assert all(
        loaded[k].dtype == torch.float32 and torch.equal(loaded[k], weights[k].to(torch.bfloat16).float())
        for k in names
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"architectures": ["MistralForCausalLM"]}, "architectures"),
        ({"hidden_act": "gelu"}, "hidden_act must be 'silu' \\(got 'gelu'\\)"),
        ({"attention_bias": True}, "attention_bias"),
        ({"mlp_bias": True}, "mlp_bias"),
        ({"pretraining_tp": 2}, "pretraining_tp"),
        ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, "rope_type='llama3'"),
    ],
)
def test_unsupported_configs_are_rejected(change: dict, message: str) -> None:  # type: ignore[type-arg]
    raw = tiny_config().to_hf()
    raw.pop("rope_parameters")
    with pytest.raises(ValueError, match=message):
        ModelConfig.from_hf(raw | change)


def test_bad_checkpoints_are_rejected(tmp_path: Path) -> None:
    config = tiny_config()
    weights = random_weights(config, 0)
    save_pretrained(tmp_path, config, weights)
    missing = dict(weights)
    missing.pop("model.norm.weight")
    save_file(missing | {"model.extra.weight": torch.zeros(1)}, str(tmp_path / "model.safetensors"))
    with pytest.raises(ValueError, match=r"missing \['model.norm.weight'\], unknown \['model.extra.weight'\]"):
        load_weights(tmp_path, config, torch.float64)
    tied = tiny_config(tied=True)
    bad = random_weights(tied, 0) | {"lm_head.weight": torch.zeros(512, 128, dtype=torch.float64)}
    save_file(bad, str(tmp_path / "model.safetensors"))
    with pytest.raises(ValueError, match=r"lm_head\.weight differs"):
        load_weights(tmp_path, tied, torch.float64)
    with pytest.raises(ValueError, match=r"neither model\.safetensors"):
        load_weights(tmp_path / "nowhere", config, torch.float64)


def test_padding_never_changes_real_rows() -> None:
    """Graph-table padding (pad rows: id 0, position 0, slot −1) against unpadded eager steps: the
    same tokens and logits within 1e-12; the cache's unused blocks are NaN, and no NaN reaches a
    real row."""
    config = tiny_config()
    weights = random_weights(config, 0)
    eager_out, eager_rows = _generate(config, weights, 64)
    padded_out, padded_rows = _generate(config, weights, 64, graphs=True)
    assert eager_out == padded_out
    assert all(torch.isfinite(r.logits).all() for r in padded_rows)
    worst = max(float((a.logits - b.logits).abs().max()) for a, b in zip(eager_rows, padded_rows, strict=True))
    assert worst <= 1e-12


def test_generate_on_a_transformers_checkpoint_gives_its_greedy_tokens(tmp_path: Path) -> None:
    """docs/runner.md 'done when': ``arctic-ref generate --model PATH`` ≡ transformers' greedy decoding."""
    hf_config = transformers.LlamaConfig(
        vocab_size=256,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
    )
    torch.manual_seed(1)
    transformers.LlamaForCausalLM(hf_config).to(torch.float64).save_pretrained(tmp_path)
    job = GenerateJob(model=str(tmp_path), max_tokens=10, prompts=((5, 6, 7, 8), (9, 9, 9)))
    results = generate_on_rank(RankInfo(0, 1, "gloo"), job)
    assert results is not None
    hf = _hf(tmp_path)
    for prompt, result in zip(job.prompts or (), results, strict=True):
        out = hf.generate(torch.tensor([prompt]), max_new_tokens=10, do_sample=False, pad_token_id=0)
        assert out[0, len(prompt) :].tolist() == list(result.output_token_ids)
