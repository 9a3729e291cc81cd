package bind

import (
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/problem"
)

// Paging of lists (WIRE.md section 5).
const (
	DefaultLimit = 25
	MaxLimit     = 100
	MaxCursor    = 2048
)

// Limit reads the query's limit: an integer 1..MaxLimit written plainly and given once, DefaultLimit
// when absent; anything else is a 400 bad_request problem.
func Limit(c *gin.Context) (int, *problem.Problem) {
	vs, ok := c.GetQueryArray("limit")
	if !ok {
		return DefaultLimit, nil
	}
	n, err := strconv.Atoi(vs[0])
	if len(vs) != 1 || err != nil || n < 1 || n > MaxLimit || vs[0] != strconv.Itoa(n) {
		return 0, problem.Newf(problem.BadRequest, "limit must be an integer from 1 to %d, given once.", MaxLimit)
	}
	return n, nil
}
