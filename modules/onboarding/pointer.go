package onboarding

import (
	"strconv"
	"strings"
)

// escapePointer escapes a member name for a JSON pointer (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func itoa(i int) string { return strconv.Itoa(i) }
