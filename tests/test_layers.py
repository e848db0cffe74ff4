"""Issue #22: the package draws as a stack, and every import in it can be followed by path.

`quco.X` is the folder X/ (setup.py's PACKAGES). Inside the package every import of another
module of quco is relative (`from ..gst import abi` is gst/abi.py) and resolves to a file of
the checkout; and it points down the stack of LAYERS, never up: the commands (cli/) on top,
the host library below the models that build on it, the unit's emulator below the library.
Read from the source with ast, so lazy imports inside functions count as much as the
module's own. tests/ and bench/ import the installed package as users do and are not checked.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# top to bottom; a folder imports its own modules and the layers below its own, nothing above
# or beside it
LAYERS = (
    ("cli",),                           # quco-emu: parser, exit codes, one module per area of commands
    ("paper",),                         # the paper's claims and our side of each
    ("workloads",),                     # whole models layer by layer, on the model and the unit
    ("perfmodel",),                     # the performance model that judges configurations
    ("host",),                          # the library: device shim, kernel schema, reference model
    ("emulator",),                      # the Unicorn SoC that runs the firmware
    ("gst", "firmware", "examples"),    # the ABI and presets, the firmware image, the bundled files
)


def packages(root: Path) -> list[str]:
    m = re.search(r"^PACKAGES\s*=\s*\(([^)]*)\)", (root / "setup.py").read_text(), re.M)
    return re.findall(r'"(\w+)"', m.group(1))


def layer_of(folder: str) -> int:
    return next(i for i, names in enumerate(LAYERS) if folder in names)


def bound_names(path: Path) -> set[str] | None:
    """The names a module binds at its top level (None: it may bind any, via * or __getattr__)."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(a.name == "*" for a in node.names):
                return None
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return None if "__getattr__" in names else names


def problems(root: Path, folder: str, path: Path) -> list[str]:
    """What is wrong with the imports of one module of quco.FOLDER, as messages."""
    where = path.relative_to(root) if path.is_relative_to(root) else path
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [f"{where}:{node.lineno}: import {a.name}: absolute; write it relative"
                      for a in node.names if a.name == "quco" or a.name.startswith("quco.")]
            continue
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level == 0:
            if node.module == "quco" or (node.module or "").startswith("quco."):
                found.append(f"{where}:{node.lineno}: from {node.module}: absolute; write it relative")
            continue
        if node.level > 2:
            found.append(f"{where}:{node.lineno}: {node.level} dots reach above quco")
            continue
        parts = ([folder] if node.level == 1 else []) + (node.module.split(".") if node.module else [])
        base = root.joinpath(*parts)
        shown = "." * node.level + (node.module or "")
        if parts and not (base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()):
            found.append(f"{where}:{node.lineno}: from {shown}: no file {'/'.join(parts)}.py or folder")
            continue
        targets = []
        for alias in node.names:
            sub = base / alias.name
            if sub.with_suffix(".py").is_file() or (sub / "__init__.py").is_file():
                targets.append(parts + [alias.name])  # a module of the folder
                continue
            module = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
            names = bound_names(module) if parts else set()
            if names is not None and alias.name not in names:
                found.append(f"{where}:{node.lineno}: from {shown} import {alias.name}: "
                             f"no module and no name {alias.name} in {'/'.join(parts) or 'quco'}")
            targets.append(parts)
        for target in targets:
            other = target[0]
            if other == folder:
                continue
            if other not in packages(root):
                found.append(f"{where}:{node.lineno}: from {shown}: {other} is not a package of setup.py")
            elif layer_of(other) <= layer_of(folder):
                found.append(f"{where}:{node.lineno}: {folder}/ imports {other}/, which is not below it "
                             f"(LAYERS in tests/test_layers.py)")
    return found


def modules(root: Path):
    for folder in packages(root):
        for path in sorted((root / folder).rglob("*.py")):
            yield folder, path


def test_every_package_folder_has_a_layer():
    assert {f for names in LAYERS for f in names} == set(packages(ROOT))


def test_the_package_is_a_stack_of_followable_imports():
    checked = list(modules(ROOT))
    assert len(checked) > 60  # the whole package was read (about 90 modules), not an empty glob
    found = [p for folder, path in checked for p in problems(ROOT, folder, path)]
    assert not found, "\n".join(found)


def test_no_layer_below_the_commands_imports_them():
    """The issue's own check, by text: nothing under the library or the models names cli/."""
    for folder, path in modules(ROOT):
        if folder != "cli":
            text = path.read_text()
            assert "quco.cli" not in text and "..cli" not in text and "from .. import cli" not in text, path


@pytest.mark.parametrize("folder, source, words", [
    ("host", "from ..cli import common\n", "host/ imports cli/, which is not below it"),
    ("perfmodel", "def f():\n    from ..workloads import runner\n", "perfmodel/ imports workloads/"),  # lazy
    ("gst", "from ..firmware import IMAGE\n", "gst/ imports firmware/, which is not below it"),  # beside
    ("host", "from quco.gst import abi\n", "absolute; write it relative"),
    ("host", "import quco.gst.abi as abi\n", "absolute; write it relative"),
    ("host", "from .nowhere import x\n", "no file host/nowhere.py"),
    ("host", "from ..gst.abi import NO_SUCH_NAME\n", "no name NO_SUCH_NAME in gst/abi"),
    ("host", "from ... import x\n", "reach above quco"),
])
def test_the_check_finds_a_wrong_import(tmp_path, folder, source, words):
    """The checker against a copy of the tree with one bad module added: it must say so."""
    (tmp_path / "setup.py").write_text((ROOT / "setup.py").read_text())
    for name in packages(ROOT):
        (tmp_path / name).symlink_to(ROOT / name)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "m.py").write_text(source)
    found = problems(tmp_path, folder, bad / "m.py")
    assert any(words in p for p in found), found


def test_a_good_import_passes(tmp_path):
    found = problems(ROOT, "host", _write(tmp_path, "from ..gst import abi\nfrom .device import Device\n"
                                                    "from ..firmware import IMAGE\nfrom . import atomic\n"))
    assert found == []


def _write(folder: Path, source: str) -> Path:
    path = folder / "m.py"
    path.write_text(source)
    return path
