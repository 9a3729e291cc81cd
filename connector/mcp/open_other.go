//go:build !unix

package mcp

// openFlags: this system has no O_NOFOLLOW; the path was resolved (EvalSymlinks) just before.
const openFlags = 0
