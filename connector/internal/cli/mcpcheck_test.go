package cli

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/svcforum/svc/connector/profile"
	"github.com/svcforum/svc/connector/runtime"
)

// standInAgent is the agent the stand-in MCP server says the service verified.
const standInAgent = "0196f410-3c4d-7e5f-8a6b-7c8d9e0f1a99"

// TestMain lets this test binary be a stand-in for `svc-connector mcp --profile NAME ...` (the real
// server is another package's): a stdio MCP server, built with the same SDK, whose conformance tool
// answers as the service does, verified identity and echo, or an error for the profile "refusing".
func TestMain(m *testing.M) {
	if len(os.Args) > 3 && os.Args[1] == "mcp" && os.Args[2] == "--profile" {
		refusing := os.Args[3] == "refusing"
		s := mcp.NewServer(&mcp.Implementation{Name: "svc-stand-in", Version: "0"}, nil)
		type in struct {
			Echo string `json:"echo"`
		}
		type out struct {
			AgentID string `json:"agent_id"`
			Echo    string `json:"echo"`
		}
		mcp.AddTool(s, &mcp.Tool{Name: "conformance", Description: "signed conformance"}, func(_ context.Context, _ *mcp.CallToolRequest, i in) (*mcp.CallToolResult, out, error) {
			if refusing {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "signature_invalid: the service did not verify the request"}}}, out{}, nil
			}
			return nil, out{AgentID: standInAgent, Echo: i.Echo}, nil
		})
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestTheMCPServerCommandLine(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	e := DefaultEnv()
	e.Executable = func() (string, error) { return "/opt/svc/svc-connector", nil }
	def, err := os.UserConfigDir()
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.mcpServer(profile.Store{Root: filepath.Join(def, "svc-connector")}, "agent-a", "https://forum.example", "")
	if err != nil || got.Command != "/opt/svc/svc-connector" || !slices.Equal(got.Args, []string{"mcp", "--profile", "agent-a", "--base-url", "https://forum.example"}) {
		t.Fatalf("default configuration directory: %+v %v", got, err)
	}
	other := t.TempDir()
	got, err = e.mcpServer(profile.Store{Root: other}, "agent-a", "https://forum.example", "")
	if err != nil || !slices.Equal(got.Args, []string{"mcp", "--profile", "agent-a", "--config-dir", other, "--base-url", "https://forum.example"}) {
		t.Fatalf("another configuration directory: %+v %v", got, err)
	}
	// Named by SVC_CONNECTOR_HOME, which the runtime's environment does not carry: named in the line.
	t.Setenv("SVC_CONNECTOR_HOME", other)
	got, err = e.mcpServer(profile.Store{Root: other}, "agent-a", "https://forum.example", "")
	if err != nil || !slices.Contains(got.Args, "--config-dir") {
		t.Fatalf("SVC_CONNECTOR_HOME: %+v %v", got, err)
	}
}

func TestTheRegistrationCheck(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	inst := runtime.Instance{Profile: dir, DataDir: filepath.Join(dir, "runtime", "codex"), LogDir: filepath.Join(dir, "logs"), BaseURL: "http://forum.test"}
	r := runtime.Codex().(runtime.Registrar)
	want := runtime.MCPServer{Command: self, Args: []string{"mcp", "--profile", "agent-a", "--base-url", "http://forum.test"}}
	ctx := context.Background()

	if c := registrationCheck(ctx, r, inst, want, standInAgent); c.OK || !strings.Contains(c.Reason, "not registered") {
		t.Fatalf("nothing registered: %+v", c)
	}
	other := want
	other.Args = []string{"mcp", "--profile", "agent-b", "--base-url", "http://forum.test"}
	if err := r.Register(ctx, inst, other); err != nil {
		t.Fatal(err)
	}
	if c := registrationCheck(ctx, r, inst, want, standInAgent); c.OK || !strings.Contains(c.Reason, "agent-b") {
		t.Fatalf("another profile registered: %+v", c)
	}
	if err := r.Register(ctx, inst, want); err != nil {
		t.Fatal(err)
	}
	if c := registrationCheck(ctx, r, inst, want, standInAgent); !c.OK || c.Name != "mcp_registration" {
		t.Fatalf("registered: %+v", c)
	}
	if c := registrationCheck(ctx, r, inst, want, "0196f410-3c4d-7e5f-8a6b-000000000000"); c.OK {
		t.Fatalf("another agent verified: %+v", c)
	}
	refusing := runtime.MCPServer{Command: self, Args: []string{"mcp", "--profile", "refusing", "--base-url", "http://forum.test"}}
	if err := r.Register(ctx, inst, refusing); err != nil {
		t.Fatal(err)
	}
	if c := registrationCheck(ctx, r, inst, refusing, standInAgent); c.OK || !strings.Contains(c.Reason, "signature_invalid") {
		t.Fatalf("an error result: %+v", c)
	}
}
