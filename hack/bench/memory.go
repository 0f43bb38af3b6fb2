package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// memoryBench scales one CloneSet through sizes, and at each, once
// settled, reads the manager's resident memory and Go heap in use: how its
// cost grows with the pods it caches. Issue 24's target is under 300 MiB
// of RSS at 10,000 pods, growing at most linearly.
func (b *bench) memoryBench(ctx context.Context, sizes []int) error {
	l := b.l
	ns, err := b.namespace(ctx, "bench-memory")
	if err != nil {
		return err
	}
	type row = memoryRow
	heapNow := func() float64 { return gauge(l.MetricsURL, "go_memstats_heap_inuse_bytes") / (1 << 20) }
	base := row{RSS: float64(rssBytes(b.c.PID(l.Name))) / (1 << 20), Heap: heapNow(), Live: b.liveHeap(ctx)}
	w := workload{suite: suite{workload: "CloneSet"}, ns: ns}
	rows := []row{base}
	for i, n := range sizes {
		start := time.Now()
		change := func(ctx context.Context) error { return w.scale(ctx, b.k8s, int32(n)) }
		if i == 0 {
			change = func(ctx context.Context) error { return w.create(ctx, b.k8s, int32(n)) }
		}
		fmt.Printf("memory: scaling to %d pods\n", n)
		if err := change(ctx); err != nil {
			return err
		}
		peak := int64(0)
		err := wait.PollUntilContextTimeout(ctx, time.Second, time.Hour, true, func(ctx context.Context) (bool, error) {
			peak = max(peak, rssBytes(b.c.PID(l.Name)))
			return w.settled(ctx, b.k8s, int32(n))
		})
		if err != nil {
			return fmt.Errorf("scaling to %d: %w", n, err)
		}
		r := row{Pods: n, RSS: float64(peak) / (1 << 20), Heap: heapNow(), Live: b.liveHeap(ctx), SettledSeconds: time.Since(start).Seconds()}
		r.HeapPerPodKiB = (r.Heap - base.Heap) * 1024 / float64(n)
		r.LivePerPodKiB = (r.Live - base.Live) * 1024 / float64(n)
		rows = append(rows, r)
		if i == len(sizes)-1 {
			if err := b.heapTop(ctx, n); err != nil {
				fmt.Println("memory: no heap profile:", err)
			}
		}
	}
	b.report.Memory = rows
	return b.dropNamespace(ctx, ns)
}

// memoryRow is the manager's memory at one size: peak RSS while it got
// there, Go heap in use once settled (garbage included) and live heap
// right after a collection, in MiB.
type memoryRow struct {
	Pods           int     `json:"pods"`
	RSS            float64 `json:"peak_rss_mib"`
	Heap           float64 `json:"heap_in_use_mib"`
	HeapPerPodKiB  float64 `json:"heap_per_pod_kib,omitempty"`
	Live           float64 `json:"live_heap_mib,omitempty"`
	LivePerPodKiB  float64 `json:"live_heap_per_pod_kib,omitempty"`
	SettledSeconds float64 `json:"settled_s,omitempty"`
}

// gauge reads a gauge from a metrics endpoint, 0 when absent.
func gauge(url, name string) float64 {
	families, err := scraper.Families(url)
	if err != nil {
		return 0
	}
	f, ok := families[name]
	if !ok || len(f.GetMetric()) == 0 {
		return 0
	}
	return f.GetMetric()[0].GetGauge().GetValue()
}

// counter sums a counter's series whose labels include want, 0 when absent.
func counter(url, name string, want map[string]string) float64 {
	families, err := scraper.Families(url)
	if err != nil {
		return 0
	}
	sum := 0.0
	for _, m := range families[name].GetMetric() {
		match := 0
		for _, l := range m.GetLabel() {
			if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
				match++
			}
		}
		if match == len(want) {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// liveHeap has the manager collect garbage (a heap profile with gc=1 does)
// and returns the heap it still holds, in MiB: what the caches and
// controllers keep, without the garbage a heap-in-use figure includes
// depending on when the last collection ran. 0 when it cannot tell.
func (b *bench) liveHeap(ctx context.Context) float64 {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.pprof+"/debug/pprof/heap?gc=1", nil)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return gauge(b.l.MetricsURL, "go_memstats_heap_alloc_bytes") / (1 << 20)
}

// heapTop saves the manager's heap profile and prints what holds the most
// memory in use, so that a figure comes with where it goes.
func (b *bench) heapTop(ctx context.Context, pods int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.pprof+"/debug/pprof/heap", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	path := filepath.Join(os.TempDir(), fmt.Sprintf("lifeline-manager-heap-%d-pods.pprof", pods))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Printf("memory: heap profile at %d pods in %s; what holds the most:\n", pods, path)
	top := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-inuse_space", "-nodecount=15", path)
	top.Stdout, top.Stderr = os.Stdout, os.Stderr
	return top.Run()
}
