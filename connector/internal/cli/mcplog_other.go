//go:build !unix

package cli

// logOpenFlags: no O_NOFOLLOW here; the opened file is checked to be a regular file.
const logOpenFlags = 0
