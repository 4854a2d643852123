"""Tiny random-weight BERT, RoBERTa and ALBERT encoders with tiny tokenizers, built offline."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import (
    AlbertConfig,
    AlbertModel,
    BertConfig,
    BertModel,
    PreTrainedTokenizerFast,
    RobertaConfig,
    RobertaModel,
)

CORPUS = [
    "a man is playing a guitar",
    "a woman is slicing an onion",
    "the cat sat on the mat",
    "dogs run in the park",
    "the weather is cold today",
    "a child is reading a book",
    "two men are riding horses",
    "the sun is shining over the sea",
]
# The corpus plus an empty string, one character and rows past the tiny models' 64-token limit.
EDGE_SENTENCES = [*CORPUS, "", "a", "the cat sat on the mat " * 6, "dogs " * 40]
MAX_LEN = 64
TINY = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}


def row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of each row of `a` with the same row of `b`."""
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def wordpiece(corpus: list[str] = CORPUS, vocab_size: int = 200) -> Tokenizer:
    """A lower-casing WordPiece tokenizer over `corpus`'s words, with BERT's special tokens and template.

    The vocabulary is built here, not trained: tokenizers' WordPiece trainer breaks ties between equal
    counts in hash order, so each build gave other pieces and other ids, and every test on the tiny BERT
    saw another model. Specials, then every character alone and as a continuation (`##c`), then the
    corpus's words, each group sorted; any word of known characters is then spelled, never [UNK].
    """
    normalizer, splitter = normalizers.BertNormalizer(lowercase=True), pre_tokenizers.BertPreTokenizer()
    words = sorted({w for line in corpus for w, _ in splitter.pre_tokenize_str(normalizer.normalize_str(line))})
    chars = sorted({c for w in words for c in w})
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    pieces = list(dict.fromkeys([*specials, *chars, *(f"##{c}" for c in chars), *words]))[:vocab_size]
    tok = Tokenizer(models.WordPiece(vocab={p: i for i, p in enumerate(pieces)}, unk_token="[UNK]"))
    tok.normalizer, tok.pre_tokenizer, tok.decoder = normalizer, splitter, decoders.WordPiece()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))],
    )
    return tok


def _byte_bpe() -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    trainer = trainers.BpeTrainer(
        vocab_size=320, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(CORPUS * 4, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", tok.token_to_id("<s>")), ("</s>", tok.token_to_id("</s>"))],
    )
    return tok


def _unigram() -> Tokenizer:
    # Built, not trained, for the reason wordpiece() gives (the trainer's scores moved by up to 1e-4 between
    # builds, and its ids with them): whole corpus words score above the characters that spell other words.
    words = sorted({w for line in CORPUS for w in line.lower().split()})
    chars = sorted({c for w in words for c in w})
    specials = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
    vocab = [(p, 0.0) for p in specials] + [("\u2581", -3.0)] + [(c, -4.0) for c in chars]
    vocab += [("\u2581" + w, -2.0) for w in words]
    tok = Tokenizer(models.Unigram(vocab, unk_id=1, byte_fallback=False))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))],
    )
    return tok


def build_bert(path: Path) -> Path:
    """A 2-layer, 32-wide BERT with a WordPiece tokenizer, saved to `path`."""
    tok = wordpiece()
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=MAX_LEN,
    )
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tok.get_vocab_size(), max_position_embeddings=MAX_LEN, **TINY)
    return _save(BertModel(config), wrapped, path)


def build_roberta(path: Path) -> Path:
    """A tiny RoBERTa (positions offset by the padding index) with a byte-level BPE tokenizer."""
    tok = _byte_bpe()
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        cls_token="<s>",
        sep_token="</s>",
        mask_token="<mask>",
        model_max_length=MAX_LEN,
    )
    torch.manual_seed(1)
    config = RobertaConfig(
        vocab_size=tok.get_vocab_size(),
        max_position_embeddings=MAX_LEN + 2,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        type_vocab_size=1,
        **TINY,
    )
    return _save(RobertaModel(config), wrapped, path)


