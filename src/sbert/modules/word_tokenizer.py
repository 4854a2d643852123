"""The word-level tokenizer of sentence-transformers' WordEmbeddings models: whitespace, then a vocabulary lookup.

A text is split on whitespace; each piece is looked up as it is, then with its surrounding punctuation
stripped, then lower-cased, and dropped when it is a stop word or not in the vocabulary at any of the three
steps (so a word embedding table such as GloVe 6B's, lower-case only, still finds "The" as "the"). The saved
layout is the reference's `whitespacetokenizer_config.json` (vocab, stop_words, do_lower_case).
"""

from __future__ import annotations

import string
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Self

from sbert.errors import ModelFormatError
from sbert.formats.layout import read_json, write_json

CONFIG_FILE = "whitespacetokenizer_config.json"
# What sentence-transformers 6 writes as a WordEmbeddings' `tokenizer_class` (it reads its older paths too).
TOKENIZER_CLASS = "sentence_transformers.sentence_transformer.modules.tokenizer.whitespace.WhitespaceTokenizer"

# The stop words the reference's WhitespaceTokenizer drops by default (its ENGLISH_STOP_WORDS): English function
# words with the fragments contractions split into, ASCII punctuation, and the two quote tokens of PTB-style text.
# A model built here with the default tokenizer must drop the same words to give the same vectors (tested).
_WORDS = (
    "a about above across after afterwards again against ain all almost alone along already also although always "
    "am among amongst amoungst amount an and another any anyhow anyone anything anyway anywhere are aren around "
    "as at back be became because become becomes becoming been before beforehand behind being below beside "
    "besides between beyond bill both bottom but by call can cannot cant co con could couldn couldnt cry d de "
    "describe detail did didn do does doesn doing don done down due during each eg eight either eleven else "
    "elsewhere empty enough etc even ever every everyone everything everywhere except few fifteen fifty fill find "
    "fire first five for former formerly forty found four from front full further get give go had hadn has hasn "
    "hasnt have haven having he hence her here hereafter hereby herein hereupon hers herself him himself his how "
    "however hundred i ie if in inc indeed interest into is isn it its itself just keep last latter latterly "
    "least less ll ltd m ma made many may me meanwhile might mightn mill mine more moreover most mostly move much "
    "must mustn my myself name namely needn neither never nevertheless next nine no nobody none noone nor not "
    "nothing now nowhere o of off often on once one only onto or other others otherwise our ours ourselves out "
    "over own part per perhaps please put rather re s same see seem seemed seeming seems serious several shan she "
    "should shouldn show side since sincere six sixty so some somehow someone something sometime sometimes "
    "somewhere still such system t take ten than that the their theirs them themselves then thence there "
    "thereafter thereby therefore therein thereupon these they thick thin third this those though three through "
    "throughout thru thus to together too top toward towards twelve twenty two un under until up upon us ve very "
    "via was wasn we well were weren what whatever when whence whenever where whereafter whereas whereby wherein "
    "whereupon wherever whether which while whither who whoever whole whom whose why will with within without won "
    "would wouldn y yet you your yours yourself yourselves "
)
ENGLISH_STOP_WORDS = frozenset(_WORDS.split()) | frozenset(string.punctuation) | {"``", "''"}


class WhitespaceTokenizer:
    """Splits on whitespace and maps each known, non-stop word to its vocabulary index (module docstring)."""

    def __init__(self, vocab: Iterable[str] = (), stop_words: Iterable[str] = ENGLISH_STOP_WORDS,
                 do_lower_case: bool = False) -> None:  # fmt: skip
        self.stop_words = set(stop_words)
        self.do_lower_case = do_lower_case
        self.set_vocab(vocab)

    def get_vocab(self) -> list[str]:
        """The vocabulary, index order."""
        return self.vocab

    def set_vocab(self, vocab: Iterable[str]) -> None:
        """Replace the vocabulary (a word's index is its place in it; a repeated word keeps its last place)."""
        self.vocab = list(vocab)
        self.word2idx = {word: index for index, word in enumerate(self.vocab)}

    def tokenize(self, text: str, **kwargs: Any) -> list[int]:
        """The vocabulary indices of `text`'s known, non-stop words, in order."""
        if self.do_lower_case:
            text = text.lower()
        ids = []
        for piece in text.split():
            index = self._lookup(piece)
            if index is not None:
                ids.append(index)
        return ids

    def _lookup(self, piece: str) -> int | None:
        """The piece as it is, stripped of punctuation, then that lower-cased: the first step that decides it."""
        stripped = piece.strip(string.punctuation)
        for word, may_be_empty in ((piece, True), (stripped, False), (stripped.lower(), True)):
            if word in self.stop_words:
                return None
            if (word or may_be_empty) and word in self.word2idx:
                return self.word2idx[word]
        return None

    def save(self, output_path: str | Path) -> None:
        """Write whitespacetokenizer_config.json into the folder."""
        config = {
            "vocab": list(self.word2idx),
            "stop_words": sorted(self.stop_words),
            "do_lower_case": self.do_lower_case,
        }
        write_json(Path(output_path) / CONFIG_FILE, config)

    @classmethod
    def load(cls, input_path: str | Path) -> Self:
        """Read whitespacetokenizer_config.json from the folder."""
        path = Path(input_path) / CONFIG_FILE
        if not path.is_file():
            raise ModelFormatError(f"{path}: missing (a WordEmbeddings module needs its tokenizer's vocabulary)")
        config = read_json(path)
        if not isinstance(config, dict) or not isinstance(config.get("vocab"), list):
            raise ModelFormatError(f"{path}: expected an object with a 'vocab' list")
        return cls(config["vocab"], config.get("stop_words", ENGLISH_STOP_WORDS), bool(config.get("do_lower_case")))


__all__ = ["ENGLISH_STOP_WORDS", "WhitespaceTokenizer"]

# A package to the import system, so the reference's one-class paths under it resolve (sbert/legacy_paths.py).
__path__: list[str] = []
