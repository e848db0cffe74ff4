"""`quco-emu gdb` driven by real GDB (Debian's gdb-multiarch, batch mode) and by raw sockets.

Expectations come from outside the stub: the counts of an undisturbed Device run with the
same profile, the LDS bytes that run leaves, values derived from the kernel file and the
GST preset in float32 (numpy), the RISC-V calling convention (a float argument arrives in
fa0), and the remote protocol's own framing rules. Every GDB run and socket read has a
timeout, and every server thread is joined with one, so a stuck stub fails a test instead
of hanging it."""
import shutil
import socket
import subprocess
import sys
import threading

import numpy as np
import pytest

from conftest import MM_KERNEL
from quco.emulator import elf, gdbstub, rsp
from quco.emulator.debug import Target
from quco.gst import abi, tables
from quco.cli import main as cli
from quco.host.device import Device
from quco.kernel.format import load_kernel

GDB = "gdb-multiarch"
TIMEOUT = 180  # a bound for a hung gdb or stub, generous for a loaded machine (issue 28)
KERNEL = load_kernel(MM_KERNEL)
GST = tables.load("r9-nano")
SW_ZERO_TO_ROM = (0x0000_2023).to_bytes(4, "little")  # sw zero, 0(zero)


@pytest.fixture(scope="module")
def expected(elf_path):
    """Counts and LDS bytes of an undisturbed run: boot, cold launch, cached relaunch."""
    dev = Device(GST, elf_path, profile="cv32e40p")
    cold, cached = dev.launch(KERNEL), dev.launch(KERNEL)
    return {"boot": dev.boot_cost, "launch 1": cold.cost, "launch 2": cached.cost, "lds": cold.lds,
            "lds after 2": dev.lds_window()[:len(cold.lds)]}


@pytest.fixture(scope="module")
def gdb(elf_path):
    if not shutil.which(GDB):
        pytest.fail(f"{GDB} missing: make test installs it (Debian package gdb-multiarch)")

    def run(port, *commands):
        argv = [GDB, "-nx", "--batch", "-ex", "set pagination off", "-ex", "set confirm off", str(elf_path),
                "-ex", f"target remote 127.0.0.1:{port}"]
        for c in commands:
            argv += ["-ex", c]
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT)
        return done.stdout
    return run


class Server:
    """gdbstub.serve in a thread on a free loopback port."""

    def __init__(self, target: Target):
        self.target, self.log, self.end = target, [], None
        self.sock = gdbstub.listen("127.0.0.1", 0)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        self.end = gdbstub.serve(self.target, self.sock, self.log.append)

    def join(self):
        self.thread.join(TIMEOUT)
        assert not self.thread.is_alive(), "the server did not end"
        return self.end


def target(elf_path, launches=1) -> Target:
    return Target(elf.load(elf_path), GST, KERNEL.record(), launches=launches)


def counts(step) -> str:
    return f"{step.instructions:,} instructions, {step.cycles:,} cycles (cv32e40p)"


# ---------------------------------------------------------------- real GDB
def test_debug_session_from_reset_to_the_end(elf_path, gdb, expected):
    g = tables.unpack(GST)
    cpb = np.float32(g["core_clock_mhz"] * g["num_cus"]) / np.float32(g["dram_bw_mbps"])
    server = Server(target(elf_path))
    out = gdb(server.port,
              "hbreak set_rates", "continue",            # boot: gst_derive's first set_rates(p, clock, 1)
              "printf \"ARG wfs=%u\\n\", wfs", "printf \"ARG clock=%u\\n\", clock", "next", "next", "p cpb",
              "p/x $fs0", "p/x $fa0", "p/x $fa5", "p/x $ft0", "p/x $fa4",
              "printf \"N0=%u\\n\", $minstret", "stepi 3", "printf \"N3=%u\\n\", $minstret",
              "set {int}0 = 5",                          # ROM: refused
              "delete", "break fits", "continue",        # to the end of boot (wfi)
              "continue",                                # launch 1 pushed: the planner's fits()
              "p p->ci", "printf \"TK=%u\\n\", tile_log2", "next",
              "delete", "watch *(unsigned int *)0x40000004", "continue",  # the LDS header's generation
              "continue", "x/8xw 0x40000000", "monitor counts", "continue")
    assert server.join() == "exit"
    assert "Breakpoint 1, set_rates (" in out and "ARG wfs=1" in out and f"ARG clock={g['core_clock_mhz']}" in out
    assert f"= 0x{cpb.view(np.uint32):08x}" in out           # the float local, in an FP register
    assert f"= {float(cpb):g}" in out
    n0, n3 = (int(out.split(f"{k}=")[1].split()[0]) for k in ("N0", "N3"))
    assert n3 - n0 == 3                                      # minstret: the model's count
    assert "Cannot access memory at address 0x0" in out
    assert f"quco: boot ended in wfi: {counts(expected['boot'])}" in out
    assert "Breakpoint 2, fits (" in out
    assert f"= {np.float32(KERNEL.compute_intensity):.9g}" in out    # planner_t.ci
    assert "TK=" in out
    assert "Hardware watchpoint 3: *(unsigned int *)0x40000004" in out
    assert "Old value = 0" in out and "New value = 1" in out
    assert f"quco: launch 1 ended in wfi: {counts(expected['launch 1'])}" in out
    words = [int.from_bytes(expected["lds"][i:i + 4], "little") for i in range(0, 32, 4)]
    assert "0x40000000:\t" + "\t".join(f"0x{w:08x}" for w in words[:4]) in out
    assert f"boot: {counts(expected['boot'])}" in out and f"launch 1: {counts(expected['launch 1'])}" in out
    assert "exited normally" in out
    assert any("refused a write of 4 B at 0x00000000: read-only ROM" in line for line in server.log)


