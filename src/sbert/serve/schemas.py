"""Request and response bodies: the OpenAI embeddings shapes, rerank, plus similarity, search and mining."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr

Texts = StrictStr | Annotated[list[StrictStr], Field(min_length=1)]
TokenRow = Annotated[list[StrictInt], Field(min_length=1)]
# OpenAI's token-id inputs: one row of ids, or a row per input (serve/token_input.py reads them back to text).
TokenIds = TokenRow | Annotated[list[TokenRow], Field(min_length=1)]
# Jina's mixed inputs: [{"text": ...}, {"image": "data:image/..."}] (serve/images.py reads them).
Items = Annotated[list[dict[StrictStr, StrictStr]], Field(min_length=1)]


class EmbeddingsRequest(BaseModel):
    """POST /v1/embeddings, as OpenAI defines it: texts, or token ids (LangChain's OpenAIEmbeddings sends ids)."""

    model_config = ConfigDict(extra="ignore")  # OpenAI clients may send fields such as `user`
    input: Texts | TokenIds | Items
    model: StrictStr
    # Not OpenAI's (Infinity's): "image" / "audio" reads every input as that kind (a data URL; an image URL where
    # the operator allows it).
    modality: Literal["text", "image", "audio"] | None = None
    # OpenAI's float and base64 (of float32), plus quantized rows as Cohere's API returns them.
    encoding_format: Literal["float", "base64", "int8", "uint8", "binary", "ubinary"] = "float"
    dimensions: Annotated[StrictInt, Field(ge=1)] | None = None  # "64", 64.0 and true are refused
    # Not OpenAI's: false refuses inputs over the model's limit instead of truncating them (as TEI).
    truncate: StrictBool = True
    # Not OpenAI's (as Cohere's, Voyage's): the model's query or document prompt goes in front of each input.
    input_type: Literal["query", "document"] | None = None
    # Not OpenAI's: late chunking, per input a list of [start_char, end_char] spans; one vector per span.
    chunks: list[list[Annotated[list[StrictInt], Field(min_length=2, max_length=2)]]] | None = None


MediaInput = Annotated[dict[Literal["text", "image"], StrictStr], Field(min_length=1)]


class RerankRequest(BaseModel):
    """POST /v1/rerank, in the shape Cohere's, Jina's and TEI-compatible rerank APIs share."""

    model_config = ConfigDict(extra="ignore")  # clients send fields such as max_tokens_per_doc
    # Jina's shape for a vision-language reranker: {"text"}, {"image": data URL} or both, beside plain strings.
    query: StrictStr | MediaInput
    documents: Annotated[list[StrictStr | MediaInput], Field(min_length=1)]
    model: StrictStr | None = None  # when given, it must name the served reranker
    top_n: Annotated[StrictInt, Field(ge=1)] | None = None  # default: every document
    return_documents: StrictBool = False


class SimilarityRequest(BaseModel):
    """POST /similarity: cosine of each pair."""

    model_config = ConfigDict(extra="forbid")
    pairs: Annotated[list[Annotated[list[StrictStr], Field(min_length=2, max_length=2)]], Field(min_length=1)]


class SearchRequest(BaseModel):
    """POST /search: top-k texts of the loaded index for each query."""

    model_config = ConfigDict(extra="forbid")
    query: Texts
    top_k: Annotated[int, Field(ge=1, le=1000)] = 10
    mode: Literal["dense", "sparse", "hybrid", "colbert"] = "dense"  # beyond dense: the index's other sides
    fusion: Literal["rrf", "weighted", "m3"] = "rrf"
    alpha: Annotated[float, Field(ge=0, le=1)] = 0.5  # weighted fusion: the dense ranking's weight
    # m3 fusion (search/weighted_fusion.py): the dense, sparse and ColBERT scores' weights
    weights: Annotated[list[Annotated[float, Field(ge=0)]], Field(min_length=3, max_length=3)] = [1.0, 1.0, 1.0]


class MineRequest(BaseModel):
    """POST /mine: the most similar pairs among the given sentences."""

    model_config = ConfigDict(extra="forbid")
    sentences: Annotated[list[StrictStr], Field(min_length=2)]
    top_k: Annotated[int, Field(ge=1, le=1000)] = 20


def as_list(texts: str | list[str]) -> list[str]:
    """A request's input as a list of texts."""
    return [texts] if isinstance(texts, str) else texts


class TeiEmbedRequest(BaseModel):
    """POST /embed (and POST /): Text Embeddings Inference's request, as huggingface_hub's InferenceClient sends it."""

    model_config = ConfigDict(extra="ignore")
    inputs: Texts
    normalize: StrictBool = True
    truncate: StrictBool | None = None  # None: truncate, as this server does by default
    truncation_direction: Literal["Right", "Left", "right", "left"] = "Right"
    prompt_name: StrictStr | None = None
    dimensions: Annotated[StrictInt, Field(ge=1)] | None = None


class TeiSparseRequest(BaseModel):
    """POST /embed_sparse: TEI's request for SPLADE vectors."""

    model_config = ConfigDict(extra="ignore")
    inputs: Texts
    truncate: StrictBool | None = None  # None: truncate
    truncation_direction: Literal["Right", "Left", "right", "left"] = "Right"
    prompt_name: StrictStr | None = None


class TeiSimilarityInputs(BaseModel):
    """The sentence-similarity task's inputs: one sentence against several."""

    model_config = ConfigDict(extra="forbid")
    source_sentence: StrictStr
    sentences: Annotated[list[StrictStr], Field(min_length=1)]


class TeiSimilarityRequest(BaseModel):
    """POST /similarity (and POST / with these inputs): InferenceClient.sentence_similarity's body."""

    model_config = ConfigDict(extra="ignore")  # `parameters`
    inputs: TeiSimilarityInputs


class TeiRerankRequest(BaseModel):
    """POST /rerank: Text Embeddings Inference's rerank request."""

    model_config = ConfigDict(extra="ignore")
    query: StrictStr
    texts: Annotated[list[StrictStr], Field(min_length=1)]
    raw_scores: StrictBool = False
    return_text: StrictBool = False
    truncate: StrictBool | None = None
    truncation_direction: Literal["Right", "Left", "right", "left"] = "Right"


class TeiTokenizeRequest(BaseModel):
    """POST /tokenize: the tokens of each input, with character offsets."""

    model_config = ConfigDict(extra="ignore")
    inputs: Texts
    add_special_tokens: StrictBool = True
    prompt_name: StrictStr | None = None


CohereEmbeddingType = Literal["float", "int8", "uint8", "binary", "ubinary", "base64"]


class CohereEmbedRequest(BaseModel):
    """POST /v2/embed and /v1/embed: Cohere's embed request (texts, or images as data URLs; `inputs` are refused)."""

    model_config = ConfigDict(extra="ignore")  # priority, max_tokens, ...
    texts: Annotated[list[StrictStr], Field(min_length=1)] | None = None
    model: StrictStr | None = None
    input_type: Literal["search_document", "search_query", "classification", "clustering", "image"] | None = None
    embedding_types: Annotated[list[CohereEmbeddingType], Field(min_length=1)] | None = None
    output_dimension: Annotated[StrictInt, Field(ge=1)] | None = None
    truncate: Literal["NONE", "START", "END"] = "END"
    images: list[object] | None = None
    inputs: list[object] | None = None


class CohereRerankRequest(BaseModel):
    """POST /v2/rerank: Cohere's v2 rerank request (documents as strings)."""

    model_config = ConfigDict(extra="ignore")  # max_tokens_per_doc, priority
    query: StrictStr
    documents: Annotated[list[StrictStr], Field(min_length=1)]
    model: StrictStr | None = None
    top_n: Annotated[StrictInt, Field(ge=1)] | None = None
