// Package release makes, signs and verifies releases of svc-connector, and updates a connector in place.
//
// # Releases
//
// A release is a directory of files served under one URL base (the releases module serves it at
// /releases/svc-connector/ on the service's public listener):
//
//	manifest                       the signed checksum manifest (below)
//	release-key                    the release key: one line, a golang.org/x/mod/sumdb/note verifier key
//	install.sh                     the POSIX installer (it verifies everything below before installing)
//	svc-connector_<os>_<arch>      one static binary per platform, ".exe" on windows
//
// The discovery document names the manifest, the key and the installer as the locations
// "connector_release_manifest", "connector_release_key" and "connector_install_script", and the
// release's description as "connector_release": release.json (Info; schema connector-release), the
// version, the runtime drivers its connector ships, each platform's binary with its SHA-256, and the
// three URLs above, made by the releases module from the verified manifest. A binary is fetched from
// the manifest's own directory: the manifest's URL with its last segment replaced by the file's name.
//
// # The manifest
//
// The manifest is a signed note in the format of golang.org/x/mod/sumdb/note (the Go checksum
// database's): a text, a blank line, and exactly one signature line, Ed25519, by the release key. The
// text is, line by line, each ending in "\n":
//
//	svc-connector <version>
//	runtimes <runtime> [<runtime> ...]
//	<sha256>  <file>
//	...
//
// <version> is 1 to 64 of [0-9A-Za-z.+_-], starting with a letter or digit ("v0.3.1"). The runtimes
// are the local agent runtimes the release's connector drives, each [a-z][a-z0-9_-]*, sorted, at least
// one ("command"). Each file line is the lowercase hex SHA-256 of a file, two spaces and its name (the
// format of sha256sum, so `sha256sum -c` checks a downloaded copy); names are [A-Za-z0-9][A-Za-z0-9._-]*,
// never "manifest", "release-key" or "release.json", listed in byte order, each once, at least one. The signature line
// is "— <key name> <base64 of the 4-byte key hash and the 64-byte Ed25519 signature of the text>".
//
// For example:
//
//	svc-connector v0.3.1
//	runtimes command
//	5f0c…e1  install.sh
//	9a7b…04  svc-connector_darwin_amd64
//	…
//	c3d2…7f  svc-connector_windows_arm64.exe
//
//	— svc-connector-release AbCd…==
//
// Verify refuses, with errors that wrap ErrTampered, a manifest that is not exactly that: a signature by
// any other key, a second signature, a changed byte, a malformed or duplicated line. SelfUpdate and
// install.sh refuse a file whose SHA-256 is not the manifest's (ErrChecksum).
//
// # Keys
//
// GenerateKey makes a key pair: the signer key ("PRIVATE+KEY+<name>+<hash>+<base64>") signs, and stays
// with whoever cuts releases (offline, for a real release); the verifier key ("<name>+<hash>+<base64>")
// is published as release-key and built into each binary of the release as connector.ReleaseKey. A
// connector built with a key (every release is) refuses a service that publishes another key
// (ErrKeyMismatch): a changed key needs the owner's decision, so after a key rotation an owner reinstalls
// with the install script and the new key (install.sh --release-key), checked out of band. A planned
// rotation spares them that: a bridge release signed with the old key builds in the new one
// (svc-release --trust-key), and the releases after it are signed with the new key
// (modules/releases/README.md). A connector built without a key (a development build) trusts the key the
// service publishes.
//
// # Versions
//
// Releases are ordered by semantic versioning (golang.org/x/mod/semver): svc-release cuts only full
// versions such as v0.3.1 or v1.0.0-rc.1 (CheckVersion), and Compare orders a published version against
// the running connector's. SelfUpdate installs only a newer release: the same version is left alone,
// and an older one is refused with ErrDowngrade. A version that is not a semantic version cannot be
// ordered: a running connector of such a version (a development build, "dev") takes any published
// release for an update, and a published release of such a version is, for a connector of a semantic
// version, never newer (refused like a downgrade). Going back is the owner's decision:
// SelfUpdateWith with SelfUpdateOptions.AllowDowngrade installs any published release whose version
// differs (svc-connector self-update --allow-downgrade).
//
// The signed note carries no expiry: the manifest the service publishes is the current release. An
// operator withdraws a bad release by publishing a fixed one with a higher version; republishing an
// older release reaches only the connectors whose owners allow the downgrade.
package release
