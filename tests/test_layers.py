"""Issues #22 and #32: the package draws as a diamond, and every import in it can be followed by path.

The package is the folder quco/: `quco.host.device` is quco/host/device.py, and a module's own
path says what its relative imports mean (`from ..gst import abi` in quco/host/device.py is
quco/gst/abi.py), with no installed package or package map to ask. Inside the package every
import of another module of quco is relative and resolves to a file of the checkout; it points
down the LAYERS, never up or sideways: the commands (cli/) on top, then the paper, whole models and
the harness that judges the firmware's pick with the model; below the harness two SIDES that do not
import each other, the performance model (perfmodel/) and the device (host/, emulator/, firmware/);
the specification floor (kernel/, gst/) and the utilities (util/) under both. `importlib.import_module` with a
literal name counts as an import (one with a computed name cannot be followed, so it is refused),
and the modules of one folder import each other without a cycle. Read from the source with ast,
so lazy imports inside functions count as much as the module's own. tests/ and bench/ import the
installed package as users do and are not checked.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOP = "quco"

# top to bottom; a folder imports its own modules and the layers below its own, nothing above
# or beside it (the folders of one row do not import each other)
LAYERS = (
    ("cli",),                           # quco-emu: parser, exit codes, one module per area of commands
    ("paper",),                         # the paper's claims and our side of each
    ("workloads",),                     # whole models layer by layer, on the model and the unit
    ("harness",),                       # the firmware's pick judged by the model (evaluate, sweep)
    ("perfmodel", "host"),              # the performance model | the device library, reference model
    ("emulator",),                      # the Unicorn SoC that runs the firmware
    ("kernel",),                        # the kernel format: kernel.json, checked and packed
    ("gst", "firmware", "examples"),    # the ABI and presets, the firmware image, the bundled files
    ("util",),                          # reading input, atomic writes, the parallel executor
)
# The diamond's two sides: no arrow between folders of different sides, at any layer (the
# emulator and the firmware image are below the model's row, and still not the model's).
SIDES = {"perfmodel": "model", "host": "device", "emulator": "device", "firmware": "device"}


# Cycles inside a folder that were there when the check came (issue #32), each broken at import
# time by a lazy or a last-line import; a new cycle fails, and so does an entry no longer there.
# Kept after issue #32's diamond: the paper's is a registry (every reader of measures.MEASURES,
# tests and cli/paper.py among them, would have to import hardware.py itself to see its measures);
# the model's search/space one was left to the rework of search and space then under way (sim/window
# was broken when sim.py was split: window imports the Model from cu_model.py).
KNOWN_CYCLES = {
    ("quco/paper/hardware.py", "quco/paper/measures.py"):
        "measures.py imports hardware.py on its last line so that its measures register; hardware.py "
        "builds on measures' Check and _measure",
    ("quco/perfmodel/search.py", "quco/perfmodel/space.py"):
        "search.exhaustive imports space lazily; space builds on search's Ranked",
}


def packages(root: Path) -> list[str]:
    """The package's folders: every folder of quco/ with an __init__.py (what pyproject finds)."""
    return sorted(p.name for p in (root / TOP).iterdir() if (p / "__init__.py").is_file())


def layer_of(folder: str) -> int:
    return next(i for i, names in enumerate(LAYERS) if folder in names)


def arrow_problem(folder: str | None, other: str) -> str | None:
    """Why `folder`/ may not import `other`/ (a folder of the package), or None when it may."""
    if folder is None:  # quco/__init__.py imports nothing of the package
        return f"quco/__init__.py imports {other}/"
    sides = SIDES.get(folder), SIDES.get(other)
    if None not in sides and sides[0] != sides[1]:
        return (f"{folder}/ imports {other}/ across the diamond: the performance model and the device "
                f"(host/, emulator/, firmware/) do not import each other (SIDES in tests/test_layers.py)")
    if layer_of(other) <= layer_of(folder):
        return f"{folder}/ imports {other}/, which is not below it (LAYERS in tests/test_layers.py)"
    return None


