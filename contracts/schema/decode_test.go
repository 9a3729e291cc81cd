package schema_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/schema"
)

// testSet compiles a schema with nested objects, arrays, integers and a relative $ref, so the decoder
// is exercised beyond the published shapes.
func testSet(t testing.TB) *schema.Set {
	t.Helper()
	fsys := fstest.MapFS{
		"s/billing.schema.json": {Data: []byte(`{
			"$schema": "https://json-schema.org/draft/2020-12/schema",
			"type": "object", "additionalProperties": false,
			"required": ["pricing_version", "max_credit_cost"],
			"properties": {
				"pricing_version": {"type": "string", "minLength": 1, "maxLength": 64},
				"max_credit_cost": {"type": "integer", "minimum": 0, "maximum": 1000000000000}
			}}`)},
		"s/post.schema.json": {Data: []byte(`{
			"$schema": "https://json-schema.org/draft/2020-12/schema",
			"type": "object", "additionalProperties": false,
			"required": ["title", "billing"],
			"properties": {
				"title": {"type": "string", "minLength": 1, "maxLength": 5},
				"kind": {"enum": ["a", "b"]},
				"tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
				"billing": {"$ref": "billing.schema.json"}
			}}`)},
	}
	s, err := schema.Load(fsys, "s")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type post struct {
	Title   string   `json:"title"`
	Kind    string   `json:"kind,omitempty"`
	Tags    []string `json:"tags,omitempty"`
	Billing struct {
		PricingVersion string `json:"pricing_version"`
		MaxCreditCost  int64  `json:"max_credit_cost"`
	} `json:"billing"`
}

const okBilling = `"billing":{"pricing_version":"2026-11","max_credit_cost":1000000000000}`

func TestDecodeAccepts(t *testing.T) {
	s := testSet(t)
	var p post
	if err := s.Decode("post", []byte(`{"title":"héllo","kind":"a","tags":["x"],`+okBilling+`}`), &p); err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if p.Title != "héllo" || p.Kind != "a" || p.Billing.MaxCreditCost != 1_000_000_000_000 || p.Billing.PricingVersion != "2026-11" {
		t.Fatalf("decoded %+v", p)
	}
}

func TestDecodeRefuses(t *testing.T) {
	s := testSet(t)
	cases := []struct {
		name, body, pointer, code string
	}{
		{"empty body", ``, "", "invalid_json"},
		{"not json", `{"title":`, "/title", "invalid_json"},
		{"unknown member", `{"title":"a","extra":1,` + okBilling + `}`, "/extra", "unknown_member"},
		{"case variant beside the name", `{"title":"a","TITLE":"b",` + okBilling + `}`, "/TITLE", "unknown_member"},
		{"case variant alone", `{"Title":"a",` + okBilling + `}`, "/Title", "unknown_member"},
		{"kelvin sign variant", `{"title":"a","\u212aind":"a",` + okBilling + `}`, "/\u212aind", "unknown_member"},
		{"duplicate member", `{"title":"a","title":"b",` + okBilling + `}`, "/title", "duplicate_member"},
		{"nested duplicate", `{"title":"a","billing":{"pricing_version":"v","pricing_version":"w","max_credit_cost":1}}`, "/billing/pricing_version", "duplicate_member"},
		{"invalid utf-8", "{\"title\":\"a\xff\"," + okBilling + "}", "/title", "invalid_utf8"},
		{"lone surrogate", `{"title":"\ud800",` + okBilling + `}`, "/title", "invalid_utf8"},
		{"two values", `{"title":"a",` + okBilling + `} {"title":"b",` + okBilling + `}`, "", "trailing_data"},
		{"garbage after", `{"title":"a",` + okBilling + `} garbage`, "", "trailing_data"},
		{"missing required", `{` + okBilling + `}`, "/title", "required"},
		{"nested missing", `{"title":"a","billing":{"pricing_version":"v"}}`, "/billing/max_credit_cost", "required"},
		{"null for required", `{"title":null,` + okBilling + `}`, "/title", "type"},
		{"wrong type", `{"title":1,` + okBilling + `}`, "/title", "type"},
		{"too long (code points)", `{"title":"éééééé",` + okBilling + `}`, "/title", "maxLength"},
		{"too short", `{"title":"",` + okBilling + `}`, "/title", "minLength"},
		{"enum", `{"title":"a","kind":"c",` + okBilling + `}`, "/kind", "enum"},
		{"too many items", `{"title":"a","tags":["1","2","3"],` + okBilling + `}`, "/tags", "maxItems"},
		{"item type", `{"title":"a","tags":[1],` + okBilling + `}`, "/tags/0", "type"},
		{"above maximum", `{"title":"a","billing":{"pricing_version":"v","max_credit_cost":1000000000001}}`, "/billing/max_credit_cost", "maximum"},
		{"below minimum", `{"title":"a","billing":{"pricing_version":"v","max_credit_cost":-1}}`, "/billing/max_credit_cost", "minimum"},
		{"fraction into integer", `{"title":"a","billing":{"pricing_version":"v","max_credit_cost":1.5}}`, "/billing/max_credit_cost", "type"},
		{"exponent into integer", `{"title":"a","billing":{"pricing_version":"v","max_credit_cost":1e2}}`, "/billing/max_credit_cost", "type"},
		{"2^63 into integer", `{"title":"a","billing":{"pricing_version":"v","max_credit_cost":9223372036854775808}}`, "/billing/max_credit_cost", "maximum"},
		{"deep nesting", `{"title":"a","tags":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `,` + okBilling + `}`, "", ""},
		{"array at top", `[]`, "", "type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var p post
			err := s.Decode("post", []byte(tc.body), &p)
			var se *schema.Error
			if !errors.As(err, &se) {
				t.Fatalf("Decode(%q) = %v, want *schema.Error", tc.body, err)
			}
			if tc.code == "" { // only requires a refusal, wherever the parser stops
				return
			}
			if !hasError(se.Errors, tc.pointer, tc.code) {
				t.Fatalf("errors %+v lack {pointer %q, code %q}", se.Errors, tc.pointer, tc.code)
			}
			p422 := se.Problem()
			if p422.Status != 422 || p422.Code != problem.ValidationFailed || len(p422.Errors) == 0 {
				t.Fatalf("problem %+v", p422)
			}
		})
	}
}

func TestDecodeListsEveryReason(t *testing.T) {
	s := testSet(t)
	err := s.Decode("post", []byte(`{"title":"","kind":"z","extra":true}`), new(post))
	var se *schema.Error
	if !errors.As(err, &se) {
		t.Fatalf("got %v", err)
	}
	for _, want := range [][2]string{{"/title", "minLength"}, {"/kind", "enum"}, {"/extra", "unknown_member"}, {"/billing", "required"}} {
		if !hasError(se.Errors, want[0], want[1]) {
			t.Errorf("missing %v in %+v", want, se.Errors)
		}
	}
}

func TestDecodeUnknownSchemaIsNotARefusal(t *testing.T) {
	err := testSet(t).Decode("nope", []byte(`{}`), new(post))
	var se *schema.Error
	if err == nil || errors.As(err, &se) {
		t.Fatalf("got %v, want a programming error", err)
	}
}

func hasError(errs []problem.FieldError, pointer, code string) bool {
	for _, e := range errs {
		if e.Pointer == pointer && e.Code == code && e.Message != "" {
			return true
		}
	}
	return false
}

func FuzzDecode(f *testing.F) {
	s := testSet(f)
	f.Add([]byte(`{"title":"a",` + okBilling + `}`))
	f.Add([]byte(`{"title":"a","title":"b"}`))
	f.Add([]byte("{\"title\":\"\xff\"}"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var p post
		err := s.Decode("post", raw, &p)
		var se *schema.Error
		if err != nil && !errors.As(err, &se) {
			t.Fatalf("Decode(%q) returned a non-refusal error %v", raw, err)
		}
		if err == nil && (p.Title == "" || len([]rune(p.Title)) > 5) {
			t.Fatalf("accepted %q with an out-of-bounds title %q", raw, p.Title)
		}
	})
}

// A schema may reference another by its served path, as the OpenAPI documents do, or relatively.
func TestReferencesByServedPath(t *testing.T) {
	fsys := fstest.MapFS{
		"schemas/inner.schema.json": {Data: []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"integer","minimum":0}`)},
		"schemas/served.schema.json": {Data: []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
"properties":{"n":{"$ref":"/contracts/schemas/inner.schema.json"}}}`)},
		"schemas/relative.schema.json": {Data: []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
"properties":{"n":{"$ref":"inner.schema.json"}}}`)},
	}
	set, err := schema.Load(fsys, "schemas")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"served", "relative"} {
		if err := set.Validate(name, []byte(`{"n":1}`)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if err := set.Validate(name, []byte(`{"n":-1}`)); err == nil {
			t.Errorf("%s: the referenced schema is not applied", name)
		}
	}
}

