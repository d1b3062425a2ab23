#!/bin/sh
# Install what kvshard needs to build and test on Debian 12: a C compiler,
# CMake, pkg-config, libyaml (the parser), cmocka (the tests) and xmllint
# (the report tests). Packages named as arguments are installed too: the
# optional ones below, for the parts of kvshard that need more.
# Runs apt-get directly as root and through sudo otherwise.
#
# usage: tools/setup.sh [PACKAGE ...]   install the required packages (and PACKAGEs)
#        tools/setup.sh --list          name the required and optional packages
set -eu
packages="gcc g++ make cmake pkg-config libyaml-dev libcmocka-dev libxml2-utils"
# What each optional part needs, and the part: without them the build skips
# it (CMake says so) or the check cannot run.
optional="clang libclang-rt-14-dev|the libFuzzer targets (-DKVSHARD_FUZZ=ON)
valgrind|the memcheck runs of .ci/run
openmpi-bin libopenmpi-dev|examples/mpi_init.c, run with mpirun
chromium fonts-dejavu-core|the report in a browser (.ci/report.sh)
python3 python3-pip python3-setuptools python3-venv python3-pytest|the Python package and its tests"
if [ "${1:-}" = "--list" ]; then
    echo "required: $packages"
    echo "optional (tools/setup.sh PACKAGE ... installs them too):"
    echo "$optional" | while IFS='|' read -r names part; do
        echo "  $names  $part"
    done
    exit 0
fi
if [ "$#" -gt 0 ]; then
    packages="$packages $*"
fi
if [ "$(id -u)" -eq 0 ]; then
    as_root=""
else
    as_root="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$as_root apt-get update -qq
# shellcheck disable=SC2086 # the package list is meant to split into words
$as_root apt-get install -y -qq --no-install-recommends $packages >/dev/null
