"""`sbert data fetch`: the public benchmark sets from their published addresses into the data home.

Each download goes to `FILE.part` and resumes with an HTTP Range request after an interruption;
each file the data home gets is checked against the sha256 recorded here before it is moved into
place (atomically), so a folder never holds a truncated or altered file. `mirror` replaces every
address's folder with another (a local copy, or the loopback server of the tests).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sbert.data.home import DATA_SETS, data_home
from sbert.errors import SbertError
from sbert.formats.layout import atomic_file

CHUNK = 1 << 20


@dataclass(frozen=True)
class Source:
    """One published file: a plain file, or a .tar.gz whose listed members are kept."""

    url: str
    # data-home path -> sha256; for an archive, member name -> (data-home path, sha256)
    files: dict[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def is_archive(self) -> bool:
        """Whether the download is a .tar.gz to take members from."""
        return self.url.endswith(".tar.gz")


_STSB = "stsbenchmark"
_SST = "https://raw.githubusercontent.com/PrincetonML/SIF/master/data"  # where SentEval takes SST-2 from
# The checksums are those of the files as published (the copies in ../shared/data match them).
SOURCES: dict[str, list[Source]] = {
    "stsb": [
        Source("http://ixa2.si.ehu.eus/stswiki/images/4/48/Stsbenchmark.tar.gz", {
            f"{_STSB}/sts-train.csv": (f"{_STSB}/sts-train.csv",
                                       "0f71910b59aa1ad973c5897f0791f3b0965a92b8f82b1a95f3eea9f4162fda82"),
            f"{_STSB}/sts-dev.csv": (f"{_STSB}/sts-dev.csv",
                                     "5d7e944d8b02734b07bfdb5df67db3420c64bed153fcaa1ba47ad03480cf4234"),
            f"{_STSB}/sts-test.csv": (f"{_STSB}/sts-test.csv",
                                      "affe45928a66ee5a708531233c95b7dacbbdc57f974f002a3d32ea0180cf816a"),
            f"{_STSB}/LICENSE.txt": (f"{_STSB}/LICENSE.txt",
                                     "3dfc3217395f8c5dd05c5f8995f25fe2f8fd258e6dd770b3de480749caee8c70"),
        }),
    ],
    "sst2": [
        Source(f"{_SST}/sentiment-{split}", {"": (f"sst2/sentiment-{split}", digest)})
        for split, digest in (
            ("train", "10a92a297ec38e262386e5a2713b4bc70e5d18ced88b7f54bd171a26e5b34ab5"),
            ("dev", "9a6c7403b71a9b762158387afe4431253ae10cdfb2319b5275289f3766f48291"),
            ("test", "4fefd1cd67526cf87ebc7fafc3afc21cc7cfa6ae53b45e74f77f9456e3c62752"),
        )
    ],
}  # fmt: skip


class FetchError(SbertError):
    """A download that failed or does not match its checksum."""


def fetch(names: list[str], home: Path | None = None, mirror: str | None = None,
          say: Callable[[str], None] = print) -> list[Path]:  # fmt: skip
    """Download and check the named sets into `home` (default: the data home); returns the files written.

    Files already present with the right checksum are kept as they are.
    """
    unknown = [n for n in names if n not in SOURCES]
    if unknown:
        known = ", ".join(SOURCES)
        raise FetchError(f"cannot fetch {', '.join(unknown)}: known {known} (snli, STS12-16 and SICK: see docs)")
    root = home or data_home()
    written: list[Path] = []
    for name in names:
        (root / DATA_SETS[name]).mkdir(parents=True, exist_ok=True)
        for source in SOURCES[name]:
            written.extend(_fetch_source(source, root, mirror, say))
    return written


def _fetch_source(source: Source, root: Path, mirror: str | None, say: Callable[[str], None]) -> list[Path]:
    targets = [root / path for path, _ in source.files.values()]
    if all(
        t.is_file() and sha256_of(t) == digest for t, (_, digest) in zip(targets, source.files.values(), strict=True)
    ):
        say(f"{', '.join(str(t) for t in targets)}: already there, checksums match")
        return []
    url = source.url if mirror is None else f"{mirror.rstrip('/')}/{source.url.rsplit('/', 1)[1]}"
    staged = root / f".{url.rsplit('/', 1)[1]}.part"
    download(url, staged)
    try:
        if source.is_archive:
            with tarfile.open(staged, "r:gz") as archive:
                for member, (path, digest) in source.files.items():
                    _place(_member_bytes(archive, member, url), root / path, digest, f"{url}!{member}")
        else:
            ((path, digest),) = source.files.values()
            _place(staged.read_bytes(), root / path, digest, url)
    except (tarfile.TarError, EOFError) as e:
        staged.unlink(missing_ok=True)
        raise FetchError(f"{url}: not a readable .tar.gz ({e}); downloaded again on the next run") from None
    except FetchError:
        staged.unlink(missing_ok=True)  # a wrong file is fetched anew, not resumed
        raise
    staged.unlink(missing_ok=True)
    say(f"{url} -> {', '.join(str(t) for t in targets)}")
    return targets


def _member_bytes(archive: tarfile.TarFile, member: str, url: str) -> bytes:
    try:
        handle = archive.extractfile(member)
    except KeyError:
        handle = None
    if handle is None:
        raise FetchError(f"{url}: has no file {member}")
    return handle.read()


def _place(data: bytes, target: Path, digest: str, origin: str) -> None:
    """Write `data` to `target` atomically if its sha256 is `digest`; a one-line error otherwise."""
    found = hashlib.sha256(data).hexdigest()
    if found != digest:
        raise FetchError(f"{origin}: sha256 {found[:16]}..., expected {digest[:16]}...; nothing written to {target}")
    with atomic_file(target) as f:
        f.write(data)


def download(url: str, part: Path) -> None:
    """Fetch `url` into `part`, resuming from its current size with a Range request when the server allows it."""
    have = part.stat().st_size if part.is_file() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            resumed = have and response.status == 206
            with part.open("ab" if resumed else "wb") as out:
                shutil.copyfileobj(response, out, CHUNK)
                out.flush()
                os.fsync(out.fileno())
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:  # the part file already holds the whole file
            return
        raise FetchError(f"{url}: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise FetchError(f"{url}: download failed ({reason}); run the command again to resume") from None


def sha256_of(path: Path) -> str:
    """The sha256 of a file, read a chunk at a time."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


__all__ = ["SOURCES", "FetchError", "Source", "download", "fetch", "sha256_of"]
