# Dummy spout script: only its existence matters to the loader tests.
