package sdk

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func loadVectors(t *testing.T) vectors {
	t.Helper()
	b, err := os.ReadFile("testdata/svc-sig-v1-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestSelfTestPassesOnThePublishedVectors(t *testing.T) {
	if err := checkVectors(loadVectors(t)); err != nil {
		t.Fatal(err)
	}
}

// A vector set this client disagrees with must fail the self-test: an altered accepted signature, an
// altered canonical string, and a tampered case whose signature was made to verify.
func TestSelfTestFailsOnAlteredVectors(t *testing.T) {
	alter := map[string]func(v *vectors){
		"accepted signature": func(v *vectors) {
			for i, c := range v.Cases {
				if c.Expected.Status == 200 {
					h := c.Request.Headers
					h["Svc-Signature"] = strings.Replace(h["Svc-Signature"], "A", "B", 1)
					if h["Svc-Signature"] == c.Request.Headers["Svc-Signature"] {
						h["Svc-Signature"] = strings.Replace(h["Svc-Signature"], "a", "b", 1)
					}
					v.Cases[i] = c
					return
				}
			}
		},
		"canonical": func(v *vectors) {
			for i, c := range v.Cases {
				if c.Expected.Code == "signature_mismatch" && c.Canonical != nil {
					s := *c.Canonical + "x"
					v.Cases[i].Canonical = &s
					return
				}
			}
		},
		"tampered verifies": func(v *vectors) {
			var ok vector
			for _, c := range v.Cases {
				if c.Expected.Status == 200 {
					ok = c
					break
				}
			}
			ok.Name, ok.Expected.Status, ok.Expected.Code = "forged", 401, "signature_mismatch"
			v.Cases = append(v.Cases, ok)
		},
		"no accepted case": func(v *vectors) {
			var kept []vector
			for _, c := range v.Cases {
				if c.Expected.Status != 200 {
					kept = append(kept, c)
				}
			}
			v.Cases = kept
		},
	}
	for name, f := range alter {
		t.Run(name, func(t *testing.T) {
			v := loadVectors(t)
			f(&v)
			if err := checkVectors(v); err == nil {
				t.Fatal("self-test passed on altered vectors")
			}
		})
	}
}
