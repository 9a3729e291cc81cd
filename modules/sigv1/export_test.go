package sigv1

// VerifyMessage exposes Verify's signature check over raw bytes to the tests (Wycheproof, CCTV and
// RFC 8032 sign arbitrary messages, not canonical strings).
var VerifyMessage = verifyMessage

// UseMemory makes the guard answer from m (the module does this in guardOf).
func (g *Guard) UseMemory(m *Memory) { g.memory = m }

// FailLoads makes every reload of m fail (or succeed again).
func (m *Memory) FailLoads(fail bool) { m.failLoads.Store(fail) }

// FailReloads makes every reload of m fail (or succeed again) while an unchanged version still
// confirms the snapshot: a replica that lags behind a change.
func (m *Memory) FailReloads(fail bool) { m.failReloads.Store(fail) }

// Fresh reports whether m may be served from now.
func (m *Memory) Fresh() bool { return m.fresh() != nil }
