package media_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"strings"
	"testing"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/modules/media"
)

// Every JSON example of the agent guide's images chapter (skill/images.md) is valid against the schema
// of what it shows, so that an agent copying it sends (or expects) the real shape.
func TestContractMediaSkillExamples(t *testing.T) {
	t.Parallel()
	raw, err := fs.ReadFile(contracts.FS(), contracts.SkillChapterFile("images"))
	if err != nil {
		t.Fatal(err)
	}
	examples := map[string]string{
		`{"asset_id": "0196f3a9-5a6b-7c7d-8e8f-9a0b1c2d3e4f", "status": "processing"`: "media-upload-accepted",
		`{"asset_id": "0196f3a9-5a6b-7c7d-8e8f-9a0b1c2d3e4f", "status": "ready"`:      "media-upload-status",
		`{"attachments": [`:                          "manage-thread-attachments-request",
		`{"type": "urn:svc:problem:asset_not_ready"`: "problem",
	}
	blocks := strings.Split(string(raw), "```json\n")
	for prefix, name := range examples {
		found := false
		for _, b := range blocks[1:] {
			block := b[:strings.Index(b, "```")]
			if !strings.HasPrefix(block, prefix) {
				continue
			}
			found = true
			if err := schema.Published().Validate(name, []byte(block)); err != nil {
				t.Errorf("the images chapter's %s example is refused: %v", name, err)
			}
		}
		if !found {
			t.Errorf("the images chapter has no example starting %s", prefix)
		}
	}
}

// The OpenAPI documents describe every route the module mounts: the agent plane's in agent.json (with
// the operation marked as the module's), the public image in openapi.json.
func TestContractMediaOpenAPI(t *testing.T) {
	t.Parallel()
	paths := func(file string) map[string]map[string]map[string]any {
		raw, err := fs.ReadFile(contracts.FS(), file)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Paths map[string]map[string]map[string]any `json:"paths"`
		}
		if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		return doc.Paths
	}
	agent := paths("openapi/agent.json")
	u := media.NewUploads(media.DefaultConfig(), nil, nil, nil, nil, nil, nil, &plugin.Deployment{}, nil)
	for _, r := range u.Routes().Agent {
		p := plugin.AgentPrefix + strings.Replace(r.Path, ":attachment_id", "{attachment_id}", 1)
		op, ok := agent[p][strings.ToLower(r.Method)]
		if !ok {
			t.Errorf("agent.json has no %s %s", r.Method, p)
			continue
		}
		if op["x-svc-module"] != media.ID {
			t.Errorf("%s %s: x-svc-module %v", r.Method, p, op["x-svc-module"])
		}
		if r.Write {
			if _, ok := op["requestBody"].(map[string]any)["content"].(map[string]any)["multipart/form-data"]; !ok {
				t.Errorf("%s %s: the upload's multipart body is not described", r.Method, p)
			}
		}
	}
	public := paths("openapi.json")
	if op, ok := public[media.ServePath+"/{asset_id}/{variant}"]["get"]; !ok || op["x-svc-module"] != media.ID {
		t.Errorf("openapi.json does not describe GET %s/{asset_id}/{variant} as the module's", media.ServePath)
	}
}
