package schema

import (
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/message"

	"github.com/svcforum/svc/contracts/privatekey"
	"github.com/svcforum/svc/contracts/problem"
)

// Keyword is the schemas' own keyword that says how a string member is searched for a private key,
// which svc refuses wherever one arrives (422 private_key_refused, WIRE.md section 1). Every string a
// request schema accepts carries it (the contract tests refuse one without it), and Validate applies
// it before anything else: a rule written once, in the document a client reads, enforced for every
// module that decodes a body against the schema, and reported alone, whatever else the body breaks
// (a key in a mail address is a private key, not a malformed address).
const Keyword = "x-private-key"

// The rules Keyword names.
const (
	// RuleText is free text (a post, a description, a name a person typed), which may quote anything:
	// refused when a private key is anywhere in it (privatekey.In). An unlabelled 64-byte value is
	// allowed in text: agents quote signatures.
	RuleText = "text"
	// RuleValue is a whole value (an identifier, a token, a public key, a model's name): refused when it
	// is a private key (privatekey.Is), a bare 64-byte seed and public key included, or holds one.
	RuleValue = "value"
	// RuleBytes stands for bytes that are not text (an uploaded image's part, contentMediaType given):
	// the module reads them by their content, and the member's string is only a placeholder.
	RuleBytes = "bytes"
)

// keyVocabularyURL names the vocabulary of Keyword; it is never fetched.
const keyVocabularyURL = "https://contracts.svc.invalid/vocab/private-key"

// keyCompiler compiles the schemas' private-key rules: Keyword as a jsonschema vocabulary, whose
// meta-schema refuses a rule it does not know, so that a schema with a misspelt rule does not load.
func keyCompiler() (*jsonschema.Compiler, error) {
	meta, err := jsonschema.UnmarshalJSON(strings.NewReader(`{"properties": {"` + Keyword + `": {"enum": ["` +
		RuleText + `", "` + RuleValue + `", "` + RuleBytes + `"]}}}`))
	if err != nil {
		return nil, fmt.Errorf("parse the %s vocabulary: %w", Keyword, err)
	}
	mc := jsonschema.NewCompiler()
	if err := mc.AddResource(keyVocabularyURL, meta); err != nil {
		return nil, fmt.Errorf("add the %s vocabulary: %w", Keyword, err)
	}
	sch, err := mc.Compile(keyVocabularyURL)
	if err != nil {
		return nil, fmt.Errorf("compile the %s vocabulary: %w", Keyword, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.RegisterVocabulary(&jsonschema.Vocabulary{URL: keyVocabularyURL, Schema: sch, Compile: compileKeyRule})
	// The schemas name no $vocabulary: without this, a registered vocabulary is not applied.
	c.AssertVocabs()
	return c, nil
}

// keyRules returns the private-key rules of a schema document alone: where its values are (members,
// items, definitions, references) and each one's Keyword, without any other assertion. A validator
// stops at a value's first broken rule (its type, format or enum), so the rules are checked apart,
// first. A value that several subschemas describe (allOf, anyOf, oneOf, then, else) gets the rules of
// all of them; a condition (if) and a negation (not) describe no value to check.
func keyRules(node any) any {
	obj, ok := node.(map[string]any)
	if !ok {
		return true // a boolean schema: false would refuse what the full schema refuses anyway
	}
	out := map[string]any{}
	var all []any
	for k, v := range obj {
		switch k {
		case "$schema", "$id", "$anchor", "$ref", "$dynamicRef", "$dynamicAnchor", Keyword:
			out[k] = v
		case "$defs", "properties", "patternProperties":
			m, _ := v.(map[string]any)
			sub := make(map[string]any, len(m))
			for name, child := range m {
				sub[name] = keyRules(child)
			}
			out[k] = sub
		case "items", "additionalProperties", "contains":
			out[k] = keyRules(v)
		case "prefixItems":
			list, _ := v.([]any)
			sub := make([]any, len(list))
			for i, child := range list {
				sub[i] = keyRules(child)
			}
			out[k] = sub
		case "allOf", "anyOf", "oneOf":
			list, _ := v.([]any)
			for _, child := range list {
				all = append(all, keyRules(child))
			}
		case "then", "else":
			all = append(all, keyRules(v))
		}
	}
	if len(all) > 0 {
		out["allOf"] = all
	}
	return out
}

func compileKeyRule(_ *jsonschema.CompilerContext, obj map[string]any) (jsonschema.SchemaExt, error) {
	rule, ok := obj[Keyword].(string)
	if !ok || rule == RuleBytes {
		return nil, nil
	}
	return keyRule(rule), nil
}

// keyRule is a compiled Keyword.
type keyRule string

// Validate reports a string that holds a private key by the rule; other types hold none.
func (r keyRule) Validate(ctx *jsonschema.ValidatorContext, v any) {
	s, ok := v.(string)
	if !ok {
		return
	}
	if privatekey.In(s) || r == RuleValue && privatekey.Is(s) {
		ctx.AddError(&keyRefused{})
	}
}

// checkKeys returns the members of inst that hold a private key by the rules of schema name, or nil.
func (s *Set) checkKeys(name string, inst any) ([]problem.FieldError, error) {
	keys, ok := s.keys[name]
	if !ok {
		return nil, fmt.Errorf("schema %q is not published", name)
	}
	err := keys.Validate(inst)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, fmt.Errorf("check the private-key rules of %s: %w", name, err)
	}
	return keyErrors(flatten(ve)), nil
}

// keyRefused is the validator's error for a private key; flatten turns it into a FieldError of code
// private_key_refused.
type keyRefused struct{}

func (*keyRefused) KeywordPath() []string { return []string{Keyword} }

func (*keyRefused) LocalizedString(*message.Printer) string { return keyMessage }

// keyMessage never quotes the value: it is a secret.
const keyMessage = "the value holds a private key; it is not stored or shown again"

// keyErrors returns the entries of errs that are private keys, or nil.
func keyErrors(errs []problem.FieldError) []problem.FieldError {
	var out []problem.FieldError
	for _, fe := range errs {
		if fe.Code == string(problem.PrivateKeyRefused) {
			out = append(out, fe)
		}
	}
	return out
}

// PrivateKey reports whether the payload was refused for a private key (its entries are then only
// those, of code private_key_refused).
func (e *Error) PrivateKey() bool {
	return len(e.Errors) > 0 && e.Errors[0].Code == string(problem.PrivateKeyRefused)
}

// keyProblem is the 422 private_key_refused answer: the first member holding a key as "pointer" (as the
// modules' own refusals name it), and every one in errors.
func (e *Error) keyProblem() *problem.Problem {
	at := e.Errors[0].Pointer
	p := problem.Newf(problem.PrivateKeyRefused, "%s holds a private key. Private keys are never accepted, in any form or place: nothing was stored. Remove it, and treat the key as exposed: make a new one.", pointerOrRoot(at)).With("pointer", at)
	p.Errors = e.Errors
	return p
}
