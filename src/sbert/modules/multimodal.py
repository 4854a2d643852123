"""A model that embeds more than text, driven by its folder: the chain's one multimodal input module.

sentence-transformers 6.3 saves such a model as one root Transformer whose `modality_config` maps each
input kind to a method of the Hugging Face model and names its output: CLIP, SigLIP and SigLIP 2
(text -> get_text_features, image -> get_image_features), BLIP (and image+text ->
get_multimodal_features), CLAP (audio -> get_audio_features). A plain transformers folder gets 6.3's
default for its model: each `get_<kind>_features` method the model has, and BLIP's multimodal one. The
5.x layout is a `CLIPModel` module folder. All load here, as one class: what differs is read from the
folder, never written per family.

Text is tokenized as any Transformer tokenizes it (fixed-length padding where the saved
`processing_kwargs` ask for it: SigLIP was trained on 64-token rows); images, sounds and image+text
pairs go through transformers' own processor, called as 6.3 calls it (never a copy of its resize, crop
or filter bank). The forward runs the method the features call for and writes `sentence_embedding`
directly: no pooling.
"""

from __future__ import annotations

import importlib.util
import inspect
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Self

import torch
from transformers import AutoModel, AutoProcessor, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from sbert.errors import ModelFormatError, first_line
from sbert.formats.image_inputs import input_kind, open_image, resized_pixels, sampling_rate
from sbert.formats.layout import TRANSFORMER_CONFIG_FILE, architectures, read_json, write_json
from sbert.formats.modality import TOWER_ARCHITECTURES, is_retrieval_class, is_vlm_class, multimodal
from sbert.install_hint import install_hint
from sbert.modules.base import Features
from sbert.modules.transformer import Transformer, load_dtype
from sbert.progress import weight_bars
from sbert.vectors.chat_text import message_format

log = logging.getLogger(__name__)

# The input kinds this module embeds, each through the model method its modality_config names.
KINDS = ("text", "image", "audio", "image+text")
# A chat model (a `message` entry: a VLM embedder) renders every kind through its chat template.
CHAT_KINDS = ("text", "image", "image+text", "message")
DEFAULT_MODALITIES: dict[str, dict[str, str]] = {  # CLIP's and SigLIP's: what a 5.x CLIPModel folder means
    "text": {"method": "get_text_features", "method_output_name": "pooler_output"},
    "image": {"method": "get_image_features", "method_output_name": "pooler_output"},
}
OUTPUT_NAME = "sentence_embedding"
# How 6.3 calls a processor for each kind (its defaults: padded text cut longest first, padded audio).
_TEXT_KWARGS = {"padding": True, "truncation": "longest_first"}
_AUDIO_KWARGS = {"padding": True}


class ImageRow:
    """An image in a training column, where a text has token ids: read and processed when its batch is padded.

    Its length is the vision tower's token count (patches and the class token), what the engine's
    batching by length counts.
    """

    def __init__(self, image: Any, tokens: int) -> None:
        self.image, self.tokens = image, tokens

    def __len__(self) -> int:
        return self.tokens


def default_modalities(model: Any) -> dict[str, dict[str, Any]]:
    """6.3's modality_config for a plain folder: each `get_<kind>_features` the model has, BLIP's image+text."""
    config: dict[str, dict[str, Any]] = {}
    for kind in ("text", "image", "audio"):
        if callable(getattr(model, f"get_{kind}_features", None)):
            config[kind] = {"method": f"get_{kind}_features", "method_output_name": "pooler_output"}
    if callable(getattr(model, "get_multimodal_features", None)):
        config["image+text"] = {"method": "get_multimodal_features", "method_output_name": None}
    return config


def is_multimodal(folder: Path, modality_config: dict[str, Any] | None) -> bool:
    """Whether `folder` holds a model this module runs: text with images, sounds or both, by a method per kind."""
    if modality_config:
        kinds = set(modality_config)
        return kinds <= {*KINDS, "message"} and not kinds <= {"text", "message"}  # chat text alone: the text path
    classes = architectures(folder)
    return any(a in TOWER_ARCHITECTURES or is_retrieval_class(a) or is_vlm_class(a) for a in classes)


