package sigv1

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/svcforum/svc/contracts/port"
)

// Pruner deletes what the guard no longer needs, every PruneInterval: nonces older than NonceWindow,
// stored responses older than ResponseTTL, and ended rate windows. Every replica prunes; the deletes
// are idempotent.
type Pruner struct {
	cfg     Config
	clock   port.Clock
	log     *slog.Logger
	nonces  *Nonces
	claims  *Claims
	limiter *Limiter

	stop chan struct{}
	done sync.WaitGroup
}

// NewPruner returns the pruner; Start runs it.
func NewPruner(cfg Config, clock port.Clock, log *slog.Logger, nonces *Nonces, claims *Claims, limiter *Limiter) *Pruner {
	return &Pruner{cfg: cfg, clock: clock, log: log, nonces: nonces, claims: claims, limiter: limiter}
}

// Start prunes at once and then every PruneInterval, until Stop.
func (p *Pruner) Start(context.Context) error {
	p.stop = make(chan struct{})
	p.done.Go(func() {
		t := time.NewTicker(p.cfg.PruneInterval)
		defer t.Stop()
		for {
			p.Prune(context.Background())
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	})
	return nil
}

// Stop ends the loop and waits for a prune in progress.
func (p *Pruner) Stop(context.Context) error {
	close(p.stop)
	p.done.Wait()
	return nil
}

// Prune runs one pass; a failure is logged and retried at the next pass.
func (p *Pruner) Prune(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	now := p.clock.Now()
	n, err1 := p.nonces.Prune(ctx, now)
	k, err2 := p.claims.Prune(ctx, now)
	w, err3 := p.limiter.Prune(ctx, p.cfg.RateWindow, now)
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			p.log.WarnContext(ctx, "prune", "module", ID, "error", err)
		}
	}
	p.log.DebugContext(ctx, "pruned", "module", ID, "nonces", n, "idempotency_keys", k, "rate_windows", w)
}
