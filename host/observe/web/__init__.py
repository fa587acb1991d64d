"""The web UI of `python -m host local TOPOLOGY --ui [PORT]`: a small HTTP server on 127.0.0.1
(`host.observe.web.server`) and the static page it serves (`static/`), which polls the server's JSON."""
