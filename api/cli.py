"""The ``carrag`` command line."""

from __future__ import annotations

import typer

from services.settings import get_settings

app = typer.Typer(help="Carrag: self-hosted retrieval-augmented generation.", no_args_is_help=True)


@app.command()
def serve(
    host: str = typer.Option(None, help="Bind address (default: HOST setting, 127.0.0.1)."),
    port: int = typer.Option(None, help="Port (default: PORT setting, 8000)."),
) -> None:
    """Run the HTTP service."""
    import uvicorn

    settings = get_settings()
    uvicorn.run(
        "api.main:app_factory",
        factory=True,
        host=host or settings.host,
        port=port or settings.port,
        log_config=None,
        timeout_graceful_shutdown=30,
    )


def main() -> None:
    app()


if __name__ == "__main__":
    main()
