package sigv1_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/modules/sigv1"
)

// testdata holds the Ed25519 vectors, with their sources and licences (testdata/README.md).
const testdata = "testdata/"

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("hex %q: %v", s, err)
	}
	return b
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

type wycheproof struct {
	Algorithm     string `json:"algorithm"`
	NumberOfTests int    `json:"numberOfTests"`
	TestGroups    []struct {
		PublicKey struct {
			PK string `json:"pk"`
		} `json:"publicKey"`
		Tests []struct {
			TcID   int      `json:"tcId"`
			Msg    string   `json:"msg"`
			Sig    string   `json:"sig"`
			Result string   `json:"result"`
			Flags  []string `json:"flags"`
		} `json:"tests"`
	} `json:"testGroups"`
}

// TestWycheproof runs every Wycheproof EdDSA verification case through Verify's signature check.
func TestWycheproof(t *testing.T) {
	var w wycheproof
	readJSON(t, testdata+"wycheproof_ed25519_test.json", &w)
	if w.Algorithm != "EDDSA" {
		t.Fatalf("algorithm %q", w.Algorithm)
	}
	var valid, invalid, keys int
	for _, g := range w.TestGroups {
		pk := mustHex(t, g.PublicKey.PK)
		keys++
		// No Wycheproof key is refused at registration.
		if _, err := sigv1.ParsePublicKey(base64.StdEncoding.EncodeToString(pk)); err != nil {
			t.Errorf("Wycheproof key %x refused: %v", pk, err)
		}
		for _, tc := range g.Tests {
			want := tc.Result == "valid"
			if tc.Result != "valid" && tc.Result != "invalid" {
				t.Fatalf("tcId %d: result %q", tc.TcID, tc.Result)
			}
			if got := sigv1.VerifyMessage(pk, mustHex(t, tc.Msg), mustHex(t, tc.Sig)); got != want {
				t.Errorf("tcId %d %v: verify = %v, want %v", tc.TcID, tc.Flags, got, want)
			}
			if want {
				valid++
			} else {
				invalid++
			}
		}
	}
	if valid == 0 || invalid == 0 || valid+invalid != w.NumberOfTests {
		t.Fatalf("%d valid and %d invalid cases run; the file declares %d", valid, invalid, w.NumberOfTests)
	}
	t.Logf("Wycheproof: %d keys, %d cases: %d valid, %d invalid, all as expected", keys, valid+invalid, valid, invalid)
}

type cctvVector struct {
	Number int      `json:"number"`
	Key    string   `json:"key"`
	Sig    string   `json:"sig"`
	Msg    string   `json:"msg"`
	Flags  []string `json:"flags"`
}

// TestCCTVWeakKeysRefused: every key flagged low_order_A or non_canonical_A is refused at registration,
// and Verify never accepts a signature under it.
func TestCCTVWeakKeysRefused(t *testing.T) {
	var vs []cctvVector
	readJSON(t, testdata+"cctv_ed25519vectors.json", &vs)
	var weak, other, stdlibAccepts int
	for _, v := range vs {
		key := mustHex(t, v.Key)
		_, err := sigv1.ParsePublicKey(base64.StdEncoding.EncodeToString(key))
		sig := mustHex(t, v.Sig)
		if slices.Contains(v.Flags, "low_order_A") || slices.Contains(v.Flags, "non_canonical_A") {
			weak++
			assertProblem(t, err, problem.PublicKeyRejected, 422)
			if sigv1.VerifyMessage(key, []byte(v.Msg), sig) {
				t.Errorf("vector %d: signature under a weak key verifies", v.Number)
			}
			if ed25519.Verify(key, []byte(v.Msg), sig) {
				stdlibAccepts++
			}
			continue
		}
		other++
		if err != nil {
			t.Errorf("vector %d %v: key refused: %v", v.Number, v.Flags, err)
		}
	}
	if weak == 0 || stdlibAccepts == 0 {
		t.Fatalf("weak keys %d, of which crypto/ed25519 alone accepts %d: the test shows nothing", weak, stdlibAccepts)
	}
	t.Logf("CCTV: %d vectors; %d with a weak key, all refused (crypto/ed25519 alone accepts %d of their "+
		"signatures); %d others, keys accepted", len(vs), weak, stdlibAccepts, other)
}

