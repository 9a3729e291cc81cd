# Shared by the images of third-party servers the tests run (build/s3, build/mail): builds a pinned Go
# program from the module proxy as a static binary, caches it, and puts it on `FROM scratch` with its
# directory's Dockerfile, labelled with a hash of every input so that an unchanged image is not rebuilt.
# A build script sets these and sources this file:
#   name          the image's short name (s3, mail): messages, lock and temporary directory
#   tag           the image tag to build
#   here          the script's directory (its build.sh and Dockerfile)
#   module        the Go module, version its pinned release, package what `go install` builds
#   program       the binary's name; build_flags the flags of `go install`
#   context_dirs  directories (relative) the build context holds for the Dockerfile to copy
# Environment: SVC_IMAGE_CACHE (default $HOME/.cache/svc-images), GO (default go).
# shellcheck shell=bash disable=SC2154 # the variables above are the sourcing script's
cache_dir=${SVC_IMAGE_CACHE:-${HOME:-/root}/.cache/svc-images}
go=${GO:-go}

say() { printf 'build/%s: %s\n' "$name" "$*" >&2; }
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
	cat "$here/build.sh" "$here/Dockerfile" "${BASH_SOURCE[0]}"
} | sha256sum | cut -c1-16)

image_hash() { docker image inspect --format '{{ index .Config.Labels "svc.build-hash" }}' "$tag" 2>/dev/null || true; }

if [ "$(image_hash)" = "$hash" ]; then
	echo "$tag is up to date"
	exit 0
fi

mkdir -p "$cache_dir"
# One build at a time per cache (parallel test runs may all call this script).
if command -v flock >/dev/null; then
	exec 9>"$cache_dir/.svc-$name.lock"
	if ! flock -n 9; then
		say "waiting for another build of the $name image"
		flock 9
	fi
	if [ "$(image_hash)" = "$hash" ]; then
		echo "$tag is up to date"
		exit 0
	fi
fi

binary=$cache_dir/$program-$version-$bin_hash
start=$SECONDS
ctx=$(mktemp -d "${TMPDIR:-/tmp}/svc-$name-image.XXXXXX")
trap 'rm -rf "$ctx" "$binary.part"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

build_binary() {
	say "building the static binary (go install $package@$version; minutes when cold)"
	mkdir -p "$ctx/bin"
	# Outside any module or workspace: go install module@version builds with the program's own go.mod.
	if ! (cd "$ctx" && CGO_ENABLED=0 GOWORK=off GOFLAGS='' GOBIN="$ctx/bin" \
		"$go" install "${build_flags[@]}" "$package@$version"); then
		die "go install $package@$version failed"
	fi
	# Static, or it would not start on scratch.
	if command -v file >/dev/null && ! file "$ctx/bin/$program" | grep -q 'statically linked'; then
		die "$program is not statically linked"
	fi
	cp "$ctx/bin/$program" "$binary.part"
	mv "$binary.part" "$binary"
	# Binaries of other versions or toolchains are of no further use.
	find "$cache_dir" -maxdepth 1 -name "$program-*" ! -name "${binary##*/}" -delete
}

if [ -x "$binary" ]; then
	say "using cached binary ${binary##*/}"
else
	build_binary
fi

# The build context: the binary, the Dockerfile and the directory tree the image starts with.
cp "$here/Dockerfile" "$ctx/Dockerfile"
cp "$binary" "$ctx/$program"
mkdir -p "$ctx/rootfs/tmp"
chmod 1777 "$ctx/rootfs/tmp"
chmod 0755 "$ctx/rootfs" "$ctx/$program"
for d in "${context_dirs[@]}"; do
	mkdir -p "$ctx/$d"
	chmod 0755 "$ctx/$d"
done

# BuildKit through buildx when it is installed; otherwise the legacy builder (DOCKER_BUILDKIT=1
# without buildx fails). Both use `FROM scratch` without a registry.
builder=()
docker buildx version >/dev/null 2>&1 || builder=(env DOCKER_BUILDKIT=0)

say "building $tag"
old_id=$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
if ! out=$("${builder[@]}" docker build --quiet --tag "$tag" --label "svc.build-hash=$hash" \
	--label "svc.$program-version=$version" --file "$ctx/Dockerfile" "$ctx" 2>&1); then
	printf '%s\n' "$out" >&2
	die "docker build failed"
fi
# The image the tag pointed to before is dangling now; drop it unless a container still uses it.
if [ -n "$old_id" ] && [ "$old_id" != "$(docker image inspect --format '{{.Id}}' "$tag")" ]; then
	docker image rm "$old_id" >/dev/null 2>&1 || true
fi

echo "built $tag ($(docker image inspect --format '{{.Size}}' "$tag" | awk '{ printf "%d MB", $1 / 1e6 }')) in $((SECONDS - start)) s"
