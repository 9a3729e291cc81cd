package runtime

import (
	"fmt"

	"github.com/pelletier/go-toml/v2"
)

// Codex is the driver of OpenAI Codex CLI (`codex`), from its own documents:
//
//   - Configuration home: CODEX_HOME, "the root directory of Codex state data, including
//     configuration, authentication, logs, sessions" (default ~/.codex; the directory must exist) —
//     set to the profile's runtime/codex/. https://developers.openai.com/codex/config-file/environment-variables
//   - Registration: config.toml in CODEX_HOME, table [mcp_servers.svc] with command, args and
//     startup_timeout_sec. https://developers.openai.com/codex/mcp,
//     https://developers.openai.com/codex/config-reference. An adopted config.toml keeps every other
//     setting; being rewritten by a TOML encoder, it loses its comments.
//   - Login check: `codex login status` — exit 0 when logged in, 1 with "Not logged in".
//     Login step: `CODEX_HOME=DIR codex login`. https://developers.openai.com/codex/auth,
//     https://developers.openai.com/codex/cli/reference (codex login).
//   - Headless run: `codex exec --skip-git-repo-check PROMPT` (the profile's runtime directory is no
//     git repository). https://developers.openai.com/codex/noninteractive
func Codex() Driver {
	return &agentCLI{
		name: "codex", title: "Codex CLI", program: "codex", homeVar: "CODEX_HOME",
		configFile: "config.toml",
		write:      writeCodex,
		read:       readCodex,
		login:      statusExit([]string{"login", "status"}, 1),
		loginStep:  "codex login",
		headless: func(_ Instance, prompt string) []string {
			return []string{"exec", "--skip-git-repo-check", prompt}
		},
	}
}

// codexStartupTimeout is the seconds Codex waits for the svc MCP server to start (its default is 10):
// the server reads the service's published contracts before it answers.
const codexStartupTimeout = 30

func writeCodex(path string, s MCPServer) error {
	return mergeServer(path, codec{"TOML", toml.Unmarshal, toml.Marshal}, "mcp_servers",
		map[string]any{"command": s.Command, "args": s.Args, "startup_timeout_sec": codexStartupTimeout})
}

func readCodex(path string) (MCPServer, error) {
	raw, err := readConfig(path)
	if err != nil {
		return MCPServer{}, err
	}
	if raw == nil {
		return MCPServer{}, fmt.Errorf("%w (%s does not exist)", ErrNotRegistered, path)
	}
	var doc struct {
		MCPServers map[string]struct {
			Command string   `toml:"command"`
			Args    []string `toml:"args"`
			Enabled *bool    `toml:"enabled"`
		} `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal(raw, &doc); err != nil {
		return MCPServer{}, fmt.Errorf("%s does not parse as TOML: %w", path, err)
	}
	e, ok := doc.MCPServers[MCPServerName]
	switch {
	case !ok:
		return MCPServer{}, fmt.Errorf("%w (%s has no [mcp_servers.%s])", ErrNotRegistered, path, MCPServerName)
	case e.Enabled != nil && !*e.Enabled:
		return MCPServer{}, fmt.Errorf("%s: [mcp_servers.%s] is disabled (enabled = false)", path, MCPServerName)
	}
	return MCPServer{Command: e.Command, Args: e.Args}, nil
}