def test_single_steps_and_breakpoints_keep_the_counts_exact(elf_path, gdb, expected):
    # a real session: 2,000 single steps into boot, then breakpoints inside the launches
    server = Server(target(elf_path, launches=2))
    out = gdb(server.port, "stepi 2000", "printf \"N=%u\\n\", $minstret", "break fits", "continue",
              "continue", "stepi 50", "continue", "continue", "delete", "continue", "continue")
    assert server.join() == "exit"
    assert "N=2000" in out
    for name in ("boot", "launch 1", "launch 2"):
        assert f"quco: {name} ended in wfi: {counts(expected[name])}" in out


@pytest.mark.parametrize("steps", [1, 7, 333])
def test_stepping_every_instruction_counts_like_an_undisturbed_run(elf_path, expected, steps):
    # without GDB: resume `steps` instructions at a time, and with breakpoints every few
    # instructions; both must give the counts of the undisturbed run, step by step
    t = target(elf_path, launches=2)
    t.soc.breakpoints = {a: bool(a & 4) for a in range(0, 4096, 4 * steps)}
    seen, resumes = [], 0
    while True:
        resumes += 1
        stop = t.resume(step=resumes % 3 == 0)  # single steps between breakpoint stops
        if stop.kind == "sleep":
            seen.append((stop.step.instructions, stop.step.cycles))
        elif stop.kind == "exit":
            break
        assert stop.kind in ("sleep", "step", "breakpoint")
    assert seen == [(expected[k].instructions, expected[k].cycles) for k in ("boot", "launch 1", "launch 2")]
    assert t.soc.lds(len(expected["lds"])) == expected["lds after 2"]


def test_a_fault_is_a_clean_stop_and_then_ends_the_session(elf_path, gdb):
    t = target(elf_path)
    t.run_boot()                      # stopped at the launch's first instruction
    resume = t.soc.pc
    t.soc.write(resume, SW_ZERO_TO_ROM)  # the host patches ROM; the core's store must fault
    server = Server(t)
    out = gdb(server.port, "printf \"PC=%x\\n\", $pc", "continue", "printf \"PC=%x\\n\", $pc", "continue")
    assert server.join() == "exit"
    assert out.count(f"PC={resume:x}") == 2                 # stopped at the faulting store itself
    assert "Program received signal SIGSEGV" in out
    assert "write to read-only memory: store of 4 B to ROM address=0x00000000" in out
    assert "Program terminated with signal SIGSEGV" in out
    assert t.fault is not None


# ---------------------------------------------------------------- the protocol, raw
def frame(payload: bytes) -> bytes:
    return b"$" + payload + b"#" + rsp.checksum(payload)


class Client:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        # as GDB's own remote socket does (ser-tcp.c): without it Nagle's algorithm holds each
        # small packet sent after an unacknowledged one until the stub's delayed ACK, ~40 ms an
        # exchange, time the stub spends waiting and the tests nothing
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def raw(self, data: bytes):
        self.sock.sendall(data)

    def reply(self) -> bytes:
        """The next packet's payload; acks before it are skipped, the packet is acked."""
        while True:
            start = self.buf.find(b"$")
            end = self.buf.find(b"#", start)
            if start >= 0 and end >= 0 and len(self.buf) >= end + 3:
                payload = self.buf[start + 1:end]
                assert self.buf[end + 1:end + 3] == rsp.checksum(payload)
                self.buf = self.buf[end + 3:]
                self.sock.sendall(b"+")
                return payload
            data = self.sock.recv(65536)
            assert data, "the server closed the connection"
            self.buf += data

    def ask(self, payload: bytes) -> bytes:
        self.raw(frame(payload))
        return self.reply()

    def close(self):
        self.sock.close()


