// Package e2e tests the assembled service as it ships: the svc image (build/svc/build.sh) beside the
// PostgreSQL image (build/postgres/build.sh), both built locally by `make images`, in containers on a
// network of their own, started with testcontainers-go. No container registry is needed or reached.
//
// Environment:
//
//	SVC_IMAGE           the service image    (default svc:dev)
//	SVC_POSTGRES_IMAGE  the PostgreSQL image (default svc-postgres:15)
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/modules/postgres"
	"github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/svcforum/svc/database/dbtest"
)

const (
	// DefaultServiceImage is the service image `make images` builds.
	DefaultServiceImage = "svc:dev"

	// dbAlias is the PostgreSQL container's name on the test network.
	dbAlias = "db"
	// publicPort is the service's public listener in the container.
	publicPort = "8080/tcp"

	// testTimeout bounds each test; cleanupTimeout bounds the removal of what it started.
	testTimeout    = 2 * time.Minute
	cleanupTimeout = 3 * time.Minute
	// stopTimeout is how long a container may take to stop before it is killed.
	stopTimeout = 10 * time.Second
)

// cursorKey seals the cursors of every service the tests start (SVC_CURSOR_KEY).
const cursorKey = "ZTJlIHRlc3QgY3Vyc29yIGtleTogbm90IGEgc2VjcmV0IGF0IGFsbA=="

// draftKey encrypts the personality drafts of every service the tests start (SVC_ONBOARDING_DRAFT_KEY).
const draftKey = "ZTJlIGRyYWZ0IGtleSwgMzIgYnl0ZXMsIHB1YmxpYyE="

// serviceImage and postgresImage are the images under test.
func serviceImage() string  { return envOr("SVC_IMAGE", DefaultServiceImage) }
func postgresImage() string { return envOr("SVC_POSTGRES_IMAGE", dbtest.DefaultImage) }

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func TestMain(m *testing.M) {
	// Before anything reads testcontainers-go's configuration: no reaper (an image that cannot be
	// pulled), and published ports on localhost.
	dbtest.PrepareDocker()
	code := m.Run()
	if sweep() && code == 0 {
		fmt.Fprintln(os.Stderr, "e2e: FAIL: the tests left containers or networks behind")
		code = 1
	}
	os.Exit(code)
}

var dockerClient = sync.OnceValues(func() (*testcontainers.DockerClient, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return testcontainers.NewDockerClientWithOpts(ctx)
})

// docker returns the Docker client the harness uses for what testcontainers-go does not offer.
func docker(t testing.TB) *testcontainers.DockerClient {
	t.Helper()
	cli, err := dockerClient()
	if err != nil {
		t.Fatalf("e2e: no Docker engine: %v", err)
	}
	return cli
}

// sweep removes the containers and networks of this run (testcontainers-go labels them with its
// session ID) that are still there, and reports whether there were any: every test removes what it
// starts, so a leftover is a defect of the tests.
func sweep() (leftovers bool) {
	cli, err := dockerClient()
	if err != nil {
		return false // nothing can have been started
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	filters := make(client.Filters).
		Add("label", "org.testcontainers=true").
		Add("label", "org.testcontainers.sessionId="+testcontainers.SessionID())
	containers, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filters})
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: sweep: list containers: %v\n", err)
	}
	for _, c := range containers.Items {
		leftovers = true
		fmt.Fprintf(os.Stderr, "e2e: sweep: removing leftover container %.12s (%s)\n", c.ID, c.Image)
		if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: sweep: remove container %.12s: %v\n", c.ID, err)
		}
	}
	networks, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: filters})
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: sweep: list networks: %v\n", err)
	}
	for _, n := range networks.Items {
		leftovers = true
		fmt.Fprintf(os.Stderr, "e2e: sweep: removing leftover network %s\n", n.Name)
		if _, err := cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: sweep: remove network %s: %v\n", n.Name, err)
		}
	}
	return leftovers
}

// begin returns a context that ends with the test or after testTimeout, once it has checked that both
// images are there.
func begin(t *testing.T) context.Context {
	t.Helper()
	return beginWithin(t, testTimeout)
}

// beginWithin is begin for a test whose own waits need more than testTimeout.
func beginWithin(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	requireImage(t, ctx, serviceImage())
	requireImage(t, ctx, postgresImage())
	return ctx
}

