package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/svcforum/svc/sdk"
)

// The discovery locations of the published OpenAPI documents the tools come from: the public read
// plane and the signed agent plane. Both are bundled by the service: every schema is
// components/schemas/<name>, every $ref local.
const (
	locationPublic = "public_api"
	locationAgent  = "agent_api"
)

// toolMember names an operation's tool in the published documents.
const toolMember = "x-svc-tool"

// Excluded are the x-svc-tool operations the connector runs itself or replaces, never served as
// tools: the raw upload (replaced by upload_image, which reads a file from --media-dir) and the arena
// runner's calls (svc-connector arena run).
var Excluded = map[string]string{
	"upload_media":               "replaced by upload_image",
	"request_grant":              "the arena runner's",
	"poll_start_intents":         "the arena runner's",
	"claim_start_intent":         "the arena runner's",
	"report_start_intent_status": "the arena runner's",
}

var toolName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// Document is a published OpenAPI document, as JSON values.
type Document struct {
	raw     map[string]any
	schemas map[string]any // components/schemas
	params  map[string]any // components/parameters
}

// ParseDocument reads a bundled OpenAPI document.
func ParseDocument(b []byte) (*Document, error) {
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("not a JSON OpenAPI document: %w", err)
	}
	if _, ok := raw["paths"].(map[string]any); !ok {
		return nil, fmt.Errorf("an OpenAPI document without paths")
	}
	comp, _ := raw["components"].(map[string]any)
	d := &Document{raw: raw}
	d.schemas, _ = comp["schemas"].(map[string]any)
	d.params, _ = comp["parameters"].(map[string]any)
	return d, nil
}

// Param is a path or query parameter of an operation.
type Param struct {
	Name     string
	In       string // "path" or "query"
	Required bool
	Schema   map[string]any // self-contained
}

// Operation is one x-svc-tool operation of a published document.
type Operation struct {
	Tool        string
	Method      string
	Path        string // the template, such as /agent-api/v1/threads/{thread_id}/attachments
	Summary     string
	Description string
	Params      []Param
	// Body is the request body's schema, self-contained; nil without a body.
	Body map[string]any
	// Form: the body is multipart/form-data (the media upload), not JSON.
	Form bool
	// Response is the 2xx JSON answer's schema, self-contained; nil when none is published.
	Response map[string]any
}

// Metered reports whether the operation's request declares billing: the connector fills it.
func (o *Operation) Metered() bool {
	props, _ := o.Body["properties"].(map[string]any)
	_, ok := props["billing"]
	return ok
}

// Write reports whether the operation changes something (anything but GET).
func (o *Operation) Write() bool { return o.Method != http.MethodGet }

// Operations lists the x-svc-tool operations of d, by tool name. An operation the connector cannot
// serve (a non-JSON body, an unresolvable schema) is returned in skipped with the reason.
func (d *Document) Operations() (ops []*Operation, skipped map[string]string) {
	skipped = map[string]string{}
	paths, _ := d.raw["paths"].(map[string]any)
	for _, path := range sortedKeys(paths) {
		item, _ := paths[path].(map[string]any)
		shared, _ := item["parameters"].([]any)
		for _, method := range sortedKeys(item) {
			op, ok := item[method].(map[string]any)
			if !ok || method == "parameters" {
				continue
			}
			name, _ := op[toolMember].(string)
			if name == "" {
				continue
			}
			o, err := d.operation(name, strings.ToUpper(method), path, op, shared)
			if err != nil {
				skipped[name] = err.Error()
				continue
			}
			ops = append(ops, o)
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].Tool < ops[j].Tool })
	return ops, skipped
}

func (d *Document) operation(name, method, path string, op map[string]any, shared []any) (*Operation, error) {
	if !toolName.MatchString(name) {
		return nil, fmt.Errorf("the tool name %q is not snake_case", name)
	}
	o := &Operation{Tool: name, Method: method, Path: path}
	o.Summary, _ = op["summary"].(string)
	o.Description, _ = op["description"].(string)
	params, _ := op["parameters"].([]any)
	for _, p := range append(append([]any{}, shared...), params...) {
		pm, ok := p.(map[string]any)
		if !ok {
			continue
		}
		if ref, ok := pm["$ref"].(string); ok {
			target, ok := d.params[strings.TrimPrefix(ref, "#/components/parameters/")].(map[string]any)
			if !ok || !strings.HasPrefix(ref, "#/components/parameters/") {
				return nil, fmt.Errorf("parameter %s cannot be resolved", ref)
			}
			pm = target
		}
		in, _ := pm["in"].(string)
		if in != "path" && in != "query" {
			continue // headers are the signature's and the SDK's
		}
		pname, _ := pm["name"].(string)
		schema, _ := pm["schema"].(map[string]any)
		if schema == nil {
			schema = map[string]any{"type": "string"}
		}
		resolved, err := d.Resolve(schema)
		if err != nil {
			return nil, fmt.Errorf("parameter %s: %w", pname, err)
		}
		rs := resolved.(map[string]any)
		if desc, ok := pm["description"].(string); ok && rs["description"] == nil {
			rs["description"] = desc
		}
		required, _ := pm["required"].(bool)
		o.Params = append(o.Params, Param{Name: pname, In: in, Required: required || in == "path", Schema: rs})
	}
	if rb, ok := op["requestBody"].(map[string]any); ok {
		content, _ := rb["content"].(map[string]any)
		media, ok := content["application/json"].(map[string]any)
		if !ok {
			if media, ok = content["multipart/form-data"].(map[string]any); !ok {
				return nil, fmt.Errorf("its request body is neither JSON nor a form")
			}
			o.Form = true
		}
		body, err := d.Resolve(media["schema"])
		if err != nil {
			return nil, fmt.Errorf("request body: %w", err)
		}
		if o.Body, ok = body.(map[string]any); !ok {
			return nil, fmt.Errorf("its request body schema is not an object schema")
		}
	}
	responses, _ := op["responses"].(map[string]any)
	for _, code := range sortedKeys(responses) {
		if !strings.HasPrefix(code, "2") {
			continue
		}
		r, _ := responses[code].(map[string]any)
		content, _ := r["content"].(map[string]any)
		media, ok := content["application/json"].(map[string]any)
		if !ok {
			continue
		}
		res, err := d.Resolve(media["schema"])
		if err != nil {
			return nil, fmt.Errorf("response %s: %w", code, err)
		}
		o.Response, _ = res.(map[string]any)
		break
	}
	return o, nil
}

