package contracts_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/svcforum/svc/contracts"
)

// examplesBase is where the test compiles the documents from, so that a $ref by served path
// (/contracts/schemas/...) resolves to the published schema, as it does for a client of the service.
const examplesBase = "https://contracts.svc.invalid/"

// openAPIDocuments are the published OpenAPI documents, by repository path.
func openAPIDocuments(t *testing.T) []string {
	t.Helper()
	more, err := fs.Glob(contracts.FS(), "openapi/*.json")
	if err != nil || len(more) < 2 {
		t.Fatalf("openapi/ holds %v (%v), want agent.json and onboarding.json at least", more, err)
	}
	return append([]string{"openapi.json"}, more...)
}

// servedAt is where a document is served: openapi.json at the root, the others under /contracts/.
func servedAt(doc string) string {
	if doc == "openapi.json" {
		return examplesBase + doc
	}
	return examplesBase + "contracts/" + doc
}

// exampleCompiler holds every published schema (at its served path) and every OpenAPI document.
func exampleCompiler(t *testing.T, docs []string) (*jsonschema.Compiler, map[string]any) {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	names, err := fs.Glob(contracts.FS(), "schemas/*.schema.json")
	if err != nil || len(names) == 0 {
		t.Fatalf("no schemas: %v", err)
	}
	for _, n := range append(names, docs...) {
		raw, err := fs.ReadFile(contracts.FS(), n)
		if err != nil {
			t.Fatal(err)
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		url := examplesBase + "contracts/" + n
		if slices.Contains(docs, n) {
			url = servedAt(n)
		}
		if err := c.AddResource(url, v); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
	parsed := map[string]any{}
	for _, d := range docs {
		raw, _ := fs.ReadFile(contracts.FS(), d)
		v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		parsed[d] = v
	}
	return c, parsed
}

// pointerToken escapes one JSON Pointer token (RFC 6901).
func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// resolveExample follows an Example Object's $ref inside doc (#/components/examples/...).
func resolveExample(doc any, ex any) (value any, ref string, err error) {
	m, ok := ex.(map[string]any)
	if !ok {
		return nil, "", fmt.Errorf("an example is not an object")
	}
	if r, ok := m["$ref"].(string); ok {
		ref = r
		cur := doc
		for _, tok := range strings.Split(strings.TrimPrefix(r, "#/"), "/") {
			mm, ok := cur.(map[string]any)
			if !ok {
				return nil, r, fmt.Errorf("$ref %s does not resolve", r)
			}
			if cur, ok = mm[strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")]; !ok {
				return nil, r, fmt.Errorf("$ref %s does not resolve", r)
			}
		}
		if m, ok = cur.(map[string]any); !ok {
			return nil, r, fmt.Errorf("$ref %s is not an Example Object", r)
		}
	}
	v, ok := m["value"]
	if !ok {
		return nil, ref, fmt.Errorf("an Example Object without a value")
	}
	return v, ref, nil
}

// exampleSite is an object of a document that has a schema and examples: a Media Type, Parameter or
// Header Object.
type exampleSite struct {
	pointer string
	node    map[string]any
}

// exampleSites walks v (at pointer) for every object with both a schema and an example or examples.
func exampleSites(v any, pointer string, out *[]exampleSite) {
	switch x := v.(type) {
	case map[string]any:
		_, hasSchema := x["schema"].(map[string]any)
		_, one := x["example"]
		_, many := x["examples"]
		if hasSchema && (one || many) {
			*out = append(*out, exampleSite{pointer, x})
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if k == "schema" || k == "example" || k == "examples" {
				continue // values there are data, not document structure
			}
			exampleSites(x[k], pointer+"/"+pointerToken(k), out)
		}
	case []any:
		for i, e := range x {
			exampleSites(e, fmt.Sprintf("%s/%d", pointer, i), out)
		}
	}
}

// Every example in every OpenAPI document (of a response, a request body, a parameter or a header)
// validates against the schema beside it, with the published schemas that schema refers to; every
// named example under components/examples is used; and every 2xx JSON response and the shared
// problem response show at least one example per JSON media type.
func TestOpenAPIExamplesMatchTheirSchemas(t *testing.T) {
	docs := openAPIDocuments(t)
	c, parsed := exampleCompiler(t, docs)
	for _, d := range docs {
		doc := parsed[d]
		var sites []exampleSite
		exampleSites(doc, "", &sites)
		used := map[string]bool{}
		checked := 0
		for _, s := range sites {
			sch, err := c.Compile(servedAt(d) + "#" + s.pointer + "/schema")
			if err != nil {
				t.Errorf("%s %s: the schema does not compile: %v", d, s.pointer, err)
				continue
			}
			values := map[string]any{}
			if v, ok := s.node["example"]; ok {
				values["example"] = v
			}
			if exs, ok := s.node["examples"].(map[string]any); ok {
				for name, ex := range exs {
					v, ref, err := resolveExample(doc, ex)
					if err != nil {
						t.Errorf("%s %s: examples/%s: %v", d, s.pointer, name, err)
						continue
					}
					used[ref] = true
					values["examples/"+name] = v
				}
			} else if _, ok := s.node["examples"]; ok {
				t.Errorf("%s %s: examples is not a map of Example Objects", d, s.pointer)
			}
			for name, v := range values {
				checked++
				if err := sch.Validate(v); err != nil {
					t.Errorf("%s %s %s does not match its schema: %v", d, s.pointer, name, err)
				}
			}
		}
		if checked == 0 {
			t.Errorf("%s has no example", d)
		}
		components, _ := doc.(map[string]any)["components"].(map[string]any)
		named, _ := components["examples"].(map[string]any)
		for name := range named {
			if ref := "#/components/examples/" + pointerToken(name); !used[ref] {
				t.Errorf("%s: %s is used nowhere", d, ref)
			}
		}
		for _, missing := range responsesWithoutExamples(doc) {
			t.Errorf("%s: %s has no example", d, missing)
		}
	}
}

// jsonMediaType reports whether a media type of a response carries JSON.
func jsonMediaType(mt string) bool {
	base, _, _ := strings.Cut(mt, ";")
	return base == "application/json" || strings.HasSuffix(base, "+json")
}

// responsesWithoutExamples lists the 2xx responses of doc's operations, and its shared Problem
// response, whose JSON media types show no example.
func responsesWithoutExamples(doc any) []string {
	var out []string
	check := func(where string, response any) {
		r, _ := response.(map[string]any)
		content, _ := r["content"].(map[string]any)
		for mt, m := range content {
			media, _ := m.(map[string]any)
			_, one := media["example"]
			exs, _ := media["examples"].(map[string]any)
			if jsonMediaType(mt) && !one && len(exs) == 0 {
				out = append(out, where+" "+mt)
			}
		}
	}
	root, _ := doc.(map[string]any)
	paths, _ := root["paths"].(map[string]any)
	for p, item := range paths {
		ops, _ := item.(map[string]any)
		for method, op := range ops {
			o, _ := op.(map[string]any)
			responses, _ := o["responses"].(map[string]any)
			for status, r := range responses {
				if strings.HasPrefix(status, "2") {
					check(strings.ToUpper(method)+" "+p+" "+status, r)
				}
			}
		}
	}
	components, _ := root["components"].(map[string]any)
	responses, _ := components["responses"].(map[string]any)
	if problem, ok := responses["Problem"]; ok {
		check("components/responses/Problem", problem)
	} else {
		out = append(out, "components/responses/Problem (absent)")
	}
	return out
}
