"""Tiny random image-text folders (CLIP, SigLIP, SigLIP 2): a plain Hugging Face checkpoint, sentence-transformers 6.2's
layout (a root Transformer whose modality_config reads images), and its 5.x layout (a `CLIPModel` module)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any


def _byte_symbols() -> list[str]:
    """GPT-2/CLIP's printable stand-in for each of the 256 bytes (the base vocabulary of a byte-level BPE)."""
    kept = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    extra = iter(range(256, 512))
    return [chr(b) if b in kept else chr(next(extra)) for b in range(256)]


def _clip_tokenizer(base: Path) -> Any:
    """A byte-level BPE tokenizer with no merges (every byte a token): CLIP's, small and offline."""
    from transformers import CLIPTokenizer

    symbols = _byte_symbols()
    vocab = [*symbols, *(s + "</w>" for s in symbols), "<|startoftext|>", "<|endoftext|>"]
    (base / "tok").mkdir(parents=True, exist_ok=True)
    (base / "tok" / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(vocab)}), encoding="utf-8")
    (base / "tok" / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    return CLIPTokenizer(str(base / "tok" / "vocab.json"), str(base / "tok" / "merges.txt"))


def tiny_clip(base: Path) -> Path:
    """A random CLIPModel (32-wide towers, 32-pixel images) with its processor, saved as transformers saves it."""
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    tokenizer = _clip_tokenizer(base)
    vocab = range(len(tokenizer))
    towers = {"hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2, "num_hidden_layers": 2}
    text = {**towers, "vocab_size": len(vocab), "max_position_embeddings": 64, "bos_token_id": len(vocab) - 2,
            "eos_token_id": len(vocab) - 1}  # fmt: skip
    config = CLIPConfig(text_config=text, vision_config={**towers, "image_size": 32, "patch_size": 8},
                        projection_dim=16)  # fmt: skip
    torch.manual_seed(0)
    out = base / "clip"
    CLIPModel(config).save_pretrained(out)
    images = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    CLIPProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(out)
    return out


def st_clip(clip: Path, out: Path) -> Path:
    """The CLIP checkpoint as sentence-transformers 6.2 saves it (a Transformer whose modality_config reads images)."""
    from sentence_transformers import SentenceTransformer

    SentenceTransformer(str(clip), device="cpu").save(str(out))
    return out


def legacy_clip(out: Path, clip: Path | None = None) -> Path:
    """sentence-transformers 5.x's clip-ViT-B-32 layout: modules.json naming one `CLIPModel` module (its files)."""
    (out / "0_CLIPModel").mkdir(parents=True, exist_ok=True)
    for file in clip.iterdir() if clip is not None else []:
        shutil.copy(file, out / "0_CLIPModel" / file.name)
    modules = [{"idx": 0, "name": "0", "path": "0_CLIPModel", "type": "sentence_transformers.models.CLIPModel"}]
    (out / "modules.json").write_text(json.dumps(modules), encoding="utf-8")
    return out


def tiny_siglip(base: Path) -> Path:
    """A random SiglipModel (32-wide towers, 32-pixel images, 16-token texts) with a processor, saved by transformers.

    The text tower reads its last position, so texts must be padded to the fixed length it was trained on.
    """
    import torch
    from transformers import SiglipConfig, SiglipImageProcessor, SiglipModel, SiglipProcessor

    tokenizer = _clip_tokenizer(base)
    towers = {"hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2, "num_hidden_layers": 2}
    text = {**towers, "vocab_size": len(tokenizer), "max_position_embeddings": 16, "bos_token_id": len(tokenizer) - 2,
            "eos_token_id": len(tokenizer) - 1, "pad_token_id": len(tokenizer) - 1}  # fmt: skip
    config = SiglipConfig(text_config=text, vision_config={**towers, "image_size": 32, "patch_size": 8},
                          bos_token_id=None, eos_token_id=None, pad_token_id=None)  # fmt: skip
    torch.manual_seed(1)
    out = base / "siglip"
    SiglipModel(config).save_pretrained(out)
    images = SiglipImageProcessor(size={"height": 32, "width": 32})
    SiglipProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(out)
    return out


def st_siglip(siglip: Path, out: Path) -> Path:
    """The SigLIP checkpoint as sentence-transformers 6.2 saves it, texts padded to 16 tokens (processing_kwargs)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer

    padded = {"text": {"padding": "max_length", "max_length": 16}}
    SentenceTransformer(modules=[Transformer(str(siglip), processing_kwargs=padded)], device="cpu").save(str(out))
    return out


def tiny_siglip2(base: Path) -> Path:
    """A random Siglip2Model (NaFlex: patches of any aspect ratio, a patch mask), saved by transformers.

    Siglip2Processor calls its image processor with 16-pixel patches, at most 256 of them, and pads texts
    to 64 tokens, whatever the saved settings: the tiny towers take those shapes.
    """
    import torch
    from transformers import Siglip2Config, Siglip2ImageProcessor, Siglip2Model, Siglip2Processor

    tokenizer = _clip_tokenizer(base)
    towers = {"hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2, "num_hidden_layers": 2}
    text = {**towers, "vocab_size": len(tokenizer), "max_position_embeddings": 64, "bos_token_id": len(tokenizer) - 2,
            "eos_token_id": len(tokenizer) - 1, "pad_token_id": len(tokenizer) - 1}  # fmt: skip
    config = Siglip2Config(text_config=text, vision_config={**towers, "patch_size": 16, "num_patches": 256},
                           bos_token_id=None, eos_token_id=None, pad_token_id=None)  # fmt: skip
    torch.manual_seed(2)
    out = base / "siglip2"
    Siglip2Model(config).save_pretrained(out)
    images = Siglip2ImageProcessor(patch_size=16, max_num_patches=256)
    Siglip2Processor(image_processor=images, tokenizer=tokenizer).save_pretrained(out)
    return out


def st_siglip2(siglip2: Path, out: Path) -> Path:
    """The SigLIP 2 checkpoint as sentence-transformers 6.2 saves it, texts padded to 64 tokens."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer

    padded = {"text": {"padding": "max_length", "max_length": 64}}
    SentenceTransformer(modules=[Transformer(str(siglip2), processing_kwargs=padded)], device="cpu").save(str(out))
    return out


def saved_clip(base: Path) -> Path:
    """A tiny random CLIP as sentence-transformers 6.2 saves it, built without the builders' warnings."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return st_clip(tiny_clip(base), base / "st")


def tiny_blip(base: Path) -> Path:
    """A random BlipModel (text, image and image+text by its get_*_features methods) with its processor."""
    import torch
    from transformers import BertTokenizerFast, BlipConfig, BlipImageProcessor, BlipModel, BlipProcessor

    from tests.tiny_models import wordpiece

    specials = {"unk_token": "[UNK]", "pad_token": "[PAD]", "cls_token": "[CLS]", "sep_token": "[SEP]",
                "mask_token": "[MASK]"}  # fmt: skip
    tokenizer = BertTokenizerFast(tokenizer_object=wordpiece(), model_max_length=64, **specials)
    towers = {"hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2, "num_hidden_layers": 2}
    text = {**towers, "vocab_size": tokenizer.vocab_size, "max_position_embeddings": 64, "encoder_hidden_size": 32,
            "bos_token_id": tokenizer.cls_token_id, "sep_token_id": tokenizer.sep_token_id,
            "pad_token_id": tokenizer.pad_token_id}  # fmt: skip
    config = BlipConfig(
        text_config=text, vision_config={**towers, "image_size": 32, "patch_size": 8}, projection_dim=16
    )
    torch.manual_seed(0)
    out = base / "blip"
    BlipModel(config).save_pretrained(out)
    images = BlipImageProcessor(size={"height": 32, "width": 32})
    BlipProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(out)
    return out


def tiny_clap(base: Path) -> Path:
    """A random ClapModel (text and audio by get_text_features / get_audio_features): 8 kHz, 1 s, 16 mel bins."""
    import torch
    from transformers import ClapConfig, ClapFeatureExtractor, ClapModel, ClapProcessor, RobertaTokenizerFast

    from tests.tiny_models import _byte_bpe

    tokenizer = RobertaTokenizerFast(tokenizer_object=_byte_bpe(), bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                     pad_token="<pad>", cls_token="<s>", sep_token="</s>", mask_token="<mask>",
                                     model_max_length=64)  # fmt: skip
    sounds = ClapFeatureExtractor(feature_size=16, sampling_rate=8000, hop_length=160, max_length_s=1,
                                  fft_window_size=128, truncation="rand_trunc")  # fmt: skip
    text = {"vocab_size": tokenizer.vocab_size, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
            "intermediate_size": 64, "max_position_embeddings": 70, "pad_token_id": 1,
            "projection_dim": 16}  # fmt: skip
    audio = {"hidden_size": 32, "num_mel_bins": 16, "spec_size": 32, "patch_size": 4, "patch_stride": (4, 4),
             "depths": [1, 1], "num_attention_heads": [2, 2], "window_size": 4, "patch_embeds_hidden_size": 16,
             "projection_dim": 16, "enable_fusion": False}  # fmt: skip
    torch.manual_seed(0)
    out = base / "clap"
    ClapModel(ClapConfig(text_config=text, audio_config=audio, projection_dim=16)).save_pretrained(out)
    ClapProcessor(feature_extractor=sounds, tokenizer=tokenizer).save_pretrained(out)
    return out


def tiny_colpali(base: Path) -> Path:
    """A random ColPaliForRetrieval (PaliGemma: SigLIP 32-pixel pages, a 2-layer Gemma) with its processor."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        ColPaliConfig,
        ColPaliForRetrieval,
        ColPaliProcessor,
        GemmaTokenizerFast,
        PaliGemmaConfig,
        SiglipImageProcessor,
    )

    from tests.tiny_models import CORPUS

    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer, bpe.decoder = pre_tokenizers.ByteLevel(add_prefix_space=False), decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<pad>", "<eos>", "<bos>", "<unk>", "<image>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())  # fmt: skip
    bpe.train_from_iterator(CORPUS * 4, trainer)
    tokenizer = GemmaTokenizerFast(tokenizer_object=bpe, pad_token="<pad>", eos_token="<eos>", bos_token="<bos>",
                                   unk_token="<unk>")  # fmt: skip
    pages = SiglipImageProcessor(size={"height": 32, "width": 32}, image_seq_length=16)
    processor = ColPaliProcessor(image_processor=pages, tokenizer=tokenizer)
    vocab = len(processor.tokenizer)  # the processor adds PaliGemma's location and segmentation tokens
    text = {"model_type": "gemma", "vocab_size": vocab, "hidden_size": 32, "intermediate_size": 64,
            "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16,
            "max_position_embeddings": 256, "pad_token_id": 0}  # fmt: skip
    vision = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
              "image_size": 32, "patch_size": 8, "projection_dim": 32}  # fmt: skip
    vlm = PaliGemmaConfig(text_config=text, vision_config=vision, projection_dim=32, vocab_size=vocab,
                          image_token_index=tokenizer.convert_tokens_to_ids("<image>"))  # fmt: skip
    torch.manual_seed(0)
    out = base / "colpali"
    ColPaliForRetrieval(ColPaliConfig(vlm_config=vlm, embedding_dim=16)).save_pretrained(out)
    processor.save_pretrained(out)
    return out


