//go:build unix

package profile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestTheConnectorsJSONFilesAreReadStrictly(t *testing.T) {
	s := newStore(t)
	p := made(t, s, "agent-a")
	cp := NewCheckpoint(StateStarted, testHandle, testBase, "command", "forum")
	if err := p.WriteCheckpoint(cp); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(p.Path(CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.ReadCheckpoint(); err != nil {
		t.Fatal(err)
	}
	for name, raw := range map[string][]byte{
		"an unknown field": bytes.Replace(good, []byte(`"version": 1,`), []byte(`"version": 1, "invitation": "x",`), 1),
		"trailing data":    append(append([]byte{}, good...), []byte(`{"state":"complete"}`)...),
		"trailing garbage": append(append([]byte{}, good...), '}'),
	} {
		if err := os.WriteFile(p.Path(CheckpointFile), raw, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := p.ReadCheckpoint(); err == nil {
			t.Errorf("%s: read", name)
		}
	}
	// identity.json is the SDK's: fields it may add are allowed, more than one value is not.
	bind(t, made(t, s, "agent-b"), testHandle, testBase)
	b, _ := s.Open("agent-b")
	raw, err := os.ReadFile(b.Path(IdentityFile))
	if err != nil {
		t.Fatal(err)
	}
	withField := bytes.Replace(raw, []byte(`{`), []byte(`{"created_by":"sdk",`), 1)
	if err := os.WriteFile(b.Path(IdentityFile), withField, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ReadIdentity(); err != nil {
		t.Fatalf("an identity with a field the SDK added: %v", err)
	}
	if err := os.WriteFile(b.Path(IdentityFile), append(raw, raw...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ReadIdentity(); err == nil {
		t.Fatal("read an identity.json of two values")
	}
}

// The key is checked on the file opened, never on its path before it is opened: a key.pem swapped for
// a symbolic link between a check and the open is never read.
func TestTheKeyIsNeverReadThroughALinkSwappedIn(t *testing.T) {
	s := newStore(t)
	p := made(t, s, "agent-a")
	key, err := p.CreateKey()
	if err != nil {
		t.Fatal(err)
	}
	// Another key, private and of this user: only the link decides that it must not be read.
	other := filepath.Join(t.TempDir(), "other.pem")
	q := &Profile{Name: "other", Dir: filepath.Dir(other)}
	otherKey, err := q.CreateKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(q.Path(KeyFile), other); err != nil {
		t.Fatal(err)
	}
	saved := p.Path("saved.pem")
	if err := os.Link(p.Path(KeyFile), saved); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // key.pem: the key, a link to the other key, the key, ...
		defer wg.Done()
		tmp := p.Path(".swap")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_ = os.Remove(tmp)
			if i%2 == 0 {
				_ = os.Symlink(other, tmp)
			} else {
				_ = os.Link(saved, tmp)
			}
			_ = os.Rename(tmp, p.Path(KeyFile))
		}
	}()
	deadline := time.Now().Add(time.Second)
	reads := 0
	for time.Now().Before(deadline) {
		got, err := p.LoadKey()
		if err == nil {
			reads++
			if got.Equal(otherKey) {
				close(stop)
				wg.Wait()
				t.Fatal("read the key a symbolic link swapped in points to")
			}
			if !got.Equal(key) {
				t.Fatal("read another key")
			}
		}
	}
	close(stop)
	wg.Wait()
	if reads == 0 {
		t.Fatal("the key was never read")
	}
}

func TestAFIFOInPlaceOfAFileNeverBlocks(t *testing.T) {
	s := newStore(t)
	p := made(t, s, "agent-a")
	for _, f := range []string{KeyFile, LockFile} {
		if err := syscall.Mkfifo(p.Path(f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan Inspection, 1)
	go func() {
		_, _ = p.LoadKey()
		_, _ = p.Active()
		done <- s.Inspect("agent-a", testTarget, InspectOptions{})
	}()
	select {
	case got := <-done:
		want(t, got, Refused, ReasonInspectionInconclusive)
	case <-time.After(5 * time.Second):
		t.Fatal("reading the profile blocked on a FIFO")
	}
	if _, err := p.LoadKey(); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a FIFO as key.pem: %v", err)
	}
}

func TestEveryChangeOfTheSettingsIsKept(t *testing.T) {
	s := newStore(t)
	p := made(t, s, "agent-a")
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := p.UpdateConfig(func(c *Config, _ bool) error {
				c.Runtime.LoginStep += "x"
				time.Sleep(time.Millisecond) // a read-modify-write that takes a moment
				return nil
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	c, err := p.ReadConfig()
	if err != nil || c.Runtime.LoginStep != strings.Repeat("x", n) {
		t.Fatalf("settings after %d changes: %+v %v", n, c, err)
	}
	if fi, err := os.Lstat(p.Path(SettingsLockFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("settings.lock: %v %v", fi, err)
	}
	// The settings lock is not the profile's: a runner holding the profile does not stop a change.
	runner, err := p.Lock(0)
	if err != nil {
		t.Fatal(err)
	}
	defer runner.Unlock()
	if _, err := p.UpdateConfig(func(c *Config, found bool) error {
		if !found {
			t.Error("the settings were not found")
		}
		c.Arena.Enabled = false
		return nil
	}); err != nil {
		t.Fatalf("a change while the profile is held: %v", err)
	}
	// A change waits for the one under way, and gives up after SettingsWait.
	held, err := p.LockSettings()
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(300*time.Millisecond, func() { held.Unlock() })
	start := time.Now()
	if _, err := p.UpdateConfig(func(*Config, bool) error { return nil }); err != nil || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("a change while another is under way: %v after %s", err, time.Since(start))
	}
	// A failed change writes nothing.
	before, _ := os.ReadFile(p.Path(ConfigFile))
	if _, err := p.UpdateConfig(func(c *Config, _ bool) error { c.Arena.Enabled = true; return errors.New("no") }); err == nil {
		t.Fatal("a failed change succeeded")
	}
	if after, _ := os.ReadFile(p.Path(ConfigFile)); !bytes.Equal(before, after) {
		t.Fatal("a failed change was written")
	}
}

func TestOnWindowsModeBitsAreNotChecked(t *testing.T) {
	posixModes = false // as on Windows: every file 0666, every directory 0777
	defer func() { posixModes = true }()
	s := newStore(t)
	p := made(t, s, "agent-a")
	bind(t, p, testHandle, testBase)
	for path, mode := range map[string]os.FileMode{s.Root: 0o777, filepath.Join(s.Root, "profiles"): 0o777, p.Dir: 0o777,
		p.Path(KeyFile): 0o666, p.Path(IdentityFile): 0o666, p.Path(CheckpointFile): 0o666} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	want(t, inspect(t, s, "agent-a", testTarget), Adopt, ReasonSameIdentity)
	if _, err := p.LoadKey(); err != nil {
		t.Fatalf("the key: %v", err)
	}
	l, err := p.Lock(0)
	if err != nil {
		t.Fatal(err)
	}
	want(t, inspect(t, s, "agent-a", testTarget), Refused, ReasonProfileActive)
	l.Unlock()
	// A symbolic link is refused on every system.
	if err := os.Rename(p.Path(IdentityFile), p.Path("elsewhere.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(p.Path("elsewhere.json"), p.Path(IdentityFile)); err != nil {
		t.Fatal(err)
	}
	want(t, inspect(t, s, "agent-a", testTarget), Refused, ReasonUnsafePermissions)
}

func TestASettingsLockThatIsALinkIsRefused(t *testing.T) {
	s := newStore(t)
	p := made(t, s, "agent-a")
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p.Path(SettingsLockFile)); err != nil {
		t.Fatal(err)
	}
	want(t, inspect(t, s, "agent-a", testTarget), Refused, ReasonUnsafePermissions)
	var unsafe *ErrUnsafe
	if _, err := p.UpdateConfig(func(*Config, bool) error { return nil }); !errors.As(err, &unsafe) {
		t.Fatalf("a change through a linked settings lock: %v", err)
	}
}