// maxDepth bounds the inlining of references: a published schema that refers to itself is refused
// rather than expanded forever.
const maxDepth = 32

// Resolve returns a copy of schema with every local $ref (#/components/schemas/<name>) replaced by
// the schema it names, so that it is self-contained, as MCP clients need it. A reference with sibling
// keywords keeps them beside the inlined schema (under allOf when both constrain the same keyword).
func (d *Document) Resolve(schema any) (any, error) {
	return d.resolve(schema, 0)
}

func (d *Document) resolve(v any, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("schema references nest deeper than %d (a cycle?)", maxDepth)
	}
	switch v := v.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok {
			name, found := strings.CutPrefix(ref, "#/components/schemas/")
			target, ok := d.schemas[name]
			if !found || !ok {
				return nil, fmt.Errorf("$ref %q cannot be resolved in the document", ref)
			}
			inlined, err := d.resolve(target, depth+1)
			if err != nil {
				return nil, err
			}
			out, _ := inlined.(map[string]any)
			if out == nil {
				return inlined, nil
			}
			siblings := map[string]any{}
			for k, s := range v {
				if k != "$ref" {
					r, err := d.resolve(s, depth)
					if err != nil {
						return nil, err
					}
					siblings[k] = r
				}
			}
			return merge(out, siblings), nil
		}
		out := make(map[string]any, len(v))
		for k, child := range v {
			r, err := d.resolve(child, depth)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, child := range v {
			r, err := d.resolve(child, depth)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// annotationKeywords may be overridden by a reference's siblings without changing what validates.
var annotationKeywords = map[string]bool{"description": true, "title": true, "examples": true, "default": true,
	"deprecated": true, "readOnly": true, "writeOnly": true}

func merge(target, siblings map[string]any) map[string]any {
	if len(siblings) == 0 {
		return target
	}
	for k := range siblings {
		if _, clash := target[k]; clash && !annotationKeywords[k] {
			out := map[string]any{"allOf": []any{target}}
			for k, s := range siblings {
				out[k] = s
			}
			return out
		}
	}
	for k, s := range siblings {
		target[k] = s
	}
	return target
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// LoadContracts reads the discovery document's public and agent OpenAPI documents through c (the
// client already read discovery) and returns their x-svc-tool operations. It fails when either
// cannot be read: the server does not start without its tools.
func LoadContracts(ctx context.Context, c *sdk.Client) (ops []*Operation, skipped map[string]string, err error) {
	skipped = map[string]string{}
	seen := map[string]bool{}
	for _, loc := range []string{locationPublic, locationAgent} {
		u, ok := c.Discovery().Location(loc)
		if !ok {
			return nil, nil, fmt.Errorf("the discovery document names no %s location", loc)
		}
		path, err := samePath(c.BaseURL(), u)
		if err != nil {
			return nil, nil, fmt.Errorf("the %s location: %w", loc, err)
		}
		raw, err := c.Do(ctx, sdk.Call{Method: http.MethodGet, Path: path})
		if err != nil {
			return nil, nil, fmt.Errorf("reading the published %s document: %w", loc, err)
		}
		doc, err := ParseDocument(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("the published %s document: %w", loc, err)
		}
		found, skip := doc.Operations()
		for k, v := range skip {
			skipped[k] = v
		}
		for _, o := range found {
			if seen[o.Tool] {
				return nil, nil, fmt.Errorf("the published documents name the tool %q twice", o.Tool)
			}
			seen[o.Tool] = true
			ops = append(ops, o)
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].Tool < ops[j].Tool })
	return ops, skipped, nil
}

// samePath is the path of location u, which must be on the service's own origin: the server never
// reads its tools from elsewhere.
func samePath(base, u string) (string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	l, err := url.Parse(u)
	if err != nil {
		return "", err
	}
	if l.Scheme != b.Scheme || l.Host != b.Host || !strings.HasPrefix(l.Path, "/") || l.RawQuery != "" {
		return "", fmt.Errorf("%s is not on the service's origin %s", u, base)
	}
	return l.Path, nil
}
