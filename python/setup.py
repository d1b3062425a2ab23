"""setuptools hook of the kvshard package: record where libkvshard is.

Metadata lives in pyproject.toml. This file only adds one step to build_py:
it writes kvshard/_build_config.py into the build, holding the absolute path
of the shared library given at install time, which the package tries after
the KVSHARD_LIBRARY environment variable and before the system search path.

The path comes from --config-settings=kvshard-library=PATH (passed on by
build_backend/kvshard_build.py) or else from the KVSHARD_LIBRARY environment
variable of the pip process. Without either, nothing is recorded. A path
that names no file stops the build with an error: a wrong path recorded
silently would only fail later, at import.
"""

import os
import shutil
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

# The text of kvshard/_build_config.py is kvshard_install's, the install
# that needs no wheel: one template for both.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "build_backend"))
from kvshard_install import config_module_text  # noqa: E402

SETTING_VAR = "_KVSHARD_BUILD_LIBRARY"  # set by the in-tree backend
ENV_VAR = "KVSHARD_LIBRARY"
CONFIG_MODULE = os.path.join("kvshard", "_build_config.py")


def recorded_library():
    """The absolute library path to record, or None."""
    given = os.environ.get(SETTING_VAR) or os.environ.get(ENV_VAR)
    if not given:
        return None
    path = os.path.abspath(os.path.expanduser(given))
    if not os.path.isfile(path):
        origin = "--config-settings=kvshard-library" if os.environ.get(SETTING_VAR) else ENV_VAR
        raise SystemExit(
            f"kvshard: the library to record, {given!r}, is not a file (from {origin}). "
            "Build it first (cmake --build build --target kvshard) and give the path "
            "of build/libkvshard.so."
        )
    return path


class build_py_with_config(build_py):
    """build_py, then kvshard/_build_config.py in the build directory (never
    in the source tree)."""

    def run(self):
        # pip builds a local folder in place: drop what an earlier build left
        # in build/lib, so that a module removed from src/ cannot linger.
        shutil.rmtree(os.path.join(self.build_lib, "kvshard"), ignore_errors=True)
        super().run()
        target = os.path.join(self.build_lib, CONFIG_MODULE)
        self.mkpath(os.path.dirname(target))
        path = recorded_library()
        with open(target, "w", encoding="utf-8") as out:
            out.write(config_module_text(path))
        if path:
            self.announce(f"kvshard: recorded library {path}", level=2)

    def get_outputs(self, include_bytecode=1):
        outputs = super().get_outputs(include_bytecode)
        return outputs + [os.path.join(self.build_lib, CONFIG_MODULE)]


setup(cmdclass={"build_py": build_py_with_config})
