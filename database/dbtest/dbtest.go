// Package dbtest gives store tests a fresh, empty database of each dialect. PostgreSQL comes from
// SVC_TEST_POSTGRES_URL when set (a role that may CREATE DATABASE), else from one container per test
// binary, started with testcontainers-go from the locally built image SVC_POSTGRES_IMAGE (default
// svc-postgres:15, built offline by `make images`). A package that uses PostgreSQL calls Main from its
// TestMain so the container is removed when its tests end.
package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver for the admin connection
	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/database"
)

// Dialects lists every dialect a store test must pass on.
var Dialects = []string{database.SQLite, database.Postgres}

// DefaultImage is the PostgreSQL image `make images` builds.
const DefaultImage = "svc-postgres:15"

// RunLabel labels every container and network the tests start with the run they belong to, so that
// `make sweep` removes only what its own run left behind, never another run's.
const RunLabel = "svc.test.run"

// RunID is this run's: SVC_TEST_RUN (the Makefile sets one per make invocation), or one made for this
// process when the tests run by hand.
var RunID = sync.OnceValue(func() string {
	if id := os.Getenv("SVC_TEST_RUN"); id != "" {
		return id
	}
	return "adhoc-" + randomHex(6)
})

// Labels are the labels of everything this run starts.
func Labels() map[string]string { return map[string]string{RunLabel: RunID()} }

var server struct {
	once      sync.Once
	adminURL  string
	container testcontainers.Container
	err       error
}

// Main runs the tests of a package and then removes the PostgreSQL container they started, if any.
func Main(m *testing.M) {
	code := m.Run()
	if server.container != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := server.container.Terminate(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "dbtest: remove postgres container: %v\n", err)
		}
		cancel()
	}
	os.Exit(code)
}

// AdminURL returns the URL of a role on the test PostgreSQL server that may create and drop databases.
func AdminURL(t testing.TB) string {
	t.Helper()
	server.once.Do(startServer)
	if server.err != nil {
		t.Fatalf("dbtest: no PostgreSQL for tests: %v", server.err)
	}
	return server.adminURL
}

// URL returns the URL of a new, empty database of dialect, dropped when t ends.
func URL(t testing.TB, dialect string) string {
	t.Helper()
	switch dialect {
	case database.SQLite:
		return "sqlite:" + filepath.Join(t.TempDir(), "svc.db")
	case database.Postgres:
		admin := AdminURL(t)
		name := "t_" + randomHex(8)
		exec := func(q string) error {
			db, err := sql.Open("pgx", admin)
			if err != nil {
				return err
			}
			defer db.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err = db.ExecContext(ctx, q)
			return err
		}
		if err := exec("CREATE DATABASE " + name); err != nil {
			t.Fatalf("dbtest: create database: %v", err)
		}
		t.Cleanup(func() {
			if err := exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
				t.Errorf("dbtest: drop database %s: %v", name, err)
			}
		})
		u, err := url.Parse(admin)
		if err != nil {
			t.Fatalf("dbtest: admin URL: %v", err)
		}
		u.Path = "/" + name
		return u.String()
	}
	t.Fatalf("dbtest: unknown dialect %q", dialect)
	return ""
}

// Open returns a new database of dialect with the given migrations applied, closed when t ends.
func Open(t testing.TB, dialect string, sets ...plugin.Migrations) *gorm.DB {
	t.Helper()
	db, err := database.Open(URL(t, dialect), database.Options{})
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := database.Migrate(ctx, db, sets); err != nil {
		t.Fatalf("dbtest: migrate: %v", err)
	}
	return db
}

// Each runs f as a subtest once per dialect.
func Each(t *testing.T, f func(t *testing.T, dialect string)) {
	t.Helper()
	for _, d := range Dialects {
		t.Run(d, func(t *testing.T) { f(t, d) })
	}
}

func startServer() {
	if u := os.Getenv("SVC_TEST_POSTGRES_URL"); u != "" {
		server.adminURL = u
		return
	}
	image := os.Getenv("SVC_POSTGRES_IMAGE")
	if image == "" {
		image = DefaultImage
	}
	// No registry is reachable: a missing image would be pulled and retried until the deadline.
	if err := exec.Command("docker", "image", "inspect", image).Run(); err != nil {
		server.err = fmt.Errorf("image %s is not built (run `make images`), or docker is unavailable: %v", image, err)
		return
	}
	PrepareDocker()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := tcpostgres.Run(ctx, image,
		tcpostgres.WithDatabase("svc"),
		tcpostgres.WithUsername("svc"),
		tcpostgres.WithPassword("svc"),
		tcpostgres.BasicWaitStrategies(),
		testcontainers.WithLabels(Labels()),
		// Trust, not SCRAM: a SCRAM handshake is thousands of hash rounds, which under the race
		// detector on a loaded 2-core machine outran the connect timeout. No test is about passwords.
		testcontainers.WithEnv(map[string]string{"POSTGRES_HOST_AUTH_METHOD": "trust"}),
		testcontainers.WithCmdArgs("-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=300"),
	)
	if c != nil {
		server.container = c
	}
	if err != nil {
		server.err = fmt.Errorf("start postgres container from %s: %w", image, err)
		return
	}
	server.adminURL, server.err = c.ConnectionString(ctx, "sslmode=disable", "connect_timeout=30")
}

// PrepareDocker sets testcontainers-go up for machines that reach no registry, unless the environment
// already says otherwise: the reaper (itself an image that cannot be pulled) is off, because Main and
// the tests remove what they start; and when the Docker engine runs in this network namespace (its
// docker0 bridge is here), published ports are reached on localhost rather than through the default
// gateway that testcontainers-go assumes whenever /.dockerenv exists.
func PrepareDocker() {
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	if os.Getenv("TESTCONTAINERS_HOST_OVERRIDE") == "" && os.Getenv("DOCKER_HOST") == "" {
		if _, err := net.InterfaceByName("docker0"); err == nil {
			os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "localhost")
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
