"""`sbert serve`: an OpenAI-compatible embedding server with dynamic batching, search and a web page."""

from __future__ import annotations

from sbert.errors import SbertError
from sbert.install_hint import install_hint


def require_serve_extra() -> None:
    """Fail with the extra to install when FastAPI or uvicorn is missing."""
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise SbertError(f"the server needs FastAPI and uvicorn: {install_hint('serve')}") from None
