"""Optional mypyc build of acpstack's hot path: a hatch build hook.

`ACPSTACK_MYPYC=1 pip install .` (or `ACPSTACK_MYPYC=1 python -m build --wheel`) compiles
the modules in `MODULES` with mypyc into C extensions that sit beside their sources in a
platform wheel; without it the wheel is pure Python, as always. mypy (which has mypyc),
setuptools and msgspec are added to the build's requirements only when the compiled build
is asked for; it needs a C compiler and the Python headers, and says so when they are missing.

Compiled modules keep the pure-Python semantics (the same tests run on both builds:
`./run test-mypyc`), but no docstrings, and their classes cannot be subclassed or
patched from Python. What mypyc cannot compile stays interpreted in modules of its own:
msgspec Structs (`wire/_structs.py`, `wire/_events.py`, `wire/_frames.py`), classes built on
builtin exceptions (`wire/_capability.py`, `rpc/_dispatcher.py`), and the 3.11 eager-start
helper (`rpc/_eager.py`, a generator-based coroutine).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

ENV = "ACPSTACK_MYPYC"
# The hot path of a message: framing, the one-pass decode, the protocol state, the runtime.
MODULES = [
    "acpstack/wire/_ndjson.py",
    "acpstack/wire/_framing.py",
    "acpstack/wire/_content_length.py",
    "acpstack/wire/_codec.py",
    "acpstack/wire/_decode.py",
    "acpstack/wire/_negotiation.py",
    "acpstack/wire/_onepass.py",
    "acpstack/wire/_connection.py",
    "acpstack/rpc/_connection.py",
    "acpstack/rpc/_writer.py",
]
GROUP = "acpstack"  # the shared library of the compiled modules: acpstack__mypyc

SETUP = """\
from mypyc.build import mypycify
from setuptools import setup

setup(
    name="acpstack-compiled",
    ext_modules=mypycify({modules!r}, group_name={group!r}, opt_level="3"),
    script_args=["build_ext", "--inplace"],
)
"""


def wanted() -> bool:
    """Whether this build compiles (ACPSTACK_MYPYC set to anything but 0)."""
    return os.environ.get(ENV, "0") not in ("", "0")


def missing_toolchain() -> str | None:
    """What stops a C extension from being built here, or None."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler!r} is not on PATH)"
    headers = Path(sysconfig.get_paths()["include"], "Python.h")
    if not headers.exists():
        return f"no Python headers ({headers} is missing)"
    return None


def mypy_ini(pyproject: Path) -> str:
    """The project's per-module mypy overrides (the type check mypyc runs must pass as
    `mypy` does), for the interpreter that builds (so without its python_version). The
    optional extras a few modules import are not installed where the wheel is built: they
    type as Any there (none of them is imported by a compiled module)."""
    config = tomllib.loads(pyproject.read_text())["tool"]["mypy"]
    lines = [
        "[mypy]",
        "strict = True",
        "ignore_missing_imports = True",
        "warn_unused_ignores = False",
    ]
    for override in config.get("overrides", []):
        lines.append(f"[mypy-{','.join(override['module'])}]")
        for key, value in override.items():
            if key != "module":
                value = ",".join(value) if isinstance(value, list) else value
                lines.append(f"{key} = {value}")
    return "\n".join(lines) + "\n"


def compile_modules(root: Path, work: Path) -> dict[str, Path]:
    """Compile MODULES from a copy of the project at `root` in `work`; return the built
    extensions by their path in the wheel."""
    shutil.copytree(root / "src" / "acpstack", work / "acpstack")
    (work / "mypy.ini").write_text(mypy_ini(root / "pyproject.toml"))
    (work / "setup.py").write_text(SETUP.format(modules=MODULES, group=GROUP))
    done = subprocess.run(
        [sys.executable, "setup.py"], cwd=work, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"mypyc build failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    built = {
        str(path.relative_to(work)): path
        for path in [*work.glob(f"*{suffix}"), *(work / "acpstack").rglob(f"*{suffix}")]
    }
    expected = [module.removesuffix(".py") + suffix for module in MODULES]
    absent = [name for name in expected if name not in built]
    if absent:
        raise RuntimeError(f"mypyc build made no {', '.join(absent)}")
    return built


class MypycBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Compiles the hot path into the wheel when ACPSTACK_MYPYC is set."""

    PLUGIN_NAME = "custom"

    def dependencies(self) -> list[str]:
        # (msgspec too: mypyc compiles better knowing its types)
        return ["mypy>=1.11", "setuptools>=70", "msgspec>=0.19"] if wanted() else []

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable" or not wanted():
            return
        problem = missing_toolchain()
        if problem is not None:
            raise RuntimeError(f"{ENV} is set but the compiled build cannot be made: {problem}")
        self._work = work = Path(tempfile.mkdtemp(prefix="acpstack-mypyc-"))
        built = compile_modules(Path(self.root), work)
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        for name, path in built.items():
            build_data["force_include"][str(path)] = name

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        work = getattr(self, "_work", None)
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
