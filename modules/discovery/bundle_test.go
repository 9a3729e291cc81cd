package discovery_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/modules/discovery"
)

// isOpenAPI reports whether a served path is an OpenAPI document, which is served bundled.
func isOpenAPI(p string) bool {
	return p == discovery.PublicAPI || strings.HasPrefix(p, discovery.ContractsDir+"/openapi/") && path.Ext(p) == ".json"
}

// unbundle undoes what discovery's bundling does to a served OpenAPI document: it takes the bundled
// schemas out of components/schemas and turns the local refs back into the repository's root-relative
// ones. It returns the document and the schemas, as files of contracts.FS would hold them.
func unbundle(t testing.TB, served []byte) (doc map[string]any, schemas map[string]map[string]any) {
	t.Helper()
	if err := json.Unmarshal(served, &doc); err != nil {
		t.Fatalf("served OpenAPI document: %v", err)
	}
	components, _ := doc["components"].(map[string]any)
	bundled, _ := components["schemas"].(map[string]any)
	delete(components, "schemas")
	schemas = map[string]map[string]any{}
	for name, s := range bundled {
		if base, def, isDef := strings.Cut(name, "."); isDef {
			if schemas[base] == nil {
				schemas[base] = map[string]any{}
			}
			defs, _ := schemas[base]["$defs"].(map[string]any)
			if defs == nil {
				defs = map[string]any{}
				schemas[base]["$defs"] = defs
			}
			defs[def] = s
			continue
		}
		if schemas[name] == nil {
			schemas[name] = map[string]any{}
		}
		for k, v := range s.(map[string]any) {
			schemas[name][k] = v
		}
		schemas[name]["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	}
	for name, s := range schemas {
		restoreRefs(s, name)
	}
	restoreRefs(doc, "")
	return doc, schemas
}

func restoreRefs(v any, owner string) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if ref, ok := child.(string); ok && k == "$ref" {
				if local, ok := strings.CutPrefix(ref, "#/components/schemas/"); ok {
					name, def, isDef := strings.Cut(local, ".")
					switch {
					case isDef && name == owner:
						v[k] = "#/$defs/" + def
					case isDef:
						v[k] = discovery.SchemaPath(name) + "#/$defs/" + def
					default:
						v[k] = discovery.SchemaPath(name)
					}
				}
				continue
			}
			restoreRefs(child, owner)
		}
	case []any:
		for _, child := range v {
			restoreRefs(child, owner)
		}
	}
}

func readJSON(t testing.TB, name string) map[string]any {
	t.Helper()
	raw, err := fs.ReadFile(contracts.FS(), name)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// checkBundled fails unless served, the OpenAPI document served at p in a deployment of every
// module, is exactly the repository's document with its schemas bundled: taking them out again gives
// back the document and every schema file it uses.
func checkBundled(t testing.TB, p string, served []byte) {
	t.Helper()
	name := "openapi.json"
	if p != discovery.PublicAPI {
		name = strings.TrimPrefix(p, discovery.ContractsDir+"/")
	}
	doc, schemas := unbundle(t, served)
	if want := readJSON(t, name); !reflect.DeepEqual(doc, want) {
		t.Errorf("GET %s: unbundled, it differs from %s", p, name)
	}
	if len(schemas) == 0 {
		t.Errorf("GET %s: no schema bundled", p)
	}
	for s, got := range schemas {
		if want := readJSON(t, "schemas/"+s+".schema.json"); !reflect.DeepEqual(got, want) {
			t.Errorf("GET %s: the bundled schema %s differs from its file", p, s)
		}
	}
}

// Every OpenAPI document is served self-contained, for every kind of deployment (no module, every
// module, each module alone and every module but each one: what a module's presence or absence
// changes shows in those, without the 2^9 subsets): each $ref is a local pointer that resolves in the document itself, so tools
// need no access to the service to read it. The bundle does not depend on the order in which things
// were gathered, so the bytes (and the ETag derived from them) are stable.
func TestOpenAPIDocumentsAreSelfContained(t *testing.T) {
	pubs := append(discovery.Publications(),
		plugin.Publication{Module: "sigv1", Name: "agent_api", Path: "/contracts/openapi/agent.json"},
		plugin.Publication{Module: "onboarding", Name: "onboarding_api", Path: "/contracts/openapi/onboarding.json"})
	reversed := slices.Clone(pubs)
	slices.Reverse(reversed)
	deployments := [][]string{{}, allModules}
	for _, m := range allModules {
		deployments = append(deployments, []string{m}, slices.DeleteFunc(slices.Clone(allModules), func(o string) bool { return o == m }))
	}
	for _, modules := range deployments {
		e := engine(t, &plugin.Deployment{BaseURL: base, Modules: modules}, pubs)
		again := engine(t, &plugin.Deployment{BaseURL: base, Modules: modules}, reversed)
		for _, p := range []string{discovery.PublicAPI, discovery.ContractsDir + "/openapi/agent.json", discovery.ContractsDir + "/openapi/onboarding.json"} {
			r := serve(t, e, http.MethodGet, p, nil)
			if r.status != http.StatusOK {
				t.Fatalf("%v GET %s: %d", modules, p, r.status)
			}
			if r2 := serve(t, again, http.MethodGet, p, nil); !bytes.Equal(r.body, r2.body) || r.header.Get("ETag") != r2.header.Get("ETag") {
				t.Errorf("%v GET %s: two publishers serve different bytes", modules, p)
			}
			var doc map[string]any
			if err := json.Unmarshal(r.body, &doc); err != nil {
				t.Fatal(err)
			}
			refs := 0
			walkRefs(doc, func(ref string) {
				refs++
				if !strings.HasPrefix(ref, "#/") {
					t.Errorf("%v GET %s: $ref %q is not local", modules, p, ref)
					return
				}
				if _, ok := resolve(doc, strings.TrimPrefix(ref, "#/")); !ok {
					t.Errorf("%v GET %s: $ref %q resolves to nothing", modules, p, ref)
				}
			})
			if refs == 0 {
				t.Errorf("%v GET %s: no $ref at all", modules, p)
			}
			checkBundledSchemas(t, fmt.Sprintf("%v GET %s", modules, p), doc)
		}
	}
}

// checkBundledSchemas fails if a bundled schema still carries what only a standalone schema file
// may: $schema (the document's jsonSchemaDialect applies), or $defs, whose "#/$defs/..." refs would
// resolve against the document's root rather than the schema.
func checkBundledSchemas(t *testing.T, what string, doc map[string]any) {
	t.Helper()
	components, _ := doc["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	if len(schemas) == 0 {
		t.Errorf("%s: no schema bundled", what)
	}
	for name, s := range schemas {
		m, _ := s.(map[string]any)
		for _, k := range []string{"$schema", "$defs", "$id"} {
			if _, ok := m[k]; ok {
				t.Errorf("%s: the bundled schema %s keeps %s", what, name, k)
			}
		}
	}
}

func walkRefs(v any, f func(string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if ref, ok := child.(string); ok && k == "$ref" {
				f(ref)
				continue
			}
			walkRefs(child, f)
		}
	case []any:
		for _, child := range v {
			walkRefs(child, f)
		}
	}
}

// resolve follows a JSON pointer (without its leading "#/") in doc.
func resolve(doc any, pointer string) (any, bool) {
	cur := doc
	for _, token := range strings.Split(pointer, "/") {
		token = strings.NewReplacer("~1", "/", "~0", "~").Replace(token)
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[token]; !ok {
			return nil, false
		}
	}
	return cur, true
}
