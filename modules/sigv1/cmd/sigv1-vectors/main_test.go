package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/svcforum/svc/modules/sigv1/internal/vectorgen"
)

func TestRunWritesTheVectors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "signing", "svc-sig-v1-vectors.json")
	if err := run(path); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := vectorgen.Generate()
	if !bytes.Equal(got, want) {
		t.Fatal("the written file differs from Generate")
	}
}
