"""Data files opscan cannot read: one error naming the file (and the line), for releases and the catalog."""

from __future__ import annotations

import pytest

from opscan.db.loader import load_file
from opscan.errors import CatalogError, DatabaseError
from opscan.plan.libraries import load_catalog

LOADERS = [(load_file, DatabaseError, "cannot read release file"),
           (load_catalog, CatalogError, "cannot read the library catalog")]


@pytest.mark.parametrize("load, error, unreadable", LOADERS)
def test_an_unreadable_file_is_one_error_naming_it(tmp_path, load, error, unreadable):
    path = tmp_path / "data.yaml"
    path.write_bytes(b"backend: \xff\xfe\n")          # not UTF-8
    with pytest.raises(error) as caught:
        load(path)
    assert caught.value.path == str(path) and caught.value.message.startswith(unreadable)
    with pytest.raises(error) as caught:
        load(tmp_path / "missing.yaml")
    assert caught.value.message.startswith(unreadable)


@pytest.mark.parametrize("load, error, unreadable", LOADERS)
def test_a_duplicate_key_is_an_error_with_its_line(tmp_path, load, error, unreadable):
    path = tmp_path / "data.yaml"
    path.write_text("schema_version: 1\nschema_version: 2\n", encoding="utf-8")
    with pytest.raises(error) as caught:
        load(path)
    assert caught.value.path == str(path) and caught.value.line == 2
    assert "duplicate" in caught.value.message
