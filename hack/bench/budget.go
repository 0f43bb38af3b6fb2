package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// budgetFigures are one run of pod deletions.
type budgetFigures struct {
	name                   string
	deletions, admitted    int
	refused                int
	clientP50, clientP99   time.Duration
	webhookP50, webhookP99 float64 // seconds, from the manager's histogram
	writeP50, writeP99     float64 // the admission's status writes, seconds
	writes                 int
	batch                  float64 // disruptions decided per status write
	perSec                 float64
	ctrlCPU                float64
	ctrlPeakRSS            int64
}

// budgetBench deletes pods at inFlight at a time, first from a namespace
// without a budget, then from one whose budget (maxUnavailable 25%)
// covers covered pods, and prints both side by side: the latency of each
// DELETE as the client sees it (the API server and both pod webhooks) and
// as the budget's admission measures itself, admitted deletions per
// second, and the manager's CPU and peak RSS.
func (b *bench) budgetBench(ctx context.Context, l *cluster.Lifeline, covered, deletions, inFlight int) error {
	plain, guarded := "bench-nobudget", "bench-budget"
	for _, ns := range []string{plain, guarded} {
		if _, err := b.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		if err := cluster.WaitForServiceAccount(ctx, b.client, ns); err != nil {
			return err
		}
	}
	pub := &policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Namespace: guarded, Name: "guarded",
		Annotations: map[string]string{policyv1alpha1.PubProtectTotalReplicasAnnotation: strconv.Itoa(covered)}},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}},
			MaxUnavailable: ptr.To(intstr.FromString("25%"))}}
	if err := b.k8s.Create(ctx, pub); err != nil {
		return err
	}
	fmt.Printf("budget: creating %d pods without a budget and %d under one\n", deletions, covered)
	if err := b.createPods(ctx, plain, "plain", deletions, inFlight); err != nil {
		return err
	}
	if err := b.createPods(ctx, guarded, "guarded", covered, inFlight); err != nil {
		return err
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Minute, true, func(ctx context.Context) (bool, error) {
		got := &policyv1alpha1.PodUnavailableBudget{}
		if err := b.k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(pub), got); err != nil {
			return false, nil
		}
		return got.Status.CurrentAvailable == int32(covered), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d pods available under the budget: %w", covered, err)
	}
	var figures []budgetFigures
	for _, run := range []struct{ name, ns string }{{"no budget", plain}, {fmt.Sprintf("budget over %d pods", covered), guarded}} {
		fmt.Printf("budget: deleting %d pods, %d in flight (%s)\n", deletions, inFlight, run.name)
		f, err := b.deletePods(ctx, l, run.ns, deletions, inFlight)
		if err != nil {
			return err
		}
		f.name = run.name
		figures = append(figures, f)
	}
	fmt.Println()
	fmt.Printf("Pod deletions, %d in flight (target under a budget: webhook p99 under 10 ms; no list of pods per request):\n", inFlight)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tdeletions\tadmitted\trefused\tclient p50 ms\tclient p99 ms\tbudget admission p50 ms\tp99 ms\tstatus writes\tper write\twrite p50 ms\tp99 ms\tadmitted/s\tmanager CPU s\tmanager peak RSS MiB\t")
	for _, f := range figures {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f\t%.1f\t%.2f\t%.2f\t%d\t%.1f\t%.1f\t%.1f\t%.0f\t%.1f\t%.0f\t\n", f.name, f.deletions, f.admitted, f.refused,
			ms(f.clientP50), ms(f.clientP99), f.webhookP50*1000, f.webhookP99*1000, f.writes, f.batch, f.writeP50*1000, f.writeP99*1000,
			f.perSec, f.ctrlCPU, float64(f.ctrlPeakRSS)/(1<<20))
	}
	tw.Flush()
	fmt.Println("  (client latency is the whole DELETE at the API server, both pod webhooks included; the budget admission's is")
	fmt.Println("  measured in the manager, its conditional status write included, interpolated from its histogram)")
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// createPods creates n bare pods labelled app, inFlight at a time.
func (b *bench) createPods(ctx context.Context, ns, app string, n, inFlight int) error {
	return parallel(n, inFlight, func(i int) error {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%05d", app, i), Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}}}
		_, err := b.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// deletePods deletes the first n pods of ns, inFlight at a time, and takes
// the figures.
func (b *bench) deletePods(ctx context.Context, l *cluster.Lifeline, ns string, n, inFlight int) (budgetFigures, error) {
	list, err := b.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return budgetFigures{}, err
	}
	names := make([]string, 0, len(list.Items))
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	names = names[:min(n, len(names))]
	before, err := readAll(l.MetricsURL)
	if err != nil {
		return budgetFigures{}, err
	}
	pid := b.c.PID(l.Name)
	cpuBefore := cpuSeconds(pid)
	var peak atomic.Int64
	sampling, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for sampling.Err() == nil {
			if rss := rssBytes(pid); rss > peak.Load() {
				peak.Store(rss)
			}
			time.Sleep(100 * time.Millisecond) // sampling period of a measurement, not a wait for a condition
		}
	}()
	var mu sync.Mutex
	var latencies []time.Duration
	f := budgetFigures{deletions: len(names)}
	start := time.Now()
	err = parallel(len(names), inFlight, func(i int) error {
		t0 := time.Now()
		err := b.client.CoreV1().Pods(ns).Delete(ctx, names[i], metav1.DeleteOptions{})
		d := time.Since(t0)
		mu.Lock()
		defer mu.Unlock()
		latencies = append(latencies, d)
		switch {
		case err == nil:
			f.admitted++
		case apierrors.IsForbidden(err):
			f.refused++
		default:
			return err
		}
		return nil
	})
	wall := time.Since(start)
	stop()
	if err != nil {
		return f, err
	}
	after, err := readAll(l.MetricsURL)
	if err != nil {
		return f, err
	}
	slices.Sort(latencies)
	at := func(q float64) time.Duration { return latencies[min(len(latencies)-1, int(q*float64(len(latencies))))] }
	f.clientP50, f.clientP99 = at(0.5), at(0.99)
	f.webhookP50, f.webhookP99 = quantile(before[0], after[0], 0.5), quantile(before[0], after[0], 0.99)
	f.writeP50, f.writeP99 = quantile(before[1], after[1], 0.5), quantile(before[1], after[1], 0.99)
	f.writes = int(after[1].count - before[1].count)
	if batches := after[2].count - before[2].count; batches > 0 {
		f.batch = (after[2].sum - before[2].sum) / batches
	}
	f.perSec = float64(f.admitted) / wall.Seconds()
	f.ctrlCPU = cpuSeconds(pid) - cpuBefore
	f.ctrlPeakRSS = peak.Load()
	return f, nil
}

// readAll reads the admission's latency, its status writes' latency and
// its batch sizes.
func readAll(url string) ([3]reading, error) {
	var out [3]reading
	var err error
	if out[0], err = histogram(url, "lifeline_pub_admission_duration_seconds"); err != nil {
		return out, err
	}
	if out[1], err = histogram(url, "lifeline_pub_status_write_duration_seconds", "result", "written"); err != nil {
		return out, err
	}
	out[2], err = histogram(url, "lifeline_pub_admission_batch_size")
	return out, err
}

// parallel runs do(0..n-1), inFlight at a time, and returns the first error.
func parallel(n, inFlight int, do func(int) error) error {
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for w := 0; w < inFlight; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if err := do(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// bucket is one cumulative histogram bucket.
type bucket struct {
	le    float64
	count float64
}

// reading is a histogram's cumulative buckets, count and sum.
type reading struct {
	buckets    []bucket
	count, sum float64
}

// scraper reads the manager's metrics.
var scraper *cluster.Scraper

// histogram reads a histogram (the series with label, when given as
// name=value) from a metrics endpoint.
func histogram(url, name string, label ...string) (reading, error) {
	families, err := scraper.Families(url)
	if err != nil {
		return reading{}, err
	}
	f, ok := families[name]
	if !ok {
		return reading{}, nil
	}
metric:
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if len(label) == 2 && l.GetName() == label[0] && l.GetValue() != label[1] {
				continue metric
			}
		}
		h := m.GetHistogram()
		r := reading{count: float64(h.GetSampleCount()), sum: h.GetSampleSum()}
		for _, b := range h.GetBucket() {
			r.buckets = append(r.buckets, bucket{le: b.GetUpperBound(), count: float64(b.GetCumulativeCount())})
		}
		return r, nil
	}
	return reading{}, nil
}

// quantile is the q-quantile of the observations between two readings of
// a histogram, interpolated linearly within its bucket.
func quantile(b, a reading, q float64) float64 {
	before, after := b.buckets, a.buckets
	if len(after) == 0 {
		return 0
	}
	delta := make([]bucket, len(after))
	for i := range after {
		delta[i] = after[i]
		if i < len(before) {
			delta[i].count -= before[i].count
		}
	}
	total := delta[len(delta)-1].count
	if total == 0 {
		return 0
	}
	rank, lower, below := q*total, 0.0, 0.0
	for _, b := range delta {
		if b.count >= rank {
			if b.count == below {
				return b.le
			}
			return lower + (b.le-lower)*(rank-below)/(b.count-below)
		}
		lower, below = b.le, b.count
	}
	return lower
}
