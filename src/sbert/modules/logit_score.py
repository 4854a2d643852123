"""A causal language model scoring a (query, document) pair by its next-token logits: the LLM reranker's module.

    score = logit("yes") - logit("no")        at the last position of the chat-rendered pair

As sentence-transformers 6.2's CrossEncoder runs the Qwen3-Reranker family (its Transformer with task
"text-generation", then LogitScore): each pair becomes chat messages, a saved prompt as the `system` turn,
then the `query` and the `document` roles, rendered by the folder's chat template and tokenized with no
special tokens added (the template writes them). A rendered pair longer than max_seq_length is cut from the
right and the template's fixed ending (the assistant turn the score is read after) is written back over its
last tokens. Rows are padded on the left, whatever the tokenizer says, so the last position is real.
The scores go in the chain's `sentence_embedding` slot, one per pair, so the encode engine's torch backends
(fp32, bf16, int8) run it as they run a sequence classifier.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from torch import Tensor
from transformers import AutoModelForCausalLM, PreTrainedModel, PreTrainedTokenizerBase

from sbert.errors import ModelFormatError
from sbert.formats import layout
from sbert.modules.base import Features
from sbert.modules.transformer import Transformer
from sbert.vectors.chat_text import common_tail

LOGIT_SCORE_TYPE = "sentence_transformers.cross_encoder.modules.logit_score.LogitScore"
LOGIT_SCORE_DIR = "1_LogitScore"
# What sentence-transformers 6.2 writes to an LLM reranker's sentence_bert_config.json.
CAUSAL_TASK_CONFIG = {
    "transformer_task": "text-generation",
    "modality_config": {
        "text": {"method": "forward", "method_output_name": "logits"},
        "message": {"method": "forward", "method_output_name": "logits", "format": "flat"},
    },
    "module_output_name": "causal_logits",
}
# Two fillers that tokenize differently: the longest common token ending of their renders is the template's.
_FILLERS = ("0", "1 2 3 4")


class LogitReading:
    """The score from two next-token logits, and LogitScore's saved config: text and vision rerankers alike."""

    tokenizer: PreTrainedTokenizerBase
    true_token_id: int
    false_token_id: int | None

    def default_tokens(self) -> tuple[int, int | None]:
        """The ids of the tokens `yes` and `no`, as sentence-transformers picks them for a bare causal LM."""
        ids = [self.tokenizer.convert_tokens_to_ids(word) for word in ("yes", "no")]
        unknown = self.tokenizer.unk_token_id
        return (ids[0] if ids[0] != unknown else -1), (ids[1] if ids[1] != unknown else None)

    def read_score_config(self, root: Path) -> None:
        """The true / false token ids of the folder's LogitScore module (1_LogitScore/config.json), if it has one."""
        folder = _logit_score_dir(root)
        if folder is not None:
            config = layout.read_json(folder / "config.json")
            self.true_token_id, self.false_token_id = int(config["true_token_id"]), config.get("false_token_id")
        if self.true_token_id < 0:
            raise ModelFormatError(f"{root}: no 'yes' token in the vocabulary and no LogitScore config naming one")

    def save_score_config(self, path: Path) -> None:
        """LogitScore's config.json in its own module folder, as sentence-transformers writes it."""
        (path / LOGIT_SCORE_DIR).mkdir(exist_ok=True)
        layout.write_json(path / LOGIT_SCORE_DIR / "config.json", {
            "true_token_id": self.true_token_id, "false_token_id": self.false_token_id,
            "module_input_name": "causal_logits",
        })  # fmt: skip

    def score_logits(self, last: Tensor) -> Tensor:
        """The score (B,) from the last position's logits (B, vocabulary): true minus false token, in fp32."""
        last = last.float()
        score = last[:, self.true_token_id]
        return score - last[:, self.false_token_id] if self.false_token_id is not None else score


