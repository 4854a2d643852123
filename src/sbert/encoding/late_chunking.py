"""Late chunking: one vector per chunk of a text, every chunk computed with the whole text in view.

A chunk's vector is the mean of the token vectors of ONE pass over the whole text, over the tokens
whose character offsets start inside the chunk's span; special tokens and the prompt's tokens belong
to no chunk. The modules after Pooling (Dense, Normalize) then run on each chunk's mean, as they run
on a sentence vector. A text longer than the model's limit runs in windows overlapping by half,
each holding the prompt, and each token's vector comes from the window where it is farthest from
an edge (the most context on both sides). Plain chunking (`long_text="chunk"`, or encoding each
chunk alone) gives each chunk only its own words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import torch

from sbert.errors import SbertError
from sbert.modules.pooling import Pooling
from sbert.vectors.batching import check_sentences

Span = tuple[int, int]
WINDOW_BATCH = 16  # windows per forward pass


def check_spans(texts: Sequence[str], chunks: Sequence[Sequence[Span]]) -> list[list[Span]]:
    """Spans as (start, end) integer pairs within their text, a list per text; a one-line error names a bad one."""
    if len(chunks) != len(texts):
        raise SbertError(f"chunks has {len(chunks)} span lists for {len(texts)} texts: give one list per text")
    out = []
    for i, (text, spans) in enumerate(zip(texts, chunks, strict=True)):
        row = []
        for k, span in enumerate(spans):
            if len(span) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) for x in span):
                raise SbertError(f"chunks[{i}][{k}] = {span!r}: a span is (start_char, end_char), two integers")
            start, end = span
            if not 0 <= start < end <= len(text):
                raise SbertError(f"chunks[{i}][{k}] = ({start}, {end}) is not within text {i} (0..{len(text)})")
            row.append((start, end))
        if not row:
            raise SbertError(f"chunks[{i}] is empty: give text {i} at least one span")
        out.append(row)
    return out


def chunked_documents(model: Any, sentences: str | Iterable[str], options: dict[str, Any]) -> list[np.ndarray]:
    """`encode_document(texts, chunks=...)`: the prompt its task, prompt_name or prompt picks, then `late_chunks`."""
    texts, _ = check_sentences(sentences)
    chunks = options.pop("chunks")
    plan = model.prompt_plan(task=options.pop("task", "document"), prompt_name=options.pop("prompt_name", None),
                             prompt=options.pop("prompt", None))  # fmt: skip
    if options:
        raise SbertError(f"late chunking (chunks=) takes no {', '.join(sorted(options))}")
    return late_chunks(model, texts, chunks, plan.text)


def late_chunks(model: Any, texts: Sequence[str], chunks: Sequence[Sequence[Span]], prompt: str) -> list[np.ndarray]:
    """Per text, float32 (n_chunks, dim): its chunks' vectors from one pass over it (windows past the limit)."""
    spans = check_spans(texts, chunks)
    transformer = model.transformer
    chain = list(model.chain())
    cut = next((i for i, m in enumerate(chain) if isinstance(m, Pooling)), None)
    if cut is None:
        raise SbertError("late chunking needs a model with a Pooling module (it pools token vectors)")
    layout = Specials(transformer.tokenizer)
    prompt_ids = prompt_ids_of(transformer.tokenizer, prompt)
    capacity = transformer.max_seq_length - layout.count - len(prompt_ids)
    if capacity < 1:
        raise SbertError(f"the prompt fills the model's {transformer.max_seq_length} tokens: no room for the text")
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            return [_one_text(model, chain, cut, layout, prompt, prompt_ids, capacity, text, row, i)
                    for i, (text, row) in enumerate(zip(texts, spans, strict=True))]  # fmt: skip
    finally:
        model.train(was_training)


class Specials:
    """The special tokens a tokenizer puts around one text's ids ([CLS] ... [SEP], <s> ... </s>), read by a probe."""

    def __init__(self, tokenizer: Any) -> None:
        bare = list(tokenizer("a", add_special_tokens=False)["input_ids"])
        full = list(tokenizer("a")["input_ids"])
        before = next((i for i in range(len(full) - len(bare) + 1) if full[i : i + len(bare)] == bare), None)
        if before is None:
            raise SbertError("late chunking: this tokenizer's special tokens do not wrap a text's own tokens")
        self.tokenizer, self.before = tokenizer, before
        self.prefix, self.suffix = full[:before], full[before + len(bare) :]
        self.count = len(self.prefix) + len(self.suffix)

    def wrap(self, ids: list[int]) -> list[int]:
        """The content ids with the special tokens around them."""
        return [*self.prefix, *ids, *self.suffix]


def prompt_ids_of(tokenizer: Any, prompt: str) -> list[int]:
    """The prompt's own token ids (no special tokens)."""
    return list(tokenizer(prompt, add_special_tokens=False)["input_ids"]) if prompt else []


