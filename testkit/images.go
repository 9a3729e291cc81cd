package testkit

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"testing"
)

// The hostile and ordinary image files of the upload tests (research/reliability.md sections 4 and 8),
// made here from the standard library and hand-written headers, so that every test states what its
// file is rather than reading an opaque fixture.

// Picture is a w x h image whose top half is red and bottom half blue, so that a test can tell how it
// was turned, with a little noise so that it does not compress to nothing.
func Picture(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			n := uint8((x*7 + y*13) % 16)
			c := color.NRGBA{R: 220 + n, G: n, B: n, A: 255}
			if y >= h/2 {
				c = color.NRGBA{R: n, G: n, B: 220 + n, A: 255}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	return img
}

// JPEG encodes Picture(w, h).
func JPEG(t testing.TB, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, Picture(w, h), &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// PNG encodes Picture(w, h); with alpha its left column is transparent.
func PNG(t testing.TB, w, h int, alpha bool) []byte {
	t.Helper()
	img := Picture(w, h)
	if alpha {
		for y := 0; y < h; y++ {
			img.SetNRGBA(0, y, color.NRGBA{})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// GPSLatitude is the latitude ExifJPEG writes, as the rational degrees it stores.
const GPSLatitude = 48

// ExifJPEG is JPEG(w, h) with an APP1 Exif segment holding an orientation and a GPS position (latitude
// GPSLatitude N), as a phone writes them: orientation 6 means "turn 90 degrees clockwise to show".
func ExifJPEG(t testing.TB, w, h int, orientation uint16) []byte {
	t.Helper()
	be := binary.BigEndian
	var tiff bytes.Buffer
	tiff.WriteString("MM\x00\x2a")
	_ = binary.Write(&tiff, be, uint32(8)) // IFD0 at 8
	// IFD0: Orientation, GPSInfo pointer; no next IFD. 2 + 2*12 + 4 = 30 bytes: the GPS IFD at 38.
	_ = binary.Write(&tiff, be, uint16(2))
	entry := func(tag, typ uint16, count, value uint32) {
		_ = binary.Write(&tiff, be, tag)
		_ = binary.Write(&tiff, be, typ)
		_ = binary.Write(&tiff, be, count)
		_ = binary.Write(&tiff, be, value)
	}
	entry(0x0112, 3, 1, uint32(orientation)<<16) // SHORT, left-justified in the value field
	entry(0x8825, 4, 1, 38)
	_ = binary.Write(&tiff, be, uint32(0))
	// GPS IFD: LatitudeRef "N", Latitude 3 rationals at 38 + 2 + 2*12 + 4 = 68.
	_ = binary.Write(&tiff, be, uint16(2))
	entry(0x0001, 2, 2, uint32('N')<<24)
	entry(0x0002, 5, 3, 68)
	_ = binary.Write(&tiff, be, uint32(0))
	for _, r := range [][2]uint32{{GPSLatitude, 1}, {51, 1}, {2959, 100}} {
		_ = binary.Write(&tiff, be, r[0])
		_ = binary.Write(&tiff, be, r[1])
	}
	app1 := append([]byte("Exif\x00\x00"), tiff.Bytes()...)
	return withSegment(JPEG(t, w, h), 0xE1, app1)
}

// withSegment inserts a marker segment right after a JPEG's SOI.
func withSegment(j []byte, marker byte, payload []byte) []byte {
	seg := []byte{0xFF, marker, byte((len(payload) + 2) >> 8), byte(len(payload) + 2)}
	out := append([]byte{}, j[:2]...)
	out = append(out, seg...)
	out = append(out, payload...)
	return append(out, j[2:]...)
}

// JPEGOfSize is a valid JPEG of exactly n bytes: JPEG(64, 64) padded with comment segments.
func JPEGOfSize(t testing.TB, n int) []byte {
	t.Helper()
	j := JPEG(t, 64, 64)
	for len(j) < n {
		gap := n - len(j)
		if gap < 4 {
			t.Fatalf("cannot pad a JPEG by %d bytes", gap)
		}
		size := min(gap-4, 65533)
		if rest := gap - 4 - size; rest > 0 && rest < 4 {
			size -= 4 // leave room for one more whole segment
		}
		j = withSegment(j, 0xFE, bytes.Repeat([]byte{'x'}, size))
	}
	if len(j) != n {
		t.Fatalf("padded JPEG is %d bytes, want %d", len(j), n)
	}
	return j
}

// Polyglot is a JPEG followed by an HTML document: a browser sniffing it could run the script.
func Polyglot(t testing.TB) []byte {
	return append(JPEG(t, 32, 32), []byte("<html><script>alert('polyglot')</script></html>")...)
}

// Truncated is a JPEG cut in the middle of its scan: its header decodes, its pixels do not.
func Truncated(t testing.TB) []byte {
	j := JPEG(t, 256, 256)
	return j[:len(j)/2]
}

// pngChunk is one PNG chunk with its CRC.
func pngChunk(typ string, data []byte) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.BigEndian, uint32(len(data)))
	b.WriteString(typ)
	b.Write(data)
	_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(typ), data...)))
	return b.Bytes()
}

