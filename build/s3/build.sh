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
# What is not named here is build/go-image.sh's. The binary is cached, keyed by a hash of the versitygw
# version, the build flags, `go version` and the target platform; the image carries a hash of that key,
# this script, build/go-image.sh and the Dockerfile as label svc.build-hash. Nothing is rebuilt until one
# of them changes. Progress goes to stderr; the final status line goes to stdout.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tag=${SVC_S3_IMAGE:-svc-s3:dev}
name=s3
# The pinned release (`go list -m -versions github.com/versity/versitygw`) and how it is built.
module=github.com/versity/versitygw
version=v1.8.0
package=$module/cmd/versitygw
program=versitygw
build_flags=(-trimpath -tags timetzdata "-ldflags=-s -w -X main.Version=$version")
# The buckets and their metadata, owned by the image's user.
context_dirs=(data data/buckets data/meta)

# shellcheck source=SCRIPTDIR/../go-image.sh
source "$here/../go-image.sh"
