package discovery

import (
	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/plugin"
)

// The served paths of the locations discovery owns.
const (
	DocumentPath = "/.well-known/svc"
	PublicAPI    = "/openapi.json"
	ContractsDir = "/contracts"
	ExamplesPath = ContractsDir + "/examples"
	SchemasPath  = ContractsDir + "/schemas"
	SkillPath    = "/developers/SKILL.md"
	// SkillDir holds the chapters of the agent guide, served beside SKILL.md so that its relative links
	// (skill/<name>.md) resolve.
	SkillDir = "/developers/skill"
)

// SkillChapterPath is the served path of the named chapter of the agent guide.
func SkillChapterPath(name string) string { return SkillDir + "/" + name + ".md" }

// SkillChapterLocation is the discovery document's name of the location of the named chapter.
func SkillChapterLocation(name string) string { return "skill_" + name }

// SchemaPath is the served path of the named schema.
func SchemaPath(name string) string { return SchemasPath + "/" + name + ".schema.json" }

// Publications are the locations discovery itself contributes; other modules add theirs (the agent
// API, signing vectors, their schemas) to the same group.
func Publications() []plugin.Publication {
	pubs := []plugin.Publication{
		{Module: ID, Name: "discovery", Path: DocumentPath},
		{Module: ID, Name: "public_api", Path: PublicAPI},
		{Module: ID, Name: "examples", Path: ExamplesPath},
		{Module: ID, Name: "skill", Path: SkillPath},
	}
	for _, c := range contracts.SkillChapters() {
		pubs = append(pubs, plugin.Publication{Module: ID, Name: SkillChapterLocation(c), Path: SkillChapterPath(c)})
	}
	for _, s := range []string{"discovery", "problem", "liveness-response", "readiness-response", "front-door"} {
		pubs = append(pubs, plugin.Publication{Module: ID, Name: s, Path: SchemaPath(s), Schema: true})
	}
	return pubs
}
