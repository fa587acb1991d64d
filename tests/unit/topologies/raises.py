"""Fails while running: the loader reports the line."""

x = 1
raise RuntimeError("boom")
