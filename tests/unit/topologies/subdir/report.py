# Dummy bolt script run from subdir/: only its existence matters to the loader tests.
