package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/svcforum/svc/connector/profile"
	"github.com/svcforum/svc/connector/runtime"
)

// MCPCheckTimeout bounds the registration's round trip: starting the registered server, its
// initialization (it reads the service's published contracts) and one signed tool call.
const MCPCheckTimeout = time.Minute

// mcpServer is the svc MCP server's command line for profile name of store st at base: this
// connector's own executable, `mcp --profile NAME`, with --config-dir when the profiles are not in the
// default configuration directory (the runtime's environment does not carry SVC_CONNECTOR_HOME), and
// the service's base URL. No key, invitation or credential is in it.
func (e *Env) mcpServer(st profile.Store, name, base, mediaDir string) (runtime.MCPServer, error) {
	exe, err := e.Executable()
	if err != nil {
		return runtime.MCPServer{}, fmt.Errorf("find this connector's executable: %w", err)
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return runtime.MCPServer{}, fmt.Errorf("find this connector's executable: %w", err)
	}
	args := []string{"mcp", "--profile", name}
	// The default without SVC_CONNECTOR_HOME: the runtime's environment does not carry that variable,
	// but it does carry HOME and XDG_CONFIG_HOME, so the server finds the default directory as this
	// process does.
	if base, err := os.UserConfigDir(); err != nil || filepath.Clean(filepath.Join(base, "svc-connector")) != filepath.Clean(st.Root) {
		root, err := filepath.Abs(st.Root)
		if err != nil {
			return runtime.MCPServer{}, err
		}
		args = append(args, "--config-dir", root)
	}
	args = append(args, "--base-url", base)
	if mediaDir != "" {
		args = append(args, "--media-dir", mediaDir)
	}
	return runtime.MCPServer{Command: exe, Args: args}, nil
}

// registrationCheck is mcp_registration: the runtime's configuration registers the svc MCP server, it
// parses, it is this connector's command line for this profile, and a tools/call of conformance
// through it (the registered command line started as the runtime starts it, in the runtime's
// environment) comes back signed: no isError, and the service's answer names this agent and echoes.
func registrationCheck(ctx context.Context, r runtime.Registrar, inst runtime.Instance, want runtime.MCPServer, agentID string) check {
	const name = "mcp_registration"
	file := r.RegistrationFile(inst)
	got, err := r.Registration(inst)
	switch {
	case err != nil:
		return fail(name, err.Error()+": run setup again to register it")
	case !got.Equal(want):
		return fail(name, fmt.Sprintf("%s registers %q, not this connector for this profile (%q): run setup again to register it", file, strings.Join(append([]string{got.Command}, got.Args...), " "), strings.Join(append([]string{want.Command}, want.Args...), " ")))
	}
	if err := conformanceThrough(ctx, got, r.Environ(inst), inst.DataDir, agentID); err != nil {
		return fail(name, fmt.Sprintf("%s registers this connector, but a conformance call through it failed: %v", file, err))
	}
	return pass(name, fmt.Sprintf("%s registers this connector for this profile, and a signed conformance call through it round-tripped", file))
}

// conformanceThrough starts server with the MCP SDK's client over a command transport and calls the
// conformance tool with a fresh echo.
func conformanceThrough(ctx context.Context, server runtime.MCPServer, env []string, dir, agentID string) error {
	ctx, cancel := context.WithTimeout(ctx, MCPCheckTimeout)
	defer cancel()
	var b [8]byte
	_, _ = rand.Read(b[:])
	echo := "svc-connector-mcp-" + hex.EncodeToString(b[:])
	cmd := exec.Command(server.Command, server.Args...)
	cmd.Env, cmd.Dir = env, dir
	client := mcp.NewClient(&mcp.Implementation{Name: "svc-connector-doctor", Version: connectorVersion()}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("start the registered server: %w", err)
	}
	defer session.Close()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "conformance", Arguments: map[string]any{"echo": echo}})
	if err != nil {
		return fmt.Errorf("tools/call conformance: %w", err)
	}
	text := resultText(res)
	switch {
	case res.IsError:
		return fmt.Errorf("tools/call conformance answered an error: %s", oneLine(text))
	case !strings.Contains(text, echo) || !strings.Contains(text, agentID):
		return errors.New("tools/call conformance answered without this agent's verified identity and the echo")
	}
	return nil
}

// resultText is a tool result's structured content and text content, as JSON and text.
func resultText(res *mcp.CallToolResult) string {
	var sb strings.Builder
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			sb.Write(b)
		}
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			sb.WriteString("\n" + t.Text)
		}
	}
	return sb.String()
}
