//go:build unix

package prompt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// readUntil reads the pty's output until it holds want.
func readUntil(t *testing.T, r io.Reader, out *bytes.Buffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	buf := make([]byte, 256)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("%q never came; the terminal shows %q", want, out.String())
		}
		n, err := r.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			if strings.Contains(out.String(), want) {
				return
			}
			t.Fatalf("reading the terminal: %v; it shows %q", err, out.String())
		}
	}
}

func TestTheInvitationTypedIntoATerminalIsNotEchoed(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PROMPT_TEST_CHILD=1")
	tty, err := pty.Start(cmd) // the child's stdin, stdout, stderr and controlling terminal
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var out bytes.Buffer
	// Typed the moment the prompt begins to show, as a hurried person (or a script) does.
	readUntil(t, tty, &out, "Invitation")
	if _, err := tty.Write([]byte(secret + "\r")); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(secret))
	readUntil(t, tty, &out, "read sha256="+hex.EncodeToString(sum[:]))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the reader: %v; the terminal shows %q", err, out.String())
	}
	if strings.Contains(out.String(), secret) || strings.Contains(out.String(), secret[7:]) {
		t.Fatalf("the terminal echoed the invitation: %q", out.String())
	}
}

// pipeFD is a file descriptor of its own (a dup) whose one line is text.
func pipeFD(t *testing.T, text string) int {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	io.WriteString(w, text)
	w.Close()
	fd, err := syscall.Dup(int(r.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

func TestTheInvitationFromANamedDescriptor(t *testing.T) {
	got, err := Invitation(Input{FD: pipeFD(t, secret+"\n"), Stdin: nil})
	if err != nil || got != secret {
		t.Fatalf("got %q, %v", got, err)
	}
	got, err = Invitation(Input{FD: pipeFD(t, secret)})
	if err != nil || got != secret {
		t.Fatalf("without a newline: %q, %v", got, err)
	}
	if _, err := Invitation(Input{FD: pipeFD(t, "")}); err == nil {
		t.Fatal("an empty descriptor gave an invitation")
	}
	for _, fd := range []int{1, 2} {
		if _, err := Invitation(Input{FD: fd}); err == nil {
			t.Fatalf("fd %d accepted", fd)
		}
	}
}

func TestSomethingElseIsRefusedWithoutBeingRepeated(t *testing.T) {
	for _, typed := range []string{"hunter2", "svcinv_short", secret + "x", "https://forum.test/onboarding/status/abc"} {
		_, err := Invitation(Input{FD: pipeFD(t, typed+"\n")})
		if !errors.Is(err, ErrNotInvitation) || strings.Contains(err.Error(), typed) {
			t.Fatalf("%q: %v", typed, err)
		}
	}
}

// fileFD is a descriptor of its own (a dup) of the open file f.
func fileFD(t *testing.T, f *os.File) int {
	t.Helper()
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

func TestTheInvitationIsNeverReadFromAFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "invitation.txt")
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file, err := os.Open(path) // as `3< invitation.txt` hands it over
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	folder, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer folder.Close()
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	for name, c := range map[string]struct {
		f    *os.File
		want string
	}{
		"a regular file": {file, "is a regular file"},
		"a directory":    {folder, "is a directory"},
		"/dev/null":      {devNull, "is not a pipe, a socket or a terminal"},
	} {
		fd := fileFD(t, c.f)
		var fdErr *FDError
		if err := CheckFD(fd); !errors.As(err, &fdErr) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: CheckFD %v", name, err)
		}
		got, err := Invitation(Input{FD: fd})
		if !errors.As(err, &fdErr) || got != "" || strings.Contains(err.Error(), secret) {
			t.Fatalf("%s: read %q, %v", name, got, err)
		}
		syscall.Close(fd)
	}
	if off, err := file.Seek(0, io.SeekCurrent); err != nil || off != 0 {
		t.Fatalf("the file was read: offset %d %v", off, err)
	}
	var fdErr *FDError
	if err := CheckFD(1000); !errors.As(err, &fdErr) || !strings.Contains(err.Error(), "not an open file descriptor") {
		t.Fatalf("a descriptor that is not open: %v", err)
	}
}

func TestTheInvitationFromASocketOrATerminal(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	peer := os.NewFile(uintptr(fds[1]), "peer")
	io.WriteString(peer, secret+"\n")
	peer.Close()
	if got, err := Invitation(Input{FD: fds[0]}); err != nil || got != secret {
		t.Fatalf("a socket: %q, %v", got, err)
	}

	master, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer tty.Close()
	io.WriteString(master, secret+"\r")
	if got, err := Invitation(Input{FD: fileFD(t, tty)}); err != nil || got != secret {
		t.Fatalf("a terminal: %q, %v", got, err)
	}
}

// answer runs Confirm on a terminal of its own and types typed once the question shows.
func answer(t *testing.T, typed string) (bool, error) {
	t.Helper()
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer tty.Close()
	type result struct {
		ok  bool
		err error
	}
	done := make(chan result, 1)
	go func() {
		ok, err := Confirm(tty.Name(), "Enable it? [y/N] ")
		done <- result{ok, err}
	}()
	var out bytes.Buffer
	readUntil(t, master, &out, "[y/N] ")
	if _, err := io.WriteString(master, typed); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		return r.ok, r.err
	case <-time.After(10 * time.Second):
		t.Fatalf("typed %q: no answer read", typed)
		return false, nil
	}
}

func TestConfirmTakesOnlyYesOnTheTerminal(t *testing.T) {
	for typed, want := range map[string]bool{
		"y\r": true, "yes\r": true, "Y\r": true, " YES \r": true,
		"n\r": false, "no\r": false, "\r": false, "yep\r": false, "y es\r": false,
		"\x04": false, // Ctrl-D: the end of input
	} {
		ok, err := answer(t, typed)
		if err != nil || ok != want {
			t.Fatalf("typed %q: %v %v, want %v", typed, ok, err, want)
		}
	}
}

func TestConfirmWithoutATerminalRefuses(t *testing.T) {
	file := filepath.Join(t.TempDir(), "answer")
	if err := os.WriteFile(file, []byte("y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tty := range []string{file, filepath.Join(t.TempDir(), "no-such-terminal"), ""} {
		if ok, err := Confirm(tty, "Enable it? [y/N] "); ok || !errors.Is(err, ErrNoTerminal) {
			t.Fatalf("%q: %v %v", tty, ok, err)
		}
	}
}