def module_file(root: Path, parts: list[str]) -> Path | None:
    """quco/a/b.py or quco/a/b/__init__.py for the dotted name parts ['quco', 'a', 'b'], if there."""
    base = root.joinpath(*parts)
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def package_of(root: Path, path: Path) -> list[str]:
    """The dotted package a module file belongs to, from its path: quco/host/device.py -> quco.host."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return parts[:-1]  # quco/host/device -> quco.host; quco/host/__init__ -> quco.host too


_TREES: dict[str, ast.Module] = {}


def parse(path: Path) -> ast.Module:
    """The module's syntax tree, parsed once per source text and only read: each `from X import
    name` reads X's names, and a planted copy's files are links to the checkout's (the tests
    below parsed the same 106 sources 1,333 times)."""
    text = path.read_text()
    if text not in _TREES:
        _TREES[text] = ast.parse(text, str(path))
    return _TREES[text]


def bound_names(path: Path) -> set[str] | None:
    """The names a module binds at its top level (None: it may bind any, via * or __getattr__)."""
    names = set()
    for node in parse(path).body:
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


def _literal(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def dynamic_import(node: ast.Call) -> tuple[str | None, int, str] | None:
    """(name, dots, as written) of `importlib.import_module(name[, package])` or `__import__(name)`;
    name None when it is computed. `package` is taken to be the module's own (__package__ or
    __name__ in an __init__), the only anchor a reader of the file can check."""
    f = node.func
    called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    if called not in ("import_module", "__import__") or not node.args:
        return None
    name = _literal(node.args[0])
    if name is None:
        return None, 0, f"{called}(<computed>)"
    dots = len(name) - len(name.lstrip("."))
    return name[dots:], dots, f"{called}({name!r})"


def imports(root: Path, path: Path):
    """Every import of one module as (line, how it is written, dotted target or None, names or None,
    problem or None): the target resolved from the module's path; names are what `from` takes."""
    here = package_of(root, path)
    for node in ast.walk(parse(path)):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == TOP or a.name.startswith(TOP + "."):
                    yield node.lineno, f"import {a.name}", None, None, "absolute; write it relative"
        elif isinstance(node, ast.ImportFrom):
            shown = "from " + "." * node.level + (node.module or "")
            if node.level == 0:
                if node.module == TOP or (node.module or "").startswith(TOP + "."):
                    yield node.lineno, shown, None, None, "absolute; write it relative"
                continue
            if node.level > len(here):
                yield node.lineno, shown, None, None, f"{node.level} dots reach above {TOP}"
                continue
            target = here[:len(here) - node.level + 1] + (node.module.split(".") if node.module else [])
            yield node.lineno, shown, target, [a.name for a in node.names], None
        elif isinstance(node, ast.Call) and (found := dynamic_import(node)):
            name, dots, shown = found
            if name is None:
                yield node.lineno, shown, None, None, "a computed module name: no reader can follow it"
            elif dots == 0:
                if name == TOP or name.startswith(TOP + "."):
                    yield node.lineno, shown, name.split("."), None, None
            elif dots > len(here):
                yield node.lineno, shown, None, None, f"{dots} dots reach above {TOP}"
            else:
                yield node.lineno, shown, here[:len(here) - dots + 1] + (name.split(".") if name else []), None, None


def resolve(root: Path, target: list[str], names: list[str] | None) -> tuple[list[Path], str | None]:
    """The module files an import reaches (a submodule per imported name where there is one, else
    the module itself), or a problem."""
    module = module_file(root, target)
    if module is None:
        return [], f"no file {'/'.join(target)}.py or folder"
    reached = []
    for name in names or []:
        sub = module_file(root, target + [name])
        if sub is not None:
            reached.append(sub)  # a module of the package
            continue
        bound = bound_names(module)
        if bound is not None and name not in bound:
            return [], f"no module and no name {name} in {'/'.join(target)}"
        reached.append(module)
    return reached or [module], None


def folder_of(root: Path, path: Path) -> str | None:
    parts = path.relative_to(root).parts
    return parts[1] if len(parts) > 2 else None


def problems(root: Path, path: Path, edges: dict | None = None) -> list[str]:
    """What is wrong with the imports of one module file of quco, as messages. With `edges`, the
    module's arrows to modules of its own folder are added to it (for the cycle check)."""
    where = path.relative_to(root)
    folder = folder_of(root, path)
    found = []
    for line, shown, target, names, problem in imports(root, path):
        if problem is None:
            reached, problem = resolve(root, target, names)
        if problem is not None:
            found.append(f"{where}:{line}: {shown}: {problem}")
            continue
        for other_path in reached:
            other = folder_of(root, other_path)
            if other is None or other == folder:
                if edges is not None and other == folder and other_path != path:
                    edges.setdefault(path, set()).add(other_path)
                continue
            if other not in packages(root):
                found.append(f"{where}:{line}: {shown}: {other} is not a package of {TOP}/")
            elif (why := arrow_problem(folder, other)) is not None:
                found.append(f"{where}:{line}: {why}")
    return found


def cycles(edges: dict[Path, set[Path]]) -> list[list[Path]]:
    """The import cycles among modules (Tarjan's strongly connected components of two or more)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                out.append(sorted(part))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def modules(root: Path):
    for folder in packages(root):
        yield from sorted((root / TOP / folder).rglob("*.py"))


@functools.lru_cache(maxsize=None)  # two tests and the drawing read the same checkout's arrows
def arrows(root: Path) -> dict[tuple[str, str], int]:
    """{(folder, folder it imports): how many module -> module imports}, over the whole package."""
    pairs = set()
    for path in modules(root):
        folder = folder_of(root, path)
        for _, _, target, names, problem in imports(root, path):
            if problem is None:
                reached, problem = resolve(root, target, names)
            if problem is None:
                pairs |= {(path, p) for p in reached if folder_of(root, p) not in (None, folder)}
    out: dict[tuple[str, str], int] = {}
    for a, b in sorted(pairs):
        key = (folder_of(root, a), folder_of(root, b))
        out[key] = out.get(key, 0) + 1
    return out


DRAWING_START = "<!-- import graph: generated by `python tests/test_layers.py --write`; do not edit -->"
DRAWING_END = "<!-- end of the generated import graph -->"
DRAWING_DOC = ROOT / "docs" / "README.md"


def drawing(root: Path) -> str:
    """The folders' import graph as a Mermaid flowchart, one row of LAYERS a line from the top,
    each arrow labelled with its count of module imports; the diamond's sides as subgraphs."""
    lines = ["```mermaid", "flowchart TD"]
    for side in sorted(set(SIDES.values())):
        lines.append(f"  subgraph {side}[\"{side} side\"]")
        lines += [f"    {f}[{f}/]" for names in LAYERS for f in names if SIDES.get(f) == side]
        lines.append("  end")
    lines += [f"  {f}[{f}/]" for names in LAYERS for f in names if f not in SIDES]
    lines += [f"  {a} -->|{n}| {b}" for (a, b), n in sorted(arrows(root).items(),
                                                            key=lambda e: (layer_of(e[0][0]), e[0][0], layer_of(e[0][1]), e[0][1]))]
    return "\n".join(lines + ["```"])


