"""The DRPC HTTP server (docs/drpc.md §1), inside the host's event loop: a listening socket and
its connections are descriptors of the loop like the tasks' pipes, so a request goes from its
socket to the request table, the in-host DRPC spout and the topology without a thread or a lock.

A connection has at most one request pending: the next request it sent (pipelining) is parsed
once the pending one is answered, so answers go out in order and a client cannot queue more
than one request here. While a request is pending or a response is partly written, the
connection is not read; what it sent meanwhile waits in the kernel's buffers. Reads are bounded
by the reader (host/drpc/http_reader.py): a head of 16 KiB, a body of `drpc.max_buffer_size`.
"""

from __future__ import annotations

import errno
import logging
import socket
from collections.abc import Callable

from host.drpc.http import CONTINUE, drpc_route, error_response, http_error_response, text_response
from host.drpc.http_reader import HttpError, RequestReader
from host.drpc.table import Answer, PendingRequest, RequestTable
from host.runtime.loop import EventLoop

log = logging.getLogger("host")

READ_SIZE = 65536
BACKLOG = 1024


class Connection:
    __slots__ = ("sock", "fd", "reader", "out", "pending", "keep_alive", "closed", "watched")

    def __init__(self, sock: socket.socket, max_body: int) -> None:
        self.sock = sock
        self.fd = sock.fileno()
        self.reader = RequestReader(max_body)
        self.out = b""  # the unwritten rest of a response
        self.pending: PendingRequest | None = None  # the request waiting for its answer
        self.keep_alive = True  # of the request being answered
        self.closed = False
        self.watched = ""  # "r", "w" or "" (see `_watch`)


class DrpcServer:
    def __init__(
        self,
        loop: EventLoop,
        table: RequestTable,
        *,
        bind: str,
        port: int,
        max_body: int,
        max_connections: int,
        on_request: Callable[[], None],
    ) -> None:
        self.loop = loop
        self.table = table
        self.bind = bind
        self.port = port
        self.max_body = max_body
        self.max_connections = max_connections
        self.on_request = on_request  # a request is in the table: the spouts may emit it
        self.listener: socket.socket | None = None
        self.connections: dict[int, Connection] = {}
        self.refused_connections = 0
        self.accepting = True

    @property
    def url(self) -> str:
        host = f"[{self.bind}]" if ":" in self.bind else self.bind
        return f"http://{host}:{self.port}"

    # -- listening -------------------------------------------------------------------------------
    def listen(self) -> None:
        """Bind and listen (OSError when the address is taken or not ours); `port` is then the
        one bound (port 0 picks one)."""
        family = socket.AF_INET6 if ":" in self.bind else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.bind, self.port))
            sock.listen(BACKLOG)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        self.listener = sock
        self.port = sock.getsockname()[1]
        self.loop.watch_read(sock.fileno(), self._accept)

    def _accept(self) -> None:
        listener = self.listener
        assert listener is not None
        for _ in range(64):  # a burst of connections does not starve the tasks' pipes
            try:
                sock, _addr = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    log.warning("DRPC server cannot accept a connection: %s", exc)
                    return
                continue  # the client went away before it was accepted
            if len(self.connections) >= self.max_connections or not self.accepting:
                self.refused_connections += 1
                sock.close()
                continue
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = Connection(sock, self.max_body)
            self.connections[conn.fd] = conn
            self._watch(conn, "r")

    def _watch(self, conn: Connection, how: str) -> None:
        if conn.watched == how:
            return
        if conn.watched:
            self.loop.unwatch(conn.fd)
        conn.watched = how
        if how == "r":
            self.loop.watch_read(conn.fd, lambda: self._readable(conn))
        elif how == "w":
            self.loop.watch_write(conn.fd, lambda: self._writable(conn))

    # -- reading ---------------------------------------------------------------------------------
    def _readable(self, conn: Connection) -> None:
        try:
            data = conn.sock.recv(READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._close(conn)
            return
        conn.reader.feed(data)
        self._next(conn)

    def _next(self, conn: Connection) -> None:
        """Serve the next complete request the connection sent, if it is free for one."""
        while not conn.closed and conn.pending is None and not conn.out:
            try:
                req = conn.reader.next_request()
            except HttpError as exc:
                self._send(conn, http_error_response(exc, keep_alive=False), keep_alive=False)
                return
            if req is None:
                if conn.reader.take_continue():
                    self._send(conn, CONTINUE, keep_alive=True)
                self._watch(conn, "w" if conn.out else "r")
                return
            keep_alive = req.keep_alive and self.accepting
            try:
                function, args = drpc_route(req)
            except HttpError as exc:
                self._send(conn, http_error_response(exc, keep_alive=keep_alive), keep_alive)
                continue
            conn.keep_alive = keep_alive
            outcome = self.table.submit(function, args, self.loop.now, self._answer_to(conn))
            if isinstance(outcome, Answer):
                self._send(conn, _response(outcome, keep_alive), keep_alive)
                continue
            conn.pending = outcome
            if conn.watched:  # nothing to read until it is answered
                self.loop.unwatch(conn.fd)
                conn.watched = ""
            self.on_request()

    def _answer_to(self, conn: Connection) -> Callable[[PendingRequest, Answer], None]:
        def answer(request: PendingRequest, outcome: Answer) -> None:
            if conn.pending is not request or conn.closed:
                return  # its client went away: the answer goes nowhere
            conn.pending = None
            self._send(conn, _response(outcome, conn.keep_alive), conn.keep_alive)
            if not conn.closed and not conn.out:
                self._next(conn)  # a pipelined request, or wait for one

        return answer

    # -- writing ---------------------------------------------------------------------------------
    def _send(self, conn: Connection, data: bytes, keep_alive: bool) -> None:
        if conn.closed:
            return
        if not keep_alive:
            conn.keep_alive = False
        if conn.out:
            conn.out += data
            return
        try:
            sent = conn.sock.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            self._close(conn)
            return
        if sent < len(data):
            conn.out = data[sent:]
            self._watch(conn, "w")
        elif not keep_alive:
            self._close(conn)

    def _writable(self, conn: Connection) -> None:
        try:
            sent = conn.sock.send(conn.out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close(conn)
            return
        conn.out = conn.out[sent:]
        if conn.out:
            return
        if not conn.keep_alive:
            self._close(conn)
        elif conn.pending is None:
            self._watch(conn, "r")
            self._next(conn)
        else:
            self._watch(conn, "")

    # -- closing ---------------------------------------------------------------------------------
    def _close(self, conn: Connection) -> None:
        if conn.closed:
            return
        conn.closed = True
        if conn.watched:
            self.loop.unwatch(conn.fd)
            conn.watched = ""
        self.connections.pop(conn.fd, None)
        if conn.pending is not None:
            self.table.abandon(conn.pending)
            conn.pending = None
        try:
            conn.sock.close()
        except OSError:
            pass

    def stop_accepting(self) -> None:
        """The host drains: no new connection; answers close their connections."""
        self.accepting = False
        if self.listener is not None:
            self.loop.unwatch(self.listener.fileno())
            self.listener.close()
            self.listener = None

    def close(self) -> None:
        self.stop_accepting()
        for conn in list(self.connections.values()):
            self._close(conn)


def _response(answer: Answer, keep_alive: bool) -> bytes:
    if answer.error is None:
        return text_response(200, answer.text, keep_alive=keep_alive)
    extra = (
        (("Retry-After", "1"),) if answer.status == 503 and answer.error == "SERVER_BUSY" else ()
    )
    return error_response(
        answer.status, answer.error, answer.text, keep_alive=keep_alive, extra_headers=extra
    )
