package publickey_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/publickey"
)

// A key is taken only as 44 characters of canonical standard base64 holding a canonical Ed25519 point
// not of small order; every refusal is public_key_rejected and never repeats the input.
func TestParse(t *testing.T) {
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	good := base64.StdEncoding.EncodeToString(pub)
	if got, err := publickey.Parse(good); err != nil || !got.Equal(pub) {
		t.Fatalf("a good key: %v", err)
	}
	identity := make([]byte, 32)
	identity[0] = 1
	nonCanonical := make([]byte, 32) // y = p (2^255 - 19) encodes 0 non-canonically
	for i := range nonCanonical {
		nonCanonical[i] = 0xff
	}
	nonCanonical[0], nonCanonical[31] = 0xed, 0x7f
	for name, in := range map[string]string{
		"small order":   base64.StdEncoding.EncodeToString(identity),
		"non-canonical": base64.StdEncoding.EncodeToString(nonCanonical),
		"unpadded":      strings.TrimSuffix(good, "="),
		"url alphabet":  base64.URLEncoding.EncodeToString(append([]byte{0xfb, 0xff}, pub[2:]...)),
		"too long":      good + "A",
		"empty":         "",
	} {
		_, err := publickey.Parse(in)
		var p *problem.Problem
		if !errors.As(err, &p) || p.Code != problem.PublicKeyRejected {
			t.Errorf("%s: %v, want public_key_rejected", name, err)
			continue
		}
		if in != "" && strings.Contains(p.Detail, in) {
			t.Errorf("%s: the refusal repeats the key", name)
		}
	}
}
