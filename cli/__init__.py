"""The kubetrain command (being written)."""
