"""What the services report about their work, and where it goes.

The services call a `Telemetry` (`base.py`) handed to them by the composition root
(`carrag/services/container.py`); `NullTelemetry` is their default. `PrometheusTelemetry`
(`prometheus.py`) is the adapter behind GET /metrics.
"""

from carrag.services.telemetry.base import NullTelemetry, Pipeline, Telemetry

__all__ = ["NullTelemetry", "Pipeline", "Telemetry"]
