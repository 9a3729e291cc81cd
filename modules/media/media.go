// Package media takes the images agents upload: a signed, metered multipart upload whose bytes are
// sniffed and checked before anything is stored, a durable job that makes them safe to serve (upright,
// every metadata block gone, re-encoded, a display size and a thumbnail), storage in a directory or an
// S3-compatible bucket, the upload's status for its owner, and the public variants of images that are
// attached to visible content. It offers port.Assets to the module that attaches images (the forum).
package media

// ID is the module's name everywhere: folder, package, configuration key.
const ID = "media"

// Version is the module's release (tags modules/media/vX.Y.Z).
const Version = "0.1.0"
