package host

import (
	"fmt"
	"math"
	"net"
	"net/mail"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/database"
)

// Config is everything the svc binary is told, from flags or their environment variables.
type Config struct {
	DatabaseURL      string
	Modules          []string // enabled module IDs; empty means every module built
	PublicAddr       string
	AgentEdgeAddr    string
	AgentPrivateAddr string // empty: the private agent network is off
	AdminAddr        string
	Pprof            bool // serve Go's profiles (net/http/pprof) under /debug/pprof/ on the admin listener
	BaseURL          string
	// AgentEdgeURL and AgentPrivateURL are the public addresses of the agent channels, as agents reach
	// them (behind whatever proxy fronts them): an agent receives them with its identity, since the
	// agent plane's address is never published (spec section 1.4). Empty: derived from the channel's
	// listener and the base URL (agentURL), so that a moved listener is what agents are handed.
	AgentEdgeURL    string
	AgentPrivateURL string
	TrustedProxies  []string
	// OperatorEmail is where the service tells its operator what waits for them (an application
	// waiting for approval); empty tells nobody.
	OperatorEmail string
	// CursorKeys seal the cursors of paged lists (contracts/cursor): base64 keys, comma-separated; the
	// first seals, all open.
	CursorKeys string
	// PublicRate and PublicBurst limit each client address on the public listener (requests per
	// second, and the burst above it), so that no reader can starve the others or the writes.
	PublicRate  float64
	PublicBurst int
	// PublicDocumentsRate and PublicDocumentsBurst are each client address's own budget for the
	// published documents (budgets.documentPath): a tool bootstrapping from discovery reads them all at once.
	PublicDocumentsRate  float64
	PublicDocumentsBurst int
	// ReadDB is the pool of the public read plane, apart from the writes' pool.
	ReadDB database.Options
	// Jobs tune the durable job runner.
	Jobs      JobsSettings
	NoMigrate bool
	// Seed runs the modules' seeders at start-up (svc admin seed): what a deployment that has none
	// needs to take writes.
	Seed            bool
	DatabaseWait    time.Duration
	DB              database.Options
	HTTP            HTTPTimeouts
	ShutdownTimeout time.Duration
	// ShutdownDelay is how long /health/ready answers 503 after SIGTERM before the listeners stop
	// accepting, so that a load balancer takes the replica out of rotation first.
	ShutdownDelay time.Duration
	ReadyTimeout  time.Duration
	LogLevel      string
	LogFormat     string
	// Settings are the values of the modules' flags.
	Settings plugin.Settings
}

// HTTPTimeouts bound every listener's connections.
type HTTPTimeouts struct {
	ReadHeader time.Duration
	Read       time.Duration
	Write      time.Duration
	Idle       time.Duration
}

// DefaultConfig is the configuration with every default applied.
func DefaultConfig() Config {
	return Config{
		DatabaseURL:     "sqlite:./var/svc.db",
		PublicAddr:      ":8080",
		AgentEdgeAddr:   ":8081",
		AdminAddr:       "127.0.0.1:9090",
		BaseURL:         "http://localhost:8080",
		PublicRate:      30,
		PublicBurst:     60,
		ReadDB:          database.Options{MaxOpenConns: 4, MaxIdleConns: 4, ConnMaxLifetime: 30 * time.Minute, ConnMaxIdleTime: 5 * time.Minute, BusyTimeout: 5 * time.Second, Timeout: 2 * time.Second, SlowThreshold: 500 * time.Millisecond},
		DatabaseWait:    30 * time.Second,
		DB:              database.Options{MaxOpenConns: 16, MaxIdleConns: 16, ConnMaxLifetime: 30 * time.Minute, ConnMaxIdleTime: 5 * time.Minute, BusyTimeout: 5 * time.Second, Timeout: 5 * time.Second, SlowThreshold: 500 * time.Millisecond},
		HTTP:            HTTPTimeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: 30 * time.Second, Idle: 120 * time.Second},
		ShutdownTimeout: 20 * time.Second,
		ShutdownDelay:   5 * time.Second,
		Jobs:            JobsSettings{Workers: 4, PollInterval: time.Second, Timeout: 2 * time.Minute, RescueAfter: 10 * time.Minute},
		ReadyTimeout:    2 * time.Second,
		LogLevel:        "info",
		LogFormat:       "auto",
		Settings:        DefaultSettings(),

		// A walk of discovery: its locations (83 with every module) and every example its index lists (about
		// 370), with room to grow.
		PublicDocumentsRate:  30,
		PublicDocumentsBurst: 1000,
	}
}

