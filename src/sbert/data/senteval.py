"""Readers for the SentEval transfer tasks (paper Table 5): MR, CR, SUBJ, MPQA, SST-2, TREC, MRPC.

Each returns a TransferTask: labelled sentences (or sentence pairs for MRPC) and either one pool
for 10-fold cross-validation (MR, CR, SUBJ, MPQA) or the given train/dev/test splits (SST-2,
TREC, MRPC). File layouts are SentEval's `data/downstream/<TASK>/` ones.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from sbert.data.common import DataFormatError, read_lines

log = logging.getLogger(__name__)
Examples = tuple[list[tuple[str, ...]], list[int]]  # texts (1 or 2 per example), class ids


@dataclass(frozen=True)
class TransferTask:
    """A classification task: `pool` for k-fold CV, or train/test (and dev) splits."""

    name: str
    classes: tuple[str, ...]
    pool: Examples | None = None
    train: Examples | None = None
    dev: Examples | None = None
    test: Examples | None = None

    @property
    def pairs(self) -> bool:
        """Whether examples are sentence pairs (MRPC)."""
        first = self.pool or self.train
        return bool(first and first[0] and len(first[0][0]) == 2)

    def size(self) -> int:
        """Examples over all parts."""
        return sum(len(part[1]) for part in (self.pool, self.train, self.dev, self.test) if part)


def senteval_lines(path: Path) -> list[str]:
    """A task file's lines as SentEval reads them: UTF-8, else Latin-1 (as SentEval always does).

    SentEval opens MR, CR, SUBJ, MPQA and TREC as Latin-1; TREC's train_5500.label is not valid
    UTF-8 (line 66). UTF-8 is tried first so that a user's own UTF-8 files keep their accents.
    """
    if not path.is_file():
        raise DataFormatError(f"{path}: no such file")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        log.info("%s: not valid UTF-8 (line %d); read as Latin-1, as SentEval does", path, line)
        text = raw.decode("latin-1")
    return text.removeprefix("\ufeff").splitlines()


def _sentences(path: Path) -> list[str]:
    # Blank lines stay, as empty sentences: SentEval counts them (CR 3,775 and MPQA 10,606 examples).
    return [" ".join(line.split()) for line in senteval_lines(path)]


def read_binary(name: str, positive: Path, negative: Path) -> TransferTask:
    """Two files, one sentence per line: MR (rt-polarity.pos/neg), CR, MPQA, SUBJ (objective = 0)."""
    pos, neg = _sentences(positive), _sentences(negative)
    if not pos or not neg:
        raise DataFormatError(f"{positive if not pos else negative}: no sentences")
    texts: list[tuple[str, ...]] = [(s,) for s in neg + pos]
    return TransferTask(name, ("negative", "positive"), pool=(texts, [0] * len(neg) + [1] * len(pos)))


def read_sentence_labels(path: Path) -> Examples:
    """`sentence<TAB>label` per line (SST-2); labels are integers."""
    texts: list[tuple[str, ...]] = []
    labels: list[int] = []
    for line_no, line in read_lines(path):
        if not line.strip():
            continue
        sentence, sep, label = line.rstrip().rpartition("\t")
        if not sep or not label.strip().lstrip("-").isdigit():
            raise DataFormatError(f"{path}:{line_no}: expected sentence<TAB>integer label")
        texts.append((sentence.strip(),))
        labels.append(int(label))
    return texts, labels


def read_trec_file(path: Path, classes: dict[str, int]) -> Examples:
    """`LABEL:fine question text` per line; the coarse label (before ':') is the class."""
    texts: list[tuple[str, ...]] = []
    labels: list[int] = []
    for line_no, raw in enumerate(senteval_lines(path), start=1):
        line = raw.strip()
        if not line:
            continue
        head, _, question = line.partition(" ")
        coarse, colon, _fine = head.partition(":")
        if not colon or not question:
            raise DataFormatError(f"{path}:{line_no}: expected LABEL:fine question text")
        texts.append((question,))
        labels.append(classes.setdefault(coarse, len(classes)))
    return texts, labels


def read_mrpc_file(path: Path) -> Examples:
    """MRPC tsv with header `Quality #1 ID #2 ID #1 String #2 String`."""
    texts: list[tuple[str, ...]] = []
    labels: list[int] = []
    lines = read_lines(path)
    header = next(lines, (1, ""))[1].lstrip("\ufeff").split("\t")
    if len(header) < 5 or header[0].strip() != "Quality":
        raise DataFormatError(f"{path}:1: expected the header Quality, #1 ID, #2 ID, #1 String, #2 String")
    for line_no, line in lines:
        cols = line.split("\t")
        if not line.strip():
            continue
        if len(cols) != 5 or cols[0].strip() not in {"0", "1"}:
            raise DataFormatError(f"{path}:{line_no}: expected 5 tab-separated columns with quality 0 or 1")
        texts.append((cols[3], cols[4]))
        labels.append(int(cols[0]))
    return texts, labels


def _first(folder: Path, *names: str) -> Path:
    for name in names:
        if (folder / name).is_file():
            return folder / name
    raise DataFormatError(f"{folder}: none of {', '.join(names)}")


def read_task(name: str, folder: Path) -> TransferTask:
    """One SentEval task from its folder, by the task's upper-case name."""
    readers = {
        "MR": lambda: read_binary("MR", folder / "rt-polarity.pos", folder / "rt-polarity.neg"),
        "CR": lambda: read_binary("CR", folder / "custrev.pos", folder / "custrev.neg"),
        "MPQA": lambda: read_binary("MPQA", folder / "mpqa.pos", folder / "mpqa.neg"),
        "SUBJ": lambda: read_binary("SUBJ", folder / "subj.subjective", folder / "subj.objective"),
        "SST2": lambda: _sst2(folder),
        "TREC": lambda: _trec(folder),
        "MRPC": lambda: _mrpc(folder),
    }
    if name not in readers:
        raise DataFormatError(f"unknown transfer task {name!r}; known: {', '.join(readers)}")
    return readers[name]()


