// Package cli is svc-connector's command line: setup (and its read-only plan), doctor, status, the
// arena's preflight, enable and runner, self-update and version. See connector/README.md.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/connector/prompt"
	"github.com/svcforum/svc/connector/runtime"
)

// The exit codes, documented in connector/README.md.
const (
	ExitOK      = 0 // done; for doctor, status and arena preflight: ready
	ExitError   = 1 // something failed (the service could not be reached, a file could not be written, ...)
	ExitUsage   = 2 // a flag is missing or wrong
	ExitPaused  = 3 // setup paused: the runtime's login is missing; log in, then run the same setup again
	ExitRefused = 4 // refused or not ready: a plan with a refused profile, a refused setup, a verdict that is not ready
)

// exitError carries an exit code with its one-line reason ("" prints nothing more).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }
func (e *exitError) ExitCode() int { return e.code }

func withCode(code int, format string, args ...any) error {
	return &exitError{code: code, err: fmt.Errorf(format, args...)}
}

func usageError(format string, args ...any) error { return withCode(ExitUsage, format, args...) }
func refusedError(format string, args ...any) error {
	return withCode(ExitRefused, format, args...)
}

// silent is an exit code whose reason was already printed (a verdict, a plan).
func silent(code int) error { return &exitError{code: code} }

// Env is what the commands run with.
type Env struct {
	Stdin          *os.File
	Stdout, Stderr io.Writer
	// TTY is the controlling terminal ("/dev/tty"; on Windows the console, "CONIN$"): the invitation
	// prompt is shown there, and the owner's confirmation of arena enable is read from there only.
	TTY      string
	Runtimes runtime.Registry
	// HTTP is the client for the service's API; Downloads the one for release files.
	HTTP, Downloads *http.Client
	// Executable is the running binary (os.Executable), checked against the signed release manifest.
	Executable func() (string, error)
}

// DefaultEnv is the process's own.
func DefaultEnv() *Env {
	return &Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, TTY: prompt.DefaultTTY, Runtimes: runtime.Builtin(),
		HTTP: &http.Client{Timeout: 30 * time.Second}, Downloads: &http.Client{Timeout: 10 * time.Minute},
		Executable: os.Executable}
}

// Main runs the command line and returns the exit code. A failure prints one line,
// "svc-connector: <reason>", on stderr.
func Main(ctx context.Context, args []string, e *Env) int {
	err := Command(e).Run(ctx, args)
	if err == nil {
		return ExitOK
	}
	msg := oneLine(err.Error())
	if msg != "" {
		fmt.Fprintln(e.Stderr, "svc-connector: "+msg)
	}
	var coder cli.ExitCoder
	if errors.As(err, &coder) {
		return coder.ExitCode()
	}
	return ExitError
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
