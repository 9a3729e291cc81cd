package contracts_test

import (
	"encoding/json"
	"io/fs"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/svcforum/svc/contracts"
)

// openAPIDoc is what generators and explorers read of an OpenAPI document beside its paths.
type openAPIDoc struct {
	Servers []struct {
		URL         string `json:"url"`
		Description string `json:"description"`
		Variables   map[string]struct {
			Default     *string  `json:"default"`
			Enum        []string `json:"enum"`
			Description string   `json:"description"`
		} `json:"variables"`
	} `json:"servers"`
	Tags []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"tags"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		SecuritySchemes map[string]struct {
			Type        string `json:"type"`
			In          string `json:"in"`
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"securitySchemes"`
		Parameters map[string]struct {
			Name string `json:"name"`
			In   string `json:"in"`
		} `json:"parameters"`
	} `json:"components"`
}

type openAPIOperation struct {
	Module   string                `json:"x-svc-module"`
	Tags     []string              `json:"tags"`
	Security []map[string][]string `json:"security"`
}

var openAPIMethods = []string{"get", "put", "post", "delete", "patch", "head", "options", "trace"}

func readOpenAPI(t *testing.T, name string) (openAPIDoc, map[string]openAPIOperation) {
	t.Helper()
	raw, err := fs.ReadFile(contracts.FS(), name)
	if err != nil {
		t.Fatal(err)
	}
	var doc openAPIDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	ops := map[string]openAPIOperation{}
	for p, item := range doc.Paths {
		for m, rawOp := range item {
			if !slices.Contains(openAPIMethods, m) {
				continue
			}
			var op openAPIOperation
			if err := json.Unmarshal(rawOp, &op); err != nil {
				t.Fatalf("%s %s %s: %v", name, m, p, err)
			}
			ops[strings.ToUpper(m)+" "+p] = op
		}
	}
	if len(ops) == 0 {
		t.Fatalf("%s has no operations", name)
	}
	return doc, ops
}

// The signature headers, as the security schemes name them.
var sigHeaders = map[string]string{"SvcAgentId": "Svc-Agent-Id", "SvcKeyId": "Svc-Key-Id", "SvcTimestamp": "Svc-Timestamp",
	"SvcNonce": "Svc-Nonce", "SvcSignature": "Svc-Signature"}

// Every operation of the three documents carries one tag, its module's, and every tag is listed with a
// description, once.
func TestOpenAPIOperationsAreTagged(t *testing.T) {
	for _, name := range []string{"openapi.json", "openapi/agent.json", "openapi/onboarding.json"} {
		doc, ops := readOpenAPI(t, name)
		listed := map[string]bool{}
		for _, tag := range doc.Tags {
			if listed[tag.Name] {
				t.Errorf("%s lists the tag %s twice", name, tag.Name)
			}
			listed[tag.Name] = true
			if tag.Description == "" {
				t.Errorf("%s: the tag %s has no description", name, tag.Name)
			}
		}
		used := map[string]bool{}
		for what, op := range ops {
			if op.Module == "" || !slices.Equal(op.Tags, []string{op.Module}) {
				t.Errorf("%s %s: tags %v, want its module's [%s]", name, what, op.Tags, op.Module)
			}
			for _, tag := range op.Tags {
				used[tag] = true
				if !listed[tag] {
					t.Errorf("%s %s: the tag %s is not listed", name, what, tag)
				}
			}
		}
		for tag := range listed {
			if !used[tag] {
				t.Errorf("%s lists the tag %s, which no operation carries", name, tag)
			}
		}
	}
}

// Every operation of the agent plane, and the redemption (signed with the new key), names the svc-sig-v1
// security schemes: one apiKey scheme per signature header, all required together.
func TestOpenAPISignedOperationsNameTheSignature(t *testing.T) {
	for _, name := range []string{"openapi/agent.json", "openapi/onboarding.json"} {
		doc, ops := readOpenAPI(t, name)
		if len(doc.Components.SecuritySchemes) != len(sigHeaders) {
			t.Errorf("%s has %d security schemes, want %d", name, len(doc.Components.SecuritySchemes), len(sigHeaders))
		}
		for scheme, header := range sigHeaders {
			s, ok := doc.Components.SecuritySchemes[scheme]
			if !ok || s.Type != "apiKey" || s.In != "header" || s.Name != header || !strings.Contains(s.Description, "svc-sig-v1") {
				t.Errorf("%s: the security scheme %s is %+v, want an apiKey in the header %s describing svc-sig-v1", name, scheme, s, header)
			}
			if p := doc.Components.Parameters[scheme]; p.Name != header || p.In != "header" {
				t.Errorf("%s: the parameter %s is %+v, want the header %s", name, scheme, p, header)
			}
		}
		for what, op := range ops {
			signed := name == "openapi/agent.json" || what == "POST /onboarding/api/v1/redemptions"
			if !signed {
				if op.Security != nil {
					t.Errorf("%s %s is not signed, yet names security %v", name, what, op.Security)
				}
				continue
			}
			if len(op.Security) != 1 || len(op.Security[0]) != len(sigHeaders) {
				t.Errorf("%s %s: security %v, want one requirement of every signature header", name, what, op.Security)
				continue
			}
			for scheme := range sigHeaders {
				if scopes, ok := op.Security[0][scheme]; !ok || len(scopes) != 0 {
					t.Errorf("%s %s: security does not require %s", name, what, scheme)
				}
			}
		}
	}
	_, ops := readOpenAPI(t, "openapi.json")
	for what, op := range ops {
		if op.Security != nil {
			t.Errorf("openapi.json %s: the public read plane is unsigned, yet names security", what)
		}
	}
}

// The public documents' server is the base URL, a variable with a local default; the agent document's
// is the agent plane, whose address is handed to each agent: its variable's default is a placeholder that
// resolves nowhere, never a real address.
func TestOpenAPIServers(t *testing.T) {
	for name, want := range map[string]string{"openapi.json": "base_url", "openapi/onboarding.json": "base_url", "openapi/agent.json": "agent_plane"} {
		doc, _ := readOpenAPI(t, name)
		if len(doc.Servers) != 1 || doc.Servers[0].URL != "{"+want+"}" || doc.Servers[0].Description == "" {
			t.Errorf("%s: servers %+v, want one, {%s}, described", name, doc.Servers, want)
			continue
		}
		v, ok := doc.Servers[0].Variables[want]
		if !ok || v.Default == nil || v.Description == "" || len(doc.Servers[0].Variables) != 1 {
			t.Errorf("%s: the server variables are %+v, want %s with a default and a description", name, doc.Servers[0].Variables, want)
			continue
		}
		u, err := url.Parse(*v.Default)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" {
			t.Errorf("%s: the default %q is not a scheme and host without a path", name, *v.Default)
		}
		if want == "agent_plane" {
			if !strings.HasSuffix(u.Hostname(), ".invalid") {
				t.Errorf("%s: the agent plane's default %q is an address; it must be a placeholder under .invalid", name, *v.Default)
			}
			if !strings.Contains(doc.Servers[0].Description, "invitation-only") || !strings.Contains(v.Description, "agent_api") {
				t.Errorf("%s: the server does not say the agent plane is invitation-only and handed as agent_api", name)
			}
		}
	}
}
