"""Running a module chain on a packed batch: varlen encoder, pooling on segments, heads on a grid."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import torch
from torch import Tensor

from sbert.backends import varlen
from sbert.backends.base import Chain, cast_copy
from sbert.backends.packing import PACKED_POOLING, PackedBatch, packed_weightedmean, segment_positions, unpack
from sbert.device import precision_name
from sbert.modules import Features, Module, Normalize, Pooling, Transformer
from sbert.vectors.positions import Positions, position_rule

if TYPE_CHECKING:
    from sbert.modules.logit_score import LogitPairScorer

log = logging.getLogger(__name__)

# Encoders whose position ids are a plain 0..L-1 per sentence (offset 0), or which count from
# padding_idx + 1 (the RoBERTa family). Others (MPNet's relative buckets, DistilBERT's fixed
# arange, ...) are not packed: the backend falls back to padded batches and says so.
_PLAIN_POSITIONS = {"bert", "albert", "electra"}
_OFFSET_POSITIONS = {"roberta", "xlm-roberta", "camembert"}
# Decoder backbones (rotary positions 0..L-1 per sentence): their attention layers say is_causal, and
# the varlen kernels keep each token to its own sequence's earlier tokens.
DECODERS = {"qwen2", "qwen3", "llama", "mistral", "gemma2", "gemma3_text"}


def packing_blocker(transformer: Transformer) -> str | None:
    """Why this encoder cannot run packed (None when it can)."""
    if transformer.packed_output is None:
        return f"{type(transformer).__name__}'s model pools padded rows with its own head"
    auto_model = transformer.auto_model
    config = auto_model.config
    model_type = getattr(config, "model_type", "?")
    if model_type not in _PLAIN_POSITIONS | _OFFSET_POSITIONS | DECODERS:
        return f"model type {model_type!r} is not known to take packed position ids"
    # transformers marks the models whose attention goes through AttentionInterface
    if not getattr(auto_model, "_supports_attention_backend", False):
        return f"this transformers version does not route {model_type} attention through AttentionInterface"
    if getattr(config, "output_hidden_states", False):  # a WeightedLayerPooling reads every layer, padded
        return "its config returns every layer's hidden states (output_hidden_states)"
    if model_type not in DECODERS and getattr(config, "is_decoder", False):
        return "an encoder configured as a decoder (is_decoder) is causal"
    window = getattr(config, "sliding_window", None) if getattr(config, "use_sliding_window", True) else None
    if window and transformer.max_seq_length > int(window):  # the kernels attend to whole sequences
        return f"sliding-window attention ({window} tokens) is shorter than max_seq_length={transformer.max_seq_length}"
    return None


def switch_to_packed(
    chain: Chain, modules: tuple[Module, ...], device: torch.device, dtype: torch.dtype, keep: bool = False
) -> tuple[tuple[Module, ...], str | None]:
    """The modules with varlen attention switched on, and the kernel's key; (modules, None) when they stay padded.

    The switch is made on a copy of the encoder when `modules` are the model's own, or when `keep` asks
    the given modules to keep their attention (a caller that also runs them padded); the copy shares the
    weight storage. One log line says why a model stays padded.
    """
    first = modules[0] if modules else None
    if not isinstance(first, Transformer):
        return modules, None
    config = chain.transformer.auto_model.config
    blocker = packing_blocker(chain.transformer)
    picked = None
    if blocker is None:
        heads, width = attention_shape(config)
        picked = varlen.pick_kernel(device, dtype, heads, width, causal=is_causal(config))
        if picked is None:
            blocker = f"no varlen attention kernel runs on {device} in {precision_name(dtype)}"
    if blocker is not None or picked is None:
        log.info("packed batches off (%s): running length-bucketed padded batches", blocker)
        return modules, None
    if keep or first is chain.transformer:
        # Never switch the user's own model's attention: the encoder is copied (sharing its weight storage),
        # the modules after it stay the user's, so a later change to them (pooling options) still counts.
        modules = (*cast_copy(modules[:1], device, dtype, force=True), *modules[1:])
    transformer = modules[0]
    assert isinstance(transformer, Transformer)
    key, kernel = picked
    transformer.auto_model.set_attn_implementation(varlen.register(key, kernel))
    varlen.log_once(f"packed batches on {device}: {varlen.KERNEL_NAMES[key]}, {precision_name(dtype)}")
    return modules, key


def varlen_attention(transformer: Transformer, device: torch.device, dtype: torch.dtype,
                     blocker: str | None = None) -> str:  # fmt: skip
    """The registered varlen attention for `transformer` on `device` in `dtype`, to set on a copy of it.

    Raises ValueError saying why when it cannot run packed: `blocker` (a caller's own reason), the
    encoder's (`packing_blocker`), or no kernel that matches per-sentence attention here.
    """
    blocker = blocker or packing_blocker(transformer)
    config = transformer.auto_model.config
    heads, width = attention_shape(config)
    picked = None if blocker else varlen.pick_kernel(device, dtype, heads, width, causal=is_causal(config))
    if picked is None:
        raise ValueError(blocker or f"no varlen attention kernel runs on {device} in {dtype}")
    return varlen.register(*picked)


def attention_shape(config: Any) -> tuple[int, int]:
    """(query heads, head width) of the backbone: decoders state head_dim, encoders split hidden_size."""
    heads = int(config.num_attention_heads)
    return heads, int(getattr(config, "head_dim", None) or int(config.hidden_size) // heads)


def is_causal(config: Any) -> bool:
    """Whether the backbone's attention is causal (a decoder, unless set bidirectional as EmbeddingGemma is)."""
    return getattr(config, "model_type", "") in DECODERS and not getattr(config, "use_bidirectional_attention", False)


def position_numbering(transformer: Transformer) -> Positions:
    """How the packed rows' position ids are numbered: the backbone's own rule (modules/transformer.py)."""
    return position_rule(transformer.auto_model.config)


def packed_token_embeddings(transformer: Transformer, batch: PackedBatch) -> Tensor:
    """The encoder's last hidden state for every packed token: (N, H)."""
    return packed_hidden(transformer.auto_model, transformer.model_inputs, batch)


def packed_pair_scores(scorer: LogitPairScorer, batch: PackedBatch) -> Tensor:
    """An LLM reranker's scores (B, 1) for a packed batch: the causal LM's logits at each pair's last token only.

    Packed rows need no padding side: each pair's last token is where its segment ends.
    """
    last = (batch.cu_seqlens[1:] - 1).long()
    output = packed_call(scorer.auto_model, scorer.model_inputs, batch, logits_to_keep=last)
    return scorer.score_logits(output.logits[0]).unsqueeze(-1)


def packed_hidden(model: torch.nn.Module, model_inputs: Sequence[str], batch: PackedBatch) -> Tensor:
    """`model`'s last hidden state for every packed token: (N, H) (a backbone; an MLM's without its head)."""
    return packed_call(model, model_inputs, batch).last_hidden_state[0]


def packed_call(model: torch.nn.Module, model_inputs: Sequence[str], batch: PackedBatch, **extra: Any) -> Any:
    """`model`'s output for a packed batch as one row (`extra`: more forward kwargs, e.g. logits_to_keep).

    The model must have been switched to a registered `sbert_varlen_*` attention; the
    cumulative lengths and the longest and shortest lengths travel to it as forward kwargs
    (transformers hands unknown ones through to the attention function).
    """
    inputs: Features = {"input_ids": batch.input_ids[None], "position_ids": batch.position_ids[None]}
    if "token_type_ids" in model_inputs:
        inputs["token_type_ids"] = torch.zeros_like(inputs["input_ids"])
    cu, width = batch.cu_seqlens, batch.max_len
    return model(
        **inputs, cu_seq_lens_q=cu, cu_seq_lens_k=cu, max_length_q=width, max_length_k=width,
        **{varlen.MIN_LENGTH_KWARG: batch.min_len}, return_dict=True, **extra,
    )  # fmt: skip


def packed_chain_forward(modules: Sequence[Module], batch: PackedBatch, skip: int = 0,
                         encoder: Callable[[PackedBatch], Tensor] | None = None) -> Tensor:  # fmt: skip
    """Sentence embeddings (B, dim) for a packed batch.

    `encoder`: the packed tokens' last hidden states in place of the first module's (lean_bert.py's
    forward of the same weights), else that module's own packed forward.

    Pooling and Normalize work on the packed rows directly; any other head (CNN-SBERT, IS-BERT's
    n-gram CNN) gets the tokens unpacked into a padded grid and its mask, then runs as usual:
    those heads are a small share of the time, and their convolutions must not cross sentences.
    `skip` > 0: a Pooling with include_prompt=false leaves each sequence's first `skip` tokens out.
    """
    transformer = modules[0]
    assert isinstance(transformer, Transformer)
    if transformer.packed_output == "last_token_score":  # an LLM reranker: its scores, not token states
        return packed_pair_scores(cast("LogitPairScorer", transformer), batch)
    tokens = packed_token_embeddings(transformer, batch) if encoder is None else encoder(batch)  # (N, H)
    features: Features | None = None  # None while the tokens are still packed
    for module in modules[1:]:
        if features is None and isinstance(module, Pooling):
            dropped = skip if not module.include_prompt else 0
            kept, cu = drop_leading(tokens, batch.cu_seqlens, dropped)
            pooled = [packed_weightedmean(kept, cu, dropped) if m == "weightedmean" else PACKED_POOLING[m](kept, cu)
                      for m in module.modes]  # fmt: skip
            features = {"sentence_embedding": pooled[0] if len(pooled) == 1 else torch.cat(pooled, dim=-1)}
            continue
        if features is None and not isinstance(module, Normalize):
            grid, mask = unpack(tokens, batch.cu_seqlens, batch.max_len)
            features = {"token_embeddings": grid, "attention_mask": mask}
            if skip:
                features["prompt_length"] = torch.full((grid.shape[0],), skip, device=grid.device)
        if features is None:
            raise ValueError("Normalize before any pooling has no sentence embedding to normalise")
        features = module(features)
    if features is None or "sentence_embedding" not in features:
        raise ValueError("the chain ends without a sentence embedding (no pooling module)")
    return features["sentence_embedding"]


def drop_leading(tokens: Tensor, cu_seqlens: Tensor, skip: int) -> tuple[Tensor, Tensor]:
    """The packed tokens without each sequence's first `skip`, and the new cumulative lengths.

    Every sequence keeps at least its closing token (a prompt's length counts no closing special),
    so no segment becomes empty. tokens: (N, H), cu_seqlens: (B+1,) -> (N - B*skip, H), (B+1,).
    """
    if skip <= 0:
        return tokens, cu_seqlens
    _, position = segment_positions(cu_seqlens, tokens.shape[0])
    shift = torch.arange(cu_seqlens.shape[0], device=cu_seqlens.device, dtype=cu_seqlens.dtype) * skip
    return tokens[position >= skip], cu_seqlens - shift
