package discovery

import (
	"encoding/json"
	"reflect"
	"testing"
	"testing/fstest"

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
