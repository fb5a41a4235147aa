"""The migration workflow around the scan: loss parity, pre-flight checklist, payback."""