def written_drawing(text: str) -> str | None:
    start, end = text.find(DRAWING_START), text.find(DRAWING_END)
    return text[start + len(DRAWING_START):end].strip() if 0 <= start < end else None


def check(root: Path) -> list[str]:
    """Every problem of the tree at root: wrong imports, then cycles inside a folder."""
    edges: dict[Path, set[Path]] = {}
    found = [p for path in [root / TOP / "__init__.py", *modules(root)] for p in problems(root, path, edges)]
    named = [tuple(str(p.relative_to(root)) for p in cycle) for cycle in cycles(edges)]
    found += ["import cycle inside a folder: " + " -> ".join(c) for c in named if c not in KNOWN_CYCLES]
    found += [f"KNOWN_CYCLES names {' -> '.join(c)}, which is no longer a cycle: drop it"
              for c in KNOWN_CYCLES if c not in named]
    return found


def test_every_package_folder_has_a_layer():
    assert {f for names in LAYERS for f in names} == set(packages(ROOT))


def test_no_package_folder_is_left_at_the_top():
    """The nine folders moved under quco/ (issue #32): a branch that still adds a file at the old
    place (host/x.py) would bring back a folder that no install packs and no test reads."""
    assert [name for name in packages(ROOT) if (ROOT / name).exists()] == []


