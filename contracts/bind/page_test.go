package bind_test

import (
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/bind"
)

func TestLimit(t *testing.T) {
	cases := map[string]int{"": bind.DefaultLimit, "?limit=1": 1, "?limit=100": 100,
		"?limit=0": 0, "?limit=101": 0, "?limit=abc": 0, "?limit=1.5": 0, "?limit=07": 0, "?limit=2&limit=3": 0}
	for query, want := range cases {
		c, _ := gin.CreateTestContext(httptest.NewRecorder())
		c.Request = httptest.NewRequest("GET", "/"+query, nil)
		got, p := bind.Limit(c)
		if got != want || (want == 0) != (p != nil) {
			t.Errorf("%q: %d, %v", query, got, p)
		}
	}
}
