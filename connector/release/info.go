package release

import (
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Info describes a verified release: what the releases module serves as release.json beside the
// release's files (discovery location "connector_release"; contracts/schemas/connector-release.schema.json).
// It is derived from the manifest and carries no signature of its own: a client that installs anything
// verifies the manifest (Fetch, SelfUpdate, install.sh), never trusts Info alone.
type Info struct {
	Version string `json:"version"`
	// Runtimes are the runtime drivers the release's connector ships ("command"), sorted.
	Runtimes []string `json:"runtimes"`
	// Files are the release's connector binaries, one per platform, by name.
	Files []PlatformFile `json:"files"`
	// Manifest, ReleaseKey and InstallScript are the absolute URLs of the signed manifest, the release
	// key and install.sh.
	Manifest      string `json:"manifest"`
	ReleaseKey    string `json:"release_key"`
	InstallScript string `json:"install_script"`
}

// PlatformFile is one platform's connector binary in a release.
type PlatformFile struct {
	Name   string `json:"name"`
	OS     string `json:"os"`   // GOOS: "linux", "darwin", "windows"
	Arch   string `json:"arch"` // GOARCH: "amd64", "arm64"
	SHA256 string `json:"sha256"`
}

// Describe is the Info of the release whose files are served under dirURL, an absolute URL ending in
// "/" (for the releases module, <base URL>/releases/svc-connector/). Files lists the manifest's
// binaries (names of BinaryName's form); its other files, such as install.sh, are not platform files.
func (m *Manifest) Describe(dirURL string) Info {
	info := Info{
		Version:       m.Version,
		Runtimes:      slices.Sorted(slices.Values(m.Runtimes)),
		Files:         []PlatformFile{},
		Manifest:      dirURL + ManifestName,
		ReleaseKey:    dirURL + KeyName,
		InstallScript: dirURL + InstallerName,
	}
	for _, name := range slices.Sorted(maps.Keys(m.Files)) {
		if goos, goarch, ok := ParseBinaryName(name); ok {
			info.Files = append(info.Files, PlatformFile{Name: name, OS: goos, Arch: goarch, SHA256: m.Files[name]})
		}
	}
	return info
}

var platformPartRE = regexp.MustCompile(`^[a-z0-9]+$`)

// ParseBinaryName reads a name BinaryName makes, svc-connector_<os>_<arch> (".exe" on windows, and
// only there), into its platform; ok is false for any other name.
func ParseBinaryName(name string) (goos, goarch string, ok bool) {
	rest, ok := strings.CutPrefix(name, "svc-connector_")
	if !ok {
		return "", "", false
	}
	rest, exe := strings.CutSuffix(rest, ".exe")
	goos, goarch, ok = strings.Cut(rest, "_")
	if !ok || !platformPartRE.MatchString(goos) || !platformPartRE.MatchString(goarch) || exe != (goos == "windows") {
		return "", "", false
	}
	return goos, goarch, true
}
