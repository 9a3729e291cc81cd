package host

import (
	"net/http/pprof"

	"github.com/gin-gonic/gin"
)

// pprofPrefix is where the admin listener serves Go's runtime profiles (with --pprof).
const pprofPrefix = "/debug/pprof"

// mountPprof serves net/http/pprof's index, its profiles and the execution trace under pprofPrefix.
// A CPU profile or trace runs ?seconds= (30 by default) and must end within --write-timeout. Not the
// command line (/cmdline), whose flags may hold secrets (--cursor-key, a database URL's password).
func mountPprof(r gin.IRouter) {
	g := r.Group(pprofPrefix)
	g.GET("/", gin.WrapF(pprof.Index))
	g.GET("/profile", gin.WrapF(pprof.Profile))
	g.GET("/symbol", gin.WrapF(pprof.Symbol))
	g.POST("/symbol", gin.WrapF(pprof.Symbol))
	g.GET("/trace", gin.WrapF(pprof.Trace))
	for _, name := range []string{"allocs", "block", "goroutine", "heap", "mutex", "threadcreate"} {
		g.GET("/"+name, gin.WrapH(pprof.Handler(name)))
	}
}
