"""The layers, checked on the source: the dialect and the passes import nothing above
them; the examples and benchmarks use only public names of the toolchain, the tuner
only through its public surface, and change none of its settings."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOLCHAIN = ("approx_dialect", "passes", "approx_opt", "frontends", "autotuner")


def imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of every import in the file, function-level ones included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module, [a.name for a in node.names]))
    return found


def sources(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (ROOT / f).rglob("*.py"))


def located(path: Path, findings: list[str]) -> list[str]:
    """`findings` ("line: what") prefixed with the file, relative to the checkout when inside it."""
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return [f"{shown}:{b}" for b in findings]


# what each package may not import: the layers, bottom up (the docstring of each package says the same)
BELOW = {
    "approx_dialect": ("passes", "approx_opt", "frontends", "autotuner", "examples", "bench"),
    "passes": ("approx_opt", "frontends", "autotuner", "examples", "bench"),
    "approx_opt": ("frontends", "autotuner", "examples", "bench"),
    "frontends": ("autotuner", "examples", "bench"),
}


@pytest.mark.parametrize("package", sorted(BELOW))
def test_a_layer_imports_nothing_above_it(package):
    bad = [f"{p.relative_to(ROOT)}:{line}: {module}" for p in sources(package)
           for line, module, _ in imports(p) if module.split(".")[0] in BELOW[package]]
    assert not bad, "\n".join(bad)


PACKAGES = ("approx_dialect", "passes", "approx_opt", "frontends", "autotuner", "examples", "bench")


def module_graph(root: Path, package: str) -> dict[str, dict[str, int]]:
    """module -> {module of the same package that it imports: line of the first such
    import}. `from a.b import c` imports the module a.b.c when there is one, else a.b."""
    paths = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, dict[str, int]] = {m: {} for m in paths}
    for module, path in paths.items():
        for line, target, names in imports(path):
            for t in [f"{target}.{n}" if f"{target}.{n}" in paths else target for n in names] or [target]:
                while t and t not in paths:
                    t = t.rpartition(".")[0]
                if t and t != module:
                    graph[module].setdefault(t, line)
    return graph


def circle(graph: dict[str, dict[str, int]]) -> list[str]:
    """One circle of imports ("module:line -> ..."), or [] when the graph has none."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(m: str) -> list[str]:
        state[m] = 1
        path.append(m)
        for t in graph[m]:
            if state.get(t) == 1:
                loop = path[path.index(t):]
                return [f"{a}:{graph[a][b]}" for a, b in zip(loop, loop[1:] + [t])] + [t]
            if t not in state and (found := visit(t)):
                return found
        path.pop()
        state[m] = 2
        return []

    for m in graph:
        if m not in state and (found := visit(m)):
            return found
    return []


def test_the_circle_check_finds_one(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("import os\nfrom pkg.sub import b\n")
    (tmp_path / "pkg" / "sub" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub" / "b.py").write_text("def f():\n    from pkg.c import g\n")
    (tmp_path / "pkg" / "c.py").write_text("import pkg.a\n")
    assert circle(module_graph(tmp_path, "pkg")) == ["pkg.a:2", "pkg.sub.b:2", "pkg.c:1", "pkg.a"]
    (tmp_path / "pkg" / "c.py").write_text("import pkg\n")
    assert circle(module_graph(tmp_path, "pkg")) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_circle_of_imports_inside_a_package(package):
    """Each package's modules form layers too: the lower module never imports the upper
    one, not even inside a function."""
    found = circle(module_graph(ROOT, package))
    assert not found, "circle of imports: " + " -> ".join(found)


def private_uses(path: Path) -> list[str]:
    """Private (`_`-prefixed) names of the toolchain that `path` imports or reaches
    through an imported toolchain module (`module._name`)."""
    tree = ast.parse(path.read_text(), str(path))
    bad, modules = [], set()
    for line, module, names in imports(path):
        if module.split(".")[0] not in TOOLCHAIN:
            continue
        if any(part.startswith("_") and part != "__init__" for part in module.split(".")):
            bad.append(f"{line}: {module}")
        for name in names:
            if name.startswith("_"):
                bad.append(f"{line}: {module}.{name}")
            modules.add(name)
        if not names:
            modules.add(module.split(".")[0])
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name) and node.value.id in modules):
            bad.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return located(path, bad)


