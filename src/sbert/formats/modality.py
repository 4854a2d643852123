"""Which inputs a saved model reads: text only, or other modalities sbert does not run yet (one clear error).

sentence-transformers 6.2 saves a multimodal model as a root Transformer whose `modality_config` maps
each input kind to a method (CLIP and SigLIP: `text` to get_text_features, `image` to
get_image_features; chat-message VLM embedders a `message` entry; audio and video models theirs);
its 5.x layout names a `CLIPModel` module. An LLM reranker's `message` entry is chat text, which sbert
runs; a vision-language model is told apart by its class. sbert runs text models: the others are refused
when loaded, naming the model class and the modalities, instead of failing later inside the chain.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sbert.errors import ModelFormatError
from sbert.formats.layout import architectures

# Chat messages are text too: sentence-transformers 6.2 saves an LLM reranker (LogitScore) with a `message` entry.
TEXT_MODALITIES = {"text", "message"}
# Model classes whose checkpoints embed more than text, whatever sentence_bert_config.json says: the towers
# whose `get_<kind>_features` methods the multimodal input module runs from a plain folder (modules/multimodal.py),
# `*ForRetrieval` page models, and vision-language (image-text-to-text) chat models.
TOWER_ARCHITECTURES = ("CLIPModel", "SiglipModel", "Siglip2Model", "BlipModel", "ClapModel")
VLM_ARCHITECTURES = ("LlavaForConditionalGeneration", "LlavaNextForConditionalGeneration",
                     "PaliGemmaForConditionalGeneration", "Gemma3ForConditionalGeneration",
                     "Idefics3ForConditionalGeneration", "VLForConditionalGeneration",
                     "ForImageTextToText")  # fmt: skip
# What the multimodal input module runs (modules/multimodal.py): each kind by a model method of its own.
RUNS = "text, and images, audio or image+text pairs through a model method per kind (CLIP, SigLIP, BLIP, CLAP)"


def check_text_only(folder: Path, modality_config: dict[str, Any] | None) -> None:
    """Raise ModelFormatError when the Transformer saved in `folder` reads anything but text.

    `modality_config` is its sentence_bert_config.json entry (None when it has none); the folder's
    config.json architectures are read too.
    """
    modalities = sorted((modality_config or {}).keys())
    classes = [a for a in architectures(folder) if a.endswith(TOWER_ARCHITECTURES) or is_retrieval_class(a)
               or is_vlm_class(a)]  # fmt: skip
    if set(modalities) - TEXT_MODALITIES or classes:
        raise ModelFormatError(f"{folder}: {multimodal(classes[0] if classes else 'a multimodal model', modalities)}")


def is_retrieval_class(architecture: str) -> bool:
    """A `*ForRetrieval` class (ColPali, ColQwen2): its forward gives every token's vector, for MaxSim."""
    return architecture.endswith("ForRetrieval")


def is_vlm_class(architecture: str) -> bool:
    """A vision-language (image-text-to-text) class: a chat template over images and text."""
    return architecture.endswith(VLM_ARCHITECTURES)


def multimodal(what: str, modalities: list[str]) -> str:
    """The one message for a model sbert cannot run because it reads images, audio, video or chat messages."""
    reads = f" (modalities: {', '.join(modalities)})" if modalities else ""
    return f"{what}{reads} is not a model sbert runs yet; sbert runs {RUNS}"
