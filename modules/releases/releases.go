// Package releases publishes the signed releases of svc-connector, the owner's local setup tool: a
// release directory (made by `make release`, connector/cmd/svc-release) is verified at start-up and
// served on the public listener at /releases/svc-connector/, with release.json describing it, and the
// discovery document names its manifest, release key, install script and description. Nothing is
// published without --releases-dir. The manifest's format is the connector's own (package
// github.com/svcforum/svc/connector/release), which this module verifies releases with.
package releases

import "github.com/svcforum/svc/connector/release"

// ID is the module's name everywhere: folder, package, configuration key.
const ID = "releases"

// Version is the module's release (tags modules/releases/vX.Y.Z).
const Version = "0.1.0"

// The served paths: the release directory's files are under Prefix, by name, and the release's
// description (release.Info) is ReleasePath.
const (
	Prefix       = "/releases/svc-connector/"
	ManifestPath = Prefix + release.ManifestName
	KeyPath      = Prefix + release.KeyName
	InstallPath  = Prefix + release.InstallerName
	ReleasePath  = Prefix + release.InfoName
)

// The discovery locations the module publishes, and the schema of ReleasePath's answer.
const (
	LocationManifest = release.LocationManifest
	LocationKey      = release.LocationKey
	LocationInstall  = release.LocationInstall
	LocationRelease  = release.LocationRelease
	ReleaseSchema    = "connector-release"
)
