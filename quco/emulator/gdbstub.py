"""A GDB remote-serial-protocol server for the emulated QuCo unit (`quco-emu gdb`).

Registers are described to GDB by a target description: the RV32 integer registers and
pc (org.gnu.gdb.riscv.cpu), the 32 single-precision FP registers with fflags, frm and fcsr
(org.gnu.gdb.riscv.fpu, 32 bits wide: the core is RV32F), and mcycle/minstret
(org.gnu.gdb.riscv.csr) holding the *model's* counts since reset, read-only (Unicorn's
own counters are host time). Memory reads and writes follow the memory map (a write to ROM
or the GST is refused with an error, as GDB expects of read-only memory). Breakpoints are
kept by the server (Z0 and Z1 alike: the ROM is never patched); watchpoints (Z2 write,
Z3 read, Z4 access) cover the data buffer, the mailbox and the LDS window.

The server listens on one address (127.0.0.1 unless the CLI was told otherwise) and serves
one client at a time. A client that goes away leaves the unit as it was for the next one;
detach (D), kill (k) or the end of the firmware's last step end the server. A packet with
a bad checksum is answered with '-', an oversized or malformed one with an error reply,
an unknown one with the empty reply: none of them ends the session. The packets' framing and
acknowledgements are emulator/rsp.py's.
"""
from __future__ import annotations

import socket

from .debug import SIGTRAP, Stop, Target
from . import rsp
from .rsp import INTERRUPT, MAX_PACKET, Channel, escape
from unicorn.riscv_const import UC_RISCV_REG_F0, UC_RISCV_REG_FCSR, UC_RISCV_REG_FFLAGS, UC_RISCV_REG_FRM, \
    UC_RISCV_REG_X0

ABI = ("zero ra sp gp tp t0 t1 t2 fp s1 a0 a1 a2 a3 a4 a5 a6 a7 s2 s3 s4 s5 s6 s7 s8 s9 s10 s11 "
       "t3 t4 t5 t6").split()
FABI = ("ft0 ft1 ft2 ft3 ft4 ft5 ft6 ft7 fs0 fs1 fa0 fa1 fa2 fa3 fa4 fa5 fa6 fa7 fs2 fs3 fs4 fs5 fs6 fs7 "
        "fs8 fs9 fs10 fs11 ft8 ft9 ft10 ft11").split()
# remote register numbers: x0..x31 0..31, pc 32, f0..f31 33..64, then these
FP_CSRS = (("fflags", UC_RISCV_REG_FFLAGS), ("frm", UC_RISCV_REG_FRM), ("fcsr", UC_RISCV_REG_FCSR))
COUNTERS = ("mcycle", "minstret")
PC, F0, NUM_REGS = 32, 33, 33 + 32 + len(FP_CSRS) + len(COUNTERS)


def target_xml() -> str:
    def reg(name, kind="int", group=None):
        extra = f' group="{group}"' if group else ""
        return f'    <reg name="{name}" bitsize="32" type="{kind}"{extra}/>\n'
    cpu = "".join(reg(n, "data_ptr" if n in ("sp", "gp", "tp") else "code_ptr" if n == "ra" else "int")
                  for n in ABI) + reg("pc", "code_ptr")
    fpu = "".join(reg(n, "ieee_single", "float") for n in FABI) + "".join(reg(n, "int", "float") for n, _ in FP_CSRS)
    csr = "".join(reg(n, "int", "system") for n in COUNTERS)
    return ('<?xml version="1.0"?>\n<!DOCTYPE target SYSTEM "gdb-target.dtd">\n<target version="1.0">\n'
            '  <architecture>riscv:rv32</architecture>\n'
            f'  <feature name="org.gnu.gdb.riscv.cpu">\n{cpu}  </feature>\n'
            f'  <feature name="org.gnu.gdb.riscv.fpu">\n{fpu}  </feature>\n'
            f'  <feature name="org.gnu.gdb.riscv.csr">\n{csr}  </feature>\n</target>\n')


