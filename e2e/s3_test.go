package e2e

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"
)

const (
	// DefaultS3Image is the S3 image `make images` builds (build/s3/build.sh: versitygw, POSIX backend).
	DefaultS3Image = "svc-s3:dev"

	// s3Alias is the S3 server's name on the test network; s3Port is its listener in the container.
	s3Alias = "s3"
	s3Port  = "7070/tcp"

	// The image's root user and region (test credentials, set in build/s3/Dockerfile and passed again
	// here so that the tests do not depend on the image's defaults), and the bucket startS3 creates.
	s3AccessKey = "svcaccess"
	s3SecretKey = "svcsecret123"
	s3Region    = "us-east-1"
	s3Bucket    = "svc-media"
)

// s3Image is the S3 image under test (SVC_S3_IMAGE).
func s3Image() string { return envOr("SVC_S3_IMAGE", DefaultS3Image) }

// s3Server is a running S3 server with one empty bucket.
type s3Server struct {
	*testcontainers.DockerContainer
	// Endpoint is host:port from this host.
	Endpoint string
	// NetworkEndpoint is host:port from the other containers on the network it was started on
	// (s3:7070). Both endpoints speak plain HTTP; address buckets path-style.
	NetworkEndpoint string
	// Bucket exists and is empty when startS3 returns.
	Bucket string
	// AccessKey and SecretKey are the root user's; Region is the server's (us-east-1).
	AccessKey, SecretKey, Region string
}

// startS3 starts the S3 image on the Docker network named networkName, reachable there as s3:7070, waits
// until it answers GET /health, and creates the bucket svc-media. Its logs are printed when the test
// fails; it is removed when the test ends.
func startS3(t *testing.T, networkName string) s3Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	c := runServer(t, ctx, "s3 server", s3Image(),
		network.WithNetworkName([]string{s3Alias}, networkName),
		testcontainers.WithEnv(map[string]string{
			"ROOT_ACCESS_KEY_ID":     s3AccessKey,
			"ROOT_SECRET_ACCESS_KEY": s3SecretKey,
			"VGW_REGION":             s3Region,
		}),
		testcontainers.WithExposedPorts(s3Port),
		readyOn("/health", s3Port))
	endpoint, err := c.PortEndpoint(ctx, s3Port, "")
	if err != nil {
		t.Fatalf("e2e: endpoint of the s3 server: %v", err)
	}
	s := s3Server{
		DockerContainer: c,
		Endpoint:        endpoint,
		NetworkEndpoint: s3Alias + ":" + strings.TrimSuffix(s3Port, "/tcp"),
		Bucket:          s3Bucket,
		AccessKey:       s3AccessKey,
		SecretKey:       s3SecretKey,
		Region:          s3Region,
	}
	if err := s.client(t).MakeBucket(ctx, s.Bucket, minio.MakeBucketOptions{Region: s.Region}); err != nil {
		t.Fatalf("e2e: create bucket %s on the s3 server: %v", s.Bucket, err)
	}
	return s
}

// client returns a minio-go client of s from this host, signing with s's keys.
func (s s3Server) client(t *testing.T) *minio.Client {
	t.Helper()
	return s.clientWith(t, s.AccessKey, s.SecretKey)
}

func (s s3Server) clientWith(t *testing.T, accessKey, secretKey string) *minio.Client {
	t.Helper()
	c, err := minio.New(s.Endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(accessKey, secretKey, ""),
		Region:       s.Region,
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		t.Fatalf("e2e: s3 client of %s: %v", s.Endpoint, err)
	}
	return c
}

