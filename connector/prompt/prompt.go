// Package prompt is what svc-connector asks the owner on the terminal: the owner's confirmation
// (Confirm), and the invitation (Invitation), typed once into a prompt on the terminal that does not
// echo, or read from a file descriptor the owner's own tooling hands over (--invitation-fd: a pipe, a
// socket or a terminal, never a file). It never reads one from the command line, the environment or a
// file, and never from a stdin that is not a terminal unless the owner named it as the descriptor.
package prompt

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"syscall"

	"golang.org/x/term"
)

// invitationRule is an invitation as mailed: "svcinv_" and 22 base64url characters.
var invitationRule = regexp.MustCompile(`^svcinv_[A-Za-z0-9_-]{22}$`)

// ErrNotTerminal is a prompt without a terminal to type into.
var ErrNotTerminal = errors.New("the invitation is typed into a prompt that does not echo, but stdin is not a terminal: run this in a terminal, or hand the invitation over on an inherited file descriptor with --invitation-fd N (never as an argument, an environment variable or a file)")

// ErrNotInvitation is input that is not an invitation. It never carries the input.
var ErrNotInvitation = errors.New("that is not an invitation (svcinv_ followed by 22 letters, digits, - or _): run setup again and type it as mailed")

// Input is where an invitation comes from.
type Input struct {
	// FD, when 0 or more, is an inherited file descriptor to read one line from instead of a prompt.
	FD int
	// Stdin is the process's standard input (os.Stdin); it must be a terminal unless FD is set.
	Stdin *os.File
	// TTY is the controlling terminal (DefaultTTY); when it cannot be opened, Stdin is used.
	TTY string
	// Label is the prompt shown on the terminal.
	Label string
}

// Invitation reads one invitation from in, checks its form, and returns it. What is typed is never
// echoed, printed or logged.
func Invitation(in Input) (string, error) {
	var raw []byte
	var err error
	if in.FD >= 0 {
		raw, err = readFD(in.FD)
	} else {
		raw, err = readTerminal(in)
	}
	if err != nil {
		return "", err
	}
	inv := string(bytes.TrimSpace(raw))
	clear(raw)
	if !invitationRule.MatchString(inv) {
		return "", ErrNotInvitation
	}
	return inv, nil
}

// FDError is an --invitation-fd the invitation is not read from: stdout or stderr, a descriptor that is
// not open, or one that is not a pipe, a socket or a terminal (a regular file, a directory, a device).
type FDError struct {
	FD     int
	Reason string
}

func (e *FDError) Error() string { return fmt.Sprintf("--invitation-fd %d %s", e.FD, e.Reason) }

// notFromFile is the refusal of a descriptor that is a file.
const notFromFile = "the invitation is never read from a file: hand it over on a pipe from the tool that keeps it (--invitation-fd 3 3< <(pass show svc/invitation)), or type it into the prompt"

// CheckFD checks, without reading from it, that fd is a descriptor an invitation may be handed over
// on: open, not stdout or stderr, and a pipe, a socket or a terminal (fstat). A regular file (as in
// 3< invitation.txt) and a directory are refused: the invitation never comes from a file.
func CheckFD(fd int) error {
	if fd < 0 {
		return &FDError{fd, "is not a file descriptor"}
	}
	if fd == 1 || fd == 2 {
		return &FDError{fd, "is stdout or stderr: name the descriptor the invitation is handed over on"}
	}
	kind, err := fdKind(fd)
	if err != nil {
		return &FDError{fd, "is not an open file descriptor"}
	}
	switch kind {
	case kindPipe, kindSocket, kindTerminal:
		return nil
	case kindFile:
		return &FDError{fd, "is a regular file: " + notFromFile}
	case kindDirectory:
		return &FDError{fd, "is a directory: " + notFromFile}
	default:
		return &FDError{fd, "is not a pipe, a socket or a terminal: hand the invitation over on a pipe, or type it into the prompt"}
	}
}

// The kinds of descriptor fdKind tells apart.
const (
	kindOther = iota
	kindPipe
	kindSocket
	kindTerminal
	kindFile
	kindDirectory
)

// readFD reads one line from file descriptor fd, once CheckFD accepts it, and closes it.
func readFD(fd int) ([]byte, error) {
	if err := CheckFD(fd); err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "invitation-fd")
	defer f.Close()
	line, err := bufio.NewReaderSize(io.LimitReader(f, 4096), 4096).ReadBytes('\n')
	if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("--invitation-fd %d: nothing to read", fd)
		}
		return nil, fmt.Errorf("--invitation-fd %d: %w", fd, err)
	}
	return line, nil
}

// readTerminal shows the prompt on the controlling terminal and reads a line with echo off.
func readTerminal(in Input) ([]byte, error) {
	if in.Stdin == nil || !term.IsTerminal(int(in.Stdin.Fd())) {
		return nil, ErrNotTerminal
	}
	r, w := in.Stdin, io.Writer(os.Stderr)
	if in.TTY != "" {
		if tty, out, closeTTY, err := openTerminal(in.TTY); err == nil {
			defer closeTTY()
			r, w = tty, out
		}
	}
	fd := int(r.Fd())
	state, err := term.GetState(fd)
	if err != nil {
		return nil, fmt.Errorf("read the terminal's state: %w", err)
	}
	// An interrupt while echo is off must not leave the owner's terminal silent.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	defer func() {
		signal.Stop(sigs)
		close(done)
	}()
	go func() {
		select {
		case <-sigs:
			_ = term.Restore(fd, state)
			fmt.Fprintln(w)
			os.Exit(130)
		case <-done:
		}
	}()
	label := in.Label
	if label == "" {
		label = "Invitation"
	}
	// Echo goes off before the prompt shows, so that nothing typed as soon as it appears is echoed.
	line, err := readHidden(fd, func() { fmt.Fprintf(w, "%s (typing is not shown): ", label) })
	fmt.Fprintln(w)
	if err != nil {
		return nil, fmt.Errorf("read the invitation: %w", err)
	}
	return line, nil
}
