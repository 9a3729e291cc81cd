package testkit

// The checks every module's contract test makes of what it publishes: its schema publications, the
// operations agent.json and openapi.json describe for its routes, the problem codes they list, and the
// JSON examples of its chapter of the agent guide. What a module alone promises stays in its own test.

import (
	"encoding/json"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/schema"
)

// Both media types a JSON answer is described in.
var answerTypes = []string{"application/json", "application/svc+json; version=1"}

// ReadContract is a file of the contracts module ("openapi/agent.json", "skill/forum.md").
func ReadContract(t testing.TB, name string) []byte {
	t.Helper()
	raw, err := fs.ReadFile(contracts.FS(), name)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// ReadContractJSON decodes a JSON file of the contracts module into v.
func ReadContractJSON(t testing.TB, name string, v any) {
	t.Helper()
	if err := json.Unmarshal(ReadContract(t, name), v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// Conforms reports an error unless v, marshalled as render marshals it, validates against the published
// schema name.
func Conforms(t testing.TB, name string, v any) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Published().Validate(name, raw); err != nil {
		t.Errorf("%s refuses %s: %v", name, raw, err)
	}
}

// Refuses reports an error if the published schema name accepts raw.
func Refuses(t testing.TB, name, raw string) {
	t.Helper()
	if err := schema.Published().Validate(name, []byte(raw)); err == nil {
		t.Errorf("%s accepts %s", name, raw)
	}
}

// SchemaPublications checks a module's publications: each is the module's, and each schema among them
// is in the published set, served under /contracts/schemas/. It returns the schemas' names, in order
// (a name published twice stands twice), and the publications that are no schema.
func SchemaPublications(t testing.TB, module string, pubs []plugin.Publication) (names []string, others []plugin.Publication) {
	t.Helper()
	set := schema.Published()
	for _, p := range pubs {
		if p.Module != module {
			t.Errorf("publication %s belongs to %q, want %q", p.Name, p.Module, module)
		}
		if !p.Schema {
			others = append(others, p)
			continue
		}
		names = append(names, p.Name)
		if !set.Has(p.Name) {
			t.Errorf("publication %s names no published schema (have %v)", p.Name, set.Names())
		}
		if want := "/contracts/schemas/" + p.Name + schema.Suffix; p.Path != want {
			t.Errorf("publication %s is at %s, want %s", p.Name, p.Path, want)
		}
	}
	return names, others
}

// PublishesSchemas checks a module's publications (SchemaPublications) and that the schemas want are
// among them; it returns what SchemaPublications does.
func PublishesSchemas(t testing.TB, module string, pubs []plugin.Publication, want ...string) (names []string, others []plugin.Publication) {
	t.Helper()
	names, others = SchemaPublications(t, module, pubs)
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Errorf("%s does not publish the schema %s (publishes %v)", module, w, names)
		}
	}
	return names, others
}

// OpenAPI is what the contract tests read of an OpenAPI document of the contracts module.
type OpenAPI struct {
	Paths        map[string]map[string]Operation `json:"paths"`
	Components   map[string]map[string]any       `json:"components"`
	ProblemCodes map[string]struct {
		Status int    `json:"status"`
		Title  string `json:"title"`
	} `json:"x-svc-problem-codes"`
}

// Operation is one operation of an OpenAPI document; Raw is its whole JSON text.
type Operation struct {
	OperationID string           `json:"operationId"`
	Tool        *string          `json:"x-svc-tool"`
	Module      string           `json:"x-svc-module"`
	Description string           `json:"description"`
	Parameters  []map[string]any `json:"parameters"`
	RequestBody struct {
		Content map[string]struct {
			Schema struct {
				Ref string `json:"$ref"`
			} `json:"schema"`
		} `json:"content"`
	} `json:"requestBody"`
	Responses map[string]map[string]any `json:"responses"`
	Raw       json.RawMessage           `json:"-"`
}

