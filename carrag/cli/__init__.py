"""The `carrag` command line (typer + rich) and the client it talks through."""