func assertProblem(t *testing.T, err error, code problem.Code, status int) *problem.Problem {
	t.Helper()
	var p *problem.Problem
	if !errors.As(err, &p) {
		t.Fatalf("error %v is not a problem, want %s", err, code)
	}
	if p.Code != code || p.Status != status {
		t.Fatalf("problem %s %d (%s), want %s %d", p.Code, p.Status, p.Detail, code, status)
	}
	return p
}

func TestParsePublicKey(t *testing.T) {
	good := "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=" // RFC 8032 TEST 1
	pub, err := sigv1.ParsePublicKey(good)
	if err != nil || hex.EncodeToString(pub) != "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a" {
		t.Fatalf("RFC 8032 TEST 1 key: %x, %v", pub, err)
	}
	identity := make([]byte, 32)
	identity[0] = 1
	b64 := base64.StdEncoding.EncodeToString
	refused := map[string]string{
		"identity 01 00..00": b64(identity),
		"zero":               b64(make([]byte, 32)),
		"small order c7176a70..03fa (scenario 4)": b64(mustHex(t,
			"c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa")),
		"non-canonical edff..7f (scenario 4)": b64(mustHex(t,
			"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f")),
		"not on the curve": b64(mustHex(t,
			"0200000000000000000000000000000000000000000000000000000000000000")),
		"31 bytes":                 b64(make([]byte, 31)),
		"33 bytes":                 b64(make([]byte, 33)),
		"64 bytes":                 b64(make([]byte, 64)),
		"raw (unpadded) base64":    strings.TrimSuffix(good, "="),
		"URL alphabet":             strings.NewReplacer("/", "_", "+", "-").Replace(good),
		"leading space":            " " + good[1:],
		"trailing newline":         good[:43] + "\n",
		"non-canonical padding":    good[:42] + "p=", // "p" is "o" with an unused bit set
		"hex":                      "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
		"empty":                    "",
		"padding in the middle":    good[:20] + "=" + good[21:],
		"45 characters":            good + "=",
		"non-ASCII":                good[:42] + "é",
		"double padding, 32 bytes": good[:42] + "==",
	}
	for name, in := range refused {
		t.Run(name, func(t *testing.T) {
			pub, err := sigv1.ParsePublicKey(in)
			if pub != nil {
				t.Fatalf("returned a key")
			}
			p := assertProblem(t, err, problem.PublicKeyRejected, 422)
			if p.Detail == "" || (len(in) > 4 && strings.Contains(p.Detail, in)) {
				t.Fatalf("detail %q is empty or echoes the input", p.Detail)
			}
		})
	}
}

func TestRFC8032(t *testing.T) {
	tests := []struct{ pk, msg, sig string }{
		{"d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
			"e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"},
		{"3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
			"92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"},
		{"fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
			"6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"},
	}
	for i, tt := range tests {
		pk, msg, sig := mustHex(t, tt.pk), mustHex(t, tt.msg), mustHex(t, tt.sig)
		if !sigv1.VerifyMessage(pk, msg, sig) {
			t.Errorf("RFC 8032 TEST %d does not verify", i+1)
		}
		if sigv1.VerifyMessage(pk, append(msg, 0), sig) {
			t.Errorf("RFC 8032 TEST %d verifies another message", i+1)
		}
	}
}

func TestIdentityKeyForgeryRefused(t *testing.T) {
	identity := make([]byte, 32)
	identity[0] = 1
	sig := make([]byte, 64)
	sig[0] = 1
	msg := []byte("any message at all")
	if !ed25519.Verify(identity, msg, sig) {
		t.Fatal("crypto/ed25519 refuses the identity forgery: this test no longer shows anything")
	}
	if sigv1.VerifyMessage(identity, msg, sig) {
		t.Fatal("the identity-key forgery verifies")
	}
}

func TestVerifyNeverPanics(t *testing.T) {
	sig := make([]byte, 64)
	for _, n := range []int{0, 1, 31, 33, 64} {
		if sigv1.VerifyMessage(make([]byte, n), []byte("m"), sig) {
			t.Errorf("key of %d bytes verifies", n)
		}
	}
	pub := mustHex(t, "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
	for _, n := range []int{0, 63, 65} {
		if sigv1.VerifyMessage(pub, []byte("m"), make([]byte, n)) {
			t.Errorf("signature of %d bytes verifies", n)
		}
	}
	if sigv1.Verify(nil, sigv1.Envelope{}) {
		t.Error("empty envelope verifies")
	}
}
