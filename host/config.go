package host

import (
	"fmt"
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
	BaseURL          string
	TrustedProxies   []string
	NoMigrate        bool
	DatabaseWait     time.Duration
	DB               database.Options
	HTTP             HTTPTimeouts
	ShutdownTimeout  time.Duration
	ReadyTimeout     time.Duration
	LogLevel         string
	LogFormat        string
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
		DatabaseWait:    30 * time.Second,
		DB:              database.Options{MaxOpenConns: 16, MaxIdleConns: 4, ConnMaxLifetime: 30 * time.Minute, ConnMaxIdleTime: 5 * time.Minute, BusyTimeout: 5 * time.Second},
		HTTP:            HTTPTimeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: 30 * time.Second, Idle: 120 * time.Second},
		ShutdownTimeout: 20 * time.Second,
		ReadyTimeout:    2 * time.Second,
		LogLevel:        "info",
		LogFormat:       "auto",
		Settings:        DefaultSettings(),
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
		&cli.IntFlag{Name: "db-max-idle-conns", Value: d.DB.MaxIdleConns, Sources: env("SVC_DB_MAX_IDLE_CONNS"), Category: "database", Usage: "connection pool: idle connections kept"},
		&cli.DurationFlag{Name: "db-conn-max-lifetime", Value: d.DB.ConnMaxLifetime, Sources: env("SVC_DB_CONN_MAX_LIFETIME"), Category: "database", Usage: "connection pool: a connection's longest life"},
		&cli.DurationFlag{Name: "db-conn-max-idle-time", Value: d.DB.ConnMaxIdleTime, Sources: env("SVC_DB_CONN_MAX_IDLE_TIME"), Category: "database", Usage: "connection pool: a connection's longest idle time"},
		&cli.DurationFlag{Name: "sqlite-busy-timeout", Value: d.DB.BusyTimeout, Sources: env("SVC_SQLITE_BUSY_TIMEOUT"), Category: "database", Usage: "SQLite: how long a writer waits for the write lock"},
		&cli.BoolFlag{Name: "no-migrate", Sources: env("SVC_NO_MIGRATE"), Category: "database", Usage: "do not apply migrations at start-up (run \"svc migrate\" instead)"},
		&cli.StringFlag{Name: "modules", Sources: env("SVC_MODULES"), Category: "modules", Usage: "comma-separated module IDs to enable (default: every module built: " + strings.Join(IDs(Catalog()), ",") + ")"},
		&cli.StringFlag{Name: "public-addr", Value: d.PublicAddr, Sources: env("SVC_PUBLIC_ADDR"), Category: "listeners", Usage: "public listener: read plane, onboarding, discovery, health"},
		&cli.StringFlag{Name: "agent-edge-addr", Value: d.AgentEdgeAddr, Sources: env("SVC_AGENT_EDGE_ADDR"), Category: "listeners", Usage: "agent channel: the public signed-agent edge (/agent-api/v1)"},
		&cli.StringFlag{Name: "agent-private-addr", Sources: env("SVC_AGENT_PRIVATE_ADDR"), Category: "listeners", Usage: "agent channel: the private agent network (off unless set)"},
		&cli.StringFlag{Name: "admin-addr", Value: d.AdminAddr, Sources: env("SVC_ADMIN_ADDR"), Category: "listeners", Usage: "local admin listener: /metrics and health"},
		&cli.StringFlag{Name: "base-url", Value: d.BaseURL, Sources: env("SVC_BASE_URL"), Category: "listeners", Usage: "absolute URL of the public listener, used in published links"},
		&cli.StringFlag{Name: "trusted-proxies", Sources: env("SVC_TRUSTED_PROXIES"), Category: "listeners", Usage: "comma-separated proxy IPs or CIDRs whose X-Forwarded-For is believed (default: none)"},
		&cli.DurationFlag{Name: "read-header-timeout", Value: d.HTTP.ReadHeader, Sources: env("SVC_READ_HEADER_TIMEOUT"), Category: "listeners", Usage: "time to read a request's headers"},
		&cli.DurationFlag{Name: "read-timeout", Value: d.HTTP.Read, Sources: env("SVC_READ_TIMEOUT"), Category: "listeners", Usage: "time to read a whole request"},
		&cli.DurationFlag{Name: "write-timeout", Value: d.HTTP.Write, Sources: env("SVC_WRITE_TIMEOUT"), Category: "listeners", Usage: "time to write a response"},
		&cli.DurationFlag{Name: "idle-timeout", Value: d.HTTP.Idle, Sources: env("SVC_IDLE_TIMEOUT"), Category: "listeners", Usage: "time a keep-alive connection may idle"},
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
		BaseURL:          strings.TrimRight(cmd.String("base-url"), "/"),
		TrustedProxies:   splitList(cmd.String("trusted-proxies")),
		NoMigrate:        cmd.Bool("no-migrate"),
		DatabaseWait:     cmd.Duration("database-wait"),
		DB: database.Options{
			MaxOpenConns:    cmd.Int("db-max-open-conns"),
			MaxIdleConns:    cmd.Int("db-max-idle-conns"),
			ConnMaxLifetime: cmd.Duration("db-conn-max-lifetime"),
			ConnMaxIdleTime: cmd.Duration("db-conn-max-idle-time"),
			BusyTimeout:     cmd.Duration("sqlite-busy-timeout"),
		},
		HTTP: HTTPTimeouts{
			ReadHeader: cmd.Duration("read-header-timeout"),
			Read:       cmd.Duration("read-timeout"),
			Write:      cmd.Duration("write-timeout"),
			Idle:       cmd.Duration("idle-timeout"),
		},
		ShutdownTimeout: cmd.Duration("shutdown-timeout"),
		ReadyTimeout:    cmd.Duration("ready-timeout"),
		LogLevel:        cmd.String("log-level"),
		LogFormat:       cmd.String("log-format"),
		Settings:        cmd,
	}
	return c, c.Validate()
}

// Validate reports the first setting that cannot work, in one line.
func (c Config) Validate() error {
	if _, _, err := database.Parse(c.DatabaseURL); err != nil {
		return fmt.Errorf("--database-url / SVC_DATABASE_URL: %w", err)
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("--base-url / SVC_BASE_URL: %q is not an absolute http(s) URL without query", c.BaseURL)
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
	for name, d := range map[string]time.Duration{"shutdown-timeout": c.ShutdownTimeout, "ready-timeout": c.ReadyTimeout, "read-header-timeout": c.HTTP.ReadHeader} {
		if d <= 0 {
			return fmt.Errorf("--%s must be positive, got %s", name, d)
		}
	}
	return nil
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
