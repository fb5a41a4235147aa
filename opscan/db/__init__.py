"""Coverage database: strict loading, lookup, diff and probe."""