// UnmarshalJSON decodes the operation and keeps its text.
func (o *Operation) UnmarshalJSON(b []byte) error {
	type plain Operation
	if err := json.Unmarshal(b, (*plain)(o)); err != nil {
		return err
	}
	o.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// LoadOpenAPI reads an OpenAPI document of the contracts module ("openapi/agent.json", "openapi.json").
func LoadOpenAPI(t testing.TB, name string) *OpenAPI {
	t.Helper()
	var doc OpenAPI
	ReadContractJSON(t, name, &doc)
	return &doc
}

var ginParam = regexp.MustCompile(`:([a-z_]+)`)

// OpenAPIPath writes a gin path as OpenAPI does: /a/:id/b is /a/{id}/b.
func OpenAPIPath(p string) string { return ginParam.ReplaceAllString(p, "{$1}") }

// SchemaName is the published schema a "$ref" names, or "" when it names none.
func SchemaName(ref string) string {
	name, found := strings.CutPrefix(ref, "/contracts/schemas/")
	if !found {
		return ""
	}
	return strings.TrimSuffix(name, schema.Suffix)
}

// RequestSchema is the published schema of the operation's JSON body, or "".
func (o Operation) RequestSchema() string {
	return SchemaName(o.RequestBody.Content["application/json"].Schema.Ref)
}

// ParamRefs are the names of the shared parameters the operation refers to, in order; the path's own
// parameters are left out.
func (o Operation) ParamRefs() []string {
	var out []string
	for _, p := range o.Parameters {
		if p["in"] == "path" {
			continue
		}
		ref, _ := p["$ref"].(string)
		out = append(out, strings.TrimPrefix(ref, "#/components/parameters/"))
	}
	return out
}

// Headers are the headers the operation's response of status declares.
func (o Operation) Headers(status string) map[string]any {
	h, _ := o.Responses[status]["headers"].(map[string]any)
	return h
}

// Names reports whether the operation's text names s anywhere.
func (o Operation) Names(s string) bool { return strings.Contains(string(o.Raw), s) }

// CheckAnswerSchema checks that the response of status refers to the published schema want in both
// JSON media types.
func CheckAnswerSchema(t testing.TB, where string, op Operation, status, want string) {
	t.Helper()
	content, _ := op.Responses[status]["content"].(map[string]any)
	for _, mt := range answerTypes {
		s, _ := content[mt].(map[string]any)
		sch, _ := s["schema"].(map[string]any)
		if sch["$ref"] != "/contracts/schemas/"+want+schema.Suffix {
			t.Errorf("%s: %s %s schema %v, want %s", where, status, mt, sch["$ref"], want)
		}
	}
}

// CheckTool checks the operation's x-svc-tool: want, or none when want is "".
func CheckTool(t testing.TB, where string, op Operation, want string) {
	t.Helper()
	switch {
	case want == "" && op.Tool != nil:
		t.Errorf("%s: x-svc-tool %q, want none", where, *op.Tool)
	case want != "" && op.Tool == nil:
		t.Errorf("%s: x-svc-tool none, want %q", where, want)
	case want != "" && *op.Tool != want:
		t.Errorf("%s: x-svc-tool %q, want %q", where, *op.Tool, want)
	}
}

// OperationWant is what a module's test expects of one operation: its operationId, its x-svc-tool
// ("" for none), the shared parameters it refers to, in order, and the schema of its JSON body ("" when
// the test does not check one).
type OperationWant struct {
	ID, Tool string
	Params   []string
	Request  string
}

// CheckOperation checks the operation's operationId, tool, parameters and request schema against want.
func CheckOperation(t testing.TB, where string, op Operation, want OperationWant) {
	t.Helper()
	if op.OperationID != want.ID {
		t.Errorf("%s: operationId %q, want %q", where, op.OperationID, want.ID)
	}
	CheckTool(t, where, op, want.Tool)
	if got := op.ParamRefs(); !slices.Equal(got, want.Params) {
		t.Errorf("%s: parameters %v, want %v", where, got, want.Params)
	}
	if got := op.RequestSchema(); want.Request != "" && got != want.Request {
		t.Errorf("%s: request schema %q, want %s", where, got, want.Request)
	}
}

// CheckStatuses checks that the operation declares a response for every status.
func CheckStatuses(t testing.TB, where string, op Operation, statuses ...string) {
	t.Helper()
	for _, status := range statuses {
		if _, ok := op.Responses[status]; !ok {
			t.Errorf("%s: no %s response", where, status)
		}
	}
}

// CheckProblemCodes checks that the document's x-svc-problem-codes lists every code with the status
// and title contracts/problem gives it.
func CheckProblemCodes[C ~string](t testing.TB, doc *OpenAPI, codes ...C) {
	t.Helper()
	catalog := problem.Codes()
	for _, code := range codes {
		got, ok := doc.ProblemCodes[string(code)]
		if !ok {
			t.Errorf("x-svc-problem-codes does not list %s", code)
			continue
		}
		def, ok := catalog[problem.Code(code)]
		if !ok {
			t.Errorf("contracts/problem does not define %s", code)
			continue
		}
		if got.Status != def.Status || got.Title != def.Title {
			t.Errorf("x-svc-problem-codes %s = %d %q, contracts/problem says %d %q", code, got.Status, got.Title, def.Status, def.Title)
		}
	}
}

// JSONBlocks are the bodies of the text's ```json code blocks, in order.
func JSONBlocks(text string) []string {
	var out []string
	for _, b := range strings.Split(text, "```json\n")[1:] {
		if body, _, ok := strings.Cut(b, "\n```"); ok {
			out = append(out, body)
		}
	}
	return out
}

// JSONBlock is the one JSON code block of text that starts with prefix; where stands for the text in
// the failure ("the forum's chapters").
func JSONBlock(t testing.TB, where, text, prefix string) []byte {
	t.Helper()
	var found []string
	for _, b := range JSONBlocks(text) {
		if strings.HasPrefix(b, prefix) {
			found = append(found, b)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: %d JSON blocks start with %s, want 1", where, len(found), prefix)
	}
	return []byte(found[0])
}

// CheckExamples checks that text has exactly one JSON block starting with each prefix of examples and
// that the block validates against the schema the prefix maps to ("" for a block no schema describes);
// it returns the blocks by prefix.
func CheckExamples(t testing.TB, where, text string, examples map[string]string) map[string][]byte {
	t.Helper()
	set := schema.Published()
	out := map[string][]byte{}
	blocks := JSONBlocks(text)
	for prefix, name := range examples {
		found := 0
		for _, b := range blocks {
			if !strings.HasPrefix(b, prefix) {
				continue
			}
			found++
			out[prefix] = []byte(b)
			if name == "" {
				continue
			}
			if err := set.Validate(name, []byte(b)); err != nil {
				t.Errorf("%s: the %s example is refused: %v\n%s", where, name, err, b)
			}
		}
		if found != 1 {
			t.Errorf("%s: %d JSON blocks start with %s, want 1", where, found, prefix)
		}
	}
	return out
}

// CheckNames checks that text names every s; where stands for the text in the failure.
func CheckNames(t testing.TB, where, text string, names ...string) {
	t.Helper()
	for _, s := range names {
		if !strings.Contains(text, s) {
			t.Errorf("%s does not name %s", where, s)
		}
	}
}
