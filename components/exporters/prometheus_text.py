"""Prometheus' text exposition of an exporter's counters and gauges, and the HTTP endpoint that serves it.

The program's own in-cluster exporters (the tier evictor, components/tier_evictor/evict_tier.py; the cache
annotator, components/cache_annotator/annotate_pods.py) each subclass `Exposition` with their metric names and
serve it with `serve_metrics`; stdlib only, shipped in each one's ConfigMap beside its script.
"""

from __future__ import annotations

import http.server
import threading


class Exposition:
    """Counters (`<prefix>_<name>_total`) and gauges (`<prefix>_<name>`) under one lock."""

    def __init__(self, prefix: str, counters: tuple[str, ...]) -> None:
        self.lock = threading.Lock()
        self.prefix = prefix
        self.counters = {f"{prefix}_{name}_total": 0.0 for name in counters}
        self.gauges: dict[str, float] = {}

    def _add(self, **values: float) -> None:
        for name, value in values.items():
            self.counters[f"{self.prefix}_{name}_total"] += value

    def _gauge(self, **values: float) -> None:
        self.gauges.update({f"{self.prefix}_{name}": float(value) for name, value in values.items()})

    def text(self) -> str:
        with self.lock:
            lines = []
            for name, value in sorted(self.counters.items()):
                lines += [f"# TYPE {name} counter", f"{name} {value:.17g}"]
            for name, value in sorted(self.gauges.items()):
                lines += [f"# TYPE {name} gauge", f"{name} {value:.17g}"]
        return "\n".join(lines) + "\n"


def serve_metrics(metrics: Exposition, port: int) -> http.server.ThreadingHTTPServer:
    """/metrics (the exposition) and /healthz on `port`, from a daemon thread."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = metrics.text().encode() if self.path == "/metrics" else b"ok\n"
            self.send_response(200 if self.path in ("/metrics", "/healthz") else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = http.server.ThreadingHTTPServer(("", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
