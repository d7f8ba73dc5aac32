"""Arrays, groups and the chunk engine."""
