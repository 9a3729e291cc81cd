package releases

import "github.com/svcforum/svc/contracts/plugin"

// Publications are the locations the module contributes to the discovery document: the release's
// manifest, key, install script and description (release.json), and the description's schema, when a
// release directory is configured (start-up fails unless it verifies, so a published location always
// answers).
func Publications(cfg Config) []plugin.Publication {
	if cfg.Dir == "" {
		return nil
	}
	return append([]plugin.Publication{
		{Module: ID, Name: LocationManifest, Path: ManifestPath},
		{Module: ID, Name: LocationKey, Path: KeyPath},
		{Module: ID, Name: LocationInstall, Path: InstallPath},
		{Module: ID, Name: LocationRelease, Path: ReleasePath},
	}, plugin.SchemaPublications(ID, ReleaseSchema)...)
}