// APNG is PNG(8, 8) with an acTL chunk after IHDR: an animated PNG, which Go's decoder shows as still.
func APNG(t testing.TB) []byte {
	p := PNG(t, 8, 8, false)
	ihdrEnd := 8 + 8 + 13 + 4
	actl := pngChunk("acTL", []byte{0, 0, 0, 2, 0, 0, 0, 0})
	return append(append(append([]byte{}, p[:ihdrEnd]...), actl...), p[ihdrEnd:]...)
}

// HugePNG is a PNG whose IHDR claims w x h and holds no pixels.
func HugePNG(w, h uint32) []byte {
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	out := []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'}
	out = append(out, pngChunk("IHDR", ihdr)...)
	return append(out, pngChunk("IEND", nil)...)
}

// HugeJPEG is JPEG(16, 16) whose SOF claims w x h (at most 65535 a side, JPEG's own bound).
func HugeJPEG(t testing.TB, w, h uint16) []byte {
	j := append([]byte{}, JPEG(t, 16, 16)...)
	for i := 2; i+9 < len(j); {
		if j[i] != 0xFF {
			break
		}
		m := j[i+1]
		n := int(j[i+2])<<8 | int(j[i+3])
		if m == 0xC0 || m == 0xC2 {
			binary.BigEndian.PutUint16(j[i+5:], h)
			binary.BigEndian.PutUint16(j[i+7:], w)
			return j
		}
		i += 2 + n
	}
	t.Fatal("no SOF in the JPEG")
	return nil
}

// webpFile wraps chunks in a RIFF WEBP container.
func webpFile(chunks ...[]byte) []byte {
	var body bytes.Buffer
	body.WriteString("WEBP")
	for _, c := range chunks {
		body.Write(c)
	}
	var out bytes.Buffer
	out.WriteString("RIFF")
	_ = binary.Write(&out, binary.LittleEndian, uint32(body.Len()))
	out.Write(body.Bytes())
	return out.Bytes()
}

func riffChunk(id string, data []byte) []byte {
	var b bytes.Buffer
	b.WriteString(id)
	_ = binary.Write(&b, binary.LittleEndian, uint32(len(data)))
	b.Write(data)
	if len(data)%2 == 1 {
		b.WriteByte(0)
	}
	return b.Bytes()
}

// vp8l1x1 is a lossless 1x1 WebP bitstream (a single opaque pixel).
var vp8l1x1 = []byte{0x2f, 0x00, 0x00, 0x00, 0x10, 0x07, 0x10, 0x11, 0x11, 0x88, 0x88, 0xfe, 0x07, 0x00}

// vp8x is a VP8X chunk with flags and a canvas of w x h.
func vp8x(flags byte, w, h uint32) []byte {
	d := make([]byte, 10)
	d[0] = flags
	put24 := func(o int, v uint32) { d[o], d[o+1], d[o+2] = byte(v), byte(v>>8), byte(v>>16) }
	put24(4, w-1)
	put24(7, h-1)
	return riffChunk("VP8X", d)
}

// WebP is a still 1x1 lossless WebP.
func WebP() []byte { return webpFile(riffChunk("VP8L", vp8l1x1)) }

// AnimatedWebP is a WebP with the VP8X animation flag and an ANIM chunk; with flagCleared the flag is
// off and only the ANIM and ANMF chunks say it is animated.
func AnimatedWebP(flagCleared bool) []byte {
	var flags byte = 0x02
	if flagCleared {
		flags = 0
	}
	anmf := append(make([]byte, 16), riffChunk("VP8L", vp8l1x1)...)
	return webpFile(vp8x(flags, 1, 1), riffChunk("ANIM", make([]byte, 6)), riffChunk("ANMF", anmf))
}

// HugeWebP is a WebP whose VP8X canvas claims w x h, with a 1x1 bitstream.
func HugeWebP(w, h uint32) []byte {
	return webpFile(vp8x(0, w, h), riffChunk("VP8L", vp8l1x1))
}

// SVG is an SVG image with a script, with or without its XML prolog.
func SVG(prolog bool) []byte {
	s := `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script></svg>`
	if prolog {
		s = `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + s
	}
	return []byte(s)
}

// GIF is a 1x1 GIF89a.
func GIF() []byte {
	return []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")
}

// LargeJPEG is a w x h JPEG of smooth gradients (so that even 40 megapixels stay under the 5 MiB
// upload limit) whose decoding and resizing take a while: the image a test kills a worker under.
func LargeJPEG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Y[y*img.YStride+x] = uint8((x + y) * 255 / (w + h))
		}
	}
	for i := range img.Cb {
		img.Cb[i], img.Cr[i] = 128, 128
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 75}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