def test_the_package_is_a_stack_of_followable_imports():
    checked = list(modules(ROOT))
    assert len(checked) > 60  # the whole package was read (about 80 modules), not an empty glob
    found = check(ROOT)
    assert not found, "\n".join(found)


def test_the_model_and_the_device_do_not_import_each_other():
    """Issue #32's diamond, said of the real tree's arrows: none between the two sides, none back up,
    and the harness does import both (else it would not be the place where they meet)."""
    drawn = arrows(ROOT)
    across = [(a, b) for a, b in drawn if None not in (SIDES.get(a), SIDES.get(b)) and SIDES[a] != SIDES[b]]
    up = [(a, b) for a, b in drawn if layer_of(b) <= layer_of(a)]
    assert across == [] and up == [], (across, up)
    assert ("harness", "perfmodel") in drawn and ("harness", "host") in drawn
    assert not any(a == "util" for a, _ in drawn)  # the floor imports nothing of quco


def test_the_drawing_in_the_docs_is_current():
    """docs/README.md's import graph is this file's drawing of the checkout (rewrite it with
    `.venv/bin/python tests/test_layers.py --write`)."""
    assert written_drawing(DRAWING_DOC.read_text()) == drawing(ROOT), \
        "docs/README.md's import graph is stale: run .venv/bin/python tests/test_layers.py --write"


def test_no_layer_below_the_commands_imports_them():
    """The issue's own check, by text: nothing under the library or the models names cli/."""
    for path in modules(ROOT):
        if folder_of(ROOT, path) != "cli":
            text = path.read_text()
            assert "quco.cli" not in text and "..cli" not in text and "from .. import cli" not in text, path


def planted(tmp_path: Path, folder: str, files: dict[str, str]) -> Path:
    """A copy of the checkout's package (links, nothing written into the checkout) with the given
    modules added to quco/FOLDER/; returns the copy's root."""
    top = tmp_path / TOP
    top.mkdir()
    (top / "__init__.py").symlink_to(ROOT / TOP / "__init__.py")
    for name in packages(ROOT):
        if name != folder:
            (top / name).symlink_to(ROOT / TOP / name)
    (top / folder).mkdir()
    for entry in (ROOT / TOP / folder).iterdir() if (ROOT / TOP / folder).is_dir() else ():
        (top / folder / entry.name).symlink_to(entry)
    for name, source in files.items():
        (top / folder / name).write_text(source)
    return tmp_path


