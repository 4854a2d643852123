"""A page-image model's (ColPali's) token matrices on the multi-vector routes: queries as texts, pages as images.

Such a model renders its own inputs with its processor, so its requests skip the token-id batcher: each
request's image data URLs are read under the image limits (serve/images.py), then the texts and the pages
are encoded apart (one kind per call), on the model thread. A page's matrix is the same as the library's.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
from fastapi.concurrency import run_in_threadpool

from sbert.serve.images import is_data_url, read_image
from sbert.serve.media_limits import check_count
from sbert.serve.scheduler import on_model_thread
from sbert.serve.state import ServerState, check_texts

if TYPE_CHECKING:
    from sbert.multivector import MultiVectorEncoder


async def page_tokens(st: ServerState, model: MultiVectorEncoder, values: list[str],
                      field: str) -> tuple[list[np.ndarray], int]:  # fmt: skip
    """Token matrices of `values` (texts, and image data URLs as pages) in input order, and their token count.

    A `*ForRetrieval` processor renders every text as a query, whatever the request's input_type.
    """
    pages = [i for i, v in enumerate(values) if is_data_url(v)]
    check_count(len(pages), st)
    texts = [i for i in range(len(values)) if i not in set(pages)]
    st.check_limits([values[i] for i in texts])
    check_texts([values[i] for i in texts], field)
    read = await run_in_threadpool(lambda: [read_image(values[i], f"{field}[{i}]", st) for i in pages])
    out: list[Any] = [None] * len(values)
    for kind, at, items in (("image", pages, read), ("text", texts, [values[i] for i in texts])):
        if at:  # the kind is given: a client's text is never opened as a file path on this machine
            for i, matrix in zip(at, await on_model_thread(partial(_encode, model, items, kind)), strict=True):
                out[i] = matrix
    return out, sum(len(m) for m in out)


def _encode(model: MultiVectorEncoder, items: list[Any], kind: str) -> list[np.ndarray]:
    return model.encode_known(items, kind)
