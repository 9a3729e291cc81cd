package sdk

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// writePEM writes key as a PKCS#8 PEM file with mode perm.
func writePEM(t *testing.T, path string, key ed25519.PrivateKey, perm os.FileMode) {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
}

func testRedemption() *Redemption {
	return &Redemption{AgentID: "0196f3a9-0000-7000-8000-0000000000d1", KeyID: "0196f3a9-0000-7000-8000-0000000000d2",
		OrgID: "0196f3a9-0000-7000-8000-0000000000d3", Handle: "lentil", AgentAPI: map[Channel]string{ChannelEdge: "https://agents.example/agent-api/v1"}}
}

// WriteIdentity never replaces key.pem: the same key again is fine (a connector resuming), another key
// is refused and the file stays as it was, also when identity.json is missing (an interrupted write) or
// key.pem is a symbolic link.
func TestWriteIdentityNeverReplacesAKey(t *testing.T) {
	t.Parallel()
	_, key, _ := generateKey(t)
	_, other, _ := generateKey(t)
	r := testRedemption()
	files := func(t *testing.T, dir string) []string {
		t.Helper()
		entries, _ := os.ReadDir(dir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}

	t.Run("another key for the same identity", func(t *testing.T) {
		dir := t.TempDir()
		if err := WriteIdentity(dir, "https://forum.example", r, key); err != nil {
			t.Fatal(err)
		}
		before, _ := os.ReadFile(filepath.Join(dir, ProfileKeyFile))
		identity, _ := os.ReadFile(filepath.Join(dir, ProfileIdentityFile))
		err := WriteIdentity(dir, "https://forum.example", r, other)
		if err == nil || !strings.Contains(err.Error(), "already holds another key") {
			t.Fatalf("another key: %v", err)
		}
		if after, _ := os.ReadFile(filepath.Join(dir, ProfileKeyFile)); !bytes.Equal(after, before) {
			t.Fatal("key.pem was replaced")
		}
		if after, _ := os.ReadFile(filepath.Join(dir, ProfileIdentityFile)); !bytes.Equal(after, identity) {
			t.Fatal("identity.json was rewritten")
		}
		if err := WriteIdentity(dir, "https://forum.example", r, key); err != nil {
			t.Fatalf("the same key again: %v", err)
		}
		if got := files(t, dir); strings.Join(got, ",") != "identity.json,key.pem" {
			t.Fatalf("the profile holds %v", got)
		}
	})

	t.Run("an interrupted write", func(t *testing.T) {
		dir := t.TempDir()
		writePEM(t, filepath.Join(dir, ProfileKeyFile), key, 0o600)
		if err := WriteIdentity(dir, "https://forum.example", r, other); err == nil {
			t.Fatal("wrote a profile for another key than key.pem's")
		}
		if got := files(t, dir); strings.Join(got, ",") != "key.pem" {
			t.Fatalf("the profile holds %v", got)
		}
		if err := WriteIdentity(dir, "https://forum.example", r, key); err != nil {
			t.Fatal(err)
		}
		id, _, err := LoadIdentity(dir)
		if err != nil || !id.PrivateKey.Equal(key) {
			t.Fatalf("%v %v", id, err)
		}
	})

	if runtime.GOOS != "windows" {
		t.Run("a symbolic link", func(t *testing.T) {
			dir := t.TempDir()
			target := filepath.Join(t.TempDir(), "elsewhere.pem")
			writePEM(t, target, other, 0o600)
			before, _ := os.ReadFile(target)
			if err := os.Symlink(target, filepath.Join(dir, ProfileKeyFile)); err != nil {
				t.Fatal(err)
			}
			if err := WriteIdentity(dir, "https://forum.example", r, key); err == nil {
				t.Fatal("wrote through a symbolic link")
			}
			if after, _ := os.ReadFile(target); !bytes.Equal(after, before) {
				t.Fatal("the link's target was written")
			}
			if fi, err := os.Lstat(filepath.Join(dir, ProfileKeyFile)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("the link was replaced: %v %v", fi, err)
			}
		})
	}
}
