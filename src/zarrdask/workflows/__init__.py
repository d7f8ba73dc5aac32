"""Workflows over whole stores: rechunking and v2 -> v3 migration."""