class LogitPairScorer(LogitReading, Transformer):
    """A causal LM over chat-rendered (query, document) pairs, scored by the logits of two tokens."""

    module_type = "sentence_transformers.base.modules.transformer.Transformer"
    auto_class: ClassVar[Any] = AutoModelForCausalLM
    packed_output: ClassVar[str | None] = "last_token_score"  # score_logits at each pair's last token
    num_labels = 1

    def __init__(
        self, auto_model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, max_seq_length: int | None = None,
        do_lower_case: bool = False,
    ) -> None:  # fmt: skip
        super().__init__(auto_model, tokenizer, max_seq_length, do_lower_case)
        if not getattr(tokenizer, "chat_template", None):
            raise ModelFormatError(
                f"{auto_model.name_or_path}: an LLM reranker needs a chat template rendering the 'query' and "
                "'document' roles (chat_template.jinja beside the tokenizer)"
            )
        tokenizer.padding_side = "left"  # the score is read at the last position: it must be a real token
        self.true_token_id, self.false_token_id = self.default_tokens()
        self._endings: dict[str | None, list[int]] = {}

    def render(self, pairs: Sequence[tuple[str, str]], system: str | None = None) -> list[str]:
        """Each pair as the chat template renders its messages (the system turn first when a prompt is given)."""
        head = [{"role": "system", "content": system}] if system else []
        chats = [[*head, {"role": "query", "content": a}, {"role": "document", "content": b}] for a, b in pairs]
        return list(self.tokenizer.apply_chat_template(chats, tokenize=False))

    def pair_ids(self, pairs: Sequence[tuple[str, str]], system: str | None = None) -> list[list[int]]:
        """Token ids of each rendered pair; one over max_seq_length is cut and ends with the template's ending."""
        return self._cut(self._rendered_ids(self.render(pairs, system)), self.max_seq_length, system)

    def prompted_pair_ids(self, pairs: Sequence[tuple[str, str]], prompt: str) -> list[list[int]]:
        """A prompt is the system turn here (sentence-transformers' message path), not text before the query."""
        return self.pair_ids(pairs, prompt or None)

    def over_limit(self, pairs: Sequence[tuple[str, str]]) -> list[int]:
        """The indices of the pairs whose rendering is longer than max_seq_length."""
        ids = self._rendered_ids(self.render(pairs))
        return [i for i, row in enumerate(ids) if len(row) > self.max_seq_length]

    def _rendered_ids(self, texts: list[str]) -> list[list[int]]:
        if not texts:
            return []
        return [list(row) for row in self.tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"]]

    def _cut(self, rows: list[list[int]], limit: int, system: str | None) -> list[list[int]]:
        """Rows over `limit` cut on the tokenizer's truncation side (Transformer.truncation_side: one policy).

        Right: the head is kept and the template's ending written back over the last tokens, so the score is
        still read after the ending; left: the last `limit` tokens, which end with the ending already.
        """
        if all(len(row) <= limit for row in rows):
            return rows
        if self.truncation_side == "left":
            return [row[-limit:] for row in rows]
        ending = self.template_ending(system)[-limit:]
        return [row if len(row) <= limit else row[: limit - len(ending)] + ending for row in rows]

    def template_ending(self, system: str | None = None) -> list[int]:
        """The tokens every rendering ends with (the template's tail after the document), found once per prompt."""
        if system not in self._endings:
            first, second = (self._rendered_ids(self.render([(f, f)], system))[0] for f in _FILLERS)
            self._endings[system] = common_tail(first, second)
        return self._endings[system]

    def tokenize_pairs(self, pairs: Sequence[tuple[str, str]]) -> Features:
        """Left-padded pair features, ready for `forward` (the path training uses)."""
        return self.pad(self.pair_ids(pairs))

    def get_config(self) -> dict[str, Any]:
        """sentence_bert_config.json: sentence-transformers' text-generation task fields plus the sequence limit."""
        return CAUSAL_TASK_CONFIG | super().get_config()

    def module_entries(self) -> list[layout.ModuleEntry]:
        """modules.json: the causal LM at the root, then sentence-transformers' LogitScore."""
        return [layout.ModuleEntry(0, "0", "", self.module_type), layout.ModuleEntry(1, "1", LOGIT_SCORE_DIR,
                                                                                      LOGIT_SCORE_TYPE)]  # fmt: skip

    def save(self, path: Path) -> None:
        """The causal LM and tokenizer (Transformer.save), then LogitScore's config in its own folder."""
        super().save(path)
        self.save_score_config(path)

    def forward(self, features: Features) -> Features:
        """Add the score (B, 1) as `sentence_embedding`: true minus false token logit at the last position."""
        output = self.auto_model(**self.backbone_inputs(features), logits_to_keep=1, return_dict=True)
        features["sentence_embedding"] = self.score_logits(output.logits[:, -1]).unsqueeze(-1)
        return features


def _logit_score_dir(root: Path) -> Path | None:
    """The folder modules.json gives sentence-transformers' LogitScore module, if it lists one."""
    entries = layout.read_modules(root) if (root / layout.MODULES_FILE).is_file() else []
    return next((root / e.path for e in entries if e.class_name == "LogitScore"), None)


def is_causal_lm(architectures: Sequence[str]) -> bool:
    """Whether config.json's first architecture is a causal LM: sentence-transformers then scores with LogitScore."""
    return bool(architectures) and str(architectures[0]).endswith("ForCausalLM")
