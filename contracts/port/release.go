package port

// ConnectorReleases describes the published release of svc-connector, the owner's setup tool (the
// releases module offers it), so that a module can tell an owner how to install it: the mail of an
// approved application gives the install line with the release key pinned.
type ConnectorReleases interface {
	// ConnectorRelease returns the release being published; ok is false when none is (no
	// --releases-dir, or the service has not started publishing yet).
	ConnectorRelease() (release ConnectorRelease, ok bool)
}

// ConnectorRelease is one published release of svc-connector.
type ConnectorRelease struct {
	Version       string // the release's version, such as v0.3.1
	InstallScript string // the absolute URL of its install script (install.sh)
	ReleaseKey    string // the note verifier key that signed its manifest, one line
}
