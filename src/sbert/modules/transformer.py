"""Any Hugging Face encoder (BERT, RoBERTa, ALBERT, DistilBERT, MPNet, MiniLM) as the first module."""

from __future__ import annotations

import inspect
import logging
import os
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Self

import torch
from transformers import AutoConfig, AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from sbert.adapters import peft_io
from sbert.errors import ModelFormatError, first_line
from sbert.formats.layout import TRANSFORMER_CONFIG_FILE, write_json
from sbert.formats.modality import check_text_only
from sbert.modules.base import Features, Module
from sbert.progress import weight_bars
from sbert.vectors.chat_text import ChatText, message_format
from sbert.vectors.positions import position_limit
from sbert.vectors.tokens import fast_ids

log = logging.getLogger(__name__)
# Encoder-decoder families whose encoder alone embeds sentences, by config model_type.
_T5_ENCODERS = {"t5": "T5EncoderModel", "mt5": "MT5EncoderModel", "umt5": "UMT5EncoderModel"}

# Encoders whose position ids start after the padding index, so they hold two
# fewer usable positions than max_position_embeddings says.
_MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Real text averages 4-6 characters per token; 32 leaves a wide margin before a cut text
# could hold fewer tokens than the limit (and that case is detected and redone in full).
_CHARS_PER_TOKEN_BOUND = 32


# A features key holding the attention masks the backbone gets instead of the 2-D padding mask.
BACKBONE_MASK = "backbone_attention_mask"
# Bidirectional encoders whose transformers mask builder passes a ready 4-D mask through unchanged and whose SDPA
# attention takes a boolean key mask (the same gradients: tests/test_train_syncs.py). Built on the host, it spares each
# forward transformers' own `mask.all()`, a read of the device that makes the host wait for the GPU's queue.
READY_MASK_FAMILIES = frozenset({"bert", "roberta", "xlm-roberta", "camembert", "electra", "albert"})


