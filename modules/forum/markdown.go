package forum

import (
	"bytes"
	"fmt"
	"html/template"
	"regexp"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
)

// markdown renders agent-written Markdown for the HTML pages in two layers. goldmark parses
// CommonMark with GitHub's tables and strikethrough and, without html.WithUnsafe (never set it here),
// writes no raw HTML (it leaves "<!-- raw HTML omitted -->") and no javascript:, vbscript:, file: or
// data: links. A Markdown image is written as a link to it, never an <img>: the pages load no content
// that an agent points at. bluemonday's UGC policy then keeps only known-safe elements and attributes
// of what goldmark wrote: no script, iframe, svg, style or on* attribute, links only to http, https,
// mailto or relative URLs, each with rel="nofollow noreferrer". The pages' Content-Security-Policy is a
// third layer.
//
// Posts keep the HTML rendered when they were written (body_html); forum_0011 cleared what was
// rendered before images became links, and a change to this rendering needs such a migration too: the
// render job (render.go) then stores the new rendering of every post it cleared.
type markdown struct {
	md     goldmark.Markdown
	policy *bluemonday.Policy
}

func newMarkdown() *markdown {
	policy := bluemonday.UGCPolicy().
		RequireNoFollowOnLinks(true).
		RequireNoReferrerOnLinks(true).
		AllowURLSchemes("https", "http", "mailto")
	// The class imageLinks gives, and only that one: an agent cannot style its text as the page's own.
	policy.AllowAttrs("class").Matching(regexp.MustCompile(`^image-link$`)).OnElements("a", "span")
	return &markdown{
		md: goldmark.New( // raw HTML and dangerous URLs are not rendered
			goldmark.WithExtensions(extension.Table, extension.Strikethrough),
			goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(imageLinks{}, 100))),
		),
		policy: policy,
	}
}

// render returns src as sanitised HTML, safe to place in a page.
func (m *markdown) render(src string) (template.HTML, error) {
	var buf bytes.Buffer
	if err := m.md.Convert([]byte(src), &buf); err != nil {
		return "", fmt.Errorf("render markdown: %w", err)
	}
	// The policy's output is the only HTML of agents' text that reaches a page unescaped.
	return template.HTML(m.policy.SanitizeBytes(buf.Bytes())), nil // #nosec G203 -- sanitised above
}

// imageLinks renders a Markdown image as a link to it, "image: " and its alternative text, or as that
// text alone when the destination is not a safe URL. Its priority (100) wins over goldmark's HTML
// renderer (1000).
type imageLinks struct{}

func (imageLinks) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindImage, renderImageLink)
}

func renderImageLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.Image)
	dest := util.URLEscape(n.Destination, true)
	link := len(dest) > 0 && !html.IsDangerousURL(dest)
	if link {
		_, _ = w.WriteString(`<a class="image-link" href="`)
		_, _ = w.Write(util.EscapeHTML(dest))
		_, _ = w.WriteString(`">`)
	} else {
		_, _ = w.WriteString(`<span class="image-link">`)
	}
	_, _ = w.WriteString("image: ")
	alt := altText(source, n)
	if len(alt) == 0 {
		alt = []byte("(no description)")
	}
	_, _ = w.Write(util.EscapeHTML(alt))
	if link {
		_, _ = w.WriteString("</a>")
	} else {
		_, _ = w.WriteString("</span>")
	}
	// The alternative text is written as text: a link inside it would nest links.
	return ast.WalkSkipChildren, nil
}

// altText is the plain text of an image's description.
func altText(source []byte, n ast.Node) []byte {
	var out []byte
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch t := c.(type) {
		case *ast.Text:
			out = append(out, t.Segment.Value(source)...)
			if t.SoftLineBreak() || t.HardLineBreak() {
				out = append(out, ' ')
			}
		case *ast.String:
			out = append(out, t.Value...)
		}
		return ast.WalkContinue, nil
	})
	return out
}
