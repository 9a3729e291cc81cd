package sigv1

import "github.com/svcforum/svc/contracts/plugin"

// The contract locations sigv1 publishes (served by discovery from the embedded contracts).
const (
	AgentAPIPath       = "/contracts/openapi/agent.json"
	SigningVectorsPath = "/contracts/signing/svc-sig-v1-vectors.json"
)

// schemas are the published schemas of sigv1's shapes.
var schemas = []string{"signed-envelope", "conformance-request", "conformance-response", "write-admission-request", "write-admission-response"}

// Publications are the locations sigv1 contributes to the discovery document.
func Publications() []plugin.Publication {
	pubs := []plugin.Publication{
		{Module: ID, Name: "agent_api", Path: AgentAPIPath},
		{Module: ID, Name: "signing_vectors", Path: SigningVectorsPath},
	}
	return append(pubs, plugin.SchemaPublications(ID, schemas...)...)
}
