package billing

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/schema"
)

// ExampleFile is where the module's example pricing file lives in the repository; it publishes as it
// is (a test checks) and is the place to start a price list from.
const ExampleFile = "modules/billing/examples/pricing.json"

// fileProblem is the refusal of a pricing file: the schema's 422 with a detail that names every bad
// member by its JSON pointer and, where the file shows it, its line and column, so that the
// operator's one line of error says what to fix and where.
func fileProblem(raw []byte, se *schema.Error) *problem.Problem {
	p := se.Problem()
	reasons := make([]string, len(se.Errors))
	offsets := pointerOffsets(raw) // once: each reason looks its place up in it
	for i, fe := range se.Errors {
		at := fe.Pointer
		if at == "" {
			at = "(file)"
		}
		if where := locate(raw, offsets, fe); where != "" {
			at += " " + where
		}
		reasons[i] = fmt.Sprintf("%s: %s (%s)", at, fe.Message, fe.Code)
	}
	p.Detail = "the pricing file does not match the schema pricing-file: " + strings.Join(reasons, "; ")
	return p
}

// syntaxCodes are the refusals of the file's JSON itself, located where the parser stopped.
var syntaxCodes = map[string]bool{"invalid_json": true, "duplicate_member": true, "invalid_utf8": true, "trailing_data": true}

// locate says where in raw the reason fe is: "at line L, column C" for the member or value its pointer
// names, "in /parent at line L, column C" for a member that is missing (or the nearest member that
// is there), and for a syntax error where parsing stopped. It returns "" when raw shows no place.
func locate(raw []byte, offsets map[string]int, fe problem.FieldError) string {
	if syntaxCodes[fe.Code] {
		if off, ok := syntaxOffset(raw); ok {
			return "at " + position(raw, off)
		}
		return ""
	}
	for p := fe.Pointer; ; {
		if off, ok := offsets[p]; ok {
			if p == fe.Pointer {
				return "at " + position(raw, off)
			}
			in := p
			if in == "" {
				in = "the file"
			}
			return "in " + in + " at " + position(raw, off)
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return ""
		}
		p = p[:i]
	}
}

// pointerOffsets maps the JSON pointer of every member name and value of raw's first JSON value to
// the byte offset where it starts (a member, where its name starts).
func pointerOffsets(raw []byte) map[string]int {
	out := map[string]int{}
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	for {
		start := skipSeparators(raw, int(dec.InputOffset()))
		if _, err := dec.ReadToken(); err != nil {
			return out
		}
		p := string(dec.StackPointer())
		if _, seen := out[p]; !seen {
			out[p] = start
		}
		if dec.StackDepth() == 0 {
			return out
		}
	}
}

// syntaxOffset returns the offset at which raw stops being one JSON value: where the parser failed,
// or where data follows the value.
func syntaxOffset(raw []byte) (int, bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.ReadValue(); err != nil {
		var se *jsontext.SyntacticError
		if errors.As(err, &se) {
			return int(se.ByteOffset), true
		}
		return len(raw), true // the file ended inside the value
	}
	if off := skipSeparators(raw, int(dec.InputOffset())); off < len(raw) {
		return off, true
	}
	return 0, false
}

func skipSeparators(raw []byte, off int) int {
	for off < len(raw) && strings.IndexByte(" \t\r\n,:", raw[off]) >= 0 {
		off++
	}
	return off
}

// position is "line L, column C" of byte offset off, both from 1, columns counted in characters.
func position(raw []byte, off int) string {
	off = min(max(off, 0), len(raw))
	before := raw[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return fmt.Sprintf("line %d, column %d", line, col)
}