// requireImage fails the test when image is not in the local engine: with no registry, testcontainers-go
// would try to pull it until the context ends.
func requireImage(t *testing.T, ctx context.Context, image string) {
	t.Helper()
	if _, err := docker(t).ImageInspect(ctx, image); err != nil {
		t.Fatalf("e2e: image %s is not built (run `make images`): %v", image, err)
	}
}

// cleanup removes c when the test ends, within cleanupTimeout from now.
func cleanup(t *testing.T, c testcontainers.Container) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	t.Cleanup(cancel) // registered first, so it runs after the removal
	testcontainers.CleanupContainer(t, c, testcontainers.StopContext(ctx), testcontainers.StopTimeout(stopTimeout))
}

// newNetwork returns a network of the test's own, removed when the test ends.
func newNetwork(t *testing.T, ctx context.Context) *testcontainers.DockerNetwork {
	t.Helper()
	nw, err := network.New(ctx, network.WithLabels(dbtest.Labels()))
	testcontainers.CleanupNetwork(t, nw)
	if err != nil {
		t.Fatalf("e2e: create network: %v", err)
	}
	return nw
}

// startPostgres starts PostgreSQL on nw, reachable there as db:5432 (user, password and database svc).
func startPostgres(t *testing.T, ctx context.Context, nw *testcontainers.DockerNetwork) *postgres.PostgresContainer {
	t.Helper()
	image := postgresImage()
	requireImage(t, ctx, image)
	c, err := postgres.Run(ctx, image,
		testcontainers.WithLogger(tclog.TestLogger(t)),
		testcontainers.WithLabels(dbtest.Labels()),
		postgres.WithDatabase("svc"),
		postgres.WithUsername("svc"),
		postgres.WithPassword("svc"),
		postgres.BasicWaitStrategies(),
		network.WithNetwork([]string{dbAlias}, nw),
	)
	cleanup(t, c)
	if err != nil {
		t.Fatalf("e2e: start postgres from %s: %v", image, err)
	}
	return c
}

// databaseURL is the URL of startPostgres's database from the service's container.
const databaseURL = "postgres://svc:svc@" + dbAlias + ":5432/svc?sslmode=disable"

// service is a running svc container and the URL of its public listener on this host.
type service struct {
	*testcontainers.DockerContainer
	URL string
}

// startService runs `svc serve` on nw with env and waits until /health/ready answers 200. Its logs
// are printed when the test fails.
func startService(t *testing.T, ctx context.Context, nw *testcontainers.DockerNetwork, env map[string]string) *service {
	t.Helper()
	env = maps.Clone(env)
	if _, set := env["SVC_CURSOR_KEY"]; !set {
		env["SVC_CURSOR_KEY"] = cursorKey // every replica of a test seals cursors alike
	}
	if _, set := env["SVC_ONBOARDING_DRAFT_KEY"]; !set {
		env["SVC_ONBOARDING_DRAFT_KEY"] = draftKey // and reads the drafts another wrote
	}
	c := runServer(t, ctx, "service", serviceImage(),
		network.WithNetwork([]string{"svc"}, nw),
		testcontainers.WithEnv(env),
		testcontainers.WithExposedPorts(publicPort, "8081/tcp"),
		readyOn("/health/ready", publicPort))
	endpoint, err := c.PortEndpoint(ctx, publicPort, "http")
	if err != nil {
		t.Fatalf("e2e: public endpoint of the service: %v", err)
	}
	return &service{DockerContainer: c, URL: endpoint}
}

// runServer starts a long-running container of image (labelled for this run, logged to the test),
// waits as opts say, and prints its logs if the test fails; it is removed when the test ends. what
// names it in messages.
func runServer(t *testing.T, ctx context.Context, what, image string, opts ...testcontainers.ContainerCustomizer) *testcontainers.DockerContainer {
	t.Helper()
	requireImage(t, ctx, image)
	c, err := testcontainers.Run(ctx, image, append([]testcontainers.ContainerCustomizer{
		testcontainers.WithLogger(tclog.TestLogger(t)),
		testcontainers.WithLabels(dbtest.Labels()),
	}, opts...)...)
	cleanup(t, c)
	if c != nil {
		t.Cleanup(func() { // runs before the removal
			if t.Failed() {
				dumpLogs(t, what, c)
			}
		})
	}
	if err != nil {
		t.Fatalf("e2e: start %s from %s: %v", what, image, err)
	}
	return c
}