def tiny_colqwen2(base: Path) -> Path:
    """A random ColQwen2ForRetrieval (a 2-layer Qwen2-VL: 14-pixel patches merged 2x2) with its processor.

    Qwen2-VL's processors need torchvision (its video processor), which loads beside torch 2.14.1 with
    torchvision 0.29.1, not beside the 2.13 CPU build: `make test-vision` runs these tests in such a venv.
    """
    import torch
    from transformers import (
        AutoTokenizer,
        ColQwen2Config,
        ColQwen2ForRetrieval,
        ColQwen2Processor,
        Qwen2VLConfig,
        Qwen2VLImageProcessor,
    )

    from tests.tiny_models import build_qwen2

    tokenizer = AutoTokenizer.from_pretrained(build_qwen2(base / "qwen"))
    marks = ["<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
    tokenizer.add_special_tokens({"additional_special_tokens": marks})
    tokenizer.model_max_length = 1024
    pages = Qwen2VLImageProcessor(min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 16, patch_size=14, merge_size=2,
                                  temporal_patch_size=2)  # fmt: skip
    processor = ColQwen2Processor(image_processor=pages, tokenizer=tokenizer)
    names = (("vision_start_token_id", marks[0]), ("image_token_id", marks[2]), ("video_token_id", marks[3]))
    ids = {name: tokenizer.convert_tokens_to_ids(mark) for name, mark in names}
    text = {"model_type": "qwen2_vl_text", "vocab_size": len(tokenizer), "hidden_size": 32, "intermediate_size": 64,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "max_position_embeddings": 1024,
            "rope_parameters": {"rope_type": "default", "mrope_section": [2, 1, 1], "rope_theta": 10000.0}}  # fmt: skip
    vision = {"depth": 2, "embed_dim": 32, "hidden_size": 32, "num_heads": 2, "mlp_ratio": 2, "patch_size": 14,
              "spatial_merge_size": 2, "temporal_patch_size": 2}  # fmt: skip
    vlm = Qwen2VLConfig(text_config=text, vision_config=vision, vocab_size=len(tokenizer), **ids)
    torch.manual_seed(0)
    out = base / "colqwen2"
    ColQwen2ForRetrieval(ColQwen2Config(vlm_config=vlm, embedding_dim=16)).save_pretrained(out)
    processor.save_pretrained(out)
    return out


# A chat template that writes images in place (structured content), Qwen's markers around each message.
VLM_TEMPLATE = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}"
                "{{ message['content'] }}{% else %}{% for part in message['content'] %}{% if part['type'] == 'image' %}"
                "<image>{% else %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
                "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")  # fmt: skip


