package sigv1

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/database"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
)

// StaleBound is the oldest a snapshot of the guard's memory may be to be served from: past it, the
// guard reads the database per request until a reload succeeds.
const StaleBound = time.Second

// InForceDelay is how long after a change to the switches, an agent or a key commits it is in force on
// every replica: a replica serves its snapshot only while a read of the version row that began less than
// StaleBound ago confirmed it (fresh), and a read that begins after the commit sees the change, so every
// snapshot without it has expired StaleBound after the commit, and from then on the replica answers
// from a newer snapshot or from the database. The margin covers the difference between the rates of
// two machines' clocks (a few parts per million) many times over.
const InForceDelay = StaleBound + 100*time.Millisecond

// awaitInForce waits until a change that committed before it was called is in force on every replica
// (InForceDelay), and returns the moment, on clock, from which it is. The wait is on the process's own
// monotonic clock, as the replicas' bound is on theirs.
func awaitInForce(ctx context.Context, clock port.Clock) (time.Time, error) {
	t := time.NewTimer(InForceDelay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return time.Time{}, fmt.Errorf("the change is made, but the command stopped before it was in force on every replica (which it is %s after the change): %w", InForceDelay, context.Cause(ctx))
	case <-t.C:
		return clock.Now().UTC(), nil
	}
}

// PollInterval is how often the memory reads the version row: on SQLite it is how changes arrive;
// on PostgreSQL it is the heartbeat that keeps the snapshot fresh and the way changes arrive while the
// listener is down.
const PollInterval = 250 * time.Millisecond

// NotifyChannel is the PostgreSQL channel the state-version trigger notifies (migration 0003).
const NotifyChannel = "svc_sigv1"

// localChanges counts the changes this process made through Switches and Registry: a snapshot taken
// before the latest one is not served, so that a process reads its own writes at once (the replica
// that runs an operator's change sees it on its next request, without waiting for the notification).
var localChanges atomic.Uint64

func changedLocally() { localChanges.Add(1) }

// Memory is the guard's snapshot of the switches and of every key with its agent, loaded when the
// application starts and kept current by the sigv1_state_version row: every change to the switches,
// agents or keys bumps it in the same transaction (a trigger), and on PostgreSQL notifies
// NotifyChannel. The memory reloads everything when the version moves. It is served only while the
// database confirmed it within StaleBound; otherwise the guard reads the database.
type Memory struct {
	db  *gorm.DB
	log *slog.Logger

	snap        atomic.Pointer[snapshot]
	wake        chan struct{}
	listening   atomic.Bool
	failLoads   atomic.Bool // tests: make every read of the version row fail
	failReloads atomic.Bool // tests: make every reload fail, while an unchanged version still confirms the snapshot

	cancel context.CancelFunc
	done   sync.WaitGroup
}

// snapshot is the state the guard needs, as of version.
type snapshot struct {
	version  int64
	local    uint64    // localChanges when it was read
	checked  time.Time // when the read that last confirmed it began
	switches map[string]bool
	keys     map[string]identity // by key id
}

// NewMemory returns the memory on db; Start loads it and keeps it current.
func NewMemory(db *gorm.DB, log *slog.Logger) *Memory {
	return &Memory{db: db, log: log, wake: make(chan struct{}, 1)}
}

// Start loads the snapshot and keeps it current until Stop: a poll every PollInterval and, on
// PostgreSQL, a listener on NotifyChannel. A failed first load is logged, not fatal: the guard reads
// the database until a load succeeds.
func (m *Memory) Start(context.Context) error {
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	failing := false
	m.refresh(ctx, &failing)
	m.done.Go(func() { m.poll(ctx, failing) })
	if d, ok := m.db.Dialector.(*postgres.Dialector); ok && d.Config != nil && d.DSN != "" {
		m.done.Go(func() { m.listen(ctx, d.DSN) })
	}
	return nil
}

// Stop ends the poll and the listener.
func (m *Memory) Stop(context.Context) error {
	if m.cancel != nil {
		m.cancel()
		m.done.Wait()
	}
	return nil
}

