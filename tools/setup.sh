#!/bin/sh
# Install what kvshard needs to build and test on Debian 12: a C compiler,
# CMake, pkg-config, libyaml (the parser), cmocka (the tests) and xmllint
# (libxml2-utils: the report test checks its markup with it).
# Runs apt-get directly as root and through sudo otherwise.
set -eu
packages="gcc make cmake pkg-config libyaml-dev libcmocka-dev libxml2-utils"
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
