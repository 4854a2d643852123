"""Prometheus metrics of one server: requests by route and status, latency, queue wait, batch shapes."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
_SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
_TOKEN_BUCKETS = (16, 64, 256, 512, 1024, 2048, 4096, 8192, 16384, 65536)


class Metrics:
    """The server's own registry (several servers in one process never share counters)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("sbert_requests", "HTTP requests by route and status", ["route", "status"], registry=r)
        self.latency = Histogram(
            "sbert_request_latency_seconds", "Request latency by route", ["route"], buckets=_LATENCY_BUCKETS, registry=r
        )
        self.queue_wait = Histogram(
            "sbert_queue_wait_seconds",
            "Time a request waits before its group runs",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.batch_texts = Histogram("sbert_batch_texts", "Texts per merged group", buckets=_SIZE_BUCKETS, registry=r)
        self.batch_tokens = Histogram(
            "sbert_batch_tokens", "Tokens per merged group", buckets=_TOKEN_BUCKETS, registry=r
        )
        self.queue_texts = Gauge("sbert_queue_texts", "Texts waiting for the model", registry=r)

    def render(self) -> bytes:
        """The Prometheus text exposition."""
        return generate_latest(self.registry)
