package prompt

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

const secret = "svcinv_q3Xb9Tz1LwR5mN8pVc2KdA"

// TestMain doubles as the program under test: with PROMPT_TEST_CHILD set, the test binary reads an
// invitation as svc-connector does and prints only its SHA-256.
func TestMain(m *testing.M) {
	if os.Getenv("PROMPT_TEST_CHILD") == "1" {
		inv, err := Invitation(Input{FD: -1, Stdin: os.Stdin, TTY: "/dev/tty", Label: "Invitation"})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		sum := sha256.Sum256([]byte(inv))
		fmt.Println("read sha256=" + hex.EncodeToString(sum[:]))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestAStdinThatIsNotATerminalIsRefused(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fmt.Fprintln(w, secret)
	w.Close()
	_, err = Invitation(Input{FD: -1, Stdin: r, TTY: "/dev/tty"})
	if !errors.Is(err, ErrNotTerminal) {
		t.Fatalf("a piped stdin: %v", err)
	}
	if !strings.Contains(err.Error(), "--invitation-fd") {
		t.Fatalf("the refusal does not say how to hand it over: %v", err)
	}
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	if _, err := Invitation(Input{FD: -1, Stdin: devNull}); !errors.Is(err, ErrNotTerminal) {
		t.Fatalf("/dev/null as stdin: %v", err)
	}
}
