"""Hard-negative mining: corpus texts the model ranks high for an anchor that are not its positive.

They become training rows for in-batch-negative objectives (mnrl, cached-mnrl).

Candidates are the corpus texts at ranks [rank_min, rank_max) of an exact cosine search with the
anchor (query prompt) against the corpus (document prompt); by default the corpus is the set of
positives. False-negative guard: a candidate scoring within `margin` of the positive, or above
`max_score`, is dropped (it may well be another right answer). A cross-encoder, when given,
rescores the kept candidates and the positive, and the guard then reads its scores. The first
`negatives` survivors, best ranked first, become the pair's negatives.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from sbert.errors import SbertError
from sbert.formats.layout import write_json_atomic
from sbert.search.exact import semantic_search
from sbert.similarity import pairwise_similarity

Rescore = Callable[[list[tuple[str, str]]], np.ndarray]  # (query, text) pairs -> scores


@dataclass(frozen=True)
class MiningSettings:
    """Which candidates count as hard negatives."""

    rank_min: int = 0  # skip the first ranks (near-duplicates of the positive live there)
    rank_max: int = 50  # look no further down the ranking
    margin: float | None = 0.05  # drop candidates scoring above positive score - margin
    max_score: float | None = None  # drop candidates scoring above this
    negatives: int = 1  # per pair
    block: int = 4096  # pairs per resumable block

    def check(self, corpus_size: int) -> None:
        """One-line errors for a window the corpus cannot fill or settings that select nothing."""
        if corpus_size == 0:
            raise SbertError("mining needs a corpus: it is empty")
        if not 0 <= self.rank_min < self.rank_max:
            raise SbertError(f"rank window [{self.rank_min}, {self.rank_max}) is empty; need 0 <= min < max")
        if self.rank_min >= corpus_size:
            raise SbertError(f"rank window starts at {self.rank_min}, beyond the corpus of {corpus_size} texts")
        if self.negatives < 1 or self.block < 1:
            raise SbertError("negatives and block must be at least 1")


def pick_negatives(
    anchor: str, positive: str, candidates: Sequence[tuple[float, str]], positive_score: float, settings: MiningSettings
) -> list[str]:
    """The first `negatives` candidates (best ranked first) that are neither the pair's texts nor too close."""
    ceiling = positive_score - settings.margin if settings.margin is not None else float("inf")
    if settings.max_score is not None:
        ceiling = min(ceiling, settings.max_score)
    picked: list[str] = []
    for score, text in candidates:
        if text in (anchor, positive) or score > ceiling or text in picked:
            continue
        picked.append(text)
        if len(picked) == settings.negatives:
            break
    return picked


def mine_block(
    model: Any, pairs: Sequence[tuple[str, str]], corpus: Sequence[str], corpus_vectors: np.ndarray,
    settings: MiningSettings, rescore: Rescore | None = None,
) -> list[tuple[str, str, list[str]]]:  # fmt: skip
    """(anchor, positive, negatives) for each pair of one block; pairs without a negative are left out."""
    anchors = _encode(model, "encode_query", [a for a, _ in pairs])
    positives = _encode(model, "encode_document", [p for _, p in pairs])
    positive_scores = pairwise_similarity(anchors, positives, "cosine")
    scores, rows = semantic_search(anchors, corpus_vectors, settings.rank_max)
    out = []
    for i, (anchor, positive) in enumerate(pairs):
        window = [(float(s), corpus[r]) for s, r in zip(scores[i], rows[i], strict=True)][settings.rank_min :]
        best = float(positive_scores[i])
        if rescore is not None and window:
            judged = rescore([(anchor, positive)] + [(anchor, text) for _, text in window])
            best, window = float(judged[0]), list(zip(judged[1:].tolist(), (t for _, t in window), strict=True))
        negatives = pick_negatives(anchor, positive, window, best, settings)
        if negatives:
            out.append((anchor, positive, negatives))
    return out


def _encode(model: Any, method: str, texts: list[str]) -> np.ndarray:
    encode = getattr(model, method, model.encode)  # the model's query / document prompt, if any
    return np.asarray(encode(texts, show_progress=False), dtype=np.float32)


def mining_rows(mined: tuple[str, str, list[str]], n_tuple: bool, wanted: int = 1) -> list[dict[str, str]]:
    """JSON rows the `triplets:` reader takes: one per negative, or one n-tuple (negative_1..k).

    An n-tuple row needs all `wanted` negatives (the reader wants as many in every row, as
    in-batch losses do): a pair the guard left with fewer gives no n-tuple row.
    """
    anchor, positive, negatives = mined
    if n_tuple and len(negatives) < wanted:
        return []
    if n_tuple:
        return [{"anchor": anchor, "positive": positive, **{f"negative_{k + 1}": n for k, n in enumerate(negatives)}}]
    return [{"anchor": anchor, "positive": positive, "negative": n} for n in negatives]