// flags are shared by every command; each has an environment variable, and --help lists both.
func flags() []cli.Flag {
	d := DefaultConfig()
	env := cli.EnvVars
	host := []cli.Flag{
		&cli.StringFlag{Name: "database-url", Value: d.DatabaseURL, Sources: env("SVC_DATABASE_URL"), Category: "database", Usage: `"postgres://user:pass@host:5432/db?sslmode=..." or "sqlite:" followed by a file path`},
		&cli.DurationFlag{Name: "database-wait", Value: d.DatabaseWait, Sources: env("SVC_DATABASE_WAIT"), Category: "database", Usage: "how long start-up waits for the database to answer"},
		&cli.IntFlag{Name: "db-max-open-conns", Value: d.DB.MaxOpenConns, Sources: env("SVC_DB_MAX_OPEN_CONNS"), Category: "database", Usage: "connection pool: open connections at most"},
		&cli.IntFlag{Name: "db-max-idle-conns", Value: d.DB.MaxIdleConns, Sources: env("SVC_DB_MAX_IDLE_CONNS"), Category: "database", Usage: "connection pool: idle connections kept (fewer than open ones makes a busy pool reconnect over and over)"},
		&cli.DurationFlag{Name: "db-timeout", Value: d.DB.Timeout, Sources: env("SVC_DB_TIMEOUT"), Category: "database", Usage: "the longest a statement or a transaction may take; past it the request gets 503 not_ready (PostgreSQL enforces it too: statement_timeout, lock_timeout, idle_in_transaction_session_timeout)"},
		&cli.DurationFlag{Name: "db-slow-threshold", Value: d.DB.SlowThreshold, Sources: env("SVC_DB_SLOW_THRESHOLD"), Category: "database", Usage: "log statements slower than this (where they ran, never their values)"},
		&cli.DurationFlag{Name: "db-conn-max-lifetime", Value: d.DB.ConnMaxLifetime, Sources: env("SVC_DB_CONN_MAX_LIFETIME"), Category: "database", Usage: "connection pool: a connection's longest life"},
		&cli.DurationFlag{Name: "db-conn-max-idle-time", Value: d.DB.ConnMaxIdleTime, Sources: env("SVC_DB_CONN_MAX_IDLE_TIME"), Category: "database", Usage: "connection pool: a connection's longest idle time"},
		&cli.DurationFlag{Name: "sqlite-busy-timeout", Value: d.DB.BusyTimeout, Sources: env("SVC_SQLITE_BUSY_TIMEOUT"), Category: "database", Usage: "SQLite: how long a writer waits for the write lock"},
		&cli.IntFlag{Name: "db-read-max-conns", Value: d.ReadDB.MaxOpenConns, Sources: env("SVC_DB_READ_MAX_CONNS"), Category: "database", Usage: "the public read plane's own pool: open connections at most (apart from the writes' pool, so reads never take the connections writes need)"},
		&cli.DurationFlag{Name: "db-read-timeout", Value: d.ReadDB.Timeout, Sources: env("SVC_DB_READ_TIMEOUT"), Category: "database", Usage: "the longest a public read's statement may take; past it the read gets 503 not_ready"},
		&cli.IntFlag{Name: "jobs-workers", Value: d.Jobs.Workers, Sources: env("SVC_JOBS_WORKERS"), Category: "jobs", Usage: "durable jobs (image processing, mail) one replica works at once"},
		&cli.DurationFlag{Name: "jobs-poll-interval", Value: d.Jobs.PollInterval, Sources: env("SVC_JOBS_POLL_INTERVAL"), Category: "jobs", Usage: "how often a replica looks for jobs to work"},
		&cli.DurationFlag{Name: "jobs-timeout", Value: d.Jobs.Timeout, Sources: env("SVC_JOBS_TIMEOUT"), Category: "jobs", Usage: "the longest one attempt of a job may run before it is cancelled and retried"},
		&cli.DurationFlag{Name: "jobs-rescue-after", Value: d.Jobs.RescueAfter, Sources: env("SVC_JOBS_RESCUE_AFTER"), Category: "jobs", Usage: "a job still marked running this long after it started (its process died) is retried; more than --jobs-timeout"},
		&cli.StringFlag{Name: "cursor-key", Sources: env("SVC_CURSOR_KEY"), Category: "secrets", Usage: "keys that seal the cursors of paged lists: base64 of at least 32 random bytes (head -c 32 /dev/urandom | base64), comma-separated; the first seals, all open, so to rotate put the new key first and keep the old one for a day (required to serve)"},
		&cli.BoolFlag{Name: "seed", Sources: env("SVC_SEED"), Category: "database", Usage: "after the migrations, give a deployment that has none what it needs to take writes (the example pricing version, the starter categories), as \"svc admin seed\" does; a module that has any already is left as it is"},
		&cli.BoolFlag{Name: "no-migrate", Sources: env("SVC_NO_MIGRATE"), Category: "database", Usage: "do not apply migrations at start-up (run \"svc migrate\" instead)"},
		&cli.StringFlag{Name: "modules", Sources: env("SVC_MODULES"), Category: "modules", Usage: "comma-separated module IDs to enable (default: every module built: " + strings.Join(IDs(Catalog()), ",") + ")"},
		&cli.StringFlag{Name: "public-addr", Value: d.PublicAddr, Sources: env("SVC_PUBLIC_ADDR"), Category: "listeners", Usage: "public listener: read plane, onboarding, discovery, health"},
		&cli.StringFlag{Name: "agent-edge-addr", Value: d.AgentEdgeAddr, Sources: env("SVC_AGENT_EDGE_ADDR"), Category: "listeners", Usage: "agent channel: the public signed-agent edge (/agent-api/v1)"},
		&cli.StringFlag{Name: "agent-private-addr", Sources: env("SVC_AGENT_PRIVATE_ADDR"), Category: "listeners", Usage: "agent channel: the private agent network (off unless set)"},
		&cli.StringFlag{Name: "admin-addr", Value: d.AdminAddr, Sources: env("SVC_ADMIN_ADDR"), Category: "listeners", Usage: "local admin listener: /metrics and health"},
		&cli.BoolFlag{Name: "pprof", Sources: env("SVC_PPROF"), Category: "listeners", Usage: "serve Go's runtime profiles (pprof) under /debug/pprof/ on the admin listener"},
		&cli.StringFlag{Name: "base-url", Value: d.BaseURL, Sources: env("SVC_BASE_URL"), Category: "listeners", Usage: "absolute URL of the public listener, used in published links"},
		&cli.StringFlag{Name: "agent-edge-url", Value: d.AgentEdgeURL, Sources: env("SVC_AGENT_EDGE_URL"), Category: "listeners", Usage: "absolute URL at which agents reach the agent edge; never published, handed to an agent with its identity (agent_api); default: the base URL's scheme and host with the --agent-edge-addr listener's port (its host too, unless it listens on every interface)"},
		&cli.StringFlag{Name: "agent-private-url", Sources: env("SVC_AGENT_PRIVATE_URL"), Category: "listeners", Usage: "absolute URL at which agents on the private network reach it (with --agent-private-addr); default: derived from --agent-private-addr as --agent-edge-url is from --agent-edge-addr"},
		&cli.StringFlag{Name: "operator-email", Sources: env("SVC_OPERATOR_EMAIL"), Category: "operations", Usage: "the operator's mail address: told when an application waits for approval (empty tells nobody)"},
		&cli.FloatFlag{Name: "public-rate", Value: d.PublicRate, Sources: env("SVC_PUBLIC_RATE"), Category: "listeners", Usage: "public listener: requests per second per client address (429 beyond the burst)"},
		&cli.IntFlag{Name: "public-burst", Value: d.PublicBurst, Sources: env("SVC_PUBLIC_BURST"), Category: "listeners", Usage: "public listener: requests a client address may send at once above its rate"},
		&cli.FloatFlag{Name: "public-documents-rate", Value: d.PublicDocumentsRate, Sources: env("SVC_PUBLIC_DOCUMENTS_RATE"), Category: "listeners", Usage: "public listener: requests per second per client address for the published documents (/.well-known/svc, /openapi.json, /contracts/, /developers/ and every location discovery names), apart from the other pages"},
		&cli.IntFlag{Name: "public-documents-burst", Value: d.PublicDocumentsBurst, Sources: env("SVC_PUBLIC_DOCUMENTS_BURST"), Category: "listeners", Usage: "public listener: requests for the published documents a client address may send at once above their rate (a whole walk of discovery)"},
		&cli.StringFlag{Name: "trusted-proxies", Sources: env("SVC_TRUSTED_PROXIES"), Category: "listeners", Usage: "comma-separated proxy IPs or CIDRs whose X-Forwarded-For is believed (default: none)"},
		&cli.DurationFlag{Name: "read-header-timeout", Value: d.HTTP.ReadHeader, Sources: env("SVC_READ_HEADER_TIMEOUT"), Category: "listeners", Usage: "time to read a request's headers"},
		&cli.DurationFlag{Name: "read-timeout", Value: d.HTTP.Read, Sources: env("SVC_READ_TIMEOUT"), Category: "listeners", Usage: "time to read a whole request"},
		&cli.DurationFlag{Name: "write-timeout", Value: d.HTTP.Write, Sources: env("SVC_WRITE_TIMEOUT"), Category: "listeners", Usage: "time to write a response"},
		&cli.DurationFlag{Name: "idle-timeout", Value: d.HTTP.Idle, Sources: env("SVC_IDLE_TIMEOUT"), Category: "listeners", Usage: "time a keep-alive connection may idle"},
		&cli.DurationFlag{Name: "shutdown-delay", Value: d.ShutdownDelay, Sources: env("SVC_SHUTDOWN_DELAY"), Category: "listeners", Usage: "on SIGTERM, how long /health/ready answers 503 before the listeners stop accepting (a load balancer's lame-duck period)"},
		&cli.DurationFlag{Name: "shutdown-timeout", Value: d.ShutdownTimeout, Sources: env("SVC_SHUTDOWN_TIMEOUT"), Category: "listeners", Usage: "on SIGTERM, how long in-flight requests may take to finish"},
		&cli.DurationFlag{Name: "ready-timeout", Value: d.ReadyTimeout, Sources: env("SVC_READY_TIMEOUT"), Category: "listeners", Usage: "time each /health/ready check may take"},
		&cli.StringFlag{Name: "log-level", Value: d.LogLevel, Sources: env("SVC_LOG_LEVEL"), Category: "logging", Usage: "debug, info, warn or error"},
		&cli.StringFlag{Name: "log-format", Value: d.LogFormat, Sources: env("SVC_LOG_FORMAT"), Category: "logging", Usage: "json, text, or auto (text on a terminal, JSON otherwise)"},
	}
	return append(host, moduleFlags()...)
}

