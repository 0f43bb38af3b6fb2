package chaos

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// config is the size of a run: make test runs the short one, make chaos
// (LIFELINE_CHAOS=full) the full one.
type config struct {
	name                       string
	seed                       int64
	nodes                      int
	hooked, budgeted, stateful int32
	// real is the pods of the hooked CloneSet on the real nodes (a
	// multiple of 5: a CloneSet rounds 20% up, the checker's limit is
	// percent's, rounded down).
	real, realNodes int32
	// span is the stretch of time the faults are spread over.
	span   time.Duration
	counts map[FaultKind]int
	// deadline is how long a step may take to settle.
	deadline                      time.Duration
	registryDown, slowFor, slowBy time.Duration
}

func configFromEnv(t *testing.T) config {
	c := config{name: "short", nodes: 6, hooked: 40, budgeted: 40, stateful: 14, real: 5, realNodes: 2, span: 150 * time.Second,
		counts:   map[FaultKind]int{KillManager: 2, PauseLeader: 1, RestartAPIServer: 1, RestartEtcd: 1, KillBridge: 1, StopRegistry: 1, SlowAPIServer: 1},
		deadline: 5 * time.Minute, registryDown: 10 * time.Second, slowFor: 15 * time.Second, slowBy: time.Second}
	if os.Getenv("LIFELINE_CHAOS") == "full" {
		c.name, c.nodes, c.hooked, c.budgeted, c.stateful, c.real, c.span = "full", 10, 200, 180, 110, 20, 10*time.Minute
		c.counts = map[FaultKind]int{KillManager: 12, PauseLeader: 2, RestartAPIServer: 1, RestartEtcd: 1, KillBridge: 2, StopRegistry: 1, SlowAPIServer: 2}
		c.deadline = 15 * time.Minute
	}
	c.seed = time.Now().UnixNano() % 1_000_000
	if s := os.Getenv("LIFELINE_CHAOS_SEED"); s != "" {
		seed, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("LIFELINE_CHAOS_SEED=%q: %v", s, err)
		}
		c.seed = seed
	}
	return c
}

func (e *env) startedAt() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.began
}

// TestChaos takes five workloads (the seeds' hooked CloneSet driven by the
// bridge, a CloneSet under a PodUnavailableBudget, an Advanced StatefulSet
// under a PersistentPodState, an Advanced DaemonSet and the hooked
// CloneSet again on the real nodes, real containers) through an
// in-place update, a ReCreate update, scale-in and scale-out, evictions
// and a drain, while the plan's faults hit the managers, the control
// plane, the bridge and its registry; then judges every pod write and
// registry write recorded against the invariants (Check). The seed and the
// plan are printed; LIFELINE_CHAOS_SEED replays a run.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a local cluster")
	}
	cfg := configFromEnv(t)
	plan := NewPlan(cfg.seed, cfg.span, cfg.counts)
	t.Logf("chaos run %s: %s", cfg.name, plan)
	e := start(t, cfg)
	ws := []*workload{hookedCloneSet(e.ns, cfg.hooked), budgetedCloneSet(e.ns, cfg.budgeted), statefulSet(e.ns, cfg.stateful), daemonSet(e.ns, cfg.nodes),
		realCloneSet(e.ns, cfg.real)}
	h := &History{NodeZones: e.nodeZones()}
	for _, w := range ws {
		h.Workloads = append(h.Workloads, w.Workload)
	}
	ctx, cancel := e.begin(t)
	planDone := make(chan struct{})
	go func() {
		defer close(planDone)
		e.runPlan(ctx, plan)
	}()
	// The workloads go round their life until the plan is over, so that
	// every fault lands on a rollout, a scale or a drain.
	for n, ok := 1, e.create(ctx, h, ws); ok; n++ {
		if !e.cycle(ctx, h, ws, n) || closed(planDone) {
			break
		}
	}
	e.step(ctx, h, ws, "settle after the faults", nil, nil, func(context.Context) error { return nil })
	h.End = time.Now()
	h.Pods, h.Registry, h.Records = e.rec.Pods(), e.rec.Registry(), e.rec.Records()
	counts := e.scrapeWebhookCounts(ctx)
	cancel()
	e.mu.Lock()
	e.webhook.add(counts)
	h.Pauses = e.pauses
	e.mu.Unlock()
	writes, unread, err := ReadAuditWrites(e.audit, "lifeline-manager/")
	if err != nil {
		t.Fatal(err)
	}
	h.Writes = writes
	if unread > 0 {
		t.Logf("%d audit events cut short in the log, not read", unread)
	}
	violations := Check(h)
	for _, v := range violations {
		t.Error(v)
	}
	for _, gap := range e.rec.Broken() {
		t.Errorf("the record has a gap: %s", gap)
	}
	// Last, so that the end of a long log (all CI keeps) shows the faults.
	t.Log(e.report(h, plan, violations))
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// create makes the workloads and says whether they came to run.
func (e *env) create(ctx context.Context, h *History, ws []*workload) bool {
	budgeted, stateful := ws[1], ws[2]
	return e.step(ctx, h, ws, "create", nil, nil, func(ctx context.Context) error {
		objs := []ctrlclient.Object{budgeted.budgetObject(), stateful.placementObject()}
		for _, w := range ws {
			objs = append(objs, w.obj)
		}
		for _, o := range objs {
			if err := e.k8s.Create(ctx, o); err != nil {
				return err
			}
		}
		return nil
	})
}

