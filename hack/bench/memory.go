package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// memoryBench scales one CloneSet through sizes, and at each, once
// settled, reads the manager's resident memory and Go heap in use: how its
// cost grows with the pods it caches. Issue 24's target is under 300 MiB
// of RSS at 10,000 pods, growing at most linearly.
func (b *bench) memoryBench(ctx context.Context, l *cluster.Lifeline, sizes []int) error {
	ns := "bench-memory"
	if _, err := b.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := cluster.WaitForServiceAccount(ctx, b.client, ns); err != nil {
		return err
	}
	type row struct {
		pods       int
		rss, heap  float64
		settleTime time.Duration
	}
	heapNow := func() float64 { return gauge(l.MetricsURL, "go_memstats_heap_inuse_bytes") }
	base := row{rss: float64(rssBytes(b.c.PID(l.Name))), heap: heapNow()}
	w := workload{kind: "CloneSet", ns: ns}
	var rows []row
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
			return w.settled(ctx, b.k8s, b, int32(n))
		})
		if err != nil {
			return fmt.Errorf("scaling to %d: %w", n, err)
		}
		rows = append(rows, row{pods: n, rss: float64(peak), heap: heapNow(), settleTime: time.Since(start)})
		if i == len(sizes)-1 {
			if err := b.heapTop(ctx, n); err != nil {
				fmt.Println("memory: no heap profile:", err)
			}
		}
	}
	fmt.Println("Manager memory by pods cached (target: peak RSS under 300 MiB at 10,000 pods, at most linear):")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "pods\tpeak RSS MiB\theap in use MiB\theap per pod KiB\tsettled in s\t")
	fmt.Fprintf(tw, "%d\t%.0f\t%.0f\t\t\t\n", 0, base.rss/(1<<20), base.heap/(1<<20))
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%.0f\t%.0f\t%.1f\t%.0f\t\n", r.pods, r.rss/(1<<20), r.heap/(1<<20), (r.heap-base.heap)/float64(r.pods)/1024, r.settleTime.Seconds())
	}
	return tw.Flush()
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
