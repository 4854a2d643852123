"""TSDAE (Wang et al., EMNLP Findings 2021): the sentence vector of a damaged text must let a decoder rebuild it.

    loss = CE(decoder(original[:-1] | cross-attention to one memory slot: u = encode(damaged)), original[1:])

The decoder is a causal-LM copy of the encoder's architecture with cross-attention added, loaded from the
encoder's own folder; with `tie_encoder_decoder` (the default) the encoder's weights become the decoder's
(one set of parameters trained by both), as in sentence-transformers 6.2's DenoisingAutoEncoderLoss. A
table's two columns are the damaged text and the original (`sbert.datasets.DenoisingAutoEncoderDataset`
makes them). Only the encoder is saved with the model.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

from sbert.errors import SbertError
from sbert.losses.base import Loss
from sbert.modules.transformer import Transformer


class DenoisingAutoEncoderLoss(Loss):
    """`DenoisingAutoEncoderLoss(model, decoder_name_or_path=None, tie_encoder_decoder=True)` as in 6.2."""

    kinds = ("pair",)
    needs_model = True  # it reads the second column's token ids, never its vectors

    def __init__(self, model: nn.Module, decoder_name_or_path: str | None = None,
                 tie_encoder_decoder: bool = True) -> None:  # fmt: skip
        super().__init__()
        encoder = next(iter(model.children()), None)
        if not isinstance(encoder, Transformer):
            raise ValueError("DenoisingAutoEncoderLoss needs a model whose first module is a transformer encoder")
        self.name_model(model)
        encoder_path = str(encoder.auto_model.config._name_or_path)
        if decoder_name_or_path is None and not tie_encoder_decoder:
            raise ValueError("Must indicate the decoder_name_or_path argument when tie_encoder_decoder=False!")
        path = encoder_path if tie_encoder_decoder else str(decoder_name_or_path)
        self.tokenizer_encoder = encoder.tokenizer
        self.tokenizer_decoder = AutoTokenizer.from_pretrained(path)
        self.need_retokenization = not isinstance(self.tokenizer_encoder, type(self.tokenizer_decoder))
        self.decoder: Any = _decoder(path, encoder.auto_model.config.hidden_size)  # a transformers causal LM
        if self.tokenizer_decoder.pad_token is None:
            self.tokenizer_decoder.pad_token = self.tokenizer_decoder.eos_token
            self.decoder.config.pad_token_id = self.decoder.config.eos_token_id
        if tie_encoder_decoder:
            if self.need_retokenization:
                raise SbertError("DenoisingAutoEncoderLoss: tie_encoder_decoder needs the decoder's tokenizer")
            if len(self.tokenizer_encoder) != len(self.tokenizer_decoder):  # the encoder's vocabulary grew
                self.tokenizer_decoder = self.tokenizer_encoder
                self.decoder.resize_token_embeddings(len(self.tokenizer_decoder))
            _tie(encoder.auto_model, self.decoder._modules[self.decoder.base_model_prefix])

    def forward_model(self, model: nn.Module, columns: list[dict[str, Any]], labels: Tensor | None) -> Tensor:
        """Cross-entropy of the original's next tokens, the decoder attending to the damaged text's vector."""
        source, target = columns
        if self.need_retokenization:
            target = self._retokenize(target)
        vectors = model(dict(source))["sentence_embedding"]
        ids = target["input_ids"]
        logits = self.decoder(input_ids=ids[:, :-1], encoder_hidden_states=vectors[:, None],
                              encoder_attention_mask=source["attention_mask"][:, 0:1], use_cache=False)[0]  # fmt: skip
        loss = nn.CrossEntropyLoss(ignore_index=self.tokenizer_decoder.pad_token_id)
        return loss(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))

    def _retokenize(self, features: dict[str, Tensor]) -> dict[str, Tensor]:
        """The encoder's token ids as text again, tokenized by the decoder's tokenizer."""
        texts = self.tokenizer_encoder.batch_decode(features["input_ids"], skip_special_tokens=True,
                                                    clean_up_tokenization_spaces=True)  # fmt: skip
        encoded = self.tokenizer_decoder(texts, padding=True, truncation="longest_first", return_tensors="pt")
        return {k: v.to(features["input_ids"].device) for k, v in encoded.items()}

    def get_config_dict(self) -> dict[str, Any]:
        """The settings as 6.2 lists them in a model card."""
        return {"decoder_name_or_path": self.decoder.config._name_or_path,
                "need_retokenization": self.need_retokenization}  # fmt: skip


def _decoder(path: str, hidden_size: int) -> Any:
    """The causal-LM decoder with cross-attention, from `path`; its width must be the encoder's."""
    config = AutoConfig.from_pretrained(path)
    config.is_decoder, config.add_cross_attention = True, True
    try:
        decoder = AutoModelForCausalLM.from_pretrained(path, config=config)
    except ValueError as e:
        raise SbertError(f"DenoisingAutoEncoderLoss: {path} has no causal-LM head to decode with ({e})") from None
    if config.hidden_size != hidden_size:
        raise SbertError(f"DenoisingAutoEncoderLoss: decoder width {config.hidden_size} != encoder's {hidden_size}")
    return decoder


def _tie(encoder: nn.Module, decoder: nn.Module) -> None:
    """Make the encoder's parameters the decoder's own (same names), so both train one set."""
    modules = dict(encoder.named_modules())
    tied = 0
    for name, parameter in decoder.named_parameters():
        owner, _, attr = name.rpartition(".")
        if owner in modules and hasattr(modules[owner], attr):
            setattr(modules[owner], attr, parameter)
            tied += 1
    if not tied:
        raise SbertError("DenoisingAutoEncoderLoss: no encoder weight matched the decoder's (another architecture?)")
