"""Port tasks: grouping, sizing and ordering of the work."""
