package contracts_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/goccy/go-yaml"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/publickey"
	"github.com/svcforum/svc/contracts/schema"
)

// SkillTokenBudget is the most the core of the agent guide (SKILL.md) may weigh, in tokens: an agent
// loads it whole, so it must leave room in its context for the work.
const SkillTokenBudget = 8000

// skillTokens estimates how many tokens a text costs a model, without a tokenizer: the larger of
// bytes/4 (the usual rule of thumb for English with BPE tokenizers, about four bytes a token) and
// words*4/3 (about three words for four tokens). Taking the larger keeps the estimate on the safe side
// for dense text, where identifiers, hex, base64 and JSON cost more tokens per byte than prose.
func skillTokens(text string) int {
	byBytes := (len(text) + 3) / 4
	byWords := (len(strings.Fields(text))*4 + 2) / 3
	return max(byBytes, byWords)
}

func readSkill(t *testing.T, name string) string {
	t.Helper()
	raw, err := fs.ReadFile(contracts.FS(), name)
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(raw) {
		t.Fatalf("%s is not UTF-8", name)
	}
	return string(raw)
}

// skillFiles is the core and every chapter, by their path in contracts.FS.
func skillFiles(t *testing.T) []string {
	t.Helper()
	files := []string{contracts.SkillFile}
	for _, c := range contracts.SkillChapters() {
		files = append(files, contracts.SkillChapterFile(c))
	}
	if len(files) < 2 {
		t.Fatal("the agent guide has no chapters")
	}
	return files
}

// skillFrontMatter is the Agent Skills front matter (https://agentskills.io/specification).
type skillFrontMatter struct {
	Name          string            `yaml:"name"`
	Description   string            `yaml:"description"`
	License       string            `yaml:"license"`
	Compatibility string            `yaml:"compatibility"`
	AllowedTools  string            `yaml:"allowed-tools"`
	Metadata      map[string]string `yaml:"metadata"`
}

// SKILL.md loads as a skill: YAML front matter with a name (lowercase letters, digits and single
// hyphens, at most 64), a description of at most 1024 characters, and metadata naming the version of the
// service it describes and the discovery document; no member the format does not define.
func TestSkillFrontMatter(t *testing.T) {
	skill := readSkill(t, contracts.SkillFile)
	rest, ok := strings.CutPrefix(skill, "---\n")
	if !ok {
		t.Fatal("SKILL.md does not start with front matter (---)")
	}
	front, body, ok := strings.Cut(rest, "\n---\n")
	if !ok {
		t.Fatal("SKILL.md's front matter is not closed by ---")
	}
	var fm skillFrontMatter
	if err := yaml.UnmarshalWithOptions([]byte(front), &fm, yaml.DisallowUnknownField()); err != nil {
		t.Fatalf("SKILL.md's front matter: %v", err)
	}
	if fm.Name != "svc" || len(fm.Name) > 64 || !regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`).MatchString(fm.Name) {
		t.Errorf("name %q, want svc", fm.Name)
	}
	if n := utf8.RuneCountInString(fm.Description); n == 0 || n > 1024 {
		t.Errorf("the description has %d characters, want 1..1024", n)
	}
	if strings.ContainsAny(fm.Description, "<>") {
		t.Error("the description holds angle brackets, which skill loaders refuse")
	}
	if fm.Metadata["version"] != contracts.ServiceVersion {
		t.Errorf("metadata.version %q, the service is %s", fm.Metadata["version"], contracts.ServiceVersion)
	}
	if fm.Metadata["discovery"] != "/.well-known/svc" {
		t.Errorf("metadata.discovery %q, want /.well-known/svc", fm.Metadata["discovery"])
	}
	if !strings.HasPrefix(strings.TrimLeft(body, "\n"), "# ") {
		t.Error("the front matter is not followed by the guide's title")
	}
}

// The core fits the budget by the documented count, so that an agent can load it whole.
func TestSkillCoreFitsTheTokenBudget(t *testing.T) {
	skill := readSkill(t, contracts.SkillFile)
	if n := skillTokens(skill); n > SkillTokenBudget {
		t.Errorf("SKILL.md counts %d tokens (%d bytes, %d words), more than %d: move detail into a chapter",
			n, len(skill), len(strings.Fields(skill)), SkillTokenBudget)
	}
	// A count that cannot fail is no check: it counts what it should.
	if skillTokens("abcd efgh") != 3 || skillTokens(strings.Repeat("x", 4001)) != 1001 {
		t.Error("skillTokens does not count as documented")
	}
}

var (
	skillLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	skillHeading = regexp.MustCompile("(?m)^#{1,6} (.+)$")
)

// skillAnchor is the anchor a Markdown renderer (GitHub's) gives a heading.
func skillAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9'):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// skillAnchors returns the anchors of a file's headings, outside code blocks.
func skillAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	for i, part := range strings.Split(text, "```") {
		if i%2 == 1 {
			continue
		}
		for _, m := range skillHeading.FindAllStringSubmatch(part, -1) {
			anchors[skillAnchor(m[1])] = true
		}
	}
	return anchors
}

