#!/usr/bin/env bash
# Builds the local mail image (default tag svc-mail:dev) without any container registry: Mailpit
# (github.com/axllent/mailpit, an SMTP server that keeps what it receives and shows it through an HTTP
# API, MIT) built from the Go module proxy as a static binary (CGO_ENABLED=0) on `FROM scratch`, from
# build/mail/Dockerfile. See /work/shared/CONTAINERS.md for why. Works from any directory; needs only Go
# and Docker.
#
#   build/mail/build.sh
#
# Environment:
#   SVC_MAIL_IMAGE   image tag to build                  (default svc-mail:dev)
#   SVC_IMAGE_CACHE  where the built binary is kept      (default $HOME/.cache/svc-images)
#   GO               the go command                      (default go)
#
# The image runs Mailpit with SMTP on port 1025 (no authentication required, any credentials accepted,
# any sender and recipient) and its HTTP API on port 8025 (GET /readyz, /api/v1/messages, ...), keeping
# messages in a temporary SQLite file under /tmp. The module proxy's source has no built web UI (the
# ui/dist assets are made by npm upstream): pages load without their scripts, the API is whole.
#
# The binary is cached, keyed by a hash of the Mailpit version, the build flags, `go version` and the
# target platform; the image carries a hash of that key, this script and the Dockerfile as label
# svc.build-hash. Nothing is rebuilt until one of them changes. Progress goes to stderr; the final status
# line goes to stdout.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tag=${SVC_MAIL_IMAGE:-svc-mail:dev}
cache_dir=${SVC_IMAGE_CACHE:-${HOME:-/root}/.cache/svc-images}
go=${GO:-go}

# The pinned release (`go list -m -versions github.com/axllent/mailpit`) and how it is built.
module=github.com/axllent/mailpit
version=v1.33.1
build_flags=(-trimpath -tags timetzdata "-ldflags=-s -w -X $module/config.Version=$version")

say() { printf 'build/mail: %s\n' "$*" >&2; }
die() {
	say "error: $*"
	exit 1
}

command -v docker >/dev/null || die "docker is not installed"
command -v "$go" >/dev/null || die "go is not installed"

# The binary's key: what goes into it. The image's: the binary's key and the files of this directory.
bin_hash=$({
	echo "$module@$version"
	printf '%s\n' "${build_flags[@]}"
	"$go" version
	"$go" env GOOS GOARCH GOAMD64 GOARM64 2>/dev/null || true
} | sha256sum | cut -c1-16)
hash=$({
	echo "$bin_hash"
	cat "$here/build.sh" "$here/Dockerfile"
} | sha256sum | cut -c1-16)

image_hash() { docker image inspect --format '{{ index .Config.Labels "svc.build-hash" }}' "$tag" 2>/dev/null || true; }

if [ "$(image_hash)" = "$hash" ]; then
	echo "$tag is up to date"
	exit 0
fi

mkdir -p "$cache_dir"
# One build at a time per cache (parallel test runs may all call this script).
if command -v flock >/dev/null; then
	exec 9>"$cache_dir/.svc-mail.lock"
	if ! flock -n 9; then
		say "waiting for another build of the mail image"
		flock 9
	fi
	if [ "$(image_hash)" = "$hash" ]; then
		echo "$tag is up to date"
		exit 0
	fi
fi

binary=$cache_dir/mailpit-$version-$bin_hash
start=$SECONDS
ctx=$(mktemp -d "${TMPDIR:-/tmp}/svc-mail-image.XXXXXX")
trap 'rm -rf "$ctx" "$binary.part"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

build_binary() {
	say "building the static binary (go install $module@$version; a minute when cold)"
	mkdir -p "$ctx/bin"
	# Outside any module or workspace: go install module@version builds with Mailpit's own go.mod.
	if ! (cd "$ctx" && CGO_ENABLED=0 GOWORK=off GOFLAGS='' GOBIN="$ctx/bin" \
		"$go" install "${build_flags[@]}" "$module@$version"); then
		die "go install $module@$version failed"
	fi
	# Static, or it would not start on scratch.
	if command -v file >/dev/null && ! file "$ctx/bin/mailpit" | grep -q 'statically linked'; then
		die "mailpit is not statically linked"
	fi
	cp "$ctx/bin/mailpit" "$binary.part"
	mv "$binary.part" "$binary"
	# Binaries of other versions or toolchains are of no further use.
	find "$cache_dir" -maxdepth 1 -name 'mailpit-*' ! -name "${binary##*/}" -delete
}

if [ -x "$binary" ]; then
	say "using cached binary ${binary##*/}"
else
	build_binary
fi

# The build context: the binary, the Dockerfile and the directory tree the image starts with.
cp "$here/Dockerfile" "$ctx/Dockerfile"
cp "$binary" "$ctx/mailpit"
mkdir -p "$ctx/rootfs/tmp"
chmod 1777 "$ctx/rootfs/tmp"
chmod 0755 "$ctx/rootfs" "$ctx/mailpit"

# BuildKit through buildx when it is installed; otherwise the legacy builder (DOCKER_BUILDKIT=1
# without buildx fails). Both use `FROM scratch` without a registry.
builder=()
docker buildx version >/dev/null 2>&1 || builder=(env DOCKER_BUILDKIT=0)

say "building $tag"
old_id=$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
if ! out=$("${builder[@]}" docker build --quiet --tag "$tag" --label "svc.build-hash=$hash" \
	--label "svc.mailpit-version=$version" --file "$ctx/Dockerfile" "$ctx" 2>&1); then
	printf '%s\n' "$out" >&2
	die "docker build failed"
fi
# The image the tag pointed to before is dangling now; drop it unless a container still uses it.
if [ -n "$old_id" ] && [ "$old_id" != "$(docker image inspect --format '{{.Id}}' "$tag")" ]; then
	docker image rm "$old_id" >/dev/null 2>&1 || true
fi

echo "built $tag ($(docker image inspect --format '{{.Size}}' "$tag" | awk '{ printf "%d MB", $1 / 1e6 }')) in $((SECONDS - start)) s"
