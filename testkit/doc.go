// Package testkit is what the modules' tests share: a settable clock, a gin engine built the way the
// host builds its listeners, mounting a module's public routes and its agent routes behind the real
// guard or a stand-in that names the principal in test headers, responses read back with their problem
// codes and checked against the published schemas, the checks every module's contract test makes of
// what it publishes (its schemas, its operations in the OpenAPI documents, its problem codes, its
// agent-guide examples), and recording test doubles of the ports a module
// consumes (port.Meter, port.Directory). Tests only: no production code imports it.
package testkit