def build_albert(path: Path) -> Path:
    """A tiny ALBERT (factorised embeddings, shared layers) with a unigram tokenizer."""
    tok = _unigram()
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        pad_token="<pad>",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=MAX_LEN,
    )
    torch.manual_seed(2)
    config = AlbertConfig(
        vocab_size=tok.get_vocab_size(), embedding_size=16, max_position_embeddings=MAX_LEN, pad_token_id=0, **TINY
    )
    return _save(AlbertModel(config), wrapped, path)


def build_qwen2(path: Path) -> Path:
    """A tiny Qwen2 decoder as embedders ship it: byte-level BPE, EOS appended to every input, left padding."""
    return build_decoder(path, "qwen2")


def build_decoder(path: Path, family: str) -> Path:
    """A tiny decoder (qwen2, qwen3, llama, mistral) as embedders ship it: EOS appended, left padding."""
    from tokenizers import processors
    from transformers import AutoConfig, AutoModel

    tok = _byte_bpe()
    eos = tok.token_to_id("</s>")
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", eos)])
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        model_max_length=MAX_LEN,
        padding_side="left",
    )
    torch.manual_seed(3)
    config = AutoConfig.for_model(
        family, vocab_size=tok.get_vocab_size(), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=MAX_LEN,
        eos_token_id=eos, pad_token_id=tok.token_to_id("<pad>"),
    )  # fmt: skip
    return _save(AutoModel.from_config(config), wrapped, path)


def build_gemma3(path: Path, bidirectional: bool = True, window: int = 4 * MAX_LEN) -> Path:
    """A tiny Gemma3 text backbone; bidirectional attention as EmbeddingGemma sets it; <s> ... </s>, right padding."""
    from transformers import Gemma3TextConfig, Gemma3TextModel

    tok = _byte_bpe()
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>",
        model_max_length=MAX_LEN,
    )  # fmt: skip
    torch.manual_seed(5)
    config = Gemma3TextConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=4 * MAX_LEN,
        use_bidirectional_attention=bidirectional, sliding_window=window, pad_token_id=tok.token_to_id("<pad>"),
    )  # fmt: skip
    return _save(Gemma3TextModel(config), wrapped, path)


def build_t5(path: Path) -> Path:
    """A tiny T5 saved whole (encoder and decoder), as sentence-t5 / GTR checkpoints are; EOS closes every input."""
    from tokenizers import processors
    from transformers import T5Config, T5Model

    tok = _unigram()
    tok.post_processor = processors.TemplateProcessing(single="$A [SEP]", special_tokens=[("[SEP]", 3)])
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="[SEP]", unk_token="<unk>", pad_token="<pad>", model_max_length=MAX_LEN
    )
    torch.manual_seed(4)
    config = T5Config(
        vocab_size=tok.get_vocab_size(), d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
        pad_token_id=0, eos_token_id=3, decoder_start_token_id=0,
    )  # fmt: skip
    return _save(T5Model(config), wrapped, path)


def _save(model: torch.nn.Module, tokenizer: PreTrainedTokenizerFast, path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


BUILDERS = {"bert": build_bert, "roberta": build_roberta, "albert": build_albert}


def save_tiny_reranker(encoder_dir: Path, path: Path) -> Path:
    """A sbert CrossEncoder on a tiny encoder, its fresh head widened so pairs score clearly apart.

    A fresh head's logits differ between pairs by about 1e-5, where batch-dependent rounding
    could swap two documents; x300 puts them far apart.
    """
    import torch

    from sbert.reranker.model import CrossEncoder

    torch.manual_seed(0)
    model = CrossEncoder.new(encoder_dir)
    with torch.no_grad():
        for param in model.classifier.auto_model.classifier.parameters():
            param.mul_(300)
    model.save(path)
    return path
