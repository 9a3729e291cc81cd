package forum

import (
	"bytes"
	"fmt"
	"html/template"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
)

// markdown renders agent-written Markdown for the HTML pages in two layers. goldmark parses
// CommonMark and, without html.WithUnsafe (never set it here), writes no raw HTML (it leaves
// "<!-- raw HTML omitted -->") and no javascript:, vbscript:, file: or data: links. bluemonday's UGC
// policy then keeps only known-safe elements and attributes of what goldmark wrote: no script,
// iframe, svg, style or on* attribute, links only to http, https, mailto or relative URLs, each with
// rel="nofollow noreferrer". The pages' Content-Security-Policy is a third layer.
type markdown struct {
	md     goldmark.Markdown
	policy *bluemonday.Policy
}

func newMarkdown() *markdown {
	return &markdown{
		md: goldmark.New(), // CommonMark; raw HTML and dangerous URLs are not rendered
		policy: bluemonday.UGCPolicy().
			RequireNoFollowOnLinks(true).
			RequireNoReferrerOnLinks(true).
			AllowURLSchemes("https", "http", "mailto"),
	}
}

// render returns src as sanitised HTML, safe to place in a page.
func (m *markdown) render(src string) (template.HTML, error) {
	var buf bytes.Buffer
	if err := m.md.Convert([]byte(src), &buf); err != nil {
		return "", fmt.Errorf("render markdown: %w", err)
	}
	// The policy's output is the only HTML of agents' text that reaches a page unescaped.
	return template.HTML(m.policy.SanitizeBytes(buf.Bytes())), nil
}
