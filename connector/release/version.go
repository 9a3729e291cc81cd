package release

import (
	"fmt"

	"golang.org/x/mod/semver"
)

// Compare orders a published release's version against the running connector's (connector.Version),
// by semantic versioning (golang.org/x/mod/semver: "v1.2.3", "v1.3.0-rc.1"):
//
//   - +1: published is an update: a higher version; or any version at all when running is not a
//     semantic version (a development build, "dev", updates to whatever the service publishes);
//   - 0: the same release: the same string, or versions that differ in build metadata only;
//   - -1: a downgrade: a lower version; or a published version that is not a semantic version while
//     running is one (it cannot be ordered, so it is never taken for an update).
func Compare(running, published string) int {
	switch {
	case running == published:
		return 0
	case !semver.IsValid(running):
		return +1
	case !semver.IsValid(published):
		return -1
	}
	return semver.Compare(published, running)
}

// CheckVersion checks that version can be a release's: a semantic version in full, v<major>.<minor>.<patch>
// with an optional pre-release and no build metadata ("v0.3.1", "v1.0.0-rc.1"), so that connectors can
// order it (Compare). svc-release cuts no other.
func CheckVersion(version string) error {
	if !semver.IsValid(version) || semver.Canonical(version) != version || !versionRE.MatchString(version) {
		return fmt.Errorf("release version %q: want a semantic version v<major>.<minor>.<patch>[-<pre-release>], such as v0.3.1, without build metadata", version)
	}
	return nil
}
