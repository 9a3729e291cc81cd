#!/usr/bin/env bash
# Builds the local PostgreSQL 15 image (default tag svc-postgres:15) without any container registry:
# Debian bookworm packages via debootstrap -> trimmed root file system -> tar | docker import.
# See /work/shared/CONTAINERS.md for why. The entrypoint is entrypoint.sh next to this script.
#
#   build/postgres/build.sh
#
# Environment:
#   SVC_POSTGRES_IMAGE  image tag to build            (default svc-postgres:15)
#   SVC_IMAGE_CACHE     where the rootfs tarball is kept (default $HOME/.cache/svc-images)
#   SVC_DEBIAN_MIRROR   Debian mirror (default: the machine's own, from its APT sources; mirror.sh)
#
# No mirror is named here: without SVC_DEBIAN_MIRROR the build takes the first source of Debian
# bookworm that /etc/apt/sources.list, sources.list.d/*.list or *.sources configures, and stops,
# saying so, when there is none.
#
# The trimmed rootfs tarball is cached, keyed by a hash of this script, mirror.sh and entrypoint.sh;
# the image carries the hash as label svc.build-hash. Nothing is rebuilt until one of them changes.
# Progress goes to stderr; the final status line goes to stdout.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tag=${SVC_POSTGRES_IMAGE:-svc-postgres:15}
cache_dir=${SVC_IMAGE_CACHE:-${HOME:-/root}/.cache/svc-images}
suite=bookworm
export PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin

say() { printf 'build/postgres: %s\n' "$*" >&2; }
die() {
	say "error: $*"
	exit 1
}

command -v docker >/dev/null || die "docker is not installed"
hash=$(cat "$here/build.sh" "$here/mirror.sh" "$here/entrypoint.sh" | sha256sum | cut -c1-16)
# shellcheck source=SCRIPTDIR/mirror.sh
source "$here/mirror.sh"

image_hash() { docker image inspect --format '{{ index .Config.Labels "svc.build-hash" }}' "$tag" 2>/dev/null || true; }

if [ "$(image_hash)" = "$hash" ]; then
	echo "$tag is up to date"
	exit 0
fi

if [ "$(id -u)" = 0 ]; then
	as_root() { "$@"; }
else
	command -v sudo >/dev/null || die "debootstrap needs root: run as root or install sudo"
	as_root() { sudo "$@"; }
fi

mkdir -p "$cache_dir"
# One build at a time per cache (parallel test runs may all call this script).
if command -v flock >/dev/null; then
	exec 9>"$cache_dir/.svc-postgres.lock"
	if ! flock -n 9; then
		say "waiting for another build of the postgres image"
		flock 9
	fi
	if [ "$(image_hash)" = "$hash" ]; then
		echo "$tag is up to date"
		exit 0
	fi
fi

rootfs_tar=$cache_dir/postgres15-rootfs-$hash.tar
start=$SECONDS

ensure_debootstrap() {
	local pkgs=()
	command -v debootstrap >/dev/null || pkgs+=(debootstrap)
	[ -e /usr/share/keyrings/debian-archive-keyring.gpg ] || pkgs+=(debian-archive-keyring)
	[ "${#pkgs[@]}" -eq 0 ] && return 0
	command -v apt-get >/dev/null || die "need ${pkgs[*]} and there is no apt-get to install it"
	say "installing ${pkgs[*]} with apt-get"
	as_root apt-get update -qq >&2
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${pkgs[@]}" >/dev/null
}

# Mount points at or under $1 (deepest first).
mounts_under() {
	awk -v r="$1" '$5 == r || index($5, r "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r
}

unmount_under() {
	local m
	for m in $(mounts_under "$1"); do
		say "unmounting $m"
		as_root umount "$m" 2>/dev/null || as_root umount -l "$m"
	done
	[ -z "$(mounts_under "$1")" ]
}

