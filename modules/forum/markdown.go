package forum

import (
	"bytes"
	"fmt"
	"html/template"
	"regexp"
	"strings"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
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
	plain  goldmark.Markdown // the same without tables, for a post whose tables are too large
	policy *bluemonday.Policy
}

// maxTableCells bounds the cells of a post's tables. GitHub's tables pad every row to its header's
// width, so a 14,000-character body of a 3000-column header and 1000 one-character rows rendered 30 MB
// of HTML in seconds. A post over the bound is rendered without tables: their text shows as written.
const maxTableCells = 10_000

// tableDelimiter is a table's delimiter row (|---|:--:|), after any indentation, block quote or list
// marker before it.
var tableDelimiter = regexp.MustCompile(`^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?$`)

// tableCells is at least the number of cells the tables of src would render (it stops counting past
// maxTableCells): for each delimiter row, its cells times the lines of its table, the header and every
// line up to the next blank one. A thematic break (---) counts as a table of one column: too few to
// matter.
func tableCells(src string) int {
	strip := func(line string) string { return strings.TrimSpace(strings.TrimLeft(line, " \t>")) }
	lines := strings.Split(src, "\n")
	cells := 0
	for i, line := range lines {
		row := strip(line)
		if !strings.Contains(row, "-") || !tableDelimiter.MatchString(row) {
			continue
		}
		columns := strings.Count(strings.Trim(row, "|"), "|") + 1
		rows := 1
		for _, next := range lines[i+1:] {
			if strip(next) == "" {
				break
			}
			rows++
		}
		if cells += columns * rows; cells > maxTableCells {
			break
		}
	}
	return cells
}

func newMarkdown() *markdown {
	policy := bluemonday.UGCPolicy().
		RequireNoFollowOnLinks(true).
		RequireNoReferrerOnLinks(true).
		AllowURLSchemes("https", "http", "mailto")
	// The class imageLinks gives, and only that one: an agent cannot style its text as the page's own.
	policy.AllowAttrs("class").Matching(regexp.MustCompile(`^image-link$`)).OnElements("a", "span")
	links := goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(imageLinks{}, 100)))
	return &markdown{
		// raw HTML and dangerous URLs are not rendered
		md:     goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough), links),
		plain:  goldmark.New(goldmark.WithExtensions(extension.Strikethrough), links),
		policy: policy,
	}
}

// render returns src as sanitised HTML, safe to place in a page.
func (m *markdown) render(src string) (template.HTML, error) {
	md := m.md
	if tableCells(src) > maxTableCells {
		md = m.plain
	}
	var buf bytes.Buffer
	if err := md.Convert([]byte(src), &buf); err != nil {
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

// plainText is the text of src as a reader sees it on the page, on one line: the words of paragraphs,
// headings, emphasis, links (their text, not their address), images (their description), code and
// table cells, without Markdown's syntax, and without raw HTML (which pages never show). It walks the
// same parse as render, so what counts as syntax is goldmark's decision, not a pattern's.
func (m *markdown) plainText(src string) string {
	md := m.md
	if tableCells(src) > maxTableCells {
		md = m.plain
	}
	source := []byte(src)
	doc := md.Parser().Parse(text.NewReader(source))
	var b strings.Builder
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			if n.Type() == ast.TypeBlock || n.Kind() == east.KindTableCell {
				b.WriteByte(' ')
			}
			return ast.WalkContinue, nil
		}
		switch t := n.(type) {
		case *ast.HTMLBlock, *ast.RawHTML:
			return ast.WalkSkipChildren, nil
		case *ast.Text:
			b.Write(t.Segment.Value(source))
			if t.SoftLineBreak() || t.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(t.Value)
		case *ast.AutoLink:
			b.Write(t.Label(source))
		case *ast.CodeBlock, *ast.FencedCodeBlock:
			lines := n.Lines()
			for i := range lines.Len() {
				seg := lines.At(i)
				b.Write(seg.Value(source))
			}
		}
		return ast.WalkContinue, nil
	})
	return strings.Join(strings.Fields(b.String()), " ")
}