// fresh returns the snapshot if it may be served now, else nil.
func (m *Memory) fresh() *snapshot {
	if m == nil {
		return nil
	}
	s := m.snap.Load()
	if s == nil || s.local != localChanges.Load() || time.Since(s.checked) >= StaleBound {
		return nil
	}
	return s
}

// Listening reports whether the PostgreSQL listener is connected.
func (m *Memory) Listening() bool { return m.listening.Load() }

func (m *Memory) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *Memory) poll(ctx context.Context, failing bool) {
	t := time.NewTicker(PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-m.wake:
		}
		m.refresh(ctx, &failing)
	}
}

// refresh confirms the snapshot against the version row, reloading it when the version moved or this
// process changed something since; a failure is logged once, when reloads start failing.
func (m *Memory) refresh(ctx context.Context, failing *bool) {
	err := m.refreshOnce(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
	case err != nil && !*failing:
		*failing = true
		m.log.Warn("sigv1 memory: reload failing; the guard reads the database per request after "+StaleBound.String(), "error", err)
	case err == nil && *failing:
		*failing = false
		m.log.Info("sigv1 memory: reloaded; the guard reads from memory again")
	}
}

func (m *Memory) refreshOnce(ctx context.Context) error {
	start := time.Now()
	local := localChanges.Load()
	if m.failLoads.Load() {
		return errors.New("loads fail (test)")
	}
	db := m.db.WithContext(ctx)
	var version int64
	if err := db.Raw(`SELECT version FROM sigv1_state_version WHERE id = 1`).Scan(&version).Error; err != nil {
		return fmt.Errorf("read state version: %w", err)
	}
	if cur := m.snap.Load(); cur != nil && cur.version == version && cur.local == local {
		next := *cur
		next.checked = start
		m.snap.Store(&next)
		return nil
	}
	if m.failReloads.Load() {
		return errors.New("reloads fail (test)")
	}
	next := snapshot{local: local, checked: start, switches: map[string]bool{}, keys: map[string]identity{}}
	// The version is read before the state, each statement seeing the latest commits: the state is at
	// least as new as the version it is filed under, so a change committed in between is loaded again
	// at the next refresh. (No transaction: on SQLite it would take the write lock.)
	err := func(tx *gorm.DB) error {
		if err := tx.Raw(`SELECT version FROM sigv1_state_version WHERE id = 1`).Scan(&next.version).Error; err != nil {
			return fmt.Errorf("read state version: %w", err)
		}
		var names []string
		if err := tx.Model(&switchRow{}).Pluck("name", &names).Error; err != nil {
			return fmt.Errorf("read switches: %w", err)
		}
		for _, n := range names {
			next.switches[n] = true
		}
		var ids []identity
		if err := tx.Table("sigv1_keys AS k").
			Select("k.id AS key_id, k.agent_id, k.public_key, k.state AS key_state, a.state AS agent_state, a.org_id, a.handle").
			Joins("JOIN sigv1_agents AS a ON a.id = k.agent_id").Scan(&ids).Error; err != nil {
			return fmt.Errorf("read keys: %w", err)
		}
		for _, id := range ids {
			id.checkKey()
			next.keys[id.KeyID] = id
		}
		return nil
	}(db)
	if err != nil {
		return err
	}
	m.snap.Store(&next)
	return nil
}

// listen keeps a connection listening on NotifyChannel (database.Listen), waking the poll on every
// notification and every new connection, and logs each change of state once.
func (m *Memory) listen(ctx context.Context, dsn string) {
	down := false // logged as down since the last connection
	database.Listen(ctx, dsn, NotifyChannel, func(connected bool, err error) {
		switch {
		case connected:
			if !m.listening.Swap(true) {
				m.log.Info("sigv1 memory: listening for changes on " + NotifyChannel)
			}
			m.poke()
		case m.listening.Swap(false) || !down:
			down = true
			m.log.Warn("sigv1 memory: listener not connected; polling every "+PollInterval.String()+" until it reconnects", "error", err)
		}
	}, m.poke)
}
