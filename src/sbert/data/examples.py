"""sentence-transformers' legacy training data: `InputExample` (texts in column order, a label) and its datasets."""

from __future__ import annotations

import gzip
import random
from dataclasses import dataclass
from typing import Any


@dataclass
class InputExample:
    """One training example: its texts in column order and its label (0 when it has none)."""

    guid: str = ""
    texts: list[str] | None = None
    label: int | float = 0

    def __str__(self) -> str:
        return f"<InputExample> label: {self.label}, texts: {'; '.join(self.texts or [])}"


class SentencesDataset:
    """sentence-transformers' legacy wrapper of a list of InputExamples (the model argument is not used)."""

    def __init__(self, examples: list[InputExample], model: Any = None) -> None:
        self.examples = examples

    def __getitem__(self, item: int) -> InputExample:
        return self.examples[item]

    def __len__(self) -> int:
        return len(self.examples)


class ParallelSentencesDataset:
    """Multilingual distillation data (Reimers & Gurevych 2020): translations labelled with teacher vectors.

    Each translation's label is the teacher's vector of its source sentence, for `MSELoss` on the student.
    `load_data(path)` reads tab-separated lines (source first, then its translations; .gz too);
    `add_dataset(rows)` takes them in memory. `weight` sets how often a set is drawn per pass.
    """

    def __init__(self, student_model: Any, teacher_model: Any, batch_size: int = 8,
                 use_embedding_cache: bool = True) -> None:  # fmt: skip
        self.student_model, self.teacher_model = student_model, teacher_model
        self.batch_size, self.use_embedding_cache = batch_size, use_embedding_cache
        self.datasets: list[list[tuple[str, set[str]]]] = []
        self.datasets_iterator: list[int] = []
        self.dataset_indices: list[int] = []
        self.cache: list[InputExample] = []
        self.embedding_cache: dict[str, Any] = {}
        self.num_sentences = 0

    def load_data(self, filepath: str, weight: int = 100, max_sentences: int | None = None,
                  max_sentence_length: int = 128) -> None:  # fmt: skip
        """Read one tab-separated file of parallel sentences (a .gz file is read compressed)."""
        opener = gzip.open if filepath.endswith(".gz") else open
        with opener(filepath, "rt", encoding="utf8") as lines:
            rows = [line.strip().split("\t") for line in lines]
        self.add_dataset(rows, weight, max_sentences, max_sentence_length)

    def add_dataset(self, parallel_sentences: list[list[str]], weight: int = 100, max_sentences: int | None = None,
                    max_sentence_length: int = 128) -> None:  # fmt: skip
        """Add rows (source, translations...); a row with a sentence over `max_sentence_length` chars is skipped."""
        by_source: dict[str, set[str]] = {}
        for row in parallel_sentences:
            if max_sentence_length and max_sentence_length > 0 and max(len(s) for s in row) > max_sentence_length:
                continue
            by_source.setdefault(row[0], set()).update(row)
            if max_sentences and len(by_source) >= max_sentences:
                break
        if not by_source:
            return
        self.num_sentences += sum(len(targets) for targets in by_source.values())
        self.dataset_indices.extend([len(self.datasets)] * weight)
        self.datasets.append(list(by_source.items()))
        self.datasets_iterator.append(0)

    def _next(self, index: int) -> tuple[str, set[str]]:
        rows = self.datasets[index]
        entry = rows[self.datasets_iterator[index]]
        self.datasets_iterator[index] += 1
        if self.datasets_iterator[index] >= len(rows):  # a pass over the set ends: start again, reshuffled
            self.datasets_iterator[index] = 0
            random.shuffle(rows)
        return entry

    def _teacher(self, sentences: list[str]) -> list[Any]:
        new = [s for s in dict.fromkeys(sentences) if not self.use_embedding_cache or s not in self.embedding_cache]
        if new:
            vectors = self.teacher_model.encode(new, batch_size=self.batch_size, show_progress_bar=False,
                                                convert_to_numpy=True)  # fmt: skip
            self.embedding_cache.update(zip(new, vectors, strict=True))
        out = [self.embedding_cache[s] for s in sentences]
        if not self.use_embedding_cache:
            self.embedding_cache.clear()
        return out

    def generate_data(self) -> None:
        """Draw one source per weight unit, and queue each of its translations with the source's teacher vector."""
        entries = [self._next(i) for i in self.dataset_indices]
        vectors = self._teacher([source for source, _ in entries])
        for (_, targets), vector in zip(entries, vectors, strict=True):
            self.cache.extend(InputExample(texts=[target], label=vector) for target in targets)
        random.shuffle(self.cache)

    def __len__(self) -> int:
        return self.num_sentences

    def __getitem__(self, idx: int) -> InputExample:
        if idx >= len(self):
            raise IndexError(idx)
        if not self.cache:
            self.generate_data()
        return self.cache.pop()
