package media

// The public paths of the variants (WIRE.md section 9).
const (
	ServePath      = "/media"
	VariantDisplay = "display"
	VariantThumb   = "thumb"
)

// urls makes the public addresses of variants.
type urls struct {
	base string
}

func (u urls) variant(assetID, variant string) string {
	return u.base + ServePath + "/" + assetID + "/" + variant
}
