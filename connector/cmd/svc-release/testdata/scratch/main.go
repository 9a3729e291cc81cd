// Command scratch stands in for svc-connector in svc-release's tests: it prints what the release built
// into it.
package main

import (
	"fmt"

	"github.com/svcforum/svc/connector"
)

func main() { fmt.Printf("%s %s\n", connector.Version, connector.ReleaseKey) }
