package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// evictions are one run of evictions.
type evictions struct {
	Implementation string  `json:"implementation"`
	Run            string  `json:"run"` // no budget, PodDisruptionBudget, PodUnavailableBudget
	Covered        int     `json:"covered_pods"`
	Evictions      int     `json:"evictions"`
	Admitted       int     `json:"admitted"`
	Refused        int     `json:"refused"`
	Conflicts      int     `json:"conflicts_retried"`
	ClientP50Ms    float64 `json:"client_p50_ms"`
	ClientP99Ms    float64 `json:"client_p99_ms"`
	// The budget admission's own figures, Lifeline's only: its latency,
	// its status writes' latency, and disruptions decided per write.
	WebhookP50Ms float64 `json:"webhook_p50_ms,omitempty"`
	WebhookP99Ms float64 `json:"webhook_p99_ms,omitempty"`
	WriteP50Ms   float64 `json:"status_write_p50_ms,omitempty"`
	WriteP99Ms   float64 `json:"status_write_p99_ms,omitempty"`
	Writes       int     `json:"status_writes,omitempty"`
	Batch        float64 `json:"per_write,omitempty"`
	PerSec       float64 `json:"admitted_per_s"`
	CtrlCPU      float64 `json:"manager_cpu_s"`
	CtrlPeakRSS  float64 `json:"manager_peak_rss_mib"`
}

// evictionBench evicts pods inFlight at a time through the eviction API
// from covered pods (bare pods, as budgets over them need no workload):
// with no budget, under a PodDisruptionBudget (minAvailable 75%), and
// under a PodUnavailableBudget (maxUnavailable 25%); OpenKruise's run has
// its budget only. Between runs the evicted pods are created again, so
// each run starts from covered pods. The eviction API writes the budget's
// status before it answers, and so does Lifeline's admission: the PDB is
// the fair anchor.
func (b *bench) evictionBench(ctx context.Context, implementation string) error {
	ns, err := b.namespace(ctx, "bench-evictions")
	if err != nil {
		return err
	}
	covered, n := b.o.budgetPods, b.o.evictions
	fmt.Printf("evictions: creating %d pods\n", covered)
	if err := b.createPods(ctx, ns, "guarded", covered, b.o.inFlight); err != nil {
		return err
	}
	runs := []string{"no budget", "PodDisruptionBudget", "PodUnavailableBudget"}
	if implementation == "OpenKruise" {
		runs = runs[2:]
	}
	for _, run := range runs {
		budget, ready, err := b.budget(ctx, ns, run, covered)
		if err != nil {
			return err
		}
		if ready != nil {
			if err := wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Minute, true, ready); err != nil {
				return fmt.Errorf("waiting for the %s to count %d pods: %w", run, covered, err)
			}
		}
		fmt.Printf("evictions: evicting %d pods, %d in flight (%s, %s)\n", n, b.o.inFlight, implementation, run)
		f, err := b.evict(ctx, ns, n)
		if err != nil {
			return err
		}
		f.Implementation, f.Run, f.Covered = implementation, run, covered
		b.report.Evictions = append(b.report.Evictions, f)
		if budget != nil {
			// By name: the controllers have written its status since.
			budget.SetResourceVersion("")
			if err := b.k8s.Delete(ctx, budget); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		// The evicted pods are gone before they are made again: one
		// still terminating would make its successor's create a no-op.
		if err := b.waitPods(ctx, ns, covered-f.Admitted); err != nil {
			return err
		}
		if err := b.refill(ctx, ns, covered); err != nil {
			return err
		}
	}
	return b.dropNamespace(ctx, ns)
}

