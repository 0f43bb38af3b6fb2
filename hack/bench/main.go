// Command bench compares CloneSet with Deployment on one local cluster, in
// one run: scale-up from 0, a rolling update at maxUnavailable 20%, and a
// scale-down to 100. It then times pod creations with and without a
// PersistentPodState record, and pod deletions with and without a
// PodUnavailableBudget covering 10,000 pods. Both controllers get the same client QPS. It prints a
// table of figures; it is a benchmark, not a test, and asserts nothing.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
	"github.com/lifeline-k8s/lifeline/internal/manager"
)

func main() {
	pods := flag.Int("pods", 1000, "pods to scale up to and update")
	down := flag.Int("down-to", 100, "pods to scale down to")
	qps := flag.Int("qps", 50, "client QPS of both kube-controller-manager and lifeline-manager")
	nodes := flag.Int("nodes", 10, "simulated nodes")
	verbose := flag.Bool("v", false, "print each control-plane process's CPU per scenario")
	only := flag.String("kinds", strings.Join(kinds, ","), "the workloads to run, comma-separated")
	budgetPods := flag.Int("budget-pods", 10000, "pods a PodUnavailableBudget covers in the deletion run (0: no deletion run)")
	budgetDeletions := flag.Int("budget-deletions", 2000, "pods deleted in the deletion run, with and without the budget")
	budgetInFlight := flag.Int("budget-in-flight", 50, "deletions in flight at once")
	ppsRecords := flag.Int("pps-records", 1000, "records of the PersistentPodState in the pod-creation run, and pods created (0: no run)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	budget := budgetRun{covered: *budgetPods, deletions: *budgetDeletions, inFlight: *budgetInFlight, ppsRecords: *ppsRecords}
	if err := run(ctx, *pods, *down, *qps, *nodes, strings.Split(*only, ","), *verbose, budget); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// kinds are the workloads compared, in the order they run. The last two
// run with the pod binding webhook taken out of the cluster, to show what
// it costs every bind and what it saves the CloneSet.
var kinds = []string{"Deployment", "CloneSet", "CloneSet (in-place)", noWebhook + "Deployment", noWebhook + "CloneSet"}

// noWebhook prefixes a kind that runs without the pod binding webhook.
const noWebhook = "no binding webhook: "

// controllerUsers are the API users whose requests count as each
// controller's: kube-controller-manager runs each controller under its own
// service account.
var controllerUsers = map[string][]string{
	"Deployment":             {"system:serviceaccount:kube-system:deployment-controller", "system:serviceaccount:kube-system:replicaset-controller"},
	"CloneSet":               {"lifeline-manager"},
	"CloneSet (in-place)":    {"lifeline-manager"},
	noWebhook + "Deployment": {"system:serviceaccount:kube-system:deployment-controller", "system:serviceaccount:kube-system:replicaset-controller"},
	noWebhook + "CloneSet":   {"lifeline-manager"},
}

type result struct {
	scenario, kind  string
	pods            int
	wall            time.Duration
	requests        int
	events          int
	podWritesPerPod float64
	planeCPU        float64
	kwokCPU         float64
	ctrlCPU         float64
	ctrlPeakRSS     int64
	binds           bindFigures
}

// budgetRun sizes the PodUnavailableBudget deletion run.
type budgetRun struct{ covered, deletions, inFlight, ppsRecords int }

func run(ctx context.Context, pods, down, qps, nodes int, only []string, verbose bool, budget budgetRun) error {
	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "lifeline-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	audit := filepath.Join(dir, "audit.log")
	fmt.Printf("starting a local cluster (%d nodes, controller QPS %d)\n", nodes, qps)
	c, err := cluster.Start(ctx, cluster.Options{Dir: dir, Nodes: nodes, ControllerQPS: qps, AuditLog: audit, Progress: os.Stdout})
	if err != nil {
		return err
	}
	defer c.Stop()
	if _, err := envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{Paths: []string{filepath.Join(root, "config", "crd", "bases")}}); err != nil {
		return err
	}
	l, err := c.StartLifeline(ctx, cluster.LifelineOptions{Root: root, Dir: dir, QPS: qps})
	if err != nil {
		return err
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = 500, 1000 // the benchmark's own reads must not be the bottleneck
	k8s, err := ctrlclient.New(cfg, ctrlclient.Options{Scheme: manager.Scheme()})
	if err != nil {
		return err
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	b := &bench{c: c, k8s: k8s, client: client, audit: audit, pods: pods, down: down, verbose: verbose}

	var results []result
	for i, kind := range kinds {
		if !slices.Contains(only, kind) {
			continue
		}
		ctrl := "kube-controller-manager"
		if !strings.HasSuffix(kind, "Deployment") {
			ctrl = l.Name
		}
		if strings.HasPrefix(kind, noWebhook) && !b.webhookRemoved {
			if err := removeBindingWebhook(ctx, k8s); err != nil {
				return err
			}
			b.webhookRemoved = true
		}
		ns := fmt.Sprintf("bench-%d", i)
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		if err := cluster.WaitForServiceAccount(ctx, client, ns); err != nil {
			return err
		}
		w := workload{kind: strings.TrimPrefix(kind, noWebhook), ns: ns}
		for _, sc := range []struct {
			name   string
			change func(context.Context) error
			done   func(context.Context) (bool, error)
			pods   int
		}{
			{fmt.Sprintf("scale-up 0→%d", pods), func(ctx context.Context) error { return w.create(ctx, k8s, int32(pods)) },
				func(ctx context.Context) (bool, error) { return w.settled(ctx, k8s, b, int32(pods)) }, pods},
			{fmt.Sprintf("rolling update of %d, maxUnavailable 20%%", pods), func(ctx context.Context) error { return w.setImage(ctx, k8s, "nginx:1.28") },
				func(ctx context.Context) (bool, error) { return w.settled(ctx, k8s, b, int32(pods)) }, pods},
			{fmt.Sprintf("scale-down %d→%d", pods, down), func(ctx context.Context) error { return w.scale(ctx, k8s, int32(down)) },
				func(ctx context.Context) (bool, error) { return w.settled(ctx, k8s, b, int32(down)) }, pods - down},
		} {
			fmt.Printf("%s: %s\n", kind, sc.name)
			r, err := b.measure(ctx, kind, ns, ctrl, sc.name, sc.pods, sc.change, sc.done)
			if err != nil {
				return fmt.Errorf("%s %s: %w", kind, sc.name, err)
			}
			results = append(results, r)
		}
	}
	if len(results) > 0 {
		report(results)
	}
	if budget.ppsRecords > 0 {
		if err := b.ppsBench(ctx, l, budget.ppsRecords, budget.inFlight); err != nil {
			return err
		}
	}
	if budget.covered > 0 {
		return b.budgetBench(ctx, l, budget.covered, budget.deletions, budget.inFlight)
	}
	return nil
}

type bench struct {
	c              *cluster.Cluster
	k8s            ctrlclient.Client
	client         kubernetes.Interface
	audit          string
	pods, down     int
	verbose        bool
	webhookRemoved bool
}

// removeBindingWebhook takes the pod binding webhook out of lifeline's
// mutating webhook configuration, as on a cluster where it is not
// installed; the controller then moves pods to Normal itself.
func removeBindingWebhook(ctx context.Context, k8s ctrlclient.Client) error {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := k8s.Get(ctx, ctrlclient.ObjectKey{Name: "lifeline-mutating-webhooks"}, cfg); err != nil {
		return err
	}
	cfg.Webhooks = slices.DeleteFunc(cfg.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name == "mpod.lifeline.dev" })
	return k8s.Update(ctx, cfg)
}

// measure runs one scenario and takes its figures.
func (b *bench) measure(ctx context.Context, kind, ns, ctrl, name string, pods int,
	change func(context.Context) error, done func(context.Context) (bool, error)) (result, error) {
	r := result{scenario: name, kind: kind, pods: pods}
	plane := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "lifeline-manager"}
	cpuBefore := map[string]float64{}
	for _, p := range plane {
		cpuBefore[p] = cpuSeconds(b.c.PID(p))
	}
	auditStart := fileSize(b.audit)
	kwokBefore := cpuSeconds(b.c.PID("kwok"))

	// A RetryWatcher resumes where the API server closed a watch, so a
	// watch dropped under load does not lose writes.
	var writes atomic.Int64
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	list, err := b.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return r, err
	}
	w, err := watchtools.NewRetryWatcherWithContext(watchCtx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			return b.client.CoreV1().Pods(ns).Watch(ctx, options)
		},
	})
	if err != nil {
		return r, err
	}
	defer w.Stop()
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type != watch.Bookmark && ev.Type != watch.Error {
				writes.Add(1)
			}
		}
	}()
	var peak atomic.Int64
	go func() {
		for watchCtx.Err() == nil {
			if rss := rssBytes(b.c.PID(ctrl)); rss > peak.Load() {
				peak.Store(rss)
			}
			time.Sleep(100 * time.Millisecond) // sampling period of a measurement, not a wait for a condition
		}
	}()

	start := time.Now()
	if err := change(ctx); err != nil {
		return r, err
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Minute, true, done); err != nil {
		return r, err
	}
	r.wall = time.Since(start)
	stopWatch()

	for _, p := range plane {
		delta := cpuSeconds(b.c.PID(p)) - cpuBefore[p]
		if b.verbose {
			fmt.Printf("    %s: %.1f CPU s\n", p, delta)
		}
		r.planeCPU += delta
		if p == ctrl {
			r.ctrlCPU = delta
		}
	}
	r.kwokCPU = cpuSeconds(b.c.PID("kwok")) - kwokBefore
	r.ctrlPeakRSS = peak.Load()
	r.podWritesPerPod = float64(writes.Load()) / float64(pods)
	r.requests, r.events, err = countRequests(b.audit, auditStart, controllerUsers[kind])
	if err != nil {
		return r, err
	}
	r.binds, err = bindTimes(b.audit, auditStart)
	return r, err
}

