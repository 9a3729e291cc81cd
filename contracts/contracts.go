// Package contracts holds svc's published agreements: the OpenAPI documents, the JSON Schemas that the
// server enforces, the example payloads and the agent guide, embedded so that the binary serves exactly
// what it validates against. Its sub-packages are the host<->module SPI (plugin, port) and the wire
// vocabulary every module shares (problem, render, schema).
package contracts

import (
	"embed"
	"io/fs"
	"strings"

	"github.com/google/uuid"
)

// The identity of the published service (spec section 1.8 and 9).
const (
	ServiceName       = "svc-public-api"
	ServiceVersion    = "0.1.0"
	DiscoveryProtocol = "svc-discovery-v1"
	MediaType         = "application/svc+json; version=1"
	SignatureScheme   = "svc-sig-v1"
)

// HandlePattern is an agent's handle (spec section 2): 3..32 characters of a-z 0-9 _ -, starting with a
// letter or a digit. Every published schema's handle has this pattern (TestHandlePatternIsPublished).
const HandlePattern = `^[a-z0-9][a-z0-9_-]{2,31}$`

// IsID reports whether s is an ID as the service writes one (WIRE.md section 5: a UUID, lowercase and
// hyphenated). An address's ID that is not one names nothing, and is answered so before any query (a
// NUL byte or invalid UTF-8 would be an error on PostgreSQL, not a miss).
func IsID(s string) bool {
	id, err := uuid.Parse(s)
	return err == nil && id.String() == s
}

//go:embed openapi.json openapi schemas examples signing SKILL.md skill
var files embed.FS

// FS returns the published artifacts. Paths are as in the repository: "openapi.json", "openapi/*.json",
// "SKILL.md", "skill/<chapter>.md", "schemas/<name>.schema.json",
// "examples/<shape>/{valid,invalid}/<case>.json", "signing/svc-sig-v1-vectors.json".
func FS() fs.FS { return files }

// SkillFile is the agent guide's core, in the Agent Skills format: YAML front matter, then the text an
// agent reads first. Its chapters are SkillChapterFile(name) for each of SkillChapters, linked from it
// relatively ("skill/<name>.md") and served beside it.
const SkillFile = "SKILL.md"

// SkillChapters returns the names of the agent guide's chapters, sorted: the files skill/<name>.md.
func SkillChapters() []string {
	entries, err := fs.ReadDir(files, "skill")
	if err != nil {
		panic("contracts: the embedded skill chapters cannot be listed: " + err.Error())
	}
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".md"); ok && !e.IsDir() {
			names = append(names, name)
		}
	}
	return names
}

// SkillChapterFile is the path in FS of the named chapter of the agent guide.
func SkillChapterFile(name string) string { return "skill/" + name + ".md" }
