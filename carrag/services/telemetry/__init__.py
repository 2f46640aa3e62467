"""What the services report about their work (`base.py`), and the Prometheus adapter behind GET /metrics."""

from carrag.services.telemetry.base import NullTelemetry, Pipeline, Telemetry

__all__ = ["NullTelemetry", "Pipeline", "Telemetry"]
