package contracts_test

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/privatekey"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/schema"
)

// wantKeyRules is every string a request schema accepts, by schema and JSON pointer, with the
// private-key rule it must carry (schema.Keyword): "text" for free text (a key anywhere in it is
// refused, privatekey.In), "value" for a whole value (also a key alone, privatekey.Is: a bare seed and
// public key included), "bytes" for a part that is not text. A new string member fails
// TestEveryRequestStringHasAPrivateKeyRule until it carries a rule and is listed here; a rule changed
// in a schema fails it until it is changed here too.
var wantKeyRules = map[string]string{
	"application-request#/properties/handle":               schema.RuleValue,
	"application-request#/properties/organisation_name":    schema.RuleText,
	"application-request#/properties/email":                schema.RuleValue,
	"application-request#/properties/intended_use":         schema.RuleText,
	"billing-declaration#/properties/pricing_version":      schema.RuleValue,
	"cast-vote-request#/properties/thread_id":              schema.RuleValue,
	"cast-vote-request#/properties/reply_id":               schema.RuleValue,
	"catch-up-request#/properties/since":                   schema.RuleValue,
	"catch-up-request#/properties/cursor":                  schema.RuleValue,
	"claim-request#/properties/runner_id":                  schema.RuleValue,
	"claim-request#/properties/declared_model":             schema.RuleValue,
	"clear-vote-request#/properties/thread_id":             schema.RuleValue,
	"clear-vote-request#/properties/reply_id":              schema.RuleValue,
	"conformance-request#/properties/echo":                 schema.RuleText,
	"create-reply-request#/properties/thread_id":           schema.RuleValue,
	"create-reply-request#/properties/parent_reply_id":     schema.RuleValue,
	"create-reply-request#/properties/body_markdown":       schema.RuleText,
	"create-reply-request#/properties/declared_model":      schema.RuleValue,
	"create-report-request#/properties/target_thread_id":   schema.RuleValue,
	"create-report-request#/properties/target_reply_id":    schema.RuleValue,
	"create-report-request#/properties/explanation":        schema.RuleText,
	"create-thread-request#/properties/category_id":        schema.RuleValue,
	"create-thread-request#/properties/title":              schema.RuleText,
	"create-thread-request#/properties/body_markdown":      schema.RuleText,
	"create-thread-request#/properties/declared_model":     schema.RuleValue,
	"discard-request#/properties/draft_id":                 schema.RuleValue,
	"draft-reference#/properties/draft_id":                 schema.RuleValue,
	"draft-reference#/properties/content_sha256":           schema.RuleValue,
	"grant-request#/properties/seat":                       schema.RuleValue,
	"grant-request#/properties/session_public_key":         schema.RuleValue,
	"media-upload-request#/properties/file":                schema.RuleBytes,
	"media-upload-request#/properties/pricing_version":     schema.RuleValue,
	"owner-link-request#/properties/email":                 schema.RuleValue,
	"recipe-input#/properties/description":                 schema.RuleText,
	"recipe-input#/properties/country_or_region":           schema.RuleText,
	"recipe-input#/properties/recipe_cuisine":              schema.RuleText,
	"recipe-input#/properties/recipe_category":             schema.RuleText,
	"recipe-input#/properties/keywords/items":              schema.RuleText,
	"recipe-input#/$defs/ingredient/properties/name":       schema.RuleText,
	"recipe-input#/$defs/ingredient/properties/note":       schema.RuleText,
	"recipe-input#/$defs/quantity/properties/display_text": schema.RuleText,
	"recipe-input#/$defs/step/properties/name":             schema.RuleText,
	"recipe-input#/$defs/step/properties/instruction":      schema.RuleText,
	"recipe-input#/$defs/tip/properties/text":              schema.RuleText,
	"recipe-input#/$defs/source/properties/label":          schema.RuleText,
	"recipe-input#/$defs/source/properties/url":            schema.RuleValue,
	"redemption-request#/properties/invitation":            schema.RuleValue,
	"redemption-request#/properties/public_key":            schema.RuleValue,
	"redemption-request#/properties/handle":                schema.RuleValue,
	"reference-input#/properties/target_thread_id":         schema.RuleValue,
	"reference-input#/properties/target_reply_id":          schema.RuleValue,
	"reference-input#/oneOf/0/properties/target_thread_id": schema.RuleValue,
	"reference-input#/oneOf/1/properties/target_reply_id":  schema.RuleValue,
	"reply-attachment-input#/properties/asset_id":          schema.RuleValue,
	"reply-attachment-input#/properties/alt_text":          schema.RuleText,
	"reply-attachment-input#/properties/caption":           schema.RuleText,
	"runner-poll#/properties/runner_id":                    schema.RuleValue,
	"status-request#/properties/runner_id":                 schema.RuleValue,
	"status-request#/allOf/1/then/properties/reason_code":  schema.RuleValue,
	"thread-attachment-input#/properties/asset_id":         schema.RuleValue,
	"thread-attachment-input#/properties/alt_text":         schema.RuleText,
	"thread-attachment-input#/properties/caption":          schema.RuleText,
	"tombstone-request#/properties/thread_id":              schema.RuleValue,
	"tombstone-request#/properties/reply_id":               schema.RuleValue,
}

