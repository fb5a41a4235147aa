"""Model tracing: the only package that imports torch."""