// cycle runs the workloads through their life once, one step after
// another: an in-place update, a ReCreate update, a scale-in and back,
// evictions and a drain. It stops at a step that does not finish (the
// next would only wait out its deadline on the same cause) and says
// whether every step finished.
func (e *env) cycle(ctx context.Context, h *History, ws []*workload, n int) bool {
	hooked, budgeted, stateful, real := ws[0], ws[1], ws[2], ws[4]
	release := strconv.Itoa(n + 1)
	recreated := []*workload{hooked, budgeted, stateful, real}
	scale := func(sizes map[*workload]int32) func(context.Context) error {
		return func(ctx context.Context) error {
			for w, n := range sizes {
				w.replicas = n
				if err := e.change(ctx, w, func(o ctrlclient.Object) { setReplicas(o, n) }); err != nil {
					return err
				}
			}
			return nil
		}
	}
	steps := []struct {
		name     string
		rollout  []*workload
		budgeted *workload
		act      func(context.Context) error
	}{
		{"in-place update", ws, budgeted, func(ctx context.Context) error {
			for _, w := range ws {
				image := w.image(n + 1)
				if err := e.change(ctx, w, func(o ctrlclient.Object) { podTemplate(o).Spec.Containers[0].Image = image }); err != nil {
					return err
				}
			}
			return nil
		}},
		{"ReCreate update", recreated, budgeted, func(ctx context.Context) error {
			return e.changeAll(ctx, recreated, func(o ctrlclient.Object) {
				podTemplate(o).Spec.Containers[0].Env = []corev1.EnvVar{{Name: "RELEASE", Value: release}}
			})
		}},
		{"scale in", nil, budgeted, scale(map[*workload]int32{hooked: e.cfg.hooked * 3 / 4, budgeted: e.cfg.budgeted * 3 / 4, stateful: e.cfg.stateful - 2,
			real: e.cfg.real / 2})},
		{"scale out", nil, nil, scale(map[*workload]int32{hooked: e.cfg.hooked, budgeted: e.cfg.budgeted, stateful: e.cfg.stateful, real: e.cfg.real})},
		{"evictions and a drain", nil, budgeted, func(ctx context.Context) error {
			e.evict(ctx, budgeted, 2*budgeted.budget)
			e.evict(ctx, hooked, 3)
			e.evict(ctx, real, 1)
			return e.drain(ctx, e.busiestNode(ctx, hooked, budgeted))
		}},
	}
	for _, s := range steps {
		if !e.step(ctx, h, ws, s.name+" "+release, s.rollout, s.budgeted, s.act) {
			return false
		}
	}
	return true
}

