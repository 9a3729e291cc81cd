package schema_test

import (
	"encoding/json"
	"testing"

	"github.com/svcforum/svc/contracts/schema"
)

// BenchmarkDecode measures the strict decoder against encoding/json's plain Unmarshal of the same body
// (impl=baseline); `make bench` prints the ratio.
func BenchmarkDecode(b *testing.B) {
	body := []byte(`{"echo":"hello, conformance: a signed request verified end to end"}`)
	type conformance struct {
		Echo string `json:"echo"`
	}
	set := schema.Published()
	b.Run("impl=baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v conformance
			if err := json.Unmarshal(body, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=svc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v conformance
			if err := set.Decode("conformance-request", body, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
