"""One gRPC call over raw HTTP/2 (h2), for metadata grpc's own client refuses to send.

grpc-python's client will not put CR, LF, ESC, NUL or non-ASCII bytes into a metadata value, but
the server's HTTP/2 stack receives whatever a peer sends; these tests send it as a hostile peer
would. Unary calls only: one request message, the reply's headers, trailers and message bytes.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote

import h2.config
import h2.connection
import h2.events


@dataclass(frozen=True)
class RawReply:
    """What came back: gRPC status code (an int), its message, every header and trailer, the reply."""

    status: int
    message: str
    metadata: dict[bytes, bytes]
    body: bytes


def raw_unary_call(
    address: str, method: str, request: bytes, metadata: Sequence[tuple[bytes, bytes]], *, timeout: float = 20
) -> RawReply:
    """Send ``request`` (a serialized message) to ``method`` (``/pkg.Service/Method``) with ``metadata``
    added to the headers exactly as given, and wait for the whole answer."""
    host, _, port = address.rpartition(":")
    config = h2.config.H2Configuration(
        client_side=True,
        header_encoding=None,
        validate_outbound_headers=False,
        normalize_outbound_headers=False,
        validate_inbound_headers=False,
    )
    connection = h2.connection.H2Connection(config=config)
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        connection.initiate_connection()
        stream = connection.get_next_available_stream_id()
        headers = [
            (b":method", b"POST"),
            (b":scheme", b"http"),
            (b":path", method.encode()),
            (b":authority", address.encode()),
            (b"content-type", b"application/grpc"),
            (b"te", b"trailers"),
            *metadata,
        ]
        connection.send_headers(stream, headers)
        connection.send_data(stream, b"\0" + len(request).to_bytes(4, "big") + request, end_stream=True)
        sock.sendall(connection.data_to_send())
        return _read_reply(sock, connection, stream)


def _read_reply(sock: socket.socket, connection: h2.connection.H2Connection, stream: int) -> RawReply:
    received: dict[bytes, bytes] = {}
    body = b""
    ended = False
    while not ended:
        chunk = sock.recv(65536)
        if not chunk:
            break
        for event in connection.receive_data(chunk):
            if isinstance(event, h2.events.ResponseReceived | h2.events.TrailersReceived):
                received.update((bytes(k), bytes(v)) for k, v in event.headers or ())
            elif isinstance(event, h2.events.DataReceived) and event.data is not None:
                body += event.data
                connection.acknowledge_received_data(event.flow_controlled_length or 0, stream)
            elif isinstance(event, h2.events.StreamEnded | h2.events.StreamReset):
                ended = event.stream_id == stream
        sock.sendall(connection.data_to_send())
    status = received.get(b"grpc-status")
    if status is None:
        raise ConnectionError(f"no grpc-status in the answer: {received!r}")
    message = unquote(received.get(b"grpc-message", b"").decode("ascii", "replace"))
    return RawReply(int(status), message, received, body[5:])
