package contracts

// Version is the release of the contracts module (tag contracts/vX.Y.Z).
const Version = "0.1.0"
