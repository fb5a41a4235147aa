"""The run of `opscan PATH`: its steps with explicit run options (analyse.py), the default phase
functions that adapt the scan, the database and the trace to it (phases.py), and what only those
phases use: the release's torch pairing (pairing.py) and installed metadata (environment.py, with
metadata_probe.py run by path in another interpreter)."""