class Transformer(Module):
    """Tokenizes text and maps token ids to contextual token embeddings."""

    module_type = "sentence_transformers.models.Transformer"
    config_file = TRANSFORMER_CONFIG_FILE
    auto_class: ClassVar[Any] = AutoModel  # the Hugging Face class the weights load into
    # What the packed GPU engine (backends/packed_chain.py) reads from this module's model:
    # "token_states" (the last hidden state, for the chain's pooling), "last_token_score" (a causal LM's
    # score at each row's last token: an LLM reranker; rows sharing a prefix may share its KV cache too),
    # or None: its model's own head pools a padded row, so it runs padded batches only.
    packed_output: ClassVar[str | None] = "token_states"
    modalities: ClassVar[tuple[str, ...]] = ("text",)  # the input kinds it embeds (modules/multimodal.py: images too)

    def __init__(
        self,
        auto_model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        max_seq_length: int | None = None,
        do_lower_case: bool = False,
    ) -> None:
        super().__init__()
        self.auto_model = auto_model
        self.tokenizer = tokenizer
        self.do_lower_case = do_lower_case
        # Keys a kind adds to sentence_bert_config.json (a multi-vector model's lengths and query expansion).
        self.extra_config: dict[str, Any] = {}
        self.chat: ChatText | None = None  # set by read_chat for a 6.3 folder with a `message` modality
        self.position_limit = position_limit(auto_model.config)
        tok_limit = tokenizer.model_max_length
        default = min(self.position_limit, int(tok_limit)) if 0 < tok_limit < 1e9 else self.position_limit
        self.max_seq_length = max_seq_length or default
        # A peft wrapper's forward takes **kwargs: the inputs are those of the model under it.
        accepted = inspect.signature(peft_io.backbone(auto_model).forward).parameters
        self._inputs = tuple(k for k in _MODEL_INPUTS if k in accepted)
        if tokenizer.pad_token_id is None and tokenizer.eos_token is not None:
            # Decoder tokenizers often have none; padding is masked out, so EOS serves, as in sentence-transformers.
            tokenizer.pad_token = tokenizer.eos_token
            log.info("tokenizer of %s has no padding token: padding with its EOS token", auto_model.name_or_path)
        if tokenizer.pad_token_id is None:
            raise ModelFormatError(f"tokenizer of {auto_model.name_or_path} has no padding token (nor an EOS token)")

    @classmethod
    def from_pretrained(
        cls,
        path: str | os.PathLike[str],
        max_seq_length: int | None = None,
        trust_remote_code: bool = False,
        dtype: str | torch.dtype | None = None,
        **config_changes: Any,
    ) -> Self:
        """Load encoder weights and tokenizer from a Hugging Face directory (safetensors preferred).

        The weights load as fp32 unless `dtype` names another (see `load_dtype`);
        `config_changes` override fields of its config.json (num_labels=1 for a new head).
        """
        torch_dtype = load_dtype(dtype)
        check_text_only(Path(path), None)  # a plain CLIP or SigLIP checkpoint: one clear error, not a crash later
        try:
            config = AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code, **config_changes)
            # weights_only: a pickle checkpoint is read as tensors only; it can never run code.
            # dtype: transformers 5 keeps the stored dtype by default ("auto"), so an fp16 file
            # would silently compute in half precision and train half-precision master weights.
            with weight_bars():
                model = cls.model_class(config).from_pretrained(
                    path, config=config, trust_remote_code=trust_remote_code, weights_only=True, dtype=torch_dtype
                )
            tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
        except pickle.UnpicklingError:
            raise ModelFormatError(
                f"{path}: refused the pickle checkpoint: it holds objects other than tensors "
                "(loading it could run arbitrary code; convert it to safetensors)"
            ) from None
        except (OSError, ValueError, KeyError) as e:
            raise ModelFormatError(f"{path}: cannot load encoder ({first_line(e)})") from None
        return cls(model, tokenizer, max_seq_length=max_seq_length)

    @classmethod
    def model_class(cls, config: Any) -> Any:
        """The Hugging Face class the weights load into: the encoder half of a T5-family model, else `auto_class`.

        AutoModel would build T5's encoder-decoder, which asks for decoder inputs a sentence encoder never has
        (sentence-t5 and GTR embed with the encoder alone, as sentence-transformers loads them).
        """
        if cls.auto_class is AutoModel and getattr(config, "model_type", "") in _T5_ENCODERS:
            import transformers

            return getattr(transformers, _T5_ENCODERS[config.model_type])
        return cls.auto_class

    @classmethod
    def load(cls, path: Path, trust_remote_code: bool = False, dtype: str | torch.dtype | None = None) -> Self:
        """Load from a sentence-transformers module folder (reads sentence_bert_config.json if present)."""
        config: dict[str, Any] = {}
        if (path / cls.config_file).is_file():
            config = cls.read_config(path)
        check_text_only(path, config.get("modality_config"))
        if peft_io.is_adapter_dir(path):
            module = cls.from_adapter(path, config.get("max_seq_length"), trust_remote_code, dtype)
        else:
            module = cls.from_pretrained(path, config.get("max_seq_length"), trust_remote_code, dtype)
        module.do_lower_case = bool(config.get("do_lower_case", False))
        module.read_chat(config)
        return module

    def read_chat(self, config: dict[str, Any]) -> None:
        """Render texts through the chat template when the saved modality_config has a `message` entry (6.3).

        The entry and its neighbours are kept in the config this module saves, so the folder round-trips.
        """
        entry = (config.get("modality_config") or {}).get("message")
        template = getattr(self.tokenizer, "chat_template", None)
        if entry is None or not template:
            return
        self.chat = ChatText(self.tokenizer, message_format(entry, template))
        kept = ("transformer_task", "modality_config", "module_output_name")
        self.extra_config.update({k: config[k] for k in kept if k in config})

    @classmethod
    def from_adapter(
        cls,
        path: Path,
        max_seq_length: int | None = None,
        trust_remote_code: bool = False,
        dtype: str | torch.dtype | None = None,
    ) -> Self:
        """Load a folder holding only a LoRA adapter: its base model (found from adapter_config.json), then it.

        The tokenizer comes from the adapter's folder when it has one (sentence-transformers saves it there).
        """
        from sbert.adapters.base_model import base_weights_dir

        base_dir = base_weights_dir(path)
        base = cls.from_pretrained(base_dir, max_seq_length, trust_remote_code, dtype)
        wrapped = peft_io.load_adapter(base.auto_model, path, base=str(base_dir))
        tokenizer = base.tokenizer
        if (path / "tokenizer_config.json").is_file():
            tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
        return cls(wrapped, tokenizer, max_seq_length=max_seq_length)

    @property
    def renders_chat(self) -> bool:
        """Whether inputs go through a chat template (a prompt then becomes a system message: encoding/prompted.py)."""
        return self.chat is not None

    @property
    def has_adapter(self) -> bool:
        """Whether a LoRA adapter (peft) wraps the backbone."""
        return peft_io.has_adapter(self.auto_model)

    def get_config(self) -> dict[str, Any]:
        """The sentence_bert_config.json fields."""
        return {"max_seq_length": self.max_seq_length, "do_lower_case": self.do_lower_case, **self.extra_config}

    def save(self, path: Path) -> None:
        """Write weights (safetensors), tokenizer files and sentence_bert_config.json.

        With an adapter, only the adapter's files are written (PEFT's layout; the base stays where it is).
        """
        path.mkdir(parents=True, exist_ok=True)
        if self.has_adapter:
            peft_io.save_adapter(self.auto_model, path)
        else:
            with weight_bars():
                self.auto_model.save_pretrained(path)
        # Recorded in tokenizer_config.json too, where sentence-transformers 6 looks for it.
        self.tokenizer.model_max_length = self.max_seq_length
        self.tokenizer.save_pretrained(path)
        write_json(path / self.config_file, self.get_config())

    @property
    def max_seq_length(self) -> int:
        """Inputs longer than this many tokens (special tokens included) are truncated."""
        return self._max_seq_length

    @max_seq_length.setter
    def max_seq_length(self, value: int) -> None:
        if not 2 <= value <= self.position_limit:
            raise ValueError(f"max_seq_length must be in [2, {self.position_limit}] for this encoder, got {value}")
        self._max_seq_length = int(value)

    @property
    def model_inputs(self) -> tuple[str, ...]:
        """The tensors the encoder's forward accepts, of input_ids, attention_mask, token_type_ids."""
        return self._inputs

    @property
    def embedding_dimension(self) -> int:
        """Width of the token embeddings."""
        return int(self.auto_model.config.hidden_size)

    def token_ids(self, texts: Sequence[str], limit: int | None = None) -> tuple[list[list[int]], list[int]]:
        """Token ids (with special tokens, truncated to `limit`, else max_seq_length) and the indices that were cut.

        A multi-vector model asks for its query and document lengths through `limit`.
        """
        if not texts:
            return [], []
        if self.chat is not None:  # the template writes the special tokens; prompts are system messages
            return self.chat.token_ids(texts, limit or self.max_seq_length)
        if self.do_lower_case:
            texts = [t.lower() for t in texts]
        limit = limit or self.max_seq_length
        # Tokenize with one spare slot: a row that fills it was truncated. Only those rows are
        # tokenized again at the real limit, so the special tokens close the sequence.
        keep_end = self.truncation_side == "left"
        short = [cut_at_space(t, limit * _CHARS_PER_TOKEN_BOUND, keep_end) for t in texts]
        ids = self._ids(short, limit + 1)
        # A cut text that came out short (huge [UNK] words, long whitespace runs) is redone in full.
        redo = [i for i, row in enumerate(ids) if len(row) <= limit and short[i] is not texts[i]]
        for i, row in zip(redo, self._ids([texts[i] for i in redo], limit + 1), strict=True):
            ids[i], short[i] = row, texts[i]
        cut = [i for i, row in enumerate(ids) if len(row) > limit]
        for i, row in zip(cut, self._ids([short[i] for i in cut], limit), strict=True):
            ids[i] = row
        return ids, cut

    def _ids(self, texts: list[str], max_length: int) -> list[list[int]]:
        if not texts:
            return []
        fast = self.fast_tokenizer(max_length)
        if fast is not None:
            return fast_ids(fast, texts)
        encoded = self.tokenizer(
            texts,
            truncation=True,
            max_length=max_length,
            add_special_tokens=True,
            return_attention_mask=False,
            return_token_type_ids=False,
        )
        return list(encoded["input_ids"])

    @property
    def truncation_side(self) -> str:
        """Which end of an over-long input is cut: "right" (keep the start), or "left" as tokenizer_config.json says."""
        return "left" if getattr(self.tokenizer, "truncation_side", "right") == "left" else "right"

    def fast_tokenizer(self, max_length: int) -> Any:
        """A copy of the Rust tokenizer as the model tokenizes: no padding, truncation at `max_length`.

        The cut is on the tokenizer's truncation side, and tokenizer.json's own padding and truncation
        settings are dropped (they are saved for other callers, not the model's limit). Calling it
        directly (`encode_batch_fast`: no offsets, no Python-side BatchEncoding) gives the same ids as
        `tokenizer(...)` several times faster; a copy per limit leaves the shared tokenizer alone.
        None for slow tokenizers.
        """
        backend = getattr(self.tokenizer, "backend_tokenizer", None)
        if backend is None or not hasattr(backend, "encode_batch_fast"):
            return None
        cache: dict[int, Any] = self.__dict__.setdefault("_fast_by_limit", {})
        if max_length not in cache:
            from tokenizers import Tokenizer

            copy = Tokenizer.from_str(backend.to_str())
            copy.no_padding()
            copy.enable_truncation(max_length, direction=self.truncation_side)
            cache[max_length] = copy
        return cache[max_length]

    def pad(self, rows: Sequence[Sequence[int]]) -> Features:
        """Pad a batch of id lists to its longest member, on the tokenizer's padding side."""
        width = max((len(r) for r in rows), default=0)
        input_ids = torch.full((len(rows), width), int(self.tokenizer.pad_token_id), dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        left = self.tokenizer.padding_side == "left"
        for i, row in enumerate(rows):
            span = slice(width - len(row), width) if left else slice(0, len(row))
            input_ids[i, span] = torch.as_tensor(row, dtype=torch.long)
            mask[i, span] = 1
        features: Features = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            features["token_type_ids"] = torch.zeros_like(input_ids)
        return features

    def tokenize(self, texts: Sequence[str]) -> Features:
        """Token ids, padded and ready for `forward` (the path training uses)."""
        return self.pad(self.token_ids(texts)[0])

    def backbone_inputs(self, features: Features) -> dict[str, Any]:
        """The backbone's keyword inputs; a ready mask (BACKBONE_MASK: ONNX export, training) replaces the 2-D one.

        Pooling keeps reading the 2-D mask from `features`.
        """
        inputs: dict[str, Any] = {k: features[k] for k in self._inputs if k in features}
        if BACKBONE_MASK in features:
            inputs["attention_mask"] = features[BACKBONE_MASK]
        return inputs

    def key_mask(self, mask: torch.Tensor) -> torch.Tensor | None:
        """A ready (B, 1, 1, T) boolean key mask for a padded host 2-D `mask`; None where the backbone needs its own.

        Only for READY_MASK_FAMILIES under SDPA, and only for a batch with padding: an unpadded one is left to
        transformers, which then drops the mask (and SDPA may pick its flash kernel).
        """
        config = self.auto_model.config
        if config.model_type not in READY_MASK_FAMILIES or getattr(config, "is_decoder", False):
            return None
        if getattr(config, "_attn_implementation", None) != "sdpa" or mask.device.type != "cpu" or bool(mask.all()):
            return None
        ready = mask.bool()[:, None, None, :]
        return ready.pin_memory() if mask.is_pinned() else ready

    def forward(self, features: Features) -> Features:
        """Add `token_embeddings` (B, T, H) from the encoder's last hidden state.

        A config that says `output_hidden_states` also gives `all_layer_embeddings` (the embedding layer's output
        first), as the reference's Transformer does, for a WeightedLayerPooling after it.
        """
        output = self.auto_model(**self.backbone_inputs(features), return_dict=True)
        features["token_embeddings"] = output.last_hidden_state
        if getattr(self.auto_model.config, "output_hidden_states", False) and output.hidden_states is not None:
            features["all_layer_embeddings"] = output.hidden_states
        return features

    def forward_all_layers(self, features: Features) -> tuple[Features, tuple[torch.Tensor, ...]]:
        """`forward`'s features and every layer's hidden states, the embedding layer's output first (layer losses)."""
        output = self.auto_model(**self.backbone_inputs(features), output_hidden_states=True, return_dict=True)
        features["token_embeddings"] = output.last_hidden_state
        return features, tuple(output.hidden_states)


def cut_at_space(text: str, budget: int, keep_end: bool = False) -> str:
    """The text up to the last ASCII whitespace before `budget` characters (whole text if none).

    Tokenizers split words at whitespace, so the tokens of such a prefix are the first tokens
    of the whole text: a 1 MB input costs the same as a few KB. Without whitespace in the
    second half of the window the text is returned whole, to stay exact. `keep_end` (left
    truncation) keeps the text from the first whitespace inside its last `budget` characters.
    """
    if len(text) <= budget:
        return text
    if keep_end:
        start = len(text) - budget
        cuts = [i for i in (text.find(sep, start, start + budget // 2) for sep in " \n\t") if i >= 0]
        return text if not cuts else text[min(cuts) + 1 :]
    end = max(text.rfind(sep, budget // 2, budget) for sep in " \n\t")
    return text if end < 0 else text[:end]


_LOAD_DTYPES = {
    "fp32": torch.float32, "float32": torch.float32, "fp16": torch.float16, "float16": torch.float16,
    "bf16": torch.bfloat16, "bfloat16": torch.bfloat16,
}  # fmt: skip


def load_dtype(dtype: str | torch.dtype | None) -> torch.dtype | str:
    """The dtype to load weights in: fp32 for None, "auto" for the stored one, else the one named."""
    if dtype is None:
        return torch.float32
    if isinstance(dtype, torch.dtype) and dtype in _LOAD_DTYPES.values():
        return dtype
    if dtype == "auto":
        return "auto"
    if isinstance(dtype, str) and dtype in _LOAD_DTYPES:
        return _LOAD_DTYPES[dtype]
    raise ValueError(f"dtype must be None, 'auto' or one of {', '.join(_LOAD_DTYPES)}, got {dtype!r}")
