"""Builders and hypothesis strategies shared by every test tier (importable as `testkit`)."""
