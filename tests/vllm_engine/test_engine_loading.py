"""Bad input to the engine checks, against vLLM itself (runs in the vLLM environment only:
scripts/test-vllm.sh): a model vLLM's CPU build cannot load is one line naming vLLM's reason."""

from pathlib import Path

import pytest

pytest.importorskip("vllm.config")  # plain "vllm" also finds tests/vllm as a namespace package

from arctic_ref.model.config import ModelConfig
from arctic_ref.model.weights import random_weights, save_pretrained
from arctic_ref.testing.engine.engine_loading import load_engine
from arctic_ref.testing.loading import TargetError


def test_a_head_dim_16_model_is_refused_in_one_line_naming_vllms_reason(tmp_path: Path) -> None:
    config = ModelConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=256,
    )
    weights = {k: v.float() for k, v in random_weights(config, 0).items()}
    save_pretrained(tmp_path, config, weights)
    with pytest.raises(TargetError) as raised:
        load_engine("--arctic-ref-engine", "vllm:LLM", model=str(tmp_path), dtype="float32", base_dir=None)
    message = str(raised.value)
    assert "\n" not in message and "cannot serve" in message and "head_dim" in message, message
