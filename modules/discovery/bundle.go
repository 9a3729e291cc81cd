package discovery

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// schemaRefPrefix is how the repository's OpenAPI documents and schemas refer to a published schema:
// by the path it is served at (/contracts/schemas/<name>.schema.json), a root-relative URL that only
// resolves against the service itself.
const schemaRefPrefix = SchemasPath + "/"

// bundle makes an OpenAPI document self-contained, so that any tool resolves it offline: every schema
// it uses, directly or through another schema, becomes components/schemas/<name>, each of a schema's
// $defs becomes components/schemas/<name>.<def>, and every $ref (in the document and in the schemas)
// becomes a local #/components/schemas/... pointer. Schemas are read from files (contracts.FS) and
// copied without $schema, which an embedded schema inherits from the document's jsonSchemaDialect.
func bundle(doc map[string]any, files fs.FS) error {
	components, _ := doc["components"].(map[string]any)
	if components == nil {
		components = map[string]any{}
		doc["components"] = components
	}
	schemas, _ := components["schemas"].(map[string]any)
	if schemas == nil {
		schemas = map[string]any{}
	}
	b := &bundler{files: files, schemas: schemas}
	if err := b.rewrite(doc, ""); err != nil {
		return err
	}
	for len(b.pending) > 0 {
		name := b.pending[0]
		b.pending = b.pending[1:]
		if err := b.add(name); err != nil {
			return err
		}
	}
	if len(schemas) > 0 {
		components["schemas"] = schemas
	}
	return nil
}

type bundler struct {
	files   fs.FS
	schemas map[string]any
	seen    map[string]bool
	pending []string
}

// add copies the published schema name into components/schemas, its $defs beside it, with their refs
// rewritten.
func (b *bundler) add(name string) error {
	raw, err := fs.ReadFile(b.files, path.Join("schemas", name+".schema.json"))
	if err != nil {
		return fmt.Errorf("bundle schema %s: %w", name, err)
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("bundle schema %s: %w", name, err)
	}
	delete(s, "$schema")
	defs, _ := s["$defs"].(map[string]any)
	delete(s, "$defs")
	if err := b.rewrite(s, name); err != nil {
		return err
	}
	b.schemas[name] = s
	for def, d := range defs {
		if err := b.rewrite(d, name); err != nil {
			return err
		}
		b.schemas[name+"."+def] = d
	}
	return nil
}

// rewrite turns every $ref under v into a local pointer; within the schema owner, "#/$defs/x" is its
// own x. A published schema it names is queued to be bundled.
func (b *bundler) rewrite(v any, owner string) error {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if ref, ok := child.(string); ok && k == "$ref" {
				local, err := b.local(ref, owner)
				if err != nil {
					return err
				}
				v[k] = local
				continue
			}
			if err := b.rewrite(child, owner); err != nil {
				return err
			}
		}
	case []any:
		for _, child := range v {
			if err := b.rewrite(child, owner); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *bundler) local(ref, owner string) (string, error) {
	switch {
	case strings.HasPrefix(ref, "#/$defs/") && owner != "":
		return "#/components/schemas/" + owner + "." + strings.TrimPrefix(ref, "#/$defs/"), nil
	case strings.HasPrefix(ref, "#/") && owner == "":
		return ref, nil // already local to the document
	case strings.HasPrefix(ref, schemaRefPrefix):
		file, fragment, _ := strings.Cut(strings.TrimPrefix(ref, schemaRefPrefix), "#")
		name, ok := strings.CutSuffix(file, ".schema.json")
		if !ok {
			return "", fmt.Errorf("bundle: $ref %q names no schema", ref)
		}
		b.need(name)
		switch {
		case fragment == "":
			return "#/components/schemas/" + name, nil
		case strings.HasPrefix(fragment, "/$defs/"):
			return "#/components/schemas/" + name + "." + strings.TrimPrefix(fragment, "/$defs/"), nil
		}
	}
	return "", fmt.Errorf("bundle: $ref %q (in %q) cannot be made local", ref, owner)
}

func (b *bundler) need(name string) {
	if b.seen == nil {
		b.seen = map[string]bool{}
	}
	if !b.seen[name] {
		b.seen[name] = true
		b.pending = append(b.pending, name)
	}
}