// bindFigures are the scheduler's binds during a scenario, from the audit
// log: how many, their latency at the API server (webhook included), and
// how many per second from the first bind to the last.
type bindFigures struct {
	count    int
	p50, p99 time.Duration
	perSec   float64
}

func bindTimes(path string, offset int64) (bindFigures, error) {
	f, err := os.Open(path)
	if err != nil {
		return bindFigures{}, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		return bindFigures{}, err
	}
	var latencies []time.Duration
	var first, last time.Time
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<24)
	for scanner.Scan() {
		var event struct {
			Verb      string `json:"verb"`
			ObjectRef struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
			} `json:"objectRef"`
			ResponseStatus struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
			Received time.Time `json:"requestReceivedTimestamp"`
			Done     time.Time `json:"stageTimestamp"`
		}
		if json.Unmarshal(scanner.Bytes(), &event) != nil || event.Verb != "create" || event.ObjectRef.Resource != "pods" ||
			event.ObjectRef.Subresource != "binding" || event.ResponseStatus.Code != 201 {
			continue
		}
		latencies = append(latencies, event.Done.Sub(event.Received))
		if first.IsZero() || event.Received.Before(first) {
			first = event.Received
		}
		if event.Done.After(last) {
			last = event.Done
		}
	}
	if len(latencies) == 0 {
		return bindFigures{}, scanner.Err()
	}
	slices.Sort(latencies)
	at := func(q float64) time.Duration { return latencies[min(len(latencies)-1, int(q*float64(len(latencies))))] }
	fig := bindFigures{count: len(latencies), p50: at(0.50), p99: at(0.99)}
	if span := last.Sub(first).Seconds(); span > 0 {
		fig.perSec = float64(len(latencies)) / span
	}
	return fig, scanner.Err()
}

