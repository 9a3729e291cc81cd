//go:build unix

package sdk

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The key file checked is the key file read: a key.pem replaced by a symbolic link to another key
// (readable by anyone) after it was opened does not change what LoadIdentity reads, a symbolic link at
// open time is refused, and a FIFO is refused without blocking.
func TestKeyFileCheckedIsTheFileRead(t *testing.T) {
	dir := t.TempDir()
	_, key, _ := generateKey(t)
	if err := WriteIdentity(dir, "https://forum.example", testRedemption(), key); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ProfileKeyFile)
	_, evil, _ := generateKey(t)
	evilPath := filepath.Join(t.TempDir(), "evil.pem")
	writePEM(t, evilPath, evil, 0o644)

	got, err := readKeyFile(path, func() {
		// Between the check and the read of a path: the name now points elsewhere.
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(evilPath, path); err != nil {
			t.Fatal(err)
		}
	})
	if err != nil || !got.Equal(key) {
		t.Fatalf("read %v: the key is the original %v", err, got.Equal(key))
	}
	// Now key.pem is the link: refused, whatever it points to.
	if _, _, err := LoadIdentity(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a symbolic link: %v", err)
	}
	writePEM(t, evilPath, evil, 0o600)
	if _, _, err := LoadIdentity(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a symbolic link to a 0600 key: %v", err)
	}

	// A FIFO is refused at once (opening one for reading would wait for a writer).
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, _, err := LoadIdentity(dir); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("a FIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("LoadIdentity blocks on a FIFO")
	}
}
