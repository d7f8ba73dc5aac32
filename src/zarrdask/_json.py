"""JSON helpers shared by the metadata layer and the stores."""

from __future__ import annotations

import json
from typing import Any

from .errors import MetadataError


def dumps(doc: Any) -> bytes:
    """Encode a metadata document the way zarr-python does (indented, UTF-8)."""
    return json.dumps(doc, indent=2, sort_keys=False, ensure_ascii=True, allow_nan=False).encode()


def loads(data: bytes | str, *, key: str) -> Any:
    """Decode a metadata document, raising :class:`MetadataError` naming ``key``."""
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise MetadataError(f"{key}: not valid JSON ({e})") from None
