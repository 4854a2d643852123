"""The lean POST /v1/embeddings path: it takes exactly the bodies FastAPI would read the same way, and answers alike."""

from __future__ import annotations

import json

import httpx
import pytest

from sbert.serve import fast_path
from sbert.serve.fast_path import plain_body
from sbert.serve.schemas import EmbeddingsRequest
from tests.serve_helpers import serve_in_thread

MODEL = "all-MiniLM-L6-v2"
KEY = "fast-path-key"

TAKEN = [
    {"input": "one text", "model": "m"},
    {"input": ["a", "b"], "model": "m", "encoding_format": "base64", "user": "ignored"},
    {"input": ["a"], "model": "m", "dimensions": 64, "truncate": False, "input_type": "query"},
    {"input": "a", "model": "m", "dimensions": None, "input_type": None, "modality": None, "chunks": None},
    {"input": "a", "model": "m", "encoding_format": "ubinary"},
]
LEFT_TO_FASTAPI = [
    {"input": [1, 2, 3], "model": "m"},  # token ids
    {"input": [[1, 2], [3]], "model": "m"},
    {"input": [{"image": "data:image/png;base64,AAAA"}], "model": "m"},
    {"input": "a", "model": "m", "modality": "image"},
    {"input": "a", "model": "m", "modality": "text"},
    {"input": ["a b"], "model": "m", "chunks": [[[0, 1]]]},
    {"input": [], "model": "m"},
    {"input": ["a", None], "model": "m"},
    {"input": 5, "model": "m"},
    {"input": "a"},
    {"input": "a", "model": 3},
    {"input": "a", "model": "m", "dimensions": True},
    {"input": "a", "model": "m", "dimensions": "64"},
    {"input": "a", "model": "m", "dimensions": 64.0},
    {"input": "a", "model": "m", "dimensions": 0},
    {"input": "a", "model": "m", "truncate": "yes"},
    {"input": "a", "model": "m", "encoding_format": "float16"},
    {"input": "a", "model": "m", "input_type": "passage"},
    ["a", "b"],
    "a",
]


@pytest.mark.parametrize("body", TAKEN, ids=range(len(TAKEN)))
def test_a_plain_text_body_is_read_as_pydantic_reads_it(body):
    raw = json.dumps(body).encode()
    taken = plain_body(raw, "application/json")
    assert taken is not None
    assert taken.model_dump() == EmbeddingsRequest.model_validate_json(raw).model_dump()


@pytest.mark.parametrize("body", LEFT_TO_FASTAPI, ids=range(len(LEFT_TO_FASTAPI)))
def test_any_other_body_goes_on_to_fastapi(body):
    assert plain_body(json.dumps(body).encode(), "application/json") is None


@pytest.mark.parametrize(
    ("raw", "content_type"),
    [
        (b'{"input": "a", "model": "m"}', "text/plain"),
        (b'{"input": "a", "model": "m"', "application/json"),  # not JSON
        (b'{"input": "a", "model": "m", "dimensions": NaN}', "application/json"),
        (b"", "application/json"),
        (b'{"input": "\\ud800", "model": "m"}', "application/json"),  # a lone surrogate: FastAPI's 422
    ],
)
def test_bodies_fastapi_reads_otherwise_go_on_to_it(raw, content_type):
    assert plain_body(raw, content_type) is None


def test_the_route_depends_on_the_key_check_alone_which_the_lean_path_runs_too():
    # The lean path calls the route function after require_key: a dependency added to the route later would
    # be skipped there, so this fails first.
    from sbert.serve.routes import embeddings, require_key, router

    route = next(r for r in router.routes if getattr(r, "path", None) == fast_path.FAST_PATH)
    assert route.endpoint is embeddings
    assert [d.call for d in route.dependant.dependencies] == [require_key]


def test_no_content_type_and_its_parameters_are_read_as_json_as_fastapi_does():
    raw = b'{"input": "a", "model": "m"}'
    assert plain_body(raw, None) is not None
    assert plain_body(raw, "Application/JSON; charset=utf-8") is not None


@pytest.fixture(scope="module")
def server():
    srv = serve_in_thread("--model", MODEL, "--api-key", KEY)
    yield srv
    assert srv.stop()


@pytest.fixture
def taken(monkeypatch):
    """How many requests the lean path answered itself."""
    count = [0]
    real = fast_path.plain_body

    def counting(raw, content_type):
        body = real(raw, content_type)
        count[0] += body is not None
        return body

    monkeypatch.setattr(fast_path, "plain_body", counting)
    return count