// configFrom reads the flags of cmd into a Config and checks it.
func configFrom(cmd *cli.Command) (Config, error) {
	c := Config{
		DatabaseURL:      cmd.String("database-url"),
		Modules:          splitList(cmd.String("modules")),
		PublicAddr:       cmd.String("public-addr"),
		AgentEdgeAddr:    cmd.String("agent-edge-addr"),
		AgentPrivateAddr: cmd.String("agent-private-addr"),
		AdminAddr:        cmd.String("admin-addr"),
		Pprof:            cmd.Bool("pprof"),
		BaseURL:          strings.TrimRight(cmd.String("base-url"), "/"),
		AgentEdgeURL:     strings.TrimRight(cmd.String("agent-edge-url"), "/"),
		AgentPrivateURL:  strings.TrimRight(cmd.String("agent-private-url"), "/"),
		TrustedProxies:   splitList(cmd.String("trusted-proxies")),
		OperatorEmail:    strings.TrimSpace(cmd.String("operator-email")),
		CursorKeys:       cmd.String("cursor-key"),
		PublicRate:       cmd.Float("public-rate"),
		PublicBurst:      cmd.Int("public-burst"),
		NoMigrate:        cmd.Bool("no-migrate"),
		Seed:             cmd.Bool("seed"),
		DatabaseWait:     cmd.Duration("database-wait"),
		DB: database.Options{
			MaxOpenConns:    cmd.Int("db-max-open-conns"),
			MaxIdleConns:    cmd.Int("db-max-idle-conns"),
			ConnMaxLifetime: cmd.Duration("db-conn-max-lifetime"),
			ConnMaxIdleTime: cmd.Duration("db-conn-max-idle-time"),
			BusyTimeout:     cmd.Duration("sqlite-busy-timeout"),
			Timeout:         cmd.Duration("db-timeout"),
			SlowThreshold:   cmd.Duration("db-slow-threshold"),
		},
		ReadDB: database.Options{
			MaxOpenConns:    cmd.Int("db-read-max-conns"),
			MaxIdleConns:    cmd.Int("db-read-max-conns"),
			ConnMaxLifetime: cmd.Duration("db-conn-max-lifetime"),
			ConnMaxIdleTime: cmd.Duration("db-conn-max-idle-time"),
			BusyTimeout:     cmd.Duration("sqlite-busy-timeout"),
			Timeout:         cmd.Duration("db-read-timeout"),
			SlowThreshold:   cmd.Duration("db-slow-threshold"),
		},
		HTTP: HTTPTimeouts{
			ReadHeader: cmd.Duration("read-header-timeout"),
			Read:       cmd.Duration("read-timeout"),
			Write:      cmd.Duration("write-timeout"),
			Idle:       cmd.Duration("idle-timeout"),
		},
		ShutdownTimeout: cmd.Duration("shutdown-timeout"),
		ShutdownDelay:   cmd.Duration("shutdown-delay"),
		Jobs: JobsSettings{
			Workers:      cmd.Int("jobs-workers"),
			PollInterval: cmd.Duration("jobs-poll-interval"),
			Timeout:      cmd.Duration("jobs-timeout"),
			RescueAfter:  cmd.Duration("jobs-rescue-after"),
		},
		ReadyTimeout: cmd.Duration("ready-timeout"),
		LogLevel:     cmd.String("log-level"),
		LogFormat:    cmd.String("log-format"),
		Settings:     cmd,

		PublicDocumentsRate:  cmd.Float("public-documents-rate"),
		PublicDocumentsBurst: cmd.Int("public-documents-burst"),
	}
	return c, c.Validate()
}

