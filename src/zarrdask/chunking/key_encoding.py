"""Chunk key encodings.

* ``default`` (zarr-specs ``v3-chunk-key-encodings-default``): ``c`` followed by
  the coordinates, each preceded by the separator (``/`` by default): ``c/1/2``,
  or ``c.1.2`` with ``.``; a 0-d array's only chunk is ``c``.
* ``v2`` (zarr-specs ``v3-chunk-key-encodings-v2``, and the Zarr v2 spec's
  "Chunks" section with ``dimension_separator``): the coordinates joined by the
  separator (``.`` by default): ``1.2`` or ``1/2``; a 0-d array's chunk is ``0``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import MetadataError


@dataclass(frozen=True)
class ChunkKeyEncoding:
    """Maps chunk grid coordinates to the key under the array's path.

    ``separator`` defaults to the encoding's own: ``"/"`` for ``default``,
    ``"."`` for ``v2``. (Its JSON form is
    :class:`zarrdask.metadata.ChunkKeyEncodingSpec`, a subclass.)"""

    name: str = "default"
    separator: str = None  # type: ignore[assignment]  # None: the encoding's default

    def __post_init__(self) -> None:
        if self.name not in ("default", "v2"):
            raise MetadataError(
                f"chunk_key_encoding: unknown name {self.name!r}; expected 'default' or 'v2'"
            )
        if self.separator is None:
            object.__setattr__(self, "separator", "/" if self.name == "default" else ".")
        if self.separator not in ("/", "."):
            raise MetadataError(
                f"chunk_key_encoding: separator must be '/' or '.', found {self.separator!r}"
            )

    def encode(self, coords: tuple[int, ...]) -> str:
        if self.name == "default":
            return "c" + self.separator + self.separator.join(map(str, coords)) if coords else "c"
        if not coords:
            return "0"
        return self.separator.join(map(str, coords))

    def decode(self, key: str) -> tuple[int, ...] | None:
        """Coordinates of a chunk key, or ``None`` if ``key`` is not one."""
        try:
            if self.name == "default":
                if key == "c":
                    return ()
                if not key.startswith("c" + self.separator):
                    return None
                return tuple(int(p) for p in key[2:].split(self.separator))
            if key == "0":
                return (0,)  # ambiguous with 1-d chunk 0; callers check the rank
            return tuple(int(p) for p in key.split(self.separator))
        except ValueError:
            return None
