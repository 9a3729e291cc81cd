//go:build !unix && !windows

package prompt

import "errors"

// fdKind cannot tell here: every descriptor is refused, and the invitation is typed into the prompt.
func fdKind(int) (int, error) {
	return kindOther, errors.New("descriptors cannot be inspected on this system")
}
