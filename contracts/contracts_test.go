package contracts_test

import (
	"encoding/json"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/schema"
)

// Every example under examples/<shape>/valid passes the shape's schema and every one under invalid/
// fails it, so the examples agents copy from are never wrong.
func TestExamplesAgreeWithSchemas(t *testing.T) {
	set := schema.Published()
	shapes, err := fs.ReadDir(contracts.FS(), "examples")
	if err != nil {
		t.Fatal(err)
	}
	if len(shapes) == 0 {
		t.Fatal("no examples published")
	}
	for _, shape := range shapes {
		name := shape.Name()
		if !set.Has(name) {
			t.Errorf("examples/%s has no schema %s%s", name, name, schema.Suffix)
			continue
		}
		for _, verdict := range []string{"valid", "invalid"} {
			dir := path.Join("examples", name, verdict)
			files, err := fs.ReadDir(contracts.FS(), dir)
			if err != nil || len(files) == 0 {
				t.Errorf("%s: no examples (%v)", dir, err)
				continue
			}
			for _, f := range files {
				raw, err := fs.ReadFile(contracts.FS(), path.Join(dir, f.Name()))
				if err != nil {
					t.Fatal(err)
				}
				err = set.Validate(name, raw)
				if verdict == "valid" && err != nil {
					t.Errorf("%s/%s is refused: %v", dir, f.Name(), err)
				}
				if verdict == "invalid" && err == nil {
					t.Errorf("%s/%s is accepted", dir, f.Name())
				}
			}
		}
	}
}

// Every $ref in the OpenAPI documents points at a published schema (by its served path) or inside the
// document itself.
func TestOpenAPIReferencesResolve(t *testing.T) {
	set := schema.Published()
	docs := []string{"openapi.json"}
	more, _ := fs.Glob(contracts.FS(), "openapi/*.json")
	docs = append(docs, more...)
	for _, doc := range docs {
		raw, err := fs.ReadFile(contracts.FS(), doc)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if m, _ := v.(map[string]any); m["openapi"] != "3.1.0" {
			t.Errorf("%s: openapi = %v, want 3.1.0", doc, m["openapi"])
		}
		refs := 0
		walk(v, func(ref string) {
			refs++
			switch {
			case strings.HasPrefix(ref, "#/"):
				if !resolveLocal(v, ref) {
					t.Errorf("%s: $ref %s does not resolve", doc, ref)
				}
			case strings.HasPrefix(ref, "/contracts/schemas/"):
				name := strings.TrimSuffix(strings.TrimPrefix(ref, "/contracts/schemas/"), schema.Suffix)
				if !set.Has(name) {
					t.Errorf("%s: $ref %s names no published schema", doc, ref)
				}
			default:
				t.Errorf("%s: $ref %s is neither local nor a served schema path", doc, ref)
			}
		})
		if refs == 0 {
			t.Errorf("%s has no $ref at all", doc)
		}
	}
}

var codePattern = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Every problem code matches the published problem schema's code pattern and has a status and title;
// a problem built from each validates against the schema.
func TestProblemCodesMatchSchema(t *testing.T) {
	set := schema.Published()
	for code, def := range problem.Codes() {
		if !codePattern.MatchString(string(code)) || def.Status < 400 || def.Status > 599 || def.Title == "" {
			t.Errorf("code %q: %+v", code, def)
		}
		p := problem.New(code, "detail")
		p.RequestID = "req-1"
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := set.Validate("problem", raw); err != nil {
			t.Errorf("problem %s: %v", code, err)
		}
	}
}

func walk(v any, visit func(ref string)) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "$ref" {
				visit(s)
				continue
			}
			walk(e, visit)
		}
	case []any:
		for _, e := range x {
			walk(e, visit)
		}
	}
}

func resolveLocal(doc any, ref string) bool {
	cur := doc
	for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")]; !ok {
			return false
		}
	}
	return true
}

// Every operation of the OpenAPI documents names the module that serves it (x-svc-module; one module
// per path), so that discovery can leave out the paths of modules a deployment does not enable.
func TestOpenAPIPathsNameTheirModule(t *testing.T) {
	docs, _ := fs.Glob(contracts.FS(), "openapi/*.json")
	if len(docs) < 2 {
		t.Fatalf("openapi/ holds %v, want agent.json and onboarding.json at least", docs)
	}
	for _, doc := range append([]string{"openapi.json"}, docs...) {
		raw, err := fs.ReadFile(contracts.FS(), doc)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Paths map[string]map[string]map[string]any `json:"paths"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		for path, item := range v.Paths {
			owners := map[any]bool{}
			for method, op := range item {
				if m, _ := op["x-svc-module"].(string); !regexp.MustCompile(`^[a-z][a-z0-9]*$`).MatchString(m) {
					t.Errorf("%s %s %s: x-svc-module %v", doc, method, path, op["x-svc-module"])
				}
				owners[op["x-svc-module"]] = true
			}
			if len(owners) != 1 {
				t.Errorf("%s %s: the operations of one path belong to %d modules", doc, path, len(owners))
			}
		}
	}
}

// Every published schema's handle has HandlePattern, the pattern the server's Go code checks.
func TestHandlePatternIsPublished(t *testing.T) {
	var walk func(name string, v any, found *int)
	walk = func(name string, v any, found *int) {
		switch v := v.(type) {
		case map[string]any:
			if props, ok := v["properties"].(map[string]any); ok {
				if h, ok := props["handle"].(map[string]any); ok {
					*found++
					if h["pattern"] != contracts.HandlePattern {
						t.Errorf("%s: handle's pattern is %v, want %s", name, h["pattern"], contracts.HandlePattern)
					}
				}
			}
			for _, c := range v {
				walk(name, c, found)
			}
		case []any:
			for _, c := range v {
				walk(name, c, found)
			}
		}
	}
	found := 0
	names, err := fs.Glob(contracts.FS(), "schemas/*.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		raw, err := fs.ReadFile(contracts.FS(), name)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		walk(name, doc, &found)
	}
	if found < 6 {
		t.Fatalf("found %d handles in the schemas, want at least 6", found)
	}
}