// A refusal names the rule a value broke and never quotes the value, which may be a secret (WIRE.md
// section 4): not for a pattern, a format, a const or an enum, in any schema.
func TestRefusalsNeverEchoTheValue(t *testing.T) {
	const secret = "SECRETSECRETSECRETSECRETSECRETSECRETSECRET"
	fsys := fstest.MapFS{"s/rules.schema.json": {Data: []byte(`{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type": "object",
		"properties": {
			"pattern": {"type": "string", "pattern": "^[a-z]{3}$"},
			"email": {"type": "string", "format": "email"},
			"uri": {"type": "string", "format": "uri"},
			"when": {"type": "string", "format": "date-time"},
			"const": {"const": "sigv1"},
			"enum": {"enum": ["up", "down", 1]},
			"names": {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}},
			"either": {"anyOf": [{"type": "string", "pattern": "^a$"}, {"type": "string", "format": "uuid"}]}
		}}`)}}
	set, err := schema.Load(fsys, "s")
	if err != nil {
		t.Fatal(err)
	}
	body := strings.NewReplacer("$", secret).Replace(`{"pattern":"$","email":"$","uri":"$","when":"$",
		"const":"$","enum":"$","names":{"$":1},"either":"$"}`)
	wants := map[string]string{ // by code, how the message begins
		"pattern": "the value does not match the pattern ^",
		"format":  "the value is not a valid ",
		"const":   "the value must be ",
		"enum":    "the value must be one of ",
	}
	exact := map[string]string{ // by pointer
		"/pattern":    "the value does not match the pattern ^[a-z]{3}$",
		"/email":      "the value is not a valid email",
		"/const":      `the value must be "sigv1"`,
		"/enum":       `the value must be one of "up", "down", 1`,
		"/public_key": "the value does not match the pattern ^[A-Za-z0-9+/]{43}=$",
	}
	got := map[string]int{}
	for _, s := range []struct {
		set  *schema.Set
		name string
		body string
	}{
		{set, "rules", body},
		{schema.Published(), "redemption-request", `{"invitation":"x","public_key":"` + secret + `","handle":"` + secret + `"}`},
		{schema.Published(), "application-request", `{"handle":"h` + secret + `","organisation_name":"o","email":"` + secret + `","setup_scope":"` + secret + `","intended_use":"u"}`},
	} {
		var se *schema.Error
		if err := s.set.Validate(s.name, []byte(s.body)); !errors.As(err, &se) {
			t.Fatalf("%s: %v, want a refusal", s.name, err)
		}
		for _, e := range se.Errors {
			if strings.Contains(e.Message, secret[:8]) {
				t.Errorf("%s %s: the message quotes the value: %s", s.name, e.Pointer, e.Message)
			}
			if want, ok := wants[e.Code]; ok && !strings.HasPrefix(e.Message, want) {
				t.Errorf("%s %s: message %q, want it to begin %q", s.name, e.Pointer, e.Message, want)
			}
			if want, ok := exact[e.Pointer]; ok && e.Message != want {
				t.Errorf("%s %s: message %q, want %q", s.name, e.Pointer, e.Message, want)
			}
			got[e.Code]++
		}
		if strings.Contains(se.Error(), secret[:8]) {
			t.Errorf("%s: the error quotes the value: %v", s.name, se)
		}
	}
	for code := range wants {
		if got[code] == 0 {
			t.Errorf("no %s refusal among %v", code, got)
		}
	}
}