// parseDatabaseURL is database.Parse of the --database-url setting, its error naming the setting.
func parseDatabaseURL(u string) (dialect, dsn string, err error) {
	if dialect, dsn, err = database.Parse(u); err != nil {
		return "", "", fmt.Errorf("--database-url / SVC_DATABASE_URL: %w", err)
	}
	return dialect, dsn, nil
}

// Validate reports the first setting that cannot work, in one line.
func (c Config) Validate() error {
	if _, _, err := parseDatabaseURL(c.DatabaseURL); err != nil {
		return err
	}
	for _, u := range []struct{ flag, env, value string }{
		{"base-url", "SVC_BASE_URL", c.BaseURL},
		{"agent-edge-url", "SVC_AGENT_EDGE_URL", c.AgentEdgeURL},
		{"agent-private-url", "SVC_AGENT_PRIVATE_URL", c.AgentPrivateURL},
	} {
		if u.value == "" && u.flag != "base-url" {
			continue
		}
		if !absoluteURL(u.value) {
			return fmt.Errorf("--%s / %s: %q is not an absolute http(s) URL without query", u.flag, u.env, u.value)
		}
	}
	if c.OperatorEmail != "" {
		if a, err := mail.ParseAddress(c.OperatorEmail); err != nil || a.Name != "" || a.Address != c.OperatorEmail {
			return fmt.Errorf("--operator-email / SVC_OPERATOR_EMAIL: %q is not one bare mail address (name@example.org)", c.OperatorEmail)
		}
	}
	if !(c.PublicRate > 0) || math.IsInf(c.PublicRate, 1) || c.PublicBurst < 1 { // NaN and +Inf would lift the limit
		return fmt.Errorf("--public-rate must be a positive number and --public-burst at least 1, got %g and %d", c.PublicRate, c.PublicBurst)
	}
	if !(c.PublicDocumentsRate > 0) || math.IsInf(c.PublicDocumentsRate, 1) || c.PublicDocumentsBurst < 1 {
		return fmt.Errorf("--public-documents-rate must be a positive number and --public-documents-burst at least 1, got %g and %d", c.PublicDocumentsRate, c.PublicDocumentsBurst)
	}
	if c.Jobs.Workers < 1 || c.Jobs.PollInterval < 10*time.Millisecond || c.Jobs.Timeout <= 0 || c.Jobs.RescueAfter <= c.Jobs.Timeout {
		return fmt.Errorf("jobs: --jobs-workers at least 1, --jobs-poll-interval at least 10ms, and --jobs-rescue-after (%s) longer than --jobs-timeout (%s)", c.Jobs.RescueAfter, c.Jobs.Timeout)
	}
	if c.ReadDB.MaxOpenConns < 1 {
		return fmt.Errorf("--db-read-max-conns must be at least 1, got %d", c.ReadDB.MaxOpenConns)
	}
	if c.DB.MaxOpenConns < 1 || c.DB.MaxIdleConns < 0 {
		return fmt.Errorf("--db-max-open-conns must be at least 1 and --db-max-idle-conns not negative, got %d and %d", c.DB.MaxOpenConns, c.DB.MaxIdleConns)
	}
	for name, addr := range map[string]string{"public-addr": c.PublicAddr, "agent-edge-addr": c.AgentEdgeAddr, "admin-addr": c.AdminAddr} {
		if addr == "" {
			return fmt.Errorf("--%s must not be empty", name)
		}
	}
	for _, p := range c.TrustedProxies {
		if _, err := netip.ParsePrefix(p); err != nil {
			if _, err := netip.ParseAddr(p); err != nil {
				return fmt.Errorf("--trusted-proxies / SVC_TRUSTED_PROXIES: %q is not an IP address or CIDR prefix", p)
			}
		}
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		return err
	}
	switch c.LogFormat {
	case "auto", "json", "text":
	default:
		return fmt.Errorf("--log-format / SVC_LOG_FORMAT: %q is not json, text or auto", c.LogFormat)
	}
	if c.ShutdownDelay < 0 {
		return fmt.Errorf("--shutdown-delay must not be negative, got %s", c.ShutdownDelay)
	}
	for name, d := range map[string]time.Duration{"shutdown-timeout": c.ShutdownTimeout, "ready-timeout": c.ReadyTimeout, "read-header-timeout": c.HTTP.ReadHeader, "db-timeout": c.DB.Timeout, "db-read-timeout": c.ReadDB.Timeout, "db-slow-threshold": c.DB.SlowThreshold, "database-wait": c.DatabaseWait} {
		if d <= 0 {
			return fmt.Errorf("--%s must be positive, got %s", name, d)
		}
	}
	return nil
}

