"""`reverie inspect`: a local web page to look at what the memory holds.

Namespaces and their health, a filtered and paged memory list, each memory's page (its
explanation terms, decay curve, sources, versions and consolidation lineage) and a
recall box that shows why each hit ranked. Served by the standard library on loopback,
offline (no script, no outside resource), read-only unless started with
`allow_changes`. `make_server(engine)` builds the server; `serve(engine)` runs it.
"""

from __future__ import annotations

from reverie.adapters.inspect.pages import HttpError, Inspector, Response
from reverie.adapters.inspect.server import InspectorServer, make_server, serve

__all__ = ["HttpError", "Inspector", "InspectorServer", "Response", "make_server", "serve"]
