"""Arch profiles' parsed TOML kept beside the byte code (protosim.arch._read_toml): the same
table as tomllib on a cold and a warm cache, and a file whose text changed is parsed again."""

from __future__ import annotations

import sys
import tomllib

import pytest

from protosim import arch


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "pyc"))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    return tmp_path


@pytest.mark.parametrize("name", arch.available())
def test_cached_table_is_tomllibs(name, private_cache):
    path = arch._HERE / f"{name}.toml"
    expected = tomllib.loads(path.read_text())
    assert arch._read_toml(path) == expected  # cold: parses, writes
    assert list((private_cache / "pyc").rglob(f"{name}.toml.*.marshal"))
    assert arch._read_toml(path) == expected  # warm: from the cache


def test_changed_text_is_parsed_again(private_cache):
    path = private_cache / "x.toml"
    path.write_text('name = "a"\n[t]\nk = { value = 1, source = "s" }\n')
    assert arch._read_toml(path)["name"] == "a"
    path.write_text('name = "b"\n[t]\nk = { value = 2, source = "s" }\n')
    assert arch._read_toml(path) == {"name": "b", "t": {"k": {"value": 2, "source": "s"}}}


def test_dates_are_not_cached_but_still_read(private_cache):
    path = private_cache / "d.toml"
    path.write_text("when = 2026-12-01\n")
    assert str(arch._read_toml(path)["when"]) == "2026-12-01"
    assert not list((private_cache / "pyc").rglob("d.toml.*.marshal"))
