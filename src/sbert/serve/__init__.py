"""`sbert serve`: an OpenAI-compatible embedding server with dynamic batching, search and a web page."""

from __future__ import annotations

from sbert.errors import SbertError


def require_serve_extra() -> None:
    """Fail with the extra to install when FastAPI or uvicorn is missing."""
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise SbertError("the server needs FastAPI and uvicorn: pip install 'sbert[serve]'") from None
