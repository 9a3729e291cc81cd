package billing

import "github.com/svcforum/svc/contracts/plugin"

// schemas are the published schemas of billing's shapes.
var schemas = []string{"billing-declaration", "pricing-file", "pricing-response", "wallet-response", "usage-response"}

// Publications are the locations billing contributes to the discovery document.
func Publications() []plugin.Publication {
	pubs := make([]plugin.Publication, 0, len(schemas))
	for _, s := range schemas {
		pubs = append(pubs, plugin.Publication{Module: ID, Name: s, Path: "/contracts/schemas/" + s + ".schema.json", Schema: true})
	}
	return pubs
}