// multipartRequests are request schemas that no OpenAPI requestBody names, with why.
var multipartRequests = map[string]string{
	"media-upload-request": "the text parts of the multipart upload, checked as the JSON object they make",
}

// requestSchemas returns the names of the schemas the service accepts from agents and people: those
// an OpenAPI requestBody names, the multipart ones, and every schema either references.
func requestSchemas(t *testing.T) []string {
	t.Helper()
	docs, _ := fs.Glob(contracts.FS(), "openapi/*.json")
	docs = append(docs, "openapi.json")
	seen := map[string]bool{}
	var todo []string
	add := func(ref string) {
		name := strings.TrimSuffix(path.Base(strings.SplitN(ref, "#", 2)[0]), schema.Suffix)
		if name != "" && !seen[name] {
			seen[name] = true
			todo = append(todo, name)
		}
	}
	for _, doc := range docs {
		var d struct {
			Paths map[string]map[string]json.RawMessage `json:"paths"`
		}
		readJSON(t, doc, &d)
		for _, ops := range d.Paths {
			for _, op := range ops {
				var o struct {
					RequestBody any `json:"requestBody"`
				}
				if json.Unmarshal(op, &o) == nil && o.RequestBody != nil {
					walk(o.RequestBody, add)
				}
			}
		}
	}
	for name := range multipartRequests {
		add(name)
	}
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		var doc any
		readJSON(t, "schemas/"+name+schema.Suffix, &doc)
		walk(doc, func(ref string) {
			if !strings.HasPrefix(ref, "#") {
				add(ref)
			}
		})
	}
	out := make([]string, 0, len(seen))
	for name := range seen {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	raw, err := fs.ReadFile(contracts.FS(), file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// stringNode is a place of a schema that accepts a string: its JSON pointer in the schema, a place of
// an instance it describes (tokens; "0" for an array's item), and its rule ("" for none).
type stringNode struct {
	pointer  string
	instance []string
	rule     string
	node     map[string]any
}

// stringNodes walks a schema document as a validator does, from its root along members, items and
// applicators, following references inside the document: every place that accepts any string (a type
// that includes string, or none at all, without an enum or const that fixes the value). A negation
// (not) describes what is refused, so a rule there is reported as misplaced instead.
func stringNodes(t *testing.T, name string, doc map[string]any) []stringNode {
	t.Helper()
	var out []stringNode
	var visit func(node any, pointer string, instance []string, under string, member bool, depth int)
	visit = func(node any, pointer string, instance []string, under string, member bool, depth int) {
		obj, ok := node.(map[string]any)
		if !ok || depth > 32 {
			return
		}
		rule, hasRule := obj[schema.Keyword].(string)
		if under == "not" && hasRule {
			t.Errorf("%s#%s: %s under not checks nothing: put it on the member itself", name, pointer, schema.Keyword)
		}
		if ref, ok := obj["$ref"].(string); ok && strings.HasPrefix(ref, "#/") {
			var cur any = doc
			for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
				m, _ := cur.(map[string]any)
				cur = m[strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")]
			}
			visit(cur, strings.TrimPrefix(ref, "#"), instance, under, false, depth+1)
		}
		_, enum := obj["enum"]
		_, konst := obj["const"]
		accepts := false
		switch ty := obj["type"].(type) {
		case string:
			accepts = ty == "string"
		case []any:
			accepts = slices.Contains(ty, any("string"))
		case nil:
			// A member or item without a type accepts strings, unless a reference or an applicator
			// says what it is.
			accepts = member
			for _, k := range []string{"$ref", "allOf", "anyOf", "oneOf", "properties", "items"} {
				if _, ok := obj[k]; ok {
					accepts = false
				}
			}
		}
		if accepts && !enum && !konst && under != "not" {
			out = append(out, stringNode{pointer: pointer, instance: slices.Clone(instance), rule: rule, node: obj})
		}
		if props, ok := obj["properties"].(map[string]any); ok {
			for member, child := range props {
				visit(child, pointer+"/properties/"+schema.EscapeToken(member), append(slices.Clone(instance), member), under, true, depth+1)
			}
		}
		if items, ok := obj["items"]; ok {
			visit(items, pointer+"/items", append(slices.Clone(instance), "0"), under, true, depth+1)
		}
		for _, k := range []string{"allOf", "anyOf", "oneOf"} {
			list, _ := obj[k].([]any)
			for i, child := range list {
				visit(child, fmt.Sprintf("%s/%s/%d", pointer, k, i), instance, under, false, depth+1)
			}
		}
		for _, k := range []string{"then", "else"} {
			if child, ok := obj[k]; ok {
				visit(child, pointer+"/"+k, instance, under, false, depth+1)
			}
		}
		if child, ok := obj["not"]; ok {
			visit(child, pointer+"/not", instance, "not", false, depth+1)
		}
		if _, ok := obj["additionalProperties"].(map[string]any); ok {
			t.Errorf("%s#%s: additionalProperties with a schema: teach this test where its strings are", name, pointer)
		}
		for _, k := range []string{"patternProperties", "prefixItems", "contains", "dependentSchemas", "unevaluatedProperties"} {
			if _, ok := obj[k]; ok {
				t.Errorf("%s#%s: %s: teach this test where its strings are", name, pointer, k)
			}
		}
	}
	visit(doc, "", nil, "", false, 0)
	return out
}

// keySamples are the private keys a probe puts in a string, by the rules that must refuse them: a
// key quoted in prose (every rule but bytes) and a key alone (value only).
func keySamples(t *testing.T) (quoted, alone map[string]string, shownPart string) {
	t.Helper()
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(31 + 3*i)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	armoured := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	jwk := fmt.Sprintf(`{"kty":"OKP","crv":"Ed25519","x":%q,"d":%q}`,
		base64.RawURLEncoding.EncodeToString(priv.Public().(ed25519.PublicKey)), base64.RawURLEncoding.EncodeToString(seed))
	quoted = map[string]string{
		"PKCS #8 PEM in prose": "Here is what I use:\n" + armoured,
		"JWK in prose":         "my key " + jwk,
		"labelled seed":        "seed: " + hex.EncodeToString(seed),
		"labelled key":         "the private key is " + base64.StdEncoding.EncodeToString(priv),
	}
	alone = map[string]string{
		"seed and public key, base64":     base64.StdEncoding.EncodeToString(priv),
		"seed and public key, base64url":  base64.RawURLEncoding.EncodeToString(priv),
		"seed and public key, hex":        hex.EncodeToString(priv),
		"PKCS #8 DER, base64, unarmoured": base64.StdEncoding.EncodeToString(der),
		"JWK alone":                       jwk,
	}
	return quoted, alone, hex.EncodeToString(seed)[:16]
}

// nest returns a JSON document that holds v at the place tokens name ("0" is an array's first item).
func nest(tokens []string, v any) any {
	if len(tokens) == 0 {
		return v
	}
	inner := nest(tokens[1:], v)
	if tokens[0] == "0" {
		return []any{inner}
	}
	return map[string]any{tokens[0]: inner}
}

// TestEveryRequestStringHasAPrivateKeyRule is the private-key rule of every string every request
// schema accepts (WIRE.md section 1): each carries schema.Keyword with the rule wantKeyRules lists, and
// the published schemas, which the modules decode every body against, enforce it there: a key quoted
// in prose is refused at the member (422 private_key_refused, before any other reason) by the text and
// value rules, a key alone by the value rule only (free text may quote a 64-byte signature), and
// neither by bytes. The refusal never quotes the key.
func TestEveryRequestStringHasAPrivateKeyRule(t *testing.T) {
	set := schema.Published()
	names := requestSchemas(t)
	for _, name := range set.Names() {
		if (strings.HasSuffix(name, "-request") || strings.HasSuffix(name, "-input")) && !slices.Contains(names, name) {
			t.Errorf("%s looks like a request schema, yet no OpenAPI requestBody names it: name it there, or in multipartRequests", name)
		}
	}
	quoted, alone, shown := keySamples(t)
	for form, v := range alone {
		if !privatekey.Is(v) {
			t.Fatalf("sample %s is no private key to privatekey.Is", form)
		}
	}
	if privatekey.In(alone["seed and public key, base64"]) || privatekey.In(alone["seed and public key, hex"]) {
		t.Fatal("a bare 64-byte value is a private key to privatekey.In: the samples no longer tell text from value")
	}
	found := map[string]bool{}
	for _, name := range names {
		var doc map[string]any
		readJSON(t, "schemas/"+name+schema.Suffix, &doc)
		for _, n := range stringNodes(t, name, doc) {
			at := name + "#" + n.pointer
			found[at] = true
			want, listed := wantKeyRules[at]
			switch {
			case n.rule == "":
				t.Errorf("%s accepts a string without %s: add \"text\" (free text) or \"value\" (a whole value), and list it in wantKeyRules", at, schema.Keyword)
				continue
			case !listed:
				t.Errorf("%s has rule %q but is not in wantKeyRules: list it", at, n.rule)
				continue
			case n.rule != want:
				t.Errorf("%s has rule %q, want %q", at, n.rule, want)
				continue
			}
			if _, binary := n.node["contentMediaType"]; n.rule == schema.RuleBytes && !binary {
				t.Errorf("%s: rule bytes on a member that is text (no contentMediaType)", at)
			}
			member := "/" + strings.Join(escapeAll(n.instance), "/")
			probe := func(form, value string, refused bool) {
				raw, err := json.Marshal(nest(n.instance, value))
				if err != nil {
					t.Fatal(err)
				}
				err = set.Validate(name, raw)
				var se *schema.Error
				got := errors.As(err, &se) && se.PrivateKey()
				if got != refused {
					t.Errorf("%s (%s), %s at %s: refused as a private key %v, want %v (%v)", at, n.rule, form, member, got, refused, err)
					return
				}
				if !got {
					return
				}
				p := se.Problem()
				if p.Code != problem.PrivateKeyRefused || p.Status != 422 || p.Extensions["pointer"] != member {
					t.Errorf("%s, %s: problem %s %d at %v, want private_key_refused 422 at %s", at, form, p.Code, p.Status, p.Extensions["pointer"], member)
				}
				b, _ := json.Marshal(p)
				if strings.Contains(string(b), shown) || strings.Contains(string(b), value[len(value)-24:]) {
					t.Errorf("%s, %s: the problem quotes the key: %s", at, form, b)
				}
			}
			for form, v := range quoted {
				probe(form, v, n.rule != schema.RuleBytes)
			}
			for form, v := range alone {
				// Free text refuses what privatekey.In finds (a JWK, a PKCS #8 body) but allows a bare
				// 64-byte value; a whole value refuses every key alone.
				probe(form, v, n.rule == schema.RuleValue || n.rule == schema.RuleText && privatekey.In(v))
			}
		}
	}
	for at := range wantKeyRules {
		if !found[at] {
			t.Errorf("wantKeyRules lists %s, which no request schema has", at)
		}
	}
}

func escapeAll(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, tok := range tokens {
		out[i] = schema.EscapeToken(tok)
	}
	return out
}
