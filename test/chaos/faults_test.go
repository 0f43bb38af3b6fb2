package chaos

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// runPlan injects each fault of the plan at its time, one after the
// other, until the plan or ctx ends.
func (e *env) runPlan(ctx context.Context, plan Plan) {
	for _, f := range plan.Faults {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(e.startedAt().Add(f.At))):
		}
		began := time.Now()
		what, err := e.inject(ctx, f)
		line := fmt.Sprintf("%6.1fs %s: %s, %.1fs", began.Sub(e.startedAt()).Seconds(), f.Kind, what, time.Since(began).Seconds())
		if err != nil {
			line += fmt.Sprintf(" (failed: %v)", err)
			if ctx.Err() == nil {
				e.t.Errorf("fault %s: %v", f, err)
			}
		}
		e.logf("fault %s", line)
		e.mu.Lock()
		e.faults = append(e.faults, line)
		e.mu.Unlock()
	}
}

func (e *env) inject(ctx context.Context, f Fault) (string, error) {
	switch f.Kind {
	case KillManager:
		return e.killManager(ctx, f.Leader)
	case PauseLeader:
		return e.pauseLeader(ctx)
	case RestartAPIServer:
		counts := e.scrapeWebhookCounts(ctx)
		e.mu.Lock()
		e.webhook.add(counts)
		e.mu.Unlock()
		return "restarted", e.locked(func() error { return e.c.RestartAPIServer(ctx) })
	case RestartEtcd:
		return "restarted", e.locked(func() error { return e.c.RestartEtcd(ctx) })
	case KillBridge:
		return "killed and started again", e.locked(func() error {
			_ = e.c.StopProcess(e.bridge.Name, syscall.SIGKILL) // the supervisor may have it down already
			return e.c.StartBridgeAgain(ctx, e.bridge)
		})
	case StopRegistry:
		if err := e.locked(func() error {
			e.registryStopped = true
			return e.c.StopProcess(e.registry.Name, syscall.SIGTERM)
		}); err != nil {
			return "", err
		}
		sleep(ctx, e.cfg.registryDown)
		return fmt.Sprintf("down for %s", e.cfg.registryDown), e.locked(func() error {
			defer func() { e.registryStopped = false }()
			return e.startAgain(ctx, e.registry.Name, func() error { return e.c.StartRegistryAgain(ctx, e.registry) })
		})
	case SlowAPIServer:
		e.proxy.SetDelay(e.cfg.slowBy)
		sleep(ctx, e.cfg.slowFor)
		e.proxy.SetDelay(0)
		return fmt.Sprintf("answers %s late for %s", e.cfg.slowBy, e.cfg.slowFor), nil
	}
	return "", fmt.Errorf("unknown fault %s", f.Kind)
}

func (e *env) locked(f func() error) error {
	e.procs.Lock()
	defer e.procs.Unlock()
	return f()
}

// sleep waits out a fault's duration: the fault is the waiting.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// killManager SIGKILLs the leading replica (or the standby) and starts it
// again; it reports how long the controllers had no leader.
func (e *env) killManager(ctx context.Context, leader bool) (string, error) {
	lead := e.leader(ctx)
	i := lead
	if i < 0 {
		i = 0
	}
	if !leader && lead >= 0 {
		i = 1 - lead
	}
	m := e.managers[i]
	killedAt := time.Now()
	err := e.locked(func() error {
		if err := e.c.StopProcess(m.Name, syscall.SIGKILL); err != nil && !strings.Contains(err.Error(), "no component") {
			return err
		}
		return e.c.StartLifelineAgain(ctx, m)
	})
	if err != nil {
		return "", err
	}
	role := "standby"
	if i == lead {
		role = "leader"
	}
	if e.leader(ctx) < 0 {
		return role + " " + m.Name + " killed; no leader after 60s", nil
	}
	return fmt.Sprintf("%s %s killed; a leader again after %.1fs", role, m.Name, time.Since(killedAt).Seconds()), nil
}

// pauseLeader SIGSTOPs the leading replica until the other has taken its
// lease, then resumes it, and waits for it to exit (it lost its lease);
// what it writes in between is read from the audit log at the end.
func (e *env) pauseLeader(ctx context.Context) (string, error) {
	i := e.leader(ctx)
	if i < 0 {
		return "no leader to pause", nil
	}
	m := e.managers[i]
	lease, err := e.client.CoordinationV1().Leases(cluster.ManagerNamespace).Get(ctx, "lifeline-manager.lifeline.dev", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		return "", fmt.Errorf("reading the lease: %v", err)
	}
	identity := *lease.Spec.HolderIdentity
	if err := e.locked(func() error { return e.c.Signal(m.Name, syscall.SIGSTOP) }); err != nil {
		return "", err
	}
	stopped := time.Now()
	tookOver := ""
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*leaseDuration, false, func(ctx context.Context) (bool, error) {
		l, err := e.client.CoordinationV1().Leases(cluster.ManagerNamespace).Get(ctx, "lifeline-manager.lifeline.dev", metav1.GetOptions{})
		if err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != identity {
			tookOver = fmt.Sprintf("the other replica led after %.1fs", time.Since(stopped).Seconds())
			return true, nil
		}
		return false, nil
	})
	sleep(ctx, 2*time.Second) // past the take-over, so the resumed leader's queue is stale
	p := Pause{Identity: identity}
	if tookOver == "" {
		// Still the holder: resumed, it leads on, as it may.
		err := e.locked(func() error { return e.c.Signal(m.Name, syscall.SIGCONT) })
		return m.Name + " paused, but the other replica did not take over", err
	}
	err = e.locked(func() error {
		if err := e.c.Signal(m.Name, syscall.SIGCONT); err != nil {
			return err
		}
		p.Resumed = time.Now()
		exited, err := e.c.WaitExit(m.Name, 30*time.Second)
		if err != nil || !exited {
			return fmt.Errorf("the resumed leader did not exit within 30s (%v)", err)
		}
		p.Exited = time.Now()
		return e.c.StartLifelineAgain(ctx, m)
	})
	e.mu.Lock()
	e.pauses = append(e.pauses, p)
	e.mu.Unlock()
	return fmt.Sprintf("%s paused %.1fs; %s; it exited %.1fs after it resumed", m.Name, p.Resumed.Sub(stopped).Seconds(), tookOver, p.Exited.Sub(p.Resumed).Seconds()), err
}

// leader is the index of the leading replica, waiting up to a minute for
// one; -1 when none leads.
func (e *env) leader(ctx context.Context) int {
	lead := -1
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		for i, m := range e.managers {
			if metricAt(m, "leader_election_master_status", "name", "lifeline-manager.lifeline.dev") == 1 {
				lead = i
				return true, nil
			}
		}
		return false, nil
	})
	return lead
}

// metricAt reads a gauge or counter of a manager's metrics, the first
// series whose label is value; -1 when it cannot be read.
func metricAt(m *cluster.Lifeline, name, label, value string) float64 {
	return m.Scraper.Value(m.MetricsURL, name, map[string]string{label: value})
}
