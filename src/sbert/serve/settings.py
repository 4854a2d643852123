"""The server's settings: one frozen record, filled from `sbert serve` flags."""

from __future__ import annotations

from dataclasses import dataclass

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
HTTP_PARSERS = ("httptools", "h11")  # serve/protocol.py guards each; the first is the default


@dataclass(frozen=True)
class ServeSettings:
    """What the server loads, where it listens and the limits it enforces."""

    model: str
    backend: str = "torch"
    index: str | None = None
    host: str = "127.0.0.1"  # loopback unless told otherwise
    port: int = 8000
    api_key: str | None = None
    # Token budget of one merged group of requests; None: 8192 on CPU, the engine's own budget
    # on a GPU (a group is then one packed batch, not re-cut into small ones).
    max_batch_tokens: int | None = None
    max_wait_ms: float = 5.0  # how long the first request of a group waits for company
    # Groups on the model at once on the CPU (serve/scheduler.py: each lane's group runs on one thread);
    # a GPU runs one.
    lanes: int = 1
    # On the CPU, groups merging several requests into under this many tokens run on one thread instead of cut
    # across every core: less CPU per text, longer waits under concurrent clients (0: off; docs/serving.md).
    single_thread_tokens: int = 0
    max_inputs: int = 2048  # texts per request (OpenAI's limit)
    max_chars: int = 200_000  # characters per request, all texts together
    max_body_bytes: int = 2_000_000
    max_queue: int = 16_384  # texts waiting; beyond this requests get 503
    device: str | None = None
    precision: str = "auto"
    allowed_hosts: tuple[str, ...] = ()  # Host header names accepted beyond the defaults
    max_request_tokens: int = 131_072  # tokens of one request, all texts together (413 beyond)
    max_header_bytes: int = 16_384  # unparsed bytes of a request head (request line + headers)
    read_timeout: float = 30.0  # seconds for a whole request (head and body) to arrive
    http: str = HTTP_PARSERS[0]  # the HTTP/1.1 parser (serve/protocol.py): httptools (C) or h11 (pure Python)
    max_connections: int = 1024  # open connections (or running requests) before 503
    calibration: str | None = None  # ranges.npy (2 x dim) for int8/uint8 embeddings (default: an int8 index's)
    max_images: int = 64  # images per request (413 beyond)
    max_image_bytes: int = 8_000_000  # encoded bytes of one image
    max_image_pixels: int = 40_000_000  # width x height of one image, read from its header before decoding
    max_audio_seconds: float = 120.0  # length of one sound, read from its header before decoding
    allow_image_urls: bool = False  # fetch http(s) image URLs a client names (off: a client could aim the server)
    token_ids: str = (
        "tiktoken"  # whose ids /v1/embeddings' token inputs are: tiktoken's (as clients send) or the model's
    )

    def host_allow_list(self) -> frozenset[str] | None:
        """Host header names the server answers; None: any (bound beyond loopback, no list given).

        Bound to loopback, only loopback names pass by default: a web page that rebinds its own
        DNS name to 127.0.0.1 then still cannot read the server (its Host header is its name).
        """
        extra = {h.lower() for h in self.allowed_hosts}
        if self.host in LOOPBACK_HOSTS:
            # "": an HTTP/1.0 request without a Host header (browsers, and so rebinding pages, always send one)
            return frozenset(LOOPBACK_HOSTS | extra | {""})
        return frozenset(extra | {self.host.lower()}) if extra else None

    def validate(self) -> None:
        """Refuse limits that cannot work, naming the flag."""
        positive = {
            "--max-batch-tokens": 1 if self.max_batch_tokens is None else self.max_batch_tokens,
            "--max-inputs": self.max_inputs,
            "--max-chars": self.max_chars,
            "--max-body-bytes": self.max_body_bytes,
            "--max-queue": self.max_queue,
            "--max-header-bytes": self.max_header_bytes,
            "--max-request-tokens": self.max_request_tokens,
            "--read-timeout": self.read_timeout,
            "--max-connections": self.max_connections,
            "--max-images": self.max_images,
            "--max-image-bytes": self.max_image_bytes,
            "--max-image-pixels": self.max_image_pixels,
            "--max-audio-seconds": self.max_audio_seconds,
            "--lanes": self.lanes,
        }
        for flag, value in positive.items():
            if value < 1:
                raise ValueError(f"{flag} must be positive, got {value}")
        if self.http not in HTTP_PARSERS:
            raise ValueError(f"--http must be one of {', '.join(HTTP_PARSERS)}, got {self.http!r}")
        if self.token_ids not in ("tiktoken", "model"):
            raise ValueError(f"--token-ids must be tiktoken or model, got {self.token_ids!r}")
        if self.single_thread_tokens < 0:
            raise ValueError(f"--single-thread-tokens must be >= 0, got {self.single_thread_tokens}")
        if self.max_wait_ms < 0:
            raise ValueError(f"--max-wait-ms must be >= 0, got {self.max_wait_ms}")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"--port {self.port} is not a TCP port")
