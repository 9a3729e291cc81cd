package forum

import (
	"net"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/svcforum/svc/contracts/textpolicy"
	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// maxURLLength bounds both the raw input and the stored form, in characters (spec: url 1..2048).
const maxURLLength = 2048

// URLError says why a URL was refused. The reason never echoes the URL, so it can
// go into a problem response or a log line without reflecting attacker input.
type URLError struct {
	Reason string
}

func (e *URLError) Error() string { return "unsafe url: " + e.Reason }

func refuse(reason string) (string, error) { return "", &URLError{Reason: reason} }

// specialUseTLDs are names that never denote a public web site (RFC 6761, 6762,
// 7686, 8375, 9476, ICANN's .internal). Most are also absent from the public
// suffix list; they are listed so the refusal does not depend on the list.
var specialUseTLDs = map[string]bool{
	"localhost": true, "local": true, "localdomain": true, "internal": true,
	"arpa": true, "test": true, "invalid": true, "onion": true, "alt": true,
}

// SafePublicHTTPSURL checks a URL that is stored and shown to others but never
// fetched by us (reliability.md section 5), and returns the form to store.
//
// Decisions:
//   - the scheme must be written exactly "https://": "HTTPS://" is refused so that
//     the stored form differs from the sent one only by the normalisation below;
//   - the host is stored lower-cased and as IDNA punycode ("xn--..."), so a
//     look-alike Cyrillic name is visible as such to whoever follows the link;
//   - an explicit ":443" is dropped, as browsers do;
//   - example.com/.net/.org are accepted (docs and tests use them); the reserved
//     TLDs in specialUseTLDs are refused;
//   - the TLD must be an ICANN one, but a name under a private-section suffix
//     (foo.blogspot.com, foo.github.io) is accepted: such sites are public;
//   - path, query and fragment are kept as net/url parsed them (it escapes
//     non-ASCII in the path and fragment, and leaves the query as sent).
//
// DNS is not consulted: a lookup at submit time proves nothing about later ones.
func SafePublicHTTPSURL(raw string) (string, error) {
	// Characters, as the schema's maxLength counts them (a query keeps its non-ASCII text as sent).
	if len(raw) < 1 || utf8.RuneCountInString(raw) > maxURLLength {
		return refuse("must be 1 to 2048 characters")
	}
	if !utf8.ValidString(raw) {
		return refuse("is not valid UTF-8")
	}
	// The query is stored unescaped, so bidi controls (see isBidiControl) are
	// refused here as in texts: they could disguise where the link goes.
	for _, r := range raw {
		if unicode.IsControl(r) || unicode.IsSpace(r) || r == '\\' || textpolicy.IsBidiControl(r) {
			return refuse("contains a control, space, backslash or bidirectional character")
		}
	}
	// Checked on the raw text: net/url lower-cases the scheme and also accepts
	// the opaque "https:host" and the relative "//host" forms.
	if !strings.HasPrefix(raw, "https://") {
		return refuse(`must start with "https://"`)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return refuse("is not a valid URL")
	}
	if u.Scheme != "https" || u.Opaque != "" {
		return refuse(`must start with "https://"`)
	}
	if u.User != nil {
		return refuse("must not contain user information")
	}
	host := u.Host
	if strings.HasPrefix(host, "[") {
		return refuse("the host must be a DNS name, not an IP address")
	}
	// net/url decodes %XX in the host; a host must be written as plain text.
	authority := strings.TrimPrefix(raw, "https://")
	if i := strings.IndexAny(authority, "/?#"); i >= 0 {
		authority = authority[:i]
	}
	if strings.Contains(authority, "%") {
		return refuse("the host must not be percent-encoded")
	}
	// Split by hand: u.Port() hides an empty port ("host:").
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		if host[i+1:] != "443" {
			return refuse("the port must be absent or 443")
		}
		host = host[:i]
	}
	ascii, reason := publicDNSName(host)
	if reason != "" {
		return refuse(reason)
	}
	u.Host = ascii
	out := u.String()
	// Escaping non-ASCII in the path can lengthen the URL; the stored form must
	// itself pass this check.
	if utf8.RuneCountInString(out) > maxURLLength {
		return refuse("must be 1 to 2048 characters")
	}
	return out, nil
}

// publicDNSName returns host as lower-case ASCII, or a reason to refuse it.
func publicDNSName(host string) (string, string) {
	const notIP = "the host must be a DNS name, not an IP address"
	if host == "" {
		return "", "must have a host"
	}
	if net.ParseIP(host) != nil {
		return "", notIP
	}
	ascii, err := idna.Lookup.ToASCII(host)
	if err != nil {
		return "", "the host is not a valid domain name"
	}
	ascii = strings.ToLower(ascii)
	if ascii == "" { // "xn--" decodes to nothing
		return "", "the host is not a valid domain name"
	}
	if strings.HasSuffix(ascii, ".") {
		return "", "the host must not end with a dot"
	}
	if len(ascii) > 253 {
		return "", "the host is longer than 253 characters"
	}
	labels := strings.Split(ascii, ".")
	for _, l := range labels {
		if len(l) < 1 || len(l) > 63 {
			return "", "a host label must be 1 to 63 characters"
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "", "the host is not a valid domain name"
			}
		}
	}
	// IDNA mapping can turn full-width digits into an address, so test again.
	if net.ParseIP(ascii) != nil || whatwgIPv4(labels[len(labels)-1]) {
		return "", notIP
	}
	if len(labels) < 2 {
		return "", "the host must have at least two labels"
	}
	tld := labels[len(labels)-1]
	if specialUseTLDs[tld] {
		return "", "the host is a reserved or internal name"
	}
	suffix, icann := publicsuffix.PublicSuffix(ascii)
	if !icann {
		// A private-section rule (blogspot.com) reports icann=false; what
		// matters is that the top-level domain is an ICANN one.
		_, icann = publicsuffix.PublicSuffix(tld)
	}
	if !icann {
		return "", "the host is not under a public top-level domain"
	}
	if ascii == suffix {
		return "", "the host is a public suffix, not a site"
	}
	return ascii, ""
}

// whatwgIPv4 reports whether a WHATWG URL parser (every browser) would read a
// host ending in this label as an IPv4 address: "2130706433", "0x7f.1" and
// "0177.0.0.1" all end in a number (url.spec.whatwg.org #ends-in-a-number-checker).
func whatwgIPv4(last string) bool {
	if last == "" {
		return false
	}
	digits := true
	for i := 0; i < len(last); i++ {
		if last[i] < '0' || last[i] > '9' {
			digits = false
			break
		}
	}
	if digits {
		return true
	}
	if len(last) < 2 || last[0] != '0' || (last[1] != 'x' && last[1] != 'X') {
		return false
	}
	for i := 2; i < len(last); i++ {
		c := last[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
