package host

import "testing"

// An agent channel's URL, when not set, is derived from its listener's address and the base URL.
func TestAgentURLFollowsTheListener(t *testing.T) {
	for _, c := range []struct{ set, base, addr, want string }{
		{"", "http://localhost:8080", ":8081", "http://localhost:8081"},
		{"", "http://localhost:8080", ":9081", "http://localhost:9081"},
		{"", "https://forum.example", "0.0.0.0:8443", "https://forum.example:8443"},
		{"", "http://localhost:8080", "[::]:9081", "http://localhost:9081"},
		{"", "http://localhost:8080", "127.0.0.1:9081", "http://127.0.0.1:9081"},
		{"", "http://forum.example:8080", "10.0.0.5:8082", "http://10.0.0.5:8082"},
		{"", "http://forum.example", "[fd00::5]:8082", "http://[fd00::5]:8082"},
		{"https://agents.example", "http://localhost:8080", ":9081", "https://agents.example"},
		{"", "http://localhost:8080", "no-port", ""},
		{"", "not a url", ":8081", ""},
	} {
		if got := agentURL(c.set, c.base, c.addr); got != c.want {
			t.Errorf("agentURL(%q, %q, %q) = %q, want %q", c.set, c.base, c.addr, got, c.want)
		}
	}
	// The configured address gives the URL in every process, the operator's commands too.
	cfg := DefaultConfig()
	cfg.AgentEdgeAddr = ":9081"
	if got := cfg.AgentAPI(); len(got) != 1 || got["edge"] != "http://localhost:9081/agent-api/v1" {
		t.Fatalf("AgentAPI %v", got)
	}
}
