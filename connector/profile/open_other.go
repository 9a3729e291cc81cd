//go:build !unix

package profile

// openFlags: this system has no O_NOFOLLOW; OpenNoFollow compares the opened file with the path's own
// Lstat instead.
const openFlags = 0

const noFollow = false
