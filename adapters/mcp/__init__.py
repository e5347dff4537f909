"""reverie as an MCP server: any MCP client (a desktop assistant, an IDE, an agent
framework) gets long-term memory through six tools and a stats resource.

`build_server(engine)` returns the SDK's `MCPServer`; `serve(engine, transport=...)` runs
it over stdio or streamable HTTP. `reverie mcp` is the command that does both. Needs the
`mcp` extra (`pip install 'reverie[mcp]'`).
"""

from __future__ import annotations

from reverie.adapters.mcp.server import (
    ENV_NAMESPACE,
    NAMESPACE_HEADER,
    TRANSPORTS,
    build_server,
    serve,
)

__all__ = ["ENV_NAMESPACE", "NAMESPACE_HEADER", "TRANSPORTS", "build_server", "serve"]