// step acts, then waits until every workload has settled, and records how
// long that took and the windows in which rollout's workloads must keep
// within their maxUnavailable and budgeted's within its budget.
func (e *env) step(ctx context.Context, h *History, ws []*workload, name string, rollout []*workload, budgeted *workload, act func(context.Context) error) bool {
	from := time.Now()
	e.logf("step %s", name)
	p := Phase{Name: name, Done: true}
	var why string
	err := act(ctx)
	if err != nil {
		p.Done, p.Why = false, err.Error()
	} else {
		err = wait.PollUntilContextTimeout(ctx, time.Second, e.cfg.deadline, true, func(ctx context.Context) (bool, error) {
			var unsettled []string
			for _, w := range ws {
				if ok, reason, _ := e.settled(ctx, w); !ok {
					unsettled = append(unsettled, reason)
				}
			}
			// A reason cut short by the deadline (the client's rate limiter
			// refuses a wait that would pass it) says nothing.
			if dl, _ := ctx.Deadline(); time.Until(dl) > 2*time.Second {
				why = strings.Join(unsettled, "; ")
			}
			return len(unsettled) == 0, nil
		})
		if err != nil {
			p.Done, p.Why = false, why
		}
	}
	p.Took = time.Since(from)
	to := time.Now()
	for _, w := range rollout {
		h.Windows = append(h.Windows, Window{Workload: w.Name, From: from, To: to, Replicas: int(w.replicas), Limit: w.maxUnavailable, Why: "its maxUnavailable"})
	}
	if budgeted != nil {
		h.Windows = append(h.Windows, Window{Workload: budgeted.Name, From: from, To: to, Replicas: int(budgeted.replicas), Limit: budgeted.budget, Why: "its PodUnavailableBudget"})
	}
	h.Phases = append(h.Phases, p)
	e.logf("step %s: done=%v in %.1fs %s", name, p.Done, p.Took.Seconds(), p.Why)
	return p.Done
}

func (e *env) changeAll(ctx context.Context, ws []*workload, f func(ctrlclient.Object)) error {
	for _, w := range ws {
		if err := e.change(ctx, w, f); err != nil {
			return err
		}
	}
	return nil
}

// evict asks to evict n pods of w at once and counts the answers.
func (e *env) evict(ctx context.Context, w *workload, n int) {
	pods, err := e.client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + w.Name})
	if err != nil {
		e.logf("listing %s: %v", w.Name, err)
		return
	}
	r := rand.New(rand.NewPCG(uint64(e.cfg.seed), 7))
	r.Shuffle(len(pods.Items), func(i, j int) { pods.Items[i], pods.Items[j] = pods.Items[j], pods.Items[i] })
	var wg sync.WaitGroup
	for i := range min(n, len(pods.Items)) {
		p := pods.Items[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := e.client.PolicyV1().Evictions(e.ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: p.Name}})
			e.mu.Lock()
			defer e.mu.Unlock()
			switch {
			case err == nil:
				e.evictions.admitted++
			case apierrors.IsTooManyRequests(err):
				e.evictions.refused++
			default:
				e.evictions.failed++
			}
		}()
	}
	wg.Wait()
}

// drain runs kubectl drain on node until it succeeds (the API server may
// be restarting), then uncordons it.
func (e *env) drain(ctx context.Context, node string) error {
	kubectl := func(args ...string) error {
		out, err := exec.CommandContext(ctx, e.c.Binaries["kubectl"], append([]string{"--kubeconfig", e.c.Kubeconfig}, args...)...).CombinedOutput()
		e.logf("kubectl %s: %v: %s", strings.Join(args, " "), err, kubectlSaid(out))
		return err
	}
	for _, args := range [][]string{
		{"drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=" + e.cfg.deadline.String()},
		{"uncordon", node},
	} {
		var last error
		err := wait.PollUntilContextTimeout(ctx, 2*time.Second, e.cfg.deadline, true, func(context.Context) (bool, error) {
			last = kubectl(args...)
			return last == nil, nil
		})
		if err != nil {
			return fmt.Errorf("kubectl %s: %v", args[0], last)
		}
	}
	return nil
}