@pytest.mark.parametrize("folder, source, words", [
    ("host", "from ..cli import common\n", "host/ imports cli/, which is not below it"),
    ("perfmodel", "def f():\n    from ..workloads import runner\n", "perfmodel/ imports workloads/"),  # lazy
    ("gst", "from ..firmware import IMAGE\n", "gst/ imports firmware/, which is not below it"),  # beside
    # the diamond (issue #32): the model and the device, either way, at any depth, lazily too
    ("perfmodel", "from ..host.device import Device\n", "perfmodel/ imports host/ across the diamond"),
    ("perfmodel", "def f():\n    from ..emulator import soc\n", "perfmodel/ imports emulator/ across the diamond"),
    ("perfmodel", "from ..firmware import IMAGE\n", "perfmodel/ imports firmware/ across the diamond"),
    ("host", "def f():\n    from ..perfmodel import params\n", "host/ imports perfmodel/ across the diamond"),
    ("emulator", "import importlib\nm = importlib.import_module('quco.perfmodel.sim')\n", "across the diamond"),
    ("perfmodel", "from ..harness import evaluate\n", "perfmodel/ imports harness/, which is not below it"),
    ("kernel", "from ..host import reference\n", "kernel/ imports host/, which is not below it"),
    ("gst", "from ..kernel.format import Kernel\n", "gst/ imports kernel/, which is not below it"),
    ("util", "from ..gst import abi\n", "util/ imports gst/, which is not below it"),
    ("host", "from quco.gst import abi\n", "absolute; write it relative"),
    ("host", "import quco.gst.abi as abi\n", "absolute; write it relative"),
    ("host", "from .nowhere import x\n", "no file quco/host/nowhere.py"),
    ("host", "from ..gst.abi import NO_SUCH_NAME\n", "no name NO_SUCH_NAME in quco/gst/abi"),
    ("host", "from ... import x\n", "reach above quco"),
    ("host", "import importlib\nm = importlib.import_module('quco.cli.common')\n", "host/ imports cli/"),
    ("host", "from importlib import import_module\ndef f():\n    return import_module('..cli', __package__)\n",
     "host/ imports cli/"),
    ("emulator", "import importlib\nm = importlib.import_module('quco.' + 'host')\n", "computed module name"),
    ("host", "import importlib\nm = importlib.import_module('quco.host.nowhere')\n", "no file quco/host/nowhere.py"),
])
def test_the_check_finds_a_wrong_import(tmp_path, folder, source, words):
    """The checker against a copy of the tree with one bad module added: it must say so."""
    root = planted(tmp_path, folder, {"bad_m.py": source})
    found = problems(root, root / TOP / folder / "bad_m.py")
    assert any(words in p for p in found), found


def test_the_check_finds_a_cycle_inside_a_folder(tmp_path):
    """Two modules of one folder that import each other (one lazily) are a cycle, named in order;
    a third that only imports them is not part of it."""
    root = planted(tmp_path, "perfmodel", {"cyc_a.py": "from . import cyc_b\ndef g():\n    pass\n",
                                           "cyc_b.py": "def f():\n    from .cyc_a import g\n",
                                           "cyc_c.py": "from .cyc_a import cyc_b\n"})
    found = [p for p in check(root) if "cycle" in p]  # the known ones stay silent
    assert found == ["import cycle inside a folder: quco/perfmodel/cyc_a.py -> quco/perfmodel/cyc_b.py"], found


def test_a_good_import_across_the_floor_passes(tmp_path):
    """Both sides may read the floors: the kernel format, the GST and the utilities."""
    for folder in ("perfmodel", "host"):
        (tmp_path / folder).mkdir()
        root = planted(tmp_path / folder, folder, {"good_m.py": "from ..kernel.format import Kernel\n"
                                                                "from ..gst import abi\nfrom ..util import parallel\n"})
        assert problems(root, root / TOP / folder / "good_m.py") == []


def test_a_good_import_passes(tmp_path):
    root = planted(tmp_path, "host", {"good_m.py": "from ..gst import abi\nfrom .device import Device\n"
                                                   "from ..firmware import IMAGE\nfrom ..util import atomic\n"
                                                   "import importlib\nimportlib.import_module('quco.gst.abi')\n"})
    assert problems(root, root / TOP / "host" / "good_m.py") == []


if __name__ == "__main__":  # --write: put the current drawing into docs/README.md
    import sys
    text = DRAWING_DOC.read_text()
    if "--write" not in sys.argv[1:] or written_drawing(text) is None:
        print(drawing(ROOT))
        sys.exit(0 if "--write" not in sys.argv[1:] else f"{DRAWING_DOC}: no {DRAWING_START} ... {DRAWING_END}")
    start, end = text.index(DRAWING_START) + len(DRAWING_START), text.index(DRAWING_END)
    DRAWING_DOC.write_text(text[:start] + "\n" + drawing(ROOT) + "\n" + text[end:])
