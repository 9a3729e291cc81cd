package plugin

import "testing"

func TestClientKey(t *testing.T) {
	for ip, want := range map[string]string{
		"203.0.113.7":             "203.0.113.7",
		"2001:db8:1:2:aaaa::1":    "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff:1:2:3": "2001:db8:1:2::/64",
		"2001:db8:1:3::1":         "2001:db8:1:3::/64",
		"::ffff:203.0.113.7":      "203.0.113.7",
		"fe80::1%eth0":            "fe80::/64",
		"":                        "",
		"not an address":          "not an address",
	} {
		if got := clientKey(ip); got != want {
			t.Errorf("clientKey(%q) = %q, want %q", ip, got, want)
		}
	}
}
