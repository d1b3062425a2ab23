"""In-tree PEP 517 backend of the kvshard package: setuptools' own, plus one
config setting.

    pip install --config-settings=kvshard-library=/path/to/libkvshard.so ./python

The setting is taken out of the settings setuptools sees and handed to
setup.py through the environment of this (build) process, where setup.py
records the path in kvshard/_build_config.py. Every other hook is
setuptools.build_meta's, unchanged.
"""

import os
from contextlib import contextmanager

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403  (the hooks not wrapped below)

_KEYS = ("kvshard-library", "kvshard_library")
_VAR = "_KVSHARD_BUILD_LIBRARY"


@contextmanager
def _settings(config_settings):
    settings = dict(config_settings or {})
    value = None
    for key in _KEYS:
        if key in settings:
            value = settings.pop(key)
    if isinstance(value, list):  # given more than once: the last one wins
        value = value[-1] if value else None
    saved = os.environ.get(_VAR)
    if value:
        os.environ[_VAR] = str(value)
    try:
        yield settings or None
    finally:
        if saved is None:
            os.environ.pop(_VAR, None)
        else:
            os.environ[_VAR] = saved


def get_requires_for_build_wheel(config_settings=None):
    with _settings(config_settings) as settings:
        return _setuptools.get_requires_for_build_wheel(settings)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    with _settings(config_settings) as settings:
        return _setuptools.prepare_metadata_for_build_wheel(metadata_directory, settings)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with _settings(config_settings) as settings:
        return _setuptools.build_wheel(wheel_directory, settings, metadata_directory)


def get_requires_for_build_sdist(config_settings=None):
    with _settings(config_settings) as settings:
        return _setuptools.get_requires_for_build_sdist(settings)


def build_sdist(sdist_directory, config_settings=None):
    with _settings(config_settings) as settings:
        return _setuptools.build_sdist(sdist_directory, settings)


if hasattr(_setuptools, "build_editable"):

    def get_requires_for_build_editable(config_settings=None):
        with _settings(config_settings) as settings:
            return _setuptools.get_requires_for_build_editable(settings)

    def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
        with _settings(config_settings) as settings:
            return _setuptools.prepare_metadata_for_build_editable(metadata_directory, settings)

    def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
        with _settings(config_settings) as settings:
            return _setuptools.build_editable(wheel_directory, settings, metadata_directory)
