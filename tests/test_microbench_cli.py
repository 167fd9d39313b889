"""The command line every build-from-source microbenchmark shares (kernels.toolchain.compiler.out_dir_main):
``--help`` explains and builds nothing; an unknown flag is a usage error, not a folder named after it
(``--help`` was once passed to nvcc as the output folder and left a directory called ``--help``)."""

from __future__ import annotations

import pytest

from kernels.toolchain.compiler import out_dir_main

DOC = "A microbenchmark that builds kernels.\n\nMore words."


def never(_folder):
    raise AssertionError("build was called")


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_help_prints_usage_and_builds_nothing(flag, capsys):
    assert out_dir_main("kernels.microbench.x", DOC, never, [flag]) == 0
    out = capsys.readouterr().out
    assert "usage: python -m kernels.microbench.x OUT_DIR" in out and "A microbenchmark" in out


@pytest.mark.parametrize("argv", [[], ["--bogus"], ["a", "b"]])
def test_bad_arguments_are_a_usage_error(argv, capsys):
    assert out_dir_main("kernels.microbench.x", DOC, never, argv) == 2
    assert "usage:" in capsys.readouterr().err


def test_a_folder_is_built(tmp_path, monkeypatch):
    monkeypatch.setattr("kernels.toolchain.compiler.ensure_stub_on_path", lambda: None)
    built = []
    assert out_dir_main("kernels.microbench.x", DOC, built.append, [str(tmp_path)]) == 0
    assert built == [tmp_path]
