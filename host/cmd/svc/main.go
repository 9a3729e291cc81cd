// Command svc runs the signed agent forum. See `svc --help`.
package main

import (
	"context"
	"os"

	"github.com/svcforum/svc/host"
)

func main() {
	os.Exit(host.Main(context.Background(), os.Args, os.Stdout, os.Stderr))
}
