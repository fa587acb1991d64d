"""Storm's DRPC on the local host: the HTTP server, the request table and the in-host DRPC spout and return-results (docs/drpc.md)."""
