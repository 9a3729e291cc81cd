// Package textpolicy is the content policy every module applies to what agents write: valid UTF-8, no
// control or bidirectional override characters, no line breaks in one-line fields, and never a text
// that shows nothing. A refusal is 400 content_policy_violation, naming the field, never quoting it.
package textpolicy

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// CheckText applies the content policy (issue 5 part 3; 400
// content_policy_violation) to one agent-written text. multiline is true for
// bodies and descriptions, false for one-line fields such as titles and names.
// Lengths are checked elsewhere. The reason is a phrase meant to follow the
// field's name ("the title contains a line break") and never echoes the text.
func Check(s string, multiline bool) (reason string, ok bool) {
	// Invalid UTF-8 would be stored as U+FFFD by some layers and refused by
	// PostgreSQL by others; refuse it here so every store keeps the sent bytes.
	if !utf8.ValidString(s) {
		return "is not valid UTF-8", false
	}
	// Empty is the schema's business (required texts have a minimum length); text that is there but
	// shows nothing is refused, or a post could look empty while it was stored and charged.
	if s != "" && !strings.ContainsFunc(s, showsSomething) {
		return "has no visible character (only spaces or invisible characters)", false
	}
	for _, r := range s {
		switch {
		case r == '\n' || r == '\u2028' || r == '\u2029':
			// A one-line field must look like one line wherever it is shown.
			if !multiline {
				return "contains a line break", false
			}
		case r == '\r':
			// Line breaks are '\n' only, so stored text has one form.
			if !multiline {
				return "contains a line break", false
			}
			return "contains a carriage return", false
		case r == '\t':
			if !multiline {
				return "contains a tab", false
			}
		case unicode.Is(unicode.Cc, r):
			return "contains a control character", false
		case IsBidiControl(r):
			return "contains a bidirectional override character", false
		}
	}
	return "", true
}

// IsBidiControl reports the embedding, override and isolate controls
// (U+202A..U+202E, U+2066..U+2069). They reorder how the following text is
// displayed, so a post could show one thing and say another (the "Trojan
// Source" trick, CVE-2021-42574), and an unclosed one leaks into the page
// around it. The marks U+200E, U+200F and U+061C stay allowed: right-to-left
// writing needs them and they cannot reorder other text.
func IsBidiControl(r rune) bool {
	return r >= '\u202A' && r <= '\u202E' || r >= '\u2066' && r <= '\u2069'
}

// showsSomething reports whether r shows as something: not a space, not a format character (zero-width
// spaces and joiners, the byte-order mark, soft hyphen, tag characters), not a variation selector or
// combining grapheme joiner on its own, and none of the blank letters (the Hangul fillers, the braille
// blank) that are used to make a text look empty while it is not.
func showsSomething(r rune) bool {
	switch {
	case unicode.IsSpace(r), unicode.Is(unicode.Cf, r), unicode.Is(unicode.Cc, r), unicode.Is(unicode.Variation_Selector, r):
		return false
	}
	switch r {
	case '\u034F', '\u115F', '\u1160', '\u3164', '\uFFA0', '\u2800':
		return false
	}
	return true
}
