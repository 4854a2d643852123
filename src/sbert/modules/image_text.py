"""A two-tower image-text model (CLIP, SigLIP, SigLIP 2) as the chain's input module.

sentence-transformers 6.2 saves it as one root Transformer whose `modality_config` maps each input
kind to a method of the Hugging Face model (text -> get_text_features, image -> get_image_features)
and names the output (`pooler_output`, the projected vector); its 5.x layout is a `CLIPModel` module
folder. Both load here. Text is tokenized as any Transformer tokenizes it (fixed-length padding where
the saved `processing_kwargs` ask for it: SigLIP was trained on 64-token rows); images go through
transformers' own processor (resize, crop, RGB conversion, normalisation), never a copy of it. The
forward runs the tower the features call for and writes `sentence_embedding` directly: no pooling.
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
from sbert.formats.image_inputs import input_kind, open_image, resized_pixels
from sbert.formats.layout import TRANSFORMER_CONFIG_FILE, architectures, read_json, write_json
from sbert.install_hint import install_hint
from sbert.modules.base import Features
from sbert.modules.transformer import Transformer, load_dtype
from sbert.progress import weight_bars

log = logging.getLogger(__name__)

# The Hugging Face classes whose two towers sbert runs, and sentence-transformers 6.2's modality_config for them.
IMAGE_TEXT_ARCHITECTURES = ("CLIPModel", "SiglipModel", "Siglip2Model")
DEFAULT_MODALITIES: dict[str, dict[str, str]] = {
    "text": {"method": "get_text_features", "method_output_name": "pooler_output"},
    "image": {"method": "get_image_features", "method_output_name": "pooler_output"},
}
OUTPUT_NAME = "sentence_embedding"


class ImageRow:
    """An image in a training column, where a text has token ids: read and processed when its batch is padded.

    Its length is the vision tower's token count (patches and the class token), what the engine's
    batching by length counts.
    """

    def __init__(self, image: Any, tokens: int) -> None:
        self.image, self.tokens = image, tokens

    def __len__(self) -> int:
        return self.tokens


def is_image_text(folder: Path, modality_config: dict[str, Any] | None) -> bool:
    """Whether `folder` holds a two-tower image-text model sbert runs (a CLIP/SigLIP class, text and image only)."""
    kinds = set(modality_config or DEFAULT_MODALITIES)
    return kinds == {"text", "image"} and any(a in IMAGE_TEXT_ARCHITECTURES for a in architectures(folder))


class ImageTextTransformer(Transformer):
    """Embeds a text with the text tower or an image with the vision tower, into one shared space."""

    packed_output: ClassVar[str | None] = None  # the towers pool their own rows: padded batches only
    modalities: ClassVar[tuple[str, ...]] = ("text", "image")

    def __init__(self, auto_model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, processor: Any,
                 modality_config: dict[str, dict[str, str]] | None = None, max_seq_length: int | None = None,
                 processing_kwargs: dict[str, Any] | None = None) -> None:  # fmt: skip
        super().__init__(auto_model, tokenizer, max_seq_length=max_seq_length)
        self.processor = processor
        self.modality_config = modality_config or DEFAULT_MODALITIES
        self.processing_kwargs = processing_kwargs or {}
        self._inputs = ("input_ids", "attention_mask")
        self.text_padding = self.processing_kwargs.get("text", {}).get("padding")

    @classmethod
    def from_pretrained(cls, path: Any, max_seq_length: int | None = None, trust_remote_code: bool = False,
                        dtype: str | torch.dtype | None = None, **config: Any) -> Self:  # fmt: skip
        """Load the model, its tokenizer and its processor from a Hugging Face folder."""
        modality_config, processing_kwargs = config.get("modality_config"), config.get("processing_kwargs")
        if importlib.util.find_spec("PIL") is None:  # transformers' image processors need it
            raise ModelFormatError(f"{path}: an image-text model needs Pillow: {install_hint('image')}")
        try:
            with weight_bars():
                model = AutoModel.from_pretrained(path, trust_remote_code=trust_remote_code, weights_only=True,
                                                  dtype=load_dtype(dtype))  # fmt: skip
            processor = AutoProcessor.from_pretrained(path, trust_remote_code=trust_remote_code)
            tokenizer = getattr(processor, "tokenizer", None) or AutoTokenizer.from_pretrained(path)
        except (OSError, ValueError, KeyError) as e:
            raise ModelFormatError(f"{path}: cannot load the image-text model ({first_line(e)})") from None
        return cls(model, tokenizer, processor, modality_config, max_seq_length, processing_kwargs)

    @classmethod
    def load(cls, path: Path, trust_remote_code: bool = False, dtype: str | torch.dtype | None = None) -> Self:
        """Load from 6.2's root Transformer folder or 5.x's `0_CLIPModel` folder (no sentence_bert_config.json)."""
        config = read_json(path / TRANSFORMER_CONFIG_FILE) if (path / TRANSFORMER_CONFIG_FILE).is_file() else {}
        unsupported = set(config.get("modality_config") or {}) - set(cls.modalities)
        if unsupported:
            raise ModelFormatError(f"{path}: modalities {sorted(unsupported)} are not supported (text and image are)")
        return cls.from_pretrained(path, config.get("max_seq_length"), trust_remote_code, dtype,
                                   modality_config=config.get("modality_config"),
                                   processing_kwargs=config.get("processing_kwargs"))  # fmt: skip

    def get_config(self) -> dict[str, Any]:
        """sentence_bert_config.json as sentence-transformers 6.2 writes it for this model."""
        config: dict[str, Any] = {"transformer_task": "feature-extraction", "modality_config": self.modality_config,
                                  "module_output_name": OUTPUT_NAME, "max_seq_length": self.max_seq_length}  # fmt: skip
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
        processed = self.processor(images=images, return_tensors="pt", **kwargs)
        wanted = inspect.signature(getattr(self.auto_model, self.modality_config["image"]["method"])).parameters
        return {k: v for k, v in processed.items() if k == "pixel_values" or k in wanted}

    def forward(self, features: Features) -> Features:
        """`sentence_embedding` from the tower the features call for: images (pixel_values) or text (token ids)."""
        kind = "image" if "pixel_values" in features else "text"
        spec = self.modality_config[kind]
        if kind == "image":
            wanted = inspect.signature(getattr(self.auto_model, spec["method"])).parameters
            inputs = {k: v for k, v in features.items() if k in wanted}
            inputs["pixel_values"] = features["pixel_values"].to(self.auto_model.dtype)
        else:
            inputs = {k: features[k] for k in ("input_ids", "attention_mask") if k in features}
        output = getattr(self.auto_model, spec["method"])(**inputs)
        name = spec.get("method_output_name")
        features[OUTPUT_NAME] = output[name] if name and not isinstance(output, torch.Tensor) else output
        return features


def load_input_module(
    path: Path, trust_remote_code: bool = False, dtype: str | torch.dtype | None = None
) -> Transformer:
    """A Transformer module folder as the input module it is: image-text when its model and config say so."""
    config = read_json(path / TRANSFORMER_CONFIG_FILE) if (path / TRANSFORMER_CONFIG_FILE).is_file() else {}
    if is_image_text(path, config.get("modality_config")):
        return ImageTextTransformer.load(path, trust_remote_code, dtype)
    return Transformer.load(path, trust_remote_code=trust_remote_code, dtype=dtype)
