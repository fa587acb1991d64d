"""A scripted host stand-in for testing one component process over its real pipes.

The implementation is public API now, in `host.testing` (`ComponentPeer`, `make_context`, also
the base of `run_component`); this module keeps the name the project's tests import.
"""

from __future__ import annotations

from host.testing import _HOST_TUPLE_ID, HOST_BIN, ComponentPeer, make_context

__all__ = ["HOST_BIN", "_HOST_TUPLE_ID", "ComponentPeer", "make_context"]
