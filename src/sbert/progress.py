"""Whether transformers' own progress bars show while sbert reads or writes weights: one policy.

transformers 5 draws a "Loading weights" bar on every `from_pretrained` and a "Writing model shards"
bar on every `save_pretrained`: noise on each load and save of a library call, a CLI command or a
server start. They show only when the `sbert` logger is at INFO (`sbert --verbose`, or
`logging.getLogger("sbert").setLevel(logging.INFO)`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


def weight_bars_wanted() -> bool:
    """True where the user asked for loading details (the sbert logger at INFO or below)."""
    return logging.getLogger("sbert").isEnabledFor(logging.INFO)


@contextmanager
def weight_bars() -> Iterator[None]:
    """Transformers' weight bars on or off for the block (by `weight_bars_wanted`), restored after it."""
    from transformers.utils import logging as hf_logging

    was = hf_logging.is_progress_bar_enabled()
    if weight_bars_wanted():
        hf_logging.enable_progress_bar()
    else:
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            hf_logging.enable_progress_bar()
        else:
            hf_logging.disable_progress_bar()


class LoggingHandler(logging.Handler):
    """A log handler that writes through tqdm, so log lines do not break a progress bar (sentence-transformers' name).

    `logging.basicConfig(handlers=[LoggingHandler()])` as in sentence-transformers' example scripts.
    """

    def emit(self, record: logging.LogRecord) -> None:
        """Write the formatted record above any progress bar."""
        from tqdm.auto import tqdm

        try:
            tqdm.write(self.format(record))
            self.flush()
        except Exception:  # a logging handler must not raise into the code that logged
            self.handleError(record)
