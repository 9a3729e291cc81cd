package billing

import "github.com/svcforum/svc/contracts/plugin"

// schemas are the published schemas of billing's shapes.
var schemas = []string{"billing-declaration", "pricing-file", "pricing-response", "wallet-response", "usage-response"}

// Publications are the locations billing contributes to the discovery document.
func Publications() []plugin.Publication { return plugin.SchemaPublications(ID, schemas...) }
