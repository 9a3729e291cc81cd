package forum

import (
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
)

// refusedURLs holds reliability.md scenarios 35-38 first, then further edges.
var refusedURLs = []string{
	// 35: scheme and form
	"http://example.com/",
	"javascript:alert(1)",
	"https:example.com",
	"https:///x",
	"//example.com",
	// 36: userinfo and port
	"https://user@host.com/",
	"https://good.com@127.0.0.1/",
	"https://example.com:8443/",
	"https://example.com:0443/",
	// 37: addresses, including what browsers read as IPv4
	"https://127.0.0.1/",
	"https://[::1]/",
	"https://[::ffff:127.0.0.1]/",
	"https://169.254.169.254/latest/meta-data/",
	"https://10.0.0.1/",
	"https://100.64.0.1/",
	"https://[fe80::1%25eth0]/",
	"https://2130706433/",
	"https://0x7f.1/",
	"https://0177.0.0.1/",
	// 38: internal and non-public names
	"https://localhost/",
	"https://foo.localhost/",
	"https://metadata.google.internal/",
	"https://intranet/",
	"https://example.com./",
	// scheme as written
	"HTTPS://example.com/",
	"Https://example.com/",
	"https//example.com/",
	"ftp://example.com/",
	// userinfo and port edges
	"https://@example.com/",
	"https://user:pass@example.com/",
	"https://example.com:/",
	"https://example.com:80/",
	"https://example.com:443:443/",
	// more addresses
	"https://1.2.3.4/",
	"https://127.1/",
	"https://0x7f000001/",
	"https://www.example.0x10/",
	"https://foo.123/",
	"https://[2001:db8::1]:443/",
	"https://１２７.０.０.１/", // full-width digits map to 127.0.0.1
	// more names
	"https://localhost:443/",
	"https://printer.local/",
	"https://nas.localdomain/",
	"https://router.home.arpa/",
	"https://1.0.0.127.in-addr.arpa/",
	"https://x.test/",
	"https://x.invalid/",
	"https://x.onion/",
	"https://foo.intranet/",
	"https://com/",
	"https://co.uk/",
	"https://github.io/",
	"https://a..com/",
	"https://.example.com/",
	"https://a_b.com/",
	"https://-a.com/",
	"https://xn--/",
	"https://xn--zz.com/",
	"https://" + strings.Repeat("a", 64) + ".com/",
	"https://" + strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 58) + ".com/",
	// percent-encoding in the host
	"https://%65xample.com/",
	"https://ex%61mple.com/",
	"https://%C3%A9.com/",
	// characters that must never be stored
	"",
	"https://exa mple.com/",
	"https://example.com/a b",
	"https://example.com/\\x",
	"https://example.com\\@evil.com/",
	"https://example.com/\x00",
	"https://example.com/\t",
	"https://example.com/\n",
	"https://example.com/\u0085",
	"https://example.com/\u00a0",
	"https://example.com/\u3000",
	"https://example.com/\xff",
	"https://example.com/?q=\u202egnp.exe",
	"https://example.com/#\u2066",
	" https://example.com/",
	"https://example.com/%zz",
}

func TestSafePublicHTTPSURLRefused(t *testing.T) {
	for _, raw := range refusedURLs {
		got, err := SafePublicHTTPSURL(raw)
		if err == nil {
			t.Errorf("%q accepted as %q", raw, got)
			continue
		}
		var ue *URLError
		if !errors.As(err, &ue) || ue.Reason == "" {
			t.Errorf("%q: error %v is not a *URLError with a reason", raw, err)
		}
		if len(raw) > 10 && strings.Contains(err.Error(), raw) {
			t.Errorf("%q: error echoes the URL: %v", raw, err)
		}
		if got != "" {
			t.Errorf("%q: refused but returned %q", raw, got)
		}
	}
}

// longHostURL has a host of exactly 253 characters.
var longHostURL = "https://" + strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 57) + ".com/"

