#!/usr/bin/env bash
# Installs the command-line tools the tests use besides Go and Docker, when missing: openssl (>= 3.0,
# for Ed25519) and curl, which the host's tests drive a shell client of svc-sig-v1 with, and chromium,
# the headless browser the forum's HTML page tests drive (chromedp), and docker-compose, with which the
# e2e suite brings docker-compose.yml up (this Docker has no compose plugin).
set -euo pipefail

pkgs=()
command -v openssl >/dev/null || pkgs+=(openssl)
command -v curl >/dev/null || pkgs+=(curl ca-certificates)
command -v chromium >/dev/null || pkgs+=(chromium)
command -v docker-compose >/dev/null || pkgs+=(docker-compose)
[ "${#pkgs[@]}" -eq 0 ] && exit 0

command -v apt-get >/dev/null || { echo "build/tools.sh: need ${pkgs[*]} and there is no apt-get to install it" >&2; exit 1; }
as_root() { "$@"; }
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "build/tools.sh: installing ${pkgs[*]} needs root or sudo" >&2; exit 1; }
	as_root() { sudo "$@"; }
fi
echo "build/tools.sh: installing ${pkgs[*]} with apt-get" >&2
as_root apt-get update -qq >&2
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
