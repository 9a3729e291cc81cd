package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
)

// Gemini is the driver of Gemini CLI (`gemini`), from its own documents
// (github.com/google-gemini/gemini-cli, docs/ as published at https://geminicli.com/docs/):
//
//   - Configuration home: GEMINI_CLI_HOME, "the root directory for Gemini CLI's user-level
//     configuration and storage ... The CLI will create a .gemini folder inside this directory"
//     (docs/reference/configuration.md, environment variables; docs/cli/enterprise.md "User isolation
//     in shared environments") — set to the profile's runtime/gemini/, so its user settings are
//     runtime/gemini/.gemini/settings.json.
//   - Registration: settings.json `mcpServers` (docs/tools/mcp-server.md): {"svc":{"command":...,
//     "args":[...],"trust":true}}; trust bypasses tool-call confirmations for this server only, which
//     a headless run cannot answer.
//   - Login check: Gemini CLI documents no status command. Its sign-in ("Sign in with Google" in
//     `gemini`, docs/get-started/authentication.mdx) records the chosen method in the user settings'
//     `security.auth.selectedType` (docs/reference/configuration.md); the driver reads that setting
//     from the isolated settings.json, and never the cached credentials. Login step:
//     `GEMINI_CLI_HOME=DIR gemini` (then choose Sign in with Google).
//   - Headless run: `gemini --prompt PROMPT` (docs/cli/headless.md) with
//     `--allowed-mcp-server-names svc` (docs/cli/cli-reference.md).
func Gemini() Driver {
	return &agentCLI{
		name: "gemini", title: "Gemini CLI", program: "gemini", homeVar: "GEMINI_CLI_HOME",
		configFile: ".gemini/settings.json",
		write: func(path string, s MCPServer) error {
			return mergeJSONServer(path, geminiServer{Command: s.Command, Args: s.Args, Trust: true})
		},
		read: func(path string) (MCPServer, error) {
			e, err := readJSONServer(path)
			if err != nil {
				return MCPServer{}, err
			}
			return MCPServer{Command: e.Command, Args: e.Args}, nil
		},
		login:     geminiLogin,
		loginStep: "gemini (then choose Sign in with Google)",
		headless: func(_ Instance, prompt string) []string {
			return []string{"--prompt", prompt, "--allowed-mcp-server-names", MCPServerName}
		},
	}
}

// geminiServer is an mcpServers entry of Gemini CLI's settings.json.
type geminiServer struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Trust   bool     `json:"trust"`
}

// geminiLogin reads security.auth.selectedType from the isolated user settings.
func geminiLogin(_ context.Context, _ *agentCLI, in Instance) error {
	path := filepath.Join(in.DataDir, ".gemini", "settings.json")
	raw, err := readConfig(path)
	if err != nil {
		return fmt.Errorf("the login check: %w", err)
	}
	if raw == nil {
		return ErrLoginRequired
	}
	var s struct {
		Security struct {
			Auth struct {
				SelectedType string `json:"selectedType"`
			} `json:"auth"`
		} `json:"security"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("the login check: %s does not parse: %w", path, err)
	}
	if s.Security.Auth.SelectedType == "" {
		return ErrLoginRequired
	}
	return nil
}
