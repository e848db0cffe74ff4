"""The GDB remote serial protocol's wire format: packets framed as $payload#checksum,
acknowledged with + or -, binary data escaped; a ^C byte between packets is an interrupt.
gdbstub.py answers the packets; this module only moves them.
"""
from __future__ import annotations

import socket

MAX_PACKET = 4096  # bytes of payload a packet may carry, both ways (qSupported PacketSize)
INTERRUPT = object()
SILENT_CLIENT_S = 10  # a client's first packet, and the rest of a packet it began, within this


def checksum(payload: bytes) -> bytes:
    return b"%02x" % (sum(payload) & 0xFF)


def escape(data: bytes) -> bytes:
    """Binary data in a reply: $, #, } and * escaped as } and the byte xor 0x20."""
    out = bytearray()
    for b in data:
        if b in b"$#}*":
            out += bytes((0x7D, b ^ 0x20))
        else:
            out.append(b)
    return bytes(out)


def unescape(data: bytes) -> bytes:
    out, it = bytearray(), iter(data)
    for b in it:
        out.append(next(it, 0x20) ^ 0x20 if b == 0x7D else b)
    return bytes(out)


class Channel:
    """Packets over a connected socket: framing, checksums, acknowledgements."""

    def __init__(self, sock: socket.socket, log=print):
        self.sock, self.buf, self.ack, self.log = sock, bytearray(), True, log
        self.greeted = False  # a whole packet has arrived: this is a debugger, not a silent peer

    def _more(self, waiting: bool = False):
        """More bytes. Between packets of a client that spoke already, wait as long as it
        likes (a person at GDB); before its first packet and inside a packet, at most
        SILENT_CLIENT_S, so a peer that connects and says nothing cannot hold the stub (one
        client at a time) from every other (TimeoutError)."""
        self.sock.settimeout(None if waiting and self.greeted else SILENT_CLIENT_S)
        data = self.sock.recv(65536)
        if not data:
            raise EOFError
        self.buf += data

    def receive(self):
        """The next packet's payload (bytes), INTERRUPT for a ^C, or an error reply (str)
        to send back for an oversized packet. Raises EOFError when the client is gone."""
        while True:
            while not self.buf:
                self._more(waiting=True)
            head = self.buf[0]
            if head == 0x03:
                del self.buf[0]
                return INTERRUPT
            if head != ord("$"):  # acks and noise between packets
                del self.buf[0]
                continue
            end, dropped = self.buf.find(b"#"), 0
            while end < 0 or len(self.buf) < end + 3:
                if end < 0 and len(self.buf) > MAX_PACKET + 1:  # keep the memory bounded
                    dropped += len(self.buf) - 1
                    del self.buf[1:]
                self._more()
                end = self.buf.find(b"#")
            payload, sent = bytes(self.buf[1:end]), bytes(self.buf[end + 1:end + 3])
            del self.buf[:end + 3]
            if dropped or len(payload) > MAX_PACKET:
                self.log(f"gdb: dropped a packet of {dropped + len(payload):,} bytes (at most {MAX_PACKET:,})")
                self._ack(b"+")
                return "E01"
            if sent.lower() != checksum(payload):
                self.log("gdb: packet with a bad checksum, asked for it again")
                self._ack(b"-")
                continue
            self._ack(b"+")
            self.greeted = True
            return unescape(payload)

    def _ack(self, byte: bytes):
        if self.ack:
            try:
                self.sock.sendall(byte)
            except OSError:  # gone already: still carry out what it sent; the reply will fail
                pass

    def send(self, payload: str | bytes):
        data = payload.encode("latin-1") if isinstance(payload, str) else payload
        self.sock.sendall(b"$" + data + b"#" + checksum(data))

    def console(self, text: str):
        """Text for the GDB console (an O packet), while the target runs."""
        self.send("O" + text.encode().hex())
