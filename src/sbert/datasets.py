"""sentence-transformers 6.2's `sentence_transformers.datasets`: the legacy `fit` data classes, on sbert's.

`model.fit` (and `old_fit`) reads a loader's examples into a table for sbert's training engine
(compat/fit.py); a `NoDuplicatesDataLoader` there asks for batches without a text twice, as in 6.2.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

import numpy as np

from sbert.data.examples import InputExample, ParallelSentencesDataset, SentencesDataset


class NoDuplicatesDataLoader:
    """Batches of InputExamples in which no text appears twice (in-batch negatives); shuffled each pass as 6.2's."""

    def __init__(self, train_examples: list[InputExample], batch_size: int) -> None:
        self.batch_size = batch_size
        self.data_pointer = 0
        self.collate_fn = None
        self.train_examples = list(train_examples)
        self.dataset = self.train_examples  # what sbert's fit reads: the examples themselves
        random.shuffle(self.train_examples)

    def __iter__(self) -> Iterator[list[InputExample]]:
        for _ in range(len(self)):
            batch: list[InputExample] = []
            texts: set[str] = set()
            for _ in range(2 * len(self.train_examples) + 1):
                if len(batch) == self.batch_size:
                    break
                example = self.train_examples[self.data_pointer]
                if not texts.intersection(t.strip().lower() for t in example.texts or []):
                    batch.append(example)
                    texts.update(t.strip().lower() for t in example.texts or [])
                self.data_pointer += 1
                if self.data_pointer >= len(self.train_examples):
                    self.data_pointer = 0
                    random.shuffle(self.train_examples)
            if len(batch) < self.batch_size:  # 6.2 would loop forever here
                raise ValueError(f"NoDuplicatesDataLoader: fewer than batch_size={self.batch_size} examples without a "
                                 "text in common")  # fmt: skip
            yield batch

    def __len__(self) -> int:
        return len(self.train_examples) // self.batch_size


class DenoisingAutoEncoderDataset:
    """TSDAE's data: each sentence as InputExample(texts=[noise_fn(sentence), sentence]) (damaged, original)."""

    def __init__(self, sentences: list[str], noise_fn: Callable[[str], str] | None = None) -> None:
        self.sentences = sentences
        self.noise_fn = noise_fn or DenoisingAutoEncoderDataset.delete

    def __getitem__(self, item: int) -> InputExample:
        sentence = self.sentences[item]
        return InputExample(texts=[self.noise_fn(sentence), sentence])

    def __len__(self) -> int:
        return len(self.sentences)

    @staticmethod
    def delete(text: str, del_ratio: float = 0.6) -> str:
        """Each word dropped with probability `del_ratio` (numpy's global RNG), at least one kept.

        Words are whitespace-separated and rejoined with single spaces: 6.2 splits and rejoins with
        nltk's Treebank tokenizer, whose data is a download (this needs none).
        """
        words = text.split()
        if not words:
            return text
        keep = np.random.rand(len(words)) > del_ratio
        if not keep.any():
            keep[np.random.choice(len(words))] = True
        return " ".join(w for w, k in zip(words, keep, strict=True) if k)


__all__ = [
    "DenoisingAutoEncoderDataset",
    "InputExample",
    "NoDuplicatesDataLoader",
    "ParallelSentencesDataset",
    "SentencesDataset",
]

# A package to the import system, so the reference's legacy one-class paths under it resolve (sbert/legacy_paths.py).
__path__: list[str] = []
