#!/usr/bin/env bash
# Builds the local S3 image (default tag svc-s3:dev) without any container registry: versitygw
# (github.com/versity/versitygw, an S3 gateway over a local directory, Apache-2.0) built from the Go
# module proxy as a static binary (CGO_ENABLED=0) on `FROM scratch`, from build/s3/Dockerfile. See
# /work/shared/CONTAINERS.md for why. Works from any directory; needs only Go and Docker.
#
#   build/s3/build.sh
#
# Environment:
#   SVC_S3_IMAGE     image tag to build                  (default svc-s3:dev)
#   SVC_IMAGE_CACHE  where the built binary is kept      (default $HOME/.cache/svc-images)
#   GO               the go command                      (default go)
#
# The image runs `versitygw posix` on port 7070 with the root user svcaccess / svcsecret123 (test
# credentials, overridable with ROOT_ACCESS_KEY_ID and ROOT_SECRET_ACCESS_KEY) over /var/lib/s3.
#
# The binary is cached, keyed by a hash of the versitygw version, the build flags, `go version` and the
# target platform; the image carries a hash of that key, this script and the Dockerfile as label
# svc.build-hash. Nothing is rebuilt until one of them changes. Progress goes to stderr; the final status
# line goes to stdout.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tag=${SVC_S3_IMAGE:-svc-s3:dev}
cache_dir=${SVC_IMAGE_CACHE:-${HOME:-/root}/.cache/svc-images}
go=${GO:-go}

# The pinned release (`go list -m -versions github.com/versity/versitygw`) and how it is built.
module=github.com/versity/versitygw
version=v1.8.0
build_flags=(-trimpath -tags timetzdata "-ldflags=-s -w -X main.Version=$version")

say() { printf 'build/s3: %s\n' "$*" >&2; }
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
	exec 9>"$cache_dir/.svc-s3.lock"
	if ! flock -n 9; then
		say "waiting for another build of the s3 image"
		flock 9
	fi
	if [ "$(image_hash)" = "$hash" ]; then
		echo "$tag is up to date"
		exit 0
	fi
fi

binary=$cache_dir/versitygw-$version-$bin_hash
start=$SECONDS
ctx=$(mktemp -d "${TMPDIR:-/tmp}/svc-s3-image.XXXXXX")
trap 'rm -rf "$ctx" "$binary.part"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

build_binary() {
	say "building the static binary (go install $module/cmd/versitygw@$version; minutes when cold)"
	mkdir -p "$ctx/bin"
	# Outside any module or workspace: go install module@version builds with versitygw's own go.mod.
	if ! (cd "$ctx" && CGO_ENABLED=0 GOWORK=off GOFLAGS='' GOBIN="$ctx/bin" \
		"$go" install "${build_flags[@]}" "$module/cmd/versitygw@$version"); then
		die "go install $module/cmd/versitygw@$version failed"
	fi
	# Static, or it would not start on scratch.
	if command -v file >/dev/null && ! file "$ctx/bin/versitygw" | grep -q 'statically linked'; then
		die "versitygw is not statically linked"
	fi
	cp "$ctx/bin/versitygw" "$binary.part"
	mv "$binary.part" "$binary"
	# Binaries of other versions or toolchains are of no further use.
	find "$cache_dir" -maxdepth 1 -name 'versitygw-*' ! -name "${binary##*/}" -delete
}

if [ -x "$binary" ]; then
	say "using cached binary ${binary##*/}"
else
	build_binary
fi

# The build context: the binary, the Dockerfile and the directory tree the image starts with.
cp "$here/Dockerfile" "$ctx/Dockerfile"
cp "$binary" "$ctx/versitygw"
mkdir -p "$ctx/rootfs/tmp" "$ctx/data/buckets" "$ctx/data/meta"
chmod 1777 "$ctx/rootfs/tmp"
chmod 0755 "$ctx/rootfs" "$ctx/data" "$ctx/data/buckets" "$ctx/data/meta" "$ctx/versitygw"

# BuildKit through buildx when it is installed; otherwise the legacy builder (DOCKER_BUILDKIT=1
# without buildx fails). Both use `FROM scratch` without a registry.
builder=()
docker buildx version >/dev/null 2>&1 || builder=(env DOCKER_BUILDKIT=0)

say "building $tag"
old_id=$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
if ! out=$("${builder[@]}" docker build --quiet --tag "$tag" --label "svc.build-hash=$hash" \
	--label "svc.versitygw-version=$version" --file "$ctx/Dockerfile" "$ctx" 2>&1); then
	printf '%s\n' "$out" >&2
	die "docker build failed"
fi
# The image the tag pointed to before is dangling now; drop it unless a container still uses it.
if [ -n "$old_id" ] && [ "$old_id" != "$(docker image inspect --format '{{.Id}}' "$tag")" ]; then
	docker image rm "$old_id" >/dev/null 2>&1 || true
fi

echo "built $tag ($(docker image inspect --format '{{.Size}}' "$tag" | awk '{ printf "%d MB", $1 / 1e6 }')) in $((SECONDS - start)) s"
