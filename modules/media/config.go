package media

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/contracts/plugin"
)

// The storages an asset's bytes may live in.
const (
	StorageDir = "dir"
	StorageS3  = "s3"
)

// MaxFile is the largest image an upload may carry (spec section 8), and MaxForm what the rest of the
// form may add to it: the route's body limit is their sum (WIRE.md section 9).
const (
	MaxFile = 5 << 20
	MaxForm = 64 << 10
)

// Config is the module's settings (flags "media-*", environment SVC_MEDIA_*).
type Config struct {
	Storage        string        // dir or s3
	Dir            string        // the directory of the dir storage
	S3             S3Config      // the bucket of the s3 storage
	ReceiveTimeout time.Duration // how long an upload's body may take to arrive (408 past it)
	Attempts       int           // how often processing is tried before the upload fails
	StuckAfter     time.Duration // an upload still processing this long after its last change is failed
	Workers        int           // uploads one replica processes at once (each may hold hundreds of MB)
}

// S3Config names an S3-compatible bucket.
type S3Config struct {
	Endpoint  string // host[:port]
	Bucket    string
	Region    string
	AccessKey string
	SecretKey string
	Insecure  bool // plain HTTP, for a server on a private network
}

// DefaultConfig is the configuration with every default applied.
func DefaultConfig() Config {
	return Config{Storage: StorageDir, Dir: "./var/media", ReceiveTimeout: 30 * time.Second, Attempts: 5, StuckAfter: 2 * time.Hour, Workers: 2, S3: S3Config{Region: "us-east-1"}}
}

// Flags are the module's settings on the svc command line.
func Flags() []cli.Flag {
	d := DefaultConfig()
	env := cli.EnvVars
	const cat = ID
	return []cli.Flag{
		&cli.StringFlag{Name: "media-storage", Value: d.Storage, Sources: env("SVC_MEDIA_STORAGE"), Category: cat, Usage: "where images are kept: dir (a local directory: one replica) or s3 (an S3-compatible bucket: several replicas)"},
		&cli.StringFlag{Name: "media-dir", Value: d.Dir, Sources: env("SVC_MEDIA_DIR"), Category: cat, Usage: "the directory of --media-storage dir"},
		&cli.StringFlag{Name: "media-s3-endpoint", Sources: env("SVC_MEDIA_S3_ENDPOINT"), Category: cat, Usage: "the S3 server, host[:port]"},
		&cli.StringFlag{Name: "media-s3-bucket", Sources: env("SVC_MEDIA_S3_BUCKET"), Category: cat, Usage: "the bucket (it must exist)"},
		&cli.StringFlag{Name: "media-s3-region", Value: d.S3.Region, Sources: env("SVC_MEDIA_S3_REGION"), Category: cat, Usage: "the bucket's region"},
		&cli.StringFlag{Name: "media-s3-access-key", Sources: env("SVC_MEDIA_S3_ACCESS_KEY"), Category: cat, Usage: "the access key"},
		&cli.StringFlag{Name: "media-s3-secret-key", Sources: env("SVC_MEDIA_S3_SECRET_KEY"), Category: cat, Usage: "the secret key"},
		&cli.BoolFlag{Name: "media-s3-insecure", Sources: env("SVC_MEDIA_S3_INSECURE"), Category: cat, Usage: "reach the S3 server over plain HTTP (a private network only)"},
		&cli.DurationFlag{Name: "media-receive-timeout", Value: d.ReceiveTimeout, Sources: env("SVC_MEDIA_RECEIVE_TIMEOUT"), Category: cat, Usage: "how long an upload's body may take to arrive (408 past it)"},
		&cli.DurationFlag{Name: "media-stuck-after", Value: d.StuckAfter, Sources: env("SVC_MEDIA_STUCK_AFTER"), Category: cat, Usage: "an upload still processing this long (every attempt of its job lost) is failed processing_error; longer than attempts x (jobs timeout + rescue)"},
		&cli.IntFlag{Name: "media-workers", Value: d.Workers, Sources: env("SVC_MEDIA_WORKERS"), Category: cat, Usage: "uploads one replica processes at once, in the media queue apart from other jobs: a 40-megapixel image takes about 260 MB while it is processed"},
		&cli.IntFlag{Name: "media-attempts", Value: d.Attempts, Sources: env("SVC_MEDIA_ATTEMPTS"), Category: cat, Usage: "how often an upload's processing is tried (with backoff) before the upload fails"},
	}
}

// NewConfig reads the module's settings and checks them.
func NewConfig(s plugin.Settings) (Config, error) {
	c := Config{
		Storage: s.String("media-storage"),
		Dir:     s.String("media-dir"),
		S3: S3Config{Endpoint: s.String("media-s3-endpoint"), Bucket: s.String("media-s3-bucket"), Region: s.String("media-s3-region"),
			AccessKey: s.String("media-s3-access-key"), SecretKey: s.String("media-s3-secret-key"), Insecure: s.Bool("media-s3-insecure")},
		ReceiveTimeout: s.Duration("media-receive-timeout"),
		Attempts:       s.Int("media-attempts"),
		StuckAfter:     s.Duration("media-stuck-after"),
		Workers:        s.Int("media-workers"),
	}
	return c, c.Validate()
}

// Validate reports the first setting that cannot work, in one line.
func (c Config) Validate() error {
	switch c.Storage {
	case StorageDir:
		if c.Dir == "" {
			return fmt.Errorf("--media-dir / SVC_MEDIA_DIR must name a directory")
		}
	case StorageS3:
		if c.S3.Endpoint == "" || c.S3.Bucket == "" {
			return fmt.Errorf("--media-storage s3 needs --media-s3-endpoint and --media-s3-bucket (SVC_MEDIA_S3_ENDPOINT, SVC_MEDIA_S3_BUCKET)")
		}
	default:
		return fmt.Errorf("--media-storage / SVC_MEDIA_STORAGE: %q is not dir or s3", c.Storage)
	}
	if c.ReceiveTimeout < time.Second {
		return fmt.Errorf("--media-receive-timeout must be at least 1s, got %s", c.ReceiveTimeout)
	}
	if c.Workers < 1 {
		return fmt.Errorf("--media-workers must be at least 1, got %d", c.Workers)
	}
	if c.StuckAfter < time.Minute {
		return fmt.Errorf("--media-stuck-after must be at least 1m, got %s", c.StuckAfter)
	}
	if c.Attempts < 1 {
		return fmt.Errorf("--media-attempts must be at least 1, got %d", c.Attempts)
	}
	return nil
}