def test_malformed_packets_get_errors_and_the_session_goes_on(elf_path):
    server = Server(target(elf_path))
    c = Client(server.port)
    c.raw(b"hello\x00\xff")                          # noise outside a packet: ignored
    c.raw(b"$?#00")                                  # bad checksum: NAK, asked again
    assert c.sock.recv(1) == b"-"
    for bad in (b"m zz,qq", b"mffffffff", b"P21", b"Z0,xyz", b"M0,4:zz", b"X10000000,8:ab", b"qXfer:features"):
        assert c.ask(bad).startswith(b"E"), bad
    assert c.ask(b"vUnknownPacket") == b""            # unknown: the empty reply
    assert c.ask(b"?") == b"S05"
    assert c.ask(b"p20") == b"00000000"               # pc at reset (_start, 0x0)
    assert c.ask(b"M10000100,4:78563412") == b"OK"    # DATA is writable
    assert c.ask(b"m10000100,4") == b"78563412"
    assert c.ask(b"D") == b"OK"
    c.close()
    assert server.join() == "detach"


def test_a_packet_over_the_maximum_size_is_refused_and_the_session_goes_on(elf_path):
    server = Server(target(elf_path))
    c = Client(server.port)
    assert b"PacketSize=%x" % rsp.MAX_PACKET in c.ask(b"qSupported:swbreak+")
    huge = b"M10000000,8000:" + b"00" * 0x8000       # 65 KB > PacketSize
    assert c.ask(huge) == b"E01"
    c.raw(b"$" + b"a" * 200_000)                      # never terminated while it grows...
    c.raw(b"#00")                                     # ...then ends: dropped, answered
    assert c.reply() == b"E01"
    assert c.ask(b"m0,4") == bytes(elf.load(elf_path).segments[0][1][:4]).hex().encode()
    assert c.ask(b"D") == b"OK"
    c.close()
    assert server.join() == "detach"


def test_a_client_that_disconnects_mid_session_leaves_the_unit_for_the_next(elf_path, expected):
    server = Server(target(elf_path))
    c = Client(server.port)
    c.raw(b"$qSupp")                                  # half a packet, then gone
    c.close()
    c = Client(server.port)
    c.raw(frame(b"c"))                                # boot runs; the client leaves before the reply
    c.close()
    c = Client(server.port)
    assert c.ask(b"?") == b"T05"                      # the stop it missed: boot ended in wfi
    assert server.target.steps[0][1].instructions == expected["boot"].instructions
    assert c.ask(b"qRcmd," + b"counts".hex().encode()).startswith(b"O")
    assert c.reply() == b"OK"
    c.raw(frame(b"k"))                                # kill: no reply, the server ends
    assert server.join() == "kill"
    c.close()
    assert any("client went away" in line for line in server.log)


def test_writes_to_read_only_and_unmapped_memory_are_refused(elf_path):
    server = Server(target(elf_path))
    c = Client(server.port)
    for address in (abi.ROM.base, abi.GST_REGION.base, abi.DATA.base + abi.DATA.size - 2, 0x5000_0000):
        assert c.ask(b"M%x,4:01020304" % address) == b"E01"
    assert c.ask(b"m50000000,4") == b"E01"
    assert c.ask(b"Z2,20000000,4") == b"E01"          # no watchpoint on the GST
    assert c.ask(b"Z2,10000000,4") == b"OK" and c.ask(b"z2,10000000,4") == b"OK"
    assert c.ask(b"D") == b"OK"
    c.close()
    assert server.join() == "detach"
    assert bytes(server.target.soc.read(abi.GST_REGION.base, 4)) == GST[:4]


