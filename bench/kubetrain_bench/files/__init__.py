"""Hostile files through kubetrain's doors: the CLI, the Python client and the converter.

``generator`` makes the files (``make_bytes``: encodings, bytes that are not text, binaries,
control characters, empty input; ``make_yaml``: aliases and bombs, depth, size, duplicate
keys, tags, numbers, keys, documents, syntax; ``kinds``: what a maker gives back); ``doors``
runs one through ``kubetrain convert``, ``render`` and ``submit``, the client's
``create_from_file`` and the shared reader, and judges what came out; ``runner`` runs each in a
child process of its own, timed and measured; ``report`` counts the outcomes. ``make
bench-files`` (``cli``) runs 10,000; tests/unit/test_hostile_files.py runs a few hundred
in-process and checks the generator.
"""
