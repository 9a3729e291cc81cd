package profile

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	testBase   = "http://forum.test"
	testHandle = "lentil-helper"
)

var testTarget = Target{Handle: testHandle, BaseURL: testBase, Runtime: "command"}

// newStore is a configuration directory in a fresh temporary directory (0700, as the connector
// makes it).
func newStore(t *testing.T) Store {
	t.Helper()
	root := filepath.Join(t.TempDir(), "svc-connector")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	return Store{Root: root}
}

// made is profile name made as setup makes it, with runtime data in it.
func made(t *testing.T, s Store, name string) *Profile {
	t.Helper()
	p, err := s.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Make("command"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.RuntimeData("command"), "session.db"), []byte("runtime-owned"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// bind gives p an identity of handle at base, with its key, as a finished setup leaves it.
func bind(t *testing.T, p *Profile, handle, base string) {
	t.Helper()
	key, err := p.CreateKey()
	if err != nil {
		t.Fatal(err)
	}
	id := Identity{BaseURL: base, Handle: handle, AgentID: "0196f3f0-1a2b-7c3d-8e4f-5a6b7c8d9e0f", KeyID: "0196f3f0-1a2b-7c3d-8e4f-5a6b7c8d9e10",
		OrgID: "0196f3f0-1a2b-7c3d-8e4f-5a6b7c8d9e11", AgentAPI: "http://agents.test/agent-api/v1"}
	if err := writeJSON(p.Path(IdentityFile), id); err != nil {
		t.Fatal(err)
	}
	cp := NewCheckpoint(StateComplete, handle, base, "command", "forum")
	cp.PublicKey, cp.AgentID = PublicKey(key), id.AgentID
	if err := p.WriteCheckpoint(cp); err != nil {
		t.Fatal(err)
	}
}

// interrupt leaves p as a setup interrupted right after it sent the redemption.
func interrupt(t *testing.T, p *Profile, rt string) *Checkpoint {
	t.Helper()
	cp := NewCheckpoint(StateStarted, testHandle, testBase, rt, "forum")
	if err := p.WriteCheckpoint(cp); err != nil {
		t.Fatal(err)
	}
	key, err := p.CreateKey()
	if err != nil {
		t.Fatal(err)
	}
	cp.PublicKey = PublicKey(key)
	for _, s := range []State{StateKeyMade, StateRedemptionSent} {
		if err := p.Advance(cp, s); err != nil {
			t.Fatal(err)
		}
	}
	return cp
}

// snapshot lists every path under root with its mode, size and modification time.
func snapshot(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, strings.Join([]string{path, fi.Mode().String(), fi.ModTime().String(), string(rune(fi.Size()))}, " "))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func inspect(t *testing.T, s Store, name string, target Target) Inspection {
	t.Helper()
	before := snapshot(t, filepath.Dir(s.Root))
	got := s.Inspect(name, target, InspectOptions{})
	if after := snapshot(t, filepath.Dir(s.Root)); !slices.Equal(before, after) {
		t.Fatalf("inspecting changed the disk:\nbefore %v\nafter  %v", before, after)
	}
	return got
}

func want(t *testing.T, got Inspection, d Disposition, reasons ...string) {
	t.Helper()
	if got.Disposition != d || !slices.Equal(got.Reasons, reasons) {
		t.Fatalf("got %s %v (%v), want %s %v", got.Disposition, got.Reasons, got.Findings, d, reasons)
	}
}

func TestDispositionsOfRealProfiles(t *testing.T) {
	t.Run("create: absent, even without a configuration directory", func(t *testing.T) {
		s := Store{Root: filepath.Join(t.TempDir(), "nothing-here")}
		want(t, inspect(t, s, "agent-a", testTarget), Create, ReasonProfileAbsent)
		if _, err := os.Stat(s.Root); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("inspection made the configuration directory: %v", err)
		}
	})
	t.Run("adopt: an unbound profile, runtime data kept", func(t *testing.T) {
		s := newStore(t)
		made(t, s, "agent-a")
		want(t, inspect(t, s, "agent-a", testTarget), Adopt, ReasonProfileUnbound)
	})
	t.Run("adopt: bound to this same handle and service", func(t *testing.T) {
		s := newStore(t)
		bind(t, made(t, s, "agent-a"), testHandle, testBase)
		got := inspect(t, s, "agent-a", testTarget)
		want(t, got, Adopt, ReasonSameIdentity)
		if got.Identity == nil || got.Identity.Handle != testHandle {
			t.Fatalf("identity %+v", got.Identity)
		}
	})
	t.Run("resume: an interrupted setup of this handle", func(t *testing.T) {
		s := newStore(t)
		cp := interrupt(t, made(t, s, "agent-a"), "command")
		got := inspect(t, s, "agent-a", testTarget)
		want(t, got, Resume, ReasonCheckpoint+string(StateRedemptionSent))
		if got.Checkpoint == nil || got.Checkpoint.IdempotencyKey != cp.IdempotencyKey {
			t.Fatalf("checkpoint %+v", got.Checkpoint)
		}
	})
	t.Run("refused: bound to another handle", func(t *testing.T) {
		s := newStore(t)
		bind(t, made(t, s, "agent-a"), "another-agent", testBase)
		want(t, inspect(t, s, "agent-a", testTarget), Refused, ReasonIdentityConflict)
	})
	t.Run("refused: bound to the same handle of another service", func(t *testing.T) {
		s := newStore(t)
		bind(t, made(t, s, "agent-a"), testHandle, "https://other.test")
		want(t, inspect(t, s, "agent-a", testTarget), Refused, ReasonIdentityConflict)
	})
	t.Run("refused: an interrupted setup of another handle", func(t *testing.T) {
		s := newStore(t)
		interrupt(t, made(t, s, "agent-a"), "command")
		other := testTarget
		other.Handle = "someone-else"
		want(t, inspect(t, s, "agent-a", other), Refused, ReasonIdentityConflict)
	})
	t.Run("refused: an interrupted setup of another runtime", func(t *testing.T) {
		s := newStore(t)
		interrupt(t, made(t, s, "agent-a"), "other-runtime")
		want(t, inspect(t, s, "agent-a", testTarget), Refused, ReasonCheckpointConflict)
	})
	t.Run("refused: active (a running connector holds it)", func(t *testing.T) {
		s := newStore(t)
		p := made(t, s, "agent-a")
		l, err := p.Lock(0)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock()
		want(t, inspect(t, s, "agent-a", testTarget), Refused, ReasonProfileActive)
		want(t, s.Inspect("agent-a", testTarget, InspectOptions{Held: true}), Adopt, ReasonProfileUnbound)
	})
	t.Run("refused: a profile directory others may read", func(t *testing.T) {
		s := newStore(t)
		p := made(t, s, "agent-a")
		if err := os.Chmod(p.Dir, 0o755); err != nil {
			t.Fatal(err)
		}
		want(t, inspect(t, s, "agent-a", testTarget), Refused, ReasonUnsafePermissions)
	})
	t.Run("refused: a key file others may read", func(t *testing.T) {
		s := newStore(t)
		p := made(t, s, "agent-a")
		bind(t, p, testHandle, testBase)
		if err := os.Chmod(p.Path(KeyFile), 0o644); err != nil {
			t.Fatal(err)
		}
		want(t, inspect(t, s, "agent-a", testTarget), Refused, ReasonUnsafePermissions)
	})
	t.Run("refused: a configuration directory others may change", func(t *testing.T) {
		s := newStore(t)
		made(t, s, "agent-a")
		if err := os.Chmod(s.Root, 0o777); err != nil {
			t.Fatal(err)
		}
		want(t, inspect(t, s, "agent-a", testTarget), Refused, ReasonUnsafePermissions)
	})
	t.Run("refused: the profile is a symbolic link", func(t *testing.T) {
		s := newStore(t)
		p := made(t, s, "agent-a")
		if err := os.Symlink(p.Dir, filepath.Join(s.Root, "profiles", "agent-b")); err != nil {
			t.Fatal(err)
		}
		want(t, inspect(t, s, "agent-b", testTarget), Refused, ReasonUnsafePermissions)
	})
	t.Run("refused: identity.json is a symbolic link", func(t *testing.T) {
		s := newStore(t)
		p := made(t, s, "agent-a")
		bind(t, p, testHandle, testBase)
		if err := os.Rename(p.Path(IdentityFile), p.Path("elsewhere.json")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p.Path("elsewhere.json"), p.Path(IdentityFile)); err != nil {
			t.Fatal(err)
		}
		want(t, inspect(t, s, "agent-a", testTarget), Refused, ReasonUnsafePermissions)
	})
	t.Run("refused: an identity that does not parse", func(t *testing.T) {
		s := newStore(t)
		p := made(t, s, "agent-a")
		if err := os.WriteFile(p.Path(IdentityFile), []byte("{not json"), 0o600); err != nil {
			t.Fatal(err)
		}
		want(t, inspect(t, s, "agent-a", testTarget), Refused, ReasonInspectionInconclusive)
	})
	t.Run("refused: a key of no identity and no setup", func(t *testing.T) {
		s := newStore(t)
		p := made(t, s, "agent-a")
		if _, err := p.CreateKey(); err != nil {
			t.Fatal(err)
		}
		want(t, inspect(t, s, "agent-a", testTarget), Refused, ReasonInspectionInconclusive)
	})
	t.Run("refused: an identity without its key", func(t *testing.T) {
		s := newStore(t)
		p := made(t, s, "agent-a")
		bind(t, p, testHandle, testBase)
		if err := os.Remove(p.Path(KeyFile)); err != nil {
			t.Fatal(err)
		}
		want(t, inspect(t, s, "agent-a", testTarget), Refused, ReasonInspectionInconclusive)
	})
	t.Run("refused: a checkpoint whose key is not the profile's", func(t *testing.T) {
		s := newStore(t)
		p := made(t, s, "agent-a")
		interrupt(t, p, "command")
		if err := os.Remove(p.Path(KeyFile)); err != nil {
			t.Fatal(err)
		}
		if _, err := p.CreateKey(); err != nil {
			t.Fatal(err)
		}
		want(t, inspect(t, s, "agent-a", testTarget), Refused, ReasonInspectionInconclusive)
	})
	t.Run("refused: the profile is a file", func(t *testing.T) {
		s := newStore(t)
		if err := os.MkdirAll(filepath.Join(s.Root, "profiles"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(s.Root, "profiles", "agent-a"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		want(t, inspect(t, s, "agent-a", testTarget), Refused, ReasonInspectionInconclusive)
	})
	t.Run("refused: every reason found, sorted", func(t *testing.T) {
		s := newStore(t)
		p := made(t, s, "agent-a")
		bind(t, p, "another-agent", testBase)
		if err := os.Chmod(p.Path(IdentityFile), 0o640); err != nil {
			t.Fatal(err)
		}
		l, err := p.Lock(0)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock()
		want(t, inspect(t, s, "agent-a", testTarget), Refused, ReasonIdentityConflict, ReasonProfileActive, ReasonUnsafePermissions)
	})
	t.Run("refused: a name that is not one path segment", func(t *testing.T) {
		s := newStore(t)
		for _, name := range []string{"", "..", "a/b", "../x", ".hidden", strings.Repeat("a", 65)} {
			want(t, inspect(t, s, name, testTarget), Refused, ReasonInvalidProfileName)
		}
	})
}

func TestMakeKeepsRuntimeDataAndIsPrivate(t *testing.T) {
	s := Store{Root: filepath.Join(t.TempDir(), "conf", "svc-connector")}
	p := made(t, s, "agent-a")
	if err := p.Make("command"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(p.RuntimeData("command"), "session.db")); err != nil || string(b) != "runtime-owned" {
		t.Fatalf("runtime data after Make again: %q %v", b, err)
	}
	for _, d := range []string{s.Root, filepath.Join(s.Root, "profiles"), p.Dir, p.RuntimeData("command")} {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v", d, fi.Mode(), err)
		}
	}
}

func TestLock(t *testing.T) {
	s := newStore(t)
	p := made(t, s, "agent-a")
	if active, err := p.Active(); err != nil || active {
		t.Fatalf("a profile nobody holds: active %v, %v", active, err)
	}
	if _, err := os.Stat(p.Path(LockFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Active made the lock file: %v", err)
	}
	l, err := p.Lock(0)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p.Path(LockFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("lock file: %v %v", fi, err)
	}
	if active, err := p.Active(); err != nil || !active {
		t.Fatalf("a held profile: active %v, %v", active, err)
	}
	start := time.Now()
	if _, err := p.Lock(200 * time.Millisecond); !errors.Is(err, ErrActive) || time.Since(start) < 200*time.Millisecond {
		t.Fatalf("a second lock: %v after %s", err, time.Since(start))
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if active, err := p.Active(); err != nil || active {
		t.Fatalf("after unlock: active %v, %v", active, err)
	}
	l2, err := p.Lock(0)
	if err != nil {
		t.Fatalf("lock again: %v", err)
	}
	_ = l2.Unlock()
}

func TestCheckpointMovesForwardOneStateAtATime(t *testing.T) {
	s := newStore(t)
	p := made(t, s, "agent-a")
	if _, err := p.ReadCheckpoint(); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("no checkpoint: %v", err)
	}
	cp := NewCheckpoint(StateStarted, testHandle, testBase, "command", "forum")
	if err := p.WriteCheckpoint(cp); err != nil {
		t.Fatal(err)
	}
	if err := p.Advance(cp, StateRedemptionSent); err == nil {
		t.Fatal("skipped key_made")
	}
	for _, st := range States[1:] {
		if err := p.Advance(cp, st); err != nil {
			t.Fatalf("to %s: %v", st, err)
		}
		if err := p.Advance(cp, st); err != nil {
			t.Fatalf("staying in %s: %v", st, err)
		}
		got, err := p.ReadCheckpoint()
		if err != nil || got.State != st || got.IdempotencyKey != cp.IdempotencyKey {
			t.Fatalf("read back: %+v %v", got, err)
		}
	}
	if err := p.Advance(cp, StateRedeemed); err == nil || cp.State != StateComplete {
		t.Fatalf("moved back: %v, state %s", err, cp.State)
	}
	fi, err := os.Stat(p.Path(CheckpointFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("checkpoint file: %v %v", fi, err)
	}
	raw, _ := os.ReadFile(p.Path(CheckpointFile))
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"invitation", "private_key", "key"} {
		if _, ok := m[k]; ok {
			t.Fatalf("the checkpoint holds %q: %s", k, raw)
		}
	}
	if err := os.WriteFile(p.Path(CheckpointFile), []byte(`{"version":1,"state":"teleported","handle":"x","base_url":"y","idempotency_key":"z"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ReadCheckpoint(); err == nil {
		t.Fatal("read a checkpoint in an unknown state")
	}
}

func TestKeyIsMadeOncePrivateAndNeverReplaced(t *testing.T) {
	s := newStore(t)
	p := made(t, s, "agent-a")
	key, err := p.CreateKey()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p.Path(KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	if _, err := p.CreateKey(); !errors.Is(err, ErrKeyExists) {
		t.Fatalf("a second key: %v", err)
	}
	got, err := p.LoadKey()
	if err != nil || !got.Equal(key) {
		t.Fatalf("the key read back differs: %v", err)
	}
	entries, _ := os.ReadDir(p.Dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".key") {
			t.Fatalf("a temporary key file is left: %s", e.Name())
		}
	}
	if err := os.Chmod(p.Path(KeyFile), 0o640); err != nil {
		t.Fatal(err)
	}
	var unsafe *ErrUnsafe
	if _, err := p.LoadKey(); !errors.As(err, &unsafe) {
		t.Fatalf("a key others may read: %v", err)
	}
}
