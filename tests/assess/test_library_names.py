"""The names an assessment reads from the table of packages that constrain torch
(library_ops.constrained_packages, issue 40's warm scan) are the full table's packages."""

from __future__ import annotations

from opscan.assess import library_ops
from opscan.scan.constraints import table


def test_constrained_packages_are_the_tables_packages() -> None:
    names = library_ops.constrained_packages()
    assert names == frozenset(table().releases)
    assert len(names) > 10 and all(name == name.lower() and "_" not in name for name in names)


def test_a_package_only_the_constraints_table_knows_is_a_library() -> None:
    from opscan.plan.libraries import shipped
    from opscan.scan.dependencies import companions

    others = set(companions().pairs) | set(companions().ended)
    others |= {library_ops._canonical(p) for entry in shipped().libraries for p in entry.packages}
    only_there = sorted(library_ops.constrained_packages() - others)
    assert only_there
    package = only_there[0]
    found = library_ops.known_libraries([f"{package.replace('-', '_')}::op"], ["2.13"], [package])
    assert f"{package.replace('-', '_')}::op" in found and package in found
