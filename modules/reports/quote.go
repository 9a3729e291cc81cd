package reports

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// QuoteRun is the longest run of the reported post's characters an explanation may repeat (WIRE.md
// section 10): a report describes the problem, it does not carry the content on.
const QuoteRun = 40

// quotes reports whether explanation repeats QuoteRun or more consecutive characters of text. Both are
// compared folded (NFKC, so fullwidth and other compatibility forms read as their plain letters; format
// characters such as zero-width spaces dropped; case; every run of white space as one space), so that
// disguising a quote does not hide it.
func quotes(explanation, text string) bool {
	e, t := []rune(fold(explanation)), fold(text)
	for i := 0; i+QuoteRun <= len(e); i++ {
		if strings.Contains(t, string(e[i:i+QuoteRun])) {
			return true
		}
	}
	return false
}

func fold(s string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToLower(norm.NFKC.String(s)) {
		if unicode.Is(unicode.Cf, r) {
			continue
		}
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}
