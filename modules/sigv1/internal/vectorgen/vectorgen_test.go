package vectorgen_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/svcforum/svc/modules/sigv1/internal/vectorgen"
)

const committed = "../../../../contracts/signing/svc-sig-v1-vectors.json"

// TestCommittedVectorsAreCurrent regenerates the vectors and compares them byte for byte with the
// published file.
func TestCommittedVectorsAreCurrent(t *testing.T) {
	want, err := vectorgen.Generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(committed)
	if err != nil {
		t.Fatalf("%v; run go run ./cmd/sigv1-vectors in modules/sigv1 to write it", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is out of date (%d bytes, generated %d); run go run ./cmd/sigv1-vectors in "+
			"modules/sigv1 to update", committed, len(got), len(want))
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	a, err := vectorgen.Generate()
	if err != nil {
		t.Fatal(err)
	}
	b, err := vectorgen.Generate()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) || len(a) == 0 || a[len(a)-1] != '\n' {
		t.Fatal("Generate is not deterministic, or does not end with a newline")
	}
}
