package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// readConfig reads a runtime's configuration file; (nil, nil) when it does not exist. A symbolic link
// or anything but a regular file is refused: the runtime's configuration stays inside the profile.
func readConfig(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file (a symbolic link is not followed)", path)
	}
	return os.ReadFile(path)
}

// writeConfig replaces a runtime's configuration file with data, 0600, through a temporary file in the
// same directory renamed over it: a reader never sees half a file.
func writeConfig(path string, data []byte) error {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (a symbolic link is not followed)", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// codec is a configuration format: its name, for messages, and a real parser's two halves.
type codec struct {
	name      string
	unmarshal func([]byte, any) error
	marshal   func(any) ([]byte, error)
}

// mergeServer puts entry as <section>.svc of the document in path, written in format c, keeping every
// other setting and every other server (a format whose encoder drops comments loses them). A section
// that is not a table of servers is refused, and the file left as it is.
func mergeServer(path string, c codec, section string, entry map[string]any) error {
	raw, err := readConfig(path)
	if err != nil {
		return err
	}
	doc := map[string]any{}
	if len(raw) > 0 {
		if err := c.unmarshal(raw, &doc); err != nil {
			return fmt.Errorf("%s does not parse as %s: %w", path, c.name, err)
		}
		if doc == nil { // an empty YAML document
			doc = map[string]any{}
		}
	}
	servers, ok := doc[section].(map[string]any)
	if !ok {
		if v, there := doc[section]; there && v != nil {
			return fmt.Errorf("%s: %s is not a table of servers", path, section)
		}
		servers = map[string]any{}
	}
	servers[MCPServerName] = entry
	doc[section] = servers
	out, err := c.marshal(doc)
	if err != nil {
		return err
	}
	return writeConfig(path, out)
}

// mergeJSONServer puts entry as mcpServers.svc of the JSON object in path, keeping every other member
// (and every other server) as it is.
func mergeJSONServer(path string, entry any) error {
	raw, err := readConfig(path)
	if err != nil {
		return err
	}
	doc := map[string]json.RawMessage{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &doc); err != nil {
			return fmt.Errorf("%s is not a JSON object: %w", path, err)
		}
	}
	servers := map[string]json.RawMessage{}
	if s, ok := doc["mcpServers"]; ok && string(s) != "null" {
		if err := json.Unmarshal(s, &servers); err != nil {
			return fmt.Errorf("%s: mcpServers is not an object: %w", path, err)
		}
	}
	e, err := json.Marshal(entry)
	if err != nil {
		return err
	}
	servers[MCPServerName] = e
	if doc["mcpServers"], err = json.Marshal(servers); err != nil {
		return err
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return writeConfig(path, append(out, '\n'))
}

// jsonServer is an mcpServers entry of Claude Code's and Gemini CLI's formats.
type jsonServer struct {
	Type    string   `json:"type,omitempty"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

// readJSONServer reads mcpServers.svc of the JSON object in path.
func readJSONServer(path string) (jsonServer, error) {
	raw, err := readConfig(path)
	if err != nil {
		return jsonServer{}, err
	}
	if raw == nil {
		return jsonServer{}, fmt.Errorf("%w (%s does not exist)", ErrNotRegistered, path)
	}
	var doc struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return jsonServer{}, fmt.Errorf("%s does not parse: %w", path, err)
	}
	e, ok := doc.MCPServers[MCPServerName]
	if !ok {
		return jsonServer{}, fmt.Errorf("%w (%s has no mcpServers.%s)", ErrNotRegistered, path, MCPServerName)
	}
	var s jsonServer
	if err := json.Unmarshal(e, &s); err != nil {
		return jsonServer{}, fmt.Errorf("%s: mcpServers.%s does not parse: %w", path, MCPServerName, err)
	}
	return s, nil
}
