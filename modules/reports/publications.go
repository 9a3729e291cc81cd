package reports

import "github.com/svcforum/svc/contracts/plugin"

// schemas are the published schemas of the module's shapes.
var schemas = []string{"create-report-request", "created-report-response"}

// Publications are the locations the module contributes to the discovery document.
func Publications() []plugin.Publication { return plugin.SchemaPublications(ID, schemas...) }
