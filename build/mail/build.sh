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
# What is not named here is build/go-image.sh's. The binary is cached, keyed by a hash of the Mailpit
# version, the build flags, `go version` and the target platform; the image carries a hash of that key,
# this script, build/go-image.sh and the Dockerfile as label svc.build-hash. Nothing is rebuilt until one
# of them changes. Progress goes to stderr; the final status line goes to stdout.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tag=${SVC_MAIL_IMAGE:-svc-mail:dev}
name=mail
# The pinned release (`go list -m -versions github.com/axllent/mailpit`) and how it is built.
module=github.com/axllent/mailpit
version=v1.33.1
package=$module
program=mailpit
build_flags=(-trimpath -tags timetzdata "-ldflags=-s -w -X $module/config.Version=$version")
context_dirs=()

# shellcheck source=SCRIPTDIR/../go-image.sh
source "$here/../go-image.sh"
