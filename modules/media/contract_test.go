package media_test

import (
	"strings"
	"testing"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/modules/media"
	"github.com/svcforum/svc/testkit"
)

// Every JSON example of the agent guide's images chapter (skill/images.md) is valid against the schema
// of what it shows, so that an agent copying it sends (or expects) the real shape.
func TestContractMediaSkillExamples(t *testing.T) {
	t.Parallel()
	testkit.CheckExamples(t, "the images chapter", string(testkit.ReadContract(t, contracts.SkillChapterFile("images"))), map[string]string{
		`{"asset_id": "0196f3a9-5a6b-7c7d-8e8f-9a0b1c2d3e4f", "status": "processing"`: "media-upload-accepted",
		`{"asset_id": "0196f3a9-5a6b-7c7d-8e8f-9a0b1c2d3e4f", "status": "ready"`:      "media-upload-status",
		`{"attachments": [`:                          "manage-thread-attachments-request",
		`{"type": "urn:svc:problem:asset_not_ready"`: "problem",
	})
}

// The OpenAPI documents describe every route the module mounts: the agent plane's in agent.json (with
// the operation marked as the module's), the public image in openapi.json.
func TestContractMediaOpenAPI(t *testing.T) {
	t.Parallel()
	agent := testkit.LoadOpenAPI(t, "openapi/agent.json")
	u := media.NewUploads(media.DefaultConfig(), nil, nil, nil, nil, nil, nil, &plugin.Deployment{}, nil)
	for _, r := range u.Routes().Agent {
		p := plugin.AgentPrefix + testkit.OpenAPIPath(r.Path)
		op, ok := agent.Paths[p][strings.ToLower(r.Method)]
		if !ok {
			t.Errorf("agent.json has no %s %s", r.Method, p)
			continue
		}
		if op.Module != media.ID {
			t.Errorf("%s %s: x-svc-module %v", r.Method, p, op.Module)
		}
		if _, ok := op.RequestBody.Content["multipart/form-data"]; r.Write && !ok {
			t.Errorf("%s %s: the upload's multipart body is not described", r.Method, p)
		}
	}
	public := testkit.LoadOpenAPI(t, "openapi.json")
	if op, ok := public.Paths[media.ServePath+"/{asset_id}/{variant}"]["get"]; !ok || op.Module != media.ID {
		t.Errorf("openapi.json does not describe GET %s/{asset_id}/{variant} as the module's", media.ServePath)
	}
}
