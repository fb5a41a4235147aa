"""Helpers shared by the tests: fakes, builders and the golden-file check (imported as `tests.support.*`).

- `release`: a small coverage release written from an op -> status dict (`static_release`).
- `golden`: the golden-file comparison with its update switch (OPSCAN_UPDATE_GOLDEN=1).
- `sample`: a hand-built report, the input of the reporter and plan tests.
- `db_files`: a valid release document and its writer, for the coverage-db tests.
- `hf_tiny`: tiny transformers configs written to a folder, and the op names of a trace.
- `trace_recorder`: a real one-step CPU training run recorded under a dispatch mode (needs torch).
- `zoo_fakes`: fake tracers for the zoo (`FAKE_TRACER`), imported by name in the zoo's children.
- `corpus`: the hostile-input corpus of the reliability tests.
"""
