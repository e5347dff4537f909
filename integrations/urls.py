"""Credentials out of everything reverie shows: one pure function for store and index
locations, error messages, log records and stats.

A password in `redis://:pw@host`, `redis://user:pw@host`, a `?password=` (or `token=`,
`secret=`, `api_key=`...) query value and a Chroma token in `http://:token@host` all become
`***`; anything else, including text that merely contains such URLs, is returned as is.
Known secrets (a token given outside the URL) are masked wherever they appear in the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["MASK", "redact"]

MASK = "***"

# scheme://[user]:password@ ; the password runs to the last '@' before a '/', space or end
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]*:)(?P<pw>[^\s/]*)@")
_QUERY = re.compile(
    r"(?P<head>[?&;](?:password|passwd|pass|pwd|token|auth|auth_token|access_token|"
    r"secret|api_key|apikey|key|credentials?)=)(?P<value>[^&#\s'\"]*)",
    re.IGNORECASE,
)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with every password and token replaced by `***`."""
    out = _USERINFO.sub(lambda m: f"{m['head']}{MASK}@" if m["pw"] else m[0], text)
    out = _QUERY.sub(lambda m: f"{m['head']}{MASK}" if m["value"] else m[0], out)
    for secret in secrets:
        if secret and len(secret) >= 3:
            out = out.replace(secret, MASK)
    return out
