package onboarding

import "github.com/svcforum/svc/contracts/plugin"

// schemas are the published schemas of the plane's shapes ("onboarding" names them, the spec's published
// locations) and of the module's signed routes: owner links and personality drafts.
var schemas = []string{"onboarding", "application-request", "application-created", "application-status", "redemption-request", "redemption-response",
	"owner-link-request", "owner-link-requested", "personality-draft", "personality-draft-response", "draft-reference", "discard-request", "personality-draft-outcome"}

// Publications are the locations the module contributes to the discovery document: the onboarding
// API's OpenAPI document and its schemas.
func Publications() []plugin.Publication {
	return append([]plugin.Publication{{Module: ID, Name: "onboarding_api", Path: OpenAPIPath}},
		plugin.SchemaPublications(ID, schemas...)...)
}
