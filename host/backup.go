package host

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/database"

	_ "modernc.org/sqlite" // the "sqlite" driver the backup reads the live file with
)

// errBackupPostgres is the answer of `svc admin backup` on PostgreSQL, whose own tools do it better.
var errBackupPostgres = errors.New(`backup: the database is PostgreSQL: back it up with pg_dump and restore it with pg_restore (host/README.md, "Backups")`)

// backupCommand is `svc admin backup --to FILE`: a consistent copy of the SQLite database, taken while
// the service serves from it.
func backupCommand(stdout io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "backup",
		Usage: "copy the SQLite database, consistently and while the service serves, to a new file (PostgreSQL: pg_dump, see host/README.md)",
		Flags: []cli.Flag{&cli.StringFlag{Name: "to", Usage: "the backup `FILE` to create; an existing file is never overwritten", Required: true}},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := plainArguments(cmd); err != nil {
				return err
			}
			dialect, path, err := parseDatabaseURL(cmd.String("database-url"))
			if err != nil {
				return err
			}
			if dialect != database.SQLite {
				return errBackupPostgres
			}
			if path, err = filepath.Abs(path); err != nil {
				return fmt.Errorf("backup: %w", err)
			}
			// Interrupted, it stops copying and removes its temporary file.
			ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			to, size, err := backupSQLite(ctx, path, cmd.String("to"), cmd.Duration("sqlite-busy-timeout"))
			if err != nil {
				return err
			}
			return plugin.Print(cmd, stdout, map[string]any{"database": path, "path": to, "bytes": size})
		},
	}
}

// backupSQLite copies the SQLite database at src (an absolute path) into a new file at dest with VACUUM
// INTO, and returns the new file's absolute path and size.
//
// VACUUM INTO reads one snapshot of the database in a read transaction: in WAL mode, writers (this
// process's or the service's) go on meanwhile and the copy holds exactly what was committed when it
// began. The database is opened read-only and outside svc's pools: the copy needs no turn in the
// write queue (it would hold this process's writers back for as long as it runs), never checkpoints,
// never migrates, and never creates a database that is not there. The copy is written under a
// temporary name in dest's directory, synced (SQLite does not sync a VACUUM INTO file), and linked to
// dest only when complete, so that dest is either the whole backup or absent.
func backupSQLite(ctx context.Context, src, dest string, busy time.Duration) (string, int64, error) {
	if _, err := os.Stat(src); err != nil {
		return "", 0, fmt.Errorf("backup: no database to back up: %w", err)
	}
	dest, err := filepath.Abs(dest)
	if err != nil {
		return "", 0, fmt.Errorf("backup: %w", err)
	}
	if _, err := os.Lstat(dest); err == nil {
		return "", 0, errExists(dest)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", 0, fmt.Errorf("backup: %w", err)
	}

	if info, err := os.Stat(filepath.Dir(dest)); err != nil {
		return "", 0, fmt.Errorf("backup: %w", err)
	} else if !info.IsDir() {
		return "", 0, fmt.Errorf("backup: %s is not a directory", filepath.Dir(dest))
	}

	// VACUUM INTO writes into a file that is missing or empty: an empty one of our own, private.
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".*.partial")
	if err != nil {
		return "", 0, fmt.Errorf("backup: %w", err)
	}
	tmpName := tmp.Name()
	_ = tmp.Close()
	done := false
	defer func() {
		if !done {
			_ = os.Remove(tmpName)
		}
	}()

	if err := vacuumInto(ctx, src, tmpName, busy); err != nil {
		return "", 0, err
	}
	size, err := syncFile(tmpName)
	if err != nil {
		return "", 0, fmt.Errorf("backup: %w", err)
	}
	if err := nameBackup(tmpName, dest); err != nil {
		return "", 0, err
	}
	done = true
	if err := syncDir(filepath.Dir(dest)); err != nil {
		return "", 0, fmt.Errorf("backup: %w", err)
	}
	return dest, size, nil
}

// errExists refuses to overwrite the file at dest.
func errExists(dest string) error {
	return fmt.Errorf("backup: %s exists: choose a new file (a backup never overwrites one)", dest)
}

// nameBackup gives the complete file tmp the name dest. A hard link, unlike a rename, fails rather than
// replace a file that appeared at dest since it was checked.
func nameBackup(tmp, dest string) error {
	if err := os.Link(tmp, dest); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return errExists(dest)
		}
		return fmt.Errorf("backup: %w", err)
	}
	return os.Remove(tmp)
}

// vacuumInto runs VACUUM INTO out on the database at src, opened read-only.
func vacuumInto(ctx context.Context, src, out string, busy time.Duration) error {
	dsn := (&url.URL{Scheme: "file", Path: src, RawQuery: fmt.Sprintf("mode=ro&_pragma=busy_timeout(%d)", busy.Milliseconds())}).String()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return fmt.Errorf("backup: open %s: %w", src, err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", out); err != nil {
		return fmt.Errorf("backup of %s: %w", src, err)
	}
	return nil
}

// syncFile flushes the file at name to stable storage and returns its size.
func syncFile(name string) (int64, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return 0, err
	}
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return info.Size(), f.Close()
}

// syncDir makes the new name in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
