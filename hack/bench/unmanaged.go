package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// unmanagedRow is the manager's memory with a cluster full of pods it
// has nothing to do with: Deployments' pods in a namespace with no
// budget, no guarded workload and no PersistentPodState (issue 43: at most
// idle + 60 MiB of RSS at 20,000 such pods).
type unmanagedRow struct {
	Pods     int     `json:"pods"`
	IdleRSS  float64 `json:"idle_rss_mib"`
	PeakRSS  float64 `json:"peak_rss_mib"`
	RSS      float64 `json:"settled_rss_mib"`
	IdleLive float64 `json:"idle_live_heap_mib"`
	Live     float64 `json:"live_heap_mib"`
	Seconds  float64 `json:"settled_s"`
}

// unmanagedBench creates pods Deployments of 1,000 pods each, waits until
// every pod is available, and reads the manager's RSS and live heap
// against its own idle figures taken just before.
func (b *bench) unmanagedBench(ctx context.Context, pods int) error {
	ns, err := b.namespace(ctx, "bench-unmanaged")
	if err != nil {
		return err
	}
	rss := func() float64 { return float64(rssBytes(b.c.PID(b.l.Name))) / (1 << 20) }
	row := unmanagedRow{Pods: pods, IdleRSS: rss(), IdleLive: b.liveHeap(ctx)}
	const per = 1000
	var ws []workload
	for i := 0; i*per < pods; i++ {
		w := workload{suite: suite{implementation: "Kubernetes", workload: "Deployment"}, ns: ns, name: fmt.Sprintf("unmanaged-%02d", i)}
		if err := w.create(ctx, b.k8s, int32(min(per, pods-i*per))); err != nil {
			return err
		}
		ws = append(ws, w)
	}
	fmt.Printf("unmanaged: %d pods in %d Deployments\n", pods, len(ws))
	start := time.Now()
	peak := row.IdleRSS
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, time.Hour, true, func(ctx context.Context) (bool, error) {
		peak = max(peak, rss())
		for i, w := range ws {
			if ok, err := w.settled(ctx, b.k8s, int32(min(per, pods-i*per))); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("unmanaged pods: %w", err)
	}
	row.Seconds, row.PeakRSS, row.RSS, row.Live = time.Since(start).Seconds(), peak, rss(), b.liveHeap(ctx)
	b.report.Unmanaged = append(b.report.Unmanaged, row)
	return b.dropNamespace(ctx, ns)
}

func printUnmanaged(r *report) {
	for _, u := range r.Unmanaged {
		fmt.Printf("\nLifeline manager with %d pods it does not manage (Deployments, no budget): RSS idle %.0f MiB, peak %.0f, settled %.0f; live heap %.0f → %.0f MiB (%.0f s)\n",
			u.Pods, u.IdleRSS, u.PeakRSS, u.RSS, u.IdleLive, u.Live, u.Seconds)
	}
}

func unmanagedTargets(r *report) []target {
	name := "manager RSS with 20,000 unmanaged pods ≤ idle + 60 MiB (peak)"
	for _, u := range r.Unmanaged {
		if u.Pods >= 20000 {
			return []target{{Name: name, Figure: fmt.Sprintf("+%.0f MiB (%.0f vs idle %.0f)", u.PeakRSS-u.IdleRSS, u.PeakRSS, u.IdleRSS), Met: u.PeakRSS-u.IdleRSS <= 60}}
		}
	}
	return []target{{Name: name, NotMeasured: true}}
}
