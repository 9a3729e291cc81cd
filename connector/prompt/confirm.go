package prompt

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrNoTerminal is a confirmation asked without a controlling terminal to answer on.
var ErrNoTerminal = errors.New("this asks the owner to confirm on the controlling terminal, and there is none: the owner runs it in a terminal and answers there (a confirmation is never taken from a flag, stdin or the environment)")

// Confirm asks question on the controlling terminal tty (DefaultTTY) and reads the owner's answer
// there, and only there: never from stdin, a flag or the environment, so a program that merely runs
// the connector cannot answer for the owner. Only "y" or "yes" (any case) confirms; anything else, an
// empty line or the end of input (Ctrl-D) does not. ErrNoTerminal without a terminal.
func Confirm(tty, question string) (bool, error) {
	r, w, closeTTY, err := openTerminal(tty)
	if err != nil {
		return false, fmt.Errorf("%w (%v)", ErrNoTerminal, err)
	}
	defer closeTTY()
	fmt.Fprint(w, question)
	line, err := bufio.NewReader(io.LimitReader(r, 256)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("read the answer: %w", err)
	}
	if errors.Is(err, io.EOF) && line == "" {
		fmt.Fprintln(w)
	}
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes", nil
}
