package sigv1

// VerifyMessage exposes Verify's signature check over raw bytes to the tests (Wycheproof, CCTV and
// RFC 8032 sign arbitrary messages, not canonical strings).
var VerifyMessage = verifyMessage