# ---------------------------------------------------------------- the command line
@pytest.mark.parametrize("argv,message", [
    (["--port", "70000"], "--port 70000: expected a port number 0..65535"),
    (["--port", "abc"], "--port abc: expected a port number"),
    (["--port", "0.0.0.0:1234"], "0.0.0.0 is not a loopback address"),
    (["--port", "192.0.2.1:0", "--listen", "192.0.2.7"], "192.0.2.1 is not a loopback address"),
    (["--port", "example.org:1234"], "example.org: not a numeric IP address"),
    (["--launches", "0", "--port", "0"], "--launches '0': expected a whole number 1..10000"),
    (["--launches", "٣", "--port", "0"], "--launches '٣': expected a whole number 1..10000 in digits 0-9"),
    (["--port", "²"], "--port ²: expected a port number 0..65535 in digits 0-9"),
    (["--port", "9" * 5000], "expected a port number 0..65535"),
])
def test_bad_addresses_are_refused_with_exit_code_2(capsys, elf_path, argv, message):
    code = cli.main(["gdb", str(MM_KERNEL), "--firmware", str(elf_path), *argv])
    out, err = capsys.readouterr()
    assert code == cli.EXIT_INPUT and message in err.replace("\n", " ")
    assert "Traceback" not in out + err


def test_busy_port_is_refused_with_exit_code_2(capsys, elf_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        code = cli.main(["gdb", str(MM_KERNEL), "--firmware", str(elf_path), "--port", str(port)])
    out, err = capsys.readouterr()
    assert code == cli.EXIT_INPUT
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in err.replace("\n", " ")


def test_cli_prints_the_attach_command_and_serves_until_the_end(elf_path, gdb, expected):
    proc = subprocess.Popen([sys.executable, "-m", "quco.cli.main", "gdb", str(MM_KERNEL), "--firmware",
                             str(elf_path), "--port", "0", "--at", "launch"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        banner = [proc.stdout.readline() for _ in range(3)]
        assert "stopped at the first instruction of launch 1" in banner[0]
        command = banner[2].strip()
        assert command.startswith(f"{GDB} {elf_path} -ex 'target remote 127.0.0.1:")
        port = int(command.rsplit(":", 1)[1].rstrip("'"))
        out = gdb(port, "monitor counts", "continue", "continue")
        rest, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert f"boot: {counts(expected['boot'])}" in out
    assert f"quco: launch 1 ended in wfi: {counts(expected['launch 1'])}" in out
    assert "session ended (exit)" in rest and f"launch 1: {counts(expected['launch 1'])}" in rest


def test_register_writes_of_the_wrong_width_are_refused(elf_path):
    """Issue #24: every register is 32 bits; an 80-bit (x87-style) or 64-bit value is an error,
    not a silent truncation, and the register keeps its value."""
    server = Server(target(elf_path))
    c = Client(server.port)
    assert c.ask(b"Pa=78563412") == b"OK" and c.ask(b"pa") == b"78563412"          # a0, 32 bits
    assert c.ask(b"Pa=" + b"11" * 10) == b"E01" and c.ask(b"pa") == b"78563412"    # 80 bits
    assert c.ask(b"P2b=" + b"22" * 8) == b"E01"                                     # fa0, 64 bits
    assert c.ask(b"Pa=1234") == b"E01"                                              # 16 bits
    assert c.ask(b"G" + b"00" * 6) == b"E01"                                        # half a register
    assert c.ask(b"G" + b"00" * (4 * gdbstub.NUM_REGS + 4)) == b"E01"               # one too many
    assert c.ask(b"pa") == b"78563412"
    assert c.ask(b"D") == b"OK"
    c.close()
    assert server.join() == "detach"


@pytest.mark.parametrize("opening", [b"", b"$qSupp"], ids=["says nothing", "half a packet"])
def test_a_silent_client_does_not_hold_the_stub(elf_path, monkeypatch, opening):
    """One client at a time: one that connects and sends nothing (or half a packet) is dropped
    after SILENT_CLIENT_S, and the next client is served."""
    monkeypatch.setattr(rsp, "SILENT_CLIENT_S", 0.5)
    server = Server(target(elf_path))
    silent = Client(server.port)
    silent.raw(opening)
    c = Client(server.port)                           # queued behind the silent one
    assert b"PacketSize" in c.ask(b"qSupported")
    assert c.ask(b"?") == b"S05"
    assert c.ask(b"D") == b"OK"
    c.close()
    silent.close()
    assert server.join() == "detach"
    assert any("sent no first packet in 0.5 s" in line for line in server.log), server.log


def test_a_debugger_may_think_between_packets(elf_path, monkeypatch):
    """After its first packet a client may wait as long as it likes between packets."""
    monkeypatch.setattr(rsp, "SILENT_CLIENT_S", 0.2)
    server = Server(target(elf_path))
    c = Client(server.port)
    assert c.ask(b"?") == b"S05"
    threading.Event().wait(0.6)                       # three times the limit, between packets
    assert c.ask(b"p20") == b"00000000"
    assert c.ask(b"D") == b"OK"
    c.close()
    assert server.join() == "detach"
