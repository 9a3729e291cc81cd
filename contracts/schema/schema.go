// Package schema enforces the published JSON Schemas (2020-12): the server validates every request
// body against the same documents that /.well-known/svc publishes, and decodes it strictly
// (WIRE.md section 5).
package schema

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/svcforum/svc/contracts"
)

// Suffix ends the file name of every schema; the part before it is the schema's name.
const Suffix = ".schema.json"

// baseURL is where schemas are compiled from. It mirrors the served location (/contracts/schemas/), so
// that a $ref between schemas resolves the same way here as for a client: relative
// ("billing-declaration.schema.json") or by served path ("/contracts/schemas/billing-declaration.schema.json").
const baseURL = "https://contracts.svc.invalid/contracts/schemas/"

// Set is a compiled collection of schemas addressed by name ("conformance-request").
type Set struct {
	schemas map[string]*jsonschema.Schema
	// keys holds each schema's private-key rules alone (Keyword), checked before the schema itself.
	keys map[string]*jsonschema.Schema
}

// Load compiles every "<name>.schema.json" in dir of fsys, and each one's private-key rules.
func Load(fsys fs.FS, dir string) (*Set, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read schemas: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	kc, err := keyCompiler()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), Suffix) {
			continue
		}
		raw, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read schema %s: %w", e.Name(), err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("parse schema %s: %w", e.Name(), err)
		}
		if err := c.AddResource(baseURL+e.Name(), doc); err != nil {
			return nil, fmt.Errorf("add schema %s: %w", e.Name(), err)
		}
		if err := kc.AddResource(baseURL+e.Name(), keyRules(doc)); err != nil {
			return nil, fmt.Errorf("add the private-key rules of schema %s: %w", e.Name(), err)
		}
		names = append(names, strings.TrimSuffix(e.Name(), Suffix))
	}
	s := &Set{schemas: make(map[string]*jsonschema.Schema, len(names)), keys: make(map[string]*jsonschema.Schema, len(names))}
	for _, n := range names {
		sch, err := c.Compile(baseURL + n + Suffix)
		if err != nil {
			return nil, fmt.Errorf("compile schema %s: %w", n, err)
		}
		s.schemas[n] = sch
		if s.keys[n], err = kc.Compile(baseURL + n + Suffix); err != nil {
			return nil, fmt.Errorf("compile the private-key rules of schema %s: %w", n, err)
		}
	}
	return s, nil
}

var published = sync.OnceValues(func() (*Set, error) { return Load(contracts.FS(), "schemas") })

// Published returns the schemas embedded in contracts, compiled once. An error here means the module
// was built with a broken schema, which its own tests prevent.
func Published() *Set {
	s, err := published()
	if err != nil {
		panic(err)
	}
	return s
}

// Names lists the schemas in the set, sorted.
func (s *Set) Names() []string {
	out := make([]string, 0, len(s.schemas))
	for n := range s.schemas {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Has reports whether the set holds a schema of that name.
func (s *Set) Has(name string) bool { _, ok := s.schemas[name]; return ok }

func (s *Set) get(name string) (*jsonschema.Schema, error) {
	sch, ok := s.schemas[name]
	if !ok {
		return nil, fmt.Errorf("schema %q is not published", name)
	}
	return sch, nil
}