def _one_text(
    model: Any, chain: list[Any], cut: int, layout: Specials, prompt: str, prompt_ids: list[int], capacity: int,
    text: str, spans: list[Span], index: int,
) -> np.ndarray:  # fmt: skip
    """One text's chunk vectors."""
    whole = prompt + text
    if getattr(model.transformer, "do_lower_case", False):  # as token_ids reads the text
        whole = whole.lower()
    encoded = layout.tokenizer(whole, add_special_tokens=False, return_offsets_mapping=True)
    pairs = [(t, s - len(prompt)) for t, (s, _) in zip(encoded["input_ids"], encoded["offset_mapping"], strict=True)
             if s >= len(prompt)]  # fmt: skip
    ids, starts = [t for t, _ in pairs], np.asarray([s for _, s in pairs], dtype=np.int64)
    vectors = _token_vectors(model, chain[:cut], layout, prompt_ids, ids, capacity)
    means = []
    for k, (start, end) in enumerate(spans):
        inside = (starts >= start) & (starts < end)
        if not inside.any():
            raise SbertError(f"chunks[{index}][{k}] = ({start}, {end}) holds no token of text {index}")
        means.append(vectors[torch.from_numpy(inside).to(vectors.device)].mean(dim=0))
    features: dict[str, torch.Tensor] = {"sentence_embedding": torch.stack(means)}
    for module in chain[cut + 1 :]:
        features = module(features)
    return features["sentence_embedding"].float().cpu().numpy()


def _token_vectors(
    model: Any, token_chain: list[Any], layout: Specials, prompt_ids: list[int], ids: list[int], capacity: int
) -> torch.Tensor:
    """(len(ids), dim): each text token's vector, from the window where it has the most context."""
    starts = window_starts(len(ids), capacity)
    rows = [layout.wrap(prompt_ids + ids[s : s + capacity]) for s in starts]
    first = layout.before + len(prompt_ids)  # where a window's text tokens begin
    owner = best_window(len(ids), starts, capacity)
    out: torch.Tensor | None = None
    for b in range(0, len(rows), WINDOW_BATCH):
        features = {k: v.to(model.device) for k, v in model.input_module.pad(rows[b : b + WINDOW_BATCH]).items()}
        for module in token_chain:
            features = module(features)
        tokens, mask = features["token_embeddings"], features["attention_mask"]
        out = out if out is not None else tokens.new_zeros((len(ids), tokens.shape[-1]))
        for w in range(b, min(b + WINDOW_BATCH, len(rows))):
            real = torch.nonzero(mask[w - b]).flatten()  # the row's own positions, whichever side pads
            mine = np.flatnonzero(owner == w)
            if len(mine):
                positions = real[torch.from_numpy(first + mine - starts[w]).to(real.device)]
                out[torch.from_numpy(mine).to(out.device)] = tokens[w - b, positions].to(out.dtype)
    assert out is not None or not ids
    return out if out is not None else torch.zeros((0, 1))


def window_starts(n: int, capacity: int) -> list[int]:
    """First token of each window: one when the text fits, else windows overlapping by half, the last at the end."""
    if n <= capacity:
        return [0]
    step = max(capacity // 2, 1)
    starts = list(range(0, n - capacity, step))
    return [*starts, n - capacity]


def best_window(n: int, starts: list[int], capacity: int) -> np.ndarray:
    """For each token, the window where it is farthest from either edge (the first such window on a tie)."""
    position = np.arange(n)[:, None]
    begin = np.asarray(starts)[None, :]
    inside = (position >= begin) & (position < begin + capacity)
    margin = np.where(inside, np.minimum(position - begin, begin + capacity - 1 - position), -1)
    return np.argmax(margin, axis=1)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentence_spans(text: str) -> list[Span]:
    """(start, end) of each sentence of `text` (split after . ! ? and whitespace), empty pieces left out."""
    spans, start = [], 0
    for end in [m.start() for m in _SENTENCE_END.finditer(text)] + [len(text)]:
        piece = text[start:end]
        if piece.strip():
            spans.append((start + len(piece) - len(piece.lstrip()), start + len(piece.rstrip())))
        match = _SENTENCE_END.match(text, end)
        start = match.end() if match else end
    return spans


def token_budget_spans(tokenizer: Any, text: str, max_tokens: int) -> list[Span]:
    """(start, end) of consecutive pieces of `text` holding at most `max_tokens` tokens each."""
    if max_tokens < 1:
        raise SbertError(f"max_tokens must be >= 1, got {max_tokens}")
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    spans = []
    for i in range(0, len(offsets), max_tokens):
        piece = offsets[i : i + max_tokens]
        end = offsets[i + max_tokens][0] if i + max_tokens < len(offsets) else len(text)
        spans.append((piece[0][0], end))
    return spans
