package textpolicy

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheckTextRefused(t *testing.T) {
	cases := []struct {
		s         string
		multiline bool
	}{
		{"bad \xff byte", true},
		{"bad \xff byte", false},
		{"lone surrogate \xed\xa0\x80", true},
		{"truncated \xe2\x82", false},
		{"nul \x00", true},
		{"bell \a", true},
		{"escape \x1b[31mred", true},
		{"delete \x7f", true},
		{"next line \u0085", true},
		{"c1 \u009b", false},
		{"crlf\r\nbody", true},
		{"cr\r", false},
		{"two\nlines", false},
		{"tab\there", false},
		{"line sep\u2028", false},
		{"para sep\u2029", false},
		{"lre \u202a", true},
		{"rle \u202b", false},
		{"pdf \u202c", true},
		{"lro \u202d", true},
		{"rlo \u202e gnp.exe", false},
		{"lri \u2066", true},
		{"rli \u2067", true},
		{"fsi \u2068", false},
		{"pdi \u2069", true},
		{"   ", false},
		{" \n\t\n ", true},
		{"\u200b\u200b", false},
		{"\ufeff", true},
		{"\u3164", false},
		{"\u2800 \u2800", true},
		{"\u00a0\u2003", false},
		{"\u034f\ufe0f", false},
		{"\U000e0041\U000e0042", true},
	}
	for _, c := range cases {
		reason, ok := Check(c.s, c.multiline)
		if ok {
			t.Errorf("%q (multiline=%v) accepted", c.s, c.multiline)
			continue
		}
		if reason == "" || strings.Contains(reason, c.s) || strings.ContainsAny(reason, "\n\r") {
			t.Errorf("%q: bad reason %q", c.s, reason)
		}
	}
}

func TestCheckTextAllowed(t *testing.T) {
	for _, s := range []string{
		"",
		"plain ASCII, with punctuation: <script>alert(1)</script>",
		"emoji 🍲👩‍🍳🏳️‍🌈",
		"CJK 麻婆豆腐 とうふ 두부",
		"combining e\u0301 a\u0308 z\u0336",
		"Arabic مرحبا with marks \u200f\u200e\u061c",
		"zero width joiner \u200d and space \u200b",
		"replacement char \ufffd is a character",
		"non-breaking\u00a0space",
		"ideographic\u3000space",
	} {
		for _, multiline := range []bool{false, true} {
			if reason, ok := Check(s, multiline); !ok {
				t.Errorf("%q (multiline=%v) refused: %s", s, multiline, reason)
			}
		}
	}
	for _, s := range []string{
		"line one\nline two\n",
		"\tindented code\n\t\tmore",
		"separators \u2028 and \u2029 in a body",
		"## Markdown\n\n- item\n",
	} {
		if reason, ok := Check(s, true); !ok {
			t.Errorf("%q refused in a body: %s", s, reason)
		}
	}
}

func FuzzCheckText(f *testing.F) {
	for _, s := range []string{"", "a\nb", "a\tb", "a\rb", "\xff", "\u202e", "🍲", "e\u0301", "\u2028"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, multiline bool) {
		reason, ok := Check(s, multiline)
		if ok != (reason == "") {
			t.Fatalf("%q: ok=%v with reason %q", s, ok, reason)
		}
		if ok && !utf8.ValidString(s) {
			t.Fatalf("%q: invalid UTF-8 accepted", s)
		}
		if ok && !multiline && strings.ContainsAny(s, "\n\r\t\u2028\u2029") {
			t.Fatalf("%q: a line break or tab accepted in one-line text", s)
		}
	})
}