def test_the_private_name_check_finds_one(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from autotuner.results import _safe_url\nfrom autotuner import study\nstudy._check\n")
    assert [b.split(":", 1)[1] for b in private_uses(probe)] == ["1: autotuner.results._safe_url", "3: study._check"]


# the tuner's public surface (autotuner's docstring): the names `autotuner` exports, and three modules
TUNER_MODULES = ("autotuner", "autotuner.metrics", "autotuner.report", "autotuner.decision_tree", "autotuner.strategy")


def tuner_uses(path: Path) -> list[str]:
    """Uses in `path` of tuner modules or names outside the tuner's public surface."""
    import autotuner

    public = set(autotuner.__all__) | {m.split(".")[1] for m in TUNER_MODULES[1:]}
    bad = []
    for line, module, names in imports(path):
        if module.split(".")[0] != "autotuner":
            continue
        if module not in TUNER_MODULES:
            bad.append(f"{line}: {module}")
        elif module == "autotuner":
            bad += [f"{line}: autotuner.{n}" for n in names if n not in public]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "autotuner"
                and node.attr not in public):
            bad.append(f"{node.lineno}: autotuner.{node.attr}")
    return located(path, bad)


def test_the_tuner_surface_check_finds_one(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from autotuner.study import tune\nfrom autotuner import front_of, records\n"
                     "from autotuner.metrics import rbo\nimport autotuner\nautotuner.space\nautotuner.report\n")
    assert [b.split(":", 1)[1] for b in tuner_uses(probe)] == [
        "1: autotuner.study", "2: autotuner.records", "5: autotuner.space"]


def global_settings(path: Path) -> list[str]:
    """Assignments in `path` to an attribute of a toolchain module or of a name imported
    from one (`measure.SECONDS = 1`): a setting changed for every other caller."""
    tree = ast.parse(path.read_text(), str(path))
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.split(".")[0] in TOOLCHAIN}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] in TOOLCHAIN:
            bound |= {a.asname or a.name for a in node.names}
    bad = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for t in targets:
            root = t
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(t, ast.Attribute) and isinstance(root, ast.Name) and root.id in bound:
                bad.append(f"{node.lineno}: {ast.unparse(t)}")
    return located(path, bad)


def test_the_setting_check_finds_one(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from autotuner import measure\nimport autotuner.study as st\nmeasure.SECONDS = 1\n"
                     "st.log.level += 1\nprogram = object()\nprogram.deadline = 2\n")
    assert [b.split(":", 1)[1] for b in global_settings(probe)] == ["3: measure.SECONDS", "4: st.log.level"]


@pytest.mark.parametrize("check", (private_uses, tuner_uses, global_settings), ids=lambda c: c.__name__)
def test_examples_and_benchmarks_pass(check):
    """No private name, the tuner only through its surface, no toolchain setting changed."""
    bad = [b for p in sources("examples", "bench") for b in check(p)]
    assert not bad, "\n".join(bad)


def test_the_tuner_exports_only_names_of_its_public_modules():
    """`autotuner.__all__` holds no function, class or constant of a `_`-prefixed module."""
    import importlib
    import pkgutil

    import autotuner

    public = [importlib.import_module(f"autotuner.{m.name}") for m in pkgutil.iter_modules(autotuner.__path__)
              if not m.name.startswith("_") and m.name != "cli"] + [importlib.import_module("approx_opt.program")]
    bad = []
    for name in autotuner.__all__:
        obj = getattr(autotuner, name)
        home = getattr(obj, "__module__", None) if callable(obj) else None
        if home is not None:
            bad += [f"{name}: {home}"] if any(p.startswith("_") for p in home.split(".")) else []
        elif not any(getattr(m, name, None) is obj for m in public):
            bad.append(f"{name}: in no public module")
    assert not bad, "\n".join(bad)


def test_the_tuner_reads_a_programs_optional_members_through_one_accessor():
    """What the tuner reads from a program besides `name`, `knobs` and `build` is a hook of
    `approx_opt.program`'s protocols, read with `offered` (whose names
    tests/test_program_protocol.py checks), never duck-typed on the spot."""
    import re

    pattern = re.compile(r"(?:getattr|hasattr)\((?:self\.|job\.)?program, \"(\w+)\"")
    bad = [f"{p.relative_to(ROOT)}: {m}" for p in sources("autotuner") for m in pattern.findall(p.read_text())]
    assert not bad, "\n".join(bad)