// TestS3ServerRoundTrip: the S3 image started by startS3 answers on the network alias it was given and
// keeps an object through minio-go: Put, Stat, Get give back its bytes, Remove deletes it, a missing
// key is NoSuchKey, and a request signed with the wrong secret is refused.
func TestS3ServerRoundTrip(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	nw := newNetwork(t, ctx)
	s3 := startS3(t, nw.Name)
	mc := s3.client(t)

	if s3.NetworkEndpoint != "s3:7070" {
		t.Errorf("NetworkEndpoint = %q, want s3:7070", s3.NetworkEndpoint)
	}
	aliases, err := s3.NetworkAliases(ctx)
	if err != nil {
		t.Fatalf("network aliases of the s3 server: %v", err)
	}
	if !slices.Contains(aliases[nw.Name], s3Alias) {
		t.Errorf("the s3 server's aliases on %s = %q, want %q among them", nw.Name, aliases[nw.Name], s3Alias)
	}
	// Another container on the network reaches it by its alias.
	if r := runOnce(t, ctx, nw, nil, "health", "--url", "http://"+s3.NetworkEndpoint+"/health"); r.ExitCode != 0 {
		t.Errorf("svc health --url http://%s/health from the network: exit %d\nstdout: %s\nstderr: %s",
			s3.NetworkEndpoint, r.ExitCode, r.Stdout, r.Stderr)
	}

	if ok, err := mc.BucketExists(ctx, s3.Bucket); err != nil || !ok {
		t.Fatalf("BucketExists(%s) = %v, %v; want true", s3.Bucket, ok, err)
	}

	data := make([]byte, 3<<20+17) // more than one read buffer, not a round size
	rand.Read(data)
	sum := md5.Sum(data)
	const key, contentType = "media/round/trip.bin", "application/octet-stream"
	info, err := mc.PutObject(ctx, s3.Bucket, key, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: contentType})
	if err != nil {
		t.Fatalf("PutObject %s: %v", key, err)
	}
	if info.Size != int64(len(data)) {
		t.Errorf("PutObject %s: size %d, want %d", key, info.Size, len(data))
	}

	st, err := mc.StatObject(ctx, s3.Bucket, key, minio.StatObjectOptions{})
	if err != nil {
		t.Fatalf("StatObject %s: %v", key, err)
	}
	if st.Size != int64(len(data)) || st.ContentType != contentType || st.ETag != hex.EncodeToString(sum[:]) {
		t.Errorf("StatObject %s: size %d, type %q, etag %q; want %d, %q, %q",
			key, st.Size, st.ContentType, st.ETag, len(data), contentType, hex.EncodeToString(sum[:]))
	}

	obj, err := mc.GetObject(ctx, s3.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatalf("GetObject %s: %v", key, err)
	}
	got, err := io.ReadAll(obj)
	obj.Close()
	if err != nil {
		t.Fatalf("GetObject %s: read: %v", key, err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("GetObject %s: %d bytes, not the %d that were put", key, len(got), len(data))
	}

	// A request signed with the wrong secret is refused, and stores nothing.
	const forged = "media/round/forged.bin"
	_, err = s3.clientWith(t, s3.AccessKey, s3.SecretKey+"x").PutObject(ctx, s3.Bucket, forged,
		bytes.NewReader([]byte("forged")), 6, minio.PutObjectOptions{})
	if code := minio.ToErrorResponse(err).Code; code != "SignatureDoesNotMatch" && code != "AccessDenied" {
		t.Errorf("PutObject with the wrong secret: %v (code %q), want SignatureDoesNotMatch or AccessDenied", err, code)
	}
	if _, err := mc.StatObject(ctx, s3.Bucket, forged, minio.StatObjectOptions{}); minio.ToErrorResponse(err).Code != minio.NoSuchKey {
		t.Errorf("StatObject %s after the refused put: %v, want %s", forged, err, minio.NoSuchKey)
	}

	if err := mc.RemoveObject(ctx, s3.Bucket, key, minio.RemoveObjectOptions{}); err != nil {
		t.Fatalf("RemoveObject %s: %v", key, err)
	}
	if _, err := mc.StatObject(ctx, s3.Bucket, key, minio.StatObjectOptions{}); minio.ToErrorResponse(err).Code != minio.NoSuchKey {
		t.Errorf("StatObject %s after RemoveObject: %v, want %s", key, err, minio.NoSuchKey)
	}
	obj, err = mc.GetObject(ctx, s3.Bucket, key, minio.GetObjectOptions{})
	if err == nil {
		_, err = io.ReadAll(obj)
		obj.Close()
	}
	if minio.ToErrorResponse(err).Code != minio.NoSuchKey {
		t.Errorf("GetObject %s after RemoveObject: %v, want %s", key, err, minio.NoSuchKey)
	}
}
