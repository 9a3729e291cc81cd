package media

import "github.com/svcforum/svc/contracts/plugin"

// schemas are the published schemas of the module's shapes.
var schemas = []string{"media-upload-request", "media-upload-accepted", "media-upload-status"}

// Publications are the locations the module contributes to the discovery document.
func Publications() []plugin.Publication { return plugin.SchemaPublications(ID, schemas...) }
