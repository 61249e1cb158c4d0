"""Browser tests (a package, so that its conftest.py and modules do not clash
with tests/conftest.py under pytest's default import mode)."""