def tiny_llava(base: Path) -> Path:
    """A random LLaVA (CLIP vision tower, 2-layer Qwen2 language model) with its chat-template processor."""
    import torch
    from transformers import (
        AutoTokenizer,
        CLIPImageProcessor,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    from tests.tiny_models import build_qwen2

    tokenizer = AutoTokenizer.from_pretrained(build_qwen2(base / "qwen"))
    tokenizer.model_max_length = 512  # room for a picture's 16 image tokens
    tokenizer.add_special_tokens({"additional_special_tokens": ["<image>"]})
    images = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    processor = LlavaProcessor(image_processor=images, tokenizer=tokenizer, patch_size=8, num_additional_image_tokens=1,
                               vision_feature_select_strategy="default", chat_template=VLM_TEMPLATE)  # fmt: skip
    text = {"model_type": "qwen2", "vocab_size": len(tokenizer), "hidden_size": 32, "intermediate_size": 64,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 512,
            "pad_token_id": tokenizer.pad_token_id, "eos_token_id": tokenizer.eos_token_id}  # fmt: skip
    vision = {"model_type": "clip_vision_model", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
              "num_attention_heads": 2, "image_size": 32, "patch_size": 8}  # fmt: skip
    config = LlavaConfig(text_config=text, vision_config=vision, vision_feature_layer=-1,
                         vision_feature_select_strategy="default",
                         image_token_index=tokenizer.convert_tokens_to_ids("<image>"))  # fmt: skip
    torch.manual_seed(0)
    out = base / "llava"
    LlavaForConditionalGeneration(config).save_pretrained(out)
    processor.save_pretrained(out)
    return out


def st_vlm_embedder(llava: Path, out: Path) -> Path:
    """The LLaVA folder as 6.3 saves a VLM embedder: its message-modality Transformer, last-token pooling, a prompt."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import modules

    transformer = SentenceTransformer(str(llava), device="cpu")[0]
    pooling = modules.Pooling(transformer.get_embedding_dimension(), "lasttoken")
    SentenceTransformer(modules=[transformer, pooling], device="cpu",
                        prompts={"query": "Find the picture: "}).save(str(out))  # fmt: skip
    return out


def st_reference(folder: Path, cls: str = "SentenceTransformer", **options: Any) -> Any:
    """sentence-transformers' own `cls` on `folder` (the reference a test compares with), its warnings hushed."""
    import warnings

    import sentence_transformers

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(sentence_transformers, cls)(str(folder), device="cpu", **options)


def st_vlm_reranker(llava: Path, out: Path, true_token_id: int = 40, false_token_id: int = 41) -> Path:
    """A VLM reranker as sentence-transformers 6.3 saves one: its any-to-any Transformer, then LogitScore.

    The tiny tokenizer has no `yes`/`no` tokens, so two ordinary ids stand in for them.
    """
    from sentence_transformers import CrossEncoder
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.cross_encoder.modules import LogitScore

    model = CrossEncoder(modules=[Transformer(str(llava), transformer_task="any-to-any"),
                                  LogitScore(true_token_id=true_token_id, false_token_id=false_token_id)])  # fmt: skip
    model.save(str(out))
    return out
