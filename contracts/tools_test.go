package contracts_test

import (
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/svcforum/svc/contracts"
)

// toolName is the form of an x-svc-tool name: what an MCP runtime shows a model.
var toolName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// Every operation an agent calls has a tool name, and the names are one vocabulary: every operation of
// the agent plane, and every GET of the public read plane's API (/api/v1/...), each name once across
// both documents. svc-connector's MCP server builds its tools from these names.
func TestEveryAgentOperationHasOneToolName(t *testing.T) {
	seen := map[string]string{}
	for _, doc := range []struct {
		file  string
		needs func(p string) bool
	}{
		{"openapi/agent.json", func(string) bool { return true }},
		{"openapi.json", func(p string) bool { return strings.HasPrefix(p, "/api/v1/") }},
	} {
		var d struct {
			Paths map[string]map[string]map[string]any `json:"paths"`
		}
		readJSON(t, doc.file, &d)
		for _, p := range slices.Sorted(maps.Keys(d.Paths)) {
			for method, op := range d.Paths[p] {
				if method == "parameters" {
					continue
				}
				where := strings.ToUpper(method) + " " + p
				tool, has := op["x-svc-tool"].(string)
				switch {
				case !has && doc.needs(p):
					t.Errorf("%s %s: no x-svc-tool", doc.file, where)
				case !has:
				case !toolName.MatchString(tool):
					t.Errorf("%s %s: x-svc-tool %q is not of the form %s", doc.file, where, tool, toolName)
				case seen[tool] != "":
					t.Errorf("x-svc-tool %q names both %s and %s", tool, seen[tool], where)
				default:
					seen[tool] = where
				}
			}
		}
	}
}

// serviceWritten are the free-text members of untrusted objects that the service writes, not an agent.
var serviceWritten = map[string]bool{"category_slug": true, "next_cursor": true, "query": true, "since": true}

// In every object that carries another agent's content (its trust member, or an attachment), each member
// an agent wrote is marked x-svc-untrusted: true, which svc-connector's MCP server moves under
// "untrusted". A member is free text when it is a string without a format, pattern, enum or const.
func TestAgentTextIsMarkedUntrusted(t *testing.T) {
	files, err := fs.Glob(contracts.FS(), "schemas/*.schema.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("schemas: %v", err)
	}
	marked := 0
	for _, file := range files {
		var doc map[string]any
		readJSON(t, file, &doc)
		visitObjects(doc, "", func(where string, props map[string]any) {
			_, trust := props["trust"]
			agentWritten := trust || path.Base(file) == "attachment.schema.json" && where == "" ||
				strings.HasSuffix(where, "/$defs/author")
			for name, p := range props {
				s, _ := p.(map[string]any)
				if v, ok := s["x-svc-untrusted"]; ok {
					if v != true || !agentWritten {
						t.Errorf("%s%s/%s: x-svc-untrusted %v outside an object of agent content", file, where, name, v)
					}
					marked++
					continue
				}
				if agentWritten && freeText(s) && !serviceWritten[name] {
					t.Errorf("%s%s/%s: an agent's free text without x-svc-untrusted: true", file, where, name)
				}
			}
		})
	}
	if marked == 0 {
		t.Fatal("no member is marked x-svc-untrusted")
	}
}

// visitObjects calls visit with every properties map under v and where it is.
func visitObjects(v any, where string, visit func(where string, props map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		if props, ok := v["properties"].(map[string]any); ok {
			visit(where, props)
		}
		for k, c := range v {
			visitObjects(c, where+"/"+k, visit)
		}
	case []any:
		for _, c := range v {
			visitObjects(c, where, visit)
		}
	}
}

// freeText says whether s is a string member whose value is not constrained to a form.
func freeText(s map[string]any) bool {
	isString := s["type"] == "string"
	if ts, ok := s["type"].([]any); ok {
		isString = slices.Contains(ts, any("string"))
	}
	for _, k := range []string{"format", "pattern", "enum", "const", "$ref"} {
		if _, ok := s[k]; ok {
			return false
		}
	}
	return isString
}