def vlm_modalities(processor: Any) -> dict[str, dict[str, Any]]:
    """6.3's modality_config for a plain VLM folder: text and image by forward's token states, and chats."""
    entry = {"method": "forward", "method_output_name": "last_hidden_state"}
    form = message_format({}, getattr(processor, "chat_template", None))
    return {"text": dict(entry), "image": dict(entry), "message": {**entry, "format": form}}


# A `*ForRetrieval` model's modality_config (6.3's): its forward embeds queries and pages alike.
RETRIEVAL_MODALITIES: dict[str, dict[str, Any]] = {
    "text": {"method": "forward", "method_output_name": "embeddings"},
    "image": {"method": "forward", "method_output_name": "embeddings"},
}
TOKENS = "token_embeddings"
_OUTPUTS = frozenset({TOKENS, OUTPUT_NAME, "prompt_length"})  # keys the chain adds: never model inputs


class MultimodalTransformer(Transformer):
    """Embeds texts, images, sounds or image+text pairs, each by its own model method, into one shared space."""

    packed_output: ClassVar[str | None] = None  # the towers pool their own rows: padded batches only

    def __init__(self, auto_model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, processor: Any,
                 modality_config: dict[str, dict[str, str]] | None = None, max_seq_length: int | None = None,
                 processing_kwargs: dict[str, Any] | None = None, task: str | None = None,
                 output_name: str | None = None) -> None:  # fmt: skip
        super().__init__(auto_model, tokenizer, max_seq_length=max_seq_length)
        self.processor = processor
        retrieval = is_retrieval_class(type(auto_model).__name__)
        saved_classes = getattr(auto_model.config, "architectures", None) or []
        if modality_config is None and any(is_vlm_class(a) for a in saved_classes):
            modality_config, output_name = vlm_modalities(processor), TOKENS  # a plain VLM folder: 6.3's default
        # "retrieval": every token's vector (a multi-vector model's input module); else one vector per input.
        self.transformer_task = task or ("retrieval" if retrieval else "feature-extraction")
        default = RETRIEVAL_MODALITIES if retrieval else default_modalities(auto_model) or DEFAULT_MODALITIES
        self.modality_config = modality_config or default
        entry = self.modality_config.get("message")
        # A VLM embedder: every input a chat (6.3's message format); its forward's token states go to Pooling.
        self.chat_form = message_format(entry, getattr(processor, "chat_template", None)) if entry else None
        self.token_output = retrieval or output_name == TOKENS
        self.processing_kwargs = processing_kwargs or {}
        self._inputs = ("input_ids", "attention_mask")
        self.text_padding = self.processing_kwargs.get("text", {}).get("padding")
        missing = [
            k for k, spec in self.modality_config.items() if not callable(getattr(auto_model, spec["method"], None))
        ]
        if missing:  # a kind whose method this model lacks could only fail later, inside an encode
            raise ModelFormatError(multimodal(type(auto_model).__name__, sorted(self.modality_config)))

    @property
    def renders_chat(self) -> bool:
        """Whether every input is a chat through the processor's template (a VLM embedder)."""
        return self.chat_form is not None

    def token_ids(self, texts: Sequence[str], limit: int | None = None) -> tuple[list[list[int]], list[int]]:
        """Token ids per text, and the indices cut; a chat model's as its processor renders them (kind_features).

        The server's batcher and `token_rows` ask for ids: a VLM embedder's must be the ids its `encode` feeds.
        """
        if self.chat_form is None:
            return super().token_ids(texts, limit)
        rows = []
        for text in texts:  # one at a time: a chat alone is never padded
            ids = self._chat_features("text", [str(text)], getattr(text, "system", None))["input_ids"][0]
            rows.append([int(i) for i in ids])
        return rows, [i for i, row in enumerate(rows) if len(row) >= self.max_seq_length]

    @property
    def modalities(self) -> tuple[str, ...]:  # type: ignore[override]
        """The input kinds the model embeds, as its modality_config names them (text, image, audio, image+text).

        A chat model takes every kind its template renders, chats (`[{"role", "content"}, ...]`) included.
        """
        if self.chat_form is not None:
            return CHAT_KINDS
        return tuple(kind for kind in KINDS if kind in self.modality_config)

    @classmethod
    def from_pretrained(cls, path: Any, max_seq_length: int | None = None, trust_remote_code: bool = False,
                        dtype: str | torch.dtype | None = None, **config: Any) -> Self:  # fmt: skip
        """Load the model, its tokenizer and its processor from a Hugging Face folder."""
        modality_config, processing_kwargs = config.get("modality_config"), config.get("processing_kwargs")
        if importlib.util.find_spec("PIL") is None:  # transformers' image processors need it
            raise ModelFormatError(f"{path}: a multimodal model needs Pillow: {install_hint('image')}")
        try:
            with weight_bars():
                model = cls.model_class(path).from_pretrained(
                    path, trust_remote_code=trust_remote_code, weights_only=True, dtype=load_dtype(dtype))  # fmt: skip
            processor = AutoProcessor.from_pretrained(path, trust_remote_code=trust_remote_code)
            tokenizer = getattr(processor, "tokenizer", None) or AutoTokenizer.from_pretrained(path)
        except (OSError, ValueError, KeyError) as e:
            raise ModelFormatError(f"{path}: cannot load the multimodal model ({first_line(e)})") from None
        return cls(model, tokenizer, processor, modality_config, max_seq_length, processing_kwargs,
                   config.get("transformer_task"), config.get("module_output_name"))  # fmt: skip

    @classmethod
    def model_class(cls, path: Any) -> Any:
        """The transformers class the folder's weights load into (module-level `model_class`)."""
        return model_class(path)

    @classmethod
    def load(cls, path: Path, trust_remote_code: bool = False, dtype: str | torch.dtype | None = None) -> Self:
        """Load from 6.2's root Transformer folder or 5.x's `0_CLIPModel` folder (no sentence_bert_config.json)."""
        config = read_json(path / TRANSFORMER_CONFIG_FILE) if (path / TRANSFORMER_CONFIG_FILE).is_file() else {}
        unsupported = set(config.get("modality_config") or {}) - {*KINDS, "message"}
        if unsupported:
            raise ModelFormatError(f"{path}: {multimodal('its model', sorted(config['modality_config']))}")
        return cls.from_pretrained(path, config.get("max_seq_length"), trust_remote_code, dtype,
                                   modality_config=config.get("modality_config"),
                                   processing_kwargs=config.get("processing_kwargs"),
                                   transformer_task=config.get("transformer_task"),
                                   module_output_name=config.get("module_output_name"))  # fmt: skip

    def get_config(self) -> dict[str, Any]:
        """sentence_bert_config.json as sentence-transformers 6.2 writes it for this model."""
        output = TOKENS if self.token_output else OUTPUT_NAME
        config: dict[str, Any] = {"transformer_task": self.transformer_task, "modality_config": self.modality_config,
                                  "module_output_name": output, "max_seq_length": self.max_seq_length}  # fmt: skip
        if self.processing_kwargs:
            config["processing_kwargs"] = self.processing_kwargs
        return config

    def save(self, path: Path) -> None:
        """Write the weights, the processor (tokenizer and image settings) and sentence_bert_config.json."""
        path.mkdir(parents=True, exist_ok=True)
        with weight_bars():
            self.auto_model.save_pretrained(path)
        self.processor.save_pretrained(path)
        write_json(path / self.config_file, self.get_config())

    @property
    def embedding_dimension(self) -> int:
        """Width of the shared space both towers project into."""
        config = self.auto_model.config
        if self.transformer_task == "retrieval":  # ColPali's and ColQwen2's per-token width
            return int(config.embedding_dim)
        if self.token_output:  # a VLM's token states: its language model's width
            return int(getattr(config, "text_config", config).hidden_size)
        return int(getattr(config, "projection_dim", None) or config.text_config.hidden_size)

    def pad(self, rows: Any) -> Features:
        """Pad token rows; to max_seq_length when the model's text processing pads to a fixed length (SigLIP).

        A column of ImageRows (training) becomes the processor's pixel_values instead.
        """
        if rows and isinstance(rows[0], ImageRow):
            return self.image_features([open_image(row.image) for row in rows])
        if self.text_padding != "max_length" or not rows:
            return super().pad(rows)
        width = self.processing_kwargs.get("text", {}).get("max_length", self.max_seq_length)
        features = super().pad([*rows, [self.tokenizer.pad_token_id] * width])
        return {k: v[:-1] for k, v in features.items()}

    def column_rows(self, values: Sequence[Any]) -> tuple[list[Any], list[int]]:
        """A training column's rows: token ids for its texts, an ImageRow per image (and the indices cut)."""
        if not any(input_kind(v) == "image" for v in values):
            return self.token_ids(values)
        if not all(input_kind(v) == "image" for v in values):
            raise ValueError("a training column holds texts or images, not both")
        vision = self.auto_model.config.vision_config
        tokens = (vision.image_size // vision.patch_size) ** 2 + 1
        return [ImageRow(v["image"] if isinstance(v, dict) else v, tokens) for v in values], []

    def image_pixels(self, width: int, height: int) -> int:
        """Pixels the processor's resize makes of a `width` x `height` image (the server's limits count them)."""
        processor = getattr(self.processor, "image_processor", self.processor)
        size = self.processing_kwargs.get("image", {}).get("size") or getattr(processor, "size", None) or {}
        return resized_pixels({k: v for k, v in dict(size).items() if v is not None}, width, height)

    def image_features(self, images: list[Any]) -> Features:
        """The image tower's inputs for a batch, by the model's own processor (and its saved image settings).

        `pixel_values`, and what else the tower's method takes (SigLIP 2: its patch mask and shapes).
        """
        kwargs = self.processing_kwargs.get("image", {})
        return self._wanted("image", self.processor(images=images, return_tensors="pt", **kwargs))

    def kind_features(self, kind: str, items: list[Any], system: str | None = None) -> Features:
        """The model method's inputs for a batch of one kind: opened images, audio arrays, (image, text) pairs.

        Audio items are arrays, or `{"array", "sampling_rate"}` (one rate per batch, as the feature extractor
        takes); the processor is called with 6.3's per-kind arguments.
        """
        if self.chat_form is not None:  # `system`: the prompt, before each chat as 6.3 puts it
            return self._chat_features(kind, items, system)
        if kind == "image":
            return self.image_features(items)
        calls: dict[str, Any] = {"common_kwargs": {"return_tensors": "pt"}}
        if kind == "text":  # a *ForRetrieval processor renders queries itself (its prefix and augmentation)
            calls["text_kwargs"] = {**_TEXT_KWARGS, **self.processing_kwargs.get("text", {})}
            return self._wanted(kind, self.processor(text=list(items), **calls))
        if kind == "audio":
            arrays, rate = audio_batch(items)
            calls["audio_kwargs"] = {**_AUDIO_KWARGS, **({"sampling_rate": rate} if rate else {}),
                                     **self.processing_kwargs.get("audio", {})}  # fmt: skip
            return self._wanted(kind, self.processor(audio=arrays, **calls))
        if kind == "image+text":
            calls["text_kwargs"] = {**_TEXT_KWARGS, **self.processing_kwargs.get("text", {})}
            calls["images_kwargs"] = self.processing_kwargs.get("image", {})
            images, texts = [pair["image"] for pair in items], [pair["text"] for pair in items]
            return self._wanted(kind, self.processor(images=images, text=texts, **calls))
        raise ValueError(f"{kind!r} inputs: this model embeds {', '.join(self.modalities)}")

    def _chat_features(self, kind: str, items: list[Any], system: str | None) -> Features:
        """A batch of inputs as chats through the processor's chat template (images processed inside), as 6.3."""
        assert self.chat_form is not None
        chats = [as_chat(kind, item, system, self.chat_form) for item in items]
        return self._wanted("message", self.render_chats(chats))

    def render_chats(self, chats: list[list[dict[str, Any]]]) -> Any:
        """A batch of chats through the processor's chat template, tokenized and padded, images processed (6.3)."""
        text = {**_TEXT_KWARGS, "max_length": self.max_seq_length, **self.processing_kwargs.get("text", {})}
        images = self.processing_kwargs.get("image", {})
        return self.processor.apply_chat_template(
            chats, tokenize=True, return_dict=True, return_tensors="pt",
            processor_kwargs={"text_kwargs": text, "images_kwargs": images, "common_kwargs": {}},
        )  # fmt: skip

    def _wanted(self, kind: str, processed: Any) -> Features:
        """The processor's outputs the kind's method takes (pixel values always: a tower's main input)."""
        wanted = accepted(getattr(self.auto_model, self.modality_config[kind]["method"]))
        return {k: v for k, v in processed.items() if k == "pixel_values" or wanted is None or k in wanted}

    def forward(self, features: Features) -> Features:
        """`sentence_embedding` by the method of the kind the features are (features_kind)."""
        kind = "message" if self.chat_form is not None else features_kind(features)
        if kind == "image+text" and kind not in self.modality_config:  # a page's pixels with its prompt's ids
            kind = "image"
        spec = self.modality_config[kind]
        method = getattr(self.auto_model, spec["method"])
        inputs: dict[str, Any]
        if kind == "text" and self.transformer_task != "retrieval":
            inputs = {k: features[k] for k in ("input_ids", "attention_mask") if k in features}
        else:  # what the processor made for the method (PaliGemma's token_type_ids mark the prompt prefix)
            wanted = accepted(method)
            inputs = {k: v for k, v in features.items() if k not in _OUTPUTS and (wanted is None or k in wanted)}
            for name in ("pixel_values", "input_features"):  # the towers' float inputs, in the weights' dtype
                if name in inputs:
                    inputs[name] = inputs[name].to(self.auto_model.dtype)
        output = method(**inputs)
        if self.token_output:  # every token's vector: MaxSim's (zero at padding), or the Pooling module's
            default = "embeddings" if self.transformer_task == "retrieval" else "last_hidden_state"
            features[TOKENS] = output[spec.get("method_output_name") or default]
            return features
        output_name = spec.get("method_output_name")
        features[OUTPUT_NAME] = output if not output_name or isinstance(output, torch.Tensor) else output[output_name]
        return features


ImageTextTransformer = MultimodalTransformer  # the name the 5.x CLIPModel layout and older imports use


def as_chat(kind: str, item: Any, system: str | None, form: str) -> list[dict[str, Any]]:
    """One input as 6.3's chat: a user message of the input's parts (a chat as given), after the system prompt."""
    if kind == "message":
        chat = [{**m, "content": _content(m["content"], form)} for m in item]
    else:
        chat = [{"role": "user", "content": as_parts(kind, item, form)}]
    return ([{"role": "system", "content": _content(system, form)}] if system else []) + chat


def as_parts(kind: str, item: Any, form: str) -> Any:
    """A message's content for one input of `kind`: the value itself (flat, one part), else typed parts."""
    parts = item if kind == "image+text" else {kind: item}
    if form == "flat" and len(parts) == 1:
        return next(iter(parts.values()))
    return [{"type": name, name: value} for name, value in parts.items()]


def _content(content: Any, form: str) -> Any:
    """A message's content in the template's form: a string (flat), or a list of typed parts (structured)."""
    if form == "structured" and isinstance(content, str):
        return [{"type": "text", "text": content}]
    if form == "flat" and isinstance(content, list) and len(content) == 1 and "text" in content[0]:
        return content[0]["text"]
    return content


def accepted(method: Any) -> frozenset[str] | None:
    """The keyword inputs `method` names; None when it takes any (**kwargs)."""
    parameters = inspect.signature(method).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return frozenset(p.name for p in parameters)


def model_class(path: Any) -> Any:
    """The transformers class a folder's weights load into: its `*ForRetrieval` class (no AutoModel maps one)."""
    import transformers

    retrieval = [a for a in architectures(Path(path)) if is_retrieval_class(a)]
    return getattr(transformers, retrieval[0]) if retrieval else AutoModel


def features_kind(features: Features) -> str:
    """Which kind a batch's features are: pixels with token ids (image+text), pixels, sound features, or text."""
    if "pixel_values" in features:
        return "image+text" if "input_ids" in features else "image"
    if "input_features" in features or "input_values" in features:
        return "audio"
    return "text"


def audio_batch(items: list[Any]) -> tuple[list[Any], int | None]:
    """The arrays of a batch of sounds and their one sampling rate (None when no item names one)."""
    arrays = [item["array"] if isinstance(item, dict) else item for item in items]
    return [a.numpy() if isinstance(a, torch.Tensor) else a for a in arrays], sampling_rate(items)


def load_input_module(
    path: Path, trust_remote_code: bool = False, dtype: str | torch.dtype | None = None
) -> Transformer:
    """A Transformer module folder as the input module it is: multimodal when its model and config say so."""
    config = read_json(path / TRANSFORMER_CONFIG_FILE) if (path / TRANSFORMER_CONFIG_FILE).is_file() else {}
    if is_multimodal(path, config.get("modality_config")):
        return MultimodalTransformer.load(path, trust_remote_code, dtype)
    return Transformer.load(path, trust_remote_code=trust_remote_code, dtype=dtype)
