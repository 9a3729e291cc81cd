package discovery

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
)

// moduleMember marks, on each operation of the OpenAPI documents, the module that serves it ("host"
// for the host's own, always served).
const moduleMember = "x-svc-module"

// isOpenAPI reports whether the contracts file name is an OpenAPI document.
func isOpenAPI(name string) bool {
	return name == "openapi.json" || (strings.HasPrefix(name, "openapi/") && path.Ext(name) == ".json")
}

// forDeployment returns an OpenAPI document as this deployment serves it: without the paths of modules
// it does not enable, so that an agent following the discovery document never calls a route that
// answers 404, and self-contained (bundle), so that any tool resolves it.
func (p *Publisher) forDeployment(body []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("read OpenAPI document: %w", err)
	}
	paths, _ := doc["paths"].(map[string]any)
	for name, item := range paths {
		ops, _ := item.(map[string]any)
		for _, op := range ops {
			m, _ := op.(map[string]any)
			owner, _ := m[moduleMember].(string)
			if owner != "" && owner != "host" && !slices.Contains(p.deployment.Modules, owner) {
				delete(paths, name) // the operations of a path belong to one module
				break
			}
		}
	}
	if err := bundle(doc, p.files); err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("write OpenAPI document: %w", err)
	}
	return append(out, '\n'), nil
}
