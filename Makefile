# svc: the commands a newcomer needs. `make help` lists them.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

MODULES := sdk connector contracts database testkit modules/arena modules/discovery modules/sigv1 modules/billing modules/forum modules/media modules/onboarding modules/releases modules/reports host e2e
BIN := $(CURDIR)/bin
STATICCHECK_VERSION := v0.8.2
BENCHSTAT_VERSION := v0.0.0-20260908200009-22c9c6c9d4da

SVC_IMAGE ?= svc:dev
SVC_POSTGRES_IMAGE ?= svc-postgres:15
SVC_S3_IMAGE ?= svc-s3:dev
SVC_MAIL_IMAGE ?= svc-mail:dev
export SVC_IMAGE SVC_POSTGRES_IMAGE SVC_S3_IMAGE SVC_MAIL_IMAGE
# No registry is reachable: the reaper image cannot be pulled, and the tests remove what they start.
export TESTCONTAINERS_RYUK_DISABLED ?= true
# Every container and network the tests start is labelled svc.test.run=$(SVC_TEST_RUN): one ID per make
# invocation (inherited by its sub-makes), so that `make sweep` removes this run's leftovers only.
ifeq ($(origin SVC_TEST_RUN),undefined)
SVC_TEST_RUN := $(shell od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
endif
export SVC_TEST_RUN

.PHONY: help run build compose-env test unit e2e images tools lint bench tidy sweep release

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-11s %s\n", $$1, $$2}'

# make run compiles no C: the svc binary and the connector are pure Go (SQLite is modernc.org/sqlite).
run: export CGO_ENABLED := 0
run: ## serve svc on the embedded SQLite default (./var/svc.db), keys in ./var, a connector release for this machine from dist/; Ctrl-C stops it
	@mkdir -p var
	@test -s var/cursor.key || (umask 077 && head -c 32 /dev/urandom | base64 > var/cursor.key)
	@test -s var/draft.key || (umask 077 && head -c 32 /dev/urandom | base64 > var/draft.key)
	@test -s var/grant.key || (umask 077 && head -c 32 /dev/urandom | base64 > var/grant.key)
	@if [ ! -s dist/svc-connector/manifest ] || [ -n "$$(find connector sdk -name '*.go' -newer dist/svc-connector/manifest | head -1)" ]; then \
		$(MAKE) --no-print-directory release PLATFORMS=$$(go env GOOS)/$$(go env GOARCH); fi
	go build -trimpath -o $(BIN)/svc ./host/cmd/svc
	SVC_SEED="$${SVC_SEED:-true}" SVC_ONBOARDING_STARTER_CREDITS="$${SVC_ONBOARDING_STARTER_CREDITS:-100}" \
	SVC_RELEASES_DIR="$${SVC_RELEASES_DIR:-$(CURDIR)/dist/svc-connector}" \
	SVC_CURSOR_KEY="$${SVC_CURSOR_KEY:-$$(cat var/cursor.key)}" \
	SVC_ONBOARDING_DRAFT_KEY="$${SVC_ONBOARDING_DRAFT_KEY:-$$(cat var/draft.key)}" \
	SVC_ARENA_GRANT_KEY="$${SVC_ARENA_GRANT_KEY:-$$(cat var/grant.key)}" exec $(BIN)/svc serve

build: ## build the svc binary into ./bin/svc
	CGO_ENABLED=0 go build -trimpath -o $(BIN)/svc ./host/cmd/svc

# The file docker compose reads beside docker-compose.yml: .env.example with fresh keys, written to a
# temporary file (mktemp: 0600) and linked into place, which fails if the file exists meanwhile, so a
# deployment's keys are never replaced.
COMPOSE_ENV ?= .env

compose-env: ## write .env for docker compose: .env.example with fresh random keys, mode 0600; never overwrites an existing one
	@if [ -e '$(COMPOSE_ENV)' ]; then echo "make compose-env: $(COMPOSE_ENV) exists; not overwriting it (its keys seal cursors and encrypt drafts)" >&2; exit 1; fi
	@key() { head -c 32 /dev/urandom | base64; }; tmp=$$(mktemp '$(COMPOSE_ENV).XXXXXX'); trap 'rm -f "$$tmp"' EXIT; \
	sed -e "s|^SVC_CURSOR_KEY=.*|SVC_CURSOR_KEY=$$(key)|" \
		-e "s|^SVC_ONBOARDING_DRAFT_KEY=.*|SVC_ONBOARDING_DRAFT_KEY=$$(key)|" \
		-e "s|^SVC_ARENA_GRANT_KEY=.*|SVC_ARENA_GRANT_KEY=$$(key)|" .env.example > "$$tmp"; \
	chmod 600 "$$tmp"; ln "$$tmp" '$(COMPOSE_ENV)'
	@echo "make compose-env: wrote $(COMPOSE_ENV) (0600) with fresh keys; docker compose reads it: docker compose up -d" >&2

test: images lint unit e2e ## every test: images, lint, unit and store tests (race, both dialects), e2e
	@$(MAKE) --no-print-directory sweep

unit: tools ## each module's tests alone (GOWORK=off) with the race detector, two modules at a time; PostgreSQL from a container
	@build/unit.sh host $(filter-out host e2e,$(MODULES))

e2e: images tools ## the built image beside PostgreSQL, in containers (testcontainers-go)
	cd e2e && GOWORK=off go test -count=1 -timeout 15m ./...

images: ## build the PostgreSQL, S3, mail and service images offline (only what changed)
	build/postgres/build.sh
	build/svc/build.sh
	build/s3/build.sh
	build/mail/build.sh

tools: ## install the command-line tools the tests use (openssl, curl, chromium, docker-compose) when missing
	@build/tools.sh

lint: $(BIN)/staticcheck ## gofmt, go vet and staticcheck over every module
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt would rewrite:"; echo "$$out"; exit 1; fi
	@for m in $(MODULES); do (cd $$m && GOWORK=off go vet ./... && GOWORK=off $(BIN)/staticcheck ./...); done

bench: $(BIN)/benchstat ## benchmarks, each against a baseline measured in the same run (installs libvips when missing)
	@build/bench-tools.sh
	@mkdir -p var
	@{ for m in $(MODULES); do (cd $$m && GOWORK=off go test -run '^$$' -bench . -benchmem -count 6 ./...); done; \
		(cd bench/mediavips && GOWORK=off go test -run '^$$' -bench . -benchmem -count 6 ./...); } \
		| tee var/bench.txt | grep -E '^(Benchmark|ok|FAIL)' >&2
	@$(BIN)/benchstat -col /impl var/bench.txt

release: ## cut a signed svc-connector release into dist/svc-connector [VERSION=v1.2.3 RELEASE_KEY=var/release.key PLATFORMS=linux/amd64,...]
	@key='$(or $(RELEASE_KEY),var/release.key)'; \
	case "$$key" in /*) ;; *) key="$(CURDIR)/$$key" ;; esac; \
	if [ ! -s "$$key" ]; then \
		if [ -n '$(RELEASE_KEY)' ]; then echo "make release: no release key at $$key" >&2; exit 1; fi; \
		mkdir -p var; \
		echo "make release: generating a development release key in var/release.key (0600); its public half is:" >&2; \
		(cd connector && GOWORK=off go run ./cmd/svc-release --generate-key "$$key") >&2; \
		echo "make release: a real release is signed with the project's offline key: make release RELEASE_KEY=/path/to/it" >&2; \
	fi; \
	version='$(VERSION)'; \
	[ -n "$$version" ] || version=$$( (git describe --tags --match 'connector/v*' --dirty 2>/dev/null || true) | sed 's|^connector/||'); \
	[ -n "$$version" ] || version=v0.0.0-dev.g$$(git rev-parse --short HEAD 2>/dev/null || echo 0); \
	cd connector && GOWORK=off go run ./cmd/svc-release --out "$(CURDIR)/dist/svc-connector" --version "$$version" \
		--key "$$key" $(if $(PLATFORMS),--platforms '$(PLATFORMS)')

tidy: ## go mod tidy in every module
	@for m in $(MODULES); do (cd $$m && go mod tidy); done
	@cd bench/mediavips && GOWORK=off go mod tidy

# What sweep removes carries this run's label and either testcontainers' own or docker-compose's (e2e's
# compose project), never anything else on the engine. Docker ANDs the filters of one listing.
SWEEP_OWNERS := label=org.testcontainers=true label=com.docker.compose.project

sweep: ## remove the containers, networks and volumes that this run's tests (SVC_TEST_RUN) left behind
	@for o in $(SWEEP_OWNERS); do docker ps -aq --filter label=svc.test.run=$(SVC_TEST_RUN) --filter $$o; done | sort -u | xargs -r docker rm -f -v >/dev/null
	@for o in $(SWEEP_OWNERS); do docker volume ls -q --filter label=svc.test.run=$(SVC_TEST_RUN) --filter $$o; done | sort -u | xargs -r docker volume rm >/dev/null 2>&1 || true
	@for o in $(SWEEP_OWNERS); do docker network ls -q --filter label=svc.test.run=$(SVC_TEST_RUN) --filter $$o; done | sort -u | xargs -r docker network rm >/dev/null 2>&1 || true

$(BIN)/staticcheck:
	GOBIN=$(BIN) go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

$(BIN)/benchstat:
	GOBIN=$(BIN) go install golang.org/x/perf/cmd/benchstat@$(BENCHSTAT_VERSION)