// readyOn waits until GET path on port answers 200. The images are FROM scratch: no shell, so no
// ForListeningPort (it runs one in the container).
func readyOn(path, port string) testcontainers.ContainerCustomizer {
	return testcontainers.WithWaitStrategy(wait.ForHTTP(path).WithPort(port).
		WithStartupTimeout(time.Minute).WithPollInterval(100 * time.Millisecond))
}

// result is what a one-off container did.
type result struct {
	ExitCode       int
	Stdout, Stderr string
}

// runOnce runs the service image with cmd as a one-off container on nw and returns its exit code and
// output once it has exited.
func runOnce(t *testing.T, ctx context.Context, nw *testcontainers.DockerNetwork, env map[string]string, cmd ...string) result {
	t.Helper()
	image := serviceImage()
	requireImage(t, ctx, image)
	c, err := testcontainers.Run(ctx, image,
		testcontainers.WithLogger(tclog.TestLogger(t)),
		testcontainers.WithLabels(dbtest.Labels()),
		network.WithNetwork(nil, nw),
		testcontainers.WithEnv(env),
		testcontainers.WithCmd(cmd...),
		testcontainers.WithWaitStrategy(wait.ForExit().WithExitTimeout(time.Minute)),
	)
	cleanup(t, c)
	if err != nil {
		t.Fatalf("e2e: run %s %s: %v", image, strings.Join(cmd, " "), err)
	}
	state, err := c.State(ctx)
	if err != nil {
		t.Fatalf("e2e: state of %s %s: %v", image, strings.Join(cmd, " "), err)
	}
	if state.Running {
		t.Fatalf("e2e: %s %s still runs after its exit was awaited", image, strings.Join(cmd, " "))
	}
	stdout, stderr := streams(t, ctx, c.GetContainerID())
	return result{ExitCode: state.ExitCode, Stdout: stdout, Stderr: stderr}
}

// streams returns a container's stdout and stderr so far, apart.
func streams(t *testing.T, ctx context.Context, id string) (stdout, stderr string) {
	t.Helper()
	rc, err := docker(t).ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatalf("e2e: logs of %.12s: %v", id, err)
	}
	defer rc.Close()
	var out, errOut bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &errOut, rc); err != nil {
		t.Fatalf("e2e: read logs of %.12s: %v", id, err)
	}
	return out.String(), errOut.String()
}

func dumpLogs(t *testing.T, what string, c *testcontainers.DockerContainer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := c.Logs(ctx)
	if err != nil {
		t.Logf("e2e: logs of the %s: %v", what, err)
		return
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	t.Logf("e2e: logs of the %s container %.12s:\n%s", what, c.GetContainerID(), b)
}

// response is an HTTP response read whole.
type response struct {
	Status      int
	ContentType string
	Body        []byte
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

// get fetches url; a transport error is returned, not fatal, so that callers may poll.
func get(ctx context.Context, url string) (response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return response{}, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, err
	}
	return response{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: body}, nil
}

// mustGet fetches url and fails the test on a transport error.
func mustGet(t *testing.T, ctx context.Context, url string) response {
	t.Helper()
	r, err := get(ctx, url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return r
}

// poll calls check every interval until it returns true and returns the time since start then. It
// fails the test, with check's last report, unless that happens within the given time of start.
func poll(t *testing.T, ctx context.Context, start time.Time, within, interval time.Duration, what string, check func() (bool, string)) time.Duration {
	t.Helper()
	deadline := start.Add(within)
	var last string
	for {
		ok, report := check()
		if ok {
			took := time.Since(start)
			if took > within {
				t.Fatalf("%s: took %s, more than %s", what, took.Round(time.Millisecond), within)
			}
			return took
		}
		last = report
		if !time.Now().Before(deadline) {
			t.Fatalf("%s: not within %s; last: %s", what, within, last)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v; last: %s", what, ctx.Err(), last)
		case <-time.After(min(interval, time.Until(deadline))):
		}
	}
}