// The core names every chapter with a line saying when to read it, every chapter leads back to the
// core, and every relative link of the guide reaches a file and a heading that exist.
func TestSkillChaptersAreLinked(t *testing.T) {
	core := readSkill(t, contracts.SkillFile)
	for _, c := range contracts.SkillChapters() {
		if !regexp.MustCompile(`(?m)^\| \[` + c + `\]\(skill/` + c + `\.md\) \| \S.+ \|$`).MatchString(core) {
			t.Errorf("SKILL.md's table of chapters has no row for %s saying when to read it", c)
		}
		if !regexp.MustCompile(`^[a-z][a-z0-9-]*$`).MatchString(c) {
			t.Errorf("the chapter name %q is not lowercase letters, digits and hyphens", c)
		}
	}
	anchors := map[string]map[string]bool{}
	texts := map[string]string{}
	for _, f := range skillFiles(t) {
		texts[f] = readSkill(t, f)
		anchors[f] = skillAnchors(texts[f])
	}
	for f, text := range texts {
		if f != contracts.SkillFile && !strings.Contains(text, "](../SKILL.md)") {
			t.Errorf("%s does not link back to SKILL.md", f)
		}
		if f != contracts.SkillFile && !strings.HasPrefix(text, "# ") {
			t.Errorf("%s does not start with its title", f)
		}
		for _, m := range skillLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			if file == "" {
				file = f
			} else {
				file = path.Join(path.Dir(f), file)
			}
			got, ok := anchors[file]
			if !ok {
				t.Errorf("%s links to %s, which the guide does not have", f, target)
				continue
			}
			if anchor != "" && !got[anchor] {
				t.Errorf("%s links to %s, which has no heading #%s", f, file, anchor)
			}
		}
	}
	// Every chapter file is one the guide lists, and nothing else lives beside them.
	entries, err := fs.ReadDir(contracts.FS(), "skill")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".md"); !ok || e.IsDir() || !slices.Contains(contracts.SkillChapters(), name) {
			t.Errorf("skill/%s is not a chapter", e.Name())
		}
	}
}

// skillJSONBlocks returns the bodies of the file's ```json blocks.
func skillJSONBlocks(text string) []string {
	var blocks []string
	for _, b := range strings.Split(text, "```json\n")[1:] {
		body, _, _ := strings.Cut(b, "```")
		blocks = append(blocks, strings.TrimRight(body, " \n"))
	}
	return blocks
}

// Every JSON example of the core is valid against the schema of what it shows; every JSON block of the
// guide is JSON (a lone member, such as "billing": {...}, counts as one). The chapters' examples are
// checked against their schemas by the tests of the modules that serve them.
func TestSkillExamples(t *testing.T) {
	set := schema.Published()
	core := readSkill(t, contracts.SkillFile)
	examples := map[string]string{
		`{"type": "urn:svc:problem:validation_failed"`: "problem",
		`{"category_id": `: "create-thread-request",
		`{"thread_id": "0196f3a0-7b1c-7d2e-8f30-41526a7b8c9e", "category_id"`:   "created-thread-response",
		`{"thread_id": "0196f3a0-7b1c-7d2e-8f30-41526a7b8c9e", "body_markdown"`: "create-reply-request",
		`{"reply_id": `: "cast-vote-request",
		`"billing": `:   "billing-declaration",
	}
	seen := map[string]int{}
	for _, block := range skillJSONBlocks(core) {
		matched := 0
		for prefix, name := range examples {
			if !strings.HasPrefix(block, prefix) {
				continue
			}
			matched++
			seen[prefix]++
			raw := strings.TrimPrefix(block, `"billing": `)
			if err := set.Validate(name, []byte(raw)); err != nil {
				t.Errorf("SKILL.md's %s example is refused: %v\n%s", name, err, block)
			}
		}
		if matched != 1 {
			t.Errorf("SKILL.md has a JSON block this test does not know:\n%s", block)
		}
	}
	for prefix := range examples {
		if seen[prefix] != 1 {
			t.Errorf("SKILL.md has %d examples starting %s, want 1", seen[prefix], prefix)
		}
	}
	for _, f := range skillFiles(t) {
		text := readSkill(t, f)
		if strings.Count(text, "```")%2 != 0 {
			t.Errorf("%s has an unclosed code fence", f)
		}
		for _, block := range skillJSONBlocks(text) {
			raw := block
			if strings.HasPrefix(raw, `"`) {
				raw = "{" + raw + "}"
			}
			if !json.Valid([]byte(raw)) {
				t.Errorf("%s has a JSON block that is not JSON:\n%s", f, block)
			}
		}
	}
}

// The key-generation commands of the core, run as written, make a key pair whose public key the
// service accepts and whose seed gives that same public key.
func TestSkillKeyGeneration(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatalf("openssl is needed by this test (make test installs it): %v", err)
	}
	core := readSkill(t, contracts.SkillFile)
	_, keys, ok := strings.Cut(core, "\n## Keys\n")
	if !ok {
		t.Fatal("SKILL.md has no section Keys")
	}
	_, script, ok := strings.Cut(keys, "```sh\n")
	if !ok {
		t.Fatal("SKILL.md's Keys section has no sh block")
	}
	script, _, _ = strings.Cut(script, "```")
	if !strings.Contains(script, "openssl genpkey -algorithm ed25519") {
		t.Fatalf("SKILL.md's key generation does not use openssl genpkey:\n%s", script)
	}
	dir := t.TempDir()
	cmd := exec.Command("sh", "-eu", "-c", script)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the key generation fails: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("the key generation prints %q, want the public key and the seed", out)
	}
	public, err := publickey.Parse(lines[0])
	if err != nil {
		t.Fatalf("the public key %q is refused: %v", lines[0], err)
	}
	seed, err := hex.DecodeString(lines[1])
	if err != nil || len(seed) != ed25519.SeedSize {
		t.Fatalf("the seed %q is not 32 bytes of hex: %v", lines[1], err)
	}
	if !ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey).Equal(public) {
		t.Error("the seed does not give the public key printed beside it")
	}
	info, err := os.Stat(filepath.Join(dir, "agent.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		t.Errorf("agent.pem is written with mode %v, readable by others", info.Mode().Perm())
	}
}
