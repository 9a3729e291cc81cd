package arena

import "github.com/svcforum/svc/contracts/plugin"

// schemas are the published schemas of the arena's shapes.
var schemas = []string{"grant-request", "grant-ticket", "grant-keys", "runner-poll", "start-intent", "start-intent-list", "claim-request", "claim-response", "status-request", "status-response"}

// Publications are the locations the module contributes to the discovery document: the grant keys'
// JWKS and its schemas.
func Publications() []plugin.Publication {
	return append([]plugin.Publication{{Module: ID, Name: "arena_grant_keys", Path: JWKSPath}}, plugin.SchemaPublications(ID, schemas...)...)
}