type workload struct{ kind, ns string }

func (w workload) create(ctx context.Context, k8s ctrlclient.Client, replicas int32) error {
	labels := map[string]string{"app": "bench"}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "bench"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}},
	}
	twenty := intstr.FromString("20%")
	zero := intstr.FromInt32(0)
	if w.kind == "Deployment" {
		return k8s.Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "bench"},
			Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl,
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
					RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &twenty, MaxSurge: &zero}}},
		})
	}
	strategy := appsv1alpha1.CloneSetUpdateStrategy{MaxUnavailable: &twenty, MaxSurge: &zero}
	if w.kind == "CloneSet (in-place)" {
		strategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	}
	return k8s.Create(ctx, &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "bench"},
		Spec:       appsv1alpha1.CloneSetSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl, UpdateStrategy: strategy},
	})
}

func (w workload) object() ctrlclient.Object {
	if w.kind == "Deployment" {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "bench"}}
	}
	return &appsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "bench"}}
}

func (w workload) patch(ctx context.Context, k8s ctrlclient.Client, patch string) error {
	return k8s.Patch(ctx, w.object(), ctrlclient.RawPatch("application/merge-patch+json", []byte(patch)))
}

func (w workload) setImage(ctx context.Context, k8s ctrlclient.Client, image string) error {
	return w.patch(ctx, k8s, fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"main","image":%q}]}}}}`, image))
}

func (w workload) scale(ctx context.Context, k8s ctrlclient.Client, replicas int32) error {
	return w.patch(ctx, k8s, fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
}

// settled: the status says every pod is updated and available, and no
// other pod is left in the namespace.
func (w workload) settled(ctx context.Context, k8s ctrlclient.Client, b *bench, replicas int32) (bool, error) {
	obj := w.object()
	if err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(obj), obj); err != nil {
		return false, nil
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		s := o.Status
		if s.ObservedGeneration != o.Generation || s.UpdatedReplicas != replicas || s.AvailableReplicas != replicas || s.Replicas != replicas {
			return false, nil
		}
	case *appsv1alpha1.CloneSet:
		s := o.Status
		if s.ObservedGeneration != o.Generation || s.UpdatedAvailableReplicas != replicas || s.AvailableReplicas != replicas || s.Replicas != replicas {
			return false, nil
		}
	}
	list := &corev1.PodList{}
	if err := k8s.List(ctx, list, ctrlclient.InNamespace(w.ns)); err != nil {
		return false, nil
	}
	return len(list.Items) == int(replicas), nil
}

// countRequests counts the audit log's requests by users, from offset on,
// apart from the Events they post, which are counted on their own:
// kube-controller-manager posts its controllers' Events under its own name,
// not theirs, so counting them for one side only would be unfair.
func countRequests(path string, offset int64, users []string) (requests, events int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		return 0, 0, err
	}
	want := map[string]bool{}
	for _, u := range users {
		want[u] = true
	}
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<24)
	for scanner.Scan() {
		var event struct {
			User struct {
				Username string `json:"username"`
			} `json:"user"`
			Verb      string `json:"verb"`
			ObjectRef struct {
				Resource string `json:"resource"`
			} `json:"objectRef"`
		}
		if json.Unmarshal(scanner.Bytes(), &event) != nil || !want[event.User.Username] || event.Verb == "watch" {
			continue
		}
		if event.ObjectRef.Resource == "events" {
			events++
		} else {
			requests++
		}
	}
	return requests, events, scanner.Err()
}

func fileSize(path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return info.Size()
}

// cpuSeconds is a process's user and system CPU time from /proc.
func cpuSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil || pid == 0 {
		return 0
	}
	// Fields after the command name, which may hold spaces, end with ')'.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100 // USER_HZ
}

// rssBytes is a process's resident set size from /proc.
func rssBytes(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil || pid == 0 {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			kb, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func report(results []result) {
	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tcontroller\twall s\tcontroller API requests\t+ events\tpod writes/pod\tcontrol plane CPU s\tkwok CPU s\tcontroller CPU s\tcontroller peak RSS MiB\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%d\t%d\t%.2f\t%.1f\t%.1f\t%.1f\t%.0f\t\n", r.scenario, r.kind, r.wall.Seconds(), r.requests, r.events, r.podWritesPerPod, r.planeCPU, r.kwokCPU, r.ctrlCPU, float64(r.ctrlPeakRSS)/(1<<20))
	}
	tw.Flush()
	fmt.Println()
	find := func(kind string, scenario int) (result, bool) {
		n := 0
		for _, r := range results {
			if r.kind == kind {
				if n == scenario {
					return r, true
				}
				n++
			}
		}
		return result{}, false
	}
	for _, prefix := range []string{"", noWebhook} {
		fmt.Printf("%sCloneSet / Deployment (target: wall time ratio ≤ 1.0 on each; ≤ 4 pod writes per pod on scale-up):\n", prefix)
		for i := 0; i < 3; i++ {
			d, ok1 := find(prefix+"Deployment", i)
			c, ok2 := find(prefix+"CloneSet", i)
			if !ok1 || !ok2 {
				break
			}
			fmt.Printf("  %-40s wall %.2f×  requests %.2f×  control plane CPU %.2f×  pod writes/pod %.2f vs %.2f\n",
				d.scenario, c.wall.Seconds()/d.wall.Seconds(), float64(c.requests)/max(float64(d.requests), 1), c.planeCPU/max(d.planeCPU, 0.01), c.podWritesPerPod, d.podWritesPerPod)
		}
	}
	fmt.Println("Binds by kube-scheduler (latency at the API server, the binding webhook included where installed):")
	tw = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tcontroller\tbinds\tp50 ms\tp99 ms\tbinds/s\t")
	for _, r := range results {
		if r.binds.count > 0 {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.1f\t%.0f\t\n", r.scenario, r.kind, r.binds.count,
				float64(r.binds.p50.Microseconds())/1000, float64(r.binds.p99.Microseconds())/1000, r.binds.perSec)
		}
	}
	tw.Flush()
	d, okD := find("Deployment", 1)
	re, okR := find("CloneSet", 1)
	ip, okI := find("CloneSet (in-place)", 1)
	if okD && okR && okI {
		fmt.Println("In-place update of the rollout (target: at least 3× faster than CloneSet's ReCreate, and faster than Deployment's):")
		fmt.Printf("  in-place %.1fs, ReCreate %.1fs (%.2f× faster), Deployment %.1fs (%.2f× faster); pod writes/pod %.2f vs %.2f vs %.2f; controller requests/pod %.2f vs %.2f vs %.2f\n",
			ip.wall.Seconds(), re.wall.Seconds(), re.wall.Seconds()/ip.wall.Seconds(), d.wall.Seconds(), d.wall.Seconds()/ip.wall.Seconds(),
			ip.podWritesPerPod, re.podWritesPerPod, d.podWritesPerPod,
			float64(ip.requests)/float64(max(ip.pods, 1)), float64(re.requests)/float64(max(re.pods, 1)), float64(d.requests)/float64(max(d.pods, 1)))
	}
	fmt.Println("  (Requests leave out Events, which kube-controller-manager posts under its own name; its CPU and RSS include all")
	fmt.Println("  its controllers, lifeline-manager's include its webhooks. kwok, the simulated kubelets, is not in the control plane.)")
}
