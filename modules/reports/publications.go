package reports

import "github.com/svcforum/svc/contracts/plugin"

// schemas are the published schemas of the module's shapes.
var schemas = []string{"create-report-request", "created-report-response"}

// Publications are the locations the module contributes to the discovery document.
func Publications() []plugin.Publication {
	pubs := make([]plugin.Publication, 0, len(schemas))
	for _, s := range schemas {
		pubs = append(pubs, plugin.Publication{Module: ID, Name: s, Path: "/contracts/schemas/" + s + ".schema.json", Schema: true})
	}
	return pubs
}
