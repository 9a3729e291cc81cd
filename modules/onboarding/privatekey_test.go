package onboarding_test

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/onboarding"
	"github.com/svcforum/svc/testkit"
)

// applicationKeys are an application's fields holding a private key, each in a form its rule refuses:
// free text (organisation_name, intended_use) a key quoted anywhere in it, a whole value (handle,
// email) a key alone, the bare seed and public key included. secret is a part of the key that a
// refusal must never echo.
func applicationKeys(t testing.TB) (fields map[string][]string, secret string) {
	t.Helper()
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(100 + i)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8 := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	jwk := fmt.Sprintf(`{"kty":"OKP","crv":"Ed25519","x":%q,"d":%q}`,
		base64.RawURLEncoding.EncodeToString(priv.Public().(ed25519.PublicKey)), base64.RawURLEncoding.EncodeToString(seed))
	bare := base64.StdEncoding.EncodeToString(priv)
	text := []string{"Our agent's key, for the record:\n" + pkcs8, "The key is " + jwk, "private key: " + bare}
	return map[string][]string{
		"intended_use":      text,
		"organisation_name": {"Lentil Lab " + jwk, "Lentil Lab, seed " + hex.EncodeToString(seed)},
		"handle":            {bare},
		"email":             {bare, hex.EncodeToString(priv)},
	}, base64.RawURLEncoding.EncodeToString(seed)[:16]
}

// TestApplicationPrivateKeyRefused: a private key in any field of an application, by the API or the
// form, is 422 private_key_refused naming the field; nothing is stored or mailed (so the operator's
// application list never shows it) and the answer never echoes it. The form shows the other fields
// again, the one that held the key empty, with the reason beside it. A key typed as a sign-in address
// is refused alike.
func TestApplicationPrivateKeyRefused(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		w := newWorld(t, dialect, onboarding.DefaultConfig())
		fields, secret := applicationKeys(t)
		good := map[string]string{"handle": "dal-bot", "organisation_name": "Lentil Lab", "email": "ana@example.org",
			"setup_scope": "forum", "intended_use": "Answer questions about dal."}
		for field, values := range fields {
			for _, v := range values {
				body := map[string]string{}
				for k, s := range good {
					body[k] = s
				}
				body[field] = v
				raw, err := json.Marshal(body)
				if err != nil {
					t.Fatal(err)
				}
				r := w.apply(t, string(raw))
				testkit.Expect(t, r, http.StatusUnprocessableEntity, string(problem.PrivateKeyRefused))
				if p, _ := r.JSON(t)["pointer"].(string); p != "/"+field {
					t.Errorf("%s: pointer %q; body %s", field, p, testkit.Short(r.Body))
				}
				if strings.Contains(string(r.Body), secret) || strings.Contains(string(r.Body), v[len(v)-20:]) {
					t.Fatalf("%s: the refusal echoes the key: %s", field, r.Body)
				}
			}
		}

		b := &browser{w: w}
		_, token := b.get(t, onboarding.FormPath)
		form := url.Values{"csrf_token": {token}}
		for k, s := range good {
			form.Set(k, s)
		}
		form.Set("intended_use", fields["intended_use"][0])
		r := b.post(t, onboarding.FormPath, form)
		expectPage(t, r, http.StatusUnprocessableEntity, "")
		contains(t, r, `value="dal-bot"`, `value="Lentil Lab"`, `value="ana@example.org"`, `id="intended_use-error"`, "held a private key")
		lacks(t, r, "PRIVATE KEY", secret, "Our agent")

		r = b.askSignIn(t, fields["email"][0])
		expectPage(t, r, http.StatusUnprocessableEntity, "")
		lacks(t, r, fields["email"][0][:20])

		if n := w.count(t, "onboarding_applications", ""); n != 0 {
			t.Fatalf("%d applications stored after refusals", n)
		}
		if n := w.count(t, "onboarding_mail", ""); n != 0 {
			t.Fatalf("%d messages after refusals", n)
		}
	})
}
