// Package mediavips benchmarks the media module's processing (media.Render) against libvips doing the
// same work on the same image, in the same run. It holds nothing but its tests: it exists for
// `make bench`, and libvips, a C library reached through cgo, stays out of the service's modules.
package mediavips
