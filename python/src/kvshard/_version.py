"""Version of the kvshard Python package.

The package binds the C API of libkvshard at this major and minor version;
the loader refuses a library whose ``kvshard_version()`` has another
major.minor (see ``kvshard._lib``).
"""

__version__ = "0.4.0"
