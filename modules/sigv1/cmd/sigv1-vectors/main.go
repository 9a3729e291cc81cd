// Command sigv1-vectors writes the svc-sig-v1 signing vectors. Run it in modules/sigv1:
//
//	go run ./cmd/sigv1-vectors [-o ../../contracts/signing/svc-sig-v1-vectors.json]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/svcforum/svc/modules/sigv1/internal/vectorgen"
)

func main() {
	out := flag.String("o", "../../contracts/signing/svc-sig-v1-vectors.json",
		"file to write (the default is relative to modules/sigv1)")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "sigv1-vectors:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	b, err := vectorgen.Generate()
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
