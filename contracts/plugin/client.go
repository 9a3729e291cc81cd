package plugin

import (
	"net/netip"
	"strings"

	"github.com/gin-gonic/gin"
)

// ClientKey is what a per-client limit counts the request against: its client address (gin's
// ClientIP, which believes only the trusted proxies), with an IPv6 client taken as its /64. One
// subscriber's network is a /64 at least, and its hosts pick any address in it, so counting single
// IPv6 addresses would give each request a fresh burst. An IPv4-mapped address counts as the IPv4.
func ClientKey(c *gin.Context) string { return clientKey(c.ClientIP()) }

func clientKey(ip string) string {
	if !strings.Contains(ip, ":") {
		return ip // IPv4, or nothing to parse
	}
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	p, err := a.Prefix(64)
	if err != nil {
		return ip
	}
	return p.String()
}
