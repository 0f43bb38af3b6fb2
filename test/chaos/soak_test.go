package chaos

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// soakConfig is a soak's size: make soak (LIFELINE_SOAK=full) runs
// 1,000 then 10,000 pods over 50 CloneSets and 20 budgets, 10 minutes
// idle each; make test a small one.
type soakConfig struct {
	name      string
	legs      []int
	cloneSets int
	budgets   int
	idle      time.Duration
	nodes     int
	deadline  time.Duration
}

func soakFromEnv() soakConfig {
	if os.Getenv("LIFELINE_SOAK") == "full" {
		return soakConfig{name: "full", legs: []int{1000, 10000}, cloneSets: 50, budgets: 20, idle: 10 * time.Minute, nodes: 10, deadline: 30 * time.Minute}
	}
	sc := soakConfig{name: "short", legs: []int{100, 250}, cloneSets: 50, budgets: 20, idle: 20 * time.Second, nodes: 3, deadline: 5 * time.Minute}
	// LIFELINE_SOAK_LEGS=1000 runs the short soak at other sizes, to look
	// at one without the full run's hour.
	if v := os.Getenv("LIFELINE_SOAK_LEGS"); v != "" {
		sc.name, sc.legs, sc.nodes, sc.deadline = "legs "+v, nil, 10, 30*time.Minute
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < sc.cloneSets {
				panic(fmt.Sprintf("LIFELINE_SOAK_LEGS=%q: want pod counts of at least %d, comma-separated", v, sc.cloneSets))
			}
			sc.legs = append(sc.legs, n)
		}
	}
	return sc
}

// usage is what the leading manager spent over a stretch of time.
type usage struct {
	took                           time.Duration
	cpu, reconciles, requests      float64 // per second
	peakRSS                        int64
	cpuStart, reconStart, reqStart float64
}

// leg is one soak size's figures.
type leg struct {
	pods            int
	idle, update    usage
	settled, rolled time.Duration
	// rollout is when the rollout ran, to attribute the manager's writes.
	rollout struct{ from, to time.Time }
	// writes counts the manager's writes during the rollout by verb and
	// resource, from the API server's audit log.
	writes map[string]int
}

// TestSoak holds many CloneSets and budgets at rest, then rolls all of
// them out at once, at two sizes, and reports what the leading manager
// spent (CPU, peak RSS, reconciles and API requests per second) idle and
// during the rollout at each size; the recorded pod writes are judged
// like a chaos run's (no faults here).
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a local cluster")
	}
	sc := soakFromEnv()
	e := start(t, config{name: "soak-" + sc.name, nodes: sc.nodes, deadline: sc.deadline})
	ctx, _ := e.begin(t)
	h := &History{NodeZones: e.nodeZones()}
	var ws []*workload
	for i := range sc.cloneSets {
		w := budgetedCloneSet(e.ns, 0)
		w.Name = fmt.Sprintf("web-%02d", i)
		w.obj.SetName(w.Name)
		podTemplate(w.obj).Labels["app"] = w.Name
		setSelector(w.obj, w.Name)
		if i >= sc.budgets {
			w.budget = 0
		}
		ws = append(ws, w)
		h.Workloads = append(h.Workloads, w.Workload)
	}
	var legs []leg
	for i, pods := range sc.legs {
		legs = append(legs, e.soakLeg(ctx, h, ws, sc, pods, i+2))
	}
	h.End = time.Now()
	h.Pods = e.rec.Pods()
	writes, unread, err := ReadAuditWrites(e.audit, "lifeline-manager/")
	if err != nil {
		t.Fatal(err)
	}
	if unread > 0 {
		t.Logf("%d audit events cut short in the log, not read", unread)
	}
	for i := range legs {
		legs[i].writes = writesBetween(writes, legs[i].rollout.from, legs[i].rollout.to)
	}
	violations := Check(h)
	t.Log(soakReport(sc, legs, len(h.Pods), violations))
	for _, v := range violations {
		t.Error(v)
	}
	for _, gap := range e.rec.Broken() {
		t.Errorf("the record has a gap: %s", gap)
	}
}

