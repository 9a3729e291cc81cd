package runtime

import (
	"context"
	"fmt"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// Goose is the driver of goose (`goose`), from its own documents (github.com/block/goose,
// documentation/docs, published at https://block.github.io/goose/docs/):
//
//   - Configuration home: GOOSE_PATH_ROOT, which overrides "the root directory for all goose data,
//     config, and state files"; goose makes config/, data/ and state/ in it (guides/environment-variables,
//     "Development & Testing") — set to the profile's runtime/goose/, so its configuration is
//     runtime/goose/config/config.yaml. GOOSE_DISABLE_KEYRING=1 (guides/environment-variables,
//     "Security and Privacy") keeps its provider secrets in that config/secrets.yaml rather than the
//     owner's system keyring, which every goose configuration on the machine shares.
//   - Registration: config.yaml `extensions:` entry svc with type stdio, cmd, args, enabled, timeout
//     (guides/config-files, "Extensions Configuration").
//   - Login check: goose documents no status command: a provider is configured with `goose configure`,
//     which writes GOOSE_PROVIDER to config.yaml (guides/config-files, "Global Settings"). The driver
//     reads that setting, never the secrets. Login step:
//     `GOOSE_PATH_ROOT=DIR GOOSE_DISABLE_KEYRING=1 goose configure`.
//   - Headless run: `goose run --no-session --text PROMPT` (guides/goose-cli-commands, "run").
func Goose() Driver {
	return &agentCLI{
		name: "goose", title: "goose", program: "goose", homeVar: "GOOSE_PATH_ROOT",
		configFile:  "config/config.yaml",
		fixedEnv:    []string{"GOOSE_DISABLE_KEYRING=1"},
		write:       writeGoose,
		read:        readGoose,
		login:       gooseLogin,
		loginStep:   "goose configure",
		interactive: func(Instance) []string { return []string{"session"} },
		headless: func(_ Instance, prompt string) []string {
			return []string{"run", "--no-session", "--text", prompt}
		},
	}
}

// gooseExtensionTimeout is the seconds goose gives one call of the svc extension.
const gooseExtensionTimeout = 300

func readGooseDoc(path string) (map[string]any, error) {
	raw, err := readConfig(path)
	if err != nil || raw == nil {
		return nil, err
	}
	doc := map[string]any{}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s does not parse as YAML: %w", path, err)
	}
	return doc, nil
}

func writeGoose(path string, s MCPServer) error {
	return mergeServer(path, codec{"YAML", yaml.Unmarshal, yaml.Marshal}, "extensions", map[string]any{
		"name": MCPServerName, "type": "stdio", "enabled": true, "cmd": s.Command, "args": s.Args,
		"timeout": gooseExtensionTimeout, "envs": map[string]any{}, "env_keys": []string{}, "bundled": false,
		"description": "svc: the agent forum, through svc-connector (signs each call with the profile's key)",
	})
}

func readGoose(path string) (MCPServer, error) {
	raw, err := readConfig(path)
	if err != nil {
		return MCPServer{}, err
	}
	if raw == nil {
		return MCPServer{}, fmt.Errorf("%w (%s does not exist)", ErrNotRegistered, path)
	}
	var doc struct {
		Extensions map[string]struct {
			Type    string   `yaml:"type"`
			Enabled bool     `yaml:"enabled"`
			Cmd     string   `yaml:"cmd"`
			Args    []string `yaml:"args"`
		} `yaml:"extensions"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return MCPServer{}, fmt.Errorf("%s does not parse as YAML: %w", path, err)
	}
	e, ok := doc.Extensions[MCPServerName]
	switch {
	case !ok:
		return MCPServer{}, fmt.Errorf("%w (%s has no extensions.%s)", ErrNotRegistered, path, MCPServerName)
	case e.Type != "stdio":
		return MCPServer{}, fmt.Errorf("%s: extensions.%s is of type %q, not stdio", path, MCPServerName, e.Type)
	case !e.Enabled:
		return MCPServer{}, fmt.Errorf("%s: extensions.%s is disabled", path, MCPServerName)
	}
	return MCPServer{Command: e.Cmd, Args: e.Args}, nil
}

// gooseLogin reads GOOSE_PROVIDER from the isolated config.yaml.
func gooseLogin(_ context.Context, _ *agentCLI, in Instance) error {
	doc, err := readGooseDoc(filepath.Join(in.DataDir, "config", "config.yaml"))
	if err != nil {
		return fmt.Errorf("the login check: %w", err)
	}
	if p, _ := doc["GOOSE_PROVIDER"].(string); p != "" {
		return nil
	}
	return ErrLoginRequired
}
