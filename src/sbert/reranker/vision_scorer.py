"""A vision-language reranker: an image-text-to-text model scoring (query, document) pairs by two next-token logits.

    score = logit("yes") - logit("no")        at the last position of the chat-rendered pair

As sentence-transformers 6.3's CrossEncoder runs it (its Transformer with task "any-to-any", then
LogitScore): each pair becomes two chat messages, the `query` then the `document` role, each side's
content its kind (a text, an image, an image+text dict) in the folder's message format; a prompt is a
system turn before them. The processor's chat template renders the pair and processes its images, rows
padded on the left so the last position is real. Text pairs take the same path, so a (text, text) and a
(text, page image) pair are scored alike.

The towers and the language model stay the transformers model's own (no packed path: image tokens are
merged into the sequence inside its forward), batched by `predict`'s batch size.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import Tensor
from transformers import AutoModelForImageTextToText

from sbert.errors import ModelFormatError
from sbert.formats import layout
from sbert.formats.image_inputs import input_kind, open_image
from sbert.formats.modality import is_vlm_class
from sbert.modules.base import Features
from sbert.modules.logit_score import LOGIT_SCORE_DIR, LOGIT_SCORE_TYPE, LogitReading
from sbert.modules.multimodal import MultimodalTransformer, accepted, as_parts

TASK = "any-to-any"  # what 6.3 writes to a VLM reranker's sentence_bert_config.json
OUTPUT = "causal_logits"
PAIR_ROLES = ("query", "document")
# The kinds one side of a pair may be.
SIDE_KINDS = ("text", "image", "image+text")


class VisionPairScorer(LogitReading, MultimodalTransformer):
    """An image-text-to-text model over chat-rendered (query, document) pairs of texts and images."""

    num_labels = 1
    packed_output: ClassVar[str | None] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.chat_form is None:
            raise ModelFormatError(f"{self.auto_model.name_or_path}: a vision-language reranker needs a 'message' "
                                   "entry in its modality_config (its chat template renders the pairs)")  # fmt: skip
        self.transformer_task = TASK
        # Every kind's output is the language model's logits (6.3's any-to-any default), whatever a plain
        # VLM folder's embedder default says.
        self.modality_config = {k: {**v, "method_output_name": "logits"} for k, v in self.modality_config.items()}
        for holder in (self.processor, self.tokenizer):  # the score is read at the last position: a real token
            if hasattr(holder, "padding_side"):
                holder.padding_side = "left"
        self.true_token_id, self.false_token_id = self.default_tokens()
        self.prefix_checked: bool | None = None  # whether the shared-prefix path holds here (vision_prefix.py)

    @classmethod
    def model_class(cls, path: Any) -> Any:
        """The language-model head the logits come from (6.3's AutoModelForMultimodalLM maps the same classes)."""
        return AutoModelForImageTextToText

    def check_pairs(self, pairs: Sequence[Any]) -> list[tuple[Any, Any]]:
        """The pairs as (query, document) tuples whose sides are texts, images or image+text dicts."""
        out = []
        for i, pair in enumerate(pairs):
            if isinstance(pair, str) or not isinstance(pair, Sequence) or len(pair) != 2:
                raise ValueError(f"pairs[{i}] must be (query, document), got {pair!r:.80}")
            for side in pair:
                if input_kind(side) not in SIDE_KINDS:
                    raise ValueError(f"pairs[{i}] has a {input_kind(side)!r} side; this reranker reads "
                                     f"{', '.join(SIDE_KINDS)}")  # fmt: skip
            out.append((pair[0], pair[1]))
        return out

    def pair_chat(self, pair: tuple[Any, Any], system: str | None) -> list[dict[str, Any]]:
        """One pair as 6.3's messages: the system prompt, then the query and the document roles."""
        assert self.chat_form is not None
        head = [{"role": "system", "content": as_parts("text", system, self.chat_form)}] if system else []
        return head + [
            {"role": role, "content": as_parts(input_kind(side), _opened(side), self.chat_form)}
            for role, side in zip(PAIR_ROLES, pair, strict=True)
        ]

    def pair_features(self, pairs: Sequence[tuple[Any, Any]], system: str | None = None) -> Features:
        """The model's inputs for a batch of pairs, by the processor's chat template (left-padded)."""
        chats = [self.pair_chat(pair, system) for pair in pairs]
        return self._wanted("message", self.render_chats(chats))

    def tokenize_pairs(self, pairs: Sequence[tuple[Any, Any]]) -> Features:
        """The model's inputs for a batch of pairs with no prompt (the path training's forward takes)."""
        return self.pair_features(self.check_pairs(pairs))

    def forward(self, features: Features) -> Features:
        """Add the score (B, 1) as `sentence_embedding`: true minus false token logit at the last position."""
        wanted = accepted(self.auto_model.forward)
        inputs = {k: v for k, v in features.items() if k != "sentence_embedding" and (wanted is None or k in wanted)}
        if "pixel_values" in inputs:
            inputs["pixel_values"] = inputs["pixel_values"].to(self.auto_model.dtype)
        output = self.auto_model(**inputs, logits_to_keep=1, return_dict=True)
        features["sentence_embedding"] = self.score_logits(output.logits[:, -1]).unsqueeze(-1)
        return features

    @torch.inference_mode()
    def score(self, pairs: Sequence[tuple[Any, Any]], system: str | None, batch_size: int) -> tuple[Tensor, int]:
        """Scores (n,) for the pairs in input order, `batch_size` pairs a forward, and the tokens they took.

        One text query's pairs share their rendered prefix, run once (reranker/vision_prefix.py), where this
        model is checked to score the same that way.
        """
        from sbert.reranker.vision_prefix import prefix_group_scores, prefix_path_holds, query_groups

        scores, tokens, done = torch.zeros(len(pairs)), 0, set()
        for group in query_groups(pairs):
            chosen = [pairs[i] for i in group]
            shared = prefix_group_scores(self, chosen, system, batch_size) if prefix_path_holds(
                self, chosen, system) else None  # fmt: skip
            if shared is not None:
                scores[group], tokens = shared[0], tokens + shared[1]
                done.update(group)
        rest = [i for i in range(len(pairs)) if i not in done]
        for start in range(0, len(rest), batch_size):
            part = rest[start : start + batch_size]
            scores[part], counted = self.whole_scores([pairs[i] for i in part], system)
            tokens += counted
        return scores, tokens

    def whole_scores(self, pairs: Sequence[tuple[Any, Any]], system: str | None) -> tuple[Tensor, int]:
        """Scores (n,) of one batch of whole rendered pairs, and the tokens it took."""
        features = self.pair_features(pairs, system)
        tokens = int(features["attention_mask"].sum()) if "attention_mask" in features else 0
        device = self.auto_model.device
        features = {k: v.to(device) if isinstance(v, Tensor) else v for k, v in features.items()}
        scores = self(features)["sentence_embedding"][:, 0].float().cpu()
        return scores, tokens

    def get_config(self) -> dict[str, Any]:
        """sentence_bert_config.json as 6.3 writes it for a VLM reranker (task any-to-any, causal logits)."""
        return super().get_config() | {"transformer_task": TASK, "module_output_name": OUTPUT}

    def module_entries(self) -> list[layout.ModuleEntry]:
        """modules.json: the model at the root, then sentence-transformers' LogitScore."""
        return [layout.ModuleEntry(0, "0", "", self.module_type),
                layout.ModuleEntry(1, "1", LOGIT_SCORE_DIR, LOGIT_SCORE_TYPE)]  # fmt: skip

    def save(self, path: Path) -> None:
        """The model, its processor and sentence_bert_config.json, then LogitScore's config in its own folder."""
        super().save(path)
        self.save_score_config(path)


def _opened(side: Any) -> Any:
    """A side's value with its image opened (paths, URLs and data URLs read as the library reads them)."""
    kind = input_kind(side)
    if kind == "image":
        return open_image(side)
    if kind == "image+text":
        return {k: open_image(v) if k == "image" else v for k, v in side.items()}
    return side


def is_vision_reranker(root: Path, architectures: Sequence[str]) -> bool:
    """Whether a cross-encoder folder is a VLM reranker: 6.3's any-to-any Transformer with LogitScore."""
    config_file = root / layout.TRANSFORMER_CONFIG_FILE
    config = layout.read_json(config_file) if config_file.is_file() else {}
    task = config.get("transformer_task")
    return task == TASK or (task is None and bool(architectures) and is_vlm_class(str(architectures[0])))


def load_vision_scorer(root: Path, dtype: Any = None) -> VisionPairScorer:
    """The folder's VLM reranker, its true / false tokens read from its LogitScore module."""
    scorer = VisionPairScorer.load(root, dtype=dtype)
    scorer.read_score_config(root)
    return scorer
