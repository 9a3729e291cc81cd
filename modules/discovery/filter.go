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

// forDeployment returns an OpenAPI document without the paths of modules this deployment does not
// enable, so that an agent following the discovery document never calls a route that answers 404.
// When nothing is removed the bytes are served as written.
func (p *Publisher) forDeployment(body []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("read OpenAPI document: %w", err)
	}
	paths, _ := doc["paths"].(map[string]any)
	removed := false
	for name, item := range paths {
		ops, _ := item.(map[string]any)
		for _, op := range ops {
			m, _ := op.(map[string]any)
			owner, _ := m[moduleMember].(string)
			if owner != "" && owner != "host" && !slices.Contains(p.deployment.Modules, owner) {
				delete(paths, name) // the operations of a path belong to one module
				removed = true
				break
			}
		}
	}
	if !removed {
		return body, nil
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("write OpenAPI document: %w", err)
	}
	return append(out, '\n'), nil
}
