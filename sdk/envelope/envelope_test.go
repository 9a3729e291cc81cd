package envelope_test

import (
	"strings"
	"testing"

	"github.com/svcforum/svc/sdk/envelope"
)

func validFields() envelope.Fields {
	return envelope.Fields{
		Method:         "POST",
		Target:         "/agent-api/v1/threads?x=1",
		AgentID:        "0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5b",
		KeyID:          "ed25519:a1",
		Timestamp:      "1767225600",
		Nonce:          "AAECAwQFBgcICQoLDA0ODw",
		IdempotencyKey: "idem-1",
		BodySHA256:     envelope.BodySHA256([]byte("{}")),
	}
}

func TestCanonicalIsExactlyNineLines(t *testing.T) {
	got := validFields().Canonical()
	want := "svc-sig-v1\nPOST\n/agent-api/v1/threads?x=1\n0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5b\ned25519:a1\n" +
		"1767225600\nAAECAwQFBgcICQoLDA0ODw\nidem-1\n" +
		"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
	if got != want {
		t.Fatalf("canonical:\n%q\nwant\n%q", got, want)
	}

	f := validFields()
	f.Method, f.IdempotencyKey, f.BodySHA256 = "GET", "", envelope.BodySHA256(nil)
	got = f.Canonical()
	if !strings.Contains(got, "\nAAECAwQFBgcICQoLDA0ODw\n\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") {
		t.Fatalf("GET canonical lacks the empty idempotency line and the empty-body hash: %q", got)
	}
	if strings.HasSuffix(got, "\n") || strings.Count(got, "\n") != envelope.Lines-1 {
		t.Fatalf("GET canonical has %d newlines or a trailing one: %q", strings.Count(got, "\n"), got)
	}
}

func TestBodySHA256IsLowercaseHex(t *testing.T) {
	if got := envelope.BodySHA256(nil); got != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("empty body hash %s", got)
	}
	if got := envelope.BodySHA256([]byte("abc")); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("abc hash %s", got)
	}
}

func TestValidators(t *testing.T) {
	tests := []struct {
		name  string
		valid func(string) bool
		ok    []string
		bad   []string
	}{
		{"method", envelope.ValidMethod,
			[]string{"GET", "POST", "PUT", "DELETE", strings.Repeat("A", 32)},
			[]string{"", "get", "Post", "GET ", "M-SEARCH", strings.Repeat("A", 33), "GÉT"}},
		{"target", envelope.ValidTarget,
			[]string{"/", "/a?b=c", "/p%6Fsts?a=1&a=2", "/a?", "//x"},
			[]string{"", "a", "*", "https://h/a", "/a b", "/a\n", "/a\r", "/é", "/a\t", "/\x7f"}},
		{"agent id", envelope.ValidAgentID,
			[]string{"0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5b", "00000000-0000-0000-0000-000000000000"},
			[]string{"", "0190B1C2-D3E4-7F56-8A9B-0C1D2E3F4A5B", "0190b1c2d3e47f568a9b0c1d2e3f4a5b",
				"{0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5b}", "0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5g",
				"0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5b ", "0190b1c2_d3e4-7f56-8a9b-0c1d2e3f4a5b"}},
		{"key id", envelope.ValidKeyID,
			[]string{"k", "ed25519:a1", "A.b_c:d-0", strings.Repeat("k", 64)},
			[]string{"", strings.Repeat("k", 65), "a b", "a/b", "a\nb", "é", "a+b"}},
		{"nonce", envelope.ValidNonce,
			[]string{strings.Repeat("a", 16), "AAECAwQFBgcICQoLDA0ODw", "A-_z09" + strings.Repeat("x", 10),
				strings.Repeat("n", 128)},
			[]string{"", strings.Repeat("a", 15), strings.Repeat("n", 129), "AAECAwQFBgcICQoLDA0OD=",
				"AAECAwQFBgcICQoL+A0ODw", "AAECAwQFBgcI CQoLDA0ODw", "AAECAwQFBgcI.CQoLDA0ODw"}},
		{"idempotency key", envelope.ValidIdempotencyKey,
			[]string{"!", "~", "a:b/c?d#e", strings.Repeat("i", 255)},
			[]string{"", " ", "a b", strings.Repeat("i", 256), "a\x7f", "é", "a\tb"}},
		{"body sha256", envelope.ValidBodySHA256,
			[]string{envelope.BodySHA256(nil)},
			[]string{"", strings.ToUpper(envelope.BodySHA256(nil)), envelope.BodySHA256(nil)[:63]}},
		{"timestamp", func(s string) bool { _, ok := envelope.ParseTimestamp(s); return ok },
			[]string{"0", "1", "1767225600", "1767225600000", "9223372036854775807"},
			[]string{"", "0123", "00", "+1", "-1", "1.5", "1e9", " 1", "1 ", "9223372036854775808",
				"99999999999999999999", "0x10", "１"}},
	}
	for _, tt := range tests {
		for _, s := range tt.ok {
			if !tt.valid(s) {
				t.Errorf("%s %q refused", tt.name, s)
			}
		}
		for _, s := range tt.bad {
			if tt.valid(s) {
				t.Errorf("%s %q accepted", tt.name, s)
			}
		}
	}
}

func TestIdempotencyKeyRule(t *testing.T) {
	for method, want := range map[string]envelope.Presence{
		"POST": envelope.Required, "PUT": envelope.Required, "GET": envelope.Forbidden,
		"HEAD": envelope.Forbidden, "DELETE": envelope.Optional, "PATCH": envelope.Optional,
	} {
		if got := envelope.IdempotencyKeyRule(method); got != want {
			t.Errorf("%s: %v, want %v", method, got, want)
		}
	}
}

func TestFieldsValid(t *testing.T) {
	if !validFields().Valid() {
		t.Fatal("valid fields refused")
	}
	edits := map[string]func(*envelope.Fields){
		"newline in nonce":      func(f *envelope.Fields) { f.Nonce += "\n" },
		"POST without idem key": func(f *envelope.Fields) { f.IdempotencyKey = "" },
		"GET with idem key":     func(f *envelope.Fields) { f.Method = "GET" },
		"no body hash":          func(f *envelope.Fields) { f.BodySHA256 = "" },
		"bad timestamp":         func(f *envelope.Fields) { f.Timestamp = "01" },
		"bad agent":             func(f *envelope.Fields) { f.AgentID = "x" },
		"bad key":               func(f *envelope.Fields) { f.KeyID = "" },
		"bad target":            func(f *envelope.Fields) { f.Target = "x" },
		"bad method":            func(f *envelope.Fields) { f.Method = "post" },
		"DELETE bad idem":       func(f *envelope.Fields) { f.Method, f.IdempotencyKey = "DELETE", "a b" },
	}
	for name, edit := range edits {
		f := validFields()
		edit(&f)
		if f.Valid() {
			t.Errorf("%s: accepted", name)
		}
	}
	f := validFields()
	f.Method, f.IdempotencyKey = "DELETE", ""
	if !f.Valid() {
		t.Error("DELETE without an idempotency key refused")
	}
}

func TestFormatSignature(t *testing.T) {
	got := envelope.FormatSignature(make([]byte, 64))
	if len(got) != len("svc-sig-v1 ")+88 || !strings.HasPrefix(got, "svc-sig-v1 AAAA") || !strings.HasSuffix(got, "==") {
		t.Fatalf("FormatSignature = %q", got)
	}
}
