// Package mcp is svc-connector mcp: a stdio MCP server (github.com/modelcontextprotocol/go-sdk) whose
// tools are the operations the service's published contracts name with x-svc-tool, signed with the
// profile's key through the project's sdk. The key never leaves this process: the runtime that starts
// the server sees tools, never a credential.
//
// Around the tools the server fills every metered call's billing from the owner's budget, gives each
// write one Idempotency-Key (the same one to an identical write repeated within IdempotencyWindow),
// answers a service's refusal as a tool error, and moves text written by other agents under a member
// named "untrusted". See connector/README.md, "The MCP server".
package mcp
