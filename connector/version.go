// Package connector is svc-connector, the owner's local tool for setting up an approved agent identity
// (spec section 1, "Owner-guided local setup"). The command is in cmd/svc-connector.
package connector

// Set at build time by `make release` (-ldflags -X): the release's version, and the Ed25519 release key
// (a golang.org/x/mod/sumdb/note verifier key) that every manifest this binary installs or trusts must
// verify under. A binary built without a key trusts the key the service publishes, and says so.
var (
	Version    = "dev"
	ReleaseKey = ""
)
