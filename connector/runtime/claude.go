package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// ClaudeCode is the driver of Claude Code (`claude`), from its own documents:
//
//   - Configuration home: CLAUDE_CONFIG_DIR relocates Claude Code's whole configuration directory
//     (settings, sessions, and its .claude.json) — set to the profile's runtime/claude-code/.
//     https://code.claude.com/docs/en/settings (environment variables); CHANGELOG "Respect
//     CLAUDE_CONFIG_DIR everywhere" (github.com/anthropics/claude-code CHANGELOG.md).
//   - Registration: an MCP configuration file in the `.mcp.json` format,
//     {"mcpServers":{"svc":{"type":"stdio","command":...,"args":[...]}}}, kept in the configuration
//     home as mcp.json and passed to each run with `--mcp-config FILE --strict-mcp-config` (only the
//     servers of that file). https://code.claude.com/docs/en/mcp (project scope / .mcp.json format),
//     https://code.claude.com/docs/en/cli-reference (--mcp-config, --strict-mcp-config).
//   - Login check: `claude auth status` (JSON: "loggedIn"; exit 0 when logged in), added with
//     `claude auth login` in 2.1 (CHANGELOG "Added claude auth login, claude auth status, and claude
//     auth logout CLI subcommands"). Login step: `CLAUDE_CONFIG_DIR=DIR claude auth login`.
//   - Headless run: `claude --print PROMPT` (https://code.claude.com/docs/en/headless), with
//     `--tools ""` (no built-in tool at all: no Read or Bash that could reach the profile's key;
//     cli-reference, --tools) and `--allowedTools mcp__svc`: the svc server's tools run without a
//     permission prompt (print mode cannot ask). --allowedTools alone adds to the read-only built-ins
//     rather than replacing them (github.com/anthropics/claude-code issue 62608).
func ClaudeCode() Driver {
	return &agentCLI{
		name: "claude-code", title: "Claude Code", program: "claude", homeVar: "CLAUDE_CONFIG_DIR",
		configFile: "mcp.json",
		write: func(path string, s MCPServer) error {
			return mergeJSONServer(path, jsonServer{Type: "stdio", Command: s.Command, Args: s.Args})
		},
		read: func(path string) (MCPServer, error) {
			e, err := readJSONServer(path)
			if err != nil {
				return MCPServer{}, err
			}
			if e.Type != "stdio" && e.Type != "" {
				return MCPServer{}, fmt.Errorf("%s: mcpServers.%s is of type %q, not stdio", path, MCPServerName, e.Type)
			}
			return MCPServer{Command: e.Command, Args: e.Args}, nil
		},
		// Interactively, the registration is loaded the same way as in a headless run.
		interactive: func(in Instance) []string {
			return []string{"--mcp-config", filepath.Join(in.DataDir, "mcp.json")}
		},
		login:     claudeLogin,
		loginStep: "claude auth login",
		headless: func(in Instance, prompt string) []string {
			// --mcp-config and --allowedTools take several values: each is followed by another flag, and
			// the prompt comes last, after --print.
			return []string{"--strict-mcp-config", "--mcp-config", filepath.Join(in.DataDir, "mcp.json"), "--tools", "", "--allowedTools", "mcp__" + MCPServerName, "--print", prompt}
		},
	}
}

// claudeLogin runs `claude auth status`: logged in when it exits 0 and does not say "loggedIn": false;
// a missing login exits non-zero with "loggedIn": false. Its output (which names the account) is only
// parsed, never logged.
func claudeLogin(ctx context.Context, d *agentCLI, in Instance) error {
	var out bytes.Buffer
	argv := []string{in.Settings.Command, "auth", "status"}
	code, err := runCheck(ctx, in, "login-status.log", argv, d.Environ(in), &limited{w: &out, n: 64 << 10})
	if err != nil {
		return fmt.Errorf("the login check: %w", err)
	}
	var status struct {
		LoggedIn *bool `json:"loggedIn"`
	}
	parsed := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &status) == nil && status.LoggedIn != nil
	switch {
	case parsed && !*status.LoggedIn:
		return ErrLoginRequired
	case code == 0:
		return nil
	case strings.Contains(strings.ToLower(out.String()), "not logged in"):
		return ErrLoginRequired
	}
	return fmt.Errorf("the login check (%s) failed: exit status %d", checkName(argv), code)
}
