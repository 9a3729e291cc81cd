package media

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/jpeg"
	"image/png"

	"golang.org/x/image/webp"

	"github.com/svcforum/svc/contracts/problem"
)

// The formats an upload may be (WIRE.md section 9).
const (
	FormatJPEG = "jpeg"
	FormatPNG  = "png"
	FormatWebP = "webp"
)

// The bounds of an image, decided from its header before anything decodes it: a header claiming
// 100000x100000 would make a decoder allocate gigabytes.
const (
	MaxSide   = 8192
	MaxPixels = 40_000_000
)

// Header is what the bytes of an upload say about the image before it is decoded.
type Header struct {
	Format        string
	Width, Height int
}

var (
	magicJPEG = []byte{0xFF, 0xD8, 0xFF}
	magicPNG  = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'}
)

// Sniff decides from the bytes alone (never a file name or a declared type) what an upload is: JPEG,
// PNG or WebP, still, and within MaxSide and MaxPixels. Anything else is 422 unsupported_image (SVG,
// GIF, BMP, TIFF, HTML, an animated PNG or WebP, bytes that are no image), and an image too large is
// 422 image_too_large; nothing is decoded beyond the header.
func Sniff(b []byte) (Header, *problem.Problem) {
	var h Header
	var cfg image.Config
	var err error
	switch {
	case bytes.HasPrefix(b, magicJPEG):
		h.Format = FormatJPEG
		cfg, err = jpeg.DecodeConfig(bytes.NewReader(b))
	case bytes.HasPrefix(b, magicPNG):
		h.Format = FormatPNG
		if pngAnimated(b) {
			return h, unsupported("an animated PNG (APNG)")
		}
		cfg, err = png.DecodeConfig(bytes.NewReader(b))
	case len(b) >= 12 && string(b[0:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		h.Format = FormatWebP
		if webpAnimated(b) {
			return h, unsupported("an animated WebP")
		}
		cfg, err = webp.DecodeConfig(bytes.NewReader(b))
	default:
		return h, unsupported(describe(b))
	}
	// A header whose size the decoder refuses outright (PNG's 2^31 bound, WebP's 2^32 pixels) is still
	// too large rather than undecodable: say so.
	if w, hh, ok := declaredSize(b, h.Format); ok && tooLarge(w, hh) {
		return h, tooLargeProblem(w, hh)
	}
	if err != nil {
		return h, unsupported("a " + h.Format + " whose header does not decode")
	}
	h.Width, h.Height = cfg.Width, cfg.Height
	if h.Width < 1 || h.Height < 1 {
		return h, unsupported("an image without pixels")
	}
	if tooLarge(uint64(h.Width), uint64(h.Height)) {
		return h, tooLargeProblem(uint64(h.Width), uint64(h.Height))
	}
	return h, nil
}

// tooLarge computes in 64 bits: a side fits in 32, their product does not.
func tooLarge(w, h uint64) bool { return w > MaxSide || h > MaxSide || w*h > MaxPixels }

func tooLargeProblem(w, h uint64) *problem.Problem {
	return problem.Newf(problem.ImageTooLarge, "The image is %dx%d pixels: at most %d on a side and %d pixels in all are accepted.",
		w, h, MaxSide, MaxPixels)
}

// declaredSize reads the size a PNG's IHDR or a WebP's VP8X canvas declares, without the decoder's own
// checks (ok false when the bytes hold no such header).
func declaredSize(b []byte, format string) (w, h uint64, ok bool) {
	switch {
	case format == FormatPNG && len(b) >= 24 && string(b[12:16]) == "IHDR":
		return uint64(binary.BigEndian.Uint32(b[16:20])), uint64(binary.BigEndian.Uint32(b[20:24])), true
	case format == FormatWebP && len(b) >= 30 && string(b[12:16]) == "VP8X":
		u24 := func(o int) uint64 { return uint64(b[o]) | uint64(b[o+1])<<8 | uint64(b[o+2])<<16 }
		return u24(24) + 1, u24(27) + 1, true
	}
	return 0, 0, false
}

func unsupported(what string) *problem.Problem {
	return problem.Newf(problem.UnsupportedImage, "The file is %s: only still JPEG, PNG and WebP images are accepted.", what)
}

// describe names what the bytes look like, for the refusal's detail.
func describe(b []byte) string {
	head := bytes.ToLower(bytes.TrimLeft(b[:min(len(b), 512)], " \t\r\n\xef\xbb\xbf"))
	switch {
	case bytes.HasPrefix(b, []byte("GIF8")):
		return "a GIF"
	case bytes.HasPrefix(b, []byte("BM")):
		return "a BMP"
	case bytes.HasPrefix(b, []byte("II*\x00")), bytes.HasPrefix(b, []byte("MM\x00*")):
		return "a TIFF"
	case bytes.Contains(head, []byte("<svg")), bytes.HasPrefix(head, []byte("<?xml")):
		return "an SVG or other XML"
	case bytes.HasPrefix(head, []byte("<!doctype html")), bytes.HasPrefix(head, []byte("<html")):
		return "HTML"
	}
	return "not a recognised image"
}

// pngAnimated reports whether a PNG holds an animation control chunk (acTL, the APNG marker) or frame
// chunks, which Go's decoder ignores and would show as a still first frame.
func pngAnimated(b []byte) bool {
	for i := len(magicPNG); i+8 <= len(b); {
		n := int(binary.BigEndian.Uint32(b[i : i+4]))
		switch string(b[i+4 : i+8]) {
		case "acTL", "fcTL", "fdAT":
			return true
		case "IEND":
			return false
		}
		if n < 0 || i+12+n > len(b) || i+12+n < i {
			return false // truncated: the decoder refuses it later
		}
		i += 12 + n
	}
	return false
}

// webpAnimated reports whether a WebP is animated: the animation flag of its VP8X header, or an ANIM or
// ANMF chunk anywhere (golang.org/x/image/webp reads the header of an animated file as a still one).
func webpAnimated(b []byte) bool {
	for i := 12; i+8 <= len(b); {
		id := string(b[i : i+4])
		n := int(binary.LittleEndian.Uint32(b[i+4 : i+8]))
		switch id {
		case "VP8X":
			if i+9 <= len(b) && b[i+8]&0x02 != 0 {
				return true
			}
		case "ANIM", "ANMF":
			return true
		}
		next := i + 8 + n + n%2 // chunks are padded to an even size
		if n < 0 || next <= i || next > len(b) {
			return false
		}
		i = next
	}
	return false
}
