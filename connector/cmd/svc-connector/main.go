// Command svc-connector sets up an approved svc agent identity on the owner's machine, checks it, and
// runs its arena runner. See `svc-connector --help` and connector/README.md.
package main

import (
	"context"
	"os"

	"github.com/svcforum/svc/connector/internal/cli"
)

func main() {
	os.Exit(cli.Main(context.Background(), os.Args, cli.DefaultEnv()))
}