// absoluteURL reports whether s is an absolute http(s) URL without query or fragment.
func absoluteURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.RawQuery == "" && u.Fragment == ""
}

// AgentAPI returns the agent plane's base URL on each enabled channel: its URL setting, or the URL
// derived from its listener's configured address (agentURL). The serving process corrects a derived
// URL to the address its listener is bound to (handAgentAPI), for a listener on port 0.
func (c Config) AgentAPI() map[string]string {
	out := map[string]string{}
	if u := agentURL(c.AgentEdgeURL, c.BaseURL, c.AgentEdgeAddr); u != "" {
		out[plugin.ChannelEdge] = u + plugin.AgentPrefix
	}
	if c.AgentPrivateAddr != "" {
		if u := agentURL(c.AgentPrivateURL, c.BaseURL, c.AgentPrivateAddr); u != "" {
			out[plugin.ChannelPrivate] = u + plugin.AgentPrefix
		}
	}
	return out
}

// agentURL is the URL agents are handed for an agent listener at addr: set when its setting is, or
// else the base URL's scheme; the listener's host, or the base URL's host when the listener listens on
// every interface (no host, 0.0.0.0 or ::); and the listener's port. So moving only the listener
// (SVC_AGENT_EDGE_ADDR=:9081) moves what agents are handed (http://localhost:9081 under the default
// base URL). "" when addr or base cannot be read.
func agentURL(set, base, addr string) string {
	if set != "" {
		return set
	}
	u, err := url.Parse(base)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return ""
	}
	if ip, err := netip.ParseAddr(host); host == "" || err == nil && ip.IsUnspecified() {
		host = u.Hostname()
	}
	return u.Scheme + "://" + net.JoinHostPort(host, port)
}

func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if p := strings.TrimSpace(part); p != "" {
			out = append(out, p)
		}
	}
	return out
}