// acceptedURLs pairs an accepted input with its stored form.
var acceptedURLs = []struct{ raw, stored string }{
	{"https://example.com/recipe?x=1#y", "https://example.com/recipe?x=1#y"},
	{"https://www.bbc.co.uk/food", "https://www.bbc.co.uk/food"},
	{"https://EXAMPLE.com/", "https://example.com/"},
	{"https://ExAmPlE.CoM/Path?Q=1", "https://example.com/Path?Q=1"},
	{"https://exаmple.com/", "https://xn--exmple-4nf.com/"}, // Cyrillic а
	{"https://xn--exmple-4nf.com/", "https://xn--exmple-4nf.com/"},
	{"https://bücher.de/", "https://xn--bcher-kva.de/"},
	{"https://example.com:443/x", "https://example.com/x"},
	{"https://example.com", "https://example.com"},
	{"https://example.org/", "https://example.org/"},
	{"https://someone.blogspot.com/2020/01/soup.html", "https://someone.blogspot.com/2020/01/soup.html"},
	{"https://123.example.com/", "https://123.example.com/"},
	{"https://0x7f.example.com/", "https://0x7f.example.com/"},
	{"https://www.ck/", "https://www.ck/"},
	{"https://example.com/a%2Fb", "https://example.com/a%2Fb"},
	{"https://example.com/é", "https://example.com/%C3%A9"},
	{"https://example.com/?", "https://example.com/?"},
	{longHostURL, longHostURL},
}

func TestSafePublicHTTPSURLAccepted(t *testing.T) {
	for _, c := range acceptedURLs {
		got, err := SafePublicHTTPSURL(c.raw)
		if err != nil {
			t.Errorf("%q refused: %v", c.raw, err)
			continue
		}
		if got != c.stored {
			t.Errorf("%q stored as %q, want %q", c.raw, got, c.stored)
		}
	}
}

func TestSafePublicHTTPSURLLength(t *testing.T) {
	base := "https://example.com/"
	ok := base + strings.Repeat("a", maxURLLength-len(base))
	if got, err := SafePublicHTTPSURL(ok); err != nil || got != ok {
		t.Errorf("2048 characters: got %d bytes, %v", len(got), err)
	}
	if _, err := SafePublicHTTPSURL(ok + "a"); err == nil {
		t.Error("2049 characters accepted")
	}
	// The bound counts characters, as the schema does: a query keeps its non-ASCII text as sent.
	query := base + "?q="
	wide := query + strings.Repeat("é", maxURLLength-len(query))
	if got, err := SafePublicHTTPSURL(wide); err != nil || got != wide {
		t.Errorf("2048 characters in %d bytes: got %d bytes, %v", len(wide), len(got), err)
	}
	if _, err := SafePublicHTTPSURL(wide + "é"); err == nil {
		t.Error("2049 characters accepted")
	}
	// Escaping would push the stored form past the limit.
	grows := base + strings.Repeat("é", (maxURLLength-len(base))/2)
	if _, err := SafePublicHTTPSURL(grows); err == nil {
		t.Error("stored form longer than 2048 characters accepted")
	}
}

func FuzzSafePublicHTTPSURL(f *testing.F) {
	for _, s := range refusedURLs {
		f.Add(s)
	}
	for _, c := range acceptedURLs {
		f.Add(c.raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		out, err := SafePublicHTTPSURL(raw)
		if err != nil {
			var ue *URLError
			if !errors.As(err, &ue) {
				t.Fatalf("%q: error is not a *URLError: %v", raw, err)
			}
			return
		}
		again, err := SafePublicHTTPSURL(out)
		if err != nil || again != out {
			t.Fatalf("%q -> %q -> %q, %v: not idempotent", raw, out, again, err)
		}
		if !strings.HasPrefix(out, "https://") {
			t.Fatalf("%q -> %q: not https", raw, out)
		}
		u, err := url.Parse(out)
		if err != nil {
			t.Fatalf("%q -> %q: does not parse: %v", raw, out, err)
		}
		if h := u.Hostname(); h == "" || net.ParseIP(h) != nil {
			t.Fatalf("%q -> %q: host %q", raw, out, h)
		}
	})
}