// The schemas' private-key rules (schema.Keyword) are checked before anything else and reported alone:
// a key in a member whose format or pattern it also breaks, or inside a oneOf branch or a then, is
// 422 private_key_refused at the member; a rule under not checks nothing; an unknown rule does not load.
func TestPrivateKeyRules(t *testing.T) {
	seedAndKey := strings.Repeat("AAAA", 21) + "AA=="                         // 64 zero bytes in base64
	pem := "-----BEGIN PRIVATE KEY-----\nMC4CAQAw\n-----END PRIVATE KEY-----" // armour is enough
	fsys := fstest.MapFS{"s/keys.schema.json": {Data: []byte(`{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type": "object", "additionalProperties": false, "required": ["when"],
		"properties": {
			"email": {"type": "string", "x-private-key": "value", "format": "email"},
			"note": {"type": ["string", "null"], "x-private-key": "text", "maxLength": 5},
			"when": {"type": "string", "x-private-key": "value", "format": "date-time"},
			"list": {"type": "array", "items": {"$ref": "#/$defs/item"}},
			"either": {"oneOf": [{"type": "integer"}, {"type": "string", "x-private-key": "value", "pattern": "^[a-z]+$"}]},
			"blob": {"type": "string", "x-private-key": "bytes", "contentMediaType": "application/octet-stream"}
		},
		"$defs": {"item": {"type": "object", "properties": {"text": {"type": "string", "x-private-key": "text"}}}},
		"not": {"required": ["blob", "note"], "properties": {"note": {"type": "string", "x-private-key": "value"}}}
	}`)}}
	set, err := schema.Load(fsys, "s")
	if err != nil {
		t.Fatal(err)
	}
	for body, want := range map[string][]string{
		`{"email":"` + seedAndKey + `"}`:                                  {"/email"},
		`{"when":"` + seedAndKey + `","email":"x"}`:                       {"/when"},
		`{"note":` + quote(pem) + `,"extra":1}`:                           {"/note"},
		`{"list":[{"text":"ok"},{"text":` + quote("my key: "+pem) + `}]}`: {"/list/1/text"},
		`{"either":"` + seedAndKey + `","when":"x"}`:                      {"/either"},
		`{"note":"` + seedAndKey + `","when":"2026-01-01T00:00:00Z"}`:     nil, // free text may quote 64 bytes
		`{"blob":` + quote(pem) + `,"when":"2026-01-01T00:00:00Z"}`:       nil, // bytes are checked by their content
	} {
		err := set.Validate("keys", []byte(body))
		var se *schema.Error
		if want == nil {
			if errors.As(err, &se) && se.PrivateKey() {
				t.Errorf("%s: refused as a private key: %v", body, err)
			}
			continue
		}
		if !errors.As(err, &se) || !se.PrivateKey() {
			t.Errorf("%s: %v, want a private-key refusal", body, err)
			continue
		}
		var got []string
		for _, e := range se.Errors {
			got = append(got, e.Pointer)
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: refused at %v, want %v alone", body, got, want)
		}
		p := se.Problem()
		if p.Code != problem.PrivateKeyRefused || p.Status != 422 || p.Extensions["pointer"] != want[0] {
			t.Errorf("%s: problem %s %d %v", body, p.Code, p.Status, p.Extensions)
		}
	}

	fsys["s/keys.schema.json"] = &fstest.MapFile{Data: []byte(`{"type": "string", "x-private-key": "prose"}`)}
	if _, err := schema.Load(fsys, "s"); err == nil {
		t.Error("a schema with an unknown private-key rule loads")
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
