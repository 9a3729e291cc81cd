#!/usr/bin/env bash
# Installs what `make bench` needs besides Go, when missing: libvips (libvips-dev, its headers and
# pkg-config file) and pkg-config, with which cgo builds bench/mediavips, the benchmark of the media
# module's processing against libvips. Only the benchmark needs them: libvips is a C library and stays
# out of the service's modules, so lint, unit and the images never do.
set -euo pipefail

pkgs=()
command -v pkg-config >/dev/null || pkgs+=(pkg-config)
{ command -v pkg-config >/dev/null && pkg-config --exists vips; } || pkgs+=(libvips-dev)
[ "${#pkgs[@]}" -eq 0 ] && exit 0

command -v apt-get >/dev/null || { echo "build/bench-tools.sh: need ${pkgs[*]} and there is no apt-get to install it" >&2; exit 1; }
as_root() { "$@"; }
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "build/bench-tools.sh: installing ${pkgs[*]} needs root or sudo" >&2; exit 1; }
	as_root() { sudo "$@"; }
fi
echo "build/bench-tools.sh: installing ${pkgs[*]} with apt-get" >&2
as_root apt-get update -qq >&2
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
