#!/usr/bin/env bash
# Builds the service image (default tag svc:dev) without any container registry: a static svc binary
# (CGO_ENABLED=0, -tags timetzdata) on `FROM scratch`, from build/svc/Dockerfile. See
# /work/shared/CONTAINERS.md for why. Works from any directory; needs only Go and Docker.
#
#   build/svc/build.sh
#
# Environment:
#   SVC_IMAGE  image tag to build (default svc:dev)
#   GO         the go command (default go)
#
# The image carries the label svc.build-hash: a hash of every input of the binary and the image (the
# Go sources but tests, every go.mod, go.sum and go.work file, the contracts tree, this directory, and
# `go version`). Nothing is rebuilt until one of them changes. Progress goes to stderr; the final status
# line goes to stdout.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
tag=${SVC_IMAGE:-svc:dev}
go=${GO:-go}

say() { printf 'build/svc: %s\n' "$*" >&2; }
die() {
	say "error: $*"
	exit 1
}

command -v docker >/dev/null || die "docker is not installed"
command -v "$go" >/dev/null || die "go is not installed"
cd "$root"
if [ ! -f go.work ] || [ ! -f host/cmd/svc/main.go ]; then
	die "$root is not the svc repository"
fi

# The inputs, as paths relative to the repository root, NUL-separated and sorted. In a git checkout:
# tracked and untracked files that .gitignore does not exclude; elsewhere (an exported tarball): find.
inputs() {
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1 &&
		[ "$(git rev-parse --show-toplevel)" = "$root" ]; then
		git ls-files -z --cached --others --exclude-standard -- \
			':(glob)**/*.go' ':(glob)**/go.mod' ':(glob)**/go.sum' 'go.work' 'go.work.sum' \
			'contracts' 'build/svc' \
			':(exclude,glob)**/*_test.go' ':(exclude,glob)**/testdata/**'
	else
		find . \( -name .git -o -name testdata -o -path ./var -o -path ./bin \) -prune -o \
			-type f ! -name '*_test.go' \( -name '*.go' -o -name go.mod -o -name go.sum -o -path ./go.work \
			-o -path ./go.work.sum -o -path './contracts/*' -o -path './build/svc/*' \) -printf '%P\0'
	fi | LC_ALL=C sort -z -u
}

# A hash of the inputs' paths and contents (files deleted but still in git's index are skipped), the
# Go toolchain and the target platform.
build_hash() {
	{
		"$go" version
		"$go" env GOOS GOARCH GOAMD64 GOARM64 2>/dev/null || true
		inputs | while IFS= read -r -d '' f; do
			[ -f "$f" ] || continue
			printf '%s  %s\n' "$(sha256sum <"$f" | cut -c1-64)" "$f"
		done
	} | sha256sum | cut -c1-16
}

image_hash() { docker image inspect --format '{{ index .Config.Labels "svc.build-hash" }}' "$tag" 2>/dev/null || true; }

hash=$(build_hash)
if [ "$(image_hash)" = "$hash" ]; then
	echo "$tag is up to date"
	exit 0
fi

# One build at a time (parallel test runs may all call this script).
lock_dir=${XDG_RUNTIME_DIR:-${TMPDIR:-/tmp}}
if command -v flock >/dev/null; then
	exec 9>"$lock_dir/svc-image-build.lock"
	if ! flock -n 9; then
		say "waiting for another build of the svc image"
		flock 9
	fi
	if [ "$(image_hash)" = "$hash" ]; then
		echo "$tag is up to date"
		exit 0
	fi
fi

start=$SECONDS
ctx=$(mktemp -d "${TMPDIR:-/tmp}/svc-image.XXXXXX")
trap 'rm -rf "$ctx"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say "building the static binary (go build ./host/cmd/svc)"
CGO_ENABLED=0 "$go" build -trimpath -tags timetzdata -ldflags='-s -w' -o "$ctx/svc" ./host/cmd/svc

# The build context: the binary, the Dockerfile and the directory tree the image starts with.
cp "$here/Dockerfile" "$ctx/Dockerfile"
mkdir -p "$ctx/rootfs/tmp" "$ctx/data"
chmod 1777 "$ctx/rootfs/tmp"
chmod 0755 "$ctx/rootfs" "$ctx/data"

# BuildKit through buildx when it is installed; otherwise the legacy builder (DOCKER_BUILDKIT=1
# without buildx fails). Both use `FROM scratch` without a registry.
builder=()
docker buildx version >/dev/null 2>&1 || builder=(env DOCKER_BUILDKIT=0)

say "building $tag"
old_id=$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
if ! out=$("${builder[@]}" docker build --quiet --tag "$tag" --label "svc.build-hash=$hash" \
	--file "$ctx/Dockerfile" "$ctx" 2>&1); then
	printf '%s\n' "$out" >&2
	die "docker build failed"
fi
# The image the tag pointed to before is dangling now; drop it unless a container still uses it.
if [ -n "$old_id" ] && [ "$old_id" != "$(docker image inspect --format '{{.Id}}' "$tag")" ]; then
	docker image rm "$old_id" >/dev/null 2>&1 || true
fi

echo "built $tag ($(docker image inspect --format '{{.Size}}' "$tag" | awk '{ printf "%d MB", $1 / 1e6 }')) in $((SECONDS - start)) s"
