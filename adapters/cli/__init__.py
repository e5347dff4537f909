"""The `reverie` command line: ingest, recall, maintenance, export/import and the demo."""

from reverie.adapters.cli.app import app, main

__all__ = ["app", "main"]