def test_both_paths_give_the_same_answer_and_the_same_errors(server, taken):
    auth = {"Authorization": f"Bearer {KEY}"}
    plain = {"input": ["the cat sat", "a dog ran"], "model": MODEL, "dimensions": 128}
    full = plain | {"modality": "text"}  # the same request, which the lean path leaves to FastAPI
    with httpx.Client(timeout=120) as client:
        post = lambda body, headers=auth: client.post(server.url + "/v1/embeddings", json=body, headers=headers)  # noqa: E731
        fast_answer, slow_answer = post(plain), post(full)
        assert taken[0] == 1
        assert fast_answer.status_code == slow_answer.status_code == 200
        assert fast_answer.json() == slow_answer.json()
        for change, status in (({"model": "other"}, 404), ({"truncate": False, "input": ["x " * 600]}, 413)):
            fast_error, slow_error = post(plain | change), post(full | change)
            assert fast_error.status_code == slow_error.status_code == status, fast_error.text
            assert fast_error.json() == slow_error.json()
        fast_error, slow_error = post(plain, {}), post(full, {})
        assert fast_error.status_code == slow_error.status_code == 401
        assert fast_error.json() == slow_error.json()
        assert fast_error.headers["www-authenticate"] == slow_error.headers["www-authenticate"]
        assert taken[0] == 4


def test_a_body_over_the_limit_is_a_413_on_the_lean_path_too(server, taken):
    body = json.dumps({"input": ["word " * 700_000], "model": MODEL}).encode()

    def chunks():  # no Content-Length: the limit is met while the body streams in
        for i in range(0, len(body), 65536):
            yield body[i : i + 65536]

    with httpx.Client(timeout=120) as client:
        answer = client.post(
            server.url + "/v1/embeddings", content=chunks(), headers={"Authorization": f"Bearer {KEY}"}
        )
    assert answer.status_code == 413
    assert answer.json()["error"]["code"] == "body_too_large"
    assert taken[0] == 0


def test_with_opentelemetry_set_up_every_request_goes_through_fastapi_to_be_recorded(monkeypatch, taken):
    # FastAPI records requests itself once a tracer provider is set up (opentelemetry-instrument does it before
    # the app starts); the lean path would take /v1/embeddings out of its records, so it stands aside.
    pytest.importorskip("fastapi.telemetry", reason="this FastAPI records no requests itself")
    trace = pytest.importorskip("opentelemetry.trace")
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: trace.NoOpTracerProvider())
    srv = serve_in_thread("--model", MODEL)
    try:
        with httpx.Client(timeout=120) as client:
            answer = client.post(srv.url + "/v1/embeddings", json={"input": "the cat sat", "model": MODEL})
    finally:
        assert srv.stop()
    assert answer.status_code == 200
    assert len(answer.json()["data"][0]["embedding"]) == 384
    assert taken[0] == 0


# Every JSON type in every field: an unhashable value once made the lean path's membership test raise.
ODD_VALUES = [["float"], {"task": "query"}, None, 1, 1.5, True, "x", [], {}, "query", "float"]


@pytest.mark.parametrize("field", sorted(EmbeddingsRequest.model_fields))
def test_any_value_in_any_field_is_read_as_pydantic_reads_it_or_left_to_it(field):
    from pydantic import ValidationError

    for value in ODD_VALUES:
        raw = json.dumps({"input": ["a"], "model": "m", field: value}).encode()
        taken = plain_body(raw, "application/json")  # never raises
        try:
            expected = EmbeddingsRequest.model_validate_json(raw).model_dump()
        except ValidationError:
            assert taken is None, (field, value)
            continue
        assert taken is None or taken.model_dump() == expected, (field, value)


@pytest.mark.parametrize("change", [{"encoding_format": ["float"]}, {"input_type": {"task": "query"}}])
def test_a_list_or_object_where_a_choice_goes_is_a_422_naming_the_field(server, change):
    body = {"input": "a", "model": MODEL} | change
    answer = httpx.post(server.url + "/v1/embeddings", json=body, headers={"Authorization": f"Bearer {KEY}"},
                        timeout=60)  # fmt: skip
    assert answer.status_code == 422, answer.text
    assert next(iter(change)) in answer.text
