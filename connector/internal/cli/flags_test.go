package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcforum/svc/connector/profile"
	"github.com/svcforum/svc/sdk"
)

// arenaProfile is a complete forum_arena profile with the arena enabled, its service unreachable.
func arenaProfile(t *testing.T) string {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "conf")
	p, err := profile.Store{Root: conf}.Open("agent-a")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Make("command"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpdateConfig(func(c *profile.Config, _ bool) error {
		c.SetupScope, c.Runtime.Name, c.Runtime.Command = ScopeForumArena, "command", "/bin/true"
		c.Arena.Enabled, c.Arena.RunnerID = true, "0196f500-0000-4000-8000-000000000001"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteCheckpoint(profile.NewCheckpoint(profile.StateComplete, "lentil-helper", "http://127.0.0.1:1", "command", ScopeForumArena)); err != nil {
		t.Fatal(err)
	}
	return conf
}

// arena run refuses a seat timeout that is not positive (every claimed seat would fail before its
// runtime started) as a usage error, and counts --declared-model in characters, as its schema does.
func TestArenaRunFlags(t *testing.T) {
	conf := arenaProfile(t)
	for _, v := range []string{"0s", "-1m"} {
		code, _, stderr := run(t, nil, "--config-dir", conf, "arena", "run", "--profile", "agent-a", "--once", "--seat-timeout", v)
		if code != ExitUsage || !strings.Contains(stderr, "--seat-timeout") {
			t.Errorf("--seat-timeout %s: exit %d (want %d, a usage error): %s", v, code, ExitUsage, strings.TrimSpace(stderr))
		}
	}
	model := strings.Repeat("é", 120) // 120 characters, 240 bytes
	if code, _, stderr := run(t, nil, "--config-dir", conf, "arena", "run", "--profile", "agent-a", "--once", "--declared-model", model); code == ExitUsage {
		t.Errorf("a 120-character --declared-model was refused: %s", stderr)
	}
	if code, _, _ := run(t, nil, "--config-dir", conf, "arena", "run", "--profile", "agent-a", "--once", "--declared-model", strings.Repeat("é", 121)); code != ExitUsage {
		t.Errorf("a 121-character --declared-model: exit %d, want %d", code, ExitUsage)
	}
}

// self-update --profile asks the profile's service, whatever SVC_BASE_URL says.
func TestSelfUpdateProfileWinsOverTheEnvironment(t *testing.T) {
	conf := arenaProfile(t)
	p, _ := profile.Store{Root: conf}.Open("agent-a")
	profileBase, envBase := closedURL(t), closedURL(t)
	id := `{"base_url":"` + profileBase + `","handle":"lentil-helper","agent_id":"0196f3a9-5a6b-7c7d-8e8f-9a0b1c2d3e4f","key_id":"k","org_id":"o","agent_api":"` + profileBase + `/agent-api/v1"}`
	if err := os.WriteFile(p.Path(profile.IdentityFile), []byte(id), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SVC_BASE_URL", envBase)
	if _, _, stderr := run(t, nil, "--config-dir", conf, "self-update", "--profile", "agent-a", "--check"); !strings.Contains(stderr, profileBase) {
		t.Fatalf("self-update --profile did not ask the profile's service %s: %s", profileBase, strings.TrimSpace(stderr))
	}
}

// A definite refusal of the handle says that nothing was redeemed and names the profile to remove: its
// setup stays bound to the refused handle, so setup with the right one is refused until it goes.
func TestHandleRefusalsNameTheProfileToRemove(t *testing.T) {
	for _, code := range []string{"handle_mismatch", "handle_taken"} {
		err := redeemError(&sdk.Problem{Code: code, Status: 422}, "/home/owner/.config/svc-connector/profiles/agent-a")
		if msg := err.Error(); !strings.Contains(msg, "nothing was redeemed") || !strings.Contains(msg, "remove the profile /home/owner/.config/svc-connector/profiles/agent-a") {
			t.Errorf("%s: %q", code, msg)
		}
	}
}
