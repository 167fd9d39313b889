"""TIRx kernels as CLI input: ``protosim run path/to/kernel.py:FUNC --set KEY=VALUE``.

``protosim.frontends.tirx.load.load_kernel`` (the file, FUNC, the ``--set`` values) and its
wiring into ``scenarios.load_scenario`` / the CLI: every user mistake is exit 2 with one
line naming the file and the fix.  The kernels are under ``tests/fixtures/tirx/``.

The tests at the end (``test_run_*``, ``test_schedule_*``, ...) replay the kernels, so they
need ``protosim.frontends.tirx.extract``.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from protosim.cli import main
from protosim.frontends.tirx import TirxError
from protosim.frontends.tirx.load import KernelSource, is_kernel_spec, load_kernel, split_spec
from protosim.scenarios import ScenarioError, load_scenario

FX = Path(__file__).resolve().parent / "fixtures" / "tirx"
OK = FX / "mbar_ok.py"
WRONG = FX / "mbar_wrong_parity.py"
FACTORY = FX / "mbar_factory.py"
TWO = FX / "two_kernels.py"


def err_line(capsys) -> str:
    """The one stderr line of a refused input (and nothing on stdout)."""
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("protosim: "), err
    assert "Traceback" not in err and out == "", (out, err)
    return lines[0]


def refused(capsys, *argv: str) -> str:
    assert main(list(argv)) == 2
    return err_line(capsys)


def load_error(*args, **kw) -> str:
    with pytest.raises(TirxError) as e:
        load_kernel(*args, **kw)
    msg = str(e.value)
    assert "\n" not in msg and isinstance(e.value, ValueError)
    return msg


# --------------------------------------------------------------------------- #
# No tvm on the CLI's import path
# --------------------------------------------------------------------------- #
def test_importing_the_cli_does_not_import_tvm():
    code = ("import sys, protosim.cli, protosim.scenarios, protosim.frontends.tirx, protosim.frontends.tirx.load; "
            "from protosim.scenarios import _is_kernel_spec; assert _is_kernel_spec('k.py:f'); "
            "print(sorted(m for m in sys.modules if m == 'tvm' or m.startswith('tvm.')))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


def test_help_names_the_tirx_input(capsys):
    assert main(["run", "--help"]) == 0
    out = capsys.readouterr().out
    assert "kernel.py:FUNC" in out and "--set" in out and "arch=b200|h200|gb10" in out


# --------------------------------------------------------------------------- #
# The spec: path.py[:FUNC]
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(("text", "path", "func"), [
    ("k.py", "k.py", None),
    ("dir/k.py:gemm", "dir/k.py", "gemm"),
    ("a b/k.py:_x1", "a b/k.py", "_x1"),
    ("k.py:", "k.py", ""),
])
def test_split_spec(text, path, func):
    assert is_kernel_spec(text)
    assert split_spec(text) == (Path(path), func)


@pytest.mark.parametrize("text", ["k.toml", "k.json", "k.ttgir", "k.pyc", "k.py.txt", "py", "k.py:a/b"])
def test_other_inputs_are_not_kernel_specs(text):
    assert not is_kernel_spec(text)


# --------------------------------------------------------------------------- #
# load_kernel: what it returns
# --------------------------------------------------------------------------- #
def test_a_module_level_primfunc_without_func():
    from tvm.tirx import PrimFunc

    src = load_kernel(OK, None)
    assert isinstance(src, KernelSource) and isinstance(src.func, PrimFunc)
    assert src.name == "kernel" and src.args == {} and src.arch is None and src.call == {}
    assert src.source == f"{OK}:kernel"
    with pytest.raises(dataclasses.FrozenInstanceError):
        src.arch = "h200"  # type: ignore[misc]


def test_sets_give_the_arch_and_the_scalar_arguments():
    src = load_kernel(str(OK), "kernel", {"arch": "h200", "timeout_cycles": "4096"})
    assert src.arch == "h200" and src.args == {"timeout_cycles": 4096} and src.call == {}
    # already-typed values, as pairs (later ones win), hex and negative ints
    src = load_kernel(OK, "kernel", [("timeout_cycles", 5), ("arch", "b200"), ("timeout_cycles", "0x10")])
    assert src.args == {"timeout_cycles": 16} and src.arch == "b200"
    assert load_kernel(OK, "kernel", {"timeout_cycles": "-3"}).args == {"timeout_cycles": -3}


def test_a_function_returning_a_primfunc_is_called_with_its_parameters():
    src = load_kernel(FACTORY, "build", {"M": "256", "parity": "1", "lag_ns": "500", "arch": "h200"})
    assert src.call == {"M": 256, "parity": 1}
    assert src.args == {"lag_ns": 500} and src.arch == "h200" and src.name == "build"
    assert src.source == f"{FACTORY}:build"
    script = src.func.script()
    assert '(256,), "int32"' in script and "mbarrier_wait" in script and ", 1)" in script


def test_a_function_parameter_named_arch_gets_the_arch_too(tmp_path):
    k = tmp_path / "k.py"
    k.write_text("import mbar_ok\n\ndef pick(arch):\n    assert arch == 'gb10'\n    return mbar_ok.kernel\n")
    (tmp_path / "mbar_ok.py").write_text(OK.read_text())
    src = load_kernel(k, "pick", {"arch": "gb10"})
    assert src.call == {"arch": "gb10"} and src.arch == "gb10"


def test_bool_and_string_values_reach_the_function(tmp_path):
    k = tmp_path / "k.py"
    k.write_text("from mbar_factory import build\n\n"
                 "def wrap(M, fast=False, label='x'):\n"
                 "    assert fast is True and label == 'hello', (fast, label)\n"
                 "    return build(M)\n")
    (tmp_path / "mbar_factory.py").write_text(FACTORY.read_text())
    src = load_kernel(k, "wrap", {"M": "128", "fast": "true", "label": "hello"})
    assert src.call == {"M": 128, "fast": True, "label": "hello"}


def test_loading_leaves_sys_modules_and_sys_path_as_they_were():
    before_path, before_mods = list(sys.path), set(sys.modules)
    src = load_kernel(TWO, "second")  # imports its siblings mbar_ok and mbar_wrong_parity
    assert src.name == "second"
    assert sys.path == before_path
    new = set(sys.modules) - before_mods
    assert not {m for m in new if "mbar" in m or "two_kernels" in m or "protosim_tirx_kernel" in m}, new
    # and again: a second load re-imports (nothing cached under a clashing name)
    assert load_kernel(TWO, "first").name == "first"


def test_the_same_file_name_in_two_folders_does_not_clash(tmp_path):
    (tmp_path / "mbar_ok.py").write_text(WRONG.read_text())
    a = load_kernel(OK, None).func.script()
    b = load_kernel(tmp_path / "mbar_ok.py", None).func.script()
    assert a != b and "mbarrier_wait" in b


# --------------------------------------------------------------------------- #
# load_kernel: every mistake is one TirxError naming the file and the fix
# --------------------------------------------------------------------------- #
def test_no_such_file(tmp_path):
    msg = load_error(tmp_path / "nope.py", "kernel")
    assert "nope.py" in msg and "no such file" in msg and "kernel.py[:FUNC]" in msg


def test_not_a_python_file(tmp_path):
    (tmp_path / "k.txt").write_text("x = 1\n")
    msg = load_error(tmp_path / "k.txt", None)
    assert "k.txt" in msg and "not a Python file" in msg
    (tmp_path / "d.py").mkdir()
    assert "is a directory" in load_error(tmp_path / "d.py", None)


def test_tvm_not_installed(monkeypatch):
    for name in ("tvm", "tvm.tirx"):
        monkeypatch.setitem(sys.modules, name, None)  # `import tvm` raises ImportError
    msg = load_error(OK, "kernel")
    assert "mbar_ok.py" in msg and "needs apache-tvm" in msg and "pip install 'apache-tvm==0.27.0.post1'" in msg


def test_func_must_be_a_name():
    msg = load_error(OK, "x-y")
    assert "mbar_ok.py:x-y" in msg and "must be a Python name" in msg


def test_extra_set_values_are_checked_before_any_import(tmp_path):
    k = tmp_path / "k.py"
    k.write_text("raise SystemExit('must not run')\n")
    msg = load_error(k, None, [("", 1)])
    assert "--set" in msg and "parameter name" in msg


def test_syntax_error_names_the_line(tmp_path):
    k = tmp_path / "broken.py"
    k.write_text("from tvm.script import tirx as T\n\ndef build(M):\n    return (M\n")
    msg = load_error(k, "build")
    assert f"{k}:4" in msg and "SyntaxError" in msg and "while importing" in msg and "fix the module" in msg


def test_import_error_names_type_message_and_line():
    msg = load_error(FX / "import_raises.py", None)
    assert "import_raises.py:4: KeyError: 'N'" in msg and "while importing" in msg


def test_sys_exit_on_import_is_an_input_error(tmp_path):
    k = tmp_path / "k.py"
    k.write_text("import sys\nsys.exit(3)\n")
    msg = load_error(k, None)
    assert f"{k}:2" in msg and "SystemExit(3)" in msg


def test_tvmscript_error_names_the_kernel_line():
    msg = load_error(FX / "tvmscript_error.py", None)
    assert "tvmscript_error.py:10: TVMScript error" in msg and "no_such_op" in msg


def test_an_error_in_a_sibling_module_names_that_module(tmp_path):
    (tmp_path / "helpers.py").write_text("def tile():\n    return 1 // 0\n")
    k = tmp_path / "k.py"
    k.write_text("import helpers\n\ndef build():\n    return helpers.tile()\n")
    msg = load_error(k, "build")
    assert f"{tmp_path / 'helpers.py'}:2: ZeroDivisionError" in msg and f"in {k}" in msg


def test_func_raising_names_type_message_and_line():
    msg = load_error(FACTORY, "build", {"M": "100"})
    assert "mbar_factory.py:11: ValueError: M=100 is not a multiple of 128" in msg
    assert "raised by build(M=100)" in msg and "--set values" in msg


def test_func_missing():
    msg = load_error(OK, "nope")
    assert "mbar_ok.py:nope" in msg and "no 'nope'" in msg and "PrimFuncs: kernel" in msg


def test_func_needs_a_parameter():
    msg = load_error(FACTORY, "build")
    assert "build(M, parity=0) needs M" in msg and "--set M=VALUE" in msg


def test_func_returns_something_else():
    msg = load_error(FACTORY, "not_a_kernel")
    assert "mbar_factory.py:not_a_kernel" in msg and "returned int, not a TIRx PrimFunc" in msg


def test_func_is_neither_primfunc_nor_function():
    msg = load_error(FACTORY, "LIMIT")
    assert "LIMIT is int" in msg and "functions: build, not_a_kernel" in msg


def test_two_primfuncs_without_func():
    msg = load_error(TWO, None)
    assert "2 PrimFuncs" in msg and "first, second" in msg and f"{TWO}:first" in msg


def test_no_primfunc_without_func():
    msg = load_error(FX / "no_kernel.py", None)
    assert "no PrimFunc at module level" in msg and "functions here: helper" in msg
    msg = load_error(FACTORY, None)
    assert f"{FACTORY}:FUNC" in msg and "build, not_a_kernel" in msg


def test_unknown_set_key_lists_the_parameters():
    msg = load_error(FACTORY, "build", {"M": 128, "K": 64})
    assert "--set K: not a parameter" in msg
    assert "build's parameters: M, parity=0" in msg and "scalar parameters: timeout_cycles, lag_ns" in msg
    msg = load_error(OK, None, {"K": 64})
    assert "scalar parameters: timeout_cycles" in msg


def test_scalar_parameter_needs_an_int():
    msg = load_error(OK, None, {"timeout_cycles": "lots"})
    assert "--set timeout_cycles='lots'" in msg and "int32" in msg and "give an integer" in msg
    assert "give an integer" in load_error(OK, None, {"timeout_cycles": "true"})
    assert "give an integer" in load_error(OK, None, {"timeout_cycles": 1.5})
    assert "out of range for int32" in load_error(OK, None, {"timeout_cycles": 2**31})


def test_arch_must_be_a_modelled_gpu():
    msg = load_error(OK, None, {"arch": "gb300"})
    assert "arch=" in msg and "b200" in msg and "h200" in msg


# --------------------------------------------------------------------------- #
# Through the CLI: exit 2, one line (no extract needed: refused while loading)
# --------------------------------------------------------------------------- #
def test_cli_no_such_kernel_file(capsys, tmp_path):
    line = refused(capsys, "run", f"{tmp_path}/nope.py:kernel")
    assert "nope.py" in line and "no such file" in line and "kernel.py:FUNC" in line


def test_cli_func_raising(capsys):
    line = refused(capsys, "run", f"{FACTORY}:build", "--set", "M=100")
    assert "mbar_factory.py:11: ValueError: M=100 is not a multiple of 128" in line


def test_cli_syntax_error(capsys, tmp_path):
    k = tmp_path / "broken.py"
    k.write_text("def f(:\n    pass\n")
    line = refused(capsys, "run", str(k))
    assert f"{k}:1" in line and "SyntaxError" in line


def test_cli_tvmscript_error(capsys):
    line = refused(capsys, "run", str(FX / "tvmscript_error.py"))
    assert "tvmscript_error.py:10: TVMScript error" in line


def test_cli_import_error(capsys):
    assert "import_raises.py:4: KeyError" in refused(capsys, "run", str(FX / "import_raises.py"))


def test_cli_two_primfuncs(capsys):
    line = refused(capsys, "run", str(TWO))
    assert "2 PrimFuncs" in line and f"{TWO}:first" in line


def test_cli_func_missing_and_returning_other(capsys):
    assert "no 'gemm'" in refused(capsys, "run", f"{OK}:gemm")
    assert "returned int" in refused(capsys, "run", f"{FACTORY}:not_a_kernel")


def test_cli_unknown_set_and_bad_scalar(capsys):
    line = refused(capsys, "run", f"{OK}:kernel", "--set", "K=64")
    assert "--set K: not a parameter" in line and "timeout_cycles" in line
    line = refused(capsys, "run", f"{OK}:kernel", "--set", "timeout_cycles=1.5")
    assert "timeout_cycles" in line and "give an integer" in line
    line = refused(capsys, "run", f"{OK}:kernel", "--set", "arch=gb300")
    assert "arch=" in line and "h200" in line


def test_cli_tvm_not_installed(capsys, monkeypatch):
    for name in ("tvm", "tvm.tirx"):
        monkeypatch.setitem(sys.modules, name, None)
    assert "needs apache-tvm" in refused(capsys, "run", f"{OK}:kernel")


@pytest.mark.parametrize("cmd", [["explain"], ["schedule"], ["trace", "-o", "OUT.json"], ["plot", "-o", "OUT.png"],
                                 ["report", "-o", "OUT.html"]])
def test_every_input_command_reads_kernel_specs(capsys, tmp_path, cmd):
    argv = [cmd[0], f"{FACTORY}:build", *[str(tmp_path / a) if a.startswith("OUT") else a for a in cmd[1:]]]
    line = refused(capsys, *argv)
    assert "build(M, parity=0) needs M" in line
    assert not list(tmp_path.iterdir())  # nothing written


def test_load_scenario_raises_scenario_error():
    with pytest.raises(ScenarioError) as e:
        load_scenario(f"{FACTORY}:build", [("M", 100)])
    assert e.value.path == f"{FACTORY}:build" and e.value.field == "tirx"
    assert "ValueError: M=100" in e.value.message


# --------------------------------------------------------------------------- #
# Replays: these need protosim.frontends.tirx.extract
# --------------------------------------------------------------------------- #
def test_run_correct_kernel_exits_0(capsys):
    assert main(["run", f"{OK}:kernel", "--set", "arch=h200", "--runs", "2", "--quiet"]) == 0, capsys.readouterr()


def test_run_without_func_and_with_a_scalar_argument(capsys):
    argv = ["run", str(OK), "--set", "arch=h200", "--set", "timeout_cycles=100000", "--runs", "1", "--json"]
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["ok"] is True and d["builder"] == "tirx" and d["scenario"] == "kernel"


def test_run_wrong_parity_deadlocks_exit_1(capsys):
    assert main(["run", str(WRONG), "--set", "arch=h200", "--runs", "2", "--json"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert d["ok"] is False and d["verdict"]["outcome"]["kind"] == "deadlock"


def test_run_factory_with_parameters(capsys):
    assert main(["run", f"{FACTORY}:build", "--set", "M=256", "--set", "arch=h200", "--runs", "2", "--quiet"]) == 0
    capsys.readouterr()
    argv = ["run", f"{FACTORY}:build", "--set", "M=256", "--set", "parity=1", "--set", "arch=h200", "--runs", "2", "--quiet"]
    assert main(argv) == 1


def test_schedule_of_a_kernel(capsys):
    assert main(["schedule", f"{OK}:kernel", "--set", "arch=b200"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["arch"] == "b200" and d["name"] == "kernel"
    assert d["config"]["source"].endswith("mbar_ok.py:kernel") and d["config"]["frontend"] == "tirx"
    assert len(d["ctas"]) == 1


def test_load_scenario_of_a_kernel():
    sc = load_scenario(f"{FACTORY}:build", [("M", 256), ("arch", "h200"), ("lag_ns", 7)])
    assert sc.builder == "tirx" and sc.config is None and sc.arch == "h200" and sc.name == "build"
    assert sc.built is not None and sc.schedule_json["arch"] == "h200"
    assert "build(M=256)" in sc.description and "lag_ns=7" in sc.description


def test_max_ops_is_respected(capsys):
    line = refused(capsys, "run", f"{OK}:kernel", "--set", "arch=h200", "--max-ops", "1")
    assert "more than the limit of 1" in line and "--max-ops" in line


def test_explain_and_trace_of_a_kernel(capsys, tmp_path):
    assert main(["explain", str(WRONG), "--set", "arch=h200"]) == 1
    capsys.readouterr()
    out = tmp_path / "t.json"
    assert main(["trace", f"{OK}:kernel", "--set", "arch=h200", "-o", str(out)]) == 0
    assert json.loads(out.read_text())


# ---------------------------------------------------------------------------
# The repository's kernels, as they are: built from a GemmConfig, inside a package

REPO = Path(__file__).resolve().parents[1]


def test_a_kernel_built_from_a_gemmconfig_takes_its_fields_from_set(capsys):
    """``hgemm_v4(cfg: GemmConfig)``: the --set values that name config fields build the config,
    and kernels/tirx/ imports its own package (``from kernels.tirx... import``)."""
    spec = f"{REPO}/kernels/tirx/seed_sm100.py:hgemm_v4"
    src = load_kernel(*split_spec(spec), {"M": "256", "K": "128"})
    assert src.call == {"cfg": {"M": 256, "K": 128}} and src.arch == "b200"
    json.dumps(src.call)  # what the schedule's config records
    assert main(["run", spec, "--set", "M=256", "--set", "K=128", "--runs", "2"]) == 0
    capsys.readouterr()
    line = refused(capsys, "run", spec, "--set", "K=100")
    assert "--set K: K=100 is not a multiple of BLK_K=64" in line


def test_a_kernel_that_imports_its_package_loads_and_leaves_sys_path_alone():
    before = list(sys.path)
    src = load_kernel(*split_spec(f"{REPO}/kernels/tirx/ws_sm100.py:ws_step7"), {"K": "512", "sm_count": "2"})
    assert type(src.func).__name__ == "PrimFunc" and src.call == {"cfg": {"K": 512, "sm_count": 2}}
    assert sys.path == before