// kubectlSaid shortens what kubectl drain printed (a line per pod and per
// refused eviction, hundreds in a run) to its counts and its last lines, so
// that the report and the violations stay within what CI shows of a log.
func kubectlSaid(out []byte) string {
	lines := strings.Split(string(bytes.TrimSpace(out)), "\n")
	if len(lines) <= 6 {
		return strings.Join(lines, "\n")
	}
	var evicting, refused int
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "evicting pod "):
			evicting++
		case strings.HasPrefix(l, "error when evicting "):
			refused++
		}
	}
	return fmt.Sprintf("%d lines (%d evictions asked, %d refused and retried), the last:\n%s", len(lines), evicting, refused,
		strings.Join(lines[len(lines)-4:], "\n"))
}

// busiestNode is the node running the most pods of ws.
func (e *env) busiestNode(ctx context.Context, ws ...*workload) string {
	count := map[string]int{}
	best := e.c.NodeNames[0]
	for _, w := range ws {
		pods, err := e.client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + w.Name})
		if err != nil {
			continue
		}
		for _, p := range pods.Items {
			if n := p.Spec.NodeName; n != "" {
				if count[n]++; count[n] > count[best] {
					best = n
				}
			}
		}
	}
	return best
}

func (e *env) nodeZones() map[string]string {
	nodes, err := e.client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range nodes.Items {
		out[n.Name] = n.Labels["topology.kubernetes.io/zone"]
	}
	return out
}

// webhookCounts are the API server's webhook calls that failed: refused
// for want of an answer (fail-closed) or let through without one
// (fail-open).
type webhookCounts struct{ rejected, failOpen float64 }

func (w *webhookCounts) add(o webhookCounts) { w.rejected += o.rejected; w.failOpen += o.failOpen }

// scrapeWebhookCounts reads the API server's counters (they restart
// with it, so they are read before a restart and added up).
func (e *env) scrapeWebhookCounts(ctx context.Context) webhookCounts {
	var out webhookCounts
	body, err := e.client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		e.logf("reading the API server's metrics: %v", err)
		return out
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		e.logf("parsing the API server's metrics: %v", err)
		return out
	}
	for _, m := range families["apiserver_admission_webhook_rejection_count"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "error_type" && l.GetValue() != "no_error" {
				out.rejected += m.GetCounter().GetValue()
			}
		}
	}
	for _, m := range families["apiserver_admission_webhook_fail_open_count"].GetMetric() {
		out.failOpen += m.GetCounter().GetValue()
	}
	return out
}

// report is what a run prints: the figures the issue asks for.
func (e *env) report(h *History, plan Plan, violations []Violation) string {
	var b strings.Builder
	e.mu.Lock()
	defer e.mu.Unlock()
	fmt.Fprintf(&b, "chaos report (%s run, seed %d, %d nodes)\n", e.cfg.name, plan.Seed, e.cfg.nodes)
	uids := map[string]bool{}
	for _, r := range h.Pods {
		uids[r.UID] = true
	}
	fmt.Fprintf(&b, "recorded: %d pod writes of %d pods, %d registry writes\n", len(h.Pods), len(uids), len(h.Registry))
	for _, p := range h.Phases {
		fmt.Fprintf(&b, "  step %-24s %6.1fs done=%v\n", p.Name, p.Took.Seconds(), p.Done)
	}
	fmt.Fprintf(&b, "evictions: %d admitted, %d refused (429), %d failed otherwise\n", e.evictions.admitted, e.evictions.refused, e.evictions.failed)
	fmt.Fprintf(&b, "webhook calls no replica answered (balancer): %d; API server: %.0f refused without an answer, %.0f let through without one\n",
		e.replicas.Failed.Load(), e.webhook.rejected, e.webhook.failOpen)
	fmt.Fprintf(&b, "paused leaders: %d; manager writes audited: %d\n", len(h.Pauses), len(h.Writes))
	fmt.Fprintf(&b, "faults injected: %d (%d process restarts by the supervisor)\n", len(e.faults), e.restarts)
	for _, f := range e.faults {
		fmt.Fprintf(&b, "  %s\n", f)
	}
	fmt.Fprintf(&b, "invariant violations: %d\n", len(violations))
	return b.String()
}
