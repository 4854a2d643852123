"""A tiny LLM reranker as sentence-transformers 6.2 builds one: a causal LM, its chat template rendering the
`query` and `document` roles (and a system prompt), "yes" / "no" as single tokens, scored by LogitScore."""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import AddedToken, processors
from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedTokenizerFast

from tests.tiny_models import MAX_LEN, _byte_bpe

# Qwen3-Reranker's shape: an instruction as the system turn, query and document in the user turn, a fixed ending.
TEMPLATE = (
    "{%- for m in messages if m.role == 'system' -%}<|im_start|>system\n{{ m.content }}<|im_end|>\n{%- endfor -%}"
    "<|im_start|>user\n<Query>: {{ messages | selectattr('role', 'eq', 'query') | map(attribute='content') | first }}"
    "\n<Document>: {{ messages | selectattr('role', 'eq', 'document') | map(attribute='content') | first }}"
    "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
)


def build_causal_lm(path: Path, family: str = "qwen3", max_len: int = MAX_LEN) -> Path:
    """A tiny causal LM folder with a chat template: what a user points CrossEncoder at (`max_len` positions)."""
    tok = _byte_bpe()
    tok.post_processor = processors.TemplateProcessing(single="$A", special_tokens=[])  # the template has it all
    tok.add_special_tokens([AddedToken("<|im_start|>", special=True), AddedToken("<|im_end|>", special=True)])
    tok.add_tokens([AddedToken("yes", single_word=True), AddedToken("no", single_word=True)])
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", unk_token="<unk>", pad_token="<pad>", model_max_length=max_len,
    )  # fmt: skip
    wrapped.chat_template = TEMPLATE
    torch.manual_seed(7)
    config = AutoConfig.for_model(
        family, vocab_size=tok.get_vocab_size(), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=max_len,
        pad_token_id=tok.token_to_id("<pad>"), tie_word_embeddings=False,
    )  # fmt: skip
    path.mkdir(parents=True, exist_ok=True)
    model = AutoModelForCausalLM.from_config(config)
    with torch.no_grad():  # widen the yes / no rows of the LM head, so pairs score clearly apart (random weights)
        for word in ("yes", "no"):
            model.lm_head.weight[tok.token_to_id(word)] *= 200
    model.save_pretrained(path)
    wrapped.save_pretrained(path)
    return path


def save_st_reranker(base: Path, path: Path, max_length: int | None = None, prompt: str | None = None) -> Path:
    """sentence-transformers' own CrossEncoder on the causal LM (LogitScore over yes/no), saved as it saves it."""
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(str(base), max_length=max_length, device="cpu",
                         prompts={"web": prompt} if prompt else None)  # fmt: skip
    model.save(str(path))
    return path