class Session:
    """One client's conversation with the target."""

    def __init__(self, target: Target, channel: Channel, log=print, last: str = "S05"):
        self.t, self.ch, self.log = target, channel, log
        self.last = last  # the last stop reply ('?'), kept across clients by serve()
        self.features: set[str] = set()
        self.end: str | None = None  # why the session ended: detach, kill, exit

    # ---------------------------------------------------------------- registers
    def _reg(self, n: int) -> int | None:
        uc, soc = self.t.soc.uc, self.t.soc
        if 0 <= n < 32:
            return uc.reg_read(UC_RISCV_REG_X0 + n)
        if n == PC:
            return soc.pc
        if F0 <= n < F0 + 32:
            return uc.reg_read(UC_RISCV_REG_F0 + n - F0) & 0xFFFF_FFFF
        n -= F0 + 32
        if n < len(FP_CSRS):
            return uc.reg_read(FP_CSRS[n][1])
        n -= len(FP_CSRS)
        if n < len(COUNTERS):
            return (self.t.cycles() if n == 0 else self.t.retired()) & 0xFFFF_FFFF
        return None

    def _set_reg(self, n: int, value: int) -> bool:
        uc, soc = self.t.soc.uc, self.t.soc
        if 0 <= n < 32:
            if n:
                uc.reg_write(UC_RISCV_REG_X0 + n, value)
        elif n == PC:
            soc.set_pc(value)
        elif F0 <= n < F0 + 32:
            uc.reg_write(UC_RISCV_REG_F0 + n - F0, value)
        elif F0 + 32 <= n < F0 + 32 + len(FP_CSRS):
            uc.reg_write(FP_CSRS[n - F0 - 32][1], value)
        else:
            return False  # the counters are the model's: read-only
        return True

    # ---------------------------------------------------------------- running
    def _stop_reply(self, stop: Stop) -> tuple[str, str | None]:
        """(stop reply, text for the GDB console or None)."""
        if stop.kind == "breakpoint":
            kind = "hwbreak" if stop.hardware else "swbreak"
            return (f"T05{kind}:;" if kind + "+" in self.features else "T05"), None
        if stop.kind == "watch":
            kind, address = stop.watch
            return f"T05{kind}:{address:x};", None
        if stop.kind == "sleep":
            name = self.t.steps[-1][0]
            nxt = (f"continue to push launch {self.t.pushed + 1} of {self.t.launches}"
                   if self.t.pushed < self.t.launches else "continue to end the session")
            return "T05", (f"quco: {name} ended in wfi: {stop.step.instructions:,} instructions, "
                           f"{stop.step.cycles:,} cycles ({self.t.timer.p.name}); {nxt}\n")
        if stop.kind == "fault":
            return f"T{stop.signal:02x}", f"quco: {self.t.step_name} faulted: {stop.fault}\n"
        if stop.kind == "exit":
            self.end = "exit"
            return (f"X{stop.signal:02x}" if stop.fault else "W00"), None
        return f"T{SIGTRAP:02x}", None

    def _resume(self, step: bool, address: str = "") -> str:
        if address:
            self.t.soc.set_pc(int(address, 16))
        self.last, text = self._stop_reply(self.t.resume(step))
        if text:
            self.log(text.rstrip())
            self.ch.console(text)  # may find the client gone: the stop is kept for the next
        return self.last

    def _vcont(self, args: str) -> str:
        actions = [a.split(":")[0] for a in args.split(";") if a]
        if not actions or any(a[0] not in "cCsS" for a in actions):
            return "E01"
        return self._resume(step=any(a[0] in "sS" for a in actions))

    # ---------------------------------------------------------------- memory
    def _read(self, args: str) -> str:
        address, length = (int(x, 16) for x in args.split(","))
        data = self.t.soc.peek(address, min(length, MAX_PACKET // 2))
        return data.hex() if data else "E01"

    def _write(self, address: int, data: bytes) -> str:
        refused = self.t.soc.poke(address, data) if data else None
        if refused:
            self.log(f"gdb: refused a write of {len(data)} B at {refused}")
            return "E01"
        return "OK"

    def _point(self, insert: bool, args: str) -> str:
        kind, address, length = (int(x, 16) for x in args.split(",")[:3])
        soc = self.t.soc
        if kind in (0, 1):
            if insert:
                soc.breakpoints[address] = kind == 1
            else:
                soc.breakpoints.pop(address, None)
            return "OK"
        if kind in (2, 3, 4):
            point = (address, length, kind)
            if not insert:
                if point in soc.watchpoints:
                    soc.watchpoints.remove(point)
                return "OK"
            if not soc.watchable(address, length):
                self.log(f"gdb: no watchpoint at 0x{address:08x}+{length}: only DATA, MAILBOX and LDS")
                return "E01"
            soc.watchpoints.append(point)
            return "OK"
        return ""

    # ---------------------------------------------------------------- queries
    def _xfer(self, args: str) -> str:
        obj, op, annex, span = args.split(":", 3)
        if (obj, op, annex) != ("features", "read", "target.xml"):
            return "E00" if obj == "features" else ""
        offset, length = (int(x, 16) for x in span.split(","))
        data = target_xml().encode()
        chunk = data[offset:offset + min(length, MAX_PACKET // 2)]
        return ("l" if offset + len(chunk) >= len(data) else "m") + escape(chunk).decode("latin-1")

    def _monitor(self, hexcmd: str) -> str:
        command = bytes.fromhex(hexcmd).decode(errors="replace").strip()
        if command == "counts":
            self.ch.console(self.t.counts())
        else:
            self.ch.console("monitor commands: counts (instructions and modelled cycles per step)\n")
        return "OK"

    def handle(self, packet: bytes) -> str | None:
        """The reply to one packet (None: no reply)."""
        text = packet.decode("latin-1")
        head, rest = text[:1], text[1:]
        if head == "?":
            return self.last
        if head == "g":
            return "".join(self._reg(n).to_bytes(4, "little").hex() for n in range(NUM_REGS))
        if head == "G":  # every register is 32 bits (target_xml): whole registers, at most all of them
            raw = bytes.fromhex(rest)
            if len(raw) % 4 or len(raw) > 4 * NUM_REGS:
                return "E01"
            for n in range(min(len(raw) // 4, NUM_REGS - len(COUNTERS))):
                self._set_reg(n, int.from_bytes(raw[4 * n:4 * n + 4], "little"))
            return "OK"
        if head == "p":
            value = self._reg(int(rest, 16))
            return "E01" if value is None else value.to_bytes(4, "little").hex()
        if head == "P":
            n, value = rest.split("=")
            raw = bytes.fromhex(value)
            if len(raw) != 4:  # an 80-bit (x87) or 64-bit value: not one of these 32-bit registers
                return "E01"
            ok = self._set_reg(int(n, 16), int.from_bytes(raw, "little"))
            return "OK" if ok else "E01"
        if head == "m":
            return self._read(rest)
        if head in "MX":
            spec, data = packet[1:].split(b":", 1)
            address, length = (int(x, 16) for x in spec.decode().split(","))
            data = bytes.fromhex(data.decode()) if head == "M" else data
            if len(data) != length:
                return "E01"
            return self._write(address, data)
        if head in "Zz":
            return self._point(head == "Z", rest)
        if head in "cs":
            return self._resume(head == "s", rest)
        if head in "CS":
            return self._resume(head == "S", rest.split(";")[1] if ";" in rest else "")
        if text == "vCont?":
            return "vCont;c;C;s;S"
        if text.startswith("vCont;"):
            return self._vcont(text[6:])
        if head == "D":
            self.end = "detach"
            return "OK"
        if head == "k" or text.startswith("vKill"):
            self.end = "kill"
            return None if head == "k" else "OK"
        if head == "H" or head == "T":
            return "OK"
        if text.startswith("qSupported"):
            self.features = set(text.split(":", 1)[1].split(";")) if ":" in text else set()
            return (f"PacketSize={MAX_PACKET:x};qXfer:features:read+;swbreak+;hwbreak+;"
                    "vContSupported+;QStartNoAckMode+")
        if text == "QStartNoAckMode":
            self.ch.send("OK")
            self.ch.ack = False
            return None
        if text.startswith("qXfer:"):
            return self._xfer(text[6:])
        if text.startswith("qRcmd,"):
            return self._monitor(text[6:])
        return {"qAttached": "1", "qC": "QC1", "qfThreadInfo": "m1", "qsThreadInfo": "l",
                "qSymbol::": "OK"}.get(text, "")

    def run(self) -> str:
        """Serve until the client leaves ("disconnect") or ends the session."""
        while True:
            try:
                packet = self.ch.receive()
            except TimeoutError:
                self.log(f"gdb: the client sent no {'packet' if self.ch.greeted else 'first packet'} in "
                         f"{rsp.SILENT_CLIENT_S} s; dropped it")
                return "disconnect"
            except (EOFError, ConnectionError, OSError):
                return "disconnect"
            if packet is INTERRUPT:
                continue  # steps end by themselves within the budget; the stop reply follows
            try:
                reply = packet if isinstance(packet, str) else self.handle(packet)
            except OSError:
                return "disconnect"
            except (ValueError, IndexError) as e:  # malformed arguments
                self.log(f"gdb: malformed packet {bytes(packet)[:40]!r}: {e}")
                reply = "E01"
            except Exception as e:  # noqa: BLE001 - a bug here must not take the session down
                self.log(f"gdb: internal error on packet {bytes(packet)[:40]!r}: {type(e).__name__}: {e}")
                reply = "E02"
            try:
                if reply is not None:
                    self.ch.send(reply)
            except OSError:
                return "disconnect"
            if self.end is not None:
                return self.end


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: any free one). Raises OSError."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.bind((host, port))
        sock.listen(1)
    except OSError:
        sock.close()
        raise
    return sock


def serve(target: Target, sock: socket.socket, log=print) -> str:
    """Serve clients one after another until one ends the session; returns how it ended
    (detach, kill, exit). Closes the listening socket."""
    host, port = sock.getsockname()[:2]
    last = "S05"
    try:
        while True:
            conn, peer = sock.accept()
            log(f"gdb: client {peer[0]}:{peer[1]} connected")
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with conn:
                session = Session(target, Channel(conn, log), log, last)
                end, last = session.run(), session.last
            if end != "disconnect":
                return end
            log(f"gdb: client went away; the unit stays as it is, waiting on {host}:{port}")
    finally:
        sock.close()
