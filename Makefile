# QuCo: firmware, emulator and tests. Every target installs what it needs on a fresh
# Debian machine: the RISC-V toolchain (Debian package gcc-riscv64-unknown-elf) via apt,
# a host C compiler for the emulator's C counting hooks (gcc, libc6-dev) via apt, GDB for
# the debugger tests (Debian package gdb-multiarch) via apt, the Python package into .venv
# (its [test] extra only for the targets that run tests).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CROSS := riscv64-unknown-elf-
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# no debconf questions or warnings about a missing terminal; apt's own progress kept short
APT := $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get -q -y -o Dpkg::Use-Pty=0
APT_INSTALL = echo "installing $(1) (Debian packages, apt)"; $(APT) update >/dev/null && \
	$(APT) install --no-install-recommends $(1) >/dev/null
FW := quco/firmware
BUILD := $(FW)/build
ELF := $(BUILD)/quco.elf
# -fschedule-insns -fsched-pressure: -Os leaves out the pre-allocation scheduler; with it
# loads move away from their uses (CV32E40P load-use stall) and the ROM does not grow:
# cached relaunch 248 -> 234 cycles, 4 B less ROM (docs/cost-model.md).
CFLAGS := -march=rv32imf -mabi=ilp32f -Os -flto -ffp-contract=off -ffreestanding -fno-builtin \
          -nostdlib -Wall -Wextra -Werror -std=c11 -g -I$(FW)/include \
          -fno-common -ffunction-sections -fdata-sections -msmall-data-limit=0 \
          -fschedule-insns -fsched-pressure
# the same ELF from any checkout folder: debug info names the sources relative to it
REPRO := -ffile-prefix-map=$(CURDIR)=. -Wa,--debug-prefix-map,$(CURDIR)=.
CFLAGS += $(REPRO)
LDFLAGS := -Wl,--gc-sections -Wl,-T,$(FW)/quco.ld -Wl,-Map,$(BUILD)/quco.map
# in name order (algorithm.c first): LTO lays the code out in the order of the sources, and
# with algorithm.c after main.c the ROM grows by 28 bytes, the counts unchanged
FW_SRC := $(wildcard $(FW)/src/*.c)
# crt0 is assembled to an object of its own: assembled inside the link command it would leave
# a temporary file's random name (ccXXXXXX.o) in the ELF's symbol table, so two builds of the
# same sources would differ (the ROM bytes did not; the ELF now does not either)
CRT0 := $(BUILD)/crt0.o
GENERATED := $(FW)/include/quco_abi.h $(FW)/regions.ld docs/abi-tables.md
# codegen also writes the launch record's bounds into the kernel schema (the firmware does not read it)
CODEGEN := $(GENERATED) quco/kernel/kernel.schema.json

.PHONY: all firmware toolchain gdb cc venv venv-test demo test test-all bench fuzz clean
all: firmware

toolchain:
	@command -v $(CROSS)gcc >/dev/null || { $(call APT_INSTALL,gcc-riscv64-unknown-elf binutils-riscv64-unknown-elf); }

gdb:
	@command -v gdb-multiarch >/dev/null || { $(call APT_INSTALL,gdb-multiarch); }

# The C compiler pip builds quco/emulator/_fastcount.c with (Python's own CC, as setuptools picks
# it): without one the install still works, with the Python hooks (2.7 times slower), so
# every make target brings one; a pip install elsewhere treats it as optional (README).
HOST_CC = $(firstword $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_config_var("CC") or "cc")' 2>/dev/null) cc)
cc:
	@command -v $(HOST_CC) >/dev/null || { $(call APT_INSTALL,gcc libc6-dev); }

venv: $(VENV)/.installed
venv-test: $(VENV)/.installed-test
# PYTHONWARNINGS: setuptools' note that an editable install's finder may prefer a folder named
# like the package in the working directory; quco/ is that folder, the same files, so it is moot
$(VENV)/.installed: pyproject.toml setup.py quco/emulator/_fastcount.c | cc
	@command -v $(PYTHON) >/dev/null && $(PYTHON) -c 'import venv, ensurepip' 2>/dev/null || { \
	  $(call APT_INSTALL,python3-venv); }
	$(PYTHON) -m venv $(VENV)
	@echo "pip: upgrading pip in $(VENV)"
	$(BIN)/pip install -q --upgrade pip
	@echo "pip: installing quco-emu (editable) and its dependencies into $(VENV), building the C counting hooks (about a minute)"
	PYTHONWARNINGS="ignore:Editable installation" $(BIN)/pip install -q -e .
	@$(BIN)/python -m quco.emulator.fastcount
	@rm -f $(VENV)/.installed-test
	touch $@

# the test runner, the linter and what only tests use (pytest, pytest-xdist, ruff, hypothesis, onnx, onnxruntime, pyarrow)
$(VENV)/.installed-test: $(VENV)/.installed
	@echo "pip: installing the [test] extra into $(VENV) (pytest, pytest-xdist, ruff, hypothesis, onnx, onnxruntime, sympy, pyarrow)"
	PYTHONWARNINGS="ignore:Editable installation" $(BIN)/pip install -q -e '.[test]'
	touch $@

# One run writes all four; it rewrites only files whose content changed, so touch them all
# to record that they are current (the files are committed; setup.py builds from them).
$(CODEGEN) &: quco/gst/abi.py quco/gst/codegen.py | venv
	$(BIN)/python -m quco.gst.codegen
	@touch $(CODEGEN)

firmware: $(ELF)
# the Makefile is a prerequisite because CFLAGS live in it
$(CRT0): $(FW)/src/crt0.S $(GENERATED) Makefile | toolchain
	@mkdir -p $(BUILD)
	$(CROSS)gcc $(CFLAGS) -c $< -o $@

$(ELF) $(BUILD)/quco.bin $(BUILD)/quco.dump &: $(FW_SRC) $(CRT0) $(wildcard $(FW)/include/*.h) $(GENERATED) \
                                               $(FW)/quco.ld Makefile | toolchain
	@mkdir -p $(BUILD)
	$(CROSS)gcc $(CFLAGS) $(FW_SRC) $(CRT0) $(LDFLAGS) -lgcc -o $(ELF)
	$(CROSS)objcopy -O binary $(ELF) $(BUILD)/quco.bin
	$(CROSS)objdump -d -S $(ELF) > $(BUILD)/quco.dump
	@$(CROSS)size $(ELF)

demo: venv firmware
	$(BIN)/quco-emu launch quco/examples/kernels/matrix-matrix.json

# lint first (pyproject.toml: the rules and why), then the suite on two processes (pytest-xdist,
# CI's 2 cores; a file's tests stay in one process, so its module fixtures are set up once);
# tests marked slow (their depth needs the time, docs/testing.md "Tiers") only in test-all
PYTEST_PARALLEL := -n 2 --dist loadfile
test: venv-test firmware gdb
	$(BIN)/ruff check --quiet .
	$(BIN)/python -m pytest -q $(PYTEST_PARALLEL) -m "not slow"

test-all: venv-test firmware gdb
	$(BIN)/ruff check --quiet .
	$(BIN)/python -m pytest -q $(PYTEST_PARALLEL)

bench: venv firmware
	$(BIN)/python bench/bench.py

fuzz: venv-test firmware
	$(BIN)/python bench/fuzz.py
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest -q tests/test_differential.py tests/test_kernel.py tests/test_perfmodel.py

clean:
	rm -rf $(BUILD) build
