"""PDF pages as images: `file.pdf#page=N` names page N (from 1) of a PDF, rendered by PDFium (pypdfium2).

A page reference is an image input like a path or a data URI: the library, the index and search read it
through the one image reader (formats/image_inputs.py), so a page-image model (ColPali) or an image-text
model (CLIP) embeds a PDF's pages without the caller rendering them. A folder corpus lists every page of
every PDF under it, with its image files, in path order.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import Any

from sbert.errors import SbertError
from sbert.install_hint import install_hint

_PAGE = re.compile(r"^(?P<file>.+\.pdf)#page=(?P<page>[1-9][0-9]*)$", re.IGNORECASE)
RENDER_LONG_SIDE = 1024  # pixels of a rendered page's longer side: page models resize to ~448-1024 themselves


def page_reference(text: str) -> tuple[str, int] | None:
    """(file, page number) when `text` is `file.pdf#page=N` of an existing file; else None."""
    found = _PAGE.match(text)
    if found is None or not os.path.isfile(found["file"]):
        return None
    return found["file"], int(found["page"])


def page_fields(text: str) -> dict[str, Any]:
    """{"file", "page"} of a page reference (what a search hit names), else {}."""
    found = _PAGE.match(text)
    return {"file": found["file"], "page": int(found["page"])} if found else {}


def page_label(path: str | os.PathLike[str], page: int) -> str:
    """The reference of page `page` (from 1) of the PDF at `path`."""
    return f"{path}#page={page}"


def _pdfium() -> Any:
    try:
        import pypdfium2
    except ImportError:
        raise SbertError(f"PDF pages need pypdfium2: {install_hint('pdf')}") from None
    return pypdfium2


def page_count(path: str | os.PathLike[str]) -> int:
    """How many pages the PDF at `path` has (a file PDFium cannot open: one line naming it)."""
    pdfium = _pdfium()
    try:
        document = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as e:
        raise SbertError(f"{path}: not a readable PDF ({e})") from None
    try:
        return len(document)
    finally:
        document.close()


def render_page(path: str | os.PathLike[str], page: int, long_side: int = RENDER_LONG_SIDE) -> Any:
    """Page `page` (from 1) of the PDF at `path` as an RGB PIL image whose longer side is `long_side` pixels."""
    pdfium = _pdfium()
    document = pdfium.PdfDocument(str(path))
    try:
        if not 1 <= page <= len(document):
            raise ValueError(f"{path} has {len(document)} pages, not a page {page}")
        sheet = document[page - 1]
        width, height = sheet.get_size()  # in points (1/72 inch)
        image = sheet.render(scale=long_side / max(width, height, 1.0)).to_pil().convert("RGB")
        sheet.close()
        return image
    finally:
        document.close()


def page_thumbnail(path: str | os.PathLike[str], page: int, long_side: int = 512) -> bytes:
    """Page `page` of the PDF at `path` as PNG bytes, `long_side` pixels on its longer side (a search hit's picture)."""
    buffer = io.BytesIO()
    render_page(path, page, long_side).save(buffer, format="PNG")
    return buffer.getvalue()


def page_documents(folder: str | os.PathLike[str], image_suffixes: tuple[str, ...]) -> list[str]:
    """Every page of every PDF under `folder` (as page references) and every image file, in path order."""
    root = Path(folder).resolve()
    found: list[str] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if path.suffix.lower() == ".pdf":
            found.extend(page_label(path, n) for n in range(1, page_count(path) + 1))
        elif path.suffix.lower() in image_suffixes:
            found.append(str(path))
    return found
