package discovery

import (
	"encoding/json"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/plugin"
)

// A schema's own "#/$defs/x" and another schema's "/contracts/schemas/a.schema.json#/$defs/x" both
// become the hoisted component a.x; $schema and $defs leave the bundled copies.
func TestBundleRewritesEveryRef(t *testing.T) {
	files := fstest.MapFS{
		"schemas/a.schema.json": {Data: []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
			"properties":{"id":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`)},
		"schemas/b.schema.json": {Data: []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema",
			"items":{"$ref":"/contracts/schemas/a.schema.json#/$defs/x"}}`)},
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(`{"paths":{"/b":{"get":{"responses":{
		"200":{"content":{"application/json":{"schema":{"$ref":"/contracts/schemas/b.schema.json"}}}},
		"default":{"$ref":"#/components/responses/Problem"}}}}},
		"components":{"responses":{"Problem":{"description":"An error."}}}}`), &doc); err != nil {
		t.Fatal(err)
	}
	if err := bundle(doc, files); err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal([]byte(`{"paths":{"/b":{"get":{"responses":{
		"200":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/b"}}}},
		"default":{"$ref":"#/components/responses/Problem"}}}}},
		"components":{"responses":{"Problem":{"description":"An error."}},"schemas":{
			"a":{"type":"object","properties":{"id":{"$ref":"#/components/schemas/a.x"}}},
			"a.x":{"type":"string"},
			"b":{"items":{"$ref":"#/components/schemas/a.x"}}}}}`), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(doc, want) {
		got, _ := json.MarshalIndent(doc, "", "  ")
		t.Fatalf("bundled:\n%s", got)
	}
}

// An OpenAPI document that names a schema there is no file for fails start-up, rather than answering
// 404 (or 500) for the document.
func TestUnbundleableDocumentFailsStartUp(t *testing.T) {
	for _, ref := range []string{"/contracts/schemas/missing.schema.json", "https://elsewhere.example/x.json", "/contracts/schemas/a.schema.json#/properties/id"} {
		p := New(&plugin.Deployment{BaseURL: "https://forum.example"}, nil)
		p.files = fstest.MapFS{
			"openapi.json":          {Data: []byte(`{"components":{"schemas":{"X":{"$ref":"` + ref + `"}}}}`)},
			"schemas/a.schema.json": {Data: []byte(`{"type":"object"}`)},
		}
		if _, err := Routes(p); err == nil {
			t.Errorf("$ref %q: Routes succeeded", ref)
		}
	}
}

// Every published schema can be bundled, whichever reference forms it uses (another schema by its
// served path, with or without a $defs fragment, or its own "#/$defs/..."; the onboarding umbrella
// schema refers to its shapes from its $defs): every $ref becomes a local pointer that resolves.
func TestBundleEveryPublishedSchema(t *testing.T) {
	entries, err := fs.ReadDir(contracts.FS(), "schemas")
	if err != nil {
		t.Fatal(err)
	}
	uses := map[string]any{}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".schema.json")
		if !ok {
			continue
		}
		uses["uses-"+name] = map[string]any{"$ref": SchemaPath(name)}
	}
	if uses["uses-onboarding"] == nil {
		t.Fatal("no onboarding schema is published")
	}
	doc := map[string]any{"components": map[string]any{"schemas": uses}}
	if err := bundle(doc, contracts.FS()); err != nil {
		t.Fatal(err)
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for _, name := range []string{"onboarding", "onboarding.redemption-request", "application-request", "redemption-response"} {
		if schemas[name] == nil {
			t.Errorf("%s is not bundled", name)
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				if ref, ok := child.(string); ok && k == "$ref" {
					name, ok := strings.CutPrefix(ref, "#/components/schemas/")
					if !ok || schemas[name] == nil {
						t.Errorf("$ref %q does not resolve in the bundle", ref)
					}
					continue
				}
				walk(child)
			}
		case []any:
			for _, child := range v {
				walk(child)
			}
		}
	}
	walk(doc)
}
