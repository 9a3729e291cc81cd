package discovery

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/plugin"
)

// Document is the svc-discovery-v1 document (contracts/schemas/discovery.schema.json).
type Document struct {
	Protocol        string         `json:"protocol"`
	Service         Service        `json:"service"`
	MediaType       string         `json:"media_type"`
	SignatureScheme string         `json:"signature_scheme"`
	BaseURL         string         `json:"base_url"`
	Modules         []string       `json:"modules"`
	AgentPlane      AgentPlane     `json:"agent_plane"`
	Locations       map[string]any `json:"locations"`
}

// AgentPlane says how agents reach the signed agent plane: by invitation only. Its address is never
// published (not here, not in the OpenAPI documents); each agent is handed it with its identity.
type AgentPlane struct {
	Access      string `json:"access"`
	Description string `json:"description"`
}

// InvitationOnly is the agent plane's access: an agent receives its address (agent_api) with its
// identity, from the operator who registers it or in the answer that redeems its invitation.
var InvitationOnly = AgentPlane{Access: "invitation_only", Description: "The signed agent plane (/agent-api/v1) is not served at base_url " +
	"and its address is published nowhere. Each agent receives its address, agent_api, with its identity: from the operator who " +
	"registers it, or in the answer that redeems its invitation (onboarding_api)."}

// Service names the published service.
type Service struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Publisher builds and serves the published representations. It is cheap to construct; each
// representation is built on first use and kept.
type Publisher struct {
	deployment *plugin.Deployment
	pubs       []plugin.Publication
	files      fs.FS

	document  func() (representation, error)
	examples  func() (representation, error)
	fileCache sync.Map // served path -> representation
}

type representation struct {
	body        []byte
	etag        string
	contentType string
}

// New returns the publisher for the deployment and the contributed publications.
func New(d *plugin.Deployment, pubs []plugin.Publication) *Publisher {
	p := &Publisher{deployment: d, pubs: slices.Clone(pubs), files: contracts.FS()}
	slices.SortFunc(p.pubs, func(a, b plugin.Publication) int { return cmp.Compare(a.Path, b.Path) })
	p.document = sync.OnceValues(p.buildDocument)
	p.examples = sync.OnceValues(p.buildExamples)
	return p
}

// Document returns the discovery document of this deployment.
func (p *Publisher) Document() (Document, error) {
	doc := Document{
		Protocol:        contracts.DiscoveryProtocol,
		Service:         Service{Name: contracts.ServiceName, Version: contracts.ServiceVersion},
		MediaType:       contracts.MediaType,
		SignatureScheme: contracts.SignatureScheme,
		BaseURL:         p.deployment.BaseURL,
		Modules:         append([]string{}, p.deployment.Modules...), // a list, never null
		AgentPlane:      InvitationOnly,
		Locations:       map[string]any{},
	}
	schemas := map[string]string{}
	for _, pub := range p.pubs {
		url := p.deployment.BaseURL + pub.Path
		if pub.Schema {
			if _, dup := schemas[pub.Name]; dup {
				return Document{}, fmt.Errorf("schema %q is published twice", pub.Name)
			}
			schemas[pub.Name] = url
			continue
		}
		if _, dup := doc.Locations[pub.Name]; dup || pub.Name == "schemas" {
			return Document{}, fmt.Errorf("location %q is published twice (module %s)", pub.Name, pub.Module)
		}
		doc.Locations[pub.Name] = url
	}
	doc.Locations["schemas"] = schemas
	return doc, nil
}

func (p *Publisher) buildDocument() (representation, error) {
	doc, err := p.Document()
	if err != nil {
		return representation{}, err
	}
	return newRepresentation(doc, "")
}

// examplesIndex lists, per request shape, its schema and the URLs of its valid and invalid examples.
type examplesIndex struct {
	Shapes []exampleShape `json:"shapes"`
}

type exampleShape struct {
	Name    string   `json:"name"`
	Schema  string   `json:"schema"`
	Valid   []string `json:"valid"`
	Invalid []string `json:"invalid"`
}

func (p *Publisher) buildExamples() (representation, error) {
	idx := examplesIndex{Shapes: []exampleShape{}}
	shapes, err := fs.ReadDir(p.files, "examples")
	if err != nil {
		return representation{}, fmt.Errorf("list examples: %w", err)
	}
	published := map[string]bool{}
	for _, pub := range p.pubs {
		if pub.Schema {
			published[pub.Name] = true
		}
	}
	for _, s := range shapes {
		// Only the shapes of enabled modules: their schemas are the published ones.
		if !published[s.Name()] {
			continue
		}
		shape := exampleShape{Name: s.Name(), Schema: p.deployment.BaseURL + SchemaPath(s.Name()), Valid: []string{}, Invalid: []string{}}
		for _, verdict := range []string{"valid", "invalid"} {
			files, _ := fs.ReadDir(p.files, path.Join("examples", s.Name(), verdict))
			for _, f := range files {
				url := p.deployment.BaseURL + path.Join(ExamplesPath, s.Name(), verdict, f.Name())
				if verdict == "valid" {
					shape.Valid = append(shape.Valid, url)
				} else {
					shape.Invalid = append(shape.Invalid, url)
				}
			}
		}
		idx.Shapes = append(idx.Shapes, shape)
	}
	return newRepresentation(idx, "application/json")
}

// errNoFile is file's answer for a path that names no embedded file. It is not fs.ErrNotExist, which a
// schema missing from a bundle wraps: that is a defect of the document, not a 404.
var errNoFile = errors.New("no embedded file")

// file returns the representation of an embedded file by its path in contracts.FS, or errNoFile.
func (p *Publisher) file(name string) (representation, error) {
	if r, ok := p.fileCache.Load(name); ok {
		return r.(representation), nil
	}
	if !fs.ValidPath(name) {
		return representation{}, errNoFile
	}
	body, err := fs.ReadFile(p.files, name)
	if err != nil {
		return representation{}, errNoFile // absent, or a directory
	}
	if isOpenAPI(name) {
		if body, err = p.forDeployment(body); err != nil {
			return representation{}, fmt.Errorf("serve %s: %w", name, err)
		}
	}
	r := representation{body: body, etag: etagOf(body), contentType: contentType(name)}
	p.fileCache.Store(name, r)
	return r, nil
}

// buildOpenAPI builds every embedded OpenAPI document for this deployment, so that one that cannot be
// bundled fails start-up instead of its first request.
func (p *Publisher) buildOpenAPI() error {
	names := []string{"openapi.json"}
	entries, err := fs.ReadDir(p.files, "openapi")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("list OpenAPI documents: %w", err)
	}
	for _, e := range entries {
		names = append(names, path.Join("openapi", e.Name()))
	}
	for _, name := range names {
		if !isOpenAPI(name) {
			continue
		}
		if _, err := p.file(name); err != nil && !errors.Is(err, errNoFile) {
			return err
		}
	}
	return nil
}

func newRepresentation(v any, contentType string) (representation, error) {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return representation{}, err
	}
	body = append(body, '\n')
	return representation{body: body, etag: etagOf(body), contentType: contentType}, nil
}

func etagOf(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

func contentType(name string) string {
	switch {
	case strings.HasSuffix(name, ".schema.json"):
		return "application/schema+json"
	case strings.HasSuffix(name, ".md"):
		return "text/markdown; charset=utf-8"
	case strings.HasSuffix(name, ".json"):
		return "application/json"
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}