// soakLeg brings every CloneSet to pods in total, waits, measures the
// idle manager, rolls every CloneSet out to image app:<image> in place and
// measures that.
func (e *env) soakLeg(ctx context.Context, h *History, ws []*workload, sc soakConfig, pods, image int) leg {
	l := leg{pods: pods}
	each := int32(pods / len(ws))
	from := time.Now()
	for _, w := range ws {
		w.replicas, w.maxUnavailable = each, percent(each, 20)
		if w.budget > 0 {
			w.budget = percent(each, 10)
		}
		if err := e.scaleOrCreate(ctx, w); err != nil {
			e.t.Fatal(err)
		}
	}
	h.Phases = append(h.Phases, e.waitAll(ctx, ws, fmt.Sprintf("%d pods created", pods)))
	l.settled = time.Since(from)
	l.idle = e.measure(ctx, func() { sleep(ctx, sc.idle) })
	from = time.Now()
	var phase Phase
	l.update = e.measure(ctx, func() {
		for _, w := range ws {
			if err := e.change(ctx, w, func(o ctrlclient.Object) { podTemplate(o).Spec.Containers[0].Image = fmt.Sprintf("app:%d", image) }); err != nil {
				e.t.Fatal(err)
			}
		}
		phase = e.waitAll(ctx, ws, fmt.Sprintf("%d pods rolled out", pods))
	})
	l.rolled = time.Since(from)
	l.rollout.from, l.rollout.to = from, time.Now()
	h.Phases = append(h.Phases, phase)
	for _, w := range ws {
		h.Windows = append(h.Windows, Window{Workload: w.Name, From: from, To: time.Now(), Replicas: int(w.replicas), Limit: w.maxUnavailable, Why: "its maxUnavailable"})
		if w.budget > 0 {
			h.Windows = append(h.Windows, Window{Workload: w.Name, From: from, To: time.Now(), Replicas: int(w.replicas), Limit: w.budget, Why: "its PodUnavailableBudget"})
		}
	}
	return l
}

func (e *env) scaleOrCreate(ctx context.Context, w *workload) error {
	if w.obj.GetResourceVersion() == "" {
		setReplicas(w.obj, w.replicas)
		if w.budget > 0 {
			if err := e.k8s.Create(ctx, w.budgetObject()); err != nil {
				return err
			}
		}
		return e.k8s.Create(ctx, w.obj)
	}
	return e.change(ctx, w, func(o ctrlclient.Object) { setReplicas(o, w.replicas) })
}

// waitAll waits until every workload has settled, reading all pods of the
// namespace at once (50 lists a second would be the load measured).
func (e *env) waitAll(ctx context.Context, ws []*workload, name string) Phase {
	from, why := time.Now(), ""
	every := 2 * time.Second
	if len(ws) > 0 && ws[0].replicas > 50 {
		every = 10 * time.Second // a list of 10,000 pods is load of its own
	}
	err := wait.PollUntilContextTimeout(ctx, every, e.cfg.deadline, true, func(ctx context.Context) (bool, error) {
		list, err := e.client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			why = err.Error()
			return false, nil
		}
		ok, spec := map[string]int{}, map[string]string{}
		for _, w := range ws {
			spec[w.Name] = "main=" + podTemplate(w.obj).Spec.Containers[0].Image
		}
		for i := range list.Items {
			p := &list.Items[i]
			if r := RevOf(p, time.Time{}, false); r.Available() && r.Spec == spec[r.Workload] {
				ok[r.Workload]++
			}
			if p.DeletionTimestamp == nil {
				ok["live/"+p.Labels["app"]]++
			}
		}
		for _, w := range ws {
			if ok[w.Name] != int(w.replicas) || ok["live/"+w.Name] != int(w.replicas) {
				why = fmt.Sprintf("%s: %d live, %d available and current, want %d", w.Name, ok["live/"+w.Name], ok[w.Name], w.replicas)
				return false, nil
			}
		}
		return true, nil
	})
	e.logf("%s: %v in %.1fs", name, err == nil, time.Since(from).Seconds())
	return Phase{Name: name, Took: time.Since(from), Done: err == nil, Why: why}
}

