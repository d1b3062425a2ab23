"""Install the kvshard package into the running interpreter's site-packages
without building a wheel: the package is pure Python, so its files are
copied as they are, with kvshard/_build_config.py recording the library's
path and a dist-info directory so that pip lists and uninstalls it.

    python build_backend/kvshard_install.py [--library PATH] PACKAGE_DIR

PACKAGE_DIR is the python/ folder. This needs neither setuptools nor wheel
(pyenv's and conda's interpreters, and venvs of Python 3.12 and later, may
have neither); python/install.sh uses it.
"""

import argparse
import base64
import hashlib
import os
import re
import shutil
import sys
import sysconfig

NAME = "kvshard"
SUMMARY = ("Plan how the KV cache of hybrid-attention models is sharded across "
           "tensor-parallel ranks (binding over libkvshard)")


def config_module_text(library):
    """kvshard/_build_config.py: where libkvshard was at install time."""
    return ('"""Generated when the kvshard package was built: where libkvshard was\n'
            'at install time (None: nothing was recorded). Do not edit."""\n\n'
            f"LIBRARY_PATH = {library!r}\n")


def package_version(source):
    with open(os.path.join(source, "_version.py"), encoding="utf-8") as f:
        found = re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M)
    if not found:
        raise SystemExit(f"kvshard_install: no __version__ in {source}/_version.py")
    return found.group(1)


def record_line(root, path):
    with open(path, "rb") as f:
        data = f.read()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{os.path.relpath(path, root)},sha256={digest},{len(data)}"


def install(package_dir, library):
    source = os.path.join(package_dir, "src", NAME)
    version = package_version(source)
    site = sysconfig.get_paths()["purelib"]
    target = os.path.join(site, NAME)
    # What an earlier install left: the package and its metadata, either way.
    shutil.rmtree(target, ignore_errors=True)
    for entry in os.listdir(site):
        if re.fullmatch(rf"{NAME}-[^-]+\.(dist|egg)-info", entry):
            shutil.rmtree(os.path.join(site, entry), ignore_errors=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc",
                                                                  "_build_config.py"))
    with open(os.path.join(target, "_build_config.py"), "w", encoding="utf-8") as f:
        f.write(config_module_text(library))
    info = os.path.join(site, f"{NAME}-{version}.dist-info")
    os.makedirs(info)
    with open(os.path.join(info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\n"
                f"Summary: {SUMMARY}\nLicense: Apache-2.0\nRequires-Python: >=3.9\n")
    with open(os.path.join(info, "INSTALLER"), "w", encoding="utf-8") as f:
        f.write("kvshard install.sh\n")
    files = [os.path.join(d, n) for d, _, names in os.walk(target) for n in sorted(names)]
    files += [os.path.join(info, "METADATA"), os.path.join(info, "INSTALLER")]
    with open(os.path.join(info, "RECORD"), "w", encoding="utf-8") as f:
        for path in files:
            f.write(record_line(site, path) + "\n")
        f.write(f"{os.path.relpath(os.path.join(info, 'RECORD'), site)},,\n")
    return target, version


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", help="the libkvshard.so path to record")
    parser.add_argument("package_dir", help="the python/ folder of kvshard")
    args = parser.parse_args(argv)
    library = None
    if args.library:
        library = os.path.abspath(args.library)
        if not os.path.isfile(library):
            raise SystemExit(f"kvshard_install: the library to record, {args.library!r}, "
                             "is not a file")
    target, version = install(os.path.abspath(args.package_dir), library)
    print(f"kvshard {version} installed in {target}")


if __name__ == "__main__":
    main(sys.argv[1:])
