"""The web console (issue 33): the privacy office's request board and evidence, and dataset
owners attesting person steps with their own token. Wiring beside the CLI: it reads the request
store, the audit log and the report's facts, and is served by ``piitracer serve`` beside the
OpenLineage endpoint. Only the CLI imports it (tests/unit/architecture/test_layers.py)."""
