package schema

import (
	"bytes"
	jsonv1 "encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/svcforum/svc/contracts/problem"
)

// Error is a payload refused by the strict decoder, with one entry per reason. It converts to the
// 422 validation_failed problem with Problem.
type Error struct {
	Errors []problem.FieldError
}

func (e *Error) Error() string {
	parts := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		parts[i] = fmt.Sprintf("%s: %s (%s)", pointerOrRoot(fe.Pointer), fe.Message, fe.Code)
	}
	return "invalid payload: " + strings.Join(parts, "; ")
}

// Problem is the 422 answer to the refused payload: private_key_refused when a member holds a private
// key, validation_failed otherwise.
func (e *Error) Problem() *problem.Problem {
	if e.PrivateKey() {
		return e.keyProblem()
	}
	p := problem.New(problem.ValidationFailed, "The request body does not match its published schema.")
	p.Errors = e.Errors
	return p
}

// Decode validates raw against the named schema and decodes it into dst (a pointer to a struct whose
// json tags name the schema's members exactly). It refuses, with pointer-level reasons: a member that
// holds a private key by the schema's Keyword rules (alone, before any other reason), an empty body,
// invalid JSON, invalid UTF-8 (lone surrogates included), duplicate member names, trailing data after
// the value, every schema violation (unknown and case-variant members, wrong types, bounds, enums), and
// any value the Go type cannot hold exactly. A refusal is a *Error; any other error is the caller's bug.
func (s *Set) Decode(name string, raw []byte, dst any) error {
	if err := s.Validate(name, raw); err != nil {
		return err
	}
	if err := json.Unmarshal(raw, dst, json.RejectUnknownMembers(true)); err != nil {
		return decodeError(err)
	}
	return nil
}

// Validate checks raw against the named schema without decoding it; the contract tests use it for
// responses and examples.
func (s *Set) Validate(name string, raw []byte) error {
	sch, err := s.get(name)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return &Error{Errors: []problem.FieldError{{Pointer: "", Code: "invalid_json", Message: "the request body is empty; a JSON value is required"}}}
	}
	// The syntax pass of json/v2 refuses what encoding/json silently accepts: duplicate names, invalid
	// UTF-8 and trailing data.
	if err := json.Unmarshal(raw, new(jsontext.Value)); err != nil {
		return decodeError(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return decodeError(err)
	}
	// A private key is reported alone, whatever else is wrong: the sender learns at once that its key
	// is exposed.
	keys, err := s.checkKeys(name, inst)
	if err != nil {
		return err
	}
	if keys != nil {
		return &Error{Errors: keys}
	}
	if err := sch.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return &Error{Errors: flatten(ve)}
		}
		return fmt.Errorf("validate against %s: %w", name, err)
	}
	return nil
}

var printer = message.NewPrinter(language.English)

// flatten turns the validator's tree into its leaves, one FieldError each, pointing at the member at
// fault (a missing or unknown member is named in the pointer rather than its parent object).
func flatten(ve *jsonschema.ValidationError) []problem.FieldError {
	var out []problem.FieldError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		at := pointer(e.InstanceLocation)
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			for _, m := range k.Missing {
				out = append(out, problem.FieldError{Pointer: at + "/" + EscapeToken(m), Code: "required", Message: "the member is required"})
			}
		case *kind.AdditionalProperties:
			for _, m := range k.Properties {
				out = append(out, problem.FieldError{Pointer: at + "/" + EscapeToken(m), Code: "unknown_member", Message: "the member is not part of the schema (names are case-sensitive)"})
			}
		case *keyRefused:
			out = append(out, problem.FieldError{Pointer: at, Code: string(problem.PrivateKeyRefused), Message: keyMessage})
		case *kind.FalseSchema:
			out = append(out, problem.FieldError{Pointer: at, Code: "unknown_member", Message: "the member is not allowed here"})
		default:
			code := "invalid"
			if kp := e.ErrorKind.KeywordPath(); len(kp) > 0 {
				code = kp[len(kp)-1]
			}
			out = append(out, problem.FieldError{Pointer: at, Code: code, Message: ruleMessage(e.ErrorKind)})
		}
	}
	walk(ve)
	return dedupe(out)
}

// ruleMessage names the rule a value broke without quoting the value, which may be a secret (WIRE.md
// section 4); the validator's own messages quote it for some rules.
func ruleMessage(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Pattern:
		return "the value does not match the pattern " + k.Want
	case *kind.Format:
		return "the value is not a valid " + k.Want
	case *kind.Const:
		return "the value must be " + shown(k.Want)
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = shown(w)
		}
		return "the value must be one of " + strings.Join(want, ", ")
	case *kind.PropertyNames:
		return "the member name is not allowed here"
	case *kind.ContentEncoding:
		return "the value is not " + k.Want + " encoded"
	case *kind.ContentMediaType:
		return "the value is not of media type " + k.Want
	}
	return k.LocalizedString(printer)
}

// shown writes a value of the schema (never of the request) as JSON; the validator holds its numbers
// as encoding/json's Number.
func shown(v any) string {
	number := json.MarshalFunc(func(n jsonv1.Number) ([]byte, error) { return []byte(n), nil })
	b, err := json.Marshal(v, json.Deterministic(true), json.WithMarshalers(number))
	if err != nil {
		return "the value the schema gives"
	}
	return string(b)
}

func dedupe(in []problem.FieldError) []problem.FieldError {
	seen := make(map[problem.FieldError]bool, len(in))
	out := in[:0]
	for _, fe := range in {
		if !seen[fe] {
			seen[fe] = true
			out = append(out, fe)
		}
	}
	return out
}

// decodeError maps json/v2 errors to pointer-level reasons.
func decodeError(err error) error {
	var syn *jsontext.SyntacticError
	var sem *json.SemanticError
	switch {
	case errors.As(err, &syn):
		code := "invalid_json"
		msg := "the body is not valid JSON"
		switch {
		case errors.Is(syn.Err, jsontext.ErrDuplicateName):
			code, msg = "duplicate_member", "the member name appears more than once"
		case strings.Contains(syn.Error(), "UTF-8"), strings.Contains(syn.Error(), "surrogate"):
			code, msg = "invalid_utf8", "the body contains invalid UTF-8"
		case strings.Contains(syn.Error(), "after top-level value"):
			code, msg = "trailing_data", "the body continues after its JSON value"
		}
		return &Error{Errors: []problem.FieldError{{Pointer: string(syn.JSONPointer), Code: code, Message: msg}}}
	case errors.As(err, &sem):
		code := "type"
		msg := "the value does not fit the member's type"
		if errors.Is(sem.Err, json.ErrUnknownName) {
			code, msg = "unknown_member", "the member is not part of the schema (names are case-sensitive)"
		}
		return &Error{Errors: []problem.FieldError{{Pointer: string(sem.JSONPointer), Code: code, Message: msg}}}
	default:
		return &Error{Errors: []problem.FieldError{{Pointer: "", Code: "invalid_json", Message: "the body is not valid JSON"}}}
	}
}

func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(EscapeToken(t))
	}
	return b.String()
}

// EscapeToken encodes one reference token of a JSON Pointer (RFC 6901 section 3): a member name as a
// pointer names it.
func EscapeToken(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

func pointerOrRoot(p string) string {
	if p == "" {
		return "(body)"
	}
	return p
}