def mine_to_file(
    model: Any, pairs: Sequence[tuple[str, str]], corpus: Sequence[str] | None, output: Path,
    settings: MiningSettings, rescore: Rescore | None = None, n_tuple: bool = False,
) -> dict[str, int]:  # fmt: skip
    """Mine every pair into `output` (jsonl), block by block; a rerun after a kill resumes at the last block.

    Finished blocks go to OUTPUT.partial with their count in OUTPUT.progress (written atomically,
    with what the rows were mined with: model, prompts, pairs, corpus, settings, rescorer); the output
    appears (renamed in one step) only when every block is done. A rerun with anything else is refused.
    """
    texts = list(dict.fromkeys(p for _, p in pairs)) if corpus is None else list(corpus)
    settings.check(len(texts))
    partial, progress = output.with_name(output.name + ".partial"), output.with_name(output.name + ".progress")
    mined_with = mining_fingerprint(model, pairs, texts, settings, rescore, n_tuple)
    done = _resume_point(partial, progress, len(pairs), mined_with)
    vectors = _encode(model, "encode_document", texts)
    counts = {"pairs": len(pairs), "rows": 0, "without_negative": 0, "short": 0}
    bar = tqdm(total=len(pairs), initial=done, unit="pair", desc="mining")  # on stderr
    with bar, partial.open("a", encoding="utf-8") as f:
        for start in range(done, len(pairs), settings.block):
            block = pairs[start : start + settings.block]
            mined = mine_block(model, block, texts, vectors, settings, rescore)
            rows = [mining_rows(m, n_tuple, settings.negatives) for m in mined]
            f.writelines(json.dumps(row) + "\n" for group in rows for row in group)
            f.flush()
            state = {"pairs_done": start + len(block), "total": len(pairs), "bytes": f.tell(), "mined_with": mined_with}
            write_json_atomic(progress, state)
            counts["without_negative"] += len(block) - len(mined)
            counts["short"] += sum(1 for group in rows if not group)
            bar.update(len(block))
    partial.replace(output)
    progress.unlink(missing_ok=True)
    with output.open(encoding="utf-8") as f:
        counts["rows"] = sum(1 for _ in f)
    return counts


def mining_fingerprint(
    model: Any, pairs: Sequence[tuple[str, str]], texts: Sequence[str], settings: MiningSettings,
    rescore: Rescore | None, n_tuple: bool,
) -> dict[str, Any]:  # fmt: skip
    """What decides the mined rows: a resumed run must have the same, key for key."""
    digest = getattr(model, "weights_digest", None)
    prompts = getattr(model, "prompt_plan", None)
    scorer = getattr(rescore, "__self__", None)
    scorer_digest = getattr(scorer, "weights_digest", None)
    return {
        "model": digest() if callable(digest) else type(model).__qualname__,
        "prompts": [prompts(task=t).text for t in ("query", "document")] if callable(prompts) else [],
        "pairs": _texts_digest(t for pair in pairs for t in pair),
        "corpus": _texts_digest(texts),
        "settings": asdict(settings),
        "n_tuple": n_tuple,
        "rescore": None if rescore is None else scorer_digest() if callable(scorer_digest) else repr(rescore),
    }


def _texts_digest(texts: Iterable[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:  # length first: ("ab", "c") and ("a", "bc") differ
        digest.update(f"{len(text)}:".encode())
        digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _resume_point(partial: Path, progress: Path, total: int, mined_with: dict[str, Any]) -> int:
    """Pairs already mined by an interrupted run (0 for a fresh one; its leftovers are cleared).

    Rows written after the last recorded block (a kill between the write and the record) are cut off.
    An interrupted run made with another model, data or settings is refused, not appended to.
    """
    if partial.is_file() and progress.is_file():
        try:
            state = json.loads(progress.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise SbertError(f"{progress}: unreadable; delete it and {partial.name} to mine afresh") from None
        found = state.get("mined_with", {})
        changed = [key for key in mined_with if found.get(key) != mined_with[key]]
        if changed:
            raise SbertError(
                f"{partial}: an interrupted run mined it with another {', '.join(changed)}; rerun it as it was, "
                f"or delete {partial.name} and {progress.name} to mine afresh"
            )
        with partial.open("r+b") as f:
            f.truncate(int(state["bytes"]))
        return int(state["pairs_done"])
    partial.unlink(missing_ok=True)
    progress.unlink(missing_ok=True)
    return 0


def anchor_positive_pairs(dataset: Any) -> list[tuple[str, str]]:
    """(anchor, positive) pairs of a dataset: pairs and triplets as they are, NLI pairs labelled entailment."""
    if dataset.kind in ("pair", "triplet"):
        return [(t[0], t[1]) for t in dataset.texts]
    if dataset.kind == "pair-class" and "entailment" in dataset.label_names:
        keep = dataset.label_names.index("entailment")
        return [(a, b) for (a, b), y in zip(dataset.texts, dataset.labels, strict=True) if y == keep]
    raise SbertError(f"{dataset.name}: mining needs (anchor, positive) pairs: pairs:, triplets: or nli: data")