// budget creates the run's budget over the pods labelled app=guarded, and
// says when it counts all covered pods available.
func (b *bench) budget(ctx context.Context, ns, run string, covered int) (ctrlclient.Object, wait.ConditionWithContextFunc, error) {
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}
	switch run {
	case "PodDisruptionBudget":
		// Bare pods: a PDB over them takes an absolute minAvailable.
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "guarded"},
			Spec: policyv1.PodDisruptionBudgetSpec{Selector: selector, MinAvailable: ptr.To(intstr.FromInt(covered * 3 / 4))}}
		return pdb, func(ctx context.Context) (bool, error) {
			got := &policyv1.PodDisruptionBudget{}
			if err := b.k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(pdb), got); err != nil {
				return false, nil
			}
			return got.Status.CurrentHealthy == int32(covered) && got.Status.ObservedGeneration == got.Generation, nil
		}, b.k8s.Create(ctx, pdb)
	case "PodUnavailableBudget":
		pub := &policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "guarded",
			Annotations: map[string]string{policyv1alpha1.PubProtectTotalReplicasAnnotation: strconv.Itoa(covered)}},
			Spec: policyv1alpha1.PodUnavailableBudgetSpec{Selector: selector, MaxUnavailable: ptr.To(intstr.FromString("25%"))}}
		return pub, func(ctx context.Context) (bool, error) {
			got := &policyv1alpha1.PodUnavailableBudget{}
			if err := b.k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(pub), got); err != nil {
				return false, nil
			}
			return got.Status.CurrentAvailable == int32(covered), nil
		}, b.k8s.Create(ctx, pub)
	}
	return nil, nil, nil
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

// waitPods waits until ns holds exactly n pods.
func (b *bench) waitPods(ctx context.Context, ns string, n int) error {
	err := wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := b.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		return err == nil && len(list.Items) == n, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d pods in %s: %w", n, ns, err)
	}
	return nil
}

// refill creates the guarded pods again until ns holds n: a create that
// found its predecessor not yet gone is tried again.
func (b *bench) refill(ctx context.Context, ns string, n int) error {
	err := wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := b.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) == n {
			return err == nil, nil
		}
		return false, b.createPods(ctx, ns, "guarded", n, b.o.inFlight)
	})
	if err != nil {
		return fmt.Errorf("making %d pods in %s again: %w", n, ns, err)
	}
	return nil
}

// evict evicts the first n pods of ns, inFlight at a time, and takes the
// figures.
func (b *bench) evict(ctx context.Context, ns string, n int) (evictions, error) {
	list, err := b.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return evictions{}, err
	}
	names := make([]string, 0, len(list.Items))
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	names = names[:min(n, len(names))]
	lifeline := b.kruise == nil
	var before [3]reading
	if lifeline {
		if before, err = readAll(b.l.MetricsURL); err != nil {
			return evictions{}, err
		}
	}
	proc := b.l.Name
	if !lifeline {
		proc = b.kruise.Name
	}
	pid := b.c.PID(proc)
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
	f := evictions{Evictions: len(names)}
	start := time.Now()
	err = parallel(len(names), b.o.inFlight, func(i int) error {
		t0 := time.Now()
		conflicts := 0
		err := b.client.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names[i]}})
		// The eviction API gives up on a budget whose status keeps
		// changing under it (409); a drain tries again, and so does
		// this client, the retries counted in the latency.
		for ; apierrors.IsConflict(err) && conflicts < 100; conflicts++ {
			err = b.client.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names[i]}})
		}
		d := time.Since(t0)
		mu.Lock()
		defer mu.Unlock()
		f.Conflicts += conflicts
		latencies = append(latencies, d)
		switch {
		case err == nil:
			f.Admitted++
		case apierrors.IsForbidden(err) || apierrors.IsTooManyRequests(err):
			f.Refused++
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
	f.ClientP50Ms, f.ClientP99Ms = percentileMs(latencies, 0.5), percentileMs(latencies, 0.99)
	f.PerSec = float64(f.Admitted) / wall.Seconds()
	f.CtrlCPU = cpuSeconds(pid) - cpuBefore
	f.CtrlPeakRSS = float64(peak.Load()) / (1 << 20)
	if !lifeline {
		return f, nil
	}
	after, err := readAll(b.l.MetricsURL)
	if err != nil {
		return f, err
	}
	f.WebhookP50Ms, f.WebhookP99Ms = 1000*quantile(before[0], after[0], 0.5), 1000*quantile(before[0], after[0], 0.99)
	f.WriteP50Ms, f.WriteP99Ms = 1000*quantile(before[1], after[1], 0.5), 1000*quantile(before[1], after[1], 0.99)
	f.Writes = int(after[1].count - before[1].count)
	if batches := after[2].count - before[2].count; batches > 0 {
		f.Batch = (after[2].sum - before[2].sum) / batches
	}
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
// name=value; every series added up) from a metrics endpoint.
func histogram(url, name string, label ...string) (reading, error) {
	families, err := scraper.Families(url)
	if err != nil {
		return reading{}, err
	}
	match := map[string]string{}
	if len(label) == 2 {
		match[label[0]] = label[1]
	}
	return sumHistograms(families[name], match), nil
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
