"""The Zarr Object Model (ZEP 6): hierarchies as declarative specs."""