def _sst2(folder: Path) -> TransferTask:
    # SentEval keeps SST-2 under SST/binary/; ../shared/data/sst2 has the same three files.
    base = folder / "binary" if (folder / "binary").is_dir() else folder
    parts = {split: read_sentence_labels(_first(base, f"sentiment-{split}")) for split in ("train", "dev", "test")}
    return TransferTask("SST2", ("negative", "positive"), train=parts["train"], dev=parts["dev"], test=parts["test"])


def _trec(folder: Path) -> TransferTask:
    classes: dict[str, int] = {}
    train = read_trec_file(_first(folder, "train_5500.label", "train.label"), classes)
    test = read_trec_file(_first(folder, "TREC_10.label", "test.label"), classes)
    return TransferTask("TREC", tuple(classes), train=train, test=test)


def _mrpc(folder: Path) -> TransferTask:
    train = read_mrpc_file(_first(folder, "msr_paraphrase_train.txt"))
    test = read_mrpc_file(_first(folder, "msr_paraphrase_test.txt"))
    return TransferTask("MRPC", ("not paraphrase", "paraphrase"), train=train, test=test)


TASK_FOLDERS = {"MR": "MR", "CR": "CR", "SUBJ": "SUBJ", "MPQA": "MPQA", "SST2": "SST", "TREC": "TREC", "MRPC": "MRPC"}


def read_transfer_dir(root: Path) -> list[TransferTask]:
    """Every task present under a SentEval `data/downstream` folder (a folder holding SST-2 files counts as SST2)."""
    if not root.is_dir():
        raise DataFormatError(f"{root}: not a directory")
    if (root / "sentiment-train").is_file():
        return [_sst2(root)]
    found = [read_task(task, root / folder) for task, folder in TASK_FOLDERS.items() if (root / folder).is_dir()]
    if not found:
        raise DataFormatError(f"{root}: no SentEval task folders ({', '.join(TASK_FOLDERS.values())})")
    return found
