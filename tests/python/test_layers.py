# SPDX-License-Identifier: Apache-2.0
"""The package's layers import only downward: gecko._transport (the links)
under gecko._session (the session) under gecko.pubsub and gecko.service
(the entities) under gecko.node; and above the transport seam no code names
a locator scheme. Read from the sources (ast), nothing imported."""

import ast
import os

import pytest

from conftest import ROOT

PACKAGE = os.path.join(ROOT, "python", "gecko")

# module (dotted, under gecko) -> the modules it must not import
LAYERS = [
    ("_transport", ["_session", "pubsub", "service", "node"]),
    ("_session", ["pubsub", "service", "node"]),
    ("pubsub", ["service", "node"]),
    ("service", ["pubsub", "node"]),
    ("keywide", ["service", "node"]),
    ("schema", ["_session", "_transport", "pubsub", "service", "keywide", "node"]),
    ("names", ["_session", "_transport", "pubsub", "service", "keywide", "node"]),
]


def modules_under(prefix):
    path = os.path.join(PACKAGE, prefix)
    if os.path.isdir(path):
        for name in sorted(os.listdir(path)):
            if name.endswith(".py"):
                yield prefix + "." + name[:-3], os.path.join(path, name)
    else:
        yield prefix, path + ".py"


def imported(module, path):
    """The gecko modules `module` imports (dotted, under gecko), wherever in the file."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    package = module.split(".")[:-1]  # where `from .` points ("_session" for "_session.inbound")
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[:len(package) - (node.level - 1)])
                names = [node.module] if node.module else [a.name for a in node.names]
                out.update((base + "." + n).strip(".") for n in names)
            elif node.module and node.module.startswith("gecko."):
                out.add(node.module[len("gecko."):])
        elif isinstance(node, ast.Import):
            out.update(a.name[len("gecko."):] for a in node.names if a.name.startswith("gecko."))
    return out


@pytest.mark.parametrize("layer,forbidden", LAYERS)
def test_imports_go_only_downward(layer, forbidden):
    for module, path in modules_under(layer):
        for name in imported(module, path):
            for f in forbidden:
                assert not (name == f or name.startswith(f + ".")), "%s imports %s" % (module, name)


def test_the_imports_are_read():
    # the reader itself: the session imports the seam, the entities the session
    assert "_transport" in imported("_session.inbound", os.path.join(PACKAGE, "_session", "inbound.py"))
    assert "_session.sink" in imported("pubsub", os.path.join(PACKAGE, "pubsub.py"))
    assert "_session.session" in imported("node", os.path.join(PACKAGE, "node.py"))


def test_no_locator_scheme_above_the_transport_seam():
    for layer in ("_session", "pubsub", "service", "keywide", "node"):
        for module, path in modules_under(layer):
            tree = ast.parse(open(path, encoding="utf-8").read(), path)
            docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                          if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef)) and n.body
                          and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
            for n in ast.walk(tree):
                if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings:
                    assert "://" not in n.value, "%s:%d names a locator scheme: %r" % (module, n.lineno, n.value)