// measure runs f and reports what the leading manager spent meanwhile:
// CPU from /proc, RSS sampled every second, reconciles and API requests
// from its metrics.
func (e *env) measure(ctx context.Context, f func()) usage {
	m := e.managers[max(0, e.leader(ctx))]
	pid := func() int { e.procs.Lock(); defer e.procs.Unlock(); return e.c.PID(m.Name) }
	u := usage{cpuStart: cluster.CPUSeconds(pid()), reconStart: metricSum(m, "controller_runtime_reconcile_total"), reqStart: metricSum(m, "rest_client_requests_total")}
	done := make(chan struct{})
	go func() {
		for {
			u.peakRSS = max(u.peakRSS, cluster.RSSBytes(pid()))
			select {
			case <-done:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	from := time.Now()
	f()
	close(done)
	u.took = time.Since(from)
	s := u.took.Seconds()
	u.cpu = (cluster.CPUSeconds(pid()) - u.cpuStart) / s
	u.reconciles = (metricSum(m, "controller_runtime_reconcile_total") - u.reconStart) / s
	u.requests = (metricSum(m, "rest_client_requests_total") - u.reqStart) / s
	return u
}

// metricSum adds up every series of a counter on a manager's metrics.
func metricSum(m *cluster.Lifeline, name string) float64 {
	families, err := m.Scraper.Families(m.MetricsURL)
	if err != nil {
		return 0
	}
	sum := 0.0
	for _, s := range families[name].GetMetric() {
		sum += s.GetCounter().GetValue()
	}
	return sum
}

func soakReport(sc soakConfig, legs []leg, writes int, violations []Violation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "soak report (%s: %d CloneSets, %d budgets, %s idle)\n", sc.name, sc.cloneSets, sc.budgets, sc.idle)
	fmt.Fprintf(&b, "%8s %-8s %8s %10s %12s %12s %10s\n", "pods", "phase", "took", "CPU cores", "reconciles/s", "requests/s", "peak RSS")
	for _, l := range legs {
		for _, p := range []struct {
			name string
			u    usage
		}{{"idle", l.idle}, {"rollout", l.update}} {
			fmt.Fprintf(&b, "%8d %-8s %7.0fs %10.3f %12.1f %12.1f %7d MiB\n", l.pods, p.name, p.u.took.Seconds(), p.u.cpu, p.u.reconciles, p.u.requests, p.u.peakRSS>>20)
		}
	}
	for _, l := range legs {
		fmt.Fprintf(&b, "%8d rollout: the manager's writes per pod:", l.pods)
		keys := make([]string, 0, len(l.writes))
		total := 0
		for k, n := range l.writes {
			keys = append(keys, k)
			total += n
		}
		sort.Slice(keys, func(i, j int) bool { return l.writes[keys[i]] > l.writes[keys[j]] })
		for _, k := range keys {
			fmt.Fprintf(&b, " %s %.2f,", k, float64(l.writes[k])/float64(l.pods))
		}
		fmt.Fprintf(&b, " in all %.2f\n", float64(total)/float64(l.pods))
	}
	fmt.Fprintf(&b, "pod writes recorded: %d; invariant violations: %d\n", writes, len(violations))
	return b.String()
}

// writesBetween counts the writes in [from, to] by verb and resource
// (with its subresource).
func writesBetween(writes []AuditWrite, from, to time.Time) map[string]int {
	out := map[string]int{}
	for _, w := range writes {
		if w.At.Before(from) || w.At.After(to) {
			continue
		}
		r := w.Resource
		if w.Subresource != "" {
			r += "/" + w.Subresource
		}
		out[w.Verb+" "+r]++
	}
	return out
}