work=
cleanup() {
	[ -n "$work" ] && [ -d "$work" ] || return 0
	if unmount_under "$work"; then
		as_root rm -rf --one-file-system "$work"
	else
		say "warning: $work still has mounts; not removing it"
	fi
	rm -f "$rootfs_tar.part"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Runs as root, given the rootfs; nothing under it is mounted when this runs.
trim_rootfs() {
	set -euo pipefail
	local r=$1
	# The optional LLVM JIT and what only it pulls in (about 120 MB); postgres disables JIT by
	# itself when llvmjit.so is missing.
	local pkgs
	# shellcheck disable=SC2016 # dpkg-query's ${...} format, not the shell's
	pkgs=$(chroot "$r" dpkg-query -W -f '${Package} ${db:Status-Status}\n' \
		'postgresql-15-jit*' 'libllvm*' 'libz3-*' 2>/dev/null | awk '$2 == "installed" { print $1 }' || true)
	if [ -n "$pkgs" ]; then
		# postgresql-15 depends on libllvm14, hence --force-depends; dpkg's complaint about it is noise.
		local out
		# shellcheck disable=SC2086
		out=$(chroot "$r" dpkg --purge --force-depends $pkgs 2>&1) || { echo "$out" >&2; return 1; }
	fi
	rm -rf "$r"/usr/lib/postgresql/15/lib/llvmjit* "$r"/usr/lib/postgresql/15/lib/bitcode

	# Documentation (the copyright files stay), man pages, translations, locales but C.UTF-8 (which
	# glibc ships ready-made in /usr/lib/locale/C.utf8) and the locale sources.
	find "$r"/usr/share/doc -mindepth 1 ! -type d ! -name copyright -delete
	find "$r"/usr/share/doc -mindepth 1 -type d -empty -delete
	rm -rf "$r"/usr/share/man/* "$r"/usr/share/info/* "$r"/usr/share/lintian "$r"/usr/share/linda \
		"$r"/usr/share/locale/* "$r"/usr/share/i18n "$r"/usr/share/postgresql/15/man
	if [ -d "$r"/usr/lib/locale ]; then
		find "$r"/usr/lib/locale -mindepth 1 -maxdepth 1 ! -name C.utf8 ! -name C.UTF-8 -exec rm -rf {} +
	fi

	# Package caches and logs.
	rm -rf "$r"/var/cache/apt/* "$r"/var/lib/apt/lists/* "$r"/var/cache/debconf/*-old \
		"$r"/var/lib/dpkg/*-old "$r"/var/cache/ldconfig/*
	find "$r"/var/log -type f -delete

	# The cluster postgresql-common's postinst made (the entrypoint runs initdb itself), and the
	# snakeoil key generated at build time.
	rm -rf "$r"/var/lib/postgresql/15 "$r"/etc/postgresql/15 "$r"/var/log/postgresql/*
	rm -f "$r"/etc/ssl/private/ssl-cert-snakeoil.key "$r"/etc/ssl/certs/ssl-cert-snakeoil.pem

	# Docker provides /dev, /proc and /sys; never keep device nodes in the image.
	local d
	for d in dev proc sys; do
		mountpoint -q "$r/$d" && { echo "$r/$d is mounted" >&2; return 1; }
		find "$r/$d" -xdev -mindepth 1 -delete
	done
	rm -rf "$r"/tmp/* "$r"/var/tmp/*

	# What the entrypoint expects.
	mkdir -p "$r"/var/lib/postgresql/data "$r"/run/postgresql
	chroot "$r" chown postgres:postgres /var/lib/postgresql/data /run/postgresql
	chmod 0700 "$r"/var/lib/postgresql/data
	chmod 2775 "$r"/run/postgresql
	test -x "$r"/usr/bin/setpriv && test -x "$r"/usr/bin/awk && test -x "$r"/usr/lib/postgresql/15/bin/postgres
	test -d "$r"/usr/lib/locale/C.utf8
}

build_rootfs() {
	local mirror
	mirror=$(debian_mirror "$suite") || die "no Debian mirror to bootstrap from"
	ensure_debootstrap
	work=$(mktemp -d "$cache_dir/postgres-build.XXXXXX")
	local rootfs=$work/rootfs

	say "debootstrap $suite with postgresql-15 from $mirror (about 35 s)"
	if ! as_root debootstrap --variant=minbase --include=postgresql-15 "$suite" "$rootfs" "$mirror" \
		>"$work/debootstrap.log" 2>&1; then
		tail -n 30 "$work/debootstrap.log" >&2
		[ -f "$rootfs/debootstrap/debootstrap.log" ] && tail -n 30 "$rootfs/debootstrap/debootstrap.log" >&2
		die "debootstrap failed"
	fi
	unmount_under "$rootfs" || die "could not unmount everything under $rootfs"

	say "trimming the root file system ($(as_root du -sm "$rootfs" | cut -f1) MB)"
	as_root bash -c "$(declare -f trim_rootfs); trim_rootfs \"\$1\"" trim "$rootfs"
	as_root install -m 0755 "$here/entrypoint.sh" "$rootfs/usr/local/bin/docker-entrypoint.sh"

	unmount_under "$rootfs" || die "could not unmount everything under $rootfs"
	say "packing the root file system ($(as_root du -sm "$rootfs" | cut -f1) MB)"
	as_root tar --numeric-owner -C "$rootfs" -c . >"$rootfs_tar.part"
	mv "$rootfs_tar.part" "$rootfs_tar"

	cleanup
	work=
	# Tarballs of older script versions are of no further use.
	find "$cache_dir" -maxdepth 1 -name 'postgres15-rootfs-*.tar' ! -name "${rootfs_tar##*/}" -delete
}

if [ -s "$rootfs_tar" ]; then
	say "using cached root file system ${rootfs_tar##*/}"
else
	build_rootfs
fi

say "importing $tag"
old_id=$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
imported=$(docker import \
	--change 'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' \
	--change 'CMD ["postgres"]' \
	--change 'ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
	--change 'ENV PGDATA=/var/lib/postgresql/data' \
	--change 'ENV LANG=C.UTF-8' \
	--change 'WORKDIR /' \
	--change 'EXPOSE 5432' \
	--change "LABEL svc.build-hash=$hash" \
	--message "PostgreSQL 15 from Debian $suite, built by build/postgres/build.sh" \
	- <"$rootfs_tar")
# Docker engines do not take STOPSIGNAL in `import --change` (only CMD, ENTRYPOINT, ENV, EXPOSE,
# HEALTHCHECK, LABEL, ONBUILD, USER, VOLUME, WORKDIR). A one-line build on top of the imported image
# adds it without a new layer; the legacy builder takes a local FROM as it is, with no registry.
if ! out=$(printf 'FROM %s\nSTOPSIGNAL SIGINT\n' "$imported" |
	DOCKER_BUILDKIT=0 docker build --quiet --tag "$tag" - 2>&1); then
	printf '%s\n' "$out" >&2
	docker image rm "$imported" >/dev/null 2>&1 || true
	die "could not set STOPSIGNAL on the imported image"
fi
# The image the tag pointed to before is dangling now; drop it unless a container still uses it.
if [ -n "$old_id" ] && [ "$old_id" != "$(docker image inspect --format '{{.Id}}' "$tag")" ]; then
	docker image rm "$old_id" >/dev/null 2>&1 || true
fi

echo "built $tag ($(docker image inspect --format '{{.Size}}' "$tag" | awk '{ printf "%d MB", $1 / 1e6 }')) in $((SECONDS - start)) s"
